package workflows

import (
	"encoding/json"
	"strconv"

	"github.com/pixir-go/pixir/internal/jsonraw"
)

// outcomeEncoder writes a step's outcome and its bundle as json.Marshal
// writes them, byte for byte (tested against it): every step run's
// checkpoint_decided event carries both, and reflecting over their
// three dozen members was most of that event's cost. The members a plain
// run leaves empty (an error, conditions, changes, a merge, a write-set
// violation, a payload, a priced usage) are still written by json.Marshal
// when set. The first error stays and later members are not written.
type outcomeEncoder struct {
	b   []byte
	err error
}

func (w *outcomeEncoder) str(key, v string) {
	w.b = jsonraw.AppendStringHTML(append(w.b, key...), v)
}

func (w *outcomeEncoder) optStr(key, v string) {
	if v != "" {
		w.str(key, v)
	}
}

func (w *outcomeEncoder) num(key string, v int64) {
	w.b = strconv.AppendInt(append(w.b, key...), v, 10)
}

func (w *outcomeEncoder) boolean(key string, v bool) {
	w.b = strconv.AppendBool(append(w.b, key...), v)
}

// strings writes a list that is not omitted when empty: nil is null.
func (w *outcomeEncoder) strings(key string, v []string) {
	w.b = append(w.b, key...)
	if v == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = append(w.b, '[')
	for i, s := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = jsonraw.AppendStringHTML(w.b, s)
	}
	w.b = append(w.b, ']')
}

// marshalled writes v with json.Marshal.
func (w *outcomeEncoder) marshalled(key string, v any) {
	if w.err != nil {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		w.err = err
		return
	}
	w.b = append(append(w.b, key...), raw...)
}

// outcomeSizeHint is about the size of a checkpoint_decided event's data
// carrying o: the members of a plain run, its strings that vary.
func outcomeSizeHint(o *StepOutcome) int {
	n := 768 + 2*len(o.Summary) + len(o.Workspace) + 16*len(o.DependsOn)
	if c := o.Checkpoint; c != nil {
		n += 2*len(c.Summary) + len(c.Payload)
	}
	return n
}

// appendStepOutcome appends o as json.Marshal writes it.
func appendStepOutcome(b []byte, o *StepOutcome) ([]byte, error) {
	w := outcomeEncoder{b: b}
	w.str(`{"step_id":`, o.StepID)
	w.optStr(`,"run":`, o.Run)
	w.optStr(`,"loop":`, o.Loop)
	if len(o.Iteration) > 0 {
		w.b = append(w.b, `,"iteration":[`...)
		for i, n := range o.Iteration {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = strconv.AppendInt(w.b, int64(n), 10)
		}
		w.b = append(w.b, ']')
	}
	if o.Item != 0 {
		w.num(`,"item":`, int64(o.Item))
	}
	if o.Superseded {
		w.boolean(`,"superseded":`, true)
	}
	w.str(`,"agent":`, o.Agent)
	w.optStr(`,"agent_id":`, o.AgentID)
	w.optStr(`,"child_session_id":`, o.ChildSessionID)
	if o.Wave != 0 {
		w.num(`,"wave":`, int64(o.Wave))
	}
	w.str(`,"posture":`, string(o.Posture))
	w.str(`,"workspace_mode":`, string(o.WorkspaceMode))
	w.optStr(`,"workspace":`, o.Workspace)
	w.strings(`,"depends_on":`, o.DependsOn)
	w.str(`,"subagent_status":`, string(o.SubagentStatus))
	w.str(`,"checkpoint_status":`, string(o.CheckpointStatus))
	w.str(`,"summary":`, o.Summary)
	w.num(`,"elapsed_ms":`, o.ElapsedMS)
	if o.Error != nil {
		w.marshalled(`,"error":`, o.Error)
	}
	w.optStr(`,"reason":`, o.Reason)
	w.optStr(`,"held_reason":`, o.HeldReason)
	if len(o.BlockedBy) > 0 {
		w.strings(`,"blocked_by":`, o.BlockedBy)
	}
	w.optStr(`,"skip_reason":`, o.SkipReason)
	if len(o.Conditions) > 0 {
		w.marshalled(`,"conditions":`, o.Conditions)
	}
	w.optStr(`,"reused_from":`, o.ReusedFrom)
	if o.Checkpoint != nil {
		w.bundle(o.Checkpoint)
	}
	if o.Changes != nil {
		w.marshalled(`,"changes":`, o.Changes)
	}
	if u := o.Usage; u != nil {
		if u.Cost != 0 { // a float, as encoding/json formats it, is left to it
			w.marshalled(`,"usage":`, u)
		} else {
			w.num(`,"usage":{"input_tokens":`, u.InputTokens)
			w.num(`,"output_tokens":`, u.OutputTokens)
			w.num(`,"model_calls":`, u.ModelCalls)
			w.optStr(`,"currency":`, u.Currency)
			if u.Unpriced != 0 {
				w.num(`,"unpriced_calls":`, u.Unpriced)
			}
			w.b = append(w.b, '}')
		}
	}
	if o.Merge != nil {
		w.marshalled(`,"merge":`, o.Merge)
	}
	if o.WriteSetViolation != nil {
		w.marshalled(`,"write_set_violation":`, o.WriteSetViolation)
	}
	if w.err != nil {
		return nil, w.err
	}
	return append(w.b, '}'), nil
}

// bundle writes a step's checkpoint bundle as its "checkpoint" member.
func (w *outcomeEncoder) bundle(c *Bundle) {
	w.num(`,"checkpoint":{"version":`, int64(c.Version))
	w.str(`,"step_id":`, c.StepID)
	w.str(`,"agent_id":`, c.AgentID)
	w.optStr(`,"child_session_id":`, c.ChildSessionID)
	w.str(`,"status":`, string(c.Status))
	w.boolean(`,"dependent_safe":`, c.DependentSafe)
	w.str(`,"summary":`, c.Summary)
	w.strings(`,"produced":`, c.Produced)
	w.strings(`,"verification":`, c.Verification)
	w.strings(`,"known_limitations":`, c.KnownLimitations)
	if len(c.Payload) > 0 { // json.Marshal compacts and checks it
		w.marshalled(`,"payload":`, c.Payload)
	}
	if c.Changes != nil {
		w.marshalled(`,"changes":`, c.Changes)
	}
	w.optStr(`,"workspace":`, c.Workspace)
	w.str(`,"source":`, c.Source)
	w.b = append(w.b, '}')
}
