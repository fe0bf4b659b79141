package runtime

import (
	"encoding/json"
	"testing"
	"testing/quick"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// A subagent_event's data is written byte for byte as json.Marshal writes
// it: every member set and unset, strings that need escaping (HTML, line
// separators, invalid UTF-8, controls), and the nested members.
func TestSubagentEventDataIsEncodedAsEncodingJSONDoes(t *testing.T) {
	full := SubagentEventData{Event: tools.SubagentEventFinished, ParentID: "p", SubagentID: "sa-1", ChildSessionID: "c", ChildLog: "/w/.pixir/subagents/sa-1/c.ndjson",
		ParentToolCallID: "call<1>", Agent: "reviewer", Name: "s1#2", Task: "Do <this> & \"that\"\n\u2028\x00\xff", Depth: 2, Status: tools.SubagentCompleted,
		Workspace: "/w", WorkspaceMode: "isolated", Input: "more", Summary: "done\t", ElapsedMS: 1234,
		Error:   &tools.Failure{Kind: tools.ErrTimeout, Message: "slow <b>", Details: json.RawMessage(`{ "a" : [1, 2] }`)},
		Changes: &tools.FileChanges{Added: []string{"a&b"}, Changed: nil, Deleted: []string{}},
		Usage:   &budget.Usage{InputTokens: 10, OutputTokens: 2, ModelCalls: 1, Currency: "EUR", Unpriced: 1}}
	for _, tt := range []struct {
		name string
		d    SubagentEventData
	}{
		{"empty", SubagentEventData{}},
		{"queued, as a workflow step", SubagentEventData{Event: tools.SubagentEventQueued, ParentID: "p", SubagentID: "sa-1", Agent: "default", Name: "s1", Task: "Do part 1.", Status: tools.SubagentQueued, Workspace: "/w", WorkspaceMode: "shared"}},
		{"every member", full},
		{"a usage with a cost", func() SubagentEventData {
			d := full
			d.Usage = &budget.Usage{InputTokens: 1, Cost: 0.000001234, Currency: "USD"}
			return d
		}()},
		{"a usage of nothing", func() SubagentEventData { d := full; d.Usage = &budget.Usage{}; return d }()},
		{"negative numbers", SubagentEventData{Depth: -1, ElapsedMS: -5}},
		{"a started event: neither task nor input", SubagentEventData{Event: tools.SubagentEventStarted, SubagentID: "sa-1", Status: tools.SubagentRunning}},
		{"send_input's queued event: an input, no task", SubagentEventData{Event: tools.SubagentEventQueued, Input: "go on <now>"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.d)
			require.NoError(t, err)
			got, pieces, err := encodeEventData(tt.d)
			require.NoError(t, err)
			require.Nil(t, pieces)
			require.Equal(t, string(want), string(got))
		})
	}
}

// A workflow step's subagent_events fit the buffer sizeHint makes: queued,
// started and finished (its usage and summary), for a step's prompt with
// the quotes, newlines and <status> that escaping lengthens, and a failed
// end with its error. Each was regrown before (a finished child's usage
// was not counted, the quoted task was counted as its raw length).
func TestAStepsSubagentEventsFitTheirSizeHint(t *testing.T) {
	task := "Do part 13 of the work.\n\n---\nYou are step \"s13\" of a workflow (bench). Your posture is read_only.\n\n" +
		"If you cannot call it, end your final message with a line `checkpoint_status: <status>`.\n"
	queued := SubagentEventData{Event: tools.SubagentEventQueued, ParentID: "aa418140-7539-49a4-a0e8-25d9017f4254", SubagentID: "sa-8fec7cf87eca",
		ChildSessionID: "344f12ec-87ee-4801-af33-025d8a6aae17", Agent: "default", Name: "s13", Task: task, Depth: 1, Status: tools.SubagentQueued,
		Workspace: "/dev/shm/rc8/ws.eF9e", WorkspaceMode: "shared"}
	started := queued
	started.Event, started.Status, started.Task = tools.SubagentEventStarted, tools.SubagentRunning, ""
	started.ChildLog = "/dev/shm/rc8/ws.eF9e/.pixir/subagents/sa-8fec7cf87eca/344f12ec-87ee-4801-af33-025d8a6aae17.ndjson"
	finished := started
	finished.Event, finished.Status, finished.Summary, finished.ElapsedMS = tools.SubagentEventFinished, tools.SubagentCompleted, "Done.\nAll <good>.", 123456
	finished.Usage = &budget.Usage{InputTokens: 1 << 40, OutputTokens: 1 << 40, ModelCalls: 1 << 30, Currency: "EUR", Unpriced: 1 << 30}
	failed := finished
	failed.Event, failed.Status, failed.Error = tools.SubagentEventFailed, tools.SubagentFailed, &tools.Failure{Kind: tools.ErrTimeout, Message: "the subagent did not finish within 2m0s and was stopped; its work so far is in its own log"}
	for _, d := range []SubagentEventData{queued, started, finished, failed} {
		t.Run(string(d.Event), func(t *testing.T) {
			got, err := d.appendJSON(nil)
			require.NoError(t, err)
			require.LessOrEqual(t, len(got), d.sizeHint(), "%s", got)
		})
	}
}

func FuzzSubagentEventDataIsEncodedAsEncodingJSONDoes(f *testing.F) {
	f.Add("Do <this> & that", "sa-1", "", "s\u2028\xff", int64(3), int64(0), false)
	f.Add("", "", "x", "\x00\x1f\"\\", int64(-1), int64(7), true)
	f.Fuzz(func(t *testing.T, task, id, summary, name string, elapsed, tokens int64, failed bool) {
		d := SubagentEventData{Event: tools.SubagentEventFinished, SubagentID: id, Task: task, Summary: summary, Name: name, ElapsedMS: elapsed,
			Usage: &budget.Usage{InputTokens: tokens, Currency: summary}}
		if failed {
			d.Error = &tools.Failure{Kind: tools.ErrInternal, Message: task}
		}
		want, err := json.Marshal(d)
		require.NoError(t, err)
		got, _, err := encodeEventData(d)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		// send_input's queued event: an input, and no task.
		d.Input, d.Task = task, ""
		want, err = json.Marshal(d)
		require.NoError(t, err)
		got, _, err = encodeEventData(d)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}

// BenchmarkSubagentEventData: a step's finished event, as json.Marshal
// writes it and as the Log's encoder does.
func BenchmarkSubagentEventData(b *testing.B) {
	d := SubagentEventData{Event: tools.SubagentEventFinished, ParentID: "0196a7c1-62b4-7d4e-9a1c-3c1a2f1e0b9d", SubagentID: "sa-247e61bc2948",
		ChildSessionID: "0196a7c1-62b4-7d4e-9a1c-3c1a2f1e0b9e", ChildLog: "/work/ws/.pixir/subagents/sa-247e61bc2948/0196a7c1-62b4-7d4e-9a1c-3c1a2f1e0b9e.ndjson",
		Agent: "default", Name: "s692", Task: "Do part 692 of the work.", Depth: 1, Status: tools.SubagentCompleted, Workspace: "/work/ws",
		WorkspaceMode: "shared", Summary: "Done.", ElapsedMS: 3, Usage: &budget.Usage{InputTokens: 170, OutputTokens: 1, ModelCalls: 1}}
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encodeEventData", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := encodeEventData(d); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A provider_usage's and a workflow_event's data are written as
// json.Marshal writes them: the usage with every member set and unset (a
// cost, a float, is left to json.Marshal), the workflow event through its
// own encoder.
func TestProviderUsageProgressAndWorkflowEventsAreEncodedAsEncodingJSONDoes(t *testing.T) {
	for _, tt := range []struct {
		name string
		d    any
	}{
		{"a usage of nothing", ProviderUsageData{}},
		{"a child's call", ProviderUsageData{Provider: "scripted", Model: "scripted", Usage: provider.Usage{InputTokens: 108, OutputTokens: 1, ContextWindow: 128000}}},
		{"every member", ProviderUsageData{Provider: "a<b>", Model: "m\u2028\xff", Usage: provider.Usage{InputTokens: -1, OutputTokens: 2, ContextWindow: 3},
			Currency: "EUR&", Purpose: "compaction"}},
		{"a cost", ProviderUsageData{Provider: "p", Model: "m", Cost: 0.000001234, Currency: "USD"}},
		{"an estimate", ProviderUsageData{Provider: "openai", Model: "m", Usage: provider.Usage{InputTokens: 3000, OutputTokens: 2}, Estimated: true}},
		{"a child's progress", SubagentProgressData{SubagentID: "sa-1", Activity: "Done."}},
		{"a child's progress to escape", SubagentProgressData{SubagentID: "<sa>", Activity: "a \"b\" & c\u2028\xff\n"}},
		{"a child's progress of nothing", SubagentProgressData{}},
		{"a step scheduled", workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", StepID: "s1", Run: "s1", Wave: 1, SubagentID: "sa-1"}},
		{"a step decided", workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-1", StepID: "s1", Run: "s1",
			Outcome: &workflows.StepOutcome{StepID: "s1", Summary: "<done>"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.d)
			require.NoError(t, err)
			got, pieces, err := encodeEventData(tt.d)
			require.NoError(t, err)
			require.Nil(t, pieces)
			require.Equal(t, string(want), string(got))
		})
	}
}

// A child's progress is appended by hand: a field added to its type and
// not to its encoder would never reach the Log, every table case green.
// testing/quick fills every field, a new one too, and the bytes must be
// json.Marshal's.
func TestSubagentProgressDataEncodesEveryFieldItsTypeHas(t *testing.T) {
	require.NoError(t, quick.Check(func(d SubagentProgressData) bool {
		want, err := json.Marshal(d)
		require.NoError(t, err)
		got, _, err := encodeEventData(d)
		require.NoError(t, err)
		return assert.Equal(t, string(want), string(got))
	}, &quick.Config{MaxCount: 200}))
}

func FuzzProviderUsageDataIsEncodedAsEncodingJSONDoes(f *testing.F) {
	f.Add("scripted", "m<1>\u2028", "\xff", "", int64(108), int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, prov, model, currency, purpose string, in, out, window int64) {
		d := ProviderUsageData{Provider: prov, Model: model, Usage: provider.Usage{InputTokens: int(in), OutputTokens: int(out), ContextWindow: int(window)},
			Currency: currency, Purpose: purpose}
		want, err := json.Marshal(d)
		require.NoError(t, err)
		got, _, err := encodeEventData(d)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}

// A child's summary is its last answer as the Log has it: taken from the
// data the event was emitted with (not decoded again), or from its JSON
// when the text has invalid UTF-8 (written as U+FFFD there).
func TestAChildsSummaryIsItsAnswerAsTheLogHasIt(t *testing.T) {
	for _, text := range []string{"Done.", "caf\xe9 \xff\xfe end", "line\nwith \"quotes\" and <html>"} {
		d := AssistantMessageData{Text: text}
		raw, _, err := encodeEventData(d)
		require.NoError(t, err)
		var want AssistantMessageData
		require.NoError(t, json.Unmarshal(raw, &want))
		tr := &childTracker{progress: &progressThrottle{stopped: true}} // no progress to show
		tr.observe(Event{Type: EventAssistantMessage, Data: raw, value: d})
		require.Equal(t, want.Text, tr.summary(), "%q", text)
	}
}

// A denied call counts as a denied change only when it could have changed
// something: a bash the user refused to a child whose commands see a
// read-only workspace (its agent's shell = "read-only") could not.
func TestARefusedReadOnlyCommandIsNoDeniedChange(t *testing.T) {
	for _, tt := range []struct {
		shell, tool string
		denied      int
	}{
		{ShellReadOnly, "bash", 0},
		{ShellReadOnly, "write", 1},
		{ShellWriteSet, "bash", 1},
		{"", "bash", 1},
	} {
		sa := &subagent{spec: AgentSpec{Profile: AgentProfile{Shell: tt.shell}}}
		tr := &childTracker{sa: sa, progress: &progressThrottle{stopped: true}}
		d := PermissionDecisionData{ToolCallID: "c1", Tool: tt.tool, Mode: ModeAsk, Decision: "denied", Source: "user", Option: "reject_once"}
		raw, _, err := encodeEventData(d)
		require.NoError(t, err)
		tr.observe(Event{Type: EventPermissionDecision, Data: raw, value: d})
		require.Equal(t, tt.denied, tr.deniedByUser(), "%s with shell %q", tt.tool, tt.shell)
	}
}
