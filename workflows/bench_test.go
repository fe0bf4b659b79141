package workflows

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pixir-go/pixir/tools"
)

// randomWorkflow builds a seeded random DAG of n steps: each depends on up
// to three earlier steps; a third are writers over a handful of areas.
func randomWorkflow(n int, seed uint64) *Workflow {
	r := rand.New(rand.NewPCG(seed, seed))
	areas := []string{"src/a/**", "src/b/*.go", "docs/**", "test/**/*_test.go", "cmd/**", "lib/x.go"}
	w := &Workflow{}
	for i := range n {
		s := Step{ID: fmt.Sprintf("s%d", i), Task: "t"}
		for range r.IntN(4) {
			if i > 0 {
				s.DependsOn = append(s.DependsOn, fmt.Sprintf("s%d", r.IntN(i)))
			}
		}
		if r.IntN(3) == 0 {
			s.WriteSet = []string{areas[r.IntN(len(areas))]}
		} else {
			s.ReadSet = []string{areas[r.IntN(len(areas))]}
		}
		w.Steps = append(w.Steps, s)
	}
	w.Normalize()
	return w
}

// BenchmarkWaves1000 plans a random DAG of 1,000 steps with writers; the
// workflow is checked once, before the loop, as Prepare does.
func BenchmarkWaves1000(b *testing.B) {
	w := randomWorkflow(1000, 1)
	if err := Check(w); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Waves(w); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOverlap(b *testing.B) {
	for b.Loop() {
		Overlap("src/**/*.go", "src/{a,b}/[x-z]*.md")
	}
}

// readOnlyDAG is randomWorkflow without writers: conflicts would make the
// lower bound below unreachable by any schedule, so the benchmark
// measures the scheduler's greed alone.
func readOnlyDAG(n int, seed uint64, concurrency int) *Workflow {
	w := randomWorkflow(n, seed)
	for i := range w.Steps {
		s := &w.Steps[i]
		s.PermissionMode, s.WriteSet, s.WorkspaceMode = ReadOnly, nil, Shared
	}
	w.MaxConcurrency = concurrency
	return w
}

// lowerBound is max(critical path, total work / concurrency): no schedule
// of the DAG can finish sooner.
func lowerBound(w *Workflow, dur map[string]int64) float64 {
	finish := map[string]int64{}
	var critical, total int64
	for _, s := range w.Steps { // declaration order is a topological order here
		var start int64
		for _, d := range s.DependsOn {
			start = max(start, finish[d])
		}
		finish[s.ID] = start + dur[s.ID]
		critical = max(critical, finish[s.ID])
		total += dur[s.ID]
	}
	return max(float64(critical), float64(total)/float64(w.MaxConcurrency))
}

// BenchmarkSchedule1000 runs random DAGs of 1,000 read-only steps with
// random durations (1–100 units) through the real Run on the simulated
// clock, each DAG with its own seed. It reports the worst and the mean
// makespan over the lower bound (target ≤ 1.05) and
// the scheduling overhead per step: the whole of Run (prompts, decisions,
// events, plan updates, the outcome) per step, the fake children costing
// next to nothing (target < 50 µs).
func BenchmarkSchedule1000(b *testing.B) {
	for _, c := range []int{6, 16, 64} {
		b.Run(fmt.Sprintf("concurrency=%d", c), func(b *testing.B) {
			const n = 1000
			var worst, sum float64
			seed := uint64(0)
			b.ReportAllocs()
			for b.Loop() {
				seed++
				w := readOnlyDAG(n, seed, c)
				r := rand.New(rand.NewPCG(seed, 99))
				dur := map[string]int64{}
				for _, s := range w.Steps {
					dur[s.ID] = 1 + r.Int64N(100)
				}
				sim := newSim(func(step string) childPlan { return childPlan{dur: dur[step]} })
				// Checking the spec is Prepare's, once, not the scheduler's.
				b.StopTimer()
				p, err := Prepare(w, sim.ports())
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-bench", waiting: sim.waiting})
				if out.Status != StatusCompleted {
					b.Fatalf("seed %d: %s", seed, out.Status)
				}
				var makespan int64
				for _, t := range sim.ends {
					makespan = max(makespan, t)
				}
				ratio := float64(makespan) / lowerBound(w, dur)
				worst, sum = max(worst, ratio), sum+ratio
			}
			b.ReportMetric(worst, "worst-makespan/bound")
			b.ReportMetric(sum/float64(seed), "mean-makespan/bound")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1000, "µs/step")
		})
	}
}

// chainChildren ends every child at once, from its own goroutine, and
// times each dependent's start against its dependency's end.
type chainChildren struct {
	mu      sync.Mutex
	endedAt map[string]time.Time
	latency []time.Duration
	prev    map[string]string // step -> its dependency
}

func (s *chainChildren) CheckSpawn(tools.SpawnRequest) error { return nil }

func (s *chainChildren) Start(_ context.Context, req StepRequest) (tools.SubagentView, error) {
	now := time.Now()
	s.mu.Lock()
	if dep, ok := s.prev[req.Name]; ok {
		s.latency = append(s.latency, now.Sub(s.endedAt[dep]))
	}
	s.mu.Unlock()
	go func() {
		s.mu.Lock()
		s.endedAt[req.Name] = time.Now()
		s.mu.Unlock()
		req.Ended <- tools.SubagentView{ID: "sa-" + req.Name, Status: tools.SubagentCompleted, Summary: "ok"}
	}()
	return tools.SubagentView{ID: "sa-" + req.Name}, nil
}

func (s *chainChildren) Stop(string)                              {}
func (s *chainChildren) Record(WorkflowEvent) error               { return nil }
func (s *chainChildren) ShowPlan([]tools.PlanEntry)               {}
func (s *chainChildren) WorkflowEvents() ([]WorkflowEvent, error) { return nil, nil }

// BenchmarkDependencyToStart measures, on real goroutines, the time from a
// child's end (its view sent on the step's Ended channel) to the start of the step that depended
// on it, along a chain of 200 steps (target < 1 ms).
func BenchmarkDependencyToStart(b *testing.B) {
	const n = 200
	w := &Workflow{}
	prev := map[string]string{}
	for i := range n {
		s := Step{ID: fmt.Sprintf("s%d", i), Task: "t"}
		if i > 0 {
			s.DependsOn = []string{fmt.Sprintf("s%d", i-1)}
			prev[s.ID] = fmt.Sprintf("s%d", i-1)
		}
		w.Steps = append(w.Steps, s)
	}
	w.Normalize()
	var all []time.Duration
	for b.Loop() {
		sp := &chainChildren{endedAt: map[string]time.Time{}, prev: prev}
		p, err := Prepare(w, Ports{Agents: sp, Children: sp, Evidence: sp})
		if err != nil {
			b.Fatal(err)
		}
		if out := p.Run(context.Background(), RunOptions{WorkflowID: "wf"}); out.Status != StatusCompleted {
			b.Fatal(out.Status)
		}
		all = append(all, sp.latency...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-µs")
}
