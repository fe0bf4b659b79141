package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
)

// sleeper answers a task "sleep 10s" after ten seconds (of the bubble's
// clock), or when cancelled.
type sleeper struct{}

func (sleeper) Name() string { return "sleeper" }

func (sleeper) Generate(ctx context.Context, req provider.ModelRequest, _ func(provider.Delta)) (*provider.ModelResponse, error) {
	var user string
	for _, m := range req.Messages {
		if m.Role == provider.RoleUser {
			user = m.Text
		}
	}
	d, err := time.ParseDuration(strings.TrimPrefix(user, "sleep "))
	if err != nil {
		return &provider.ModelResponse{Text: "did: " + user}, nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return &provider.ModelResponse{Text: "slept " + d.String()}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitCall is wait_agent as the model calls it, with these arguments.
func waitCall(t *testing.T, b binding, args string) tools.WaitOutcome {
	t.Helper()
	res := tools.WaitAgentTool().Run(context.Background(), tools.Env{Subagents: b}, json.RawMessage(args))
	require.Nil(t, res.Error, "wait_agent failed: %+v", res.Error)
	raw, err := json.Marshal(res.Output)
	require.NoError(t, err)
	var out tools.WaitOutcome
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// inBubble runs f with a runtime whose clock is the synctest bubble's: a
// wait of 30 seconds takes no time, and what the test reads of the clock
// is what the runtime saw.
func inBubble(t *testing.T, cfg SubagentConfig, f func(t *testing.T, b binding)) {
	synctest.Test(t, func(t *testing.T) {
		rt := New(Config{Home: t.TempDir(), Provider: sleeper{}, Model: "m", Tools: tools.Builtins(), Subagents: cfg})
		defer rt.Close()
		parent, err := rt.NewSession(t.TempDir())
		require.NoError(t, err)
		f(t, binding{m: rt.subagents, parent: parent, toolCallID: "call-1"})
	})
}

func spawnTask(t *testing.T, b binding, task string, timeout time.Duration) string {
	t.Helper()
	v, err := b.Spawn(context.Background(), tools.SpawnRequest{Task: task, WorkspaceMode: WorkspaceShared, Timeout: timeout})
	require.NoError(t, err)
	return v.ID
}

func statusOf(out tools.WaitOutcome) map[string]tools.SubagentStatus {
	m := map[string]tools.SubagentStatus{}
	for _, a := range out.Agents {
		m[a.ID] = a.Status
	}
	return m
}

func TestWaitAgentWithoutATimeoutWaits(t *testing.T) {
	t.Run("for every child: until the slower one ends", func(t *testing.T) {
		inBubble(t, SubagentConfig{}, func(t *testing.T, b binding) {
			fast, slow := spawnTask(t, b, "sleep 1s", 0), spawnTask(t, b, "sleep 10s", 0)
			start := time.Now()
			out := waitCall(t, b, `{}`)
			require.Equal(t, 10*time.Second, time.Since(start))
			require.False(t, out.Incomplete)
			require.ElementsMatch(t, []string{fast, slow}, out.Finished)
			require.Equal(t, map[string]tools.SubagentStatus{fast: tools.SubagentCompleted, slow: tools.SubagentCompleted}, statusOf(out))
		})
	})
	t.Run("for any: until the faster one ends", func(t *testing.T) {
		inBubble(t, SubagentConfig{}, func(t *testing.T, b binding) {
			fast, slow := spawnTask(t, b, "sleep 1s", 0), spawnTask(t, b, "sleep 10s", 0)
			start := time.Now()
			out := waitCall(t, b, `{"return_when":"any"}`)
			require.Equal(t, time.Second, time.Since(start))
			require.False(t, out.Incomplete)
			require.Equal(t, []string{fast}, out.Finished)
			require.Equal(t, []string{slow}, out.Pending)
		})
	})
	t.Run("no longer than the default; waiting again gets the rest", func(t *testing.T) {
		inBubble(t, SubagentConfig{}, func(t *testing.T, b binding) {
			fast, slow := spawnTask(t, b, "sleep 1s", 0), spawnTask(t, b, "sleep 50s", 0)
			start := time.Now()
			out := waitCall(t, b, `{}`)
			require.Equal(t, DefaultWaitTimeout, time.Since(start))
			require.True(t, out.Incomplete)
			require.Equal(t, []string{fast}, out.Finished)
			require.Equal(t, []string{slow}, out.Pending)
			out = waitCall(t, b, `{}`)
			require.Equal(t, 50*time.Second, time.Since(start))
			require.False(t, out.Incomplete)
		})
	})
	t.Run("the configured default", func(t *testing.T) {
		inBubble(t, SubagentConfig{WaitTimeout: 5 * time.Second}, func(t *testing.T, b binding) {
			spawnTask(t, b, "sleep 1m", 0)
			start := time.Now()
			require.True(t, waitCall(t, b, `{}`).Incomplete)
			require.Equal(t, 5*time.Second, time.Since(start))
		})
	})
	t.Run("no longer than the children's own deadlines", func(t *testing.T) {
		inBubble(t, SubagentConfig{}, func(t *testing.T, b binding) {
			id := spawnTask(t, b, "sleep 1m", 3*time.Second)
			_ = waitCall(t, b, `{"timeout_ms":0}`) // it has started
			start := time.Now()
			out := waitCall(t, b, `{}`)
			require.LessOrEqual(t, time.Since(start), 3*time.Second+deadlineGrace)
			require.False(t, out.Incomplete, "the child ended at its deadline, and the wait with it")
			require.Equal(t, map[string]tools.SubagentStatus{id: tools.SubagentTimedOut}, statusOf(out))
		})
	})
	t.Run("0 only looks", func(t *testing.T) {
		inBubble(t, SubagentConfig{}, func(t *testing.T, b binding) {
			a, c := spawnTask(t, b, "sleep 1s", 0), spawnTask(t, b, "sleep 10s", 0)
			start := time.Now()
			out := waitCall(t, b, `{"timeout_ms":0}`)
			require.Zero(t, time.Since(start))
			require.True(t, out.Incomplete)
			require.ElementsMatch(t, []string{a, c}, out.Pending)
			require.NoError(t, waitUntilEnded(b))
		})
	})
}

// waitUntilEnded lets every child end, so the bubble can close.
func waitUntilEnded(b binding) error {
	_, err := b.Wait(context.Background(), tools.WaitRequest{Timeout: noHorizon})
	return err
}

// delegating plays a parent that spawns a child on "spawn …" and answers
// "ok" otherwise, and a child that answers "did: TASK"; it keeps every
// request.
type delegating struct {
	mu   chan struct{}
	reqs []provider.ModelRequest
	// hold keeps children from answering until it is closed.
	hold chan struct{}
}

func newDelegating() *delegating {
	return &delegating{mu: make(chan struct{}, 1), hold: make(chan struct{})}
}

func (p *delegating) Name() string { return "delegating" }

func (p *delegating) Generate(_ context.Context, req provider.ModelRequest, _ func(provider.Delta)) (*provider.ModelResponse, error) {
	p.mu <- struct{}{}
	p.reqs = append(p.reqs, req)
	<-p.mu
	first, last := req.Messages[0], req.Messages[len(req.Messages)-1]
	switch {
	case strings.HasPrefix(first.Text, "task "):
		<-p.hold
		return &provider.ModelResponse{Text: "did: " + first.Text}, nil
	case strings.HasPrefix(last.Text, "spawn ") && last.Role == provider.RoleUser:
		args, _ := json.Marshal(map[string]string{"task": "task " + strings.TrimPrefix(last.Text, "spawn "), "workspace_mode": "shared"})
		return &provider.ModelResponse{ToolCalls: []provider.ToolCall{{ID: "call_spawn", Name: "spawn_agent", Arguments: args}}}, nil
	}
	return &provider.ModelResponse{Text: "ok"}, nil
}

func (p *delegating) requests() []provider.ModelRequest {
	p.mu <- struct{}{}
	defer func() { <-p.mu }()
	return append([]provider.ModelRequest(nil), p.reqs...)
}

func TestAChildThatEndedUnseenIsFoldedIntoTheNextModelCall(t *testing.T) {
	p := newDelegating()
	f := newManagerFixtureWith(t, SubagentConfig{}, p)
	ctx := context.Background()
	_, err := f.parent.Prompt(ctx, Prompt{Text: "spawn look around"}, TurnOptions{})
	require.NoError(t, err)
	child := f.events.all()[0].SubagentID // from its queued event: no model looked
	close(p.hold)                         // it ends after the turn that spawned it
	f.events.await(child, tools.SubagentEventFinished)
	awaitEnded(f.rt.subagents, child) // its end is recorded before its status is set

	_, err = f.parent.Prompt(ctx, Prompt{Text: "what now?"}, TurnOptions{})
	require.NoError(t, err)
	reqs := p.requests()
	last := reqs[len(reqs)-1].Messages
	folded := last[len(last)-1]
	require.Equal(t, provider.RoleUser, folded.Role)
	require.Contains(t, folded.Text, "[Pixir, not the user] These subagents of yours ended while you were not waiting for them")
	require.Contains(t, folded.Text, "- "+child+" (default) completed, task: task look around")
	require.Contains(t, folded.Text, "summary: did: task look around")
	require.Equal(t, "what now?", last[len(last)-2].Text, "after the user's prompt")

	// Once: the next call does not repeat it.
	_, err = f.parent.Prompt(ctx, Prompt{Text: "and now?"}, TurnOptions{})
	require.NoError(t, err)
	reqs = p.requests()
	again := reqs[len(reqs)-1].Messages
	require.Equal(t, "and now?", again[len(again)-1].Text)
	require.Equal(t, 1, strings.Count(messagesText(again), "[Pixir, not the user]"))

	// The Log holds it: History folded from the Log is the live one.
	events, _, err := f.parent.Events()
	require.NoError(t, err)
	require.Equal(t, f.parent.historyCopy(), foldHistory(events, f.rt.log))
}

func TestAChildWhoseEndTheModelSawIsNotFolded(t *testing.T) {
	p := newDelegating()
	f := newManagerFixtureWith(t, SubagentConfig{}, p)
	ctx := context.Background()
	_, err := f.parent.Prompt(ctx, Prompt{Text: "spawn look around"}, TurnOptions{})
	require.NoError(t, err)
	close(p.hold)
	out := waitCall(t, f.b, `{}`) // as the model's wait_agent would
	require.Len(t, out.Finished, 1)
	_, err = f.parent.Prompt(ctx, Prompt{Text: "what now?"}, TurnOptions{})
	require.NoError(t, err)
	reqs := p.requests()
	require.NotContains(t, messagesText(reqs[len(reqs)-1].Messages), "[Pixir, not the user]")
}

// awaitEnded waits until the child's run has ended: its status set, its
// done closed.
func awaitEnded(m *Manager, id string) {
	m.mu.Lock()
	done := m.byID[id].done
	m.mu.Unlock()
	<-done
}

func messagesText(ms []provider.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Text + "\n")
	}
	return b.String()
}
