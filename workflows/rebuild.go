package workflows

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pixir-go/pixir/tools"
)

// foldedRun is one workflow run as its events tell it.
type foldedRun struct {
	id    string
	w     *Workflow
	runs  []*foldedStepRun // in the order the events first named them
	byRun map[string]*foldedStepRun
	// loops are the loop runs' outcomes (loop_finished) and, for those
	// that never finished, the last iteration started.
	loops    []*LoopOutcome
	byLoop   map[string]*LoopOutcome
	finished *WorkflowEvent
	// before is its workflow_started's record of the user's work.
	before    *BeforeRun
	commit    *CommitReport
	commits   []CommitReport  // each of several commits (commit.commits), in order
	iterDone  map[string]bool // iterations their loop decided: plan-review#2, escalation#1.2
	whenSeen  map[string][]ConditionSeen
	stepsByID map[string]*Step
	// fanOuts are the fan_out events: a fan-out run and its items.
	fanOuts []*WorkflowEvent
}

// foldedStepRun is one step run as the events tell it.
type foldedStepRun struct {
	stepID, label string
	outcome       *StepOutcome // checkpoint_decided
	merging       *StepOutcome // step_merging: its outcome before the merge
	agent         string       // step_scheduled
	wave          int
	held          *WorkflowEvent
	skipped       *WorkflowEvent
}

// fold groups a session's workflow events by run, in the order the runs
// started, keeping each step run's decision, hold, skip or start and each
// loop run's end.
func fold(events []WorkflowEvent) []foldedRun {
	var order []string
	runs := map[string]*foldedRun{}
	for k := range events {
		ev := &events[k]
		if ev.Kind == EventWorkflowStarted {
			if ev.Workflow == nil {
				continue
			}
			r := &foldedRun{id: ev.WorkflowID, w: ev.Workflow, before: ev.Before, byRun: map[string]*foldedStepRun{}, byLoop: map[string]*LoopOutcome{},
				iterDone: map[string]bool{}, whenSeen: map[string][]ConditionSeen{}, stepsByID: map[string]*Step{}}
			for i := range ev.Workflow.Steps {
				r.stepsByID[ev.Workflow.Steps[i].ID] = &ev.Workflow.Steps[i]
			}
			if _, seen := runs[ev.WorkflowID]; !seen {
				order = append(order, ev.WorkflowID)
			}
			runs[ev.WorkflowID] = r
			continue
		}
		r := runs[ev.WorkflowID]
		if r == nil {
			continue
		}
		switch ev.Kind {
		case EventStepScheduled, EventCheckpointDecided, EventStepMerging, EventStepHeld, EventStepSkipped:
			if r.stepsByID[ev.StepID] == nil {
				continue
			}
			label := ev.Run
			if label == "" {
				label = ev.StepID // recorded before runs had labels
			}
			sr := r.byRun[label]
			if sr == nil {
				sr = &foldedStepRun{stepID: ev.StepID, label: label}
				r.byRun[label] = sr
				r.runs = append(r.runs, sr)
			}
			switch ev.Kind {
			case EventStepScheduled:
				sr.agent, sr.wave = ev.SubagentID, ev.Wave
			case EventCheckpointDecided:
				if ev.Outcome != nil {
					o := *ev.Outcome
					sr.outcome = &o
				}
			case EventStepMerging:
				if ev.Outcome != nil {
					o := *ev.Outcome
					sr.merging = &o
				}
			case EventStepHeld:
				sr.held = ev
			case EventStepSkipped:
				sr.skipped = ev
			}
		case EventFanOut:
			if r.stepsByID[ev.StepID] != nil && ev.Run != "" {
				r.fanOuts = append(r.fanOuts, ev)
			}
		case EventIterationStarted:
			lo := r.byLoop[ev.Run]
			if lo == nil {
				lo = &LoopOutcome{Loop: ev.Loop, Run: ev.Run, State: LoopInterrupted, Blockers: []string{}}
				r.byLoop[ev.Run] = lo
				r.loops = append(r.loops, lo)
			}
			lo.Iterations = max(lo.Iterations, ev.Iteration)
		case EventIterationFinished:
			// An iteration the workflow's stop cut short (a cancel, its
			// timeout_ms, fail_fast) was not decided by its loop: a
			// resumed run runs what it did not finish, as after a kill,
			// instead of keeping its failures as the loop's history.
			if ev.Decision != string(LoopStopped) {
				r.iterDone[iterationKey(ev.Run, ev.Iteration)] = true
			}
		case EventLoopFinished:
			if ev.LoopOutcome == nil {
				continue
			}
			o := *ev.LoopOutcome
			if lo := r.byLoop[ev.Run]; lo != nil {
				*lo = o
			} else {
				r.byLoop[ev.Run] = &o
				r.loops = append(r.loops, &o)
			}
		case EventCommitted:
			r.commit = ev.Commit
			if ev.Commit != nil {
				r.commits = append(r.commits, *ev.Commit)
			}
		case EventWorkflowFinished:
			r.finished = ev
		}
	}
	out := make([]foldedRun, len(order))
	for i, id := range order {
		out[i] = *runs[id]
	}
	return out
}

// iterationKey names one iteration of a loop run: plan-review#2, or
// escalation#1.2 for iteration 2 of escalation's run inside iteration 1
// of its enclosing loop.
func iterationKey(loopRun string, iteration int) string {
	if strings.Contains(loopRun, "#") {
		return loopRun + "." + strconv.Itoa(iteration)
	}
	return loopRun + "#" + strconv.Itoa(iteration)
}

// placeRun fills an outcome's run fields from its label: its loop, its
// iterations and its item.
func placeRun(w *Workflow, out *StepOutcome, label string) {
	out.Run = label
	g := w.graph()
	if s, ok := g.index[out.StepID]; ok {
		if l := g.loopOf[s]; l >= 0 {
			out.Loop, out.Iteration = w.Loops[l].ID, itersOf(label)
		}
	}
	if i := strings.LastIndexByte(label, '['); i >= 0 && strings.HasSuffix(label, "]") {
		out.Item, _ = strconv.Atoi(label[i+1 : len(label)-1])
	}
}

// Rebuild folds the workflow_events of one session's Log into the
// Outcome of each workflow run in it, in the order they started. For a
// finished run it equals what Run returned; for a run the process did not
// live to finish, the runs that were running are detached (nothing says
// they ended), the steps that never ran are held, its loops that did not
// end are interrupted, and StoppedBy is "interrupted".
func Rebuild(events []WorkflowEvent) []Outcome {
	runs := fold(events)
	outs := make([]Outcome, 0, len(runs))
	for k := range runs {
		r := &runs[k]
		w := r.w
		steps := make([]StepOutcome, 0, len(r.runs)+len(w.Steps))
		ran := map[string]bool{}
		for _, sr := range r.runs {
			st := r.stepsByID[sr.stepID]
			ran[sr.stepID] = true
			var o StepOutcome
			switch {
			case sr.outcome != nil:
				o = *sr.outcome
			case sr.skipped != nil:
				o = skippedOutcome(st, sr.skipped.SkipReason, sr.skipped.Seen)
			case sr.held != nil:
				o = heldOutcome(st, sr.held.HeldReason, sr.held.BlockedBy)
			case sr.merging != nil:
				// Ready, and the process ended during its merge: what the
				// merge had committed is finished from its journal when a
				// session next opens in the workspace; the rest is in the
				// snapshot, which resume_from merges again.
				o = *sr.merging
				m := StepMerge{MergeReport: tools.MergeReport{Status: tools.MergeNotMerged}, Tried: true}
				if o.Merge != nil {
					m.Policy = o.Merge.Policy
				}
				m.Reason = "the process ended during the merge; the files it had begun to write are finished when a session next opens in the workspace, and resume_from merges the rest"
				o.Merge = &m
				if b := o.Checkpoint; b != nil { // the event's own stays as it was
					c := *b
					c.KnownLimitations = slices.Clone(b.KnownLimitations)
					o.Checkpoint = &c
				}
				unlanded(&o, "the process ended during the merge")
			case sr.agent != "":
				o = StepOutcome{
					StepID: st.ID, Agent: agentOrDefault(st.Agent), AgentID: sr.agent, Wave: sr.wave,
					Posture: st.PermissionMode, WorkspaceMode: st.WorkspaceMode, DependsOn: nonNil(st.DependsOn),
					SubagentStatus: tools.SubagentDetached, CheckpointStatus: CheckpointFailed,
					Summary: "the process that ran this workflow ended before the step did; its work is not known to be complete",
					Error:   &tools.Failure{Kind: tools.ErrDetached, Message: fmt.Sprintf("subagent %s was running when the workflow was interrupted", sr.agent)},
				}
			default:
				continue
			}
			if sr.outcome == nil {
				placeRun(w, &o, sr.label)
			}
			steps = append(steps, o)
		}
		if r.finished == nil {
			// A fan-out's instances never started: held, after those that
			// did.
			for _, fo := range r.fanOuts {
				ran[fo.StepID] = true // reached: its instances stand for it
				at := len(steps)
				for j := range steps {
					if strings.HasPrefix(steps[j].Run, fo.Run+"[") {
						at = j + 1
					}
				}
				for item := 1; item <= fo.Items; item++ {
					label := fo.Run + "[" + strconv.Itoa(item) + "]"
					if r.byRun[label] != nil {
						continue
					}
					o := heldOutcome(r.stepsByID[fo.StepID], StoppedInterrupted, nil)
					placeRun(w, &o, label)
					steps = slices.Insert(steps, at, o)
					at++
				}
			}
			// Steps the run never reached: held, in the first iteration of
			// their loops.
			for i := range w.Steps {
				st := &w.Steps[i]
				if ran[st.ID] {
					continue
				}
				o := heldOutcome(st, StoppedInterrupted, nil)
				label := st.ID
				if chain := w.graph().loopChain(i); len(chain) > 0 {
					ones := make([]int, len(chain))
					for j := range ones {
						ones[j] = 1
					}
					label += "#" + joinInts(ones)
				}
				placeRun(w, &o, label)
				steps = append(steps, o)
			}
		}
		loops := make([]LoopOutcome, 0, len(r.loops))
		for _, lo := range r.loops {
			o := *lo
			if o.State == LoopInterrupted {
				if l, ok := w.graph().loopIndex[o.Loop]; ok {
					o.MaxIterations, o.OnExhausted = w.Loops[l].MaxIterations, w.Loops[l].OnExhausted
				}
			}
			loops = append(loops, o)
		}
		stopped, elapsed := StoppedInterrupted, int64(0)
		if f := r.finished; f != nil {
			stopped, elapsed = f.StoppedBy, f.ElapsedMS
		}
		o := assemble(w, r.id, steps, loops, stopped, elapsed)
		switch {
		case w.Commit != nil && w.Commit.Commits != nil && r.commits != nil:
			o.Commits = r.commits
			settleCommits(&o)
			o.Output = Render(&o)
		case r.commit != nil:
			o.Commit = r.commit
			settleCommits(&o)
			o.Output = Render(&o)
		}
		outs = append(outs, o)
	}
	return outs
}
