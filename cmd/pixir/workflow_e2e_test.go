package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/acp/client"
	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// These tests drive the ADR 0014 scenarios (step outcomes, checkpoint
// bundles, honest partial outcomes) through the built binary over real
// pipes, on the offline scripted provider and testdata/workflows.toml: the
// parent's prompt ("wfe2e …") picks a run_workflow call, and each step's
// child acts on the bracketed tag of its task ([ready], [hang], …).

// wfSession is a pixir acp process with one session on the workflow script.
type wfSession struct {
	t   *testing.T
	e   *env
	a   *agent
	sid string
	id  int // the last request id used
}

func startWorkflowSession(t *testing.T, mode string) *wfSession {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("testdata", "workflows.toml"))
	require.NoError(t, err)
	e := newEnv(t, string(script))
	a := e.start()
	a.initialize()
	s := &wfSession{t: t, e: e, a: a, sid: a.newSession(), id: 2}
	if mode != "" {
		a.result(s.nextID(), "session/set_mode", map[string]any{"sessionId": s.sid, "modeId": mode}, nil)
	}
	return s
}

func (s *wfSession) nextID() int {
	s.id++
	return s.id
}

// prompt runs one turn to its end and returns what the agent wrote on
// the way.
func (s *wfSession) prompt(text string) []message {
	s.t.Helper()
	m, before := s.a.call(s.nextID(), "session/prompt", promptParams(s.sid, text))
	require.Equal(s.t, "end_turn", stopReason(s.t, m))
	return before
}

func (s *wfSession) log() []logEvent {
	s.t.Helper()
	return readLog(s.t, s.e.ws, s.sid)
}

// envelope is a tool result as the model read it.
type envelope struct {
	OK     bool            `json:"ok"`
	Output json.RawMessage `json:"output"`
	Error  *tools.Failure  `json:"error"`
}

// workflowResults are the results of the run_workflow calls in a Log, in
// the order they ran (a turn runs its calls one after the other).
func workflowResults(t *testing.T, events []logEvent) []envelope {
	t.Helper()
	var out []envelope
	for _, ev := range events {
		if ev.Type != "tool_result" {
			continue
		}
		var d struct {
			Name   string   `json:"name"`
			Result envelope `json:"result"`
		}
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		if d.Name == "run_workflow" {
			out = append(out, d.Result)
		}
	}
	return out
}

// onlyResult is the one run_workflow result of a Log.
func onlyResult(t *testing.T, events []logEvent) envelope {
	t.Helper()
	results := workflowResults(t, events)
	require.Len(t, results, 1)
	return results[0]
}

// outcomeOf decodes a run's Outcome; a workflow that ran is never a tool
// error, whatever became of its steps.
func outcomeOf(t *testing.T, env envelope) workflows.Outcome {
	t.Helper()
	require.Nil(t, env.Error, "a workflow that ran is an outcome, not a tool error")
	require.NotEmpty(t, env.Output)
	var out workflows.Outcome
	require.NoError(t, json.Unmarshal(env.Output, &out))
	require.Equal(t, "run", out.Mode)
	require.Equal(t, out.Status == workflows.StatusCompleted, env.OK, "ok is true exactly when the workflow completed")
	return out
}

func stepOf(t *testing.T, out workflows.Outcome, id string) workflows.StepOutcome {
	t.Helper()
	for _, s := range out.Steps {
		if s.StepID == id {
			return s
		}
	}
	t.Fatalf("no step %q in the outcome", id)
	return workflows.StepOutcome{}
}

func workflowEvents(t *testing.T, events []logEvent) []workflows.WorkflowEvent {
	t.Helper()
	var out []workflows.WorkflowEvent
	for _, ev := range events {
		if ev.Type != "workflow_event" {
			continue
		}
		var d workflows.WorkflowEvent
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		out = append(out, d)
	}
	return out
}

func subagentEvents(t *testing.T, events []logEvent) []runtime.SubagentEventData {
	t.Helper()
	var out []runtime.SubagentEventData
	for _, ev := range events {
		if ev.Type != "subagent_event" {
			continue
		}
		var d runtime.SubagentEventData
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		out = append(out, d)
	}
	return out
}

// childrenByStep maps each step that got a child to its subagent ids.
func childrenByStep(t *testing.T, events []logEvent) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, d := range subagentEvents(t, events) {
		if !slices.Contains(out[d.Name], d.SubagentID) {
			out[d.Name] = append(out[d.Name], d.SubagentID)
		}
	}
	return out
}

// childLog reads the Log of a step's child, beside its snapshot under
// .pixir/subagents/<subagent_id>/.
func childLog(t *testing.T, ws string, s workflows.StepOutcome) []logEvent {
	t.Helper()
	require.NotEmpty(t, s.AgentID, "step %s has no child", s.StepID)
	require.NotEmpty(t, s.ChildSessionID, "step %s has no child session", s.StepID)
	data, err := os.ReadFile(filepath.Join(ws, ".pixir", "subagents", s.AgentID, s.ChildSessionID+".ndjson"))
	require.NoError(t, err)
	var out []logEvent
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev logEvent
		require.NoError(t, json.Unmarshal([]byte(line), &ev), "log line %q", line)
		out = append(out, ev)
	}
	return out
}

// firstUserText is the prompt a child got.
func firstUserText(t *testing.T, events []logEvent) string {
	t.Helper()
	for _, ev := range events {
		if ev.Type == "user_message" {
			var d runtime.UserMessageData
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			return d.Text
		}
	}
	t.Fatal("the child's Log has no user_message")
	return ""
}

// problemsOf decodes the problems of an invalid_args failure.
func problemsOf(t *testing.T, details any) []workflows.Problem {
	t.Helper()
	raw, err := json.Marshal(details)
	require.NoError(t, err)
	var d workflows.ValidationDetails
	require.NoError(t, json.Unmarshal(raw, &d))
	return d.Problems
}

func actionOf(out workflows.Outcome, action string) *workflows.NextAction {
	for i := range out.SafeNextActions {
		if out.SafeNextActions[i].Action == action {
			return &out.SafeNextActions[i]
		}
	}
	return nil
}

func TestWorkflowAllStepsCheckpointReady(t *testing.T) {
	t.Parallel()
	s := startWorkflowSession(t, "")
	before := s.prompt("wfe2e ready")
	ups := updates(t, before)
	require.Equal(t, "The workflow ended completed.", agentText(ups))
	// A completed workflow is shown completed, with its table.
	end := lastUpdateOf(t, ups, workflowCallID(t, ups, "Workflow all ready"))
	require.Equal(t, "completed", end["status"])
	require.Contains(t, toolCallText(t, end), "COMPLETED — 3 of 3 steps checkpoint_ready")

	events := s.log()
	env := onlyResult(t, events)
	require.True(t, env.OK)
	out := outcomeOf(t, env)
	require.Equal(t, workflows.StatusCompleted, out.Status)
	require.Empty(t, out.StoppedBy)
	require.Equal(t, []string{"survey", "build", "notes"}, out.UsableCheckpoints)
	require.Equal(t, [][]string{{"survey", "notes"}, {"build"}}, out.Waves)
	require.Empty(t, out.FailedSteps)
	require.Empty(t, out.PartialSteps)
	require.Empty(t, out.HeldSteps)
	require.Empty(t, out.TimeoutSteps)
	require.Empty(t, out.NeedsOrchestratorSteps)
	require.Empty(t, out.SafeNextActions, "nothing to do after a completed workflow")
	require.Equal(t, workflows.Counts{Steps: 3, Waves: 2, CheckpointReadySteps: 3}, out.Summary)
	require.Contains(t, out.Output, "COMPLETED — 3 of 3 steps checkpoint_ready")

	children := childrenByStep(t, events)
	for _, st := range out.Steps {
		require.Equal(t, tools.SubagentCompleted, st.SubagentStatus, st.StepID)
		require.Equal(t, workflows.CheckpointReady, st.CheckpointStatus, st.StepID)
		require.Nil(t, st.Error, st.StepID)
		require.Equal(t, []string{st.AgentID}, children[st.StepID], "step %s has exactly its own child", st.StepID)
		require.NotEmpty(t, st.ChildSessionID, st.StepID)
		c := st.Checkpoint
		require.NotNil(t, c, st.StepID)
		require.Equal(t, workflows.SourceReport, c.Source)
		require.True(t, c.DependentSafe)
		require.Equal(t, st.AgentID, c.AgentID)
		require.Equal(t, st.ChildSessionID, c.ChildSessionID)
		require.Equal(t, "Scripted step result: the endpoints are counted.", c.Summary)
		require.Equal(t, []string{"endpoint count"}, c.Produced)
	}
	survey, build := stepOf(t, out, "survey"), stepOf(t, out, "build")
	require.JSONEq(t, `{"answer":42}`, string(survey.Checkpoint.Payload), "the typed payload matched its schema and is kept")
	require.Equal(t, 1, survey.Wave)
	require.Equal(t, 2, build.Wave)

	// The dependent got its dependency's bundle in its prompt: read from the
	// child's own Log.
	prompt := firstUserText(t, childLog(t, s.e.ws, build))
	require.True(t, strings.HasPrefix(prompt, "[ready] Build on the survey."), prompt)
	require.Contains(t, prompt, "Checkpoints of the steps you depend on")
	require.Contains(t, prompt, "### survey (checkpoint_ready, subagent "+survey.AgentID+")")
	require.Contains(t, prompt, "Summary: Scripted step result: the endpoints are counted.")
	require.Contains(t, prompt, "Produced:\n- endpoint count\n")
	require.Contains(t, prompt, "Verification:\n- counted twice\n")
	require.Contains(t, prompt, `Payload: {"answer":42}`)
	// … and the independent ones got none, but the typed one its schema.
	surveyPrompt := firstUserText(t, childLog(t, s.e.ws, survey))
	require.NotContains(t, surveyPrompt, "Checkpoints of the steps you depend on")
	require.Contains(t, surveyPrompt, "must carry a payload that matches this JSON Schema")
	require.NotContains(t, firstUserText(t, childLog(t, s.e.ws, stepOf(t, out, "notes"))), "Checkpoints of the steps you depend on")

	// The workflow's own evidence, in order.
	var kinds []string
	for _, ev := range workflowEvents(t, events) {
		kinds = append(kinds, ev.Kind)
		require.Equal(t, out.WorkflowID, ev.WorkflowID)
	}
	require.Equal(t, workflows.EventWorkflowStarted, kinds[0])
	require.Equal(t, workflows.EventWorkflowFinished, kinds[len(kinds)-1])
	require.Equal(t, 3, countOf(kinds, workflows.EventStepScheduled))
	require.Equal(t, 3, countOf(kinds, workflows.EventCheckpointDecided))
	require.Zero(t, countOf(kinds, workflows.EventStepHeld))
}

// workflowCallID is the id of the run_workflow tool call whose title
// starts with title.
func workflowCallID(t *testing.T, ups []map[string]any, title string) string {
	t.Helper()
	for _, u := range ups {
		if u["sessionUpdate"] == "tool_call" && strings.HasPrefix(u["title"].(string), title) {
			return u["toolCallId"].(string)
		}
	}
	t.Fatalf("no tool call titled %q", title)
	return ""
}

// lastUpdateOf is the last tool_call_update of a call that set its status.
func lastUpdateOf(t *testing.T, ups []map[string]any, id string) map[string]any {
	t.Helper()
	var last map[string]any
	for _, u := range ups {
		if u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == id && u["status"] != nil {
			last = u
		}
	}
	require.NotNil(t, last, "tool call %s never got a status", id)
	return last
}

// toolCallText is the text content of a tool call update.
func toolCallText(t *testing.T, u map[string]any) string {
	t.Helper()
	content, ok := u["content"].([]any)
	require.True(t, ok, "no content: %v", u)
	require.Len(t, content, 1)
	return content[0].(map[string]any)["content"].(map[string]any)["text"].(string)
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func TestWorkflowStepTimeoutIsAPartialOutcome(t *testing.T) {
	t.Parallel()
	s := startWorkflowSession(t, "")
	before := s.prompt("wfe2e timeout")
	require.Equal(t, "The workflow ended partial.", agentText(updates(t, before)))

	env := onlyResult(t, s.log())
	require.False(t, env.OK)
	out := outcomeOf(t, env)
	require.Equal(t, workflows.StatusPartial, out.Status)
	require.Empty(t, out.StoppedBy, "a step's own timeout does not stop the workflow")

	slow := stepOf(t, out, "slow")
	require.Equal(t, tools.SubagentTimedOut, slow.SubagentStatus)
	require.Equal(t, workflows.CheckpointFailed, slow.CheckpointStatus)
	require.NotNil(t, slow.Error)
	require.Equal(t, tools.ErrTimeout, slow.Error.Kind)
	require.GreaterOrEqual(t, slow.ElapsedMS, int64(300), "it ran until its timeout_ms (its deadline is counted from its start)")
	require.Nil(t, slow.Checkpoint, "a timed-out step without a report has no bundle")
	require.NotEmpty(t, slow.AgentID)

	quick := stepOf(t, out, "quick")
	require.Equal(t, workflows.CheckpointReady, quick.CheckpointStatus)
	require.Equal(t, tools.SubagentCompleted, quick.SubagentStatus)

	require.Equal(t, []string{"slow"}, out.TimeoutSteps)
	require.Equal(t, []string{"slow"}, out.FailedSteps)
	require.Equal(t, []string{"quick"}, out.UsableCheckpoints)
	retry := actionOf(out, "retry_failed_steps")
	require.NotNil(t, retry, "%+v", out.SafeNextActions)
	require.Equal(t, []string{"slow"}, retry.StepIDs)
	require.Equal(t, map[string]string{"resume_from": out.WorkflowID}, retry.Args)
	require.NotNil(t, actionOf(out, "abort"))
	require.Contains(t, out.Output, "PARTIAL — 1 of 2 steps checkpoint_ready, 1 failed")
	require.Contains(t, out.Output, "| slow | default | 1 | timed_out | failed |")
}

func TestWorkflowDependentsOfAFailedStepAreHeldAndIndependentStepsRun(t *testing.T) {
	t.Parallel()
	s := startWorkflowSession(t, "")
	s.prompt("wfe2e held")
	events := s.log()
	out := outcomeOf(t, onlyResult(t, events))
	require.Equal(t, workflows.StatusPartial, out.Status)

	require.Equal(t, tools.SubagentTimedOut, stepOf(t, out, "slow").SubagentStatus)
	after, last := stepOf(t, out, "after"), stepOf(t, out, "last")
	for _, h := range []struct {
		step      workflows.StepOutcome
		blockedBy []string
	}{{after, []string{"slow"}}, {last, []string{"after"}}} {
		st := h.step
		require.Equal(t, workflows.CheckpointHeld, st.CheckpointStatus, st.StepID)
		require.Equal(t, workflows.HeldDependency, st.HeldReason, st.StepID)
		require.Equal(t, h.blockedBy, st.BlockedBy, st.StepID)
		require.Equal(t, tools.SubagentNotStarted, st.SubagentStatus, st.StepID)
		require.Empty(t, st.AgentID, st.StepID)
		require.Zero(t, st.Wave, st.StepID)
		require.Nil(t, st.Checkpoint, st.StepID)
	}
	require.Equal(t, []string{"after", "last"}, out.HeldSteps)
	require.Equal(t, []string{"indep", "indep2"}, out.UsableCheckpoints, "keep_going: independent steps still run")
	rerun := actionOf(out, "rerun_held_steps")
	require.NotNil(t, rerun)
	require.Equal(t, []string{"after", "last"}, rerun.StepIDs)

	// The held steps never got a child; the others each got one.
	children := childrenByStep(t, events)
	require.NotContains(t, children, "after")
	require.NotContains(t, children, "last")
	require.Len(t, children, 3, "%v", children)
	entries, err := os.ReadDir(filepath.Join(s.e.ws, ".pixir", "subagents"))
	require.NoError(t, err)
	require.Len(t, entries, 3, "no child state for held steps")

	// The Log says so too, and shows that the independent steps started
	// only after slow failed (one at a time, the longest chain first).
	pos := map[string]int{}
	for i, ev := range workflowEvents(t, events) {
		key := ev.Kind + ":" + ev.StepID
		if _, seen := pos[key]; !seen {
			pos[key] = i
		}
		switch {
		case ev.Kind == workflows.EventStepScheduled:
			require.NotContains(t, []string{"after", "last"}, ev.StepID, "a held step was scheduled")
		case ev.Kind == workflows.EventStepHeld && ev.StepID == "after":
			require.Equal(t, workflows.HeldDependency, ev.HeldReason)
			require.Equal(t, []string{"slow"}, ev.BlockedBy)
		}
	}
	require.Contains(t, pos, workflows.EventStepHeld+":after")
	require.Contains(t, pos, workflows.EventStepHeld+":last")
	require.Less(t, pos[workflows.EventCheckpointDecided+":slow"], pos[workflows.EventStepScheduled+":indep"])
	require.Less(t, pos[workflows.EventStepScheduled+":indep"], pos[workflows.EventStepScheduled+":indep2"])
}

func TestWorkflowPartialAndNeedsOrchestratorAreNeverCompleted(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, prompt string
		status       workflows.Status
		ready        []string
	}{
		{"with a ready step", "wfe2e partial", workflows.StatusPartial, []string{"good"}},
		{"with no ready step", "wfe2e none ready", workflows.StatusFailed, []string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := startWorkflowSession(t, "")
			before := s.prompt(tt.prompt)
			require.Equal(t, "The workflow ended "+string(tt.status)+".", agentText(updates(t, before)))
			env := onlyResult(t, s.log())
			require.False(t, env.OK)
			out := outcomeOf(t, env)
			require.Equal(t, tt.status, out.Status)
			require.Equal(t, tt.ready, out.UsableCheckpoints)

			part := stepOf(t, out, "part")
			require.Equal(t, workflows.CheckpointPartial, part.CheckpointStatus)
			require.Equal(t, tools.SubagentCompleted, part.SubagentStatus, "the child completed; the workflow judges its result")
			require.NotNil(t, part.Checkpoint)
			require.False(t, part.Checkpoint.DependentSafe)
			require.Equal(t, []string{"the second half is missing"}, part.Checkpoint.KnownLimitations)

			seam := stepOf(t, out, "seam")
			require.Equal(t, workflows.CheckpointNeedsOrchestrator, seam.CheckpointStatus)
			require.Equal(t, tools.SubagentCompleted, seam.SubagentStatus)
			require.False(t, seam.Checkpoint.DependentSafe)

			require.Equal(t, []string{"part"}, out.PartialSteps)
			require.Equal(t, []string{"seam"}, out.NeedsOrchestratorSteps)
			require.Equal(t, []string{"seam: The two APIs disagree on the id type. (someone must pick int or string)"}, out.SeamObligations)
			ask := actionOf(out, "ask_user")
			require.NotNil(t, ask, "%+v", out.SafeNextActions)
			require.ElementsMatch(t, []string{"seam", "part"}, ask.StepIDs)
			require.Empty(t, out.FailedSteps)
			require.Contains(t, out.Output, strings.ToUpper(string(tt.status))+" — ")
			require.NotContains(t, out.Output, "COMPLETED")
		})
	}
}

func TestWorkflowTypedPayloadRejectedByItsSchema(t *testing.T) {
	t.Parallel()
	s := startWorkflowSession(t, "")
	s.prompt("wfe2e badpayload")
	out := outcomeOf(t, onlyResult(t, s.log()))
	require.Equal(t, workflows.StatusPartial, out.Status)

	typed := stepOf(t, out, "typed")
	require.Equal(t, tools.SubagentCompleted, typed.SubagentStatus)
	require.Equal(t, workflows.CheckpointFailed, typed.CheckpointStatus)
	require.NotNil(t, typed.Error)
	require.Equal(t, tools.ErrInvalidArgs, typed.Error.Kind)
	require.Contains(t, typed.Error.Message, "output_schema")
	details, ok := typed.Error.Details.(map[string]any)
	require.True(t, ok, "details: %#v", typed.Error.Details)
	problems, ok := details["problems"].([]any)
	require.True(t, ok, "details: %#v", details)
	require.NotEmpty(t, problems)
	require.Contains(t, problems[0], "/answer", "the problem names the offending field: %v", problems)
	require.Equal(t, []string{"typed"}, out.FailedSteps)
	if typed.Checkpoint != nil {
		require.False(t, typed.Checkpoint.DependentSafe)
		require.Empty(t, typed.Checkpoint.Payload, "a rejected payload is not kept")
	}

	fine := stepOf(t, out, "fine")
	require.Equal(t, workflows.CheckpointReady, fine.CheckpointStatus)
	require.JSONEq(t, `{"answer":42}`, string(fine.Checkpoint.Payload))

	// The child saw the refusal: its report_checkpoint result is not ok.
	var refused []envelope
	for _, ev := range childLog(t, s.e.ws, typed) {
		if ev.Type != "tool_result" {
			continue
		}
		var d struct {
			Name   string   `json:"name"`
			Result envelope `json:"result"`
		}
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		if d.Name == "report_checkpoint" {
			refused = append(refused, d.Result)
		}
	}
	require.Len(t, refused, 1)
	require.False(t, refused[0].OK)
	require.NotNil(t, refused[0].Error)
	require.Equal(t, tools.ErrInvalidArgs, refused[0].Error.Kind)
	require.Contains(t, refused[0].Error.Message, "payload does not match the step's output schema")
	require.Contains(t, refused[0].Error.Message, "/answer")
}

func TestWorkflowInvalidGraphsAreToolErrorsAndStartNothing(t *testing.T) {
	t.Parallel()
	s := startWorkflowSession(t, "")
	before := s.prompt("wfe2e invalid")
	events := s.log()
	results := workflowResults(t, events)
	require.Len(t, results, 3)
	for i, r := range results {
		require.False(t, r.OK, "call %d", i)
		require.Empty(t, r.Output, "call %d: an invalid spec has no outcome", i)
		require.NotNil(t, r.Error, "call %d", i)
		require.Equal(t, tools.ErrInvalidArgs, r.Error.Kind, "call %d", i)
	}

	unknown := problemsOf(t, results[0].Error.Details)
	require.Len(t, unknown, 1)
	require.Equal(t, "unknown_dependency", unknown[0].Code)
	require.Equal(t, "a", unknown[0].Step)
	require.Equal(t, "ghost", unknown[0].Value)
	require.Contains(t, results[0].Error.Message, `depends_on "ghost" is not a step id`)

	cycle := problemsOf(t, results[1].Error.Details)
	require.Len(t, cycle, 1)
	require.Equal(t, "cycle", cycle[0].Code)
	require.Equal(t, []string{"a", "c", "b", "a"}, cycle[0].Cycle)
	require.Contains(t, results[1].Error.Message, "cycle: a -> c -> b -> a")

	dup := problemsOf(t, results[2].Error.Details)
	require.Len(t, dup, 1)
	require.Equal(t, "duplicate_id", dup[0].Code)
	require.NotNil(t, dup[0].Index)
	require.Equal(t, 1, *dup[0].Index)
	require.Equal(t, "a", dup[0].Value)

	// Nothing started: no workflow or subagent evidence, no child state,
	// no child tool call or plan shown.
	require.Empty(t, workflowEvents(t, events))
	require.Empty(t, subagentEvents(t, events))
	require.NoDirExists(t, filepath.Join(s.e.ws, ".pixir", "subagents"))
	for _, u := range updates(t, before) {
		require.NotEqual(t, "plan", u["sessionUpdate"])
		if id, _ := u["toolCallId"].(string); id != "" {
			require.False(t, strings.HasPrefix(id, "subagent-"), "a child was shown: %v", u)
		}
	}
}

func TestWorkflowOutcomeRebuiltFromTheLogEqualsTheResult(t *testing.T) {
	t.Parallel()
	s := startWorkflowSession(t, "")
	s.prompt("wfe2e mixed")
	events := s.log()
	env := onlyResult(t, events)
	out := outcomeOf(t, env)
	require.Equal(t, workflows.StatusPartial, out.Status)
	// The run has one of everything.
	require.Equal(t, workflows.CheckpointReady, stepOf(t, out, "typed").CheckpointStatus)
	marked := stepOf(t, out, "marked")
	require.Equal(t, workflows.CheckpointPartial, marked.CheckpointStatus)
	require.Equal(t, workflows.SourceMarker, marked.Checkpoint.Source)
	require.Equal(t, tools.SubagentTimedOut, stepOf(t, out, "slow").SubagentStatus)
	require.Equal(t, workflows.CheckpointHeld, stepOf(t, out, "after").CheckpointStatus)
	require.Equal(t, workflows.CheckpointNeedsOrchestrator, stepOf(t, out, "seam").CheckpointStatus)
	require.Equal(t, workflows.CheckpointFailed, stepOf(t, out, "bad").CheckpointStatus)

	rebuilt := workflows.Rebuild(workflowEvents(t, events))
	require.Len(t, rebuilt, 1)
	got, err := json.Marshal(rebuilt[0])
	require.NoError(t, err)
	require.JSONEq(t, string(env.Output), string(got), "the Log alone gives back the outcome the model read")
}

func TestWorkflowFailFastStopsTheRest(t *testing.T) {
	t.Parallel()
	s := startWorkflowSession(t, "")
	s.prompt("wfe2e failfast")
	events := s.log()
	out := outcomeOf(t, onlyResult(t, events))
	require.Equal(t, workflows.StoppedFailFast, out.StoppedBy)
	require.Equal(t, workflows.StatusFailed, out.Status, "no step is checkpoint_ready")
	require.Less(t, out.ElapsedMS, int64(10000), "slow was stopped, not waited for")

	boom := stepOf(t, out, "boom")
	require.Equal(t, workflows.CheckpointFailed, boom.CheckpointStatus)
	require.Equal(t, tools.SubagentCompleted, boom.SubagentStatus)
	require.Equal(t, "Nothing usable came out.", boom.Summary)

	slow := stepOf(t, out, "slow")
	require.Equal(t, tools.SubagentCancelled, slow.SubagentStatus)
	require.Equal(t, workflows.CheckpointFailed, slow.CheckpointStatus)
	require.Equal(t, workflows.StoppedFailFast, slow.Reason)
	require.NotNil(t, slow.Error)
	require.Equal(t, tools.ErrCancelled, slow.Error.Kind)

	dep := stepOf(t, out, "dep")
	require.Equal(t, workflows.CheckpointHeld, dep.CheckpointStatus)
	require.Equal(t, workflows.HeldDependency, dep.HeldReason)
	require.Equal(t, []string{"boom"}, dep.BlockedBy)

	later := stepOf(t, out, "later")
	require.Equal(t, workflows.CheckpointHeld, later.CheckpointStatus)
	require.Equal(t, workflows.StoppedFailFast, later.HeldReason)
	require.Empty(t, later.BlockedBy)
	require.Equal(t, tools.SubagentNotStarted, later.SubagentStatus)

	children := childrenByStep(t, events)
	require.ElementsMatch(t, []string{"slow", "boom"}, mapKeys(children))
	held := map[string]string{}
	for _, ev := range workflowEvents(t, events) {
		if ev.Kind == workflows.EventStepHeld {
			held[ev.StepID] = ev.HeldReason
		}
	}
	require.Equal(t, map[string]string{"dep": workflows.HeldDependency, "later": workflows.StoppedFailFast}, held)
	var slowEnd tools.SubagentEvent
	for _, d := range subagentEvents(t, events) {
		if d.Name == "slow" {
			slowEnd = d.Event
		}
	}
	require.Equal(t, tools.SubagentEventCancelled, slowEnd, "the running step's child was cancelled")
}

func mapKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestWorkflowPermissions(t *testing.T) {
	t.Parallel()
	t.Run("read_only denies the run and allows the dry run", func(t *testing.T) {
		t.Parallel()
		s := startWorkflowSession(t, "read_only")
		s.prompt("wfe2e guarded")
		denied := onlyResult(t, s.log())
		require.False(t, denied.OK)
		require.Empty(t, denied.Output)
		require.NotNil(t, denied.Error)
		require.Equal(t, tools.ErrPermissionDenied, denied.Error.Kind)
		require.Contains(t, denied.Error.Message, "read_only")

		s.prompt("wfe2e plan only")
		events := s.log()
		results := workflowResults(t, events)
		require.Len(t, results, 2)
		plan := results[1]
		require.True(t, plan.OK, "%+v", plan.Error)
		var dry workflows.DryRunOutcome
		require.NoError(t, json.Unmarshal(plan.Output, &dry))
		require.Equal(t, "dry_run", dry.Mode)
		require.Equal(t, [][]string{{"one"}, {"two"}}, dry.Waves)
		require.Contains(t, dry.Output, "nothing was started")

		require.Empty(t, workflowEvents(t, events), "neither call started a workflow")
		require.Empty(t, subagentEvents(t, events))
		var sources []string
		for _, ev := range events {
			if ev.Type == "permission_decision" {
				var d runtime.PermissionDecisionData
				require.NoError(t, json.Unmarshal(ev.Data, &d))
				sources = append(sources, d.Decision+"/"+d.Source)
			}
		}
		require.Equal(t, []string{"denied/mode", "allowed/dry_run"}, sources)
	})

	for _, tt := range []struct {
		name, answer string
		ran          bool
	}{
		{"ask asks before starting, and allowed it runs", "allow_once", true},
		{"ask asks before starting, and rejected nothing starts", "reject_once", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := startWorkflowSession(t, "ask")
			id := s.nextID()
			s.a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": promptParams(s.sid, "wfe2e guarded")})
			var callID string
			asked := 0
			m, seen := s.a.serveUntilReply(strconv.Itoa(id), map[string]func(json.RawMessage) any{
				"session/request_permission": func(p json.RawMessage) any {
					asked++
					var req struct {
						SessionID string `json:"sessionId"`
						ToolCall  struct {
							ToolCallID string `json:"toolCallId"`
						} `json:"toolCall"`
					}
					require.NoError(t, json.Unmarshal(p, &req))
					require.Equal(t, s.sid, req.SessionID)
					callID = req.ToolCall.ToolCallID
					// Asked before anything started.
					events := s.log()
					require.Empty(t, workflowEvents(t, events), "the workflow started before the client answered")
					require.Empty(t, subagentEvents(t, events))
					require.NoDirExists(t, filepath.Join(s.e.ws, ".pixir", "subagents"))
					res, err := client.Select(p, tt.answer)
					require.NoError(t, err)
					return res
				},
			})
			require.Equal(t, "end_turn", stopReason(t, m))
			require.Equal(t, 1, asked, "one question, for run_workflow only: read_only steps' children ask nothing")
			announced := false
			for _, u := range updates(t, seen) {
				if u["sessionUpdate"] == "tool_call" && u["toolCallId"] == callID {
					announced = true
					require.Equal(t, "Workflow guarded (2 steps)", u["title"])
				}
			}
			require.True(t, announced, "the question is about the run_workflow call")

			events := s.log()
			env := onlyResult(t, events)
			if tt.ran {
				require.True(t, env.OK)
				require.Equal(t, workflows.StatusCompleted, outcomeOf(t, env).Status)
				require.NotEmpty(t, workflowEvents(t, events))
				return
			}
			require.False(t, env.OK)
			require.NotNil(t, env.Error)
			require.Equal(t, tools.ErrPermissionDenied, env.Error.Kind)
			require.Empty(t, workflowEvents(t, events))
			require.Empty(t, subagentEvents(t, events))
		})
	}
}

func TestWorkflowACPPresentationOfAPartialRun(t *testing.T) {
	t.Parallel()
	s := startWorkflowSession(t, "")
	ups := updates(t, s.prompt("wfe2e held"))
	env := onlyResult(t, s.log())
	out := outcomeOf(t, env)
	require.Equal(t, workflows.StatusPartial, out.Status)

	// The run_workflow call.
	var callID string
	callAt, endAt := -1, -1
	var end map[string]any
	for i, u := range ups {
		if u["sessionUpdate"] == "tool_call" && strings.HasPrefix(u["title"].(string), "Workflow held") {
			callID, callAt = u["toolCallId"].(string), i
			require.Equal(t, "think", u["kind"])
			require.Equal(t, "pending", u["status"])
		}
		if callID != "" && u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == callID {
			require.NotEqual(t, "completed", u["status"], "a partial workflow is never shown completed")
			if u["status"] == "failed" {
				end, endAt = u, i
			}
		}
	}
	require.NotEmpty(t, callID, "the run_workflow tool_call was not shown")
	require.NotNil(t, end, "the run_workflow call did not end failed")
	text := toolCallText(t, end)
	require.Contains(t, text, "PARTIAL — 2 of 5 steps checkpoint_ready, 1 failed, 2 held")
	require.Contains(t, text, "| step | agent | wave | subagent | checkpoint | time | tokens | summary |")
	require.Contains(t, text, "| after | default | – | not_started | held |")
	raw := mustJSON(t, end["rawOutput"])
	require.Equal(t, "false", string(mustField(t, raw, "ok")))
	require.Nil(t, mustField(t, raw, "error"), "a partial workflow is not a tool error")
	require.JSONEq(t, string(env.Output), string(mustField(t, raw, "output")), "rawOutput is the envelope the model read")

	// The plan: its entries are the steps, kept current.
	var plans [][]map[string]any
	for _, u := range ups {
		if u["sessionUpdate"] != "plan" {
			continue
		}
		var entries []map[string]any
		for _, e := range u["entries"].([]any) {
			entries = append(entries, e.(map[string]any))
		}
		plans = append(plans, entries)
	}
	require.NotEmpty(t, plans, "no plan update")
	ids := []string{"slow", "after", "last", "indep", "indep2"}
	running := false
	for _, p := range plans {
		require.Len(t, p, len(ids))
		for i, e := range p {
			require.True(t, strings.HasPrefix(e["content"].(string), ids[i]+": "), "entry %d: %v", i, e)
			running = running || e["status"] == "in_progress"
		}
	}
	require.True(t, running, "a running step is shown in_progress")
	final := map[string]map[string]any{}
	for i, e := range plans[len(plans)-1] {
		final[ids[i]] = e
	}
	require.Equal(t, "completed", final["slow"]["status"])
	require.Contains(t, final["slow"]["content"], "failed (timed_out)")
	require.Equal(t, "pending", final["after"]["status"])
	require.Contains(t, final["after"]["content"], "held (dependency_not_checkpoint_ready)")
	require.Equal(t, "completed", final["indep"]["status"])
	require.Contains(t, final["indep"]["content"], "checkpoint_ready")

	// Each step's child is its own tool call under run_workflow; held steps
	// have none.
	childCalls := map[string]map[string]any{} // step id -> its tool_call
	lastStatus := map[string]any{}            // tool call id -> last status
	for i, u := range ups {
		id, _ := u["toolCallId"].(string)
		if !strings.HasPrefix(id, "subagent-") {
			continue
		}
		require.Greater(t, i, callAt, "a child shown before its workflow")
		require.Less(t, i, endAt, "a child shown after its workflow ended")
		if st, ok := u["status"]; ok {
			lastStatus[id] = st
		}
		if u["sessionUpdate"] != "tool_call" {
			continue
		}
		meta := u["_meta"].(map[string]any)["pixir"].(map[string]any)
		require.Equal(t, callID, meta["parentToolCallId"], "%v", u)
		step := meta["stepId"].(string)
		require.Equal(t, "think", u["kind"])
		require.True(t, strings.HasPrefix(u["title"].(string), step+" (default): "), "%v", u["title"])
		childCalls[step] = u
	}
	require.ElementsMatch(t, []string{"slow", "indep", "indep2"}, mapKeys(childCalls))
	for step, want := range map[string]string{"slow": "failed", "indep": "completed", "indep2": "completed"} {
		st := stepOf(t, out, step)
		u := childCalls[step]
		require.Equal(t, "subagent-"+st.AgentID, u["toolCallId"])
		require.Equal(t, st.AgentID, u["_meta"].(map[string]any)["pixir"].(map[string]any)["subagentId"])
		require.Equal(t, want, lastStatus[u["toolCallId"].(string)], step)
	}

	// A client that loads the session later sees the same: the call ended
	// failed with the table, and the children under it.
	s.a.exit()
	b := s.e.start()
	b.initialize()
	_, replay := b.call(1, "session/load", map[string]any{"sessionId": s.sid, "cwd": s.e.ws, "mcpServers": []any{}})
	rups := updates(t, replay)
	rend := lastUpdateOf(t, rups, callID)
	require.Equal(t, "failed", rend["status"])
	require.Equal(t, text, toolCallText(t, rend))
	for step, want := range map[string]string{"slow": "failed", "indep": "completed", "indep2": "completed"} {
		id := "subagent-" + stepOf(t, out, step).AgentID
		require.Equal(t, want, lastUpdateOf(t, rups, id)["status"], step)
	}
}

func TestWorkflowCancelledTurnKeepsThePartialOutcome(t *testing.T) {
	t.Parallel()
	s := startWorkflowSession(t, "")
	id := s.nextID()
	s.a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": promptParams(s.sid, "wfe2e cancel")})
	// Cancel once quick is decided and long is running.
	var seen []message
	for waiting := true; waiting; {
		m := s.a.next()
		seen = append(seen, m)
		for _, u := range updates(t, []message{m}) {
			if u["sessionUpdate"] != "plan" {
				continue
			}
			entries := u["entries"].([]any)
			quick, long := entries[0].(map[string]any), entries[1].(map[string]any)
			if strings.Contains(quick["content"].(string), "checkpoint_ready") && long["status"] == "in_progress" {
				waiting = false
			}
		}
	}
	s.a.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": s.sid}})
	m, rest := s.a.reply(strconv.Itoa(id))
	require.Equal(t, "cancelled", stopReason(t, m))
	ups := updates(t, append(seen, rest...))
	require.NotContains(t, agentText(ups), "must not happen")
	end := lastUpdateOf(t, ups, workflowCallID(t, ups, "Workflow cancelled"))
	require.Equal(t, "failed", end["status"])
	require.Contains(t, toolCallText(t, end), "PARTIAL")

	events := s.log()
	env := onlyResult(t, events)
	out := outcomeOf(t, env)
	require.Equal(t, workflows.StatusPartial, out.Status)
	require.Equal(t, workflows.StoppedCancelled, out.StoppedBy)
	require.Equal(t, workflows.CheckpointReady, stepOf(t, out, "quick").CheckpointStatus)
	long := stepOf(t, out, "long")
	require.Equal(t, tools.SubagentCancelled, long.SubagentStatus)
	require.Equal(t, workflows.CheckpointFailed, long.CheckpointStatus)
	require.Equal(t, workflows.StoppedCancelled, long.Reason)
	after := stepOf(t, out, "after")
	require.Equal(t, workflows.CheckpointHeld, after.CheckpointStatus)
	require.Equal(t, []string{"long"}, after.BlockedBy)
	require.NotContains(t, childrenByStep(t, events), "after")

	rebuilt := workflows.Rebuild(workflowEvents(t, events))
	require.Len(t, rebuilt, 1)
	got, err := json.Marshal(rebuilt[0])
	require.NoError(t, err)
	require.JSONEq(t, string(env.Output), string(got))
}

// A client shown Subagents as tool calls sees a step's call end as its
// checkpoint decided it: the child of a partial step completed, but the
// step did not, and its call ended "completed" (green) while the plan and
// the table said otherwise. Each call still ends once.
func TestAWorkflowStepsCallEndsAsItsCheckpointWasDecided(t *testing.T) {
	s := startWorkflowSession(t, "")
	checkEnds := func(shown []message) {
		t.Helper()
		titles := map[string]string{} // call id → the step it shows
		ends := map[string][]map[string]any{}
		for _, u := range updates(t, shown) {
			id, _ := u["toolCallId"].(string)
			if !strings.HasPrefix(id, "subagent-") {
				continue
			}
			if u["sessionUpdate"] == "tool_call" {
				title, _ := u["title"].(string)
				titles[id], _, _ = strings.Cut(title, " (")
			}
			if st := u["status"]; st == "completed" || st == "failed" {
				ends[titles[id]] = append(ends[titles[id]], u)
			}
		}
		require.Len(t, ends, 3, "%v", titles)
		for step, status := range map[string]string{"part": "failed", "seam": "failed", "good": "completed"} {
			require.Len(t, ends[step], 1, "%s ends once", step)
			require.Equal(t, status, ends[step][0]["status"], step)
		}
		text := func(u map[string]any) string {
			b, err := json.Marshal(u["content"])
			require.NoError(t, err)
			return string(b)
		}
		require.Contains(t, text(ends["part"][0]), "Step part ended partial: Half of it is done.")
		require.Contains(t, text(ends["seam"][0]), "Step seam ended needs_orchestrator")
		require.NotContains(t, text(ends["good"][0]), "Step good ended")
	}
	checkEnds(s.prompt("wfe2e partial"))

	// Replayed by session/load in a fresh process: the same ends.
	s.a.exit()
	b := s.e.start()
	b.initialize()
	m, replay := b.call(1, "session/load", loadParams(s.sid, s.e.ws))
	require.Nil(t, m.Error, m.raw)
	checkEnds(replay)
}

// The scripted provider numbers its tool calls afresh each turn (call_1_1
// again and again); each workflow run of a session still gets its own
// tool call id and plan id, so an editor never updates an earlier run's
// entries with a later run's (the session makes the ids unique, for every
// provider).
func TestEachWorkflowRunOfASessionHasItsOwnCallAndPlanIDs(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("testdata", "workflows.toml"))
	require.NoError(t, err)
	e := newEnv(t, string(script))
	a := e.start()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"plan": true}}, nil)
	sid := a.newSession()
	calls, plans := map[string]bool{}, map[string]bool{}
	for id := 2; id <= 3; id++ {
		m, before := a.call(id, "session/prompt", promptParams(sid, "wfe2e guarded"))
		require.Equal(t, "end_turn", stopReason(t, m))
		runCalls, runPlans := map[string]bool{}, map[string]bool{}
		for _, u := range updates(t, before) {
			switch u["sessionUpdate"] {
			case "tool_call":
				if id, _ := u["toolCallId"].(string); !strings.HasPrefix(id, "subagent-") {
					runCalls[id] = true
				}
			case "plan_update":
				runPlans[u["plan"].(map[string]any)["planId"].(string)] = true
			}
		}
		require.Len(t, runCalls, 1, "one run_workflow call")
		require.Len(t, runPlans, 1, "one plan")
		for c := range runCalls {
			require.False(t, calls[c], "tool call id %s was an earlier run's", c)
			calls[c] = true
		}
		for p := range runPlans {
			require.False(t, plans[p], "plan id %s was an earlier run's", p)
			plans[p] = true
		}
	}
}
