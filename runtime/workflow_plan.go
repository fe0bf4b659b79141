package runtime

import (
	"encoding/json"
	"fmt"

	"github.com/pixir-go/pixir/workflows"
)

// WorkflowPlan is the plan of the workflow run whose workflow_events
// (from the Log, in their order) are events: the plan it showed last, as
// the live session showed it (its PlanID that of the run's tool call).
// Plans are not in the Log, so a client that reopens a session is shown
// this one instead. ok is false when the events start no run.
func WorkflowPlan(events []Event) (PlanData, bool, error) {
	evs := make([]workflows.WorkflowEvent, 0, len(events))
	for _, ev := range events {
		var d workflows.WorkflowEvent
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return PlanData{}, false, fmt.Errorf("workflow event %d of the Log: %w", ev.Seq, err)
		}
		evs = append(evs, d)
	}
	entries, ok := workflows.PlanOf(evs)
	if !ok {
		return PlanData{}, false, nil
	}
	return PlanData{PlanID: workflowPlanID(evs[0].ToolCallID), Entries: entries}, true, nil
}
