package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// timedChildren are the real workflow ports' Children, timing each step's
// start against the end of the step it depended on: the moment its
// finished event reached the parent (observe), just before its end is sent
// to the workflow.
type timedChildren struct {
	workflows.Children
	mu      sync.Mutex
	endedAt map[string]time.Time
	prev    map[string]string // step -> its dependency
	latency []time.Duration
}

func (s *timedChildren) Start(ctx context.Context, req workflows.StepRequest) (tools.SubagentView, error) {
	now := time.Now()
	s.mu.Lock()
	if dep, ok := s.prev[req.Name]; ok {
		s.latency = append(s.latency, now.Sub(s.endedAt[dep]))
	}
	s.mu.Unlock()
	return s.Children.Start(ctx, req)
}

func (s *timedChildren) observe(ev Event) {
	now := time.Now()
	var d SubagentEventData
	if ev.Type != EventSubagent || json.Unmarshal(ev.Data, &d) != nil || d.Event != tools.SubagentEventFinished {
		return
	}
	s.mu.Lock()
	s.endedAt[d.Name] = now
	s.mu.Unlock()
}

// BenchmarkWorkflowDependencyToStart runs a chain of 50 steps through the
// real Subagents Manager (child Sessions, Logs, events; a provider that
// answers at once) and measures the time from a step's child ending to the
// start of the step that depends on it: the decision, its checkpoint_decided
// event written to the parent's Log, and the dependent's prompt (target
// < 1 ms).
func BenchmarkWorkflowDependencyToStart(b *testing.B) {
	const n = 50
	w := &workflows.Workflow{}
	prev := map[string]string{}
	for i := range n {
		s := workflows.Step{ID: fmt.Sprintf("s%d", i), Task: "echo this"}
		if i > 0 {
			s.DependsOn = []string{fmt.Sprintf("s%d", i-1)}
			prev[s.ID] = fmt.Sprintf("s%d", i-1)
		}
		w.Steps = append(w.Steps, s)
	}
	w.Normalize()
	var all []time.Duration
	for b.Loop() {
		b.StopTimer()
		rt := New(Config{Home: b.TempDir(), Provider: childProvider{}, Model: "m", Tools: tools.Builtins()})
		parent, err := rt.NewSession(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		ports := binding{m: rt.subagents, parent: parent, toolCallID: "call-1"}.workflowPorts()
		timed := &timedChildren{Children: ports.Children, endedAt: map[string]time.Time{}, prev: prev}
		parent.SetObserver(timed.observe)
		ports.Children = timed
		p, err := workflows.Prepare(w, ports)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		out := p.Run(context.Background(), workflows.RunOptions{WorkflowID: "wf-bench"})
		b.StopTimer()
		if out.Status != workflows.StatusCompleted {
			b.Fatalf("%s\n%s", out.Status, out.Output)
		}
		all = append(all, timed.latency...)
		rt.Close()
		b.StartTimer()
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-µs")
}
