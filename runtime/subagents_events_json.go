package runtime

import (
	"encoding/json"
	"strconv"

	"github.com/pixir-go/pixir/internal/jsonraw"
)

// sizeHint is the length of d's JSON when its strings need no more
// escaping than QuotedLen allows for: its buffer is made once. A usage counts its keys and numbers (every finished child
// has one: without them its buffer was regrown); an error counts its
// message, and file changes (rare) may still grow the buffer.
func (d *SubagentEventData) sizeHint() int {
	const keys = 280 // every key, quote and separator, and the numbers
	quoted := func(v string) int { return jsonraw.QuotedLen(len(v)) }
	n := keys + len(d.Event) + len(d.ParentID) + len(d.SubagentID) + len(d.ChildSessionID) + len(d.ChildLog) + len(d.ParentToolCallID) +
		len(d.Agent) + len(d.Name) + quoted(d.Task) + len(d.Status) + len(d.Workspace) + len(d.WorkspaceMode) + quoted(d.Input) + jsonraw.QuotedLen(len(d.Summary))
	if d.Usage != nil {
		const usageKeys = 200 // its keys and five numbers of up to 20 digits
		n += usageKeys + len(d.Usage.Currency)
	}
	if d.Error != nil {
		n += 64 + len(d.Error.Kind) + jsonraw.QuotedLen(len(d.Error.Message))
	}
	return n
}

// appendJSON appends d as json.Marshal writes it, byte for byte (tested
// against it): a subagent_event is three of the five lines a workflow
// step adds to its parent's Log, and json.Marshal's reflection was the
// larger part of writing them. Its rare nested members (an error, file
// changes, a usage with a cost) are written by json.Marshal.
func (d *SubagentEventData) appendJSON(b []byte) ([]byte, error) {
	str := func(b []byte, key, v string, omitEmpty bool) []byte {
		if omitEmpty && v == "" {
			return b
		}
		b = append(b, key...)
		return jsonraw.AppendStringHTML(b, v)
	}
	nested := func(b []byte, key string, v any) ([]byte, error) {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return append(append(b, key...), raw...), nil
	}
	b = str(b, `{"event":`, string(d.Event), false)
	b = str(b, `,"parent_id":`, d.ParentID, false)
	b = str(b, `,"subagent_id":`, d.SubagentID, false)
	b = str(b, `,"child_session_id":`, d.ChildSessionID, true)
	b = str(b, `,"child_log":`, d.ChildLog, true)
	b = str(b, `,"parent_tool_call_id":`, d.ParentToolCallID, true)
	b = str(b, `,"agent":`, d.Agent, false)
	b = str(b, `,"name":`, d.Name, true)
	b = str(b, `,"task":`, d.Task, true)
	b = strconv.AppendInt(append(b, `,"depth":`...), int64(d.Depth), 10)
	b = str(b, `,"status":`, string(d.Status), false)
	b = str(b, `,"workspace":`, d.Workspace, false)
	b = str(b, `,"workspace_mode":`, d.WorkspaceMode, false)
	b = str(b, `,"input":`, d.Input, true)
	b = str(b, `,"summary":`, d.Summary, true)
	var err error
	if d.Error != nil {
		if b, err = nested(b, `,"error":`, d.Error); err != nil {
			return nil, err
		}
	}
	if d.Changes != nil {
		if b, err = nested(b, `,"changes":`, d.Changes); err != nil {
			return nil, err
		}
	}
	b = strconv.AppendInt(append(b, `,"elapsed_ms":`...), d.ElapsedMS, 10)
	switch u := d.Usage; {
	case u == nil:
	case u.Cost != 0: // a float, as encoding/json formats it
		if b, err = nested(b, `,"usage":`, u); err != nil {
			return nil, err
		}
	default:
		b = strconv.AppendInt(append(b, `,"usage":{"input_tokens":`...), u.InputTokens, 10)
		b = strconv.AppendInt(append(b, `,"output_tokens":`...), u.OutputTokens, 10)
		b = strconv.AppendInt(append(b, `,"model_calls":`...), u.ModelCalls, 10)
		b = str(b, `,"currency":`, u.Currency, true)
		if u.Unpriced != 0 {
			b = strconv.AppendInt(append(b, `,"unpriced_calls":`...), u.Unpriced, 10)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}
