package runtime

import (
	"encoding/json"
	"time"
)

// EventType names what an Event records.
type EventType string

// Canonical event types: persisted in the Log with a seq.
const (
	EventUserMessage        EventType = "user_message"
	EventAssistantMessage   EventType = "assistant_message"
	EventReasoning          EventType = "reasoning"
	EventSubagent           EventType = "subagent_event"
	EventWorkflow           EventType = "workflow_event"
	EventProviderUsage      EventType = "provider_usage"
	EventTurnFailed         EventType = "turn_failed"
	EventToolCall           EventType = "tool_call"
	EventToolResult         EventType = "tool_result"
	EventPermissionDecision EventType = "permission_decision"
	// EventNotice is something the user should know that happened beside
	// the conversation: an MCP server that did not start, or stopped.
	EventNotice EventType = "notice"
	// EventSubagentSummaries is the compact summaries of children that
	// ended while their parent's model was not looking, folded into its
	// next model call (SubagentSummariesData).
	EventSubagentSummaries EventType = "subagent_summaries"
	// EventCompaction records that older messages of History were
	// replaced by a summary (CompactionData).
	EventCompaction EventType = "compaction"
)

// Ephemeral event types: live only, never in the Log.
const (
	EventTextDelta      EventType = "text_delta"
	EventReasoningDelta EventType = "reasoning_delta"
	EventStatus         EventType = "status"
	EventPlan           EventType = "plan"
	// EventUsage is the session's usage (UsageData).
	EventUsage EventType = "usage"
	// EventCompactionProgress is the start of a compaction, and
	// EventCompactionDelta a fragment of its summary as the model streams
	// it (CompactionProgressData).
	EventCompactionProgress EventType = "compaction_progress"
	EventCompactionDelta    EventType = "compaction_delta"
)

// Canonical reports whether events of type t are persisted.
func (t EventType) Canonical() bool {
	switch t {
	case EventTextDelta, EventReasoningDelta, EventStatus, EventPlan, EventUsage, EventCompactionProgress, EventCompactionDelta:
		return false
	}
	return true
}

// Event is the envelope of everything that happens in a Session. Seq is
// stamped (from 1) on canonical events only; ephemeral events carry 0.
//
// Data is nil in one case: the user_message of a prompt of a MiB or more
// that came with its text as JSON pieces (Prompt.TextJSON). Its data is
// written to the Log from those pieces, slices of the client's message,
// and never made whole in memory; observers see the event without it (no
// client is shown its own prompt live), and the Log has it.
type Event struct {
	ID        string          `json:"id"`
	SessionID string          `json:"session_id"`
	Seq       int64           `json:"seq"`
	TS        time.Time       `json:"ts"`
	Type      EventType       `json:"type"`
	Data      json.RawMessage `json:"data"`

	// pieces is the data to write when Data is nil (see above).
	pieces [][]byte
	// value is the data the event was emitted with (see Value).
	value any
}

// Value is the data the event was emitted with, as its emitter made it
// (a SubagentEventData, a workflows.WorkflowEvent, …), for an observer
// that would otherwise decode Data again: pixir run's view sees five
// events for each step of runs of thousands. It is nil for an event read
// from a Log, and good only during the observer's call: what it points to
// may change afterwards (Data does not).
func (e Event) Value() any { return e.value }
