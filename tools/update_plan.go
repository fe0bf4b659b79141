package tools

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/pixir-go/pixir/internal/plural"
)

//go:embed update_plan.md
var updatePlanDescription string

// The default priority and the statuses of plan entries (ACP PlanEntry):
// update_plan and a workflow's plan both use them.
const (
	PlanPriorityMedium = "medium"
	PlanPending        = "pending"
	PlanInProgress     = "in_progress"
	PlanCompleted      = "completed"
)

// UpdatePlanArgs are the arguments of update_plan.
type UpdatePlanArgs struct {
	Entries []PlanItem `json:"entries" jsonschema:"maxItems=100" jsonschema_description:"The whole plan, in order. It replaces the previous plan; an empty list clears it."`
}

// PlanItem is one entry of the plan as the model gives it.
type PlanItem struct {
	Content  string `json:"content" jsonschema:"minLength=1,maxLength=1000" jsonschema_description:"What this step does, in one short sentence."`
	Priority string `json:"priority,omitempty" jsonschema:"enum=high,enum=medium,enum=low" jsonschema_description:"Default medium."`
	Status   string `json:"status" jsonschema:"enum=pending,enum=in_progress,enum=completed"`
}

// UpdatePlanOutput is what update_plan returns; the plan itself goes to
// the editor (Result.Plan), not back to the model.
type UpdatePlanOutput struct {
	Summary    string `json:"summary"`
	Entries    int    `json:"entries"`
	Pending    int    `json:"pending"`
	InProgress int    `json:"in_progress"`
	Completed  int    `json:"completed"`
}

// UpdatePlanTool replaces the plan shown to the user.
func UpdatePlanTool() Tool {
	return Define(Spec[UpdatePlanArgs]{
		Name:        "update_plan",
		Description: updatePlanDescription,
		Posture:     PostureRead,
		Kind:        KindThink,
		Describe:    func(UpdatePlanArgs) Presentation { return Presentation{Title: "Update plan"} },
		Run:         runUpdatePlan,
	})
}

// Plan is the plan the arguments make: their entries, medium priority
// where none is given; never nil (an empty plan is a plan, and clears the
// one shown). A session/load shows it again from the call's arguments.
func (a UpdatePlanArgs) Plan() []PlanEntry {
	plan := make([]PlanEntry, 0, len(a.Entries))
	for _, e := range a.Entries {
		if e.Priority == "" {
			e.Priority = PlanPriorityMedium
		}
		plan = append(plan, PlanEntry(e))
	}
	return plan
}

func runUpdatePlan(_ context.Context, _ Env, a UpdatePlanArgs, dryRun bool) Result {
	plan := a.Plan()
	out := UpdatePlanOutput{Entries: len(a.Entries)}
	var current []string
	for _, e := range a.Entries {
		switch e.Status {
		case PlanPending:
			out.Pending++
		case PlanInProgress:
			out.InProgress++
			current = append(current, e.Content)
		case PlanCompleted:
			out.Completed++
		}
	}
	out.Summary = planSummary(out, current)
	if dryRun {
		return Preview("would replace the plan with %d %s", len(plan), plural.Word(len(plan), "entry", "entries"))
	}
	res := OK(out)
	res.Plan = plan
	return res
}

func planSummary(out UpdatePlanOutput, current []string) string {
	if out.Entries == 0 {
		return "Plan cleared."
	}
	s := fmt.Sprintf("Plan updated: %d %s (%d completed, %d in progress, %d pending).",
		out.Entries, plural.Word(out.Entries, "entry", "entries"), out.Completed, out.InProgress, out.Pending)
	if len(current) > 0 {
		s += " In progress: " + strings.Join(current, "; ")
	}
	return s
}
