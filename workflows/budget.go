package workflows

import (
	"fmt"
	"strings"

	"github.com/pixir-go/pixir/budget"
)

// Budgets are the configuration's budgets that apply to a run: Run for a
// run whose spec names none (or limits only one measure), Step what each
// step's child may spend (a Subagent's budget, which the runtime
// enforces), WarnAt the soft limit.
type Budgets struct {
	Run    budget.Limit
	Step   budget.Limit
	WarnAt float64
	// Spent, when set, reports whether a budget above the run's is spent
	// (the session's, which every step's model calls count against too):
	// nil, or the error saying which. A run stops on it as on its own.
	Spent func() error
}

// spent reports whether the run may start or call nothing more: its own
// budget, or one above it (Budgets.Spent), is spent.
func (r *runner) spent() error {
	if err := r.account.Exhausted(); err != nil {
		return err
	}
	if f := r.budgets.Spent; f != nil {
		return f()
	}
	return nil
}

// budgetLimit is what the run may spend: the spec's budget, the
// configuration's where the spec leaves a measure out.
func (p *Prepared) budgetLimit() budget.Limit {
	if p.w.Budget == nil {
		return p.ports.Budgets.Run
	}
	return p.w.Budget.Or(p.ports.Budgets.Run)
}

// runAccount opens the account a run's children are charged to.
func (p *Prepared) runAccount(id string) *budget.Account {
	raise := fmt.Sprintf("raise the run's budget (budget.tokens or budget.cost of run_workflow, or workflow_tokens in [budget] of config.toml) "+
		"and call run_workflow again with resume_from %q: its checkpoint_ready steps are reused", id)
	return budget.NewAccount("workflow "+id, raise, p.budgetLimit(), p.ports.Budgets.WarnAt)
}

// Budget verdicts of a dry run.
const (
	BudgetUnlimited = "unlimited"  // the run has no budget
	BudgetUnbounded = "unbounded"  // steps have no budget of their own: the worst case is unknown
	BudgetWithin    = "within"     // the worst case fits
	BudgetMayExceed = "may_exceed" // the worst case does not fit: the run may end partial
)

// BudgetEstimate is a dry run's worst case weighed against the run's
// budget: every step run spends all its child may (the Subagent budget).
type BudgetEstimate struct {
	// Limit is the run's budget (zero: none).
	Limit budget.Limit `json:"limit"`
	// StepRuns is the most step runs the run may make (the plan's
	// max_runs).
	StepRuns int `json:"worst_case_step_runs"`
	// StepLimit is what one step's child may spend (zero: no limit).
	StepLimit budget.Limit `json:"step_limit"`
	// WorstCase is StepRuns times StepLimit, on the measures StepLimit
	// bounds.
	WorstCase budget.Limit `json:"worst_case"`
	// Verdict is unlimited, unbounded, within or may_exceed.
	Verdict string `json:"verdict"`
	Note    string `json:"note"`
}

// estimateBudget weighs the worst case of p's run, stepRuns step runs
// (the plan's MaxRuns: every loop to its bound, every fan-out to its cap),
// against its budget.
func (p *Prepared) estimateBudget(stepRuns int) BudgetEstimate {
	e := BudgetEstimate{Limit: p.budgetLimit(), StepRuns: stepRuns, StepLimit: p.ports.Budgets.Step}
	n := int64(e.StepRuns)
	if e.StepLimit.Tokens > 0 {
		e.WorstCase.Tokens = n * e.StepLimit.Tokens
	}
	if e.StepLimit.Cost > 0 {
		e.WorstCase.Cost = float64(n) * e.StepLimit.Cost
	}
	runs := fmt.Sprintf("%d step runs", e.StepRuns)
	switch {
	case e.Limit.IsZero():
		e.Verdict = BudgetUnlimited
		e.Note = fmt.Sprintf("the run has no budget (budget of run_workflow, or workflow_tokens in [budget] of config.toml); %s, each bounded by %s", runs, orNoLimit(e.StepLimit))
	case (e.Limit.Tokens > 0 && e.StepLimit.Tokens <= 0) || (e.Limit.Cost > 0 && e.StepLimit.Cost <= 0):
		e.Verdict = BudgetUnbounded
		e.Note = fmt.Sprintf("the steps' children have no budget of their own on what the run's budget (%s) limits, so the worst case of %s is not known; "+
			"at the budget the run stops and ends partial (budget_exhausted), resumable with resume_from", e.Limit, runs)
	case (e.Limit.Tokens > 0 && e.WorstCase.Tokens > e.Limit.Tokens) || (e.Limit.Cost > 0 && e.WorstCase.Cost > e.Limit.Cost):
		e.Verdict = BudgetMayExceed
		e.Note = fmt.Sprintf("in the worst case %s spend %s, more than the run's budget of %s: it may stop and end partial (budget_exhausted), "+
			"resumable with resume_from once the budget is raised", runs, e.WorstCase, e.Limit)
	default:
		e.Verdict = BudgetWithin
		e.Note = fmt.Sprintf("in the worst case %s spend %s, within the run's budget of %s", runs, e.WorstCase, e.Limit)
	}
	return e
}

func orNoLimit(l budget.Limit) string {
	if l.IsZero() {
		return "no limit"
	}
	return l.String()
}

// renderBudget is the estimate as the dry run's text says it.
func renderBudget(e BudgetEstimate) string {
	return "\nBudget (" + strings.ReplaceAll(e.Verdict, "_", " ") + "): " + e.Note + ".\n"
}
