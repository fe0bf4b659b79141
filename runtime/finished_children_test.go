package runtime

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// A finished child of a long workflow is not kept live: its session (its
// History, tools, commands) is let go once its run has ended, with what a
// next run needs kept beside its Log (made again if it runs again), no
// goroutine stays, and what the runtime keeps of it (its record, its
// outcome, its task) is a bounded number of bytes: the live heap after 400
// steps exceeds the heap after 100 by less than perChild for each of those
// 400 children. Counted after a full collection, not timed.
func TestFinishedChildrenReleaseTheirSessionsGoroutinesAndMemory(t *testing.T) {
	// Bytes of live heap a finished step may keep: its subagent record, its
	// prompt and outcome, its dormant session. ~2.6 KiB here; 4.5 KiB when
	// a finished child kept its session, 5.9 KiB when that session kept
	// its registry (which the checks below catch on their own).
	const perChild = 3 << 10
	rt := New(Config{Home: t.TempDir(), Provider: doneProvider{}, Model: "m", Tools: tools.Builtins()})
	defer rt.Close()
	parent, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	ports := binding{m: rt.subagents, parent: parent, toolCallID: "call-1"}.workflowPorts()
	// The goroutines before the runs: a finished child's must all end
	// (goleak retries, since the last may still be returning).
	running := goleak.IgnoreCurrent()

	run := func(n int) {
		w := &workflows.Workflow{Name: fmt.Sprintf("w%d", n), MaxConcurrency: 8}
		for i := range n {
			s := workflows.Step{ID: fmt.Sprintf("s%d", i), Task: fmt.Sprintf("Do part %d.", i)}
			if i > 0 {
				s.DependsOn = []string{fmt.Sprintf("s%d", (i-1)/2)}
			}
			w.Steps = append(w.Steps, s)
		}
		w.Normalize()
		p, err := workflows.Prepare(w, ports)
		require.NoError(t, err)
		out := p.Run(context.Background(), workflows.RunOptions{WorkflowID: w.Name})
		require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)
	}
	liveHeap := func() uint64 {
		var m goruntime.MemStats
		goruntime.GC()
		goruntime.GC()
		goruntime.ReadMemStats(&m)
		return m.HeapAlloc
	}

	run(100)
	before := liveHeap()
	run(400)
	after := liveHeap()
	t.Logf("live heap %d → %d bytes: %d a finished child", before, after, (int64(after)-int64(before))/400)

	rt.subagents.mu.Lock()
	var children, holding []string
	var one *subagent
	for _, sa := range rt.subagents.byID {
		children, one = append(children, sa.name), sa
		if sa.child != nil || sa.dormant == nil {
			holding = append(holding, sa.name)
		}
	}
	rt.subagents.mu.Unlock()
	require.Len(t, children, 500)
	require.Empty(t, holding, "these finished children still hold their sessions")
	goleak.VerifyNone(t, running)
	require.Less(t, int64(after)-int64(before), int64(400*perChild))

	// A finished child that runs again (send_input) is offered what it was.
	again, err := rt.subagents.prepare(context.Background(), one)
	require.NoError(t, err)
	_, reports := again.registry().Get("report_checkpoint")
	_, writes := again.registry().Get("write")
	require.True(t, reports, "the step's own tool is offered again")
	require.False(t, writes, "a read_only step's child is still offered no write")
	require.Len(t, again.toolSpecs(), len(again.registry().Tools()))
	require.Equal(t, ModeReadOnly, again.Mode())
	again.release()
}

// A child whose session was let go goes on with its conversation when it
// is sent input: the model is asked with the History it had (folded from
// its Log), the same system prompt, and its Log goes on.
func TestAChildLetGoGoesOnWithItsConversation(t *testing.T) {
	rec := &recordingProvider{}
	f := newManagerFixtureWith(t, SubagentConfig{}, rec)
	v := f.spawn(t, "first")
	f.wait(t, v.ID)
	f.rt.subagents.mu.Lock()
	sa := f.rt.subagents.byID[v.ID]
	let, log := sa.child == nil && sa.dormant != nil, sa.childLog
	f.rt.subagents.mu.Unlock()
	require.True(t, let, "the finished child's session is let go")

	_, err := f.b.SendInput(context.Background(), v.ID, "second")
	require.NoError(t, err)
	require.Equal(t, "did: second", f.wait(t, v.ID).Agents[0].Summary)
	reqs := rec.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, reqs[0].System, reqs[1].System)
	require.Equal(t, []provider.Message{
		{Role: provider.RoleUser, Text: "first"},
		{Role: provider.RoleAssistant, Text: "did: first"},
		{Role: provider.RoleUser, Text: "second"},
	}, reqs[1].Messages)
	require.Len(t, childEvents[AssistantMessageData](t, log, EventAssistantMessage), 2, "one Log, both runs")
	require.Equal(t, []string{"queued", "started", "finished", "queued", "input", "finished"}, f.events.of(v.ID))
}

// recordingProvider is childProvider, keeping every request.
type recordingProvider struct {
	childProvider
	mu   sync.Mutex
	reqs []provider.ModelRequest
}

func (p *recordingProvider) Generate(ctx context.Context, req provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	p.mu.Unlock()
	return p.childProvider.Generate(ctx, req, sink)
}

func (p *recordingProvider) requests() []provider.ModelRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reqs)
}

// doneProvider answers every call with "Done." at once, as the instant
// scripted provider of the run benchmarks does.
type doneProvider struct{ childProvider }

func (doneProvider) Generate(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error) {
	return &provider.ModelResponse{Text: "Done."}, nil
}

// A child let go and woken again (send_input) corrects its token estimate
// as its Log says, as a resumed session does: its next run compacts where
// it would have without the pause.
func TestAWokenChildCorrectsItsTokenEstimateFromItsLog(t *testing.T) {
	f := newManagerFixtureWith(t, SubagentConfig{}, &windowed{window: 1 << 20, chat: true})
	v := f.spawn(t, "first")
	f.wait(t, v.ID)
	f.rt.subagents.mu.Lock()
	sa := f.rt.subagents.byID[v.ID]
	let, log := sa.child == nil && sa.dormant != nil, sa.childLog
	f.rt.subagents.mu.Unlock()
	require.True(t, let, "the finished child's session is let go")
	events, _, err := ReadLog(log)
	require.NoError(t, err)
	fold := &historyFold{log: f.rt.log}
	for _, ev := range events {
		fold.add(ev)
	}
	require.Greater(t, fold.calib, 1.0, "the provider counts more tokens than 4 bytes a token make")
	woken := f.session(t, v.ID)
	defer woken.release()
	require.Equal(t, fold.calib, woken.calibration())
}
