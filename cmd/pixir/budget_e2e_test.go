package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	sid := regexp.MustCompile(`pixir: session ([0-9a-f-]{8,}) `).FindStringSubmatch(stderr)[1]
	// Without --json, the next step names where the run's budget is: this
	// file's (it said only "[budget] in config.toml", which does not raise a
	// budget the workflow names).
	stdout, _, code = e.pixir("run", "--script", script, "--workflow", wf)
	require.Equal(t, exitPartial, code)
	require.Contains(t, stdout, "- the budget was spent before plan, write started: raise it (the run's: budget in "+wf+", or workflow_tokens or workflow_cost in [budget] of config.toml; the session's: session_tokens or session_cost there)")

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

// pixir run says what a turn spent, its children included: on stderr, and
// as usage under --json; a subagent's line shows its own tokens.
func TestRunShowsTheTurnsUsageChildrenIncluded(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = '^delegate$'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "child work", workspace_mode = "shared" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = {}
  [[rule.reply]]
  text = 'The child is done.'
[[rule]]
match = '^child work$'
  [[rule.reply]]
  text = 'Did the child work.'
`)
	stdout, stderr, code := e.pixir("run", "--script", script, "--json", "delegate")
	require.Equal(t, exitOK, code, stderr)
	out := validEnvelope(t, stdout, "pixir_run_output.json")["output"].(map[string]any)
	usage := out["usage"].(map[string]any)
	// The parent's calls are in its Log (two or three: a child that ended
	// before the parent's next call is told to it, and the script then
	// answers at once), the child's in its own.
	parentCalls := 0
	for _, ev := range readLog(t, e.ws, out["session_id"].(string)) {
		if ev.Type == "provider_usage" {
			parentCalls++
		}
	}
	require.GreaterOrEqual(t, parentCalls, 2)
	require.Equal(t, float64(parentCalls+1), usage["model_calls"], "the parent's calls and the child's one")
	require.Regexp(t, fmt.Sprintf(`pixir: usage: [0-9,]+ tokens \([0-9,]+ in, [0-9,]+ out\) in %d model calls`, parentCalls+1), stderr)
	require.Regexp(t, `subagent sa-[0-9a-f]+ \(default\): finished, [0-9,]+ tokens`, stderr, "the child's end shows its tokens")
}

// pixir run tells the user when a budget passes its soft limit (warn_at):
// the warning was only a notice in the Log, which pixir run did not show,
// so a headless user learned of the budget only when it stopped the turn.
func TestRunSaysWhenABudgetPassesItsSoftLimit(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = '.'
  [[rule.reply]]
  text = 'Done as asked.'
`)
	// The reply costs 4 tokens: 80% of 5, the default warn_at, not past 5.
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("[budget]\nsession_tokens = 5\n"), 0o644))
	stdout, stderr, code := e.pixir("run", "--script", script, "hi")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "Done as asked.")
	var warned bool
	for _, ev := range readLog(t, e.ws, onlySession(t, e.ws)) {
		warned = warned || ev.Type == "notice"
	}
	require.True(t, warned, "the Log has the budget's warning")
	require.Regexp(t, `(?m)^.*! The session has spent [0-9]+% of its budget: [0-9,]+ tokens .* of 5 tokens\. At the limit the next model call or spawn is refused; to allow more, raise session_tokens`, stderr)
}

// The session's budget spent while every step already runs, through the
// binary: both children's first model calls meet (together = 2), so both
// steps started before anything was spent; those calls spend the session's
// budget and each child's next call is refused. The run says the budget
// stopped it, as when a spent budget refuses a step's start: the outcome
// (stopped_by), pixir run's table and pixir inspect.
func TestASessionBudgetSpentWhileEveryStepRunsStopsTheRun(t *testing.T) {
	e := newRunEnv(t)
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("[budget]\nsession_tokens = 1\n"), 0o644))
	script := e.file("script.toml", `
[[rule]]
match = '.'
  [[rule.reply]]
  together = 2
  [[rule.reply.tool_calls]]
  name = "glob"
  arguments = { pattern = "*" }
  [[rule.reply]]
  text = 'Done as asked.'
`)
	wf := e.file("wf.json", `{"steps":[{"id":"left","task":"Look left."},{"id":"right","task":"Look right."}]}`)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
	require.Equal(t, exitError, code, stderr) // failed: no step was ready
	out := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)
	require.Equal(t, "failed", out["status"])
	require.Equal(t, "budget_exhausted", out["stopped_by"], stdout)
	for _, s := range out["steps"].([]any) {
		step := s.(map[string]any)
		require.Equal(t, "failed", step["subagent_status"], "%v", step)
		require.Equal(t, "budget_exhausted", step["error"].(map[string]any)["kind"], "%v", step)
	}
	sid := regexp.MustCompile(`pixir: session ([0-9a-f-]{8,}) `).FindStringSubmatch(stderr)[1]

	stdout, _, code = e.pixir("run", "--script", script, "--workflow", wf)
	require.Equal(t, exitError, code)
	require.Contains(t, stdout, "stopped early: budget_exhausted")
	require.Contains(t, stdout, "- the budget was spent while the run went on: raise it (the run's: budget in "+wf+", or workflow_tokens or workflow_cost in [budget] of config.toml; the session's: session_tokens or session_cost there), then retry left, right, reusing the checkpoint_ready steps:")

	stdout, stderr, code = e.pixir("inspect", sid)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "stopped by budget_exhausted")
}

// A server that reports no usage (an OpenAI-compatible server that ignores
// stream_options.include_usage, or a gateway that drops the last chunk)
// counted nothing, so a budget never held: every turn of a session with
// session_tokens = 50 ran. Its calls are estimated from the request's and
// the answer's sizes, said once, marked estimated in the Log, and the
// budget holds on the next call.
func TestABudgetHoldsWhenTheServerReportsNoUsage(t *testing.T) {
	srv := newFakeModel(t, sseReply(0, concat(oaText("Hello ", "there."), []string{oaChunk(`{}`, "stop"), oaDone})...))
	providerEnv(t)
	e := newRunEnv(t)
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("[budget]\nsession_tokens = 50\n"), 0o644))
	flags := []string{"--provider", "openai", "--base-url", srv.URL + "/v1", "--model", "m"}

	stdout, stderr, code := e.pixir(append([]string{"run", "hi"}, flags...)...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "Hello there.")
	require.Contains(t, stderr, "! The model server reported no token usage")
	require.Regexp(t, `pixir: usage: [0-9,]+ tokens`, stderr)
	sid := onlySession(t, e.ws)
	var estimated int
	for _, ev := range readLog(t, e.ws, sid) {
		if ev.Type == "provider_usage" {
			var d struct {
				InputTokens int  `json:"input_tokens"`
				Estimated   bool `json:"estimated"`
			}
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			require.True(t, d.Estimated)
			require.Positive(t, d.InputTokens)
			estimated++
		}
	}
	require.Equal(t, 1, estimated, "the call is in the Log, estimated")

	_, stderr, code = e.pixir(append([]string{"resume", sid, "again"}, flags...)...)
	require.Equal(t, exitPartial, code, stderr)
	require.Contains(t, stderr, "budget_exhausted: the budget of the session is spent")
	require.Len(t, srv.received(), 1, "the spent budget refused the second call")
}

// An answer cut off mid-stream (here an error event after some text; a
// cancel or a broken connection alike) reports no usage, though the server
// generated and bills what streamed: it counted nothing, so a session
// whose answers kept breaking spent without its budget knowing. It is
// estimated, and the budget holds on the next call.
func TestAnAnswerCutMidStreamCountsAgainstTheBudget(t *testing.T) {
	srv := newFakeModel(t, sseReply(0, concat(oaText("I will start by ", "reading the files."),
		[]string{`data: {"error":{"message":"The server is overloaded","type":"server_error","code":"overloaded"}}` + "\n\n"})...))
	providerEnv(t)
	e := newRunEnv(t)
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("[budget]\nsession_tokens = 50\n"), 0o644))
	flags := []string{"--provider", "openai", "--base-url", srv.URL + "/v1", "--model", "m"}

	_, stderr, code := e.pixir(append([]string{"run", "hi"}, flags...)...)
	require.Equal(t, exitError, code, stderr)
	require.Contains(t, stderr, "reported an error in the middle of the answer")
	sid := onlySession(t, e.ws)
	var types []string
	for _, ev := range readLog(t, e.ws, sid) {
		if ev.Type != "notice" { // the budget's warning
			types = append(types, ev.Type)
		}
		if ev.Type == "provider_usage" {
			var d struct {
				OutputTokens int  `json:"output_tokens"`
				Estimated    bool `json:"estimated"`
			}
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			require.True(t, d.Estimated)
			require.Positive(t, d.OutputTokens)
		}
	}
	require.Equal(t, []string{"user_message", "provider_usage", "assistant_message", "turn_failed"}, types)

	_, stderr, code = e.pixir(append([]string{"resume", sid, "again"}, flags...)...)
	require.Equal(t, exitPartial, code, stderr)
	require.Contains(t, stderr, "budget_exhausted: the budget of the session is spent")
	require.Len(t, srv.received(), 1, "the spent budget refused the second call")
}

// The commands a run prints to go on repeat the flags that chose its
// model: the retry of a workflow a budget stopped, pasted as printed, ran
// the rest on the offline scripted model (nothing else was configured),
// and the run ended COMPLETED, exit 0, its last step's summary "Scripted
// step: no model, nothing checked.", the real server never asked.
func TestThePrintedResumeKeepsTheModelTheRunWasGiven(t *testing.T) {
	srv := newFakeModel(t, oaAnswer("Looked.", 1000, 50))
	providerEnv(t)
	e := newRunEnv(t)
	wf := e.file("wf.yaml", "name: chain\nbudget: {tokens: 1500}\nsteps:\n  - {id: one, agent: explorer, task: Look.}\n  - {id: two, agent: explorer, task: Look again., depends_on: [one]}\n  - {id: three, agent: explorer, task: Look once more., depends_on: [two]}\n")
	flags := []string{"--provider", "openai", "--base-url", srv.URL + "/v1", "--model", "m"}
	stdout, stderr, code := e.pixir(append([]string{"run", "--workflow", wf}, flags...)...)
	require.Equal(t, exitPartial, code, stderr)
	require.Regexp(t, `pixir: session [0-9a-f]+ · go on: pixir resume --provider openai --model m --base-url http://127\.0\.0\.1:[0-9]+/v1 [0-9a-f]+ "…"`, stderr)
	retry := regexp.MustCompile(`(?m)^    (pixir resume .*)$`).FindStringSubmatch(stdout)
	require.NotNil(t, retry, stdout)
	require.Len(t, srv.received(), 2)

	// Raised and pasted as printed: the rest runs on the same model.
	require.NoError(t, os.WriteFile(wf, []byte(strings.Replace(readFile(t, wf), "tokens: 1500", "tokens: 100000", 1)), 0o644))
	args := strings.Fields(retry[1])[1:]
	stdout, stderr, code = e.pixir(args...)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "Looked.")
	require.NotContains(t, stdout, "Scripted step")
	require.Len(t, srv.received(), 3, "the last step asked the run's model")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
