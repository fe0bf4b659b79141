package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pixir-go/pixir/tools"
)

// What a valid checkpoint means for a step (issue 13): beside its
// output_schema (the payload it must carry), a step may require
// verification evidence that Pixir gathers itself. Each verify command
// runs when the step's child reports checkpoint_ready, in the child's
// workspace and under the child's own sandbox, and its exit status must
// be the one the step expects ("tests ran and were red": expect fail).
// A report whose verification does not hold is refused with the
// command's output, so the child can fix its work and report again; a
// step that never gets a verified report is not checkpoint_ready. The
// commands are the spec author's (or a template's arguments'): a
// fan-out's item values are never put into them.

// Verify is one command whose result a step's checkpoint_ready needs.
type Verify struct {
	// Run is a shell command, run in the workspace root of the child.
	Run string `json:"run" jsonschema:"minLength=1" jsonschema_description:"A shell command Pixir runs in the child's workspace when it reports checkpoint_ready, e.g. go test ./..."`
	// Expect is VerifyPass (exit status 0) or VerifyFail (any other).
	Expect string `json:"expect,omitempty" jsonschema:"enum=pass,enum=fail" jsonschema_description:"pass (default): it must exit 0; fail: it must exit non-zero (tests written first are red)."`
	// Means says what the result shows, for the child and the evidence.
	Means     string `json:"means,omitempty" jsonschema_description:"What the expected result shows, e.g. the new tests fail before the implementation."`
	TimeoutMS int64  `json:"timeout_ms,omitempty" jsonschema:"minimum=1,maximum=600000" jsonschema_description:"Its time limit in milliseconds. Default 120000."`
}

// The results a verify command may expect.
const (
	VerifyPass = "pass"
	VerifyFail = "fail"
)

// maxVerify bounds a step's verify commands.
const maxVerify = 10

// UnmarshalJSON rejects unknown keys.
func (v *Verify) UnmarshalJSON(b []byte) error {
	type plain Verify
	return strictDecode(b, (*plain)(v), "a verify command", "run, expect, means, timeout_ms")
}

// verify reports the problems of step s's verify commands.
func (v *validator) verify(i int, s *Step) {
	if len(s.Verify) > maxVerify {
		v.stepProblem(i, s, "invalid_verify", "verify", fmt.Sprint(len(s.Verify)), "verify has %d commands; at most %d", len(s.Verify), maxVerify)
	}
	for k, c := range s.Verify {
		field := fmt.Sprintf("verify[%d]", k)
		switch {
		case strings.TrimSpace(c.Run) == "":
			v.stepProblem(i, s, "invalid_verify", field+".run", "", "%s.run is empty; give the shell command Pixir runs when the child reports checkpoint_ready", field)
		case bindingPattern().MatchString(c.Run) && hasItemBinding(c.Run):
			v.stepProblem(i, s, "invalid_verify", field+".run", c.Run,
				"%s.run uses a fan-out binding (${item…} or ${index}); a verify command is run by a shell, and an item's values are data that must not become a command: name the files in the task instead", field)
		}
		if c.Expect != VerifyPass && c.Expect != VerifyFail {
			v.stepProblem(i, s, "invalid_enum", field+".expect", c.Expect, "%s.expect %q is not one of pass, fail", field, c.Expect)
		}
		if c.TimeoutMS < 0 || c.TimeoutMS > 600000 {
			v.stepProblem(i, s, "invalid_number", field+".timeout_ms", fmt.Sprint(c.TimeoutMS), "%s.timeout_ms %d must be between 1 and 600000 (omit it for %d)", field, c.TimeoutMS, DefaultStepTimeoutMS)
		}
	}
}

// hasItemBinding reports whether text holds a fan-out binding.
func hasItemBinding(text string) bool {
	for _, m := range bindingPattern().FindAllString(text, -1) {
		if itemBinding().MatchString(strings.TrimSpace(m[2 : len(m)-1])) {
			return true
		}
	}
	return false
}

// verifyLimit bounds the output of a failed verification shown to the
// child and kept in the evidence.
const verifyLimit = 4000

// verified runs a step's verify commands for a checkpoint_ready report,
// in env (the child's workspace and sandbox). It returns the evidence of
// each (one line, for the bundle's verification) and, when one did not
// give the expected result, the problem to refuse the report with.
func verified(ctx context.Context, env tools.Env, cmds []Verify) (evidence []string, problem string) {
	for _, c := range cmds {
		timeout := c.TimeoutMS
		if timeout == 0 {
			timeout = DefaultStepTimeoutMS
		}
		args, _ := json.Marshal(tools.BashArgs{Command: c.Run, TimeoutMS: int(timeout)})
		res := tools.BashTool().Run(ctx, env, args)
		out, exit := bashResult(res)
		if res.Error != nil && exit < 0 {
			return evidence, fmt.Sprintf("Pixir ran the step's verify command `%s` and it did not finish: %s\n%s", c.Run, res.Error.Message, tail(out))
		}
		got := VerifyPass
		if exit != 0 {
			got = VerifyFail
		}
		means := ""
		if c.Means != "" {
			means = " (" + c.Means + ")"
		}
		if got != c.Expect {
			return evidence, fmt.Sprintf("Pixir ran the step's verify command `%s`: it exited %d, and this step's checkpoint_ready needs it to %s%s. Fix your work, then call report_checkpoint again. Its output:\n%s",
				c.Run, exit, c.Expect, means, tail(out))
		}
		evidence = append(evidence, fmt.Sprintf("verified by Pixir: `%s` exited %d, as required (%s)%s", c.Run, exit, c.Expect, means))
	}
	return evidence, ""
}

// bashResult is the output and exit status of a bash result; -1 when it
// has none (it could not run, timed out or was cancelled).
func bashResult(res tools.Result) (string, int) {
	var o tools.BashOutput
	switch {
	case res.Error != nil:
		raw, _ := json.Marshal(res.Error.Details)
		if json.Unmarshal(raw, &o) != nil {
			return "", -1
		}
		return o.Output, -1
	default:
		if bo, ok := res.Output.(tools.BashOutput); ok {
			return bo.Output, bo.ExitCode
		}
		raw, _ := json.Marshal(res.Output)
		if json.Unmarshal(raw, &o) != nil {
			return "", -1
		}
		return o.Output, o.ExitCode
	}
}

// tail is the end of a command's output, bounded.
func tail(out string) string {
	out = strings.TrimRight(out, "\n")
	if len(out) <= verifyLimit {
		return out
	}
	cut := out[len(out)-verifyLimit:]
	if i := strings.IndexByte(cut, '\n'); i >= 0 && i < 200 {
		cut = cut[i+1:]
	}
	return "…\n" + cut
}
