package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUpdatePlan(t *testing.T) {
	tests := []struct {
		name string
		args string
		out  UpdatePlanOutput
		plan []PlanEntry
	}{
		{
			"entries with a default priority",
			`{"entries":[{"content":"Read the code","status":"completed","priority":"high"},{"content":"Fix the bug","status":"in_progress"},{"content":"Run the tests","status":"pending","priority":"low"}]}`,
			UpdatePlanOutput{Summary: "Plan updated: 3 entries (1 completed, 1 in progress, 1 pending). In progress: Fix the bug", Entries: 3, Pending: 1, InProgress: 1, Completed: 1},
			[]PlanEntry{
				{Content: "Read the code", Priority: "high", Status: "completed"},
				{Content: "Fix the bug", Priority: "medium", Status: "in_progress"},
				{Content: "Run the tests", Priority: "low", Status: "pending"},
			},
		},
		{
			"one entry",
			`{"entries":[{"content":"Do it","status":"pending"}]}`,
			UpdatePlanOutput{Summary: "Plan updated: 1 entry (0 completed, 0 in progress, 1 pending).", Entries: 1, Pending: 1},
			[]PlanEntry{{Content: "Do it", Priority: "medium", Status: "pending"}},
		},
		{
			// Not enforced: the description asks for one at a time, ACP allows more.
			"several in progress",
			`{"entries":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`,
			UpdatePlanOutput{Summary: "Plan updated: 2 entries (0 completed, 2 in progress, 0 pending). In progress: a; b", Entries: 2, InProgress: 2},
			[]PlanEntry{{Content: "a", Priority: "medium", Status: "in_progress"}, {Content: "b", Priority: "medium", Status: "in_progress"}},
		},
		{"an empty plan clears it", `{"entries":[]}`, UpdatePlanOutput{Summary: "Plan cleared."}, []PlanEntry{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, UpdatePlanTool(), Env{}, tt.args)
			require.Equal(t, tt.out, requireOK[UpdatePlanOutput](t, res))
			require.NotNil(t, res.Plan, "a nil plan would not reach the editor")
			require.Equal(t, tt.plan, res.Plan)
		})
	}
}

func TestUpdatePlanFailures(t *testing.T) {
	tests := []struct {
		name string
		args string
		msg  string
	}{
		{"bad enums and an empty content", `{"entries":[{"content":"","status":"done","priority":"urgent"}]}`,
			"/entries/0/content: minLength: got 0, want 1\n/entries/0/priority: value must be one of 'high', 'medium', 'low'\n/entries/0/status: value must be one of 'pending', 'in_progress', 'completed'"},
		{"missing status", `{"entries":[{"content":"a"}]}`, "/entries/0: missing property 'status'"},
		{"unknown entry field", `{"entries":[{"content":"a","status":"pending","id":1}]}`, "/entries/0: additional properties 'id' not allowed"},
		{"a string for entries", `{"entries":"do it"}`, "/entries: got string, want array"},
		{"null entries", `{"entries":null}`, "/entries: got null, want array"},
		{"no entries", `{}`, "/: missing property 'entries'"},
		{"too many entries", `{"entries":[` + strings.TrimSuffix(strings.Repeat(`{"content":"a","status":"pending"},`, 101), ",") + `]}`,
			"/entries: maxItems: got 101, want 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, UpdatePlanTool(), Env{}, tt.args)
			requireFailure(t, res, ErrInvalidArgs, tt.msg)
			require.Nil(t, res.Plan)
		})
	}
}

func TestUpdatePlanDryRun(t *testing.T) {
	res := dryRun(t, UpdatePlanTool(), Env{}, `{"entries":[{"content":"a","status":"pending"}]}`)
	require.Equal(t, DryRunOutput{DryRun: true, Summary: "would replace the plan with 1 entry"}, requireOK[DryRunOutput](t, res))
	require.Nil(t, res.Plan, "a dry run changes no plan")
}

func TestDescribeUpdatePlan(t *testing.T) {
	tool := UpdatePlanTool()
	require.Equal(t, PostureRead, tool.Posture())
	for _, args := range []string{`{"entries":[]}`, `{}`, `nonsense`} {
		require.Equal(t, Presentation{Title: "Update plan", Kind: KindThink}, tool.Describe(json.RawMessage(args)))
	}
}
