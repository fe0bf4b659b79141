package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
)

// strictProvider refuses, as real model APIs do with a 400, a conversation
// in which a tool call is not followed by its result; otherwise it answers
// with its next func.
type strictProvider struct{ fakeProvider }

func (p *strictProvider) Generate(ctx context.Context, req provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
	if err := danglingCalls(req.Messages); err != nil {
		p.mu.Lock()
		p.reqs = append(p.reqs, req)
		p.mu.Unlock()
		return nil, err
	}
	return p.fakeProvider.Generate(ctx, req, sink)
}

// danglingCalls is the rule of the OpenAI Chat Completions API: an
// assistant message with tool_calls must be followed by tool messages
// answering each of them.
func danglingCalls(msgs []provider.Message) error {
	for i, m := range msgs {
		if m.Role != provider.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		answered := map[string]bool{}
		for _, next := range msgs[i+1:] {
			if next.Role != provider.RoleTool {
				break
			}
			answered[next.ToolCallID] = true
		}
		for _, tc := range m.ToolCalls {
			if !answered[tc.ID] {
				return fmt.Errorf("400: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; %s did not have one", tc.ID)
			}
		}
	}
	return nil
}

// failOn makes the Log's writes of lines containing mark fail like a full
// disk, after writing part of the line.
func failOn(typ EventType) func(*os.File, *Event) (int, error) {
	return func(f *os.File, ev *Event) (int, error) {
		if ev.Type == typ {
			return failAfter(len(appendEventLine(nil, ev))/2)(f, ev)
		}
		return writeEventLine(f, ev)
	}
}

func TestAFullDiskEndsTheTurnWithEveryCallFinalized(t *testing.T) {
	p := &strictProvider{fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		calls(writeCall("c1", "a.txt"), writeCall("c2", "b.txt")),
		text("after the disk was freed"),
	}}}
	s := newTestSession(t, p)
	s.log.write = failOn(EventToolResult)
	var rec recorder
	stop, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Observe: rec.observe})
	require.ErrorIs(t, err, ErrLogWrite)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Equal(t, StopEndTurn, stop)

	// The observer (the editor) saw c1 announced and then ended, failed,
	// and the reason; c2 was never shown, so nothing ends it there.
	require.Equal(t, []EventType{
		EventUserMessage, EventAssistantMessage, EventNotice, EventProviderUsage, // its usage estimated
		EventToolCall, EventPermissionDecision, EventStatus,
		EventToolResult, EventTurnFailed,
	}, rec.types())
	var end ToolResultData
	require.NoError(t, json.Unmarshal(rec.events[7].Data, &end))
	require.Equal(t, "c1", end.ToolCallID)
	require.Equal(t, tools.ErrInternal, end.Result.Error.Kind)
	var failed TurnFailedData
	require.NoError(t, json.Unmarshal(rec.events[8].Data, &failed))
	require.Contains(t, failed.Message, "could not be written")
	require.Contains(t, failed.Message, "no space left on device")

	// The Log is whole: no half line, no result it could not write.
	events, report, err := s.Events()
	require.NoError(t, err)
	require.True(t, report.Intact(), report.String())
	require.Equal(t, []string{"user_message", "assistant_message", "notice", "provider_usage", "tool_call", "permission_decision"}, typeNames(events))

	// Space again: the next turn first records both calls as interrupted,
	// so the model's conversation is valid.
	s.log.write = writeEventLine
	rec = recorder{}
	stop, err = s.Prompt(context.Background(), Prompt{Text: "again"}, TurnOptions{Observe: rec.observe})
	require.NoError(t, err)
	require.Equal(t, StopEndTurn, stop)
	require.Equal(t, EventToolResult, rec.events[0].Type, "c1 was shown: it only ends")
	require.Equal(t, EventToolCall, rec.events[1].Type, "c2 was never shown: it is announced, then ends")
	require.Equal(t, EventToolResult, rec.events[2].Type)
	events, report, err = s.Events()
	require.NoError(t, err)
	require.True(t, report.Intact())
	require.Equal(t, 2, countInterrupted(t, events))
	require.Len(t, p.reqs, 2)
	require.NoError(t, danglingCalls(p.reqs[1].Messages))
	require.Equal(t, s.historyCopy()[:len(p.reqs[1].Messages)], p.reqs[1].Messages)
	require.Equal(t, s.historyCopy(), foldHistory(events, s.rt.log), "History is still a fold over the Log")
}

func typeNames(events []Event) []string {
	var out []string
	for _, ev := range events {
		out = append(out, string(ev.Type))
	}
	return out
}

func countInterrupted(t *testing.T, events []Event) int {
	t.Helper()
	n := 0
	for _, ev := range events {
		if ev.Type != EventToolResult {
			continue
		}
		var d ToolResultData
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		if d.Interrupted {
			require.Equal(t, tools.ErrDetached, d.Result.Error.Kind)
			require.True(t, strings.HasPrefix(d.Result.Error.Message, "interrupted: "))
			n++
		}
	}
	return n
}

// appendRaw writes events to a session's Log as a process that then died
// would have left them.
func appendRaw(t *testing.T, l *Log, events ...Event) {
	t.Helper()
	for _, ev := range events {
		require.NoError(t, l.Append(&ev))
	}
}

func ev(typ EventType, data any) Event {
	raw, _ := json.Marshal(data)
	return Event{Type: typ, Data: raw}
}

func TestReopeningRepairsCallsACrashLeftWithoutResults(t *testing.T) {
	p := &strictProvider{}
	home, ws := t.TempDir(), t.TempDir()
	cfg := Config{Home: home, Provider: p, Model: "m", Tools: tools.Builtins()}
	rt := New(cfg)
	s, err := rt.NewSession(ws)
	require.NoError(t, err)
	id := s.ID()
	appendRaw(t, s.log,
		// An old turn whose call c0 has no result, followed by another
		// turn (a Log written before crash repair existed).
		ev(EventUserMessage, UserMessageData{Text: "one"}),
		ev(EventAssistantMessage, AssistantMessageData{ToolCalls: []provider.ToolCall{writeCall("c0", "z.txt")}}),
		ev(EventUserMessage, UserMessageData{Text: "two"}),
		// The turn killed mid tool call: c1 answered, c2 running, c3 not
		// started (never announced).
		ev(EventAssistantMessage, AssistantMessageData{ToolCalls: []provider.ToolCall{writeCall("c1", "a.txt"), writeCall("c2", "b.txt"), writeCall("c3", "c.txt")}}),
		ev(EventToolCall, ToolCallData{ToolCallID: "c1", Name: "write"}),
		ev(EventToolResult, ToolResultData{ToolCallID: "c1", Name: "write", Result: tools.OK("wrote")}),
		ev(EventToolCall, ToolCallData{ToolCallID: "c2", Name: "write"}),
	)
	rt.Close()

	var replay []Event
	rt2 := New(cfg)
	s2, report, err := rt2.OpenSession(id, ws, func(ev Event) { replay = append(replay, ev) })
	require.NoError(t, err)
	require.True(t, report.Intact())
	h := s2.historyCopy()
	require.NoError(t, danglingCalls(h), "every call has a result in History")
	require.Equal(t, []string{"user", "assistant", "tool", "user", "assistant", "tool", "tool", "tool"}, roles(h))
	require.Equal(t, []string{"c0", "c1", "c2", "c3"}, []string{h[2].ToolCallID, h[5].ToolCallID, h[6].ToolCallID, h[7].ToolCallID})

	// The repairs were recorded, after the events read, and replayed: c0
	// and c3 were never shown, so they are announced first.
	tail := replay[len(replay)-5:]
	require.Equal(t, []string{"tool_call", "tool_result", "tool_result", "tool_call", "tool_result"}, typeNames(tail))
	events, _, err := ReadLog(logPath(s2.workspace.Root(), id))
	require.NoError(t, err)
	require.Equal(t, 3, countInterrupted(t, events))
	require.Equal(t, h, foldHistory(events, rt2.log), "the fold of the repaired Log is the History")
	rt2.Close()

	// Once: opening again records nothing more, and a prompt is valid.
	p.calls = append(p.calls, text("fine"))
	rt3 := New(cfg)
	defer rt3.Close()
	s3, _, err := rt3.OpenSession(id, ws, nil)
	require.NoError(t, err)
	events, _, err = s3.Events()
	require.NoError(t, err)
	require.Equal(t, 3, countInterrupted(t, events))
	require.Equal(t, h, s3.historyCopy())
	stop, err := s3.Prompt(context.Background(), Prompt{Text: "go on"}, TurnOptions{})
	require.NoError(t, err)
	require.Equal(t, StopEndTurn, stop)
	last, _, err := s3.Events()
	require.NoError(t, err)
	require.NotEqual(t, EventTurnFailed, last[len(last)-1].Type, "the provider accepted the conversation")
}

// A call whose arguments were not JSON, cut off by a crash before it was
// announced, is announced on reopening as runTool shows it: the text that
// came, as a JSON string, not the {} History sends in its place.
func TestAnUnparsedCallACrashLeftUnannouncedIsShownAsItCame(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	cfg := Config{Home: home, Provider: &strictProvider{}, Model: "m", Tools: tools.Builtins()}
	rt := New(cfg)
	s, err := rt.NewSession(ws)
	require.NoError(t, err)
	id := s.ID()
	const came = `{"path": "a.txt", "content": "x`
	appendRaw(t, s.log,
		ev(EventUserMessage, UserMessageData{Text: "one"}),
		ev(EventAssistantMessage, AssistantMessageData{ToolCalls: []provider.ToolCall{
			{ID: "c1", Name: "write", Arguments: json.RawMessage(`{}`), Unparsed: came},
		}}),
	)
	rt.Close()

	rt2 := New(cfg)
	defer rt2.Close()
	s2, _, err := rt2.OpenSession(id, ws, nil)
	require.NoError(t, err)
	events, _, err := s2.Events()
	require.NoError(t, err)
	var announced []ToolCallData
	for _, e := range events {
		if e.Type == EventToolCall {
			var d ToolCallData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			announced = append(announced, d)
		}
	}
	require.Len(t, announced, 1)
	want, _ := json.Marshal(came)
	require.JSONEq(t, string(want), string(announced[0].Arguments), "the text that came, not {}")
	require.Equal(t, "write", announced[0].Title, "nothing described from arguments that did not parse")
	require.Equal(t, 1, countInterrupted(t, events))
}

func roles(msgs []provider.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Role))
	}
	return out
}

func TestSetModeChangesNothingWhenItCannotBeSaved(t *testing.T) {
	s := newTestSession(t, &fakeProvider{})
	// A folder where the metadata's temporary file goes: the save fails,
	// whoever runs the test (root ignores file modes).
	require.NoError(t, os.Mkdir(metaPath(s.workspace.Root(), s.ID())+".tmp", 0o755))
	before := s.Meta()
	require.Error(t, s.SetMode(ModeReadOnly))
	require.Equal(t, ModeAuto, s.Mode(), "the mode is unchanged")
	require.Error(t, s.SetModel("m"))
	require.Error(t, s.SetTitle("new"))
	require.Equal(t, before, s.Meta(), "nothing changed")
	saved, err := readMeta(s.workspace.Root(), s.ID())
	require.NoError(t, err)
	require.Equal(t, ModeAuto, saved.Mode)
}

func TestASubagentsEndIsShownWhenTheParentsLogIsFull(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	f.parent.log.write = failOn(EventSubagent)
	v := f.spawn(t, "quick")
	f.events.await(v.ID, tools.SubagentEventFinished)
	require.Equal(t, []string{"queued", "started", "finished"}, f.events.of(v.ID), "the watcher saw the child through")
	events, report, err := f.parent.Events()
	require.NoError(t, err)
	require.True(t, report.Intact())
	require.Zero(t, countType(events, EventSubagent), "none of it reached the full Log")
}

func countType(events []Event, typ EventType) int {
	n := 0
	for _, ev := range events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// TestAMetadataSaveCutShortLeavesNoTemporaryFile: the save's temporary
// file is written on a full disk (/dev/full, where every write fails with
// ENOSPC): the save fails, the mode is unchanged, and no <id>.json.tmp is
// left in the sessions folder, where nothing would ever remove it (a
// full disk left an empty one).
func TestAMetadataSaveCutShortLeavesNoTemporaryFile(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("needs /dev/full")
	}
	s := newTestSession(t, &fakeProvider{})
	tmp := metaPath(s.workspace.Root(), s.ID()) + ".tmp"
	require.NoError(t, os.Symlink("/dev/full", tmp))
	err := s.SetMode(ModeReadOnly)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Equal(t, ModeAuto, s.Mode())
	_, err = os.Lstat(tmp)
	require.ErrorIs(t, err, os.ErrNotExist, "the temporary file is removed")
	require.NoError(t, s.SetMode(ModeReadOnly), "with room, the next save goes through")
	saved, err := readMeta(s.workspace.Root(), s.ID())
	require.NoError(t, err)
	require.Equal(t, ModeReadOnly, saved.Mode)
}
