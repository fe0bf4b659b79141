package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
)

// windowed plays a model with a small context window, counting a request's
// tokens its own way (a third of its JSON, which Pixir's estimate does not
// know): a request over the window is refused with a context-length error,
// as real servers do; a summary request (no tools) is answered with a
// summary; any other reads the next file.
type windowed struct {
	window int
	// failSummary makes summaries fail, as a flaky server would.
	failSummary bool
	// chat answers every prompt in one call, with text.
	chat bool
	// summaryNoUsage answers summaries without usage, as a server that
	// ignores stream_options.include_usage does.
	summaryNoUsage bool

	mu       sync.Mutex
	calls    int
	sent     []int // tokens of each request received
	requests []provider.ModelRequest
}

type overflowError struct{ window int }

func (e overflowError) Error() string {
	return fmt.Sprintf("this model's maximum context length is %d tokens", e.window)
}
func (e overflowError) ContextOverflow() (int, bool) { return e.window, true }

func tokensOf(req provider.ModelRequest) int {
	b, _ := json.Marshal(req)
	return len(b) / 3
}

func (p *windowed) Name() string { return "windowed" }

func (p *windowed) Generate(_ context.Context, req provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
	n := tokensOf(req)
	p.mu.Lock()
	p.sent = append(p.sent, n)
	p.requests = append(p.requests, req)
	p.calls++
	call := p.calls
	p.mu.Unlock()
	if n > p.window {
		return nil, overflowError{p.window}
	}
	usage := &provider.Usage{InputTokens: n, OutputTokens: 10}
	if len(req.Tools) == 0 {
		if p.failSummary {
			return nil, errors.New("the summary failed")
		}
		text := fmt.Sprintf("SUMMARY %d: the user asked to read the files one by one; all were read.", call)
		sink(provider.Delta{Kind: provider.DeltaText, Text: text})
		if p.summaryNoUsage {
			usage = nil
		}
		return &provider.ModelResponse{Text: text, Usage: usage}, nil
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == provider.RoleTool || p.chat {
		return &provider.ModelResponse{Text: "read it", Usage: usage}, nil
	}
	args, _ := json.Marshal(map[string]string{"path": strings.TrimPrefix(last.Text, "read ")})
	return &provider.ModelResponse{ToolCalls: []provider.ToolCall{{ID: fmt.Sprintf("call_%d", call), Name: "read", Arguments: args}}, Usage: usage}, nil
}

func (p *windowed) received() ([]int, []provider.ModelRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.sent...), append([]provider.ModelRequest(nil), p.requests...)
}

// compactionSession is a session on p with only the read tool, its
// workspace holding n files of 3 KB, and the runtime's config as cfg says.
func compactionSession(t *testing.T, p provider.Provider, cfg Config, n int) (*Session, *recorder) {
	t.Helper()
	cfg.Home, cfg.Provider, cfg.Model, cfg.Tools = t.TempDir(), p, "m", []tools.Tool{tools.ReadTool()}
	rt := New(cfg)
	t.Cleanup(rt.Close)
	ws := t.TempDir()
	for i := range n {
		body := strings.Repeat(fmt.Sprintf("line %d of file %d, ", i, i), 150)
		require.NoError(t, os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte(body), 0o644))
	}
	s, err := rt.NewSession(ws)
	require.NoError(t, err)
	rec := &recorder{}
	s.SetObserver(rec.observe)
	return s, rec
}

func readAll(t *testing.T, s *Session, rec *recorder, n int) {
	t.Helper()
	for i := range n {
		stop, err := s.Prompt(context.Background(), Prompt{Text: fmt.Sprintf("read f%d.txt", i)}, TurnOptions{Observe: rec.observe})
		require.NoError(t, err)
		require.Equal(t, StopEndTurn, stop)
	}
}

func TestCompactionKeepsRequestsUnderTheWindow(t *testing.T) {
	p := &windowed{window: 9000}
	s, rec := compactionSession(t, p, Config{ContextWindow: 9000}, 12)
	readAll(t, s, rec, 12)

	sent, reqs := p.received()
	for i, n := range sent {
		require.LessOrEqual(t, n, 9000, "request %d went past the window", i)
	}
	compactions := eventsOf[CompactionData](t, rec, EventCompaction)
	require.NotEmpty(t, compactions, "12 files of 3 KB do not fit 9,000 tokens")
	c := compactions[0]
	require.Equal(t, CompactionThreshold, c.Reason)
	require.Equal(t, SummarizerModel, c.Method)
	require.Contains(t, c.Summary, "SUMMARY")
	require.Less(t, c.TokensAfter, c.TokensBefore)
	require.Greater(t, c.Replaced, 0)

	// The summary was streamed to whoever watches, and shown first.
	require.NotEmpty(t, eventsOf[CompactionProgressData](t, rec, EventCompactionProgress))
	require.NotEmpty(t, eventsOf[CompactionProgressData](t, rec, EventCompactionDelta))

	// Later requests start from the summary, and no longer carry the
	// first file.
	last := reqs[len(reqs)-1]
	require.True(t, strings.HasPrefix(last.Messages[0].Text, summaryPrefix), last.Messages[0].Text)
	require.NotContains(t, messagesText(last.Messages), "line 0 of file 0")

	// The summary's call was counted like any other.
	var purposes []string
	for _, u := range eventsOf[ProviderUsageData](t, rec, EventProviderUsage) {
		purposes = append(purposes, u.Purpose)
	}
	require.Contains(t, purposes, "compaction")

	// History is a fold over the Log, and so is a session reopened from it.
	events, _, err := s.Events()
	require.NoError(t, err)
	require.Equal(t, s.historyCopy(), foldHistory(events, s.rt.log))
	id, ws := s.ID(), s.Workspace().Root()
	s.rt.Close()
	rt2 := New(s.rt.cfg)
	defer rt2.Close()
	s2, _, err := rt2.OpenSession(id, ws, nil)
	require.NoError(t, err)
	require.Equal(t, s.historyCopy(), s2.historyCopy())
	_, err = s2.Prompt(context.Background(), Prompt{Text: "read f0.txt"}, TurnOptions{})
	require.NoError(t, err)
	sent, reqs = p.received()
	require.LessOrEqual(t, sent[len(sent)-1], 9000)
	require.True(t, strings.HasPrefix(reqs[len(reqs)-1].Messages[0].Text, summaryPrefix), "the reopened session goes on from the summary")
}

func TestTheFallbackKeepsRecentTurnsAndCutsOldResults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       *windowed
		cfg     CompactionConfig
		modelEr string
	}{
		{"configured", &windowed{window: 9000}, CompactionConfig{Summarizer: SummarizerFallback}, ""},
		{"the model's summary failed", &windowed{window: 9000, failSummary: true}, CompactionConfig{}, "the summary failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, rec := compactionSession(t, tc.p, Config{ContextWindow: 9000, Compaction: tc.cfg}, 12)
			readAll(t, s, rec, 12)
			sent, reqs := tc.p.received()
			for _, n := range sent {
				require.LessOrEqual(t, n, 9000)
			}
			c := eventsOf[CompactionData](t, rec, EventCompaction)[0]
			require.Equal(t, SummarizerFallback, c.Method)
			require.Equal(t, tc.modelEr, c.ModelError)
			require.Contains(t, c.Summary, "Pixir's digest of the earlier conversation")
			require.Contains(t, c.Summary, "User: read f0.txt")
			require.Contains(t, c.Summary, "called read {\"path\":\"f0.txt\"}")
			require.Contains(t, c.Summary, "Result of read: ", "old results are kept, cut short")
			require.Less(t, strings.Count(c.Summary, "line 0 of file 0"), 20, "a result of 3 KB is cut to a few hundred bytes")
			// The recent turns are word for word.
			last := reqs[len(reqs)-1].Messages
			require.Equal(t, "read f11.txt", last[len(last)-3].Text)
			events, _, err := s.Events()
			require.NoError(t, err)
			require.Equal(t, s.historyCopy(), foldHistory(events, s.rt.log))
		})
	}
}

func TestAContextLengthErrorIsLearnedCompactedAndRetried(t *testing.T) {
	// Nothing configured: the window is learned from the refusal.
	p := &windowed{window: 9000}
	s, rec := compactionSession(t, p, Config{}, 14)
	readAll(t, s, rec, 14)
	require.Equal(t, 9000, s.rt.compactionWindow("m"), "the window the error named")
	cs := eventsOf[CompactionData](t, rec, EventCompaction)
	require.NotEmpty(t, cs)
	require.Equal(t, CompactionContextLength, cs[0].Reason)
	require.Empty(t, eventsOf[TurnFailedData](t, rec, EventTurnFailed), "the refused call was made again, and went through")
	sent, _ := p.received()
	over := 0
	for _, n := range sent {
		if n > 9000 {
			over++
		}
	}
	require.Equal(t, 1, over, "once learned, no request passes the window again")
}

func TestCompactionCanBeTurnedOff(t *testing.T) {
	p := &windowed{window: 9000}
	s, rec := compactionSession(t, p, Config{ContextWindow: 9000, Compaction: CompactionConfig{Disabled: true}}, 12)
	for i := range 12 {
		_, err := s.Prompt(context.Background(), Prompt{Text: fmt.Sprintf("read f%d.txt", i)}, TurnOptions{Observe: rec.observe})
		require.NoError(t, err)
	}
	require.Empty(t, eventsOf[CompactionData](t, rec, EventCompaction))
	require.NotEmpty(t, eventsOf[TurnFailedData](t, rec, EventTurnFailed), "the provider's refusal ends the turn")
}

func TestKeptFromNeverOrphansAToolResult(t *testing.T) {
	big := strings.Repeat("x", 4000)
	h := []provider.Message{
		{Role: provider.RoleUser, Text: "one"},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "a", Name: "read"}}},
		{Role: provider.RoleTool, ToolCallID: "a", Text: big},
		{Role: provider.RoleAssistant, Text: "done"},
		{Role: provider.RoleUser, Text: "two"},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "b", Name: "read"}, {ID: "c", Name: "read"}}},
		{Role: provider.RoleTool, ToolCallID: "b", Text: big},
		{Role: provider.RoleTool, ToolCallID: "c", Text: big},
	}
	cut, truncate := keptFrom(h, 100000)
	require.Equal(t, 0, cut, "everything fits")
	require.Zero(t, truncate)
	cut, truncate = keptFrom(h, 8500)
	require.Equal(t, 3, cut, "what fits, beginning at a message that is no tool result")
	require.Zero(t, truncate)
	cut, truncate = keptFrom(h, 3000)
	require.Equal(t, 5, cut)
	require.Equal(t, 1024, truncate, "the last exchange alone is too heavy: its results are cut")
	after := compacted(h, CompactionData{Summary: "s", Kept: len(h) - cut, TruncateResults: truncate})
	require.Equal(t, provider.RoleAssistant, after[1].Role)
	require.Less(t, len(after[2].Text), 1200)
	require.Contains(t, after[2].Text, "bytes cut by compaction")
}

// The correction of the token estimate that the provider's counts made is
// folded from the Log when the session is opened again: each turn's
// provider_usage records what the request weighed. It lived in memory
// only, so after pixir resume or session/load the first estimate was 4
// bytes a token again, and compaction started later than it should.
func TestTheTokenEstimatesCorrectionSurvivesALoad(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error) {
			// Twice what 4 bytes a token makes of the request.
			return &provider.ModelResponse{Text: "hi", Usage: &provider.Usage{InputTokens: 1 << 20, OutputTokens: 1}}, nil
		},
	}}
	home, ws := t.TempDir(), t.TempDir()
	cfg := Config{Home: home, Provider: p, Model: "m", Tools: tools.Builtins()}
	rt := New(cfg)
	s, err := rt.NewSession(ws)
	require.NoError(t, err)
	_, err = s.Prompt(context.Background(), Prompt{Text: "hello"}, TurnOptions{})
	require.NoError(t, err)
	live := s.calib
	require.Equal(t, 4.0, live, "the provider counted more than 4 bytes a token make (capped)")
	events, _, err := s.Events()
	require.NoError(t, err)
	var usage ProviderUsageData
	require.NoError(t, json.Unmarshal(events[len(events)-1].Data, &usage))
	require.Positive(t, usage.RequestBytes, "what the request weighed is in the Log")
	id := s.ID()
	rt.Close()

	rt2 := New(cfg)
	defer rt2.Close()
	s2, _, err := rt2.OpenSession(id, ws, nil)
	require.NoError(t, err)
	require.Equal(t, live, s2.calib)
	require.Equal(t, s.tokens(1000), s2.tokens(1000))
}

// A fork (session/fork) starts with its source's conversation, and with
// the correction of the token estimate the source's provider counts made:
// ForkSession leaves the source's provider_usage out (what it spent is not
// the fork's), so the fork estimated 4 bytes a token again, and a turn
// whose first request passed the threshold did not compact where its
// source did. Source and fork, given the same prompt, compact alike.
// Each turn is one model call, so that the threshold is passed at a
// turn's first call, before any count of the fork's own.
func TestCompactionStartsWhereItShouldAfterAFork(t *testing.T) {
	p := &windowed{window: 9000, chat: true}
	s, _ := compactionSession(t, p, Config{ContextWindow: 9000}, 0)
	compacted := 0
	for i := range 16 {
		fork, _, err := s.rt.ForkSession(s.ID(), s.Workspace().Root())
		require.NoError(t, err)
		require.Equal(t, s.calibration(), fork.calibration(), "before prompt %d: the fork corrects its estimate as its source does", i)
		require.Zero(t, fork.Usage().InputTokens, "what the source spent is not the fork's")
		var reasons [2][]string
		for j, sess := range []*Session{s, fork} {
			rec := &recorder{}
			text := fmt.Sprintf("note %d: %s", i, strings.Repeat(fmt.Sprintf("word %d, ", i), 300))
			_, err := sess.Prompt(context.Background(), Prompt{Text: text}, TurnOptions{Observe: rec.observe})
			require.NoError(t, err)
			for _, c := range eventsOf[CompactionData](t, rec, EventCompaction) {
				reasons[j] = append(reasons[j], c.Reason)
			}
		}
		require.Equal(t, reasons[0], reasons[1], "prompt %d: the fork compacts where its source does", i)
		compacted += len(reasons[0])
	}
	require.Positive(t, compacted, "16 notes of 2 KB do not fit 9,000 tokens")
	sent, _ := p.received()
	for i, n := range sent {
		require.LessOrEqual(t, n, 9000, "request %d went past the window", i)
	}
}

// A summary the server reported no usage for is estimated, as a turn's
// answer is, and says so: the once-per-session notice was only sent for a
// turn's answer, so a session whose only uncounted calls were summaries
// showed estimates as counts.
func TestAnEstimatedSummaryIsSaidToBeEstimated(t *testing.T) {
	p := &windowed{window: 9000, summaryNoUsage: true}
	s, rec := compactionSession(t, p, Config{ContextWindow: 9000}, 12)
	readAll(t, s, rec, 12)
	var summaries []ProviderUsageData
	for _, u := range eventsOf[ProviderUsageData](t, rec, EventProviderUsage) {
		if u.Purpose == "compaction" {
			summaries = append(summaries, u)
		}
	}
	require.NotEmpty(t, summaries)
	for _, u := range summaries {
		require.True(t, u.Estimated)
		require.Positive(t, u.OutputTokens)
	}
	var told int
	for _, n := range eventsOf[NoticeData](t, rec, EventNotice) {
		if n.Title == "The model server reported no token usage" {
			told++
		}
	}
	require.Equal(t, 1, told, "said once")
}
