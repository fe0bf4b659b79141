package workflows

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/tools"
)

func TestARunPastItsBudgetEndsPartialAndResumesOnceRaised(t *testing.T) {
	spec := `{"budget":{"tokens":1000},"steps":[
		{"id":"a","task":"x"},
		{"id":"b","task":"x","depends_on":["a"]},
		{"id":"c","task":"x","depends_on":["b"]},
		{"id":"d","task":"x","depends_on":["c"]}]}`
	sim := newSim(func(string) childPlan { return childPlan{dur: 2, spend: 600} })
	first := simRun(t, context.Background(), sim, mustParse(t, spec), RunOptions{WorkflowID: "wf-1", Now: fixedClock(), waiting: sim.waiting})

	// a spends 600, b 600 more: past 1,000, nothing more starts.
	require.Equal(t, StatusPartial, first.Status, first.Output)
	require.Equal(t, StoppedBudget, first.StoppedBy)
	require.Equal(t, []string{"a", "b"}, first.UsableCheckpoints)
	require.Equal(t, []string{"c", "d"}, first.HeldSteps)
	require.Equal(t, StoppedBudget, first.Steps[2].HeldReason)
	require.Equal(t, budget.Usage{InputTokens: 1200, ModelCalls: 2}, first.Usage)
	require.Equal(t, &budget.Usage{InputTokens: 600, ModelCalls: 1}, first.Steps[0].Usage)
	require.Contains(t, first.Output, "Usage: 1,200 tokens (1,200 in, 0 out) in 2 model calls")
	require.Contains(t, first.Output, "| a | default | 1 | completed | checkpoint_ready | 0.0 s | 600 |")
	require.Contains(t, first.Output, "| c | default | – | not_started | held | 0.0 s | – |")
	held := first.SafeNextActions[0]
	require.Equal(t, "rerun_held_steps", held.Action)
	require.Contains(t, held.Reason, "the budget was spent before these started")
	require.Equal(t, "wf-1", held.Args["resume_from"])

	// The rebuilt outcome equals it: usage is in the Log's decisions.
	events, _ := sim.WorkflowEvents()
	raw, _ := json.Marshal(events)
	require.NoError(t, json.Unmarshal(raw, &events))
	want, _ := json.Marshal(first)
	got, _ := json.Marshal(Rebuild(events)[0])
	require.JSONEq(t, string(want), string(got))

	// Raised, and resumed: a and b are reused, only c and d run.
	w := mustParse(t, strings.Replace(spec, `"tokens":1000`, `"tokens":5000`, 1))
	w.ResumeFrom = "wf-1"
	sim.order = nil
	second := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-2", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusCompleted, second.Status, second.Output)
	require.Equal(t, []string{"c", "d"}, sim.order)
	require.Equal(t, budget.Usage{InputTokens: 1200, ModelCalls: 2}, second.Usage, "reused steps cost this run nothing")
}

// The session's budget, spent while every step already runs (no start is
// refused to say so), stops the run as the run's own does: stopped_by
// budget_exhausted, in the outcome and as the Log rebuilds it.
func TestASessionBudgetSpentWhileEveryStepRunsStopsTheRun(t *testing.T) {
	w := mustParse(t, `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x"},{"id":"c","task":"x"}]}`)
	sim := newSim(func(step string) childPlan {
		switch step {
		case "a":
			return childPlan{dur: 1, spend: 600}
		case "b":
			return childPlan{dur: 2, spend: 600}
		}
		// c's next model call was refused: it ends failed.
		return childPlan{dur: 3, status: tools.SubagentFailed}
	})
	sim.session = budget.NewAccount("the session", "raise session_tokens", budget.Limit{Tokens: 1000}, 0)
	ports := sim.ports()
	ports.Budgets.Spent = sim.session.Exhausted
	p, err := Prepare(w, ports)
	require.NoError(t, err)
	var out Outcome
	synctest.Test(t, func(*testing.T) {
		out = p.Run(context.Background(), RunOptions{WorkflowID: "wf-1", Now: fixedClock(), waiting: sim.waiting})
	})
	require.Equal(t, [][]string{{"a", "b", "c"}}, sim.byStart(), "every step started before the budget was spent")
	require.Equal(t, StatusPartial, out.Status, out.Output)
	require.Equal(t, StoppedBudget, out.StoppedBy)
	require.Contains(t, out.Output, "stopped early: budget_exhausted")

	events, _ := sim.WorkflowEvents()
	raw, _ := json.Marshal(events)
	require.NoError(t, json.Unmarshal(raw, &events))
	want, _ := json.Marshal(out)
	got, _ := json.Marshal(Rebuild(events)[0])
	require.JSONEq(t, string(want), string(got))
}

func TestARefusedStartHoldsTheStepAndStopsTheRun(t *testing.T) {
	sim := newSim(func(string) childPlan { return childPlan{dur: 1} })
	refusing := refusingChildren{sim}
	w := mustParse(t, `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x"},{"id":"c","task":"x","depends_on":["a"]}]}`)
	p, err := Prepare(w, Ports{Agents: sim, Children: refusing, Evidence: sim})
	require.NoError(t, err)
	out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-1", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusFailed, out.Status)
	require.Equal(t, StoppedBudget, out.StoppedBy)
	require.Equal(t, []string{"a", "b", "c"}, out.HeldSteps, "nothing started, nothing failed: all of it can run later")
	for _, st := range out.Steps {
		require.Equal(t, tools.SubagentNotStarted, st.SubagentStatus)
	}
}

// refusingChildren refuses every start as a spent session budget does.
type refusingChildren struct{ *simRuntime }

func (refusingChildren) Start(context.Context, StepRequest) (tools.SubagentView, error) {
	return tools.SubagentView{}, &budget.ExhaustedError{Account: "the session", Limit: budget.Limit{Tokens: 1}, Raise: "raise it"}
}

func TestDryRunWeighsTheWorstCaseAgainstTheBudget(t *testing.T) {
	spec := `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x"},{"id":"c","task":"x"}]`
	tests := []struct {
		name    string
		spec    string
		budgets Budgets
		verdict string
		note    string
	}{
		{"no budget", spec + `}`, Budgets{Step: budget.Limit{Tokens: 100}}, BudgetUnlimited, "the run has no budget"},
		{"unbounded steps", spec + `,"budget":{"tokens":1000}}`, Budgets{}, BudgetUnbounded, "the steps' children have no budget of their own"},
		{"within", spec + `,"budget":{"tokens":1000}}`, Budgets{Step: budget.Limit{Tokens: 300}}, BudgetWithin, "in the worst case 3 step runs spend 900 tokens, within the run's budget of 1,000 tokens"},
		{"may exceed", spec + `}`, Budgets{Run: budget.Limit{Tokens: 1000}, Step: budget.Limit{Tokens: 400}}, BudgetMayExceed, "3 step runs spend 1,200 tokens, more than the run's budget of 1,000 tokens"},
		{"cost", spec + `,"budget":{"cost":1}}`, Budgets{Step: budget.Limit{Tokens: 10, Cost: 0.5}}, BudgetMayExceed, "spend 30 tokens and a cost of 1.5, more than the run's budget of a cost of 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := newSim(durations(nil))
			ports := sim.ports()
			ports.Budgets = tt.budgets
			p, err := Prepare(mustParse(t, tt.spec), ports)
			require.NoError(t, err)
			d, err := p.DryRun(context.Background())
			require.NoError(t, err)
			require.Equal(t, tt.verdict, d.Budget.Verdict)
			require.Equal(t, 3, d.Budget.StepRuns)
			require.Contains(t, d.Budget.Note, tt.note)
			require.Contains(t, d.Output, "Budget ("+strings.ReplaceAll(tt.verdict, "_", " ")+"): ")
		})
	}
}

// A loop's steps count once per iteration: the worst case is its bound.
func TestDryRunCountsEachIterationOfALoop(t *testing.T) {
	spec := `{"budget":{"tokens":1000},"steps":[{"id":"a","task":"x"},{"id":"b","task":"x","depends_on":["a"]},{"id":"c","task":"x","depends_on":["b"]}],
		"loops":[{"id":"l","steps":["a","b"],"max_iterations":3}]}`
	ports := newSim(durations(nil)).ports()
	ports.Budgets = Budgets{Step: budget.Limit{Tokens: 150}}
	p, err := Prepare(mustParse(t, spec), ports)
	require.NoError(t, err)
	d, err := p.DryRun(context.Background())
	require.NoError(t, err)
	require.Equal(t, 7, d.Budget.StepRuns, "a and b three times each, c once")
	require.Equal(t, BudgetMayExceed, d.Budget.Verdict)
	require.Contains(t, d.Budget.Note, "in the worst case 7 step runs spend 1,050 tokens, more than the run's budget of 1,000 tokens")
}

func TestABudgetMustNotBeNegative(t *testing.T) {
	_, err := Parse(json.RawMessage(`{"budget":{"tokens":-1},"steps":[{"id":"a","task":"x"}]}`))
	require.ErrorContains(t, err, "budget: tokens (-1) and cost (0) must be positive")
}
