package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeProvider answers each model call with the next func.
type fakeProvider struct {
	mu    sync.Mutex
	calls []func(ctx context.Context, req provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error)
	reqs  []provider.ModelRequest
}

func (p *fakeProvider) Name() string { return "fake" }

func (p *fakeProvider) Generate(ctx context.Context, req provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	if len(p.calls) == 0 {
		p.mu.Unlock()
		return &provider.ModelResponse{Text: "(no more script)"}, nil
	}
	f := p.calls[0]
	p.calls = p.calls[1:]
	p.mu.Unlock()
	return f(ctx, req, sink)
}

func text(s string) func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error) {
	return func(_ context.Context, _ provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
		sink(provider.Delta{Kind: provider.DeltaText, Text: s})
		return &provider.ModelResponse{Text: s, Usage: &provider.Usage{InputTokens: 1, OutputTokens: 1}}, nil
	}
}

func calls(tcs ...provider.ToolCall) func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error) {
	return func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error) {
		return &provider.ModelResponse{ToolCalls: tcs}, nil
	}
}

func writeCall(id, path string) provider.ToolCall {
	args, _ := json.Marshal(map[string]string{"path": path, "content": "x"})
	return provider.ToolCall{ID: id, Name: "write", Arguments: args}
}

func newTestSession(t *testing.T, p provider.Provider) *Session {
	t.Helper()
	rt := New(Config{Home: t.TempDir(), Provider: p, Model: "m", Tools: tools.Builtins()})
	t.Cleanup(rt.Close)
	s, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	return s
}

type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) observe(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) types() []EventType {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []EventType
	for _, ev := range r.events {
		out = append(out, ev.Type)
	}
	return out
}

func TestTurnRunsToolsAndFeedsResultsBack(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		calls(writeCall("c1", "a.txt"), provider.ToolCall{ID: "c2", Name: "nope", Arguments: json.RawMessage(`{}`)}),
		text("done"),
	}}
	s := newTestSession(t, p)
	var rec recorder
	stop, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Observe: rec.observe})
	require.NoError(t, err)
	require.Equal(t, StopEndTurn, stop)
	require.Equal(t, []EventType{
		// The first answer has no usage: it is estimated, and said once.
		EventUserMessage, EventAssistantMessage, EventNotice, EventProviderUsage,
		EventToolCall, EventPermissionDecision, EventStatus, EventToolResult,
		EventToolCall, EventToolResult,
		EventTextDelta, EventAssistantMessage, EventProviderUsage,
	}, rec.types())
	// The second model call saw both results, the unknown tool as an error.
	second := p.reqs[1].Messages
	require.Len(t, second, 4)
	require.Equal(t, provider.RoleTool, second[2].Role)
	require.Contains(t, second[2].Text, `"ok":true`)
	require.Contains(t, second[3].Text, `"kind":"unknown_tool"`)
	got, err := os.ReadFile(filepath.Join(s.Workspace().Root(), "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "x", string(got))

	// History is a fold over the Log: a reopened session sees the same.
	events, _, err := s.Events()
	require.NoError(t, err)
	require.Equal(t, s.historyCopy(), foldHistory(events, s.rt.log))
}

func TestPermissionModes(t *testing.T) {
	tests := []struct {
		name     string
		mode     Mode
		asker    Asker
		written  bool
		decision string
		kind     tools.ErrorKind
	}{
		{"auto allows", ModeAuto, nil, true, "allowed", ""},
		{"read_only denies", ModeReadOnly, nil, false, "denied", tools.ErrPermissionDenied},
		{"ask without a client denies", ModeAsk, nil, false, "denied", tools.ErrPermissionDenied},
		{"ask, allowed once", ModeAsk, answer(AllowOnce), true, "allowed", ""},
		{"ask, rejected", ModeAsk, answer(RejectOnce), false, "denied", tools.ErrPermissionDenied},
		{"ask, cancelled", ModeAsk, answer(PermissionCancelled), false, "cancelled", tools.ErrCancelled},
		{"ask, client failed", ModeAsk, failingAsker{}, false, "cancelled", tools.ErrCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
				calls(writeCall("c1", "a.txt")), text("ok"),
			}}
			s := newTestSession(t, p)
			require.NoError(t, s.SetMode(tt.mode))
			var rec recorder
			_, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Observe: rec.observe, Ask: tt.asker})
			require.NoError(t, err)
			_, statErr := os.Stat(filepath.Join(s.Workspace().Root(), "a.txt"))
			require.Equal(t, tt.written, statErr == nil)
			var decision PermissionDecisionData
			var result ToolResultData
			for _, ev := range rec.events {
				switch ev.Type {
				case EventPermissionDecision:
					require.NoError(t, json.Unmarshal(ev.Data, &decision))
				case EventToolResult:
					require.NoError(t, json.Unmarshal(ev.Data, &result))
				}
			}
			require.Equal(t, tt.decision, decision.Decision)
			require.Equal(t, tt.mode, decision.Mode)
			if tt.kind != "" {
				require.False(t, result.Result.OK)
				require.Equal(t, tt.kind, result.Result.Error.Kind)
			} else {
				require.True(t, result.Result.OK)
			}
		})
	}
}

type answer PermissionOutcome

func (a answer) AskPermission(context.Context, PermissionRequest) (PermissionOutcome, error) {
	return PermissionOutcome(a), nil
}

type failingAsker struct{}

func (failingAsker) AskPermission(context.Context, PermissionRequest) (PermissionOutcome, error) {
	return "", errors.New("client went away")
}

// countingAsker allows always and counts questions.
type countingAsker struct{ n int }

func (c *countingAsker) AskPermission(context.Context, PermissionRequest) (PermissionOutcome, error) {
	c.n++
	return AllowAlways, nil
}

func TestAllowAlwaysIsRememberedPerTool(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		calls(writeCall("c1", "a.txt"), writeCall("c2", "b.txt")), text("ok"),
	}}
	s := newTestSession(t, p)
	require.NoError(t, s.SetMode(ModeAsk))
	asker := &countingAsker{}
	_, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Ask: asker})
	require.NoError(t, err)
	require.Equal(t, 1, asker.n)
	events, _, err := s.Events()
	require.NoError(t, err)
	var sources []string
	for _, ev := range events {
		if ev.Type == EventPermissionDecision {
			var d PermissionDecisionData
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			sources = append(sources, d.Source)
		}
	}
	require.Equal(t, []string{"user", "remembered"}, sources)
}

// "Always allow write in this session" holds for the session, not for the
// process: opened again (session/load, session/resume, pixir resume) it
// asks no more, and a rejection or a one-time allowance is not remembered.
func TestAllowAlwaysIsRememberedWhenTheSessionIsOpenedAgain(t *testing.T) {
	for _, tt := range []struct {
		first PermissionOutcome
		asked int
	}{{AllowAlways, 0}, {AllowOnce, 1}, {RejectOnce, 1}} {
		t.Run(string(tt.first), func(t *testing.T) {
			p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
				calls(writeCall("c1", "a.txt")), text("ok"), calls(writeCall("c2", "b.txt")), text("ok"),
			}}
			home, ws := t.TempDir(), t.TempDir()
			cfg := Config{Home: home, Provider: p, Model: "m", Tools: tools.Builtins()}
			rt := New(cfg)
			s, err := rt.NewSession(ws)
			require.NoError(t, err)
			require.NoError(t, s.SetMode(ModeAsk))
			_, err = s.Prompt(context.Background(), Prompt{Text: "one"}, TurnOptions{Ask: answer(tt.first)})
			require.NoError(t, err)
			id := s.ID()
			rt.Close()

			rt2 := New(cfg)
			defer rt2.Close()
			s2, _, err := rt2.OpenSession(id, ws, nil)
			require.NoError(t, err)
			asker := &countingAsker{}
			_, err = s2.Prompt(context.Background(), Prompt{Text: "two"}, TurnOptions{Ask: asker})
			require.NoError(t, err)
			require.Equal(t, tt.asked, asker.n)
			_, err = os.Stat(filepath.Join(ws, "b.txt"))
			require.NoError(t, err, "the second write ran")
		})
	}
}

func TestCancelWhileStreamingKeepsWhatWasShown(t *testing.T) {
	started := make(chan struct{})
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		func(ctx context.Context, _ provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
			sink(provider.Delta{Kind: provider.DeltaReasoning, Text: "hmm"})
			sink(provider.Delta{Kind: provider.DeltaText, Text: "partial "})
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}}
	s := newTestSession(t, p)
	go func() {
		<-started
		s.Cancel()
	}()
	stop, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{})
	require.NoError(t, err)
	require.Equal(t, StopCancelled, stop)
	events, _, err := s.Events()
	require.NoError(t, err)
	last := events[len(events)-1]
	require.Equal(t, EventAssistantMessage, last.Type)
	var d AssistantMessageData
	require.NoError(t, json.Unmarshal(last.Data, &d))
	require.Equal(t, AssistantMessageData{Text: "partial ", Partial: true, StopReason: StopCancelled}, d, "why the turn stopped, on the message it cut")
	require.Equal(t, EventReasoning, events[len(events)-2].Type)
}

func TestCancelledTurnAnswersEveryToolCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error) {
			cancel() // cancelled after the model answered, before tools ran
			return &provider.ModelResponse{ToolCalls: []provider.ToolCall{writeCall("c1", "a.txt"), writeCall("c2", "b.txt")}}, nil
		},
	}}
	s := newTestSession(t, p)
	stop, err := s.Prompt(ctx, Prompt{Text: "go"}, TurnOptions{})
	require.NoError(t, err)
	require.Equal(t, StopCancelled, stop)
	h := s.historyCopy()
	require.Len(t, h, 4, "user, assistant, and a result for each call")
	require.Contains(t, h[3].Text, `"kind":"cancelled"`)
}

func TestBusySessionRefusesASecondPrompt(t *testing.T) {
	generating, release := make(chan struct{}), make(chan struct{})
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		func(ctx context.Context, _ provider.ModelRequest, _ func(provider.Delta)) (*provider.ModelResponse, error) {
			close(generating)
			<-release
			return &provider.ModelResponse{Text: "ok"}, nil
		},
	}}
	s := newTestSession(t, p)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.Prompt(context.Background(), Prompt{Text: "one"}, TurnOptions{})
	}()
	<-generating // the first turn is running
	_, err := s.Prompt(context.Background(), Prompt{Text: "two"}, TurnOptions{})
	require.ErrorIs(t, err, ErrBusy)
	close(release)
	<-done
}

func TestProviderFailureIsATurnFailedEvent(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		func(_ context.Context, _ provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
			sink(provider.Delta{Kind: provider.DeltaText, Text: "half an answer"})
			return nil, errors.New("502 bad gateway")
		},
	}}
	s := newTestSession(t, p)
	stop, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{})
	require.NoError(t, err)
	require.Equal(t, StopEndTurn, stop)
	events, _, err := s.Events()
	require.NoError(t, err)
	var d TurnFailedData
	require.Equal(t, EventTurnFailed, events[len(events)-1].Type)
	require.NoError(t, json.Unmarshal(events[len(events)-1].Data, &d))
	require.Equal(t, TurnFailedData{Kind: tools.ErrProviderError, Message: "502 bad gateway"}, d)
	// What streamed before the failure stays, marked partial, for replay.
	var partial AssistantMessageData
	require.NoError(t, json.Unmarshal(events[len(events)-2].Data, &partial))
	require.Equal(t, AssistantMessageData{Text: "half an answer", Partial: true}, partial)
}

func TestReopenedSessionKeepsModeModelAndHistory(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){text("first answer")}}
	home, ws := t.TempDir(), t.TempDir()
	rt := New(Config{Home: home, Provider: p, Model: "m", Models: []string{"m2"}, Tools: tools.Builtins()})
	s, err := rt.NewSession(ws)
	require.NoError(t, err)
	require.NoError(t, s.SetMode(ModeReadOnly))
	require.NoError(t, s.SetModel("m2"))
	require.Error(t, s.SetModel("nope"))
	_, err = s.Prompt(context.Background(), Prompt{Text: "hello there"}, TurnOptions{})
	require.NoError(t, err)
	rt.Close()

	rt2 := New(Config{Home: home, Provider: p, Model: "m", Models: []string{"m2"}, Tools: tools.Builtins()})
	defer rt2.Close()
	list, err := rt2.ListSessions("")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "hello there", list[0].Title)
	s2, report, err := rt2.OpenSession(s.ID(), ws, nil)
	require.NoError(t, err)
	require.Equal(t, 3, report.Events)
	require.Equal(t, ModeReadOnly, s2.Mode())
	require.Equal(t, "m2", s2.Model())
	require.Equal(t, []provider.Message{{Role: provider.RoleUser, Text: "hello there"}, {Role: provider.RoleAssistant, Text: "first answer"}}, s2.historyCopy())

	_, _, err = rt2.OpenSession("../../etc", ws, nil)
	require.ErrorIs(t, err, ErrSessionNotFound)
	_, _, err = rt2.OpenSession("0000", ws, nil)
	require.ErrorIs(t, err, ErrSessionNotFound)
	require.NoError(t, rt2.CloseSession(s.ID()))
	_, err = s2.Prompt(context.Background(), Prompt{Text: "again"}, TurnOptions{})
	require.ErrorIs(t, err, ErrSessionClosed)
}

// A cancel that comes after the turn decided how it ends, before Prompt
// returns, makes it end cancelled: the client asked, and ACP answers a
// cancelled prompt "cancelled" (the provider failure's turn_failed is
// where the cancel comes here, deterministically: the observer sends it).
func TestACancelRacingTheTurnsEndAnswersCancelled(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error) {
			return nil, errors.New("the server is down")
		},
	}}
	s := newTestSession(t, p)
	stop, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Observe: func(ev Event) {
		if ev.Type == EventTurnFailed {
			s.CancelAsync() // after the turn checked for a cancel, before it returns
		}
	}})
	require.NoError(t, err)
	require.Equal(t, StopCancelled, stop)

	// The next turn is not cancelled by it.
	stop, err = s.Prompt(context.Background(), Prompt{Text: "again"}, TurnOptions{})
	require.NoError(t, err)
	require.Equal(t, StopEndTurn, stop)
}

// Tool call ids are unique in a session whatever the provider sends: one
// that numbers its calls afresh each reply (a local model server: "call_0"
// every time) or sends none. An editor keeps tool calls by id (a repeated
// one updates the old entry, an empty one is no id), and the model's next
// request pairs each result with its call under the id it was given.
func TestToolCallIDsAreUniqueInASessionWhateverTheProviderSends(t *testing.T) {
	read := func(id string) provider.ToolCall {
		return provider.ToolCall{ID: id, Name: "glob", Arguments: json.RawMessage(`{"pattern":"*"}`)}
	}
	type gen = func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error)
	p := &fakeProvider{calls: []gen{
		calls(read("call_0"), read("")), text("one"),
		calls(read("call_0"), read(""), read("")), text("two"),
	}}
	s := newTestSession(t, p)
	for _, prompt := range []string{"first", "second"} {
		stop, err := s.Prompt(context.Background(), Prompt{Text: prompt}, TurnOptions{})
		require.NoError(t, err)
		require.Equal(t, StopEndTurn, stop)
	}
	events, _, err := s.Events()
	require.NoError(t, err)
	var ids []string
	for _, ev := range events {
		if ev.Type == EventToolCall {
			var d ToolCallData
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			ids = append(ids, d.ToolCallID)
		}
	}
	require.Equal(t, []string{"call_0", "pixir-call", "call_0-2", "pixir-call-2", "pixir-call-3"}, ids)

	// The last request answers each call under its id.
	last := p.reqs[len(p.reqs)-1]
	var asked, answered []string
	for _, m := range last.Messages {
		for _, tc := range m.ToolCalls {
			asked = append(asked, tc.ID)
		}
		if m.Role == provider.RoleTool {
			answered = append(answered, m.ToolCallID)
		}
	}
	require.Equal(t, ids, asked)
	require.Equal(t, ids, answered)
}

// A turn stopped at the limit of model calls records why, as the last
// event of the turn: an assistant_message holding only the stop reason,
// which History leaves out, live and folded from the Log alike.
func TestATurnStoppedAtTheLimitRecordsWhy(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		calls(writeCall("c1", "a.txt")), calls(writeCall("c2", "b.txt")),
	}}
	rt := New(Config{Home: t.TempDir(), Provider: p, Model: "m", Tools: tools.Builtins(), MaxTurnRequests: 2})
	t.Cleanup(rt.Close)
	s, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	stop, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{})
	require.NoError(t, err)
	require.Equal(t, StopMaxTurnRequests, stop)
	events, _, err := s.Events()
	require.NoError(t, err)
	last := events[len(events)-1]
	require.Equal(t, EventAssistantMessage, last.Type)
	require.JSONEq(t, `{"text":"","stop_reason":"max_turn_requests"}`, string(last.Data))
	require.Equal(t, s.historyCopy(), foldHistory(events, s.rt.log))
	require.Equal(t, provider.RoleTool, s.historyCopy()[len(s.historyCopy())-1].Role)
}

// A fork (session/fork) is a new line of work: "always allow" was
// answered for the source session, and the fork asks again, opened now
// or later; the source still remembers it. Before, the fork carried the
// grant (its Log holds the source's decisions).
func TestAForkAsksAgainWhatItsSourceAllowedAlways(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		calls(writeCall("c1", "a.txt")), text("ok"), calls(writeCall("c2", "b.txt")), text("ok"),
		calls(writeCall("c3", "c.txt")), text("ok"), calls(writeCall("c4", "d.txt")), text("ok"),
	}}
	home, ws := t.TempDir(), t.TempDir()
	cfg := Config{Home: home, Provider: p, Model: "m", Tools: tools.Builtins()}
	rt := New(cfg)
	defer rt.Close()
	src, err := rt.NewSession(ws)
	require.NoError(t, err)
	require.NoError(t, src.SetMode(ModeAsk))
	_, err = src.Prompt(context.Background(), Prompt{Text: "one"}, TurnOptions{Ask: answer(AllowAlways)})
	require.NoError(t, err)

	fork, _, err := rt.ForkSession(src.ID(), ws)
	require.NoError(t, err)
	asker := &countingAsker{}
	_, err = fork.Prompt(context.Background(), Prompt{Text: "two"}, TurnOptions{Ask: asker})
	require.NoError(t, err)
	require.Equal(t, 1, asker.n, "the fork asks")
	forkID := fork.ID()

	asker = &countingAsker{}
	_, err = src.Prompt(context.Background(), Prompt{Text: "three"}, TurnOptions{Ask: asker})
	require.NoError(t, err)
	require.Equal(t, 0, asker.n, "the source remembers")
	rt.Close()

	// Opened again, the fork remembers what it was answered itself.
	rt2 := New(cfg)
	defer rt2.Close()
	again, _, err := rt2.OpenSession(forkID, ws, nil)
	require.NoError(t, err)
	asker = &countingAsker{}
	_, err = again.Prompt(context.Background(), Prompt{Text: "four"}, TurnOptions{Ask: asker})
	require.NoError(t, err)
	require.Equal(t, 0, asker.n, "its own allow always holds")
}

// An answer cut off while it streamed a tool call's arguments (no text)
// reports no usage, though the server generated and bills them: it was
// counted only by its text and reasoning, so nothing. The fragments are
// counted, estimated; no notice blames the server, whose count would have
// come at the answer's end.
func TestACutToolCallCountsItsFragments(t *testing.T) {
	args := `{"path":"a.txt","content":"` + strings.Repeat("x", 4000)
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		func(_ context.Context, _ provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
			sink(provider.Delta{Kind: provider.DeltaToolCall, Text: "write"})
			for i := 0; i < len(args); i += 100 {
				sink(provider.Delta{Kind: provider.DeltaToolCall, Text: args[i:min(i+100, len(args))]})
			}
			return nil, errors.New("the connection broke")
		},
	}}
	s := newTestSession(t, p)
	var rec recorder
	_, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Observe: rec.observe})
	require.NoError(t, err)
	require.Equal(t, []EventType{EventUserMessage, EventProviderUsage, EventTurnFailed}, rec.types(),
		"nothing was shown: no text delta, no partial message, no notice")
	var u ProviderUsageData
	for _, ev := range rec.events {
		if ev.Type == EventProviderUsage {
			require.NoError(t, json.Unmarshal(ev.Data, &u))
		}
	}
	require.True(t, u.Estimated)
	require.InDelta(t, 1000, u.OutputTokens, 100, "about 4 bytes a token")
}

// A cancelled answer's usage is estimated without the notice that the
// server reports none: its count comes at the answer's end, which a cut
// never reaches (review34c #1).
func TestACancelledAnswerDoesNotBlameTheServerForItsUsage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		func(c context.Context, _ provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
			sink(provider.Delta{Kind: provider.DeltaText, Text: "Here is a long answer"})
			cancel()
			<-c.Done()
			return nil, c.Err()
		},
	}}
	s := newTestSession(t, p)
	var rec recorder
	_, _ = s.Prompt(ctx, Prompt{Text: "go"}, TurnOptions{Observe: rec.observe})
	require.NotContains(t, rec.types(), EventNotice)
	require.Contains(t, rec.types(), EventProviderUsage, "what streamed is still charged")
}
