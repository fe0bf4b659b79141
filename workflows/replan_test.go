package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkPlanOf1000 measures what a session/load pays per workflow run
// to show its plan again (runtime.WorkflowPlan): decoding the run's
// workflow_events as the Log holds them and PlanOf, for a run of 1,000
// steps (each step after one of the ten before it, every child ready).
func BenchmarkPlanOf1000(b *testing.B) {
	const n = 1000
	var steps []string
	for i := range n {
		dep := ""
		if i > 0 {
			dep = fmt.Sprintf(`,"depends_on":["s%d"]`, max(0, i-1-i%10))
		}
		steps = append(steps, fmt.Sprintf(`{"id":"s%d","task":"step %d"%s}`, i, i, dep))
	}
	w, err := Parse([]byte(`{"max_concurrency":16,"steps":[` + strings.Join(steps, ",") + `]}`))
	require.NoError(b, err)
	sim := newSim(func(string) childPlan {
		return childPlan{dur: 1, report: `{"status":"checkpoint_ready","summary":"done"}`}
	})
	p, err := Prepare(w, sim.ports())
	require.NoError(b, err)
	out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-bench", ToolCallID: "call-1", Now: fixedClock(), waiting: sim.waiting, NoPlan: true})
	require.Len(b, out.Steps, n)
	lines := make([][]byte, len(sim.events))
	size := 0
	for i, ev := range sim.events {
		lines[i], err = json.Marshal(ev)
		require.NoError(b, err)
		size += len(lines[i])
	}
	b.ResetTimer()
	for b.Loop() {
		evs := make([]WorkflowEvent, len(lines))
		for i, l := range lines {
			if err := json.Unmarshal(l, &evs[i]); err != nil {
				b.Fatal(err)
			}
		}
		entries, ok := PlanOf(evs)
		if !ok || len(entries) != maxPlanEntries {
			b.Fatalf("a plan of %d entries (ok %v)", len(entries), ok)
		}
	}
	b.ReportMetric(float64(len(lines)), "events")
	b.ReportMetric(float64(size)/(1<<10), "events-KiB")
}
