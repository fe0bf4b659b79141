package workflows

import (
	"fmt"

	"github.com/pixir-go/pixir/tools"
)

// foldedRun is one run as its events tell it.
type foldedRun struct {
	id       string
	w        *Workflow
	index    map[string]int
	steps    []*StepOutcome
	agent    []string
	wave     []int
	finished *WorkflowEvent
}

// fold groups a session's workflow events by run, in the order the runs
// started, keeping each step's decision, hold or start.
func fold(events []WorkflowEvent) []foldedRun {
	var order []string
	runs := map[string]*foldedRun{}
	for k := range events {
		ev := &events[k]
		if ev.Kind == EventWorkflowStarted {
			if ev.Workflow == nil {
				continue
			}
			n := len(ev.Workflow.Steps)
			r := &foldedRun{id: ev.WorkflowID, w: ev.Workflow, index: map[string]int{}, steps: make([]*StepOutcome, n), agent: make([]string, n), wave: make([]int, n)}
			for i := range ev.Workflow.Steps {
				r.index[ev.Workflow.Steps[i].ID] = i
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
		i, known := r.index[ev.StepID]
		switch ev.Kind {
		case EventStepScheduled:
			if known {
				r.agent[i], r.wave[i] = ev.SubagentID, ev.Wave
			}
		case EventCheckpointDecided:
			if known && ev.Outcome != nil {
				o := *ev.Outcome
				r.steps[i] = &o
			}
		case EventStepHeld:
			if known {
				o := heldOutcome(&r.w.Steps[i], ev.HeldReason, ev.BlockedBy)
				r.steps[i] = &o
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

// Rebuild folds the workflow_events of one session's Log into the
// Outcome of each workflow run in it, in the order they started. For a
// finished run it equals what Run returned; for a run the process did not
// live to finish, the steps that were running are detached (nothing says
// they ended) and the rest are held, and StoppedBy is "interrupted".
func Rebuild(events []WorkflowEvent) []Outcome {
	runs := fold(events)
	outs := make([]Outcome, 0, len(runs))
	for k := range runs {
		r := &runs[k]
		id := r.id
		steps := make([]StepOutcome, len(r.steps))
		for i, s := range r.steps {
			switch {
			case s != nil:
				steps[i] = *s
			case r.agent[i] != "":
				st := &r.w.Steps[i]
				steps[i] = StepOutcome{
					StepID: st.ID, Agent: agentOrDefault(st.Agent), AgentID: r.agent[i], Wave: r.wave[i],
					Posture: st.PermissionMode, WorkspaceMode: st.WorkspaceMode, DependsOn: nonNil(st.DependsOn),
					SubagentStatus: tools.SubagentDetached, CheckpointStatus: CheckpointFailed,
					Summary: "the process that ran this workflow ended before the step did; its work is not known to be complete",
					Error:   &tools.Failure{Kind: tools.ErrDetached, Message: fmt.Sprintf("subagent %s was running when the workflow was interrupted", r.agent[i])},
				}
			default:
				steps[i] = heldOutcome(&r.w.Steps[i], StoppedInterrupted, nil)
			}
		}
		stopped, elapsed := StoppedInterrupted, int64(0)
		if f := r.finished; f != nil {
			stopped, elapsed = f.StoppedBy, f.ElapsedMS
		}
		outs = append(outs, assemble(r.w, id, steps, stopped, elapsed))
	}
	return outs
}
