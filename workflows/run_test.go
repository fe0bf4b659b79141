package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

// runSim runs spec on the simulated clock.
func runSim(t *testing.T, spec string, plan func(step string) childPlan) (Outcome, *simRuntime) {
	t.Helper()
	w := mustParse(t, spec)
	sim := newSim(plan)
	out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-test", ToolCallID: "call-1", Now: fixedClock(), waiting: sim.waiting})
	return out, sim
}

// simRun prepares w with the simulated runtime's ports and runs it in a
// synctest bubble. Run redraws the plan on a timer; on the real clock that
// timer can fire between two ends the simulated runtime delivers (more
// often on a busy machine). In the bubble it fires only when Run has
// nothing else to do, so a run on the simulated runtime is the same every
// time.
func simRun(t *testing.T, ctx context.Context, sim *simRuntime, w *Workflow, opt RunOptions) Outcome {
	t.Helper()
	p, err := Prepare(w, sim.ports())
	require.NoError(t, err)
	var out Outcome
	synctest.Test(t, func(*testing.T) { out = p.Run(ctx, opt) })
	return out
}

// durations gives each step a duration by id, default 10.
func durations(d map[string]int64) func(string) childPlan {
	return func(step string) childPlan {
		if v, ok := d[step]; ok {
			return childPlan{dur: v}
		}
		return childPlan{dur: 10}
	}
}

func TestRunFollowsTheADR0012Rules(t *testing.T) {
	tests := []struct {
		name   string
		spec   string
		dur    map[string]int64
		starts map[string]int64
	}{{
		name:   "read-only steps fan out together",
		spec:   `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x"},{"id":"c","task":"x"}]}`,
		starts: map[string]int64{"a": 0, "b": 0, "c": 0},
	}, {
		name:   "a dependent starts the moment its last dependency is ready",
		spec:   `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x"},{"id":"c","task":"x","depends_on":["a","b"]}]}`,
		dur:    map[string]int64{"a": 5, "b": 30},
		starts: map[string]int64{"a": 0, "b": 0, "c": 30},
	}, {
		name:   "writers with overlapping write sets serialize, even isolated",
		spec:   `{"steps":[{"id":"w1","task":"x","write_set":["src/**"]},{"id":"w2","task":"x","write_set":["src/a.go"]}]}`,
		starts: map[string]int64{"w1": 0, "w2": 10},
	}, {
		name:   "writers with disjoint write sets run together",
		spec:   `{"steps":[{"id":"w1","task":"x","write_set":["src/**"]},{"id":"w2","task":"x","write_set":["docs/**"]}]}`,
		starts: map[string]int64{"w1": 0, "w2": 0},
	}, {
		name:   "a shared writer waits for a reader of its files",
		spec:   `{"steps":[{"id":"r","task":"x","read_set":["src/**"]},{"id":"w","task":"x","write_set":["src/a.go"],"workspace_mode":"shared"}]}`,
		starts: map[string]int64{"r": 0, "w": 10},
	}, {
		name:   "a shared writer runs beside a reader of other files",
		spec:   `{"steps":[{"id":"r","task":"x","read_set":["docs/**"]},{"id":"w","task":"x","write_set":["src/a.go"],"workspace_mode":"shared"}]}`,
		starts: map[string]int64{"r": 0, "w": 0},
	}, {
		name:   "an isolated writer does not block readers",
		spec:   `{"steps":[{"id":"w","task":"x","write_set":["src/**"]},{"id":"r","task":"x","read_set":["src/**"]}]}`,
		starts: map[string]int64{"w": 0, "r": 0},
	}, {
		name:   "a writer without a write set claims the whole workspace",
		spec:   `{"steps":[{"id":"w1","task":"x","permission_mode":"writer"},{"id":"w2","task":"x","write_set":["docs/x.md"]}]}`,
		starts: map[string]int64{"w1": 0, "w2": 10},
	}, {
		name:   "max_concurrency bounds the running steps; the next starts when a slot frees",
		spec:   `{"max_concurrency":2,"steps":[{"id":"a","task":"x"},{"id":"b","task":"x"},{"id":"c","task":"x"}]}`,
		dur:    map[string]int64{"a": 10, "b": 4},
		starts: map[string]int64{"a": 0, "b": 0, "c": 4},
	}, {
		name: "a blocked step does not block later ones (greedy), ties by declaration order",
		spec: `{"steps":[{"id":"w1","task":"x","write_set":["src/**"]},{"id":"w2","task":"x","write_set":["src/**"]},{"id":"r","task":"x"},{"id":"w3","task":"x","write_set":["src/**"]}]}`,
		dur:  map[string]int64{"w1": 10, "w2": 10, "w3": 10},
		// w2 and w3 both wait for w1; w2 is declared first, so it goes
		// first and w3 after it.
		starts: map[string]int64{"w1": 0, "r": 0, "w2": 10, "w3": 20},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, sim := runSim(t, tt.spec, durations(tt.dur))
			require.Equal(t, StatusCompleted, out.Status, out.Output)
			require.Equal(t, tt.starts, sim.startTimes())
		})
	}
}

func TestRunHoldsDependentsAndKeepsGoing(t *testing.T) {
	spec := `{"steps":[
		{"id":"a","task":"x"},
		{"id":"b","task":"x"},
		{"id":"c","task":"x","depends_on":["a"]},
		{"id":"d","task":"x","depends_on":["c","b"]},
		{"id":"e","task":"x","depends_on":["b"]}]}`
	out, sim := runSim(t, spec, func(step string) childPlan {
		if step == "a" {
			return childPlan{dur: 5, status: "timed_out"}
		}
		return childPlan{dur: 10}
	})
	require.Equal(t, StatusPartial, out.Status)
	require.Equal(t, []string{"b", "e"}, out.UsableCheckpoints)
	require.Equal(t, []string{"a"}, out.FailedSteps)
	require.Equal(t, []string{"a"}, out.TimeoutSteps)
	require.Equal(t, []string{"c", "d"}, out.HeldSteps)
	c, d := out.Steps[2], out.Steps[3]
	require.Equal(t, CheckpointHeld, c.CheckpointStatus)
	require.Equal(t, HeldDependency, c.HeldReason)
	require.Equal(t, []string{"a"}, c.BlockedBy)
	require.Equal(t, tools.SubagentNotStarted, c.SubagentStatus)
	// d waits on c (held) and b (running when a failed): both named.
	require.Equal(t, []string{"c", "b"}, d.BlockedBy)
	// Held at once, when a failed, not at the end.
	require.Equal(t, []string{
		"workflow_started:", "step_scheduled:a", "step_scheduled:b",
		"checkpoint_decided:a", "step_held:c", "step_held:d",
		"checkpoint_decided:b", "step_scheduled:e", "checkpoint_decided:e", "workflow_finished:",
	}, sim.kinds())
	require.Equal(t, []NextAction{
		{Action: "retry_failed_steps", StepIDs: []string{"a"}, Args: map[string]string{"resume_from": "wf-test"}, Reason: out.SafeNextActions[0].Reason},
		{Action: "rerun_held_steps", StepIDs: []string{"c", "d"}, Args: map[string]string{"resume_from": "wf-test"}, Reason: out.SafeNextActions[1].Reason},
		{Action: "abort", Reason: out.SafeNextActions[2].Reason},
	}, out.SafeNextActions)
	require.Contains(t, out.Output, "Workflow wf-test: PARTIAL — 2 of 5 steps checkpoint_ready, 1 failed, 2 held")
	require.NotContains(t, strings.ToLower(out.Output), "completed —")
}

func TestRunFailFastStopsEverything(t *testing.T) {
	spec := `{"failure_policy":"fail_fast","max_concurrency":2,"steps":[
		{"id":"a","task":"x"},{"id":"b","task":"x"},{"id":"c","task":"x"},{"id":"d","task":"x","depends_on":["b"]}]}`
	out, sim := runSim(t, spec, func(step string) childPlan {
		switch step {
		case "a":
			return childPlan{dur: 5, status: "failed"}
		case "b":
			return childPlan{dur: 50}
		}
		return childPlan{dur: 10}
	})
	require.Equal(t, StatusFailed, out.Status)
	require.Equal(t, StoppedFailFast, out.StoppedBy)
	require.Equal(t, []string{"b"}, sim.stopped)
	b := out.Steps[1]
	require.Equal(t, tools.SubagentCancelled, b.SubagentStatus)
	require.Equal(t, CheckpointFailed, b.CheckpointStatus)
	require.Equal(t, StoppedFailFast, b.Reason)
	require.Equal(t, []string{"c", "d"}, out.HeldSteps)
	require.Equal(t, StoppedFailFast, out.Steps[2].HeldReason)
	require.NotContains(t, sim.startTimes(), "c")
}

func TestRunWorkflowTimeoutStopsRunningAndHoldsTheRest(t *testing.T) {
	w := mustParse(t, `{"timeout_ms":30,"max_concurrency":1,"steps":[{"id":"a","task":"x"},{"id":"b","task":"x"},{"id":"c","task":"x"}]}`)
	sim := newSim(func(step string) childPlan {
		if step == "b" {
			return childPlan{hang: true}
		}
		return childPlan{dur: 1}
	})
	// In a synctest bubble the workflow's 30 ms pass only once Run waits
	// with nothing but the hung step left, however busy the machine is.
	out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-t", waiting: sim.waiting})
	require.Equal(t, StatusPartial, out.Status)
	require.Equal(t, StoppedTimeout, out.StoppedBy)
	require.Equal(t, []string{"a"}, out.UsableCheckpoints)
	require.Equal(t, []string{"b"}, out.TimeoutSteps)
	require.Equal(t, StoppedTimeout, out.Steps[1].Reason)
	require.Equal(t, tools.ErrTimeout, out.Steps[1].Error.Kind)
	require.Contains(t, out.Steps[1].Error.Message, "the workflow's timeout_ms (30) passed")
	require.Equal(t, StoppedTimeout, out.Steps[2].HeldReason)
}

func TestRunCancelledReturnsThePartialOutcome(t *testing.T) {
	w := mustParse(t, `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x"},{"id":"c","task":"x","depends_on":["b"]}]}`)
	sim := newSim(func(step string) childPlan {
		if step == "b" {
			return childPlan{hang: true}
		}
		return childPlan{dur: 1}
	})
	// The bubble's clock reaches the deadline only once Run waits with
	// nothing but the hung step left.
	p, err := Prepare(w, sim.ports())
	require.NoError(t, err)
	var out Outcome
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		out = p.Run(ctx, RunOptions{WorkflowID: "wf-c", waiting: sim.waiting})
	})
	require.Equal(t, StatusPartial, out.Status)
	require.Equal(t, StoppedCancelled, out.StoppedBy)
	require.Equal(t, tools.SubagentCancelled, out.Steps[1].SubagentStatus)
	require.Equal(t, []string{"c"}, out.HeldSteps)
}

func TestRunIsDeterministic(t *testing.T) {
	w := randomWorkflow(60, 7)
	for i := range w.Steps {
		if i%7 == 3 {
			w.Steps[i].PermissionMode, w.Steps[i].WriteSet = Writer, []string{"src/" + string(rune('a'+i%3)) + "/**"}
			w.Steps[i].WorkspaceMode = Shared
		}
	}
	raw, err := json.Marshal(w)
	require.NoError(t, err)
	plan := func(step string) childPlan {
		return childPlan{dur: int64(len(step)*7%13 + 1)}
	}
	var first []string
	var firstOut string
	for range 100 {
		w, err := Parse(raw)
		require.NoError(t, err)
		sim := newSim(plan)
		out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-d", Now: fixedClock(), waiting: sim.waiting})
		got, _ := json.Marshal(out)
		if first == nil {
			first, firstOut = sim.order, string(got)
			continue
		}
		require.Equal(t, first, sim.order)
		require.Equal(t, firstOut, string(got))
	}
}

// TestNoPlanChangesNothingButThePlan: a run nobody shows a plan for
// (pixir run) builds none, and its events, order and outcome are those of
// a run that shows one.
func TestNoPlanChangesNothingButThePlan(t *testing.T) {
	raw, err := json.Marshal(randomWorkflow(60, 7))
	require.NoError(t, err)
	plan := func(step string) childPlan { return childPlan{dur: int64(len(step)*7%13 + 1)} }
	runs := map[bool]*simRuntime{}
	outs := map[bool]string{}
	for _, noPlan := range []bool{false, true} {
		w, err := Parse(raw)
		require.NoError(t, err)
		sim := newSim(plan)
		out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-p", Now: fixedClock(), waiting: sim.waiting, NoPlan: noPlan})
		got, err := json.Marshal(out)
		require.NoError(t, err)
		runs[noPlan], outs[noPlan] = sim, string(got)
	}
	require.NotEmpty(t, runs[false].plans)
	require.Empty(t, runs[true].plans)
	require.Equal(t, runs[false].order, runs[true].order)
	require.Equal(t, runs[false].events, runs[true].events)
	require.Equal(t, outs[false], outs[true])
}

func TestRunAgreesWithTheDryRunWhenDurationsAreEqual(t *testing.T) {
	for seed := range uint64(20) {
		w := randomWorkflow(40, seed)
		for i := range w.Steps {
			if i%5 == 2 {
				w.Steps[i].PermissionMode, w.Steps[i].WriteSet = Writer, []string{"src/**"}
			}
		}
		w.MaxConcurrency = 3
		plan, err := Waves(w)
		require.NoError(t, err)
		sim := newSim(durations(nil))
		out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf", Now: fixedClock(), waiting: sim.waiting})
		require.Equal(t, StatusCompleted, out.Status)
		got := sim.byStart()
		for _, wave := range got {
			slices.SortFunc(wave, func(a, b string) int { return index(w, a) - index(w, b) })
		}
		require.Equal(t, plan.order, got, "seed %d", seed)
		for i := range out.Steps {
			require.Equal(t, plan.Steps[i].Wave, out.Steps[i].Wave, "seed %d: the wave of %s", seed, out.Steps[i].StepID)
		}
	}
}

func TestDependentsReceiveTheirDependenciesBundles(t *testing.T) {
	spec := `{"name":"review","steps":[
		{"id":"plan","task":"Plan the change."},
		{"id":"build","task":"Build it.","depends_on":["plan"],"write_set":["src/**"]}]}`
	_, sim := runSim(t, spec, func(step string) childPlan {
		if step == "plan" {
			return childPlan{dur: 1, report: `{"status":"checkpoint_ready","summary":"Use a ring buffer.","produced":["docs/plan.md"],"verification":["read src/queue.go"],"known_limitations":["no benchmarks yet"]}`}
		}
		return childPlan{dur: 1}
	})
	p := sim.prompts["build"]
	require.True(t, strings.HasPrefix(p, "Build it.\n\n---\nYou are step \"build\" of a workflow (review). You may write only: src/**."), p)
	for _, want := range []string{"### plan (checkpoint_ready, subagent sa-plan)", "Summary: Use a ring buffer.", "- docs/plan.md", "- read src/queue.go", "- no benchmarks yet", "call report_checkpoint"} {
		require.Contains(t, p, want)
	}
	require.NotContains(t, sim.prompts["plan"], "Checkpoints of the steps you depend on")
}

func TestRunEventsRebuildTheOutcome(t *testing.T) {
	spec := `{"steps":[
		{"id":"a","task":"x"},
		{"id":"b","task":"x","output_schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}},
		{"id":"c","task":"x","depends_on":["b"]},
		{"id":"d","task":"x"},
		{"id":"e","task":"x","write_set":["src/**"]},
		{"id":"f","task":"x","write_set":["src/x/**"]}]}`
	out, sim := runSim(t, spec, func(step string) childPlan {
		switch step {
		case "b":
			return childPlan{dur: 3, report: `{"status":"checkpoint_ready","summary":"n is two","payload":{"n":"two"}}`}
		case "d":
			return childPlan{dur: 3, summary: "I could not decide.\ncheckpoint_status: needs_orchestrator"}
		}
		return childPlan{dur: 2}
	})
	require.Equal(t, CheckpointFailed, out.Steps[1].CheckpointStatus)
	require.Equal(t, CheckpointNeedsOrchestrator, out.Steps[3].CheckpointStatus)
	require.Len(t, out.MergeConflictRisk, 1)

	// Through JSON, as the Log has them.
	raw, err := json.Marshal(sim.events)
	require.NoError(t, err)
	var events []WorkflowEvent
	require.NoError(t, json.Unmarshal(raw, &events))
	rebuilt := Rebuild(events)
	require.Len(t, rebuilt, 1)
	want, _ := json.Marshal(out)
	got, _ := json.Marshal(rebuilt[0])
	require.JSONEq(t, string(want), string(got))
}

func TestRebuildOfAnInterruptedRun(t *testing.T) {
	w := mustParse(t, `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x"},{"id":"c","task":"x","depends_on":["b"]}]}`)
	events := []WorkflowEvent{
		{Kind: EventWorkflowStarted, WorkflowID: "wf-i", Workflow: w},
		{Kind: EventStepScheduled, WorkflowID: "wf-i", StepID: "a", Wave: 1, SubagentID: "sa-a"},
		{Kind: EventStepScheduled, WorkflowID: "wf-i", StepID: "b", Wave: 1, SubagentID: "sa-b"},
		{Kind: EventCheckpointDecided, WorkflowID: "wf-i", StepID: "a", Outcome: &StepOutcome{StepID: "a", Agent: "default", Wave: 1, SubagentStatus: "completed", CheckpointStatus: CheckpointReady}},
	}
	out := Rebuild(events)
	require.Len(t, out, 1)
	o := out[0]
	require.Equal(t, StatusPartial, o.Status)
	require.Equal(t, StoppedInterrupted, o.StoppedBy)
	require.Equal(t, tools.SubagentDetached, o.Steps[1].SubagentStatus)
	require.Equal(t, CheckpointFailed, o.Steps[1].CheckpointStatus)
	require.Equal(t, CheckpointHeld, o.Steps[2].CheckpointStatus)
}

func TestResumeFromRerunsOnlyWhatIsNotReady(t *testing.T) {
	spec := `{"steps":[
		{"id":"a","task":"x"},
		{"id":"b","task":"x"},
		{"id":"c","task":"x","depends_on":["a"]},
		{"id":"d","task":"x","depends_on":["b"]},
		{"id":"e","task":"x","depends_on":["d"]}]}`
	flaky := true
	sim := newSim(func(step string) childPlan {
		if step == "b" && flaky {
			return childPlan{dur: 5, status: "timed_out"}
		}
		return childPlan{dur: 2, report: `{"status":"checkpoint_ready","summary":"` + step + ` is done"}`}
	})
	first := simRun(t, context.Background(), sim, mustParse(t, spec), RunOptions{WorkflowID: "wf-1", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusPartial, first.Status)
	require.Equal(t, []string{"a", "c"}, first.UsableCheckpoints)
	require.Equal(t, "wf-1", first.SafeNextActions[0].Args["resume_from"])

	// The same spec, resumed: a and c are reused, b, d and e run.
	flaky = false
	w := mustParse(t, spec)
	w.ResumeFrom = "wf-1"
	events, err := sim.WorkflowEvents()
	require.NoError(t, err)
	reuse, err := Reusable(events, w)
	require.NoError(t, err)
	require.Len(t, reuse.Runs, 3, "a, b and c ran; d and e were held")
	sim.order = nil
	second := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-2", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusCompleted, second.Status, second.Output)
	require.Equal(t, []string{"b", "d", "e"}, sim.order, "only what was not ready runs again")
	require.Equal(t, "wf-1", second.Steps[0].ReusedFrom)
	require.Equal(t, 0, second.Steps[0].Wave)
	require.Contains(t, second.Output, "| a | default | reused |")

	// The rebuilt outcome of the resumed run equals the returned one.
	events, _ = sim.WorkflowEvents()
	raw, _ := json.Marshal(events)
	require.NoError(t, json.Unmarshal(raw, &events))
	rebuilt := Rebuild(events)
	require.Len(t, rebuilt, 2)
	want, _ := json.Marshal(second)
	got, _ := json.Marshal(rebuilt[1])
	require.JSONEq(t, string(want), string(got))
}

func TestReusableIsConservative(t *testing.T) {
	sim := newSim(durations(nil))
	spec := `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x","depends_on":["a"]},{"id":"c","task":"x"}]}`
	simRun(t, context.Background(), sim, mustParse(t, spec), RunOptions{WorkflowID: "wf-1", Now: fixedClock(), waiting: sim.waiting})
	events, _ := sim.WorkflowEvents()

	// a's task changed: a runs again, and so does b, built on a; c's new
	// timeout does not matter.
	w := mustParse(t, `{"resume_from":"wf-1","steps":[{"id":"a","task":"x, better"},{"id":"b","task":"x","depends_on":["a"]},{"id":"c","task":"x","timeout_ms":5}]}`)
	sim.order = nil
	out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-2", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, []string{"a", "b"}, sim.order)
	require.Equal(t, "wf-1", out.Steps[2].ReusedFrom)

	_, err := Reusable(events, mustParse(t, `{"resume_from":"wf-9","steps":[{"id":"a","task":"x"}]}`))
	require.ErrorContains(t, err, `resume_from: there is no workflow "wf-9" in this session's Log; earlier runs: wf-1`)
}

func index(w *Workflow, id string) int {
	return slices.IndexFunc(w.Steps, func(s Step) bool { return s.ID == id })
}

func TestCriticalPathFirst(t *testing.T) {
	// With one slot, the step with a chain behind it goes first, though
	// declared last: the chain would otherwise start last.
	out, sim := runSim(t, `{"max_concurrency":1,"steps":[
		{"id":"x","task":"t"},{"id":"y","task":"t"},
		{"id":"head","task":"t"},{"id":"tail","task":"t","depends_on":["head"]}]}`, durations(nil))
	require.Equal(t, StatusCompleted, out.Status)
	require.Equal(t, []string{"head", "x", "y", "tail"}, sim.order, "then declaration order among equals")
	plan, err := Waves(mustParse(t, `{"max_concurrency":1,"steps":[
		{"id":"x","task":"t"},{"id":"y","task":"t"},
		{"id":"head","task":"t"},{"id":"tail","task":"t","depends_on":["head"]}]}`))
	require.NoError(t, err)
	require.Equal(t, [][]string{{"head"}, {"x"}, {"y"}, {"tail"}}, plan.order)
	require.Equal(t, [][]string{{"x", "y", "head"}, {"tail"}}, plan.Waves, "a wave is a dependency level, whatever the slots")
}

func TestWritersAreHeldToTheirWriteSet(t *testing.T) {
	_, sim := runSim(t, `{"steps":[{"id":"w","task":"t","write_set":["src/**","docs/*.md"]},{"id":"r","task":"t"}]}`, durations(nil))
	w, r := sim.reqs["w"], sim.reqs["r"]
	require.Equal(t, []string{"src/**", "docs/*.md"}, w.WriteSet)
	for path, want := range map[string]bool{"src/a/b.go": true, "docs/x.md": true, "docs/sub/x.md": false, "README.md": false} {
		require.Equal(t, want, w.MayWrite(path), path)
	}
	require.Nil(t, r.MayWrite, "a read_only step is read_only anyway")
	require.True(t, r.ReadOnly)
}

func TestRunCancelledBeforeItStartsHoldsEverything(t *testing.T) {
	w := mustParse(t, `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x","depends_on":["a"]}]}`)
	sim := newSim(durations(nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := simRun(t, ctx, sim, w, RunOptions{WorkflowID: "wf-x", waiting: sim.waiting})
	require.Equal(t, StatusFailed, out.Status)
	require.Equal(t, StoppedCancelled, out.StoppedBy)
	require.Equal(t, []string{"a", "b"}, out.HeldSteps)
	require.Empty(t, sim.order, "nothing started")
}

func TestTheOutcomeTableStaysReadableForLargeWorkflows(t *testing.T) {
	var steps []string
	for i := range 200 {
		steps = append(steps, fmt.Sprintf(`{"id":"s%d","task":"x"}`, i))
	}
	out, _ := runSim(t, `{"steps":[`+strings.Join(steps, ",")+`]}`, func(step string) childPlan {
		if step == "s150" {
			return childPlan{dur: 1, status: "failed"}
		}
		return childPlan{dur: 1}
	})
	require.Len(t, out.Steps, 200)
	rows := len(regexp.MustCompile(`\n\| s\d+ \|`).FindAllString(out.Output, -1))
	require.Equal(t, 60, rows)
	require.Contains(t, out.Output, "| s150 | default |", "the failed step is shown")
	require.Contains(t, out.Output, "140 more steps (checkpoint_ready, skipped, or earlier iterations): see steps")
}

func TestStepsWorkOnTheirIsolatedAncestorsChanges(t *testing.T) {
	spec := `{"steps":[
		{"id":"w1","task":"t","write_set":["src/**"]},
		{"id":"w2","task":"t","write_set":["src/**"],"depends_on":["w1"]},
		{"id":"r","task":"t","depends_on":["w2"]},
		{"id":"sw","task":"t","write_set":["docs/**"],"workspace_mode":"shared","depends_on":["w1"]},
		{"id":"plain","task":"t"}]}`
	_, sim := runSim(t, spec, func(step string) childPlan {
		switch step {
		case "w1":
			return childPlan{dur: 1, changes: &tools.FileChanges{Added: []string{"src/a.go"}}}
		case "w2":
			return childPlan{dur: 1, changes: &tools.FileChanges{Changed: []string{"src/a.go"}}}
		}
		return childPlan{dur: 1}
	})
	// w2 starts from w1's work; r, read-only, is moved to a snapshot that
	// holds both, in the order they were decided.
	require.Equal(t, []Inherited{{StepID: "w1", Workspace: "/snap/w1", Changes: tools.FileChanges{Added: []string{"src/a.go"}}}}, sim.reqs["w2"].Inherit)
	r := sim.reqs["r"]
	require.Equal(t, "isolated", r.WorkspaceMode)
	require.Equal(t, []string{"w1", "w2"}, []string{r.Inherit[0].StepID, r.Inherit[1].StepID})
	require.Contains(t, r.Task, "Your workspace already holds what these earlier steps changed in their own snapshots:\n- w1: added src/a.go; changed none; deleted none\n- w2: added none; changed src/a.go")
	require.Contains(t, r.Task, "Files it changed (they are in your workspace)")
	// A shared writer cannot be given them: it is told where they are.
	sw := sim.reqs["sw"]
	require.Equal(t, "shared", sw.WorkspaceMode)
	require.Empty(t, sw.Inherit)
	require.Contains(t, sw.Task, "Files it changed (in its own snapshot, not in your workspace)")
	// Nothing to inherit, nothing changes.
	require.Equal(t, "shared", sim.reqs["plain"].WorkspaceMode)
	require.Empty(t, sim.reqs["plain"].Inherit)
}

// panickingChildren is the simulated runtime whose Start panics for one
// step, as a fault in the runner would.
type panickingChildren struct {
	*simRuntime
	step string
}

func (c panickingChildren) Start(ctx context.Context, req StepRequest) (tools.SubagentView, error) {
	if req.Name == c.step {
		panic("a fault in the runner")
	}
	return c.simRuntime.Start(ctx, req)
}

// A runner that panics stops the children it started before the panic goes
// on (to the tool's recover): none is left running unowned, its end never
// shown.
func TestARunnerThatPanicsStopsItsChildren(t *testing.T) {
	w := mustParse(t, `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x"}]}`)
	sim := newSim(func(string) childPlan { return childPlan{hang: true} })
	p, err := Prepare(w, Ports{Agents: sim, Children: panickingChildren{sim, "b"}, Evidence: sim})
	require.NoError(t, err)
	require.PanicsWithValue(t, "a fault in the runner", func() {
		p.Run(context.Background(), RunOptions{WorkflowID: "wf-test", ToolCallID: "call-1", Now: fixedClock()})
	})
	require.Equal(t, []string{"a"}, sim.order)
	require.Equal(t, []string{"a"}, sim.stopped, "the child that was running was stopped")
}
