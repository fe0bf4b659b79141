package workflows

import "slices"

// The bounds of everything a workflow shows. A workflow may have 10,000
// steps; what it sends to the model, writes to one Log line and sends to
// the editor in one message must not grow with it (issue 18). Each list
// below is cut, never silently: counts stay whole beside it, a truncated
// field says what was left out, and rendered text ends a cut list with
// "… and N more". What is cut is kept where it can be rebuilt: a plan is a
// pure function of its spec (in the Log, as the tool call's arguments),
// and a run's outcome is rebuilt from its workflow_events (Rebuild,
// pixir inspect), each step's outcome being one event of its own.
const (
	// maxListed bounds the lists that could grow with the square of the
	// steps: serialized steps and merge risks (of a dry run or a run),
	// seam obligations.
	maxListed = 50
	// maxListedSteps bounds the lists that grow with the steps: the
	// planned steps of a dry run, the step placements of its waves and
	// of a run's, the ids of each bucket of a run's outcome.
	maxListedSteps = 200
	// maxOutcomeSteps bounds the step outcomes a run's result lists: each
	// may carry a checkpoint bundle of a few KiB.
	maxOutcomeSteps = 100
	// maxPlanEntries bounds the plan a run shows (ACP sends it whole at
	// every update).
	maxPlanEntries = 100
	// maxTableRows bounds the outcome table, which the model reads too.
	maxTableRows = 60
	// Rendered text: waves, ids in one line, lines of a list.
	maxRenderedWaves = 30
	maxRenderedIDs   = 20
	maxRenderedLines = 20
	// Validation: problems listed, ids named in one message, cycles
	// traced, steps of one cycle written out (a longer one by its ends).
	maxProblems   = 100
	maxNamedIDs   = 20
	maxCycles     = 20
	maxCycleSteps = 40
)

// OutcomeTruncation says what a run's result leaves out of its lists.
type OutcomeTruncation struct {
	// Steps is the step outcomes not listed (steps lists those that are
	// not checkpoint_ready first).
	Steps int `json:"steps,omitempty"`
	// Waves is the waves not listed, or not in full.
	Waves int `json:"waves,omitempty"`
	// StepIDs is the ids left out of the buckets (usable_checkpoints,
	// failed_steps, …) and of safe_next_actions, all told: summary counts
	// each bucket whole.
	StepIDs         int `json:"step_ids,omitempty"`
	SeamObligations int `json:"seam_obligations,omitempty"`
	// Loops and KnownLimitations are the loop runs and limitations not
	// listed.
	Loops            int    `json:"loops,omitempty"`
	KnownLimitations int    `json:"known_limitations,omitempty"`
	Note             string `json:"note"`
}

// outcomeNote is OutcomeTruncation.Note.
const outcomeNote = "lists are cut to keep the result bounded; summary and merge_conflict_risk_count count everything. " +
	"Every step's outcome is in the session Log: pixir inspect SESSION_ID shows them all"

// Bounded is the outcome as run_workflow returns it (to the model, the
// Log and the editor): o itself when its lists fit, otherwise o with each
// list cut and Truncated saying how much. Output, the rendered table, is
// bounded already.
func (o Outcome) Bounded() Outcome {
	var t OutcomeTruncation
	if len(o.Steps) > maxOutcomeSteps {
		keep := tableRowsOf(o.Steps, maxOutcomeSteps)
		steps := make([]StepOutcome, 0, maxOutcomeSteps)
		for k := range o.Steps {
			if keep[k] {
				steps = append(steps, o.Steps[k])
			}
		}
		t.Steps = len(o.Steps) - len(steps)
		o.Steps = steps
	}
	o.Waves, t.Waves = cutWaves(o.Waves, maxListedSteps)
	ids := func(xs []string) []string {
		if len(xs) <= maxListedSteps {
			return xs
		}
		t.StepIDs += len(xs) - maxListedSteps
		return xs[:maxListedSteps]
	}
	o.UsableCheckpoints = ids(o.UsableCheckpoints)
	o.PartialSteps = ids(o.PartialSteps)
	o.FailedSteps = ids(o.FailedSteps)
	o.TimeoutSteps = ids(o.TimeoutSteps)
	o.HeldSteps = ids(o.HeldSteps)
	o.NeedsOrchestratorSteps = ids(o.NeedsOrchestratorSteps)
	o.SkippedSteps = ids(o.SkippedSteps)
	if len(o.SeamObligations) > maxListed {
		t.SeamObligations = len(o.SeamObligations) - maxListed
		o.SeamObligations = o.SeamObligations[:maxListed]
	}
	if len(o.KnownLimitations) > maxListed {
		t.KnownLimitations = len(o.KnownLimitations) - maxListed
		o.KnownLimitations = o.KnownLimitations[:maxListed]
	}
	if len(o.Loops) > maxListedSteps {
		t.Loops = len(o.Loops) - maxListedSteps
		o.Loops = o.Loops[:maxListedSteps]
	}
	actions := slices.Clone(o.SafeNextActions)
	for k := range actions {
		actions[k].StepIDs = ids(actions[k].StepIDs)
	}
	o.SafeNextActions = actions
	if t != (OutcomeTruncation{}) {
		t.Note = outcomeNote
		o.Truncated = &t
	}
	return o
}

// cutWaves keeps the first waves while they place at most limit steps in
// all, the last of them cut to fit, and says how many waves are missing
// or cut.
func cutWaves(waves [][]string, limit int) ([][]string, int) {
	listed := 0
	for k, wave := range waves {
		if listed+len(wave) > limit {
			cut := slices.Clone(waves[:k+1])
			cut[k] = wave[:limit-listed]
			if len(cut[k]) == 0 {
				cut = cut[:k]
			}
			return cut, len(waves) - k
		}
		listed += len(wave)
	}
	return waves, 0
}
