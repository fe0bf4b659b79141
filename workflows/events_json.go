package workflows

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/pixir-go/pixir/internal/jsonraw"
)

// AppendJSON appends e as json.Marshal writes it, byte for byte (tested
// against it): a workflow_event is two of the five lines a step adds to
// its parent's Log, and json.Marshal's reflection over its two dozen
// members was most of writing them. Its nested members (the spec, a
// condition's findings, a loop's outcome, a commit) are written by
// json.Marshal; a step's outcome by appendStepOutcome.
func (e *WorkflowEvent) AppendJSON(b []byte) ([]byte, error) {
	str := func(b []byte, key, v string) []byte {
		if v == "" {
			return b
		}
		return jsonraw.AppendStringHTML(append(b, key...), v)
	}
	num := func(b []byte, key string, v int64) []byte {
		if v == 0 {
			return b
		}
		return strconv.AppendInt(append(b, key...), v, 10)
	}
	var err error
	nested := func(b []byte, key string, v any) []byte {
		if err != nil {
			return b
		}
		var raw []byte
		if raw, err = json.Marshal(v); err != nil {
			return b
		}
		return append(append(b, key...), raw...)
	}
	if o := e.Outcome; o != nil {
		// Room for the outcome at once, instead of the buffer doubling a
		// few times on the way (a step's is some 900 bytes).
		b = slices.Grow(b, outcomeSizeHint(o))
	}
	b = jsonraw.AppendStringHTML(append(b, `{"kind":`...), e.Kind)
	b = jsonraw.AppendStringHTML(append(b, `,"workflow_id":`...), e.WorkflowID)
	b = str(b, `,"tool_call_id":`, e.ToolCallID)
	if e.Workflow != nil {
		b = nested(b, `,"workflow":`, e.Workflow)
	}
	if e.Before != nil {
		b = nested(b, `,"before":`, e.Before)
	}
	b = str(b, `,"step_id":`, e.StepID)
	b = str(b, `,"run":`, e.Run)
	b = num(b, `,"wave":`, int64(e.Wave))
	b = str(b, `,"subagent_id":`, e.SubagentID)
	b = str(b, `,"held_reason":`, e.HeldReason)
	if len(e.BlockedBy) > 0 {
		b = nested(b, `,"blocked_by":`, e.BlockedBy)
	}
	b = str(b, `,"skip_reason":`, e.SkipReason)
	b = str(b, `,"condition":`, e.Condition)
	if e.Result != nil {
		b = strconv.AppendBool(append(b, `,"result":`...), *e.Result)
	}
	if len(e.Seen) > 0 {
		b = nested(b, `,"seen":`, e.Seen)
	}
	b = num(b, `,"items":`, int64(e.Items))
	b = num(b, `,"max_items":`, int64(e.MaxItems))
	b = str(b, `,"loop":`, e.Loop)
	b = num(b, `,"iteration":`, int64(e.Iteration))
	b = str(b, `,"decision":`, e.Decision)
	if len(e.Value) > 0 {
		b = nested(b, `,"value":`, e.Value)
	}
	if len(e.Values) > 0 {
		b = nested(b, `,"values":`, e.Values)
	}
	if e.LoopOutcome != nil {
		b = nested(b, `,"loop_outcome":`, e.LoopOutcome)
	}
	if e.Commit != nil {
		b = nested(b, `,"commit":`, e.Commit)
	}
	if e.Outcome != nil && err == nil {
		b, err = appendStepOutcome(append(b, `,"outcome":`...), e.Outcome)
	}
	b = str(b, `,"status":`, string(e.Status))
	b = str(b, `,"stopped_by":`, e.StoppedBy)
	b = num(b, `,"elapsed_ms":`, e.ElapsedMS)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}
