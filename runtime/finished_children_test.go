package runtime

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// A finished child of a long workflow holds no tool registry of its own
// (made again if it runs again), no goroutine, and what the runtime keeps
// of it (its Log's path, its history for send_input, its outcome) is a
// bounded number of bytes: the live heap after 400 steps exceeds the heap
// after 100 by less than perChild for each of those 400 children. Counted after
// a full collection, not timed.
func TestFinishedChildrenReleaseTheirToolsGoroutinesAndMemory(t *testing.T) {
	// Bytes of live heap a finished step may keep: its subagent record, its
	// session (history, for send_input), its prompt and outcome. 4.5 KiB
	// here; 5.9 KiB when a finished child kept its registry (which the
	// check below catches on its own).
	const perChild = 5 << 10
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
	var one *Session
	for _, sa := range rt.subagents.byID {
		children, one = append(children, sa.name), sa.child
		if sa.child.own.Load() != nil {
			holding = append(holding, sa.name)
		}
	}
	rt.subagents.mu.Unlock()
	require.Len(t, children, 500)
	require.Empty(t, holding, "these finished children still hold their tool registry")
	goleak.VerifyNone(t, running)
	require.Less(t, int64(after)-int64(before), int64(400*perChild))

	// A finished child that runs again (send_input) is offered what it was.
	require.NoError(t, one.reacquire())
	_, reports := one.registry().Get("report_checkpoint")
	_, writes := one.registry().Get("write")
	require.True(t, reports, "the step's own tool is offered again")
	require.False(t, writes, "a read_only step's child is still offered no write")
	require.Len(t, one.toolSpecs(), len(one.registry().Tools()))
	one.release()
}

// doneProvider answers every call with "Done." at once, as the instant
// scripted provider of the run benchmarks does.
type doneProvider struct{ childProvider }

func (doneProvider) Generate(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error) {
	return &provider.ModelResponse{Text: "Done."}, nil
}
