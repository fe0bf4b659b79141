package workflows

import (
	"strconv"

	"github.com/pixir-go/pixir/tools"
)

// PlanOf is the plan of a workflow run as its events tell it: the plan
// the run showed last (showPlan at its end), rebuilt from the Log, where
// plans are not kept (they are live only), for a client that reopens the
// session. events are one run's workflow_events in the order they were
// recorded; the run is the first one they start. For a run its process
// did not live to finish, the plan is what Rebuild makes of it (runs that
// were running detached, steps never reached held). ok is false when the
// events start no run.
func PlanOf(events []WorkflowEvent) (entries []tools.PlanEntry, ok bool) {
	outs := Rebuild(events)
	if len(outs) == 0 {
		return nil, false
	}
	o := &outs[0]
	var w *Workflow
	for k := range events {
		if ev := &events[k]; ev.Kind == EventWorkflowStarted && ev.WorkflowID == o.WorkflowID && ev.Workflow != nil {
			w = ev.Workflow
			break
		}
	}
	if w == nil {
		return nil, false
	}
	tasks := instanceTasks(w, o.WorkflowID, events)
	g := w.graph()
	runs := make([]planItem, 0, len(o.Steps))
	for k := range o.Steps {
		out := &o.Steps[k]
		s, ok := g.index[out.StepID]
		if !ok {
			continue
		}
		label := runName(out)
		task, bound := tasks[label]
		if !bound {
			task = w.Steps[s].Task
		}
		class := planAttention
		if out.CheckpointStatus == CheckpointReady || out.CheckpointStatus == CheckpointSkipped || out.Superseded {
			class = planSettled
		}
		runs = append(runs, planItem{at: s, label: label, task: task, out: out, class: class, ready: out.CheckpointStatus == CheckpointReady})
	}
	var loops []planItem
	for k := range o.Loops {
		if l, ok := g.loopIndex[o.Loops[k].Loop]; ok {
			loops = append(loops, planItem{at: l, loop: &o.Loops[k], class: planRunning})
		}
	}
	return buildPlan(w, g, runs, loops), true
}

// instanceTasks are the tasks of a run's fan-out instances, by run label
// (make[2]), bound to their items as the run bound them: each fan_out
// reads its items from the payload of its source step's run decided last
// before it.
func instanceTasks(w *Workflow, id string, events []WorkflowEvent) map[string]string {
	g := w.graph()
	tasks := map[string]string{}
	decided := map[string]*StepOutcome{}
	for k := range events {
		ev := &events[k]
		if ev.WorkflowID != id {
			continue
		}
		switch ev.Kind {
		case EventCheckpointDecided:
			if ev.Outcome != nil {
				decided[ev.StepID] = ev.Outcome
			}
		case EventFanOut:
			s, ok := g.index[ev.StepID]
			if !ok || g.fan[s] == nil {
				continue
			}
			st := &w.Steps[s]
			src := decided[w.Steps[g.fan[s].source].ID]
			if src == nil || src.Checkpoint == nil || len(src.Checkpoint.Payload) == 0 {
				continue
			}
			payload, err := decodeValue(src.Checkpoint.Payload)
			if err != nil {
				continue
			}
			v, _ := lookup(payload, g.fan[s].path)
			items, _ := v.([]any)
			for i, item := range items {
				if spec, err := instantiate(st, i, item); err == nil {
					tasks[ev.Run+"["+strconv.Itoa(i+1)+"]"] = spec.Task
				}
			}
		}
	}
	return tasks
}
