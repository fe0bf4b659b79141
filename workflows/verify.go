package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
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
	// Exists, instead of Run, is a workspace file Pixir checks exists
	// itself (no shell): a step that skipped writing its file is not
	// checkpoint_ready. With ForEach, one file per item of an array in
	// the step's own payload, ${item.field} in Exists naming the item's
	// field (values are paths confined to the workspace, never commands).
	Exists  string `json:"exists,omitempty" jsonschema_description:"Instead of run: a workspace file that must exist, checked by Pixir itself, e.g. .workflow/run-GAL-1/plan.md."`
	ForEach string `json:"for_each,omitempty" jsonschema_description:"With exists: a JSON Pointer to an array in the step's own payload (e.g. /tasks); one file must exist per item, ${item.field} in exists binding the item's field."`
	// When makes the entry apply only to some reports: conditions on the
	// step's own payload (path with equals, in, contains or exists; all,
	// any, not), without step or status. A report they do not hold for
	// is not checked by this entry, and its evidence says so with the
	// values seen (a test step's RED check does not apply to a report
	// that no tests could be written: result NOT_TESTABLE).
	When Conditions `json:"when,omitempty" jsonschema_description:"Only for reports whose own payload matches, e.g. {path: /result, equals: TESTS_READY}: conditions as in a step's when, without step or status (path with equals, in, contains or exists; all, any, not). Otherwise the entry is skipped, and the evidence says so with the value seen."`
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
	return strictDecode(b, (*plain)(v), "a verify command", "run, expect, means, timeout_ms, exists, for_each, when")
}

// verify reports the problems of step s's verify commands.
func (v *validator) verify(i int, s *Step) {
	if len(s.Verify) > maxVerify {
		v.stepProblem(i, s, "invalid_verify", "verify", fmt.Sprint(len(s.Verify)), "verify has %d commands; at most %d", len(s.Verify), maxVerify)
	}
	for k, c := range s.Verify {
		field := fmt.Sprintf("verify[%d]", k)
		if c.Exists != "" || c.ForEach != "" {
			v.verifyExists(i, s, field, c)
			continue
		}
		switch {
		case strings.TrimSpace(c.Run) == "":
			v.stepProblem(i, s, "invalid_verify", field+".run", "", "%s.run is empty; give the shell command Pixir runs when the child reports checkpoint_ready (or exists: a file that must exist)", field)
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

// verifyExists reports the problems of a file check (exists, for_each).
func (v *validator) verifyExists(i int, s *Step, field string, c Verify) {
	problem := func(sub, value, format string, args ...any) {
		v.stepProblem(i, s, "invalid_verify", field+sub, value, format, args...)
	}
	switch {
	case c.Exists == "":
		problem(".for_each", c.ForEach, "%s.for_each goes with exists; give the file each item needs, e.g. exists: .workflow/task-${item.id}.md", field)
		return
	case c.Run != "":
		problem(".run", c.Run, "%s has both run and exists; a verify entry is a command or a file check, not both", field)
	case c.Expect == VerifyFail:
		problem(".expect", c.Expect, "%s.expect fail does not go with exists: the file must exist", field)
	}
	clean := path.Clean(c.Exists)
	if path.IsAbs(c.Exists) || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsAny(c.Exists, "\x00\n\r") {
		problem(".exists", c.Exists, "%s.exists %q is not a file path inside the workspace; give a relative path", field, c.Exists)
	}
	if c.ForEach == "" {
		if hasItemBinding(c.Exists) {
			problem(".exists", c.Exists, "%s.exists binds an item, but there is no for_each; add for_each: the pointer to the array in this step's payload", field)
		}
		return
	}
	tokens, err := parsePointer(c.ForEach)
	if err != nil {
		problem(".for_each", c.ForEach, "%s.for_each: %v", field, err)
		return
	}
	if len(s.OutputSchema) == 0 {
		problem(".for_each", c.ForEach, "%s.for_each %s points into this step's payload, and it has no output_schema; declare the array there", field, c.ForEach)
		return
	}
	var schema any
	_ = json.Unmarshal(s.OutputSchema, &schema)
	node, why := schemaAt(schema, tokens)
	if why != "" {
		problem(".for_each", c.ForEach, "%s.for_each %s cannot be in this step's payload: %s", field, c.ForEach, why)
		return
	}
	if ts := schemaTypes(node); len(ts) > 0 && !slices.Contains(ts, "array") {
		problem(".for_each", c.ForEach, "%s.for_each %s is %s in this step's output_schema; point at an array", field, c.ForEach, strings.Join(ts, " or "))
	}
}

// verifyWhen checks the when of step i's verify entries: each leaf tests
// a value of the step's own payload (a path, no step other than the step
// itself, no status: the entry runs on a checkpoint_ready report), and
// the pointer and values must be possible under its output_schema.
func (c *controlCheck) verifyWhen(i int, report problemAt) {
	st := &c.w.Steps[i]
	for k := range st.Verify {
		if st.Verify[k].When == nil {
			continue
		}
		field := fmt.Sprintf("verify[%d].when", k)
		if len(st.Verify[k].When) == 0 {
			report("invalid_condition", field, "", "%s is empty; give a condition on this step's payload (e.g. {path: /result, equals: TESTS_READY}) or drop when", field)
			continue
		}
		own := make(Conditions, len(st.Verify[k].When))
		for j := range own {
			own[j] = c.ownPayload(st, &st.Verify[k].When[j], fmt.Sprintf("%s[%d]", field, j), report)
		}
		c.conditions(own, field, func(s int) string {
			if s != i {
				return "a verify entry's when tests this step's own payload"
			}
			return ""
		}, func(s int) bool { return s == i }, report)
	}
}

// ownPayload is a copy of a verify entry's condition with step set to
// the step itself, after reporting what such a condition may not have.
func (c *controlCheck) ownPayload(st *Step, cd *Condition, field string, report problemAt) Condition {
	out := *cd
	switch {
	case cd.All != nil || cd.Any != nil || cd.Not != nil:
		out.All, out.Any = nil, nil
		if cd.All != nil {
			out.All = make([]Condition, len(cd.All))
			for k := range cd.All {
				out.All[k] = c.ownPayload(st, &cd.All[k], fmt.Sprintf("%s.all[%d]", field, k), report)
			}
		}
		if cd.Any != nil {
			out.Any = make([]Condition, len(cd.Any))
			for k := range cd.Any {
				out.Any[k] = c.ownPayload(st, &cd.Any[k], fmt.Sprintf("%s.any[%d]", field, k), report)
			}
		}
		if cd.Not != nil {
			not := c.ownPayload(st, cd.Not, field+".not", report)
			out.Not = &not
		}
		return out
	}
	if cd.Step != "" && cd.Step != st.ID {
		report("invalid_condition", field+".step", cd.Step, "%s.step %q: a verify entry's when tests this step's own payload (the report being checked); drop step", field, cd.Step)
	}
	if cd.Status != nil {
		report("invalid_condition", field+".status", "", "%s has status, but a verify entry runs only on a checkpoint_ready report; test a value of the payload (path with equals, in, contains or exists)", field)
		out.Status = nil
	}
	if cd.Path == "" && cd.Equals == nil && cd.In == nil && cd.Contains == nil && cd.Exists == nil {
		report("invalid_condition", field+".path", "", "%s has no path; give the JSON Pointer of the payload value that decides whether the entry applies (e.g. /result)", field)
	}
	out.Step = st.ID
	return out
}

// filesToCheck are the files an exists entry names for payload: one, or
// one per item of its for_each array.
func filesToCheck(c Verify, payload json.RawMessage) ([]string, string) {
	if c.ForEach == "" {
		return []string{c.Exists}, ""
	}
	var decoded any
	if len(payload) > 0 {
		decoded, _ = decodeValue(payload)
	}
	tokens, _ := parsePointer(c.ForEach)
	val, ok := lookup(decoded, tokens)
	items, isArray := val.([]any)
	if !ok || !isArray {
		return nil, fmt.Sprintf("Pixir checks the files of verify's for_each %s, and your payload has no array there", c.ForEach)
	}
	files := make([]string, 0, len(items))
	for k, item := range items {
		var err error
		f := bindText(c.Exists, k, item, &err)
		if err != nil {
			return nil, fmt.Sprintf("Pixir checks %s for item %d of %s: %v", c.Exists, k+1, c.ForEach, err)
		}
		if slices.Contains(strings.Split(filepath.ToSlash(f), "/"), "..") {
			// An item's value must not turn the check to another file
			// (task-${item.id}.md with id "x/../../plan" is plan.md).
			return nil, fmt.Sprintf("Pixir checks %s for item %d of %s, and its values make %q, which climbs out with ..; item values name files, not paths", c.Exists, k+1, c.ForEach, f)
		}
		files = append(files, f)
	}
	return files, ""
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
func verified(ctx context.Context, env tools.Env, cmds []Verify, payload json.RawMessage) (evidence []string, problem string) {
	var decoded any
	if len(payload) > 0 {
		decoded, _ = decodeValue(payload)
	}
	for _, c := range cmds {
		means := ""
		if c.Means != "" {
			means = " (" + c.Means + ")"
		}
		if len(c.When) > 0 {
			if holds, seen := payloadHolds(c.When, decoded); !holds {
				evidence = append(evidence, fmt.Sprintf("not verified by Pixir: %s%s does not apply to this report: its when %s does not hold (%s)",
					verifyText(c), means, conditionsText(c.When), strings.Join(seen, "; ")))
				continue
			}
		}
		if c.Exists != "" {
			files, why := filesToCheck(c, payload)
			if why != "" {
				return evidence, why + ". Fix your payload, then call report_checkpoint again."
			}
			for _, f := range files {
				if problem := fileExists(env, f); problem != "" {
					return evidence, fmt.Sprintf("Pixir checked that %s exists%s: %s. Write it, then call report_checkpoint again.", f, means, problem)
				}
				evidence = append(evidence, fmt.Sprintf("verified by Pixir: %s exists%s", f, means))
			}
			continue
		}
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
		if got != c.Expect {
			return evidence, fmt.Sprintf("Pixir ran the step's verify command `%s`: it exited %d, and this step's checkpoint_ready needs it to %s%s. Fix your work, then call report_checkpoint again. Its output:\n%s",
				c.Run, exit, c.Expect, means, tail(out))
		}
		evidence = append(evidence, fmt.Sprintf("verified by Pixir: `%s` exited %d, as required (%s)%s", c.Run, exit, c.Expect, means))
	}
	return evidence, ""
}

// payloadHolds evaluates a verify entry's when against the step's own
// payload, with what each test saw ("/result is \"NOT_TESTABLE\"").
// Every test is evaluated (no short cut), so the evidence shows every
// value the decision depended on.
// maxSeenValue bounds a value quoted in a skipped entry's evidence.
const maxSeenValue = 200

func payloadHolds(cs Conditions, payload any) (bool, []string) {
	var seen []string
	ok := true
	for k := range cs {
		if !payloadHolds1(&cs[k], payload, &seen) {
			ok = false
		}
	}
	return ok, seen
}

func payloadHolds1(c *Condition, payload any, seen *[]string) bool {
	switch {
	case len(c.All) > 0:
		ok := true
		for k := range c.All {
			if !payloadHolds1(&c.All[k], payload, seen) {
				ok = false
			}
		}
		return ok
	case len(c.Any) > 0:
		ok := false
		for k := range c.Any {
			if payloadHolds1(&c.Any[k], payload, seen) {
				ok = true
			}
		}
		return ok
	case c.Not != nil:
		return !payloadHolds1(c.Not, payload, seen)
	}
	test := valueTest(c)
	val, present := lookup(payload, test.path)
	if present {
		text := canonical(val, false)
		if len(text) > maxSeenValue {
			text = text[:maxSeenValue] + "…"
		}
		*seen = append(*seen, c.Path+" is "+text)
	} else {
		*seen = append(*seen, c.Path+" is absent")
	}
	return testValue(&test, val, present)
}

// verifyText names a verify entry in evidence and prompts.
func verifyText(c Verify) string {
	switch {
	case c.Exists != "" && c.ForEach != "":
		return fmt.Sprintf("the check that %s exists for each item of %s", c.Exists, c.ForEach)
	case c.Exists != "":
		return fmt.Sprintf("the check that %s exists", c.Exists)
	}
	return fmt.Sprintf("`%s` (expect %s)", c.Run, c.Expect)
}

// fileExists says why a workspace file does not exist ("" when it is a
// file there).
func fileExists(env tools.Env, name string) string {
	if env.Workspace == nil {
		return "there is no workspace to look in"
	}
	abs, err := env.Workspace.Resolve(name)
	if err != nil {
		return "it is not inside the workspace (" + err.Error() + ")"
	}
	switch fi, err := os.Stat(abs); {
	case err != nil:
		return "it does not exist"
	case fi.IsDir():
		return "it is a directory, not a file"
	}
	return ""
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
