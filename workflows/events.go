package workflows

// Kinds of workflow_event (data.kind), the canonical evidence of a run in
// the parent's Log, beside the children's subagent_events.
const (
	EventWorkflowStarted   = "workflow_started"
	EventStepScheduled     = "step_scheduled"
	EventCheckpointDecided = "checkpoint_decided"
	EventStepHeld          = "step_held"
	EventWorkflowFinished  = "workflow_finished"
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

	// step_scheduled, step_held: the step.
	StepID string `json:"step_id,omitempty"`
	// step_scheduled: the dispatch round it started in, and its child.
	Wave       int    `json:"wave,omitempty"`
	SubagentID string `json:"subagent_id,omitempty"`
	// step_held: why, and the dependencies it waited for.
	HeldReason string   `json:"held_reason,omitempty"`
	BlockedBy  []string `json:"blocked_by,omitempty"`

	// checkpoint_decided: the step's outcome.
	Outcome *StepOutcome `json:"outcome,omitempty"`

	// workflow_finished: the verdict and the run's wall time.
	Status    Status `json:"status,omitempty"`
	StoppedBy string `json:"stopped_by,omitempty"`
	ElapsedMS int64  `json:"elapsed_ms,omitempty"`
}
