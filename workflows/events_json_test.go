package workflows

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// A workflow_event's data is written byte for byte as json.Marshal writes
// it: every member set and unset, strings that need escaping (HTML, line
// separators, invalid UTF-8, controls), negative numbers, and the nested
// members.
func TestWorkflowEventIsEncodedAsEncodingJSONDoes(t *testing.T) {
	yes, no := true, false
	full := WorkflowEvent{Kind: EventCheckpointDecided, WorkflowID: "wf-1", ToolCallID: "call<1>",
		Workflow: &Workflow{Name: "w&", Steps: []Step{{ID: "a", Task: "Do <a>."}}},
		StepID:   "a", Run: "a#2", Wave: 3, SubagentID: "sa-1", HeldReason: "held \u2028", BlockedBy: []string{"b", "c<"},
		SkipReason: "x\x00\xff", Condition: `a /v = "OK"`, Result: &yes, Seen: []ConditionSeen{{Condition: "c"}},
		Items: 4, MaxItems: 10, Loop: "l", Iteration: 2, Decision: "next", Value: json.RawMessage(`{ "v" : "<b>" }`),
		LoopOutcome: &LoopOutcome{Loop: "l", Run: "l", Iterations: 2}, Commit: &CommitReport{Status: "committed", Message: "m&"},
		Outcome: &StepOutcome{StepID: "a", Summary: "done\t"}, Status: "completed", StoppedBy: "budget", ElapsedMS: 1234}
	for _, tt := range []struct {
		name string
		e    WorkflowEvent
	}{
		{"empty", WorkflowEvent{}},
		{"step_scheduled", WorkflowEvent{Kind: EventStepScheduled, WorkflowID: "wf-1", StepID: "s1", Run: "s1", Wave: 1, SubagentID: "sa-1"}},
		{"every member", full},
		{"false, and empty lists", WorkflowEvent{Kind: "k", Result: &no, BlockedBy: []string{}, Seen: []ConditionSeen{}, Value: json.RawMessage{}}},
		{"negative numbers", WorkflowEvent{Wave: -1, Items: -2, MaxItems: -3, Iteration: -4, ElapsedMS: -5}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.e)
			require.NoError(t, err)
			got, err := tt.e.AppendJSON(nil)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
	_, err := (&WorkflowEvent{Value: json.RawMessage(`{`)}).AppendJSON(nil)
	require.Error(t, err, "a value that is not JSON is refused, as json.Marshal refuses it")
}

func FuzzWorkflowEventIsEncodedAsEncodingJSONDoes(f *testing.F) {
	f.Add("step_scheduled", "s<1>", "sa-1\u2028", "\xff\x00", int64(3), int64(-7), true, `{"a":1}`)
	f.Add("", "", "", "", int64(0), int64(0), false, ``)
	f.Fuzz(func(t *testing.T, kind, step, agent, reason string, wave, elapsed int64, held bool, value string) {
		e := WorkflowEvent{Kind: kind, WorkflowID: agent, StepID: step, Run: step + "#2", Wave: int(wave), SubagentID: agent,
			SkipReason: reason, ElapsedMS: elapsed, Status: Status(reason)}
		if held {
			e.HeldReason, e.BlockedBy, e.Result = reason, []string{step, agent}, &held
		}
		if json.Valid([]byte(value)) {
			e.Value = json.RawMessage(value)
		}
		want, err := json.Marshal(e)
		require.NoError(t, err)
		got, err := e.AppendJSON(nil)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}

// Every exported field of a WorkflowEvent, set by reflection, is written
// as json.Marshal writes it: a field added to the type later and not to
// AppendJSON fails here instead of going missing from the Log (found in
// review: the "every member" case above is written by hand).
func TestEveryWorkflowEventFieldIsEncoded(t *testing.T) {
	var e WorkflowEvent
	v := reflect.ValueOf(&e).Elem()
	for i := range v.NumField() {
		f, field := v.Field(i), v.Type().Field(i)
		if !field.IsExported() {
			continue
		}
		switch {
		case f.Type() == reflect.TypeOf(json.RawMessage(nil)):
			f.Set(reflect.ValueOf(json.RawMessage(`{"v":1}`)))
		case f.Kind() == reflect.String:
			f.SetString(field.Name + "<&>")
		case f.CanInt():
			f.SetInt(int64(i + 1))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case f.Kind() == reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		default:
			t.Fatalf("field %s (%s): teach this test to set it", field.Name, f.Type())
		}
	}
	want, err := json.Marshal(e)
	require.NoError(t, err)
	got, err := e.AppendJSON(nil)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}
