package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A workflow past its hard budget, through the binary: the first step
// spends it, the rest are held with budget_exhausted and the run ends
// partial (exit 2), its usage shown; raised and resumed, the ready step is
// reused and only the rest runs, to completion.
func TestAWorkflowPastItsBudgetEndsPartialAndResumesOnceRaised(t *testing.T) {
	e := newRunEnv(t)
	// Each child answers in one model call.
	script := e.file("script.toml", `
[[rule]]
match = '.'
  [[rule.reply]]
  text = 'Done as asked.'
`)
	spec := `{"budget":{"tokens":1},"steps":[
		{"id":"survey","task":"List the files."},
		{"id":"plan","task":"Plan from the survey.","depends_on":["survey"]},
		{"id":"write","task":"Write the plan down.","depends_on":["plan"]}]}`
	wf := e.file("wf.json", spec)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
	require.Equal(t, exitPartial, code, stderr)
	first := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)
	require.Equal(t, "partial", first["status"])
	require.Equal(t, "budget_exhausted", first["stopped_by"])
	require.Equal(t, []any{"survey"}, first["usable_checkpoints"])
	require.Equal(t, []any{"plan", "write"}, first["held_steps"])
	steps := first["steps"].([]any)
	survey := steps[0].(map[string]any)
	require.Equal(t, "checkpoint_ready", survey["checkpoint_status"])
	require.Greater(t, survey["usage"].(map[string]any)["input_tokens"].(float64), 1.0, "the step's usage is in its outcome")
	for _, s := range steps[1:] {
		require.Equal(t, "budget_exhausted", s.(map[string]any)["held_reason"])
	}
	total := first["usage"].(map[string]any)
	require.Equal(t, survey["usage"], total, "the run spent what its one step did")
	next := first["safe_next_actions"].([]any)[0].(map[string]any)
	require.Equal(t, "rerun_held_steps", next["action"])
	wfID := first["workflow_id"].(string)
	require.Equal(t, wfID, next["args"].(map[string]any)["resume_from"])
	require.Contains(t, stderr, "pixir: usage: ", "pixir run says what it spent")
	sid := regexp.MustCompile(`session ([0-9a-f-]{36})`).FindStringSubmatch(stderr)[1]

	// Raised, and resumed: survey is reused, plan and write run.
	e.file("wf.json", strings.Replace(spec, `"tokens":1`, `"tokens":1000000`, 1))
	stdout, stderr, code = e.pixir("resume", sid, "--script", script, "--workflow", wf, "--resume-from", wfID, "--json")
	require.Equal(t, exitOK, code, stderr)
	second := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)
	require.Equal(t, "completed", second["status"])
	steps = second["steps"].([]any)
	require.Equal(t, wfID, steps[0].(map[string]any)["reused_from"], "survey was ready: reused")
	require.Nil(t, steps[1].(map[string]any)["reused_from"], "plan ran")
	require.Equal(t, [][]string{{"plan"}, {"write"}}, toWaves(second["waves"]))
	used := second["usage"].(map[string]any)
	require.Equal(t, 2.0, used["model_calls"], "reused steps cost the run nothing: two children, one call each")
}
