package runtime

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
)

// metered reports usage on every answer of p: 100 tokens in, 10 out.
type metered struct{ p provider.Provider }

func (m metered) Name() string { return m.p.Name() }

func (m metered) Generate(ctx context.Context, req provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
	resp, err := m.p.Generate(ctx, req, sink)
	if resp != nil {
		resp.Usage = &provider.Usage{InputTokens: 100, OutputTokens: 10, ContextWindow: 1000}
	}
	return resp, err
}

// listing calls list_agents for ever, spending 110 tokens a call.
type listing struct{ n int }

func (l *listing) Name() string { return "listing" }

func (l *listing) Generate(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error) {
	l.n++
	id := "call_" + string(rune('a'+l.n))
	return &provider.ModelResponse{ToolCalls: []provider.ToolCall{{ID: id, Name: "list_agents", Arguments: json.RawMessage(`{}`)}},
		Usage: &provider.Usage{InputTokens: 100, OutputTokens: 10, ContextWindow: 1000}}, nil
}

func budgetSession(t *testing.T, p provider.Provider, cfg Config) (*Session, *recorder) {
	t.Helper()
	cfg.Home, cfg.Provider, cfg.Model, cfg.Tools = t.TempDir(), p, "m", tools.Builtins()
	rt := New(cfg)
	t.Cleanup(rt.Close)
	s, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	rec := &recorder{}
	s.SetObserver(rec.observe)
	return s, rec
}

func eventsOf[D any](t *testing.T, rec *recorder, typ EventType) []D {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []D
	for _, ev := range rec.events {
		if ev.Type == typ {
			var d D
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			out = append(out, d)
		}
	}
	return out
}

func TestASpentSessionBudgetRefusesTheNextModelCall(t *testing.T) {
	p := &listing{}
	s, rec := budgetSession(t, p, Config{Budget: BudgetConfig{Session: budget.Limit{Tokens: 200}}})
	stop, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Observe: rec.observe})
	require.NoError(t, err)
	require.Equal(t, StopMaxTokens, stop, "ACP's max_tokens: the budget ended the turn")
	require.Equal(t, 2, p.n, "110 then 220 tokens: the third call is refused")

	failed := eventsOf[TurnFailedData](t, rec, EventTurnFailed)
	require.Len(t, failed, 1)
	require.Equal(t, tools.ErrBudgetExhausted, failed[0].Kind)
	require.Contains(t, failed[0].Message, "the budget of the session is spent (220 tokens")
	require.Contains(t, failed[0].Message, "raise session_tokens")

	notices := eventsOf[NoticeData](t, rec, EventNotice)
	require.Len(t, notices, 1, "the soft limit warns once, at 80%%")
	require.Equal(t, "warning", notices[0].Severity)
	require.Equal(t, "The session has spent 110% of its budget", notices[0].Title)

	usage := eventsOf[UsageData](t, rec, EventUsage)
	require.Len(t, usage, 2)
	require.Equal(t, UsageData{Used: 110, Window: 1000, Total: budget.Usage{InputTokens: 200, OutputTokens: 20, ModelCalls: 2}}, usage[1])
	require.Equal(t, budget.Usage{InputTokens: 200, OutputTokens: 20, ModelCalls: 2}, s.Usage())

	// A new turn is refused at once, and so is a spawn.
	stop, err = s.Prompt(context.Background(), Prompt{Text: "again"}, TurnOptions{Observe: rec.observe})
	require.NoError(t, err)
	require.Equal(t, StopMaxTokens, stop)
	require.Equal(t, 2, p.n)
	_, err = binding{m: s.rt.subagents, parent: s}.Spawn(context.Background(), tools.SpawnRequest{Task: "x"})
	require.Equal(t, tools.ErrBudgetExhausted, tools.AsFailure(err).Kind)
}

func TestAReopenedSessionCountsWhatItSpent(t *testing.T) {
	p := &listing{}
	home, ws := t.TempDir(), t.TempDir()
	cfg := Config{Home: home, Provider: p, Model: "m", Tools: tools.Builtins(), Budget: BudgetConfig{Session: budget.Limit{Tokens: 200}},
		ModelInfo: map[string]ModelInfo{"m": {InputPrice: ptr(1.0), OutputPrice: ptr(10.0)}}}
	rt := New(cfg)
	s, err := rt.NewSession(ws)
	require.NoError(t, err)
	_, err = s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{})
	require.NoError(t, err)
	spent := s.Usage()
	require.InDelta(t, 2*(100*1.0+10*10.0)/1e6, spent.Cost, 1e-12)
	require.Equal(t, "USD", spent.Currency)
	id := s.ID()
	rt.Close()

	rt2 := New(cfg)
	defer rt2.Close()
	s2, _, err := rt2.OpenSession(id, ws, nil)
	require.NoError(t, err)
	require.Equal(t, spent.Tokens(), s2.Usage().Tokens())
	require.InDelta(t, spent.Cost, s2.Usage().Cost, 1e-12)
	stop, err := s2.Prompt(context.Background(), Prompt{Text: "again"}, TurnOptions{})
	require.NoError(t, err)
	require.Equal(t, StopMaxTokens, stop, "the budget is the session's, across processes")
}

func ptr[T any](v T) *T { return &v }

func TestASubagentsBudgetEndsItAndItsUsageIsShown(t *testing.T) {
	f := newManagerFixtureWith(t, SubagentConfig{}, metered{childProvider{}})
	f.rt.cfg.Budget.Subagent = budget.Limit{Tokens: 100}
	// "call list_agents" makes two model calls: the second is refused.
	v := f.spawn(t, "call list_agents")
	out := f.wait(t, v.ID)
	got := out.Agents[0]
	require.Equal(t, tools.SubagentFailed, got.Status)
	require.Equal(t, tools.ErrBudgetExhausted, got.Error.Kind)
	require.Contains(t, got.Error.Message, "the budget of subagent "+v.ID+" is spent")
	require.Equal(t, &budget.Usage{InputTokens: 100, OutputTokens: 10, ModelCalls: 1}, got.Usage)
	require.Equal(t, int64(110), f.parent.Usage().Tokens(), "the parent's session pays for its children")

	// The end event in the parent's Log carries the usage, for inspect
	// and for a reopened session's budget.
	var ended SubagentEventData
	for _, d := range f.events.all() {
		if d.SubagentID == v.ID && d.Status.Ended() {
			ended = d
		}
	}
	require.Equal(t, got.Usage, ended.Usage)

	listed, err := f.b.List(context.Background())
	require.NoError(t, err)
	require.Equal(t, got.Usage, listed[0].Usage)
}

// A child's priced call changes what the user's session spent: the editor
// is shown the new total at once (usage_update), the parent's context as
// it was.
func TestAChildsPricedCallShowsTheSessionsNewTotal(t *testing.T) {
	f := newManagerFixtureWith(t, SubagentConfig{}, metered{childProvider{}})
	f.rt.cfg.ModelInfo = map[string]ModelInfo{"m": {InputPrice: ptr(1.0), OutputPrice: ptr(10.0)}}
	rec := &recorder{}
	f.parent.SetObserver(func(ev Event) { f.events.observe(ev); rec.observe(ev) })
	v := f.spawn(t, "one")
	f.wait(t, v.ID)
	usage := eventsOf[UsageData](t, rec, EventUsage)
	require.NotEmpty(t, usage, "the child's call was shown on the parent's session")
	last := usage[len(usage)-1]
	require.Equal(t, int64(0), last.Used, "the parent's own context is unchanged")
	require.Equal(t, int64(110), last.Total.Tokens())
	require.InDelta(t, (100*1.0+10*10.0)/1e6, last.Total.Cost, 1e-12)
	require.Equal(t, "USD", last.Total.Currency)
}

func TestTheCapOnSubagentsRefusesTheNextSpawn(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{MaxSubagents: 2})
	f.spawn(t, "one")
	f.spawn(t, "two")
	_, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Task: "three"})
	fail := tools.AsFailure(err)
	require.Equal(t, tools.ErrBudgetExhausted, fail.Kind)
	require.Contains(t, fail.Message, "this session has spawned 2 subagents, as many as [agents] max_subagents allows")
}

func (c *collector) all() []SubagentEventData {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]SubagentEventData(nil), c.events...)
}
