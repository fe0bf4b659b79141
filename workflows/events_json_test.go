package workflows

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pixir-go/pixir/budget"
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

// A step's outcome and its checkpoint bundle, every exported field set by
// reflection (strings that need escaping, nested members), and each left
// at its zero value, are written as json.Marshal writes them: a field
// added to either type later and not to appendStepOutcome fails here.
func TestEveryStepOutcomeFieldIsEncoded(t *testing.T) {
	fill := func(t *testing.T, v reflect.Value, depth int) {
		t.Helper()
		var set func(v reflect.Value, depth int)
		set = func(v reflect.Value, depth int) {
			for i := range v.NumField() {
				f, field := v.Field(i), v.Type().Field(i)
				if !field.IsExported() {
					continue
				}
				switch {
				case f.Type() == reflect.TypeOf(json.RawMessage(nil)):
					f.Set(reflect.ValueOf(json.RawMessage(`{ "v" : "<1>" }`)))
				case f.Kind() == reflect.String:
					f.SetString(field.Name + "<&>\u2028")
				case f.CanInt():
					f.SetInt(-int64(i + 1))
				case f.Kind() == reflect.Float64:
					f.SetFloat(0.25)
				case f.Kind() == reflect.Bool:
					f.SetBool(true)
				case f.Kind() == reflect.Pointer:
					f.Set(reflect.New(f.Type().Elem()))
					if f.Elem().Kind() == reflect.Struct && depth < 2 {
						set(f.Elem(), depth+1)
					}
				case f.Kind() == reflect.Slice:
					f.Set(reflect.MakeSlice(f.Type(), 2, 2))
					if f.Type().Elem().Kind() == reflect.String {
						f.Index(0).SetString("a\"b")
					}
					if f.Type().Elem().Kind() == reflect.Int {
						f.Index(1).SetInt(7)
					}
				case f.Kind() == reflect.Struct:
					set(f, depth+1)
				case f.Kind() == reflect.Map, f.Kind() == reflect.Interface: // written by json.Marshal either way
				default:
					t.Fatalf("field %s (%s): teach this test to set it", field.Name, f.Type())
				}
			}
		}
		set(v, depth)
	}
	var full StepOutcome
	fill(t, reflect.ValueOf(&full).Elem(), 0)
	require.NotNil(t, full.Checkpoint)
	require.NotZero(t, full.Usage.Cost)
	unpriced := full
	unpriced.Usage = &budget.Usage{InputTokens: 3, OutputTokens: 4, ModelCalls: 1, Currency: "EUR", Unpriced: 2}
	plain := StepOutcome{StepID: "s1", Run: "s1", Agent: "default", DependsOn: []string{}, Posture: ReadOnly,
		Checkpoint: &Bundle{Version: 1, StepID: "s1", Produced: []string{}, Source: SourceSubagent},
		Usage:      &budget.Usage{InputTokens: 185, OutputTokens: 1, ModelCalls: 1}}
	for _, tt := range []struct {
		name string
		o    StepOutcome
	}{
		{"zero", StepOutcome{}},
		{"every field", full},
		{"a usage without a cost", unpriced},
		{"a plain run's", plain},
		{"an empty bundle", StepOutcome{Checkpoint: &Bundle{}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := WorkflowEvent{Kind: EventCheckpointDecided, Outcome: &tt.o}
			want, err := json.Marshal(e)
			require.NoError(t, err)
			got, err := e.AppendJSON(nil)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		})
	}
	bad := StepOutcome{Checkpoint: &Bundle{Payload: json.RawMessage(`{`)}}
	_, err := (&WorkflowEvent{Outcome: &bad}).AppendJSON(nil)
	require.Error(t, err, "a payload that is not JSON is refused, as json.Marshal refuses it")
}

func FuzzStepOutcomeIsEncodedAsEncodingJSONDoes(f *testing.F) {
	f.Add("s<1>", "sa-1\u2028", "\xff\x00", int64(3), int64(-7), true, `{"a":1}`)
	f.Add("", "", "", int64(0), int64(0), false, ``)
	f.Fuzz(func(t *testing.T, step, agent, summary string, wave, tokens int64, ready bool, payload string) {
		o := StepOutcome{StepID: step, Run: step + "#2", Agent: agent, AgentID: agent, Wave: int(wave), DependsOn: []string{step, agent},
			Summary: summary, Iteration: []int{int(wave)}, Usage: &budget.Usage{InputTokens: tokens}}
		if ready {
			o.Checkpoint = &Bundle{StepID: step, Summary: summary, Produced: []string{summary}, DependentSafe: ready}
			if json.Valid([]byte(payload)) {
				o.Checkpoint.Payload = json.RawMessage(payload)
			}
		}
		e := WorkflowEvent{Outcome: &o}
		want, err := json.Marshal(e)
		require.NoError(t, err)
		got, err := e.AppendJSON(nil)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}
