package runtime

import (
	"encoding/json"
	"strconv"
	"sync"

	"github.com/pixir-go/pixir/internal/jsonraw"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// The Data of each event type. The presenter in acp/ decodes these; the Log
// keeps them as JSON, so field names are a persisted contract.

// UserMessageData is a prompt. Content keeps the client's content blocks
// as sent (opaque to the runtime) so a replay can show them unchanged; Text is
// what the model reads.
type UserMessageData struct {
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content,omitempty"`
	// textJSON is Prompt.TextJSON: Text as JSON string pieces.
	textJSON [][]byte
}

// AssistantMessageData is one model response. Partial is set when the turn
// was cancelled while it streamed: Text is what was streamed until then.
//
// StopReason is set on the last event of a turn that stopped other than
// end_turn (cancelled, max_turn_requests, max_tokens): an assistant
// message with no text and no calls, which is no message of the model's
// (History leaves it out), recorded so that the Log says why the turn
// stopped (ACP's stop reason). Logs before 2026-11-25 have none.
type AssistantMessageData struct {
	Text       string              `json:"text"`
	ToolCalls  []provider.ToolCall `json:"tool_calls,omitempty"`
	Partial    bool                `json:"partial,omitempty"`
	StopReason StopReason          `json:"stop_reason,omitempty"`
}

// ReasoningData is the model's reasoning for one response.
type ReasoningData struct {
	Text string `json:"text"`
}

// TextDeltaData is a streamed fragment (text_delta and reasoning_delta).
type TextDeltaData struct {
	Text string `json:"text"`
}

// ToolCallData announces a tool call before anything is decided about it.
type ToolCallData struct {
	ToolCallID string           `json:"tool_call_id"`
	Name       string           `json:"name"`
	Arguments  json.RawMessage  `json:"arguments"`
	Title      string           `json:"title"`
	Kind       tools.Kind       `json:"kind"`
	Posture    tools.Posture    `json:"posture,omitempty"`
	Locations  []tools.Location `json:"locations,omitempty"`
}

// ToolResultData is the end of a tool call. Result is the envelope the model
// read.
type ToolResultData struct {
	ToolCallID string           `json:"tool_call_id"`
	Name       string           `json:"name"`
	Result     tools.Result     `json:"result"`
	Diffs      []DiffData       `json:"diffs,omitempty"`
	Locations  []tools.Location `json:"locations,omitempty"`
	// TerminalID is the editor terminal the call ran in, if any.
	TerminalID string `json:"terminal_id,omitempty"`
	// Blocks are what an MCP tool returned for the user to see (text,
	// images, audio, resources), kept so a replay shows them too.
	Blocks    []tools.Block `json:"blocks,omitempty"`
	ElapsedMS int64         `json:"elapsed_ms"`
	// Seen is what the model has now seen of a file (a read, or what its
	// write or edit left there): opened again, the session knows it from
	// here, so a later write is checked against it (tools.Seen).
	Seen *tools.Seen `json:"seen,omitempty"`
	// Interrupted marks the result recorded for a call that never got one
	// (the process ended, or the Log could not be written, first).
	Interrupted bool `json:"interrupted,omitempty"`
}

// DiffData is a tools.Diff as persisted.
type DiffData struct {
	Path    string  `json:"path"`
	OldText *string `json:"old_text,omitempty"`
	NewText string  `json:"new_text"`
}

// PlanData is the whole current plan (ephemeral plan events) of one of a
// session's plans: the model's own (AgentPlanID) or a workflow run's
// ("workflow-" and the id of the call that runs it). Several can be shown
// at once to a client that keeps plans by id.
type PlanData struct {
	PlanID  string            `json:"plan_id,omitempty"`
	Entries []tools.PlanEntry `json:"entries"`
}

// AgentPlanID is the id of the plan a session's model keeps (the plan
// tool).
const AgentPlanID = "plan"

// StatusData is the ephemeral progress of a tool call.
type StatusData struct {
	ToolCallID string `json:"tool_call_id,omitempty"`
	Status     string `json:"status"`
}

// ToolProgressData is the ephemeral progress of a running tool call (an
// MCP server's progress notifications).
type ToolProgressData struct {
	ToolCallID string `json:"tool_call_id"`
	Status     string `json:"status"`
	Activity   string `json:"activity"`
}

// PermissionDecisionData records who decided what about a tool call.
type PermissionDecisionData struct {
	ToolCallID string `json:"tool_call_id"`
	Tool       string `json:"tool"`
	Mode       Mode   `json:"mode"`
	// Decision is allowed, denied or cancelled.
	Decision string `json:"decision"`
	// Source is mode (the mode decided), user (the client was asked),
	// remembered (an earlier allow_always), or dry_run (a mutation's dry
	// run, allowed in every mode).
	Source string `json:"source"`
	Option string `json:"option,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// TurnFailedData records a turn that ended on a provider failure.
type TurnFailedData struct {
	Kind    tools.ErrorKind `json:"kind"`
	Message string          `json:"message"`
}

// ProviderUsageData is token accounting for one model call, and its cost
// where the configuration has a price for the model.
type ProviderUsageData struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	provider.Usage
	Cost     float64 `json:"cost,omitempty"`
	Currency string  `json:"currency,omitempty"`
	// Purpose says why the call was made when it was not a turn's:
	// "compaction".
	Purpose string `json:"purpose,omitempty"`
	// RequestBytes is what Pixir weighed the request at (its system
	// prompt, tools and History, in bytes): with InputTokens, the
	// correction of its token estimate, which a session loaded again
	// folds from the Log. Logs before 2026-11-25 have none.
	RequestBytes int `json:"request_bytes,omitempty"`
	// Estimated is set when the server reported no usage for the call:
	// its tokens are Pixir's estimate from the request's and the answer's
	// sizes (estimatedUsage), so that budgets still hold.
	Estimated bool `json:"estimated,omitempty"`
}

// appendJSON appends d, whose Cost is 0, as json.Marshal writes it (a
// child's turn writes one per model call).
func (d ProviderUsageData) appendJSON(b []byte) []byte {
	b = jsonraw.AppendStringHTML(append(b, `{"provider":`...), d.Provider)
	b = jsonraw.AppendStringHTML(append(b, `,"model":`...), d.Model)
	b = strconv.AppendInt(append(b, `,"input_tokens":`...), int64(d.InputTokens), 10)
	b = strconv.AppendInt(append(b, `,"output_tokens":`...), int64(d.OutputTokens), 10)
	if d.ContextWindow != 0 {
		b = strconv.AppendInt(append(b, `,"context_window":`...), int64(d.ContextWindow), 10)
	}
	if d.Currency != "" {
		b = jsonraw.AppendStringHTML(append(b, `,"currency":`...), d.Currency)
	}
	if d.Purpose != "" {
		b = jsonraw.AppendStringHTML(append(b, `,"purpose":`...), d.Purpose)
	}
	if d.RequestBytes != 0 {
		b = strconv.AppendInt(append(b, `,"request_bytes":`...), int64(d.RequestBytes), 10)
	}
	if d.Estimated {
		b = append(b, `,"estimated":true`...)
	}
	return append(b, '}')
}

// encodeEventData is json.Marshal with a fast path for the event data that
// carries a whole prompt or a model's answer, which can be tens of megabytes:
// json.Marshal would escape the text with HTML escaping, then check and
// copy its own output once more. What it writes decodes to the same value.
//
// A prompt of largeEvent or more whose text comes as JSON pieces is not
// encoded at all: its data is returned as pieces (raw is nil), the text's
// and the content's slices of the client's message among them, for the
// Log to write one after the other.
func encodeEventData(data any) (raw json.RawMessage, pieces [][]byte, err error) {
	switch d := data.(type) {
	case UserMessageData:
		if d.textJSON != nil {
			if pieces := userMessagePieces(d); piecesLen(pieces) >= largeEvent {
				return nil, pieces, nil
			}
		}
		b := make([]byte, 0, jsonraw.QuotedLen(len(d.Text))+len(d.Content)+32)
		b = append(b, `{"text":`...)
		b = jsonraw.AppendString(b, d.Text)
		if len(d.Content) > 0 {
			b = append(b, `,"content":`...)
			b = append(b, d.Content...)
		}
		return append(b, '}'), nil, nil
	case SubagentEventData:
		raw, err := d.appendJSON(make([]byte, 0, d.sizeHint()))
		return raw, nil, err
	case workflows.WorkflowEvent:
		return appendWorkflowEvent(d)
	case ProviderUsageData:
		if d.Cost == 0 { // a float, as encoding/json formats it, is left to it
			return d.appendJSON(make([]byte, 0, 128+len(d.Provider)+len(d.Model)+len(d.Currency)+len(d.Purpose))), nil, nil
		}
	case SubagentProgressData: // a child's first answer, every step of a workflow
		b := make([]byte, 0, jsonraw.QuotedLen(len(d.SubagentID))+jsonraw.QuotedLen(len(d.Activity))+28)
		b = jsonraw.AppendStringHTML(append(b, `{"subagent_id":`...), d.SubagentID)
		b = jsonraw.AppendStringHTML(append(b, `,"activity":`...), d.Activity)
		return append(b, '}'), nil, nil
	case TextDeltaData:
		return appendTextObject(d.Text), nil, nil
	case ReasoningData:
		return appendTextObject(d.Text), nil, nil
	case AssistantMessageData:
		b := make([]byte, 0, jsonraw.QuotedLen(len(d.Text))+32)
		b = append(b, `{"text":`...)
		b = jsonraw.AppendString(b, d.Text)
		if len(d.ToolCalls) > 0 {
			calls, err := json.Marshal(d.ToolCalls)
			if err != nil {
				return nil, nil, err
			}
			b = append(b, `,"tool_calls":`...)
			b = append(b, calls...)
		}
		if d.Partial {
			b = append(b, `,"partial":true`...)
		}
		if d.StopReason != "" {
			b = jsonraw.AppendString(append(b, `,"stop_reason":`...), string(d.StopReason))
		}
		return append(b, '}'), nil, nil
	}
	raw, err = json.Marshal(data)
	return raw, nil, err
}

// workflowEventScratch holds the buffers workflow events are written in
// before they are copied out at their length: a step's outcome is over a
// kilobyte and a step_scheduled a tenth of that, so no first size fits
// both, and growing from a guess allocated and copied each outcome three
// times.
var workflowEventScratch = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// maxScratch is the largest buffer kept for the next event: a
// workflow_started of thousands of steps is megabytes, written once.
const maxScratch = 64 << 10

func appendWorkflowEvent(d workflows.WorkflowEvent) (json.RawMessage, [][]byte, error) {
	scratch := workflowEventScratch.Get().(*[]byte)
	b, err := d.AppendJSON((*scratch)[:0])
	var raw json.RawMessage
	if err == nil {
		raw = make(json.RawMessage, len(b))
		copy(raw, b)
	}
	if cap(b) <= maxScratch {
		*scratch = b[:0]
		workflowEventScratch.Put(scratch)
	}
	return raw, nil, err
}

// userMessagePieces is a prompt's data, {"text":…,"content":…}, as pieces:
// its text's pieces and its content as they are.
func userMessagePieces(d UserMessageData) [][]byte {
	pieces := make([][]byte, 0, len(d.textJSON)+4)
	pieces = append(pieces, []byte(`{"text":`))
	pieces = append(pieces, d.textJSON...)
	if len(d.Content) > 0 {
		pieces = append(pieces, []byte(`,"content":`), d.Content)
	}
	return append(pieces, []byte(`}`))
}

func piecesLen(pieces [][]byte) int {
	n := 0
	for _, p := range pieces {
		n += len(p)
	}
	return n
}

// appendTextObject encodes {"text": text}.
func appendTextObject(text string) json.RawMessage {
	b := make([]byte, 0, jsonraw.QuotedLen(len(text))+10)
	b = append(b, `{"text":`...)
	b = jsonraw.AppendString(b, text)
	return append(b, '}')
}

// NoticeData is a notice: Source says what it is about ("mcp"), Server
// which MCP server; Severity is info, warning or error (ACP's notice
// severities).
type NoticeData struct {
	Source   string `json:"source"`
	Server   string `json:"server,omitempty"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	Detail   string `json:"detail,omitempty"`
	// TokenCorrection, in the notice that starts a fork (Source "fork"),
	// is the correction of the token estimate its source's provider
	// counts made (Session.calib): the fork's requests are the source's
	// conversation, though the source's provider_usage is not copied.
	TokenCorrection float64 `json:"token_correction,omitempty"`
}
