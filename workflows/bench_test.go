package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// bigSpec is the JSON spec of a random DAG of n steps as a model would
// send it: each step depends on up to three earlier ones; a third are
// writers, isolated or shared, of overlapping sets (whole trees, files in
// them, a file of their own), the rest readers of some of those trees.
func bigSpec(n int, seed uint64) json.RawMessage {
	r := rand.New(rand.NewPCG(seed, seed))
	trees := []string{"src/**", "src/a/**", "src/b/*.go", "docs/**", "**/*.md", "test/**/*_test.go", "cmd/**"}
	var b strings.Builder
	b.WriteString(`{"name":"big","max_concurrency":8,"steps":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"s%d","task":"Do part %d of the work.","agent":"worker"`, i, i)
		var deps []string
		for range r.IntN(4) {
			if i > 0 {
				deps = append(deps, fmt.Sprintf(`"s%d"`, r.IntN(i)))
			}
		}
		if len(deps) > 0 {
			fmt.Fprintf(&b, `,"depends_on":[%s]`, strings.Join(deps, ","))
		}
		switch r.IntN(6) {
		case 0:
			fmt.Fprintf(&b, `,"write_set":[%q]`, trees[r.IntN(len(trees))])
		case 1:
			fmt.Fprintf(&b, `,"write_set":["src/a/f%d.go",%q],"workspace_mode":"shared"`, i, trees[r.IntN(len(trees))])
		default:
			fmt.Fprintf(&b, `,"read_set":[%q]`, trees[r.IntN(len(trees))])
		}
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	return json.RawMessage(b.String())
}

// BenchmarkDryRun10000 is run_workflow's dry run of 10,000 steps (bigSpec:
// a third writers with overlapping sets) from the model's JSON to the
// encoded result the model reads: decode, check, resolve agents, plan,
// count the merge risks, render, encode (targets: < 1 s, < 200 MB peak).
// cpu-ms/op is the CPU time it took (all threads, the garbage collector's
// included), the figure a busy machine does not inflate; peak-RSS-MB is
// the process's high-water mark (Linux), the benchmark's own figure when
// it runs alone.
func BenchmarkDryRun10000(b *testing.B) {
	raw := bigSpec(benchSteps(10_000), 1)
	b.ReportAllocs()
	var size int
	cpu := cpuTime()
	for b.Loop() {
		w, err := Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		p, err := Prepare(w, Ports{Agents: anyAgent{}})
		if err != nil {
			b.Fatal(err)
		}
		out, err := p.DryRun(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		enc, err := json.Marshal(tools.OK(out))
		if err != nil {
			b.Fatal(err)
		}
		size = len(enc)
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(size)/1024, "result-KiB")
	if peak := peakRSS(); peak > 0 {
		b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MB")
	}
}

// cpuTime is the CPU time the process used so far (user and system, every
// thread): on a shared machine, what a benchmark cost, whatever else ran.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is the process's peak resident set (VmHWM), 0 where unknown.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
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
			var cpuSpent time.Duration
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
				cpu := cpuTime()
				b.StartTimer()
				out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-bench", waiting: sim.waiting})
				b.StopTimer()
				cpuSpent += cpuTime() - cpu
				b.StartTimer()
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
			b.ReportMetric(float64(cpuSpent.Nanoseconds())/float64(b.N*n)/1000, "cpu-µs/step")
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

// benchSteps is n, or PIXIR_BENCH_STEPS when profiling.
func benchSteps(n int) int {
	if v, err := strconv.Atoi(os.Getenv("PIXIR_BENCH_STEPS")); err == nil && v > 0 {
		return v
	}
	return n
}

// loopedWorkflow is randomWorkflow with control flow, read-only (so the
// lower bound is reachable by some schedule): a third of the steps in
// loops of 4 to 30 steps (max_iterations 2 or 3, until on the last step's
// payload, a few nested), a fan-out of up to 3 items every 25 steps, a
// condition on every 10th.
func loopedWorkflow(n int, seed uint64, concurrency int) *Workflow {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	w := &Workflow{MaxConcurrency: concurrency}
	schema := json.RawMessage(propertySchema)
	for i := range n {
		s := Step{ID: fmt.Sprintf("s%d", i), Task: "t", OutputSchema: schema}
		for range r.IntN(4) {
			if i > 0 {
				s.DependsOn = append(s.DependsOn, fmt.Sprintf("s%d", r.IntN(i)))
			}
		}
		s.DependsOn = dedupe(s.DependsOn)
		if len(s.DependsOn) > 0 {
			src := s.DependsOn[0]
			switch {
			case i%25 == 7 && w.Steps[mustAtoi(src[1:])].ForEach == nil:
				s.ForEach, s.Task, s.OutputSchema = &ForEach{Step: src, Path: "/items", MaxItems: 3}, "do ${item}", nil
			case i%10 == 3 && w.Steps[mustAtoi(src[1:])].ForEach == nil:
				s.When = Conditions{{Step: src, Path: "/v", Equals: json.RawMessage(`"yes"`)}}
			}
		}
		w.Steps = append(w.Steps, s)
	}
	for a := 0; a < n-4; {
		if r.IntN(3) != 0 {
			a += 1 + r.IntN(20)
			continue
		}
		b := min(n, a+4+r.IntN(27))
		l := Loop{ID: fmt.Sprintf("l%d", len(w.Loops)), MaxIterations: 2 + r.IntN(2), OnExhausted: Proceed}
		for k := a; k < b; k++ {
			l.Steps = append(l.Steps, w.Steps[k].ID)
		}
		if last := &w.Steps[b-1]; last.ForEach == nil {
			l.Until = Conditions{{Step: last.ID, Path: "/v", Equals: json.RawMessage(`"yes"`)}}
		}
		w.Loops = append(w.Loops, l)
		if b-a > 10 && r.IntN(2) == 0 {
			inner := Loop{ID: fmt.Sprintf("l%d", len(w.Loops)), MaxIterations: 2, OnExhausted: Proceed, Steps: l.Steps[2:6]}
			w.Loops = append(w.Loops, inner)
		}
		a = b
	}
	w.Normalize()
	return w
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

// BenchmarkScheduleLooped1000 runs random 1,000-step workflows with loops
// (nested, until, proceed), conditions and fan-outs through the real Run
// on the simulated clock, each with its own seed and reports (a run is
// partial one time in six, its payload's v yes or no, its items 0 to 2,
// its duration 1 to 100 units, all a function of the run's label). The
// same workflow run with unbounded concurrency gives each run its head,
// the earliest moment any schedule could start it (loops' iterations in
// sequence, instances after their source, what follows a loop after its
// end): the lower bound is the largest of its makespan (the critical
// path) and, for every moment T, T plus the work of the runs whose head
// is T or later over the concurrency (T = 0: the total work over the
// concurrency). It reports the worst and mean makespan over that bound
// (target ≤ 1.05), and all of Run per step run, in wall time and in the
// process's CPU time (target < 50 µs), beside BenchmarkSchedule1000's.
//
// Each workflow runs twice: blind (no step has an estimate: the scheduler
// counts every step as one) and with honest estimates (estimate: what a
// step's run typically takes times a factor drawn in [0.7, 1.3], seeded),
// which the scheduler completes with what each run took (estimate.go).
// And under two models of durations: runs=independent (each run's
// duration its own, as above: a loop's second iteration or a fan-out's
// second instance is no more like the first than any other run; a step's
// typical duration is its first run's), and runs=alike (a step's runs
// take its own duration, 1 to 100 units, times a factor in [0.9, 1.1] of
// their own: what estimates and the runs' own durations presume).
func BenchmarkScheduleLooped1000(b *testing.B) {
	for _, c := range []int{6, 16, 64} {
		for _, model := range []string{"independent", "alike"} {
			for _, estimates := range []string{"none", "noisy"} {
				b.Run(fmt.Sprintf("concurrency=%d/runs=%s/estimates=%s", c, model, estimates), func(b *testing.B) {
					benchLooped(b, c, model == "alike", estimates == "noisy")
				})
			}
		}
	}
}

// looped1000Duration is the duration of a run of BenchmarkScheduleLooped1000's
// workflow seed, a function of its label; alike, about its step's.
func looped1000Duration(seed uint64, label string, alike bool) int64 {
	h := fnv.New64a()
	if !alike {
		fmt.Fprintf(h, "d%d/%s", seed, label)
		return 1 + int64(h.Sum64()%100)
	}
	step := label
	if i := strings.IndexAny(step, "#["); i >= 0 {
		step = step[:i]
	}
	fmt.Fprintf(h, "d%d/%s", seed, step)
	base := float64(1 + h.Sum64()%100)
	h.Reset()
	fmt.Fprintf(h, "v%d/%s", seed, label)
	return max(1, int64(base*(0.9+0.2*float64(h.Sum64()%1001)/1000)+0.5))
}

// estimateFirstRuns gives every step of w an estimate: the duration of its
// first run (its loops' first iterations, a fan-out's first instance), or
// alike its step's, times a factor in [0.7, 1.3] drawn from a generator
// seeded with seed.
func estimateFirstRuns(w *Workflow, seed uint64, alike bool) {
	index := map[string]int{}
	for i := range w.Steps {
		index[w.Steps[i].ID] = i
	}
	parent, loopOf := nestLoops(w.Loops, index, len(w.Steps), func(int, string, string, ...any) {})
	r := rand.New(rand.NewPCG(seed, 0xe57))
	for i := range w.Steps {
		s := &w.Steps[i]
		typical := looped1000Duration(seed, s.ID, false) // alike: the step's own
		if !alike {
			label := s.ID
			var iters []string
			for q := loopOf[i]; q >= 0; q = parent[q] {
				iters = append(iters, "1")
			}
			if len(iters) > 0 {
				label += "#" + strings.Join(iters, ".")
			}
			if s.ForEach != nil {
				label += "[1]"
			}
			typical = looped1000Duration(seed, label, false)
		}
		est := float64(typical) * (0.7 + 0.6*r.Float64())
		s.Estimate = fmt.Sprintf("%dms", max(1, int64(est+0.5)))
	}
}

func benchLooped(b *testing.B, c int, alike, estimates bool) {
	const n = 1000
	var worst, sum float64
	var runs, passes int
	var cpuSpent time.Duration
	var yardSum, knownSum, knownWorst, overKnown float64
	var orderedSum, orderedWorst, reservingSum, reservingWorst float64
	seed := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		seed++
		play := func(label string) childPlan {
			p := propertyChild(seed)(label)
			p.dur = looped1000Duration(seed, label, alike)
			return p
		}
		b.StopTimer()
		sim := newSim(play)
		w := loopedWorkflow(n, seed, c)
		if estimates {
			estimateFirstRuns(w, seed, alike)
		}
		p, err := Prepare(w, sim.ports())
		if err != nil {
			b.Fatal(err)
		}
		var made *runner
		cpu := cpuTime()
		b.StartTimer()
		out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-bench", waiting: sim.waiting, finished: func(r *runner) { made = r }})
		b.StopTimer()
		cpuSpent += cpuTime() - cpu
		var makespan int64
		for _, t := range sim.ends {
			makespan = max(makespan, t)
		}
		dur := map[*stepRun]int64{}
		for _, v := range made.s.runs {
			if v.agentID != "" {
				dur[v] = sim.ends[v.label] - sim.starts[v.label]
			}
		}
		pre := precedence(made)
		bound := runsLowerBound(made.s.runs, pre, dur, c)
		ratio := float64(makespan) / bound
		// Two yardsticks, each a schedule of the same runs: the
		// best of list schedules that know every run the workflow
		// will make but not how long it takes (as the runtime),
		// and the best schedule found knowing the durations too:
		// the optimum lies between it and the bound.
		blind := blindYardstick(made, pre, dur, c)
		known, err := bestKnownSchedule(made.s.runs, pre, dur, c)
		if err != nil {
			b.Fatalf("seed %d: %v", seed, err)
		}
		schedules := []int64{makespan, blind, known}
		if estimates {
			// Rules that may leave a slot idle, deciding by the
			// estimates and knowing every run (nongreedy_test.go).
			g := newRunGraph(made.s.runs, pre, dur)
			est := declaredPerRun(made.w, g)
			ordered := planOrderedDispatch(g, c, estimatedPlan(g, est, c))
			reserving := reservingSchedule(g, c, longestPathKeys(g, est), est)
			for _, start := range [][]int64{ordered, reserving} {
				if err := checkSchedule(g, start, c); err != nil {
					b.Fatalf("seed %d: %v", seed, err)
				}
			}
			o, rs := float64(makespanOf(ordered, g.dur))/bound, float64(makespanOf(reserving, g.dur))/bound
			orderedSum, orderedWorst = orderedSum+o, max(orderedWorst, o)
			reservingSum, reservingWorst = reservingSum+rs, max(reservingWorst, rs)
			schedules = append(schedules, makespanOf(ordered, g.dur), makespanOf(reserving, g.dur))
		}
		for _, m := range schedules {
			if float64(m) < bound-1e-6 {
				b.Fatalf("seed %d: a schedule of %d beats the lower bound %.1f: the bound is wrong", seed, m, bound)
			}
		}
		yardSum += float64(blind) / bound
		knownSum += float64(known) / bound
		knownWorst = max(knownWorst, float64(known)/bound)
		overKnown += float64(makespan) / float64(known)
		worst, sum = max(worst, ratio), sum+ratio
		runs += len(out.Steps)
		if e := made.s.estimates; e != nil {
			passes += e.passes
		}
		// The yardsticks' garbage is not the next Run's to collect.
		runtime.GC()
		b.StartTimer()
	}
	b.ReportMetric(worst, "worst-makespan/bound")
	b.ReportMetric(sum/float64(seed), "mean-makespan/bound")
	b.ReportMetric(yardSum/float64(seed), "mean-yardstick/bound")
	b.ReportMetric(knownSum/float64(seed), "mean-known-durations/bound")
	b.ReportMetric(knownWorst, "worst-known-durations/bound")
	b.ReportMetric(overKnown/float64(seed), "mean-makespan/known-durations")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs)/1000, "µs/run")
	b.ReportMetric(float64(cpuSpent.Nanoseconds())/float64(runs)/1000, "cpu-µs/run")
	b.ReportMetric(float64(runs)/float64(seed), "runs/workflow")
	if estimates {
		b.ReportMetric(float64(passes)/float64(seed), "height-measures/workflow")
		b.ReportMetric(orderedSum/float64(seed), "mean-plan-ordered/bound")
		b.ReportMetric(orderedWorst, "worst-plan-ordered/bound")
		b.ReportMetric(reservingSum/float64(seed), "mean-reserving/bound")
		b.ReportMetric(reservingWorst, "worst-reserving/bound")
	}
}

// sleepyChildren run each child for run on the real clock, and make each
// merge wait merge (as one waits for another session's merge, or for
// another process's copy or merge in the workspace, to end).
type sleepyChildren struct {
	run, merge time.Duration
}

func (s *sleepyChildren) CheckSpawn(tools.SpawnRequest) error { return nil }

func (s *sleepyChildren) Start(_ context.Context, req StepRequest) (tools.SubagentView, error) {
	go func() {
		time.Sleep(s.run)
		req.Ended <- tools.SubagentView{ID: "sa-" + req.Name, Status: tools.SubagentCompleted, Summary: "ok",
			WorkspaceMode: req.WorkspaceMode, Workspace: "/snap/" + req.Name,
			Changes: &tools.FileChanges{Added: []string{}, Changed: []string{req.Name + "/x"}, Deleted: []string{}}}
	}()
	return tools.SubagentView{ID: "sa-" + req.Name}, nil
}

func (s *sleepyChildren) Merge(context.Context, MergeRequest) (tools.MergeReport, error) {
	time.Sleep(s.merge)
	return tools.MergeReport{Status: tools.MergeMerged}, nil
}

func (s *sleepyChildren) Stop(string)                              {}
func (s *sleepyChildren) Record(WorkflowEvent) error               { return nil }
func (s *sleepyChildren) ShowPlan([]tools.PlanEntry)               {}
func (s *sleepyChildren) WorkflowEvents() ([]WorkflowEvent, error) { return nil, nil }

// BenchmarkFanOutWithWaitingMerges is the makespan of 12 isolated writers
// (one folder each) at concurrency 4, each child running 100 ms and each
// merge waiting 20 or 50 ms (one at a time), on the real clock. Lower
// bounds: 3 rounds of 100 ms and the last round's merges, or the first
// child and 12 merges in a row, whichever is longer: 380 and 700 ms.
func BenchmarkFanOutWithWaitingMerges(b *testing.B) {
	w := &Workflow{MaxConcurrency: 4}
	for i := range 12 {
		w.Steps = append(w.Steps, Step{ID: fmt.Sprintf("t%02d", i), Task: "t", WriteSet: []string{fmt.Sprintf("t%02d/**", i)}, WorkspaceMode: Isolated})
	}
	w.Normalize()
	for _, merge := range []time.Duration{20 * time.Millisecond, 50 * time.Millisecond} {
		b.Run(fmt.Sprintf("merge=%s", merge), func(b *testing.B) {
			sp := &sleepyChildren{run: 100 * time.Millisecond, merge: merge}
			var total time.Duration
			for b.Loop() {
				p, err := Prepare(w, Ports{Agents: sp, Children: sp, Evidence: sp, Merger: sp})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if out := p.Run(context.Background(), RunOptions{WorkflowID: "wf", NoPlan: true}); out.Status != StatusCompleted {
					b.Fatal(out.Status, out.Output)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "makespan-ms")
		})
	}
}
