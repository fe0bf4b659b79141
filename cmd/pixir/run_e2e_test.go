package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/workflows"
)

// runEnv is a workspace and a PIXIR_HOME for headless runs on the
// embedded offline script.
type runEnv struct {
	t        *testing.T
	home, ws string
	env      []string // more variables for every command
}

func newRunEnv(t *testing.T) *runEnv {
	t.Helper()
	dir := t.TempDir()
	e := &runEnv{t: t, home: filepath.Join(dir, "home"), ws: filepath.Join(dir, "ws")}
	require.NoError(t, os.MkdirAll(e.ws, 0o755))
	return e
}

func (e *runEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(pixirBin, args...)
	cmd.Dir = e.ws
	cmd.Env = append(os.Environ(), "PIXIR_HOME="+e.home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=")
	cmd.Env = append(cmd.Env, e.env...)
	return cmd
}

// pixir runs the binary to its end: stdout, stderr, exit code.
func (e *runEnv) pixir(args ...string) (string, string, int) {
	e.t.Helper()
	cmd := e.command(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(e.t, err)
	return out.String(), errOut.String(), 0
}

func (e *runEnv) file(name, content string) string {
	p := filepath.Join(e.ws, name)
	require.NoError(e.t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// schema compiles a committed result schema.
func resultSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join("..", "..", "schemas", "results", name)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("mem:///"+name, doc))
	s, err := c.Compile("mem:///" + name)
	require.NoError(t, err)
	return s
}

// validEnvelope checks stdout against the result envelope and the output
// schema, and returns the envelope.
func validEnvelope(t *testing.T, stdout, outputSchema string) map[string]any {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(stdout))
	require.NoError(t, err, stdout)
	require.NoError(t, resultSchema(t, "tool_result.json").Validate(doc))
	var env map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &env))
	if outputSchema != "" {
		out, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustJSON(t, env["output"])))
		require.NoError(t, err)
		require.NoError(t, resultSchema(t, outputSchema).Validate(out))
	}
	return env
}

const partialWorkflow = `name: e2e
steps:
  - id: survey
    agent: explorer
    task: List the files.
  - id: slow
    task: hang here
    timeout_ms: 400
  - id: after
    task: use the slow one
    depends_on: [slow]
`

func TestRunPromptExitCodesAndJSON(t *testing.T) {
	e := newRunEnv(t)
	stdout, stderr, code := e.pixir("run", "create a file please")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "I'll create `hello.txt`")
	require.Contains(t, stdout, "\n\nWritten.", "messages are apart")
	require.Contains(t, stderr, "⚙ Write hello.txt")
	require.FileExists(t, filepath.Join(e.ws, "hello.txt"))

	stdout, _, code = e.pixir("run", "--json", "hello there")
	require.Equal(t, exitOK, code)
	env := validEnvelope(t, stdout, "pixir_run_output.json")
	require.Equal(t, true, env["ok"])
	out := env["output"].(map[string]any)
	require.Equal(t, "completed", out["status"])
	require.Contains(t, out["text"], "Hello!")

	// The provider fails: the turn failed.
	stdout, stderr, code = e.pixir("run", "please fail now", "--json")
	require.Equal(t, exitError, code, stderr)
	env = validEnvelope(t, stdout, "pixir_run_output.json")
	require.Equal(t, false, env["ok"])
	require.Equal(t, "failed", env["output"].(map[string]any)["status"])
	require.NotContains(t, env["output"], "stop_reason", "a failed turn has no stop reason; its error says why it ended")
	require.Equal(t, "provider_error", env["output"].(map[string]any)["error"].(map[string]any)["kind"])

	// resume goes on in the same session.
	sid := out["session_id"].(string)
	stdout, stderr, code = e.pixir("resume", sid, "read the README", "--json")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, sid, validEnvelope(t, stdout, "pixir_run_output.json")["output"].(map[string]any)["session_id"])
	_, stderr, code = e.pixir("resume", "no-such-session", "hi")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "`pixir sessions --cwd "+e.ws+"` lists the sessions there")

	// Invalid input is 64, with the envelope under --json.
	for _, args := range [][]string{
		{"run"},
		{"run", "--mode", "yolo", "hi"},
		{"run", "--dry-run", "hi"},
		{"run", "--workflow", "missing.yaml"},
		{"run", "two", "prompts"},
		// Flags the flag package refuses, the --json after them never
		// parsed: the envelope was missing and stdout empty.
		{"run", "--jsn", "hi"},
		{"run", "--max-threads", "many", "hi"},
		{"resume", "--max-depth=deep", "x", "y"},
	} {
		stdout, stderr, code := e.pixir(append(args, "--json")...)
		require.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		env := validEnvelope(t, stdout, "")
		require.Equal(t, "invalid_args", env["error"].(map[string]any)["kind"], "%v", args)
	}
}

func TestRunAskModeWithoutATerminalDenies(t *testing.T) {
	e := newRunEnv(t)
	stdout, stderr, code := e.pixir("run", "--mode", "ask", "create a file please")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "ask mode, but standard input is not a terminal: every change is denied")
	require.Contains(t, stdout, "did not go through")
	require.NoFileExists(t, filepath.Join(e.ws, "hello.txt"))

	// The model is told what happened: nobody was asked, so nobody
	// rejected anything, and how the user can allow the change. It read
	// "the user rejected this write call".
	var result, decision string
	for _, ev := range readLog(t, e.ws, e.sessionIDs()[0]) {
		switch ev.Type {
		case "tool_result":
			if strings.Contains(string(ev.Data), `"name":"write"`) {
				result = string(ev.Data)
			}
		case "permission_decision":
			decision = string(ev.Data)
		}
	}
	require.NotContains(t, result, "rejected")
	require.Contains(t, result, "no one could be asked")
	require.Contains(t, result, "--mode auto")
	require.Contains(t, decision, `"decision":"denied"`)
	require.NotContains(t, decision, `"source":"user"`, "no user decided")
}

func TestRunWorkflowFileOutcomesAndExitCodes(t *testing.T) {
	e := newRunEnv(t)
	// Completed: 0.
	ok := e.file("ok.json", `{"steps":[{"id":"a","task":"look"},{"id":"b","task":"then","depends_on":["a"]}]}`)
	stdout, stderr, code := e.pixir("run", "--workflow", ok, "--json")
	require.Equal(t, exitOK, code, stderr)
	env := validEnvelope(t, stdout, "run_workflow_output.json")
	require.Equal(t, "completed", env["output"].(map[string]any)["status"])

	// Partial: 2, with plain timestamped progress lines on a pipe.
	partial := e.file("partial.yaml", partialWorkflow)
	stdout, stderr, code = e.pixir("run", "--workflow", partial)
	require.Equal(t, exitPartial, code, stderr)
	require.Contains(t, stdout, "PARTIAL — 1 of 3 steps checkpoint_ready, 1 failed, 1 held")
	stamp := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z `
	for _, want := range []string{
		stamp + `workflow wf-[0-9a-f]+ started: 3 steps`,
		stamp + `step survey running \(explorer, shared workspace\)`,
		stamp + `step survey checkpoint_ready`,
		stamp + `step slow failed \(subagent timed_out\)`,
		stamp + `step after held: dependency_not_checkpoint_ready \(blocked by slow\)`,
		stamp + `workflow wf-[0-9a-f]+ partial in`,
	} {
		require.Regexp(t, regexp.MustCompile(want), stderr)
	}
	require.NotContains(t, stderr, "\x1b[", "no terminal control codes on a pipe")

	// Failed: 1 (no step ready).
	failed := e.file("failed.json", `{"steps":[{"id":"a","task":"hang","timeout_ms":200}]}`)
	stdout, _, code = e.pixir("run", "--workflow", failed, "--json")
	require.Equal(t, exitError, code)
	env = validEnvelope(t, stdout, "run_workflow_output.json")
	require.Equal(t, false, env["ok"])
	require.Equal(t, "failed", env["output"].(map[string]any)["status"])

	// The session is named after the workflow.
	stdout, _, code = e.pixir("sessions", "--json")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, `"title": "workflow e2e"`)

	// Invalid: 64, with the problems.
	cycle := e.file("cycle.json", `{"steps":[{"id":"a","task":"x","depends_on":["b"]},{"id":"b","task":"y","depends_on":["a"]}]}`)
	stdout, stderr, code = e.pixir("run", "--workflow", cycle, "--json")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "cycle: a -> b -> a")
	env = validEnvelope(t, stdout, "")
	require.Equal(t, "invalid_args", env["error"].(map[string]any)["kind"])

	// Dry run: 0, nothing written.
	before := listTree(t, e.ws)
	stdout, _, code = e.pixir("run", "--workflow", partial, "--dry-run", "--json")
	require.Equal(t, exitOK, code)
	env = validEnvelope(t, stdout, "run_workflow_dry_run_output.json")
	require.Equal(t, "dry_run", env["output"].(map[string]any)["mode"])
	require.Equal(t, before, listTree(t, e.ws), "a dry run writes nothing")

	// read_only refuses to start Subagents, but plans.
	_, stderr, code = e.pixir("run", "--workflow", ok, "--mode", "read_only")
	require.Equal(t, exitError, code)
	require.Contains(t, stderr, "read_only mode does not allow")
	_, _, code = e.pixir("run", "--workflow", ok, "--mode", "read_only", "--dry-run")
	require.Equal(t, exitOK, code)
}

func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		out = append(out, p)
		return err
	}))
	return out
}

func TestRunInterruptedWorkflowPrintsThePartialOutcomeAndKeepsTheLog(t *testing.T) {
	e := newRunEnv(t)
	wf := e.file("wf.yaml", `steps:
  - id: quick
    task: List the files.
  - id: long
    task: hang until stopped
  - id: later
    task: use it
    depends_on: [long]
`)
	cmd := e.command("run", "--workflow", wf, "--json")
	var stdout bytes.Buffer
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	require.NoError(t, cmd.Start())
	// Interrupt once quick is done and long runs: a partial outcome.
	stderr.waitFor("step long running")
	stderr.waitFor("step quick checkpoint_ready")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, stderr.String())
	require.Equal(t, exitPartial, exit.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), "interrupted: the running steps were cancelled and recorded")

	env := validEnvelope(t, stdout.String(), "run_workflow_output.json")
	out := env["output"].(map[string]any)
	require.Equal(t, "partial", out["status"])
	require.Equal(t, "cancelled", out["stopped_by"])
	steps := out["steps"].([]any)
	long := steps[1].(map[string]any)
	require.Equal(t, "cancelled", long["subagent_status"])
	require.Equal(t, "failed", long["checkpoint_status"])
	require.Equal(t, "held", steps[2].(map[string]any)["checkpoint_status"])

	// The Log is complete: the children's ends and the workflow's.
	require.Regexp(t, `pixir: session [0-9a-f]{8} · `, stderr.String())
	var kinds []string
	ended := map[string]string{}
	for _, ev := range readLog(t, e.ws, e.sessionIDs()[0]) {
		var d struct {
			Kind       string `json:"kind"`
			Event      string `json:"event"`
			SubagentID string `json:"subagent_id"`
		}
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		switch ev.Type {
		case "workflow_event":
			kinds = append(kinds, d.Kind)
		case "subagent_event":
			ended[d.SubagentID] = d.Event
		}
	}
	require.Equal(t, "workflow_finished", kinds[len(kinds)-1])
	require.Contains(t, kinds, "step_held")
	require.Len(t, ended, 2)
	for id, last := range ended {
		require.Contains(t, []string{"finished", "cancelled"}, last, id)
	}
}

// terminal runs cmd in a pseudo-terminal of cols columns: what it shows
// accumulates in screen, done closes when the terminal is read to its end.
type terminal struct {
	pty    *os.File
	screen *syncBuffer
	done   chan struct{}
}

func startInTerminal(t *testing.T, cmd *exec.Cmd, cols uint16) *terminal {
	t.Helper()
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: cols})
	require.NoError(t, err)
	t.Cleanup(func() { ptmx.Close() })
	term := &terminal{pty: ptmx, screen: &syncBuffer{}, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		_, _ = io.Copy(term.screen, ptmx) // ends with EIO when the process exits
	}()
	return term
}

// In a terminal, the live view redraws in place and ends in the final
// table.
func TestRunWorkflowLiveViewInATerminal(t *testing.T) {
	e := newRunEnv(t)
	wf := e.file("wf.yaml", partialWorkflow)
	cmd := e.command("run", "--workflow", wf)
	term := startInTerminal(t, cmd, 120)
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, exitPartial, exit.ExitCode())
	<-term.done
	out := term.screen.String()
	redraws := strings.Count(out, "\x1b[4F\x1b[J")
	require.GreaterOrEqual(t, redraws, 2, "the view redraws in place:\n%q", out)
	require.Contains(t, out, "Workflow e2e — ")
	require.Regexp(t, `✓ survey\s+explorer`, out)
	require.Regexp(t, `✗ slow\s+default`, out)
	require.Regexp(t, `⏸ after\s+default`, out)
	// The last frame is the final state, and the table comes after it.
	last := strings.LastIndex(out, "\x1b[4F\x1b[J")
	require.Contains(t, out[last:], "PARTIAL")
	table := strings.Index(out, "| step | agent | wave |")
	require.Greater(t, table, last, "the final table ends the output")
	require.NotRegexp(t, regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d`), out, "no plain log lines in a terminal")
}

// In ask mode on a terminal, pixir run asks y/n/always and does what the
// answer says.
func TestRunAskModeAsksOnTheTerminal(t *testing.T) {
	for _, tc := range []struct {
		answer  string
		written bool
	}{{"y", true}, {"n", false}, {"always", true}} {
		t.Run(tc.answer, func(t *testing.T) {
			e := newRunEnv(t)
			cmd := e.command("run", "--mode", "ask", "create a file please")
			term := startInTerminal(t, cmd, 120)
			screen := term.screen
			screen.waitFor("Allow Write hello.txt? [y]es, [n]o, [a]lways for write: ")
			_, err := term.pty.Write([]byte(tc.answer + "\r"))
			require.NoError(t, err)
			require.NoError(t, cmd.Wait(), screen.String())
			<-term.done
			if tc.written {
				require.FileExists(t, filepath.Join(e.ws, "hello.txt"))
				require.Contains(t, screen.String(), "Done.")
			} else {
				require.NoFileExists(t, filepath.Join(e.ws, "hello.txt"))
				require.Contains(t, screen.String(), "did not go through")
			}
		})
	}
}

// A question asked while the live view runs stays on the screen: the view
// stops redrawing until it is answered, then draws below the answer.
func TestRunWorkflowAsksWithoutTheLiveViewDrawingOverTheQuestion(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = '\[write\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "out.txt", content = "written\n" }
  [[rule.reply]]
  text = "done"
`)
	wf := e.file("wf.json", `{"steps":[{"id":"w","task":"[write] write out.txt","write_set":["out.txt"],"workspace_mode":"shared"}]}`)
	cmd := e.command("run", "--script", script, "--mode", "ask", "--workflow", wf)
	term := startInTerminal(t, cmd, 160)
	screen := term.screen
	question := "Allow w (default): Write out.txt? [y]es, [n]o, [a]lways for write: "
	screen.waitFor(question)
	// Watch the screen for three frames' time: no redraw may come while the
	// question waits. (A busy machine may draw fewer frames, which can only
	// hide a fault, never invent one.)
	time.Sleep(350 * time.Millisecond)
	asked := screen.String()
	_, err := term.pty.Write([]byte("y\r"))
	require.NoError(t, err)
	require.NoError(t, cmd.Wait(), screen.String())
	<-term.done
	after := asked[strings.Index(asked, question):]
	require.NotContains(t, after, "\x1b[", "nothing is drawn over the question while it waits:\n%q", after)
	require.FileExists(t, filepath.Join(e.ws, "out.txt"))
	require.Contains(t, screen.String(), "COMPLETED")
}

// A dependent works on what its isolated dependency wrote: merged into the
// workspace before it starts (the default), or, with merge: never, copied
// into the dependent's snapshot with the user's workspace as it was.
func TestRunWorkflowDependentsSeeTheirDependenciesFiles(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = '\[write\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "src/made.txt", content = "made by the writer\n" }
  [[rule.reply]]
  text = "wrote it"

[[rule]]
match = '\[read\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "src/made.txt" }
  [[rule.reply]]
  text = '''{{if ok .ToolResult}}it says: {{output .ToolResult | oneline}}{{else}}no file: {{output .ToolResult | oneline}}
checkpoint_status: failed{{end}}'''
`)
	// merge: never: the writer's work stays in its snapshot, and its
	// dependent runs on a snapshot that holds it.
	wf := e.file("wf.json", `{"merge":"never","steps":[
		{"id":"make","task":"[write] make it","write_set":["src/**"]},
		{"id":"check","task":"[read] check it","depends_on":["make"]}]}`)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
	require.Equal(t, exitOK, code, stderr)
	env := validEnvelope(t, stdout, "run_workflow_output.json")
	steps := env["output"].(map[string]any)["steps"].([]any)
	check := steps[1].(map[string]any)
	require.Equal(t, "checkpoint_ready", check["checkpoint_status"])
	require.Equal(t, "isolated", check["workspace_mode"], "moved to a snapshot that holds its dependency's files")
	require.Contains(t, check["summary"], "it says: made by the writer")
	require.Equal(t, "not_merged", steps[0].(map[string]any)["merge"].(map[string]any)["status"])
	require.NoFileExists(t, filepath.Join(e.ws, "src", "made.txt"), "merge: never leaves the workspace as it was")

	// The default (on_ready): the writer's work lands in the workspace
	// before its dependent starts, which then works in the workspace.
	wf = e.file("wf.json", `{"steps":[
		{"id":"make","task":"[write] make it","write_set":["src/**"]},
		{"id":"check","task":"[read] check it","depends_on":["make"]}]}`)
	stdout, stderr, code = e.pixir("run", "--script", script, "--workflow", wf, "--json")
	require.Equal(t, exitOK, code, stderr)
	steps = validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)["steps"].([]any)
	merge := steps[0].(map[string]any)["merge"].(map[string]any)
	require.Equal(t, "merged", merge["status"], "%v", merge)
	require.Equal(t, []any{"src/made.txt"}, merge["applied"].(map[string]any)["added"])
	check = steps[1].(map[string]any)
	require.Equal(t, "shared", check["workspace_mode"], "its dependency's work is in the workspace")
	require.Contains(t, check["summary"], "it says: made by the writer")
	b, err := os.ReadFile(filepath.Join(e.ws, "src", "made.txt"))
	require.NoError(t, err)
	require.Equal(t, "made by the writer\n", string(b))
	require.NoDirExists(t, filepath.Join(e.ws, ".pixir", "merges", "stage"), "no merge left half-done")
}

// A partial run is retried in its session with --resume-from: the ready
// steps are reused, only the failed one and what waits for it run again.
func TestResumeAWorkflowRerunsOnlyWhatWasNotReady(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = '\[needs-go\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "go.txt" }
  [[rule.reply]]
  text = '''{{if ok .ToolResult}}go is there{{else}}no go yet
checkpoint_status: failed{{end}}'''
`)
	wf := e.file("wf.json", `{"steps":[
		{"id":"survey","task":"List the files."},
		{"id":"gate","task":"[needs-go] check go.txt"},
		{"id":"after","task":"Use the gate.","depends_on":["gate"]}]}`)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
	require.Equal(t, exitPartial, code, stderr)
	first := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)
	wfID := first["workflow_id"].(string)
	retry := first["safe_next_actions"].([]any)[0].(map[string]any)
	require.Equal(t, "retry_failed_steps", retry["action"])
	require.Equal(t, wfID, retry["args"].(map[string]any)["resume_from"])
	sid := regexp.MustCompile(`pixir: session ([0-9a-f]{8,}) `).FindStringSubmatch(stderr)[1] // short: any unique start will do

	e.file("go.txt", "go\n")
	stdout, stderr, code = e.pixir("resume", sid, "--script", script, "--workflow", wf, "--resume-from", wfID, "--json")
	require.Equal(t, exitOK, code, stderr)
	second := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)
	require.Equal(t, "completed", second["status"])
	steps := second["steps"].([]any)
	require.Equal(t, wfID, steps[0].(map[string]any)["reused_from"], "survey was ready: reused")
	require.Nil(t, steps[1].(map[string]any)["reused_from"], "gate ran again")
	require.Equal(t, [][]string{{"gate"}, {"after"}}, toWaves(second["waves"]))

	// An unknown run, or resuming without the session, is refused.
	_, stderr, code = e.pixir("resume", sid, "--script", script, "--workflow", wf, "--resume-from", "wf-nope")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `there is no workflow "wf-nope" in this session's Log`)
	_, stderr, code = e.pixir("run", "--workflow", e.file("r.json", `{"resume_from":"`+wfID+`","steps":[{"id":"a","task":"x"}]}`))
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "pixir resume SESSION_ID --workflow FILE --resume-from WORKFLOW_ID")
}

func toWaves(v any) [][]string {
	var out [][]string
	for _, w := range v.([]any) {
		var ids []string
		for _, id := range w.([]any) {
			ids = append(ids, id.(string))
		}
		out = append(out, ids)
	}
	return out
}

// TestCPUProfileWhenAsked: PIXIR_CPUPROFILE makes any command write a CPU
// profile of its whole process (what go tool pprof reads: gzip), and a
// path that cannot be made is said and costs the command nothing.
func TestCPUProfileWhenAsked(t *testing.T) {
	e := newRunEnv(t)
	spec := e.file("wf.json", `{"name":"p","steps":[{"id":"a","task":"Say hi."},{"id":"b","task":"Say bye.","depends_on":["a"]}]}`)
	prof := filepath.Join(t.TempDir(), "run.prof")
	e.env = []string{"PIXIR_CPUPROFILE=" + prof}
	out, _, code := e.pixir("run", "--workflow", spec)
	require.Equal(t, 0, code, out)
	b, err := os.ReadFile(prof)
	require.NoError(t, err)
	require.Greater(t, len(b), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, b[:2], "a pprof profile is gzip")

	e.env = []string{"PIXIR_CPUPROFILE=" + filepath.Join(t.TempDir(), "no", "such", "dir", "run.prof")}
	out, errOut, code := e.pixir("version")
	require.Equal(t, 0, code)
	require.Contains(t, out, "pixir ")
	require.Contains(t, errOut, "pixir: PIXIR_CPUPROFILE:")
}

// TestAllocProfileWhenAsked: PIXIR_MEMPROFILE makes any command write its
// allocation profile when it ends (gzip, as pprof writes it), and a path
// that cannot be made is said and costs the command nothing.
func TestAllocProfileWhenAsked(t *testing.T) {
	e := newRunEnv(t)
	spec := e.file("wf.json", `{"name":"p","steps":[{"id":"a","task":"Say hi."}]}`)
	prof := filepath.Join(t.TempDir(), "mem.prof")
	e.env = []string{"PIXIR_MEMPROFILE=" + prof}
	out, _, code := e.pixir("run", "--workflow", spec)
	require.Equal(t, 0, code, out)
	b, err := os.ReadFile(prof)
	require.NoError(t, err)
	require.Greater(t, len(b), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, b[:2], "a pprof profile is gzip")

	e.env = []string{"PIXIR_MEMPROFILE=" + filepath.Join(t.TempDir(), "no", "such", "dir", "mem.prof")}
	out, errOut, code := e.pixir("version")
	require.Equal(t, 0, code)
	require.Contains(t, out, "pixir ")
	require.Contains(t, errOut, "pixir: PIXIR_MEMPROFILE:")
}

// TestWorkflowViewReadsTheLogAsItReadsLiveEvents: the live view reads the
// data events were emitted with, not their JSON; fed the parent's Log
// instead (JSON only), it writes the same lines, but for the children's
// activity, which is live only.
func TestWorkflowViewReadsTheLogAsItReadsLiveEvents(t *testing.T) {
	e := newRunEnv(t)
	spec := `{"name":"v","max_concurrency":3,"steps":[
		{"id":"a","task":"Say hi."},
		{"id":"b","task":"Say bye.","depends_on":["a"]},
		{"id":"c","task":"Do part 3.","depends_on":["a"]},
		{"id":"d","task":"Do part 4.","depends_on":["b","c"]}]}`
	path := e.file("wf.json", spec)
	_, live, code := e.pixir("run", "--workflow", path)
	require.Equal(t, 0, code, live)

	logs, err := filepath.Glob(filepath.Join(e.ws, ".pixir", "sessions", "*.ndjson"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	events, _, err := runtime.ReadLog(logs[0])
	require.NoError(t, err)
	w, err := workflows.Decode([]byte(spec))
	require.NoError(t, err)
	var replayed bytes.Buffer
	view := newWorkflowView(&replayed, false, w)
	view.start()
	for _, ev := range events {
		view.observe(ev)
	}
	view.finish(nil)

	activity := regexp.MustCompile(`^step [^ ]+: `)
	lines := func(s string, dropActivity bool) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			_, rest, ok := strings.Cut(l, " ") // the time
			if !ok || !strings.HasPrefix(rest, "step ") && !strings.HasPrefix(rest, "workflow ") && !strings.HasPrefix(rest, "loop ") {
				continue
			}
			if dropActivity && activity.MatchString(rest) {
				continue
			}
			out = append(out, rest)
		}
		return out
	}
	want := lines(live, true)
	require.Len(t, want, 2+4*3, "started, finished, and each step queued, running and decided:\n%s", live)
	// b and c run side by side: their children's events reach the view
	// and the Log through different paths, so the two may interleave
	// them differently. What must agree is every line, and each step's
	// (and the workflow's) lines in their order.
	bySubject := func(ls []string) map[string][]string {
		out := map[string][]string{}
		for _, l := range ls {
			f := strings.Fields(l) // "step b running (…)", "workflow v …"
			subject := strings.Join(f[:min(2, len(f))], " ")
			out[subject] = append(out[subject], l)
		}
		return out
	}
	got := lines(replayed.String(), false)
	require.ElementsMatch(t, want, got)
	require.Equal(t, bySubject(want), bySubject(got))
}

// A FAILED run's last lines do not call it partial, nor does the abort
// action the model reads.
func TestAFailedRunIsNotCalledPartial(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = 'gate'
  [[rule.reply]]
  text = '''no go
checkpoint_status: failed'''
`)
	wf := e.file("wf.json", `{"steps":[{"id":"gate","task":"gate"}]}`)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf)
	require.NotEqual(t, exitOK, code, stderr)
	require.Contains(t, stdout, "- or stop here: this failed run stands as it is;", stdout)
	require.NotContains(t, stdout, "partial outcome", stdout)
	stdout, stderr, _ = e.pixir("run", "--script", script, "--workflow", wf, "--json")
	out := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)
	require.Equal(t, "failed", out["status"], stderr)
	acts := out["safe_next_actions"].([]any)
	require.Equal(t, "stop here and report this failed run as it is; isolated writers' changes that were not merged stay in their snapshots",
		acts[len(acts)-1].(map[string]any)["reason"])
}

// The dry run's writes column shows what a writer may change: its own
// write set narrowed by its agent's (a file must match both).
func TestTheDryRunShowsTheAgentsWriteSet(t *testing.T) {
	e := newRunEnv(t)
	require.NoError(t, os.MkdirAll(filepath.Join(e.ws, ".pixir", "agents"), 0o755))
	e.file(".pixir/agents/docwriter.toml", `name = "docwriter"
description = "Writes docs."
developer_instructions = "Write docs."
write_set = ["docs/**"]
`)
	wf := e.file("wf.json", `{"steps":[
		{"id":"a","task":"x","agent":"docwriter","write_set":["docs/api/**"]},
		{"id":"b","task":"y","agent":"docwriter","permission_mode":"writer"},
		{"id":"c","task":"z","write_set":["src/**"]}]}`)
	stdout, stderr, code := e.pixir("run", "--workflow", wf, "--dry-run")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "| a | writer | isolated | – | docs/api/** ∩ agent docwriter: docs/** |", stdout)
	require.Contains(t, stdout, "| b | writer | isolated | – | **/* ∩ agent docwriter: docs/** |", stdout)
	require.Contains(t, stdout, "| c | writer | isolated | – | src/** |", stdout)
	stdout, stderr, code = e.pixir("run", "--workflow", wf, "--dry-run", "--json")
	require.Equal(t, exitOK, code, stderr)
	plan := validEnvelope(t, stdout, "run_workflow_dry_run_output.json")["output"].(map[string]any)
	require.Equal(t, []any{"docs/**"}, plan["steps"].([]any)[0].(map[string]any)["agent_write_set"])
}

// A script gives a prompt longer than one argument may be (128 KiB on
// Linux: a diff, a log) on stdin, as "-": it was sent to the model as
// the prompt "-".
func TestRunReadsThePromptFromStdinForADash(t *testing.T) {
	e := newRunEnv(t)
	long := strings.Repeat("x", 200<<10)
	cmd := e.command("run", "--json", "-")
	cmd.Stdin = strings.NewReader("hello from stdin " + long)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	out := validEnvelope(t, stdout.String(), "pixir_run_output.json")["output"].(map[string]any)
	require.Contains(t, out["text"], `You said: "hello from stdin`)
	sid := out["session_id"].(string)
	events := readLog(t, e.ws, sid)
	require.Equal(t, "user_message", events[0].Type)
	require.Contains(t, string(events[0].Data), long, "the whole prompt is in the Log")

	cmd = e.command("resume", sid, "-")
	cmd.Stdin = strings.NewReader("hello again")
	stdout.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	require.Contains(t, stdout.String(), `You said: "hello again"`)

	// Nothing on stdin: invalid input, said.
	_, errOut, code := e.pixir("run", "-")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `the prompt "-" is read from standard input, and it held none`)

	// A runaway input is refused at its bound, not read without end.
	cmd = e.command("run", "-")
	cmd.Stdin = io.LimitReader(neverEnding('x'), 64<<20)
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, stderr.String())
	require.Equal(t, exitUsage, exit.ExitCode())
	require.Contains(t, stderr.String(), `the prompt "-" read from standard input is over 16 MiB`)
}

// neverEnding is an endless reader of one byte, as /dev/zero is.
type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// A step naming an agent that no file defines, where an agent file does
// not load (here one whose name cannot be read), says that file and why
// it does not load: it said only "there is no agent named …".
func TestAStepsUnknownAgentNamesTheAgentFilesThatDoNotLoad(t *testing.T) {
	e := newRunEnv(t)
	require.NoError(t, os.MkdirAll(filepath.Join(e.ws, ".pixir", "agents"), 0o755))
	file := e.file(".pixir/agents/rev.toml", "description = = 5\nname = \"reviewer2\"\n")
	wf := e.file("wf.json", `{"steps":[{"id":"a","task":"x","agent":"reviewer2"}]}`)
	_, stderr, code := e.pixir("run", "--workflow", wf, "--dry-run")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, `there is no agent named "reviewer2"; use one of: `, stderr)
	require.Contains(t, stderr, "; agent files that do not load, one of which may be meant to define it: agent \"rev\" is defined by "+file+
		", which does not load: "+file+":1:15: ", stderr)
}

// A workflow cancelled before any step was ready is a cancel, exit 2 as a
// cancelled turn is, not a failure: it exited 1, so a script could not
// tell a Ctrl-C from a provider that failed. Its status stays its own.
func TestRunInterruptedWorkflowWithNoStepReadyExitsAsACancel(t *testing.T) {
	e := newRunEnv(t)
	wf := e.file("wf.yaml", `steps:
  - id: long
    task: hang until stopped
`)
	cmd := e.command("run", "--workflow", wf, "--json")
	var stdout bytes.Buffer
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	require.NoError(t, cmd.Start())
	stderr.waitFor("step long running")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, stderr.String())
	require.Equal(t, exitPartial, exit.ExitCode(), stderr.String())
	env := validEnvelope(t, stdout.String(), "run_workflow_output.json")
	out := env["output"].(map[string]any)
	require.Equal(t, "failed", out["status"], "no step ready: the workflow's own status")
	require.Equal(t, "cancelled", out["stopped_by"])
}

// A headless workflow in ask mode: no one can be asked, so a writer step's
// every change is denied, and the step that reports checkpoint_ready
// anyway is partial, as when an editor's user denies them. The denial
// is the mode's (no one was asked), and it still counts: the step would
// be checkpoint_ready, merged (0 files), if only a user's denial did.
func TestRunAskModeWorkflowWithoutATerminalLeavesTheWriterPartial(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("s.toml", writesOutA)
	wf := e.file("wf.json", `{"steps":[{"id":"w","task":"[w] write","write_set":["out/**"]}]}`)
	stdout, stderr, code := e.pixir("run", "--mode", "ask", "--script", script, "--workflow", wf, "--json")
	require.Equal(t, exitError, code, stderr)
	env := validEnvelope(t, stdout, "run_workflow_output.json")
	out := env["output"].(map[string]any)
	require.Equal(t, "failed", out["status"], "no step ready")
	step := out["steps"].([]any)[0].(map[string]any)
	require.Equal(t, "partial", step["checkpoint_status"], stdout)
	require.NoFileExists(t, filepath.Join(e.ws, "out", "a.txt"))
}

// A tool call's title that holds a line end (here a path) is shown on its
// progress lines as its first line, marked as cut: printed whole, its rest
// made lines of its own, with no mark of the call they belong to.
func TestRunProgressShowsAMultiLineTitleOnOneLine(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "first\nsecond.txt" }
  [[rule.reply]]
  text = "done"
`)
	_, stderr, code := e.pixir("run", "--script", script, "go")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "⚙ Read first …\n")
	require.Contains(t, stderr, "✗ Read first … — not_found")
	require.NotContains(t, stderr, "\nsecond.txt")
}
