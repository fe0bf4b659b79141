package workflows

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

func TestDecide(t *testing.T) {
	schema := `{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}},"additionalProperties":false}`
	tests := []struct {
		name     string
		schema   string
		status   tools.SubagentStatus
		summary  string
		reports  []string // report_checkpoint calls, in order
		want     CheckpointStatus
		source   string
		errKind  tools.ErrorKind
		safe     bool
		payload  string
		noBundle bool
	}{
		{name: "completed, nothing said: ready", status: "completed", want: CheckpointReady, source: SourceSubagent, safe: true},
		{name: "failed, nothing said: failed, no bundle", status: "failed", want: CheckpointFailed, noBundle: true},
		{name: "timed out, nothing said", status: "timed_out", want: CheckpointFailed, noBundle: true},
		{name: "cancelled, nothing said", status: "cancelled", want: CheckpointFailed, noBundle: true},
		{name: "marker in the final message", status: "completed", summary: "done.\n\n**checkpoint_status:** partial", want: CheckpointPartial, source: SourceMarker},
		{name: "the last marker counts", status: "completed", summary: "checkpoint_status: failed\nretried.\ncheckpoint_status: checkpoint_ready", want: CheckpointReady, source: SourceMarker, safe: true},
		{name: "a marker inside a sentence is not a marker", status: "completed", summary: "I will not write checkpoint_status: failed here", want: CheckpointReady, source: SourceSubagent, safe: true},
		{name: "report beats marker", status: "completed", summary: "checkpoint_status: failed", reports: []string{`{"status":"needs_orchestrator","summary":"two APIs disagree"}`}, want: CheckpointNeedsOrchestrator, source: SourceReport},
		{name: "the last report counts", status: "completed", reports: []string{`{"status":"partial","summary":"a"}`, `{"status":"checkpoint_ready","summary":"b"}`}, want: CheckpointReady, source: SourceReport, safe: true},
		{name: "ready, then timed out: partial", status: "timed_out", reports: []string{`{"status":"checkpoint_ready","summary":"a"}`}, want: CheckpointPartial, source: SourceReport},
		{name: "partial report survives a failure", status: "failed", reports: []string{`{"status":"partial","summary":"a"}`}, want: CheckpointPartial, source: SourceReport},
		{name: "typed payload accepted", schema: schema, status: "completed", reports: []string{`{"status":"checkpoint_ready","summary":"a","payload":{"n":2}}`}, want: CheckpointReady, source: SourceReport, safe: true, payload: `{"n":2}`},
		{name: "typed payload rejected: failed with the problems", schema: schema, status: "completed", reports: []string{`{"status":"checkpoint_ready","summary":"a","payload":{"n":"two"}}`}, want: CheckpointFailed, source: SourceSubagent, errKind: tools.ErrInvalidArgs},
		{name: "schema but only a marker: failed", schema: schema, status: "completed", summary: "checkpoint_status: checkpoint_ready", want: CheckpointFailed, source: SourceMarker, errKind: tools.ErrInvalidArgs},
		{name: "schema, partial without payload is fine", schema: schema, status: "completed", reports: []string{`{"status":"partial","summary":"a"}`}, want: CheckpointPartial, source: SourceReport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slot := &reportSlot{stepID: "s"}
			if tt.schema != "" {
				s, err := tools.CompileSchema("output_schema", []byte(tt.schema))
				require.NoError(t, err)
				slot.schema = s
			}
			tool := reportCheckpoint(slot)
			for _, r := range tt.reports {
				tool.Run(context.Background(), tools.Env{}, []byte(r))
			}
			out := decide(&Step{ID: "s", Task: "t", PermissionMode: ReadOnly, WorkspaceMode: Shared},
				tools.SubagentView{ID: "sa-1", Status: tt.status, Summary: tt.summary, ChildSessionID: "c1"}, slot)
			require.Equal(t, tt.want, out.CheckpointStatus)
			require.Equal(t, tt.status, out.SubagentStatus)
			if tt.noBundle {
				require.Nil(t, out.Checkpoint)
				return
			}
			require.NotNil(t, out.Checkpoint)
			require.Equal(t, tt.source, out.Checkpoint.Source)
			require.Equal(t, tt.safe, out.Checkpoint.DependentSafe)
			require.Equal(t, "sa-1", out.Checkpoint.AgentID)
			require.Equal(t, "c1", out.Checkpoint.ChildSessionID)
			if tt.errKind != "" {
				require.NotNil(t, out.Error)
				require.Equal(t, tt.errKind, out.Error.Kind)
			}
			if tt.payload != "" {
				require.JSONEq(t, tt.payload, string(out.Checkpoint.Payload))
			}
		})
	}
}

func TestDecideWriteSetViolation(t *testing.T) {
	v := &tools.WriteSetViolation{Code: tools.WriteSetViolationCode, WriteSets: [][]string{{"docs/**"}}, Paths: []string{"src/x"}, Workspace: "isolated"}
	fail := &tools.Failure{Kind: tools.ErrPermissionDenied, Message: "write_set_violation: …", Details: v}
	tests := []struct {
		name    string
		status  tools.SubagentStatus
		err     *tools.Failure
		reports []string
	}{
		{"reported ready: failed all the same", tools.SubagentFailed, fail, []string{`{"status":"checkpoint_ready","summary":"docs written"}`}},
		{"no report", tools.SubagentFailed, fail, nil},
		{"timed out after writing outside", tools.SubagentTimedOut, &tools.Failure{Kind: tools.ErrTimeout, Message: "late"}, []string{`{"status":"partial","summary":"half"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slot := &reportSlot{stepID: "docs"}
			for _, r := range tt.reports {
				require.True(t, reportCheckpoint(slot).Run(context.Background(), tools.Env{}, []byte(r)).OK)
			}
			st := &Step{ID: "docs", Task: "t", PermissionMode: Writer, WorkspaceMode: Isolated, WriteSet: []string{"docs/**"}}
			out := decide(st, tools.SubagentView{ID: "sa-1", Status: tt.status, Error: tt.err, WriteSetViolation: v,
				Changes: &tools.FileChanges{Added: []string{"docs/a.md", "src/x"}}}, slot)
			require.Equal(t, CheckpointFailed, out.CheckpointStatus)
			require.Equal(t, v, out.WriteSetViolation)
			require.Equal(t, tt.err, out.Error)
			if out.Checkpoint != nil {
				require.False(t, out.Checkpoint.DependentSafe)
				require.Contains(t, out.Checkpoint.KnownLimitations, "write_set_violation: the child changed src/x, outside its write set; the step failed for it")
			}
		})
	}
}

func TestReportCheckpointRefusesWhatItCannotKeep(t *testing.T) {
	s, err := tools.CompileSchema("output_schema", []byte(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":1}}}`))
	require.NoError(t, err)
	slot := &reportSlot{stepID: "s", schema: s}
	tool := reportCheckpoint(slot)
	run := func(args string) tools.Result { return tool.Run(context.Background(), tools.Env{}, []byte(args)) }

	res := run(`{"status":"checkpoint_ready","summary":"a","payload":{"n":0}}`)
	require.False(t, res.OK)
	require.Equal(t, tools.ErrInvalidArgs, res.Error.Kind)
	require.Contains(t, res.Error.Message, "/n: minimum: got 0, want 1")

	res = run(`{"status":"checkpoint_ready","summary":"a"}`)
	require.Contains(t, res.Error.Message, "payload is missing")

	res = run(`{"status":"partial","summary":"a","dependent_safe":true}`)
	require.Contains(t, res.Error.Message, "dependent_safe is true but status is partial")

	res = run(`{"status":"done","summary":"a"}`)
	require.Equal(t, tools.ErrInvalidArgs, res.Error.Kind, "the schema's enum")

	res = tool.DryRun(context.Background(), tools.Env{}, []byte(`{"status":"checkpoint_ready","summary":"a","payload":{"n":3}}`))
	require.True(t, res.OK)
	r, _, _ := slot.taken()
	require.Nil(t, r, "a dry run keeps nothing")

	res = run(`{"status":"checkpoint_ready","summary":"a","payload":{"n":3}}`)
	require.True(t, res.OK)
	out, _ := json.Marshal(res.Output)
	require.Contains(t, string(out), `"recorded":true`)

	// Outside a workflow step.
	res = reportCheckpoint(nil).Run(context.Background(), tools.Env{}, []byte(`{"status":"partial","summary":"a"}`))
	require.Equal(t, tools.ErrPermissionDenied, res.Error.Kind)
	require.Equal(t, tools.PostureRead, reportCheckpoint(nil).Posture(), "read_only steps must be able to report")
}

// rootOnly is a workspace that is only its root, for commands.
type rootOnly string

func (r rootOnly) Root() string { return string(r) }
func (r rootOnly) Resolve(p string) (string, error) {
	return filepath.Join(string(r), p), nil
}

// A step's verify commands are what its checkpoint_ready means beyond its
// payload: Pixir runs them when the child reports, refuses a report whose
// results are not the expected ones, and a step without a passing report
// is not checkpoint_ready.
func TestVerifyIsRunWhenTheChildReportsReady(t *testing.T) {
	ws := t.TempDir()
	env := tools.Env{Workspace: rootOnly(ws)}
	red := []Verify{{Run: "sh calc_test.sh", Expect: VerifyFail, Means: "the tests are red before the implementation"}}
	slot := &reportSlot{stepID: "tests", verify: []Verify{{Run: "test -f calc_test.sh", Expect: VerifyPass, Means: "the test file exists"}, red[0]}}
	tool := reportCheckpoint(slot)
	report := func(status string) tools.Result {
		return tool.Run(context.Background(), env, []byte(`{"status":"`+status+`","summary":"tests written","verification":["I ran them"]}`))
	}
	st := &Step{ID: "tests", Verify: slot.verify}

	// No test file yet: the first command fails where it must pass.
	res := report("checkpoint_ready")
	require.False(t, res.OK)
	require.Contains(t, res.Error.Message, "Pixir ran the step's verify command `test -f calc_test.sh`: it exited 1, and this step's checkpoint_ready needs it to pass (the test file exists)")
	out := decide(st, tools.SubagentView{ID: "sa-1", Status: tools.SubagentCompleted, Summary: "done"}, slot)
	require.Equal(t, CheckpointFailed, out.CheckpointStatus, "a completed child without a verified report is not ready")
	require.Contains(t, out.Error.Message, "no report passed it; its last report was refused")

	// A partial report is not verified: nothing is claimed.
	require.True(t, report("partial").OK)

	// The test file, and no implementation: red, as required.
	require.NoError(t, os.WriteFile(filepath.Join(ws, "calc_test.sh"), []byte("test -f calc.sh\n"), 0o644))
	res = report("checkpoint_ready")
	require.True(t, res.OK, "%+v", res.Error)
	out = decide(st, tools.SubagentView{ID: "sa-1", Status: tools.SubagentCompleted}, slot)
	require.Equal(t, CheckpointReady, out.CheckpointStatus)
	require.Equal(t, []string{
		"verified by Pixir: `test -f calc_test.sh` exited 0, as required (pass) (the test file exists)",
		"verified by Pixir: `sh calc_test.sh` exited 1, as required (fail) (the tests are red before the implementation)",
		"I ran them",
	}, out.Checkpoint.Verification)

	// Green where red was required: refused, and the earlier report stays.
	require.NoError(t, os.WriteFile(filepath.Join(ws, "calc.sh"), []byte("\n"), 0o644))
	res = report("checkpoint_ready")
	require.False(t, res.OK)
	require.Contains(t, res.Error.Message, "it exited 0, and this step's checkpoint_ready needs it to fail (the tests are red before the implementation)")
}

func TestVerifyIsValidated(t *testing.T) {
	_, err := Parse([]byte(`{"steps":[
	  {"id":"a","task":"t","verify":[{"run":" "},{"run":"go test","expect":"red"},{"run":"sh ${item.file}"},{"run":"x","timeout_ms":-1}]},
	  {"id":"b","task":"t","verify":[{"command":"go test"}]}]}`))
	require.Error(t, err)
	require.Contains(t, err.Error(), `a verify command has unknown field "command" (allowed: run, expect, means, timeout_ms, exists, for_each, when)`)
	_, err = Parse([]byte(`{"steps":[
	  {"id":"a","task":"t","verify":[{"run":" "},{"run":"go test","expect":"red"},{"run":"sh ${item.file}"},{"run":"x","timeout_ms":-1}]}]}`))
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		`steps[0] "a": verify[0].run is empty; give the shell command Pixir runs when the child reports checkpoint_ready (or exists: a file that must exist)`,
		`steps[0] "a": verify[1].expect "red" is not one of pass, fail`,
		`steps[0] "a": verify[2].run uses a fan-out binding`,
		`steps[0] "a": verify[3].timeout_ms -1 must be between 1 and 600000`,
	} {
		require.Contains(t, msg, want)
	}
}

// A file check (exists) is Pixir's own: a step that reports ready without
// writing its file is refused; with for_each, one file per item of the
// step's own payload, bound by ${item.field} and confined to the
// workspace (rows 3 and 5 of the practice: plan.md, every task-N.md).
func TestVerifyExistsChecksTheStepsFiles(t *testing.T) {
	ws := t.TempDir()
	env := tools.Env{Workspace: rootOnly(ws)}
	slot := &reportSlot{stepID: "split", verify: []Verify{
		{Exists: "run/plan.md", Expect: VerifyPass, Means: "the plan is written"},
		{Exists: "run/task-${item.id}.md", ForEach: "/tasks", Expect: VerifyPass},
	}}
	tool := reportCheckpoint(slot)
	report := func(payload string) tools.Result {
		return tool.Run(context.Background(), env, []byte(`{"status":"checkpoint_ready","summary":"split","payload":`+payload+`}`))
	}
	const two = `{"tasks":[{"id":"1"},{"id":"2"}]}`
	res := report(two)
	require.False(t, res.OK)
	require.Equal(t, "Pixir checked that run/plan.md exists (the plan is written): it does not exist. Write it, then call report_checkpoint again.", res.Error.Message)

	require.NoError(t, os.MkdirAll(filepath.Join(ws, "run"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "run", "plan.md"), []byte("plan\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "run", "task-1.md"), []byte("t1\n"), 0o644))
	res = report(two)
	require.False(t, res.OK, "task-2.md was skipped")
	require.Contains(t, res.Error.Message, "Pixir checked that run/task-2.md exists: it does not exist.")
	res = report(`{"tasks":"1"}`)
	require.False(t, res.OK)
	require.Contains(t, res.Error.Message, "your payload has no array there")

	// An item value that would turn the check to another file is refused.
	res = report(`{"tasks":[{"id":"1"},{"id":"x/../../run/plan"}]}`)
	require.False(t, res.OK)
	require.Contains(t, res.Error.Message, `which climbs out with ..`)

	require.NoError(t, os.WriteFile(filepath.Join(ws, "run", "task-2.md"), []byte("t2\n"), 0o644))
	res = report(two)
	require.True(t, res.OK, "%+v", res.Error)
	out := decide(&Step{ID: "split", Verify: slot.verify}, tools.SubagentView{ID: "sa-1", Status: tools.SubagentCompleted}, slot)
	require.Equal(t, CheckpointReady, out.CheckpointStatus)
	require.Equal(t, []string{
		"verified by Pixir: run/plan.md exists (the plan is written)",
		"verified by Pixir: run/task-1.md exists",
		"verified by Pixir: run/task-2.md exists",
	}, out.Checkpoint.Verification)

	_, err := Parse([]byte(`{"steps":[
	  {"id":"a","task":"t","output_schema":{"type":"object","properties":{"tasks":{"type":"array"},"n":{"type":"integer"}}},"verify":[
	    {"exists":"x","run":"true"},{"exists":"../x"},{"exists":"t-${item.id}.md"},{"for_each":"/tasks"},{"exists":"t-${item.id}.md","for_each":"/n"},{"exists":"x","expect":"fail"}]},
	  {"id":"b","task":"t","verify":[{"exists":"t-${item.id}.md","for_each":"/tasks"}]}]}`))
	require.Error(t, err)
	for _, want := range []string{
		`steps[0] "a": verify[0] has both run and exists`,
		`steps[0] "a": verify[1].exists "../x" is not a file path inside the workspace`,
		`steps[0] "a": verify[2].exists binds an item, but there is no for_each`,
		`steps[0] "a": verify[3].for_each goes with exists`,
		`steps[0] "a": verify[4].for_each /n is integer in this step's output_schema; point at an array`,
		`steps[0] "a": verify[5].expect fail does not go with exists`,
		`steps[1] "b": verify[0].for_each /tasks points into this step's payload, and it has no output_schema`,
	} {
		require.Contains(t, err.Error(), want)
	}
}

// A verify entry with a when applies only to the reports whose own
// payload matches: a test step's RED check (expect fail) refuses a
// TESTS_READY report whose tests pass, and a NOT_TESTABLE report, for
// which no tests were written, is not run through it; its evidence says
// the entry was skipped, why, and the value seen.
func TestVerifyWhenAppliesOnlyToMatchingPayloads(t *testing.T) {
	ws := t.TempDir()
	env := tools.Env{Workspace: rootOnly(ws)}
	when := Conditions{{Path: "/result", Equals: json.RawMessage(`"TESTS_READY"`)}}
	st := &Step{ID: "write-tests", Verify: []Verify{{Run: "false", Expect: VerifyPass, Means: "the tests are RED", When: when}}}
	slot := &reportSlot{stepID: st.ID, verify: st.Verify}
	tool := reportCheckpoint(slot)
	report := func(payload string) tools.Result {
		return tool.Run(context.Background(), env, []byte(`{"status":"checkpoint_ready","summary":"s","payload":`+payload+`}`))
	}

	// TESTS_READY: the entry applies, and `false` does not pass.
	res := report(`{"result":"TESTS_READY"}`)
	require.False(t, res.OK, "the entry applies to TESTS_READY")
	require.Contains(t, res.Error.Message, "Pixir ran the step's verify command `false`: it exited 1")

	// NOT_TESTABLE: skipped, with what it saw.
	res = report(`{"result":"NOT_TESTABLE","kind":"general"}`)
	require.True(t, res.OK, "%+v", res.Error)
	out := decide(st, tools.SubagentView{ID: "sa-1", Status: tools.SubagentCompleted}, slot)
	require.Equal(t, CheckpointReady, out.CheckpointStatus)
	require.Equal(t, []string{
		"not verified by Pixir: `false` (expect pass) (the tests are RED) does not apply to this report: its when /result = \"TESTS_READY\" does not hold (/result is \"NOT_TESTABLE\")",
	}, out.Checkpoint.Verification)

	// Without /result at all: absent, so skipped too; not, any and in
	// combine as in a step's when.
	slot.verify = []Verify{{Run: "false", Expect: VerifyPass, When: Conditions{{Any: []Condition{
		{Path: "/result", In: []json.RawMessage{json.RawMessage(`"TESTS_READY"`), json.RawMessage(`"X"`)}},
		{Not: &Condition{Path: "/kind", Exists: new(false)}},
	}}}}}
	res = report(`{"other":1}`)
	require.True(t, res.OK, "%+v", res.Error)
	out = decide(&Step{ID: st.ID, Verify: slot.verify}, tools.SubagentView{ID: "sa-1", Status: tools.SubagentCompleted}, slot)
	require.Equal(t, []string{
		"not verified by Pixir: `false` (expect pass) does not apply to this report: its when (/result in [\"TESTS_READY\", \"X\"] or not /kind is absent) does not hold (/result is absent; /kind is absent)",
	}, out.Checkpoint.Verification)
	res = report(`{"kind":"general"}`)
	require.False(t, res.OK, "not /kind absent holds: the entry applies")
}

// A verify entry's when is checked before anything starts, every problem
// at once with its location: a pointer into a step without output_schema,
// a path or value its schema cannot have, a step or status (it tests the
// report's own payload), a test without a path.
func TestVerifyWhenIsValidated(t *testing.T) {
	_, err := Parse([]byte(`{"steps":[
	  {"id":"a","task":"t","output_schema":{"type":"object","properties":{"result":{"enum":["TESTS_READY","NOT_TESTABLE"]}},"additionalProperties":false},"verify":[
	    {"run":"go test","when":{"path":"/verdict","equals":"x"}},
	    {"run":"go test","when":{"path":"/result","equals":"RED"}},
	    {"run":"go test","when":[{"step":"b","path":"/result","equals":"TESTS_READY"},{"status":["partial"],"path":"/result","exists":true}]},
	    {"run":"go test","when":{"not":{"equals":"TESTS_READY"}}},
	    {"run":"go test","when":[]},
	    {"run":"go test","when":{"path":"/result","in":["TESTS_READY"]}}]},
	  {"id":"b","task":"t","depends_on":["a"],"verify":[{"run":"go test","when":{"path":"/result","equals":"TESTS_READY"}}]}]}`))
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		`steps[0] "a": verify[0].when[0].path /verdict cannot be in the payload of "a"`,
		`steps[0] "a": verify[1].when[0].equals "RED" can never match /result of "a"`,
		`steps[0] "a": verify[2].when[0].step "b": a verify entry's when tests this step's own payload`,
		`steps[0] "a": verify[2].when[1] has status, but a verify entry runs only on a checkpoint_ready report`,
		`steps[0] "a": verify[3].when[0].not has a value test but no path`,
		`steps[0] "a": verify[4].when is empty`,
		`steps[1] "b": verify[0].when[0].path /result points into the payload of "b", which has no output_schema`,
	} {
		require.Contains(t, msg, want)
	}
	require.NotContains(t, msg, "verify[5]", "a valid when is no problem")
}

// A template's value reaches a verify entry's when as data, and the dry
// run shows when each entry applies.
func TestVerifyWhenInTemplatesAndTheDryRun(t *testing.T) {
	tpl, err := parseYAMLTemplate(t, "red", `
params:
  ready: {type: string, default: TESTS_READY}
steps:
  - id: write-tests
    task: Write the tests.
    output_schema: {type: object, properties: {result: {enum: [TESTS_READY, NOT_TESTABLE]}}}
    verify:
      - run: go test ./...
        expect: fail
        means: RED
        when: {path: /result, equals: "${ready}"}
`)
	require.NoError(t, err)
	w := instantiateTemplate(t, tpl, nil)
	require.JSONEq(t, `"TESTS_READY"`, string(w.Steps[0].Verify[0].When[0].Equals))
	d, err := Waves(w)
	require.NoError(t, err)
	require.Equal(t, []string{"`go test ./...` (expect fail), only when the payload has /result = \"TESTS_READY\""}, d.Steps[0].Verify)
	require.Contains(t, RenderPlan(&d), "\nVerified by Pixir when a step reports checkpoint_ready:\n- write-tests: `go test ./...` (expect fail), only when the payload has /result = \"TESTS_READY\"\n")
	require.Contains(t, verifyPrompt(&w.Steps[0]), "- `go test ./...` must exit non-zero (fail): RED (only when your payload has /result = \"TESTS_READY\")\n")
}

// A writer the user refused changes to is partial only when its changes
// are known to be none: a shared writer no check scans (its changes are
// unknown) keeps checkpoint_ready with the denial said, so one refusal
// among many allowed writes does not undo the step and fail the run.
func TestDecideDeniedChangesNeedKnownChanges(t *testing.T) {
	tests := []struct {
		name    string
		changes *tools.FileChanges
		want    CheckpointStatus
		said    string
	}{
		{"nothing changed", &tools.FileChanges{}, CheckpointPartial, "the user denied 2 changes the child asked to make, and no file of the step changed"},
		{"changes unknown", nil, CheckpointReady, "the user denied 2 changes the child asked to make; what the step changed is unknown"},
		{"some made", &tools.FileChanges{Added: []string{"out/a.txt"}}, CheckpointReady, "the user denied 2 changes the child asked to make; the rest of its changes were made"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slot := &reportSlot{stepID: "w"}
			require.True(t, reportCheckpoint(slot).Run(context.Background(), tools.Env{}, []byte(`{"status":"checkpoint_ready","summary":"written"}`)).OK)
			st := &Step{ID: "w", Task: "t", PermissionMode: Writer, WorkspaceMode: Shared}
			out := decide(st, tools.SubagentView{ID: "sa-1", Status: tools.SubagentCompleted, DeniedChanges: 2, Changes: tt.changes}, slot)
			require.Equal(t, tt.want, out.CheckpointStatus)
			require.NotNil(t, out.Checkpoint)
			require.Contains(t, strings.Join(out.Checkpoint.KnownLimitations, "\n"), tt.said)
		})
	}
}
