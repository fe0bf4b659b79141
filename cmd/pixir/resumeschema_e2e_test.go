package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/workflows"
)

// schemaOrderSpec is a workflow whose output_schema lists its keys as a
// model writes them (type, required, properties), not sorted.
const schemaOrderSpec = `{"name": "two", "steps": [
  {"id": "survey", "agent": "explorer", "task": "[survey] Count.",
   "output_schema": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer", "minimum": 1.0}}}},
  {"id": "ship", "task": "[ship] Ship it.", "depends_on": ["survey"]}]}`

// A workflow the model ran (run_workflow from a turn) and that ended
// partial is resumed from the file of the same spec: its ready step is
// reused, whatever order the model wrote the schema's keys in or how it
// wrote a number. The schema was compared as text, so a model's key order
// against a file's (decoded, keys sorted) never matched, and every step ran
// again with nothing said.
func TestAResumeReusesAStepWhoseSchemaWasWrittenInAnotherOrder(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = '\A\[survey\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"n is 3","payload":{"n":3}}'
  [[rule.reply]]
  text = "counted"

[[rule]]
match = '\A\[ship\]'
  [[rule.reply]]
  text = "checkpoint_status: failed"

[[rule]]
match = 'go'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '''`+schemaOrderSpec+`'''
  [[rule.reply]]
  text = "ran"
`)
	_, stderr, code := e.pixir("run", "--script", script, "go")
	require.Equal(t, exitOK, code, stderr)
	sid := sessionOf(t, e.ws, stderr)
	evs := workflowEvents(t, readLog(t, e.ws, sid))
	wfID := evs[0].WorkflowID
	require.Equal(t, workflows.StatusPartial, workflows.Rebuild(evs)[0].Status)

	shipped := e.file("shipped.toml", `
[[rule]]
match = '\A\[survey\]'
  [[rule.reply]]
  text = "checkpoint_status: failed"

[[rule]]
match = '\A\[ship\]'
  [[rule.reply]]
  text = "shipped"
`)
	spec := e.file("spec.json", schemaOrderSpec)
	stdout, stderr, code := e.pixir("resume", sid, "--script", shipped, "--workflow", spec, "--resume-from", wfID, "--json")
	require.Equal(t, exitOK, code, stderr)
	out := runOutcome(t, stdout)
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)
	require.Equal(t, wfID, runOf(t, out, "survey").ReusedFrom, "survey was ready: reused, not run again")
	require.Empty(t, runOf(t, out, "ship").ReusedFrom)
}

// --resume-from given to pixir run (a new session, with no earlier run to
// reuse) was refused as any unknown flag, with nothing near it to
// suggest: the refusal says whose flag it is and the command that takes it.
func TestRunSaysResumeFromIsPixirResumes(t *testing.T) {
	e := newRunEnv(t)
	wf := e.file("wf.yaml", "steps:\n  - id: a\n    task: a\n")
	stdout, stderr, code := e.pixir("run", "--workflow", wf, "--resume-from", "wf-5be1c0d2e3f4")
	require.Equal(t, exitUsage, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "pixir run: unknown flag --resume-from: it belongs to pixir resume, which reuses an earlier run of the same session: pixir resume SESSION --workflow FILE --resume-from WORKFLOW_ID")
	require.NoDirExists(t, filepath.Join(e.ws, ".pixir", "sessions"), "nothing started")
}
