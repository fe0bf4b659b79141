package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

// fakeMerger records the merges a run asks for, in order, and answers
// each step with what its function says.
type fakeMerger struct {
	answer func(step string) (tools.MergeReport, error)

	mu     sync.Mutex
	merged []string // "step/agent", in order
	// startedAfter, per merge, the steps started before it: a dependent
	// must start only after its dependency's merge.
	sim *simRuntime
	at  map[string][]string
}

func (f *fakeMerger) Merge(_ context.Context, req MergeRequest) (tools.MergeReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.merged = append(f.merged, req.StepID+"/"+req.AgentID)
	if f.sim != nil {
		f.sim.mu.Lock()
		f.at[req.StepID] = append([]string(nil), f.sim.order...)
		f.sim.mu.Unlock()
	}
	if f.answer == nil {
		return tools.MergeReport{Status: tools.MergeMerged, Applied: tools.MergeFiles{Updated: []string{req.StepID + ".txt"}}}, nil
	}
	return f.answer(req.StepID)
}

func runWithMerger(t *testing.T, spec string, plan func(string) childPlan, m *fakeMerger) (Outcome, *simRuntime) {
	t.Helper()
	w := mustParse(t, spec)
	sim := newSim(plan)
	m.sim, m.at = sim, map[string][]string{}
	ports := sim.ports()
	ports.Merger = m
	p, err := Prepare(w, ports)
	require.NoError(t, err)
	var out Outcome
	synctest.Test(t, func(*testing.T) {
		out = p.Run(context.Background(), RunOptions{WorkflowID: "wf-m", Now: fixedClock(), waiting: sim.waiting})
	})
	return out, sim
}

func changed(paths ...string) *tools.FileChanges {
	return &tools.FileChanges{Added: []string{}, Changed: paths, Deleted: []string{}}
}

func TestMergeOnReadyBeforeDependentsInDecisionOrder(t *testing.T) {
	// a and b write different files side by side; c depends on both and
	// must start only after both merged; d is a reader.
	spec := `{"steps":[
		{"id":"a","task":"t","write_set":["a/**"]},
		{"id":"b","task":"t","write_set":["b/**"]},
		{"id":"c","task":"t","write_set":["c/**"],"depends_on":["a","b"]},
		{"id":"d","task":"t"}]}`
	plan := func(step string) childPlan {
		d := map[string]int64{"a": 20, "b": 10, "c": 5, "d": 1}[step]
		return childPlan{dur: d, changes: changed(step + "/x")}
	}
	m := &fakeMerger{}
	out, sim := runWithMerger(t, spec, plan, m)
	require.Equal(t, StatusCompleted, out.Status)
	// b ends first, then a, then c: each merged as it is decided.
	require.Equal(t, []string{"b/sa-b", "a/sa-a", "c/sa-c"}, m.merged)
	require.NotContains(t, m.at["a"], "c", "c started before a, its dependency, was merged")
	for _, id := range []string{"a", "b", "c"} {
		s := stepOf(out, id)
		require.NotNil(t, s.Merge, id)
		require.Equal(t, tools.MergeMerged, s.Merge.Status, id)
		require.Equal(t, MergeOnReady, s.Merge.Policy)
	}
	require.Nil(t, stepOf(out, "d").Merge, "a reader has nothing to merge")
	// c's snapshot inherits nothing: its dependencies are in the workspace.
	require.Empty(t, sim.reqs["c"].Inherit)
	require.Contains(t, out.Output, "| merge |")
	require.Contains(t, out.Output, "merged (1 file)")
}

func TestMergeConflictMakesTheStepNeedOrchestrator(t *testing.T) {
	// a and b write the same file, so b (declared later, no longer chain)
	// runs after a; its merge conflicts with what a merged.
	spec := `{"steps":[
		{"id":"a","task":"t","write_set":["f.txt"]},
		{"id":"b","task":"t","write_set":["f.txt"]},
		{"id":"after","task":"t","depends_on":["b"]},
		{"id":"first","task":"t","depends_on":["a"]}]}`
	m := &fakeMerger{answer: func(step string) (tools.MergeReport, error) {
		if step == "a" {
			return tools.MergeReport{Status: tools.MergeMerged, Applied: tools.MergeFiles{Updated: []string{"f.txt"}}}, nil
		}
		return tools.MergeReport{Status: tools.MergeConflicted, Conflicts: []tools.MergeConflict{{
			Path: "f.txt", Kind: tools.ConflictContent, Message: "both changed line 2",
			Hunks: []tools.ConflictHunk{{Lines: tools.LineRange{Start: 2, Count: 7}, Workspace: "two (a)", Base: "two", Child: "two (b)"}},
		}}}, nil
	}}
	plan := func(step string) childPlan {
		return childPlan{dur: 1, changes: changed("f.txt"),
			report: `{"status":"checkpoint_ready","summary":"done"}`}
	}
	out, _ := runWithMerger(t, spec, plan, m)
	require.Equal(t, StatusPartial, out.Status)
	b := stepOf(out, "b")
	require.Equal(t, CheckpointNeedsOrchestrator, b.CheckpointStatus)
	require.Equal(t, tools.MergeConflicted, b.Merge.Status)
	require.Equal(t, []string{"a", "b"}, b.Merge.Conflicts[0].Steps, "the steps involved: a merged f.txt before b")
	require.False(t, b.Checkpoint.DependentSafe)
	require.Equal(t, CheckpointNeedsOrchestrator, b.Checkpoint.Status)
	require.Equal(t, CheckpointHeld, stepOf(out, "after").CheckpointStatus, "a conflicted step's dependents wait")
	require.Equal(t, CheckpointReady, stepOf(out, "first").CheckpointStatus)
	require.Equal(t, []string{"b"}, out.NeedsOrchestratorSteps)
	var actions []string
	for _, a := range out.SafeNextActions {
		actions = append(actions, a.Action)
	}
	require.Subset(t, actions, []string{"resolve_then_merge", "keep_in_snapshot", "discard"})
	require.Contains(t, out.Output, "Merge conflicts")
	require.Contains(t, out.Output, "f.txt: content, 1 hunk (lines 2-8 of the file with conflict markers in b's snapshot) (steps a, b)")
	require.Contains(t, strings.Join(out.SeamObligations, "\n"), "merge conflict")
}

// A ready writer whose merge did not happen (the user declined it, the
// mode refused it, or it failed) has its work in its snapshot, not in the
// workspace: the run is not completed, its dependents do not start on a
// workspace without it, and the next actions say how to land it.
func TestAMergeThatDidNotHappenIsNotCompleted(t *testing.T) {
	spec := `{"steps":[
		{"id":"declined","task":"t","write_set":["d/**"]},
		{"id":"broken","task":"t","write_set":["b/**"]},
		{"id":"after","task":"t","depends_on":["declined"]}]}`
	m := &fakeMerger{answer: func(step string) (tools.MergeReport, error) {
		if step == "broken" {
			return tools.MergeReport{}, errors.New("the snapshot is gone")
		}
		return tools.MergeReport{Status: tools.MergeNotMerged, Reason: "the user declined the merge"}, nil
	}}
	plan := func(step string) childPlan {
		return childPlan{dur: 1, changes: changed(step + "/x"), report: `{"status":"checkpoint_ready","summary":"done"}`}
	}
	out, _ := runWithMerger(t, spec, plan, m)
	require.Equal(t, StatusFailed, out.Status, "no step is checkpoint_ready")
	for _, id := range []string{"declined", "broken"} {
		s := stepOf(out, id)
		require.Equal(t, CheckpointNeedsOrchestrator, s.CheckpointStatus, id)
		require.Equal(t, tools.MergeNotMerged, s.Merge.Status, id)
		require.False(t, s.Checkpoint.DependentSafe, id)
		require.Contains(t, strings.Join(s.Checkpoint.KnownLimitations, "\n"), "not merged into the workspace", id)
		require.True(t, s.Merge.Tried, id)
	}
	require.Equal(t, CheckpointHeld, stepOf(out, "after").CheckpointStatus, "not started on a workspace without its dependency's work")
	var again *NextAction
	for i, a := range out.SafeNextActions {
		if a.Action == "merge_again" {
			again = &out.SafeNextActions[i]
		}
	}
	require.NotNil(t, again, "%+v", out.SafeNextActions)
	require.Equal(t, []string{"declined", "broken"}, again.StepIDs, "in declaration order")
}

// A writer whose own child reported needs_orchestrator was never merged
// (it is not ready): merge_again, which says its merge was tried and did
// not happen, would land work its child left undecided.
func TestAStepThatWasNeverReadyIsNotMergedAgain(t *testing.T) {
	spec := `{"steps":[{"id":"asks","task":"t","write_set":["d/**"]}]}`
	m := &fakeMerger{answer: func(string) (tools.MergeReport, error) { return tools.MergeReport{Status: tools.MergeMerged}, nil }}
	plan := func(step string) childPlan {
		return childPlan{dur: 1, changes: changed(step + "/x"), report: `{"status":"needs_orchestrator","summary":"two APIs disagree"}`}
	}
	out, _ := runWithMerger(t, spec, plan, m)
	s := stepOf(out, "asks")
	require.Equal(t, CheckpointNeedsOrchestrator, s.CheckpointStatus)
	require.Equal(t, tools.MergeNotMerged, s.Merge.Status)
	require.False(t, s.Merge.Tried, "never ready: its merge was not tried")
	for _, a := range out.SafeNextActions {
		require.NotEqual(t, "merge_again", a.Action, "%+v", out.SafeNextActions)
	}
}

func TestMergePolicies(t *testing.T) {
	spec := `{"merge":"manual","steps":[
		{"id":"man","task":"t","write_set":["m/**"]},
		{"id":"nev","task":"t","write_set":["n/**"],"merge":"never"},
		{"id":"on","task":"t","write_set":["o/**"],"merge":"on_ready"},
		{"id":"late","task":"t","write_set":["l/**"],"depends_on":["man","nev"]},
		{"id":"bad","task":"t","write_set":["b/**"],"merge":"on_ready"},
		{"id":"err","task":"t","write_set":["e/**"],"merge":"on_ready"}]}`
	plan := func(step string) childPlan {
		p := childPlan{dur: 1, changes: changed(step + "/x")}
		if step == "bad" {
			p.status = tools.SubagentFailed
		}
		return p
	}
	m := &fakeMerger{answer: func(step string) (tools.MergeReport, error) {
		if step == "err" {
			return tools.MergeReport{}, errors.New("the snapshot is gone")
		}
		return tools.MergeReport{Status: tools.MergeMerged}, nil
	}}
	out, sim := runWithMerger(t, spec, plan, m)
	require.Equal(t, []string{"on/sa-on", "err/sa-err"}, m.merged)
	for id, want := range map[string]string{
		"man": "merge is manual", "nev": "merge is never", "bad": "not checkpoint_ready", "err": "the snapshot is gone",
	} {
		s := stepOf(out, id)
		require.Equal(t, tools.MergeNotMerged, s.Merge.Status, id)
		require.Contains(t, s.Merge.Reason, want, id)
	}
	require.Equal(t, MergeManual, stepOf(out, "late").Merge.Policy, "the workflow's merge is the default")
	// late's snapshot starts with the unmerged work of its dependencies.
	var from []string
	for _, in := range sim.reqs["late"].Inherit {
		from = append(from, in.StepID)
	}
	require.Equal(t, []string{"man", "nev"}, from)
	require.Contains(t, out.Output, "not merged (manual)")
}

func TestMergeWithoutMergerSaysSo(t *testing.T) {
	w := mustParse(t, `{"steps":[{"id":"w","task":"t","write_set":["x"]}]}`)
	sim := newSim(func(string) childPlan { return childPlan{dur: 1, changes: changed("x")} })
	out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf", Now: fixedClock(), waiting: sim.waiting})
	s := stepOf(out, "w")
	require.Equal(t, tools.MergeNotMerged, s.Merge.Status)
	require.Contains(t, s.Merge.Reason, "cannot merge")
	require.Equal(t, CheckpointReady, s.CheckpointStatus)
}

func TestMergeValidation(t *testing.T) {
	for _, c := range []struct{ spec, code, field string }{
		{`{"merge":"later","steps":[{"id":"a","task":"t"}]}`, "invalid_enum", "merge"},
		{`{"steps":[{"id":"a","task":"t","write_set":["x"],"merge":"sometimes"}]}`, "invalid_enum", "merge"},
		{`{"steps":[{"id":"a","task":"t","merge":"on_ready"}]}`, "merge_without_snapshot", "merge"},
		{`{"steps":[{"id":"a","task":"t","write_set":["x"],"workspace_mode":"shared","merge":"manual"}]}`, "merge_without_snapshot", "merge"},
	} {
		_, err := Parse([]byte(c.spec))
		require.Error(t, err, c.spec)
		p := tools.AsFailure(err).Details.(ValidationDetails).Problems
		require.Len(t, p, 1, c.spec)
		require.Equal(t, c.code, p[0].Code, c.spec)
		require.Equal(t, c.field, p[0].Field, c.spec)
	}
	w := mustParse(t, `{"merge":"never","steps":[{"id":"r","task":"t"},{"id":"w","task":"t","write_set":["x"]}]}`)
	require.Equal(t, MergePolicy(""), w.MergePolicyOf(&w.Steps[0]), "a workflow-wide merge is fine beside readers")
	require.Equal(t, MergeNever, w.MergePolicyOf(&w.Steps[1]))
}

func stepOf(out Outcome, id string) StepOutcome {
	for _, s := range out.Steps {
		if s.StepID == id {
			return s
		}
	}
	panic("no step " + id)
}

// A step whose child wrote outside its write set failed, whatever it
// reported: it is never merged, and its dependents are held.
func TestAWriteSetViolationIsNeverMerged(t *testing.T) {
	spec := `{"steps":[
		{"id":"docs","task":"t","write_set":["docs/**"]},
		{"id":"use","task":"t","write_set":["use/**"],"depends_on":["docs"]}]}`
	v := &tools.WriteSetViolation{Code: tools.WriteSetViolationCode, WriteSets: [][]string{{"docs/**"}}, Paths: []string{"src/x"}, Workspace: "isolated"}
	plan := func(step string) childPlan {
		if step == "docs" {
			return childPlan{dur: 1, status: tools.SubagentFailed, report: `{"status":"checkpoint_ready","summary":"docs written"}`,
				changes: changed("docs/a.md", "src/x"), violation: v}
		}
		return childPlan{dur: 1, changes: changed("use/x")}
	}
	m := &fakeMerger{}
	out, _ := runWithMerger(t, spec, plan, m)
	require.Empty(t, m.merged, "nothing is merged")
	docs := out.Steps[0]
	require.Equal(t, CheckpointFailed, docs.CheckpointStatus)
	require.Equal(t, v, docs.WriteSetViolation)
	require.Equal(t, tools.MergeNotMerged, docs.Merge.Status)
	require.Contains(t, docs.Merge.Reason, "write_set_violation")
	require.Equal(t, CheckpointHeld, out.Steps[1].CheckpointStatus)
}

// A merge that waits (for another session's merge, the workspace's lock,
// the user's answer) does not keep its step's slot: the next step's child
// starts while it waits. The merges still happen one at a time in the
// order the steps ended, and each step's outcome says its own merge.
func TestAWaitingMergeFreesItsStepsSlot(t *testing.T) {
	spec := `{"max_concurrency":2,"steps":[
		{"id":"a","task":"t","write_set":["a/**"]},
		{"id":"b","task":"t","write_set":["b/**"]},
		{"id":"c","task":"t","write_set":["c/**"]},
		{"id":"d","task":"t","write_set":["d/**"]}]}`
	plan := func(step string) childPlan {
		d := map[string]int64{"a": 1, "b": 5, "c": 2, "d": 2}[step]
		return childPlan{dur: d, changes: changed(step + "/x")}
	}
	var startedWhileWaiting []string
	m := &fakeMerger{}
	m.answer = func(step string) (tools.MergeReport, error) {
		if step == "a" {
			// a's merge waits until nothing else can move: what started
			// meanwhile is what a waiting merge lets start.
			m.mu.Unlock()
			synctest.Wait()
			m.sim.mu.Lock()
			startedWhileWaiting = slices.Clone(m.sim.order)
			m.sim.mu.Unlock()
			m.mu.Lock()
		}
		return tools.MergeReport{Status: tools.MergeMerged, Applied: tools.MergeFiles{Updated: []string{step + "/x"}}}, nil
	}
	out, _ := runWithMerger(t, spec, plan, m)
	require.Equal(t, StatusCompleted, out.Status)
	require.Equal(t, []string{"a", "b", "c"}, startedWhileWaiting, "c did not start while a's merge waited")
	// c ends at 3, b and d at 5 (b started first): merged in that order.
	require.Equal(t, []string{"a/sa-a", "c/sa-c", "b/sa-b", "d/sa-d"}, m.merged)
	for _, id := range []string{"a", "b", "c", "d"} {
		s := stepOf(out, id)
		require.Equal(t, CheckpointReady, s.CheckpointStatus, id)
		require.Equal(t, tools.MergeMerged, s.Merge.Status, id)
		require.Equal(t, []string{id + "/x"}, s.Merge.Applied.Updated, id)
	}
}

// agentSets is the fake runtime whose agents have write sets of their own.
type agentSets struct {
	*simRuntime
	sets map[string][]string
}

func (a agentSets) AgentWriteSet(req tools.SpawnRequest) []string { return a.sets[req.Agent] }

// What a writer may change is its write set narrowed by its agent's (a
// file must match both), and the scheduler judges conflicts by that: the
// dry run and the run, which share it, start the same steps together. A
// docwriter (docs/**) with the default write set (the whole workspace)
// and a step writing src/** cannot touch one file.
func TestTheSchedulerJudgesConflictsByWhatTheAgentMayWriteToo(t *testing.T) {
	spec := `{"max_concurrency":3,"steps":[
		{"id":"docs","task":"t","agent":"docwriter","permission_mode":"writer"},
		{"id":"src","task":"t","write_set":["src/**"]},
		{"id":"more-docs","task":"t","write_set":["docs/api/**"]}]}`
	w := mustParse(t, spec)
	sim := newSim(func(string) childPlan { return childPlan{dur: 1} })
	ports := sim.ports()
	ports.Agents = agentSets{sim, map[string][]string{"docwriter": {"docs/**"}}}
	p, err := Prepare(w, ports)
	require.NoError(t, err)
	d, err := p.DryRun(context.Background())
	require.NoError(t, err)
	require.Equal(t, [][]string{{"docs", "src"}, {"more-docs"}}, d.order, "the dry run")
	synctest.Test(t, func(*testing.T) {
		p.Run(context.Background(), RunOptions{WorkflowID: "wf-a", Now: fixedClock(), waiting: sim.waiting})
	})
	require.Equal(t, [][]string{{"docs", "src"}, {"more-docs"}}, sim.byStart(), "the run")
}

// Under fail_fast a failed step stops the workflow when its child ends,
// not once the steps that ended before it are merged: while their merge
// waits, its slot must not start the rest (review34a #1).
func TestFailFastStopsWhileAnotherStepsMergeWaits(t *testing.T) {
	spec := `{"max_concurrency":2,"failure_policy":"fail_fast","steps":[
		{"id":"a","task":"t","write_set":["a/**"]},
		{"id":"f","task":"t","write_set":["f/**"]},
		{"id":"c","task":"t","write_set":["c/**"]},
		{"id":"d","task":"t","write_set":["d/**"]},
		{"id":"e","task":"t","write_set":["e/**"]}]}`
	plan := func(step string) childPlan {
		switch step {
		case "a":
			return childPlan{dur: 1, changes: changed("a/x")}
		case "f":
			return childPlan{dur: 1, status: tools.SubagentFailed}
		}
		return childPlan{dur: 6, changes: changed(step + "/x")}
	}
	m := &fakeMerger{}
	m.answer = func(step string) (tools.MergeReport, error) {
		if step == "a" {
			m.mu.Unlock()
			synctest.Wait() // a's merge waits until nothing else can move
			m.mu.Lock()
		}
		return tools.MergeReport{Status: tools.MergeMerged, Applied: tools.MergeFiles{Updated: []string{step + "/x"}}}, nil
	}
	out, sim := runWithMerger(t, spec, plan, m)
	require.Equal(t, StoppedFailFast, out.StoppedBy)
	require.NotContains(t, sim.order, "d", "started after f failed: %v", sim.order)
	require.NotContains(t, sim.order, "e", "started after f failed: %v", sim.order)
	require.Equal(t, CheckpointHeld, stepOf(out, "e").CheckpointStatus)
}

// A panic in the merger, now made beside the run's loop, still reaches
// the run's caller as a panic (the tool's recover makes it the call's
// internal failure), and does not take the process down (review34a #2).
func TestAPanicInAMergeReachesTheRunsCaller(t *testing.T) {
	spec := `{"steps":[{"id":"a","task":"t","write_set":["a/**"]}]}`
	w := mustParse(t, spec)
	sim := newSim(func(step string) childPlan { return childPlan{dur: 1, changes: changed(step + "/x")} })
	m := &fakeMerger{answer: func(string) (tools.MergeReport, error) { panic("merge bug") }}
	m.sim, m.at = sim, map[string][]string{}
	ports := sim.ports()
	ports.Merger = m
	p, err := Prepare(w, ports)
	require.NoError(t, err)
	var got any
	synctest.Test(t, func(*testing.T) {
		defer func() { got = recover() }()
		p.Run(context.Background(), RunOptions{WorkflowID: "wf-p", Now: fixedClock(), waiting: sim.waiting})
	})
	require.NotNil(t, got, "the panic reaches the caller")
	require.Contains(t, fmt.Sprint(got), "merge bug")
}
