package workflows

import (
	"cmp"
	"encoding/json"
	"strings"
)

// Kinds of workflow_event (data.kind), the canonical evidence of a run in
// the parent's Log, beside the children's subagent_events.
const (
	EventWorkflowStarted   = "workflow_started"
	EventStepScheduled     = "step_scheduled"
	EventCheckpointDecided = "checkpoint_decided"
	// EventStepMerging: a ready isolated step's on_ready merge begins;
	// its outcome as decided before the merge. A run whose process ended
	// before its checkpoint_decided (mid-merge, or just after) is merged
	// again when resumed, not run again: its work may be in the
	// workspace already (the merge's journal finishes a merge cut off).
	EventStepMerging      = "step_merging"
	EventStepHeld         = "step_held"
	EventWorkflowFinished = "workflow_finished"

	// The control flow's decisions (issue 12).
	EventConditionDecided  = "condition_decided"  // a when or until, with the values it saw
	EventStepSkipped       = "step_skipped"       // a run not taken: its condition was false
	EventFanOut            = "fan_out"            // a step's instances, one per item
	EventIterationStarted  = "iteration_started"  // a loop's iteration begins
	EventIterationFinished = "iteration_finished" // and ends: next, or the loop's end and why
	EventLoopFinished      = "loop_finished"      // a loop's outcome

	// EventCommitted: what became of a run's commit (commit.go).
	EventCommitted = "committed"
)

// WorkflowEvent is the Data of a workflow_event. Which fields are set
// depends on Kind; together, a run's events are enough to rebuild its
// Outcome from the Log alone (Rebuild).
type WorkflowEvent struct {
	Kind       string `json:"kind"`
	WorkflowID string `json:"workflow_id"`
	ToolCallID string `json:"tool_call_id,omitempty"`

	// workflow_started: the normalised spec.
	Workflow *Workflow `json:"workflow,omitempty"`
	// workflow_started: the record of the user's uncommitted work when the
	// run started (of a resumed run, the record of the run it resumes),
	// for its commit: a run resumed after a kill takes only the run's part
	// of a file the user had changed too. Absent: no record was made (the
	// workflow has no commit, or the Log is of an older Pixir).
	Before *BeforeRun `json:"before,omitempty"`

	// The step, and its run (check-plan#2, make[3]; a plain step's run is
	// its id).
	StepID string `json:"step_id,omitempty"`
	Run    string `json:"run,omitempty"`
	// step_scheduled: its wave (dependency level, as in the dry run), and its child.
	Wave       int    `json:"wave,omitempty"`
	SubagentID string `json:"subagent_id,omitempty"`
	// step_held: why, and the dependencies it waited for.
	HeldReason string   `json:"held_reason,omitempty"`
	BlockedBy  []string `json:"blocked_by,omitempty"`
	// step_skipped: why.
	SkipReason string `json:"skip_reason,omitempty"`

	// condition_decided: which condition (when, until), its result and
	// what it saw; iteration_finished carries the until's too.
	Condition string          `json:"condition,omitempty"`
	Result    *bool           `json:"result,omitempty"`
	Seen      []ConditionSeen `json:"seen,omitempty"`

	// fan_out: how many instances, and the cap.
	Items    int `json:"items,omitempty"`
	MaxItems int `json:"max_items,omitempty"`

	// iteration_started, iteration_finished, loop_finished: the loop, its
	// run (Run: plan-review, or escalation#2 inside another loop's
	// iteration 2) and the iteration.
	Loop      string `json:"loop,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
	// iteration_finished: what the end of the iteration decided (next,
	// satisfied, converged, exhausted, held, skipped, stopped) and the
	// converge value it saw (Value), or each of them when the loop
	// converges on a list (Values).
	Decision string          `json:"decision,omitempty"`
	Value    json.RawMessage `json:"value,omitempty"`
	Values   []ConvergeSeen  `json:"values,omitempty"`
	// loop_finished: the loop's outcome.
	LoopOutcome *LoopOutcome `json:"loop_outcome,omitempty"`

	// committed: the run's commit.
	Commit *CommitReport `json:"commit,omitempty"`

	// checkpoint_decided: the step's outcome; step_merging: its outcome
	// before its merge.
	Outcome *StepOutcome `json:"outcome,omitempty"`

	// workflow_finished: the verdict and the run's wall time.
	Status    Status `json:"status,omitempty"`
	StoppedBy string `json:"stopped_by,omitempty"`
	ElapsedMS int64  `json:"elapsed_ms,omitempty"`
}

// ConvergeSeen is one of a loop's converge values as an iteration's end
// saw it: the value, the run it came from, and whether it is the same as
// in the previous iteration.
type ConvergeSeen struct {
	// Converge is the value as written: `check-plan /findings`.
	Converge string `json:"converge"`
	Run      string `json:"run"`
	// Value is canonical; absent when the payload had none.
	Value json.RawMessage `json:"value,omitempty"`
	Same  bool            `json:"same"`
}

// ConditionSeen is one test of a condition as it was decided: what it
// looked at and what it found.
type ConditionSeen struct {
	// Condition is the test as written: `check-plan /verdict = "ACCEPTABLE"`.
	Condition string `json:"condition"`
	// Path is the JSON Pointer of a payload test, "" for a test of a
	// status alone.
	Path string `json:"path,omitempty"`
	// Run is the run it looked at (the last iteration's, for a step in a
	// loop that ended); Status that run's checkpoint status.
	Run    string           `json:"run,omitempty"`
	Status CheckpointStatus `json:"status,omitempty"`
	// Value is the payload value at the condition's path, canonical;
	// absent when there is none.
	Value  json.RawMessage `json:"value,omitempty"`
	Result bool            `json:"result"`
}

// text is what was seen, for people: `check-plan#2 /verdict = "ACCEPTABLE"
// (saw "NEEDS WORK")`.
func (s ConditionSeen) text() string {
	saw := string(s.Status)
	if s.Value != nil {
		saw = string(s.Value)
	} else if s.Path != "" {
		// A payload test that found nothing: said as such, not as the
		// run's status, which would read as the value.
		saw = "nothing at " + s.Path
		if s.Status != "" {
			saw += "; " + cmp.Or(s.Run, "it") + " is " + string(s.Status)
		}
	}
	if saw == "" {
		saw = "nothing"
	}
	return s.Condition + " (saw " + saw + ")"
}

// UnmarshalJSON reads a ConditionSeen, also as a Log written before Path
// was recorded has it: there the path is read from the condition's text.
func (s *ConditionSeen) UnmarshalJSON(b []byte) error {
	type plain ConditionSeen
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	if s.Path == "" {
		s.Path = conditionPath(s.Condition)
	}
	return nil
}

// conditionPath is the JSON Pointer a leaf's text tests (`review /verdict
// = "BLOCK"`, `review status in [failed] and /notes exists`), as
// conditionText writes it, "" for a test of a status alone: a step id has
// no space, a status no slash. Only Logs written before ConditionSeen had
// its Path need it.
func conditionPath(text string) string {
	_, rest, ok := strings.Cut(text, " /")
	if !ok {
		return ""
	}
	end := len(rest)
	for _, test := range []string{" = ", " in [", " contains ", " exists", " is absent"} {
		if i := strings.Index(rest, test); i >= 0 && i < end {
			end = i
		}
	}
	return "/" + rest[:end]
}

// seenText is what a decision saw, in one line.
func seenText(seen []ConditionSeen) string {
	parts := make([]string, len(seen))
	for i, s := range seen {
		mark := "false"
		if s.Result {
			mark = "true"
		}
		parts[i] = s.text() + ": " + mark
	}
	return strings.Join(parts, "; ")
}
