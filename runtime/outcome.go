package runtime

import (
	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/tools"
)

// Statuses of a headless turn (TurnOutcome), as for workflows: partial
// work is never reported as completed.
const (
	TurnCompleted = "completed"
	TurnPartial   = "partial"
	TurnFailed    = "failed"
)

// TurnOutcome is one turn run without an editor (pixir run, pixir resume):
// how it ended and what the model answered.
type TurnOutcome struct {
	SessionID string `json:"session_id"`
	// Status is completed (the model ended its turn), partial (cancelled,
	// stopped at the limit of model calls, or by a spent budget) or failed (the provider
	// failed, or the turn could not run).
	Status     string     `json:"status"`
	StopReason StopReason `json:"stop_reason,omitempty"`
	// Text is the answer as the model streamed it, all of its messages.
	Text string `json:"text"`
	// ToolCalls counts the tool calls of the turn; FailedToolCalls those
	// whose result was not ok.
	ToolCalls       int            `json:"tool_calls"`
	FailedToolCalls int            `json:"failed_tool_calls"`
	Error           *tools.Failure `json:"error,omitempty"`
	// Usage is what the turn's model calls spent, its Subagents' included.
	Usage budget.Usage `json:"usage"`
}
