package workflows

// The yardsticks of BenchmarkScheduleLooped1000: the precedence of the
// runs a workflow made, a lower bound on any schedule of them, and
// schedules made offline by schedulers that know more than the runtime.

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// precedence is what the runner made each run wait for: its inputs, the
// members its member waited for, and for a run in a loop the members its
// loop waited for and every earlier iteration (a loop's iterations run in
// sequence). Any run of the same workflow with the same reports makes the
// same runs with the same precedence, whatever the concurrency.
func precedence(r *runner) map[*stepRun][]*stepRun {
	g := r.s.g
	var deep func(f *frame, out []*stepRun) []*stepRun
	deep = func(f *frame, out []*stepRun) []*stepRun {
		out = append(out, f.runs...)
		for _, in := range f.inner {
			out = deep(in, out)
		}
		return out
	}
	ofMember := func(f *frame, local int) []*stepRun {
		m := &f.members[local]
		if m.loop == nil {
			return m.runs
		}
		var out []*stepRun
		for _, lf := range m.loop.frames {
			out = deep(lf, out)
		}
		return out
	}
	pre := map[*stepRun][]*stepRun{}
	for _, v := range r.s.runs {
		ps := slices.Clone(v.inputs)
		f := v.frame
		for _, dl := range g.scopes[f.scope].deps[g.localOf(v.step)] {
			ps = append(ps, ofMember(f, dl)...)
		}
		for a := f; a.loop != nil; a = a.loop.parent {
			if a.prev != nil {
				ps = deep(a.prev, ps)
			}
			pf := a.loop.parent
			for _, dl := range g.scopes[pf.scope].deps[a.loop.local] {
				ps = append(ps, ofMember(pf, dl)...)
			}
		}
		// A run held at once (a dependency not ready) is made before its
		// other dependencies end: it waited only for what was decided
		// when it was made (a bound may leave out constraints, never add
		// one).
		pre[v] = slices.DeleteFunc(ps, func(p *stepRun) bool { return p.decidedAt == 0 || p.decidedAt > v.madeAt })
	}
	return pre
}

// runGraph is the runs that a workflow made, as indices in creation order
// (a topological order: a run is made after all it waits for), with their
// durations (0 for a run that did not run: held, skipped) and the edges
// of their precedence both ways.
type runGraph struct {
	runs  []*stepRun
	dur   []int64
	preds [][]int
	succs [][]int
}

func newRunGraph(runs []*stepRun, pre map[*stepRun][]*stepRun, dur map[*stepRun]int64) *runGraph {
	g := &runGraph{runs: slices.Clone(runs)}
	slices.SortFunc(g.runs, func(a, b *stepRun) int { return a.seq - b.seq })
	n := len(g.runs)
	idx := make(map[*stepRun]int, n)
	for i, v := range g.runs {
		idx[v] = i
	}
	g.dur, g.preds, g.succs = make([]int64, n), make([][]int, n), make([][]int, n)
	for i, v := range g.runs {
		g.dur[i] = dur[v]
		for _, p := range pre[v] {
			g.preds[i] = append(g.preds[i], idx[p])
			g.succs[idx[p]] = append(g.succs[idx[p]], i)
		}
	}
	return g
}

// slotHeads is, for each run, the earliest moment any schedule on c
// slots can start it: no sooner than each predecessor's head plus its
// duration, and, for every moment T, no sooner than T plus the work of
// its ancestors (direct or not) whose head is T or later over c (they all
// run after T and end before it). The heads of the ancestors are taken
// the same way, so the slots' limit compounds along the graph. order is a
// topological order of preds; with the graph turned round (succs and the
// reverse order) it gives each run's least time from its end to the end.
func slotHeads(order []int, preds [][]int, dur []int64, c int) []float64 {
	n := len(dur)
	words := (n + 63) / 64
	anc := make([][]uint64, n)
	head := make([]float64, n)
	type work struct{ head, dur float64 }
	var before []work
	for _, i := range order {
		anc[i] = make([]uint64, words)
		h := 0.0
		for _, p := range preds[i] {
			h = max(h, head[p]+float64(dur[p]))
			anc[i][p/64] |= 1 << (p % 64)
			for w := range words {
				anc[i][w] |= anc[p][w]
			}
		}
		before = before[:0]
		for j := range n {
			if anc[i][j/64]&(1<<(j%64)) != 0 && dur[j] > 0 {
				before = append(before, work{head[j], float64(dur[j])})
			}
		}
		slices.SortFunc(before, func(a, b work) int { return cmp.Compare(b.head, a.head) })
		var sum float64
		for _, x := range before {
			sum += x.dur
			h = max(h, x.head+sum/float64(c))
		}
		head[i] = h
	}
	return head
}

// runsLowerBound is a lower bound on the makespan of any schedule of the
// runs on c slots that keeps their precedence, with these durations: the
// total work over c, and for every run its slot-aware head (slotHeads)
// plus its duration plus the same measure taken from the end backwards.
// It holds the critical path (heads and tails along the edges) and sees
// the loops: while a loop's iterations run one after another, only the
// work that is neither before nor after them can fill the other slots,
// and the work before an iteration (or after it) takes its time on c
// slots whatever the order.
func runsLowerBound(runs []*stepRun, pre map[*stepRun][]*stepRun, dur map[*stepRun]int64, c int) float64 {
	g := newRunGraph(runs, pre, dur)
	n := len(g.runs)
	forward := make([]int, n)
	backward := make([]int, n)
	for i := range n {
		forward[i], backward[i] = i, n-1-i
	}
	head := slotHeads(forward, g.preds, g.dur, c)
	rest := slotHeads(backward, g.succs, g.dur, c) // from a run's end to the end
	var total int64
	bound := 0.0
	for i := range n {
		total += g.dur[i]
		bound = max(bound, head[i]+float64(g.dur[i])+rest[i])
	}
	return max(bound, float64(total)/float64(c))
}

// listSchedule is greedy list scheduling of the runs on c slots, offline,
// with the given priority (higher first): the yardstick of a scheduler
// that knows what the real one cannot.
func listSchedule(runs []*stepRun, pre map[*stepRun][]*stepRun, dur map[*stepRun]int64, c int, prio func(*stepRun) float64) int64 {
	left := map[*stepRun]int{}
	succ := map[*stepRun][]*stepRun{}
	for _, v := range runs {
		left[v] = len(pre[v])
		for _, p := range pre[v] {
			succ[p] = append(succ[p], v)
		}
	}
	var ready []*stepRun
	for _, v := range runs {
		if left[v] == 0 {
			ready = append(ready, v)
		}
	}
	type ev struct {
		t int64
		v *stepRun
	}
	var running []ev
	now, done := int64(0), 0
	for done < len(runs) {
		slices.SortStableFunc(ready, func(a, b *stepRun) int {
			pa, pb := prio(a), prio(b)
			switch {
			case pa > pb:
				return -1
			case pa < pb:
				return 1
			}
			return a.seq - b.seq
		})
		for len(ready) > 0 && (len(running) < c || dur[ready[0]] == 0) {
			v := ready[0]
			ready = ready[1:]
			running = append(running, ev{now + dur[v], v})
		}
		slices.SortFunc(running, func(a, b ev) int { return int(a.t - b.t) })
		e := running[0]
		running = running[1:]
		now = e.t
		done++
		for _, s := range succ[e.v] {
			left[s]--
			if left[s] == 0 {
				ready = append(ready, s)
			}
		}
	}
	return now
}

// tails is, for each run, the longest chain from it to the end, each run
// on it counting weight(run).
func tails(runs []*stepRun, pre map[*stepRun][]*stepRun, weight func(*stepRun) int64) map[*stepRun]int64 {
	succ := map[*stepRun][]*stepRun{}
	for _, v := range runs {
		for _, p := range pre[v] {
			succ[p] = append(succ[p], v)
		}
	}
	order := slices.Clone(runs)
	slices.SortFunc(order, func(a, b *stepRun) int { return b.seq - a.seq })
	tail := map[*stepRun]int64{}
	for _, v := range order {
		var m int64
		for _, s := range succ[v] {
			m = max(m, tail[s])
		}
		tail[v] = m + weight(v)
	}
	return tail
}

// blindYardstick is the best of several list schedules that know every
// run the workflow will make and its place in the graph, but not how long
// it takes (the runtime cannot know that either): by the longest chain of
// runs after each run, by the number of runs after it, and by the
// scheduler's own rank of its step.
func blindYardstick(r *runner, pre map[*stepRun][]*stepRun, dur map[*stepRun]int64, c int) int64 {
	runs := r.s.runs
	ran := func(v *stepRun) int64 {
		if dur[v] > 0 {
			return 1
		}
		return 0
	}
	chain := tails(runs, pre, ran)
	g := newRunGraph(runs, pre, dur)
	after := map[*stepRun]int{}
	for i, k := range descendantsThatRan(g) {
		after[g.runs[i]] = k
	}
	best := listSchedule(runs, pre, dur, c, func(v *stepRun) float64 { return float64(chain[v]) })
	best = min(best, listSchedule(runs, pre, dur, c, func(v *stepRun) float64 { return float64(after[v]) }))
	best = min(best, listSchedule(runs, pre, dur, c, func(v *stepRun) float64 { return -float64(r.s.g.rank[v.step]) }))
	return best
}

// descendantsThatRan counts, for each run, the runs that wait for it
// (directly or not) and ran.
func descendantsThatRan(g *runGraph) []int {
	n := len(g.runs)
	words := (n + 63) / 64
	ran := make([]uint64, words)
	for i, d := range g.dur {
		if d > 0 {
			ran[i/64] |= 1 << (i % 64)
		}
	}
	desc := make([][]uint64, n)
	count := make([]int, n)
	for i := n - 1; i >= 0; i-- { // creation order is topological
		desc[i] = make([]uint64, words)
		for _, s := range g.succs[i] {
			desc[i][s/64] |= 1 << (s % 64)
			for w := range words {
				desc[i][w] |= desc[s][w]
			}
		}
		for w := range words {
			count[i] += bits.OnesCount64(desc[i][w] & ran[w])
		}
	}
	return count
}

// bestKnownSchedule is the shortest schedule found of the runs on c
// slots by a scheduler that knows every run and its duration: by the
// longest path of durations after each run, and by 11 perturbations of
// it, each made by serial schedule generation (each run, in an order that
// keeps the precedence, placed at the earliest moment its predecessors and
// the slots allow) and by greedy list scheduling, each improved by
// forward-backward passes. It is a reachable makespan: with the bound, it
// brackets the optimum. It checks every schedule it makes.
func bestKnownSchedule(runs []*stepRun, pre map[*stepRun][]*stepRun, dur map[*stepRun]int64, c int) (int64, error) {
	g := newRunGraph(runs, pre, dur)
	n := len(g.runs)
	path := tails(g.runs, pre, func(v *stepRun) int64 { return dur[v] })
	var total int64
	for _, d := range g.dur {
		total += d
	}
	horizon := 2*total + 2
	rng := rand.New(rand.NewPCG(1, 2))
	best := int64(math.MaxInt64)
	for try := range 12 {
		spread := 0.0
		if try > 0 {
			spread = 0.2 * rng.Float64()
		}
		key := make([]float64, n)
		for i, v := range g.runs {
			key[i] = float64(path[v]) * (1 + spread*(rng.Float64()-0.5))
		}
		for _, start := range [][]int64{serialSchedule(topoByKey(g.preds, g.succs, key), g.preds, g.dur, c, horizon), parallelSchedule(g, c, key)} {
			if err := checkSchedule(g, start, c); err != nil {
				return 0, err
			}
			best = min(best, makespanOf(start, g.dur))
			improved, _, err := forwardBackward(g, start, c, horizon)
			if err != nil {
				return 0, err
			}
			best = min(best, improved)
		}
	}
	return best, nil
}

// forwardBackward improves a schedule by 6 forward-backward passes (pack
// every run as late as it can go in order of its end, then as early as it
// can in order of its start) and returns the shortest makespan it saw and
// that schedule.
func forwardBackward(g *runGraph, start []int64, c int, horizon int64) (int64, []int64, error) {
	n := len(g.runs)
	best, bestStart := makespanOf(start, g.dur), start
	for range 6 {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		// Backward: the latest end first, on the graph turned round.
		// (Ties in creation order, turned round: a run that takes no
		// time may end when its successor starts.)
		slices.SortFunc(order, func(a, b int) int {
			return cmp.Or(cmp.Compare(start[b]+g.dur[b], start[a]+g.dur[a]), b-a)
		})
		back := serialSchedule(order, g.succs, g.dur, c, horizon)
		end := makespanOf(back, g.dur)
		// Forward: the earliest start (in the backward schedule) first.
		slices.SortFunc(order, func(a, b int) int {
			return cmp.Or(cmp.Compare(end-back[a]-g.dur[a], end-back[b]-g.dur[b]), a-b)
		})
		start = serialSchedule(order, g.preds, g.dur, c, horizon)
		if err := checkSchedule(g, start, c); err != nil {
			return 0, nil, err
		}
		if m := makespanOf(start, g.dur); m < best {
			best, bestStart = m, start
		}
	}
	return best, bestStart, nil
}

// parallelSchedule is greedy list scheduling of the graph on c slots: at
// each moment, start the waiting runs with the highest keys while slots
// are free (a run that takes no time needs none).
func parallelSchedule(g *runGraph, c int, key []float64) []int64 {
	n := len(g.runs)
	left := make([]int, n)
	ready := &minHeap[int]{key: func(i int) priority { return priority{hi: -int(key[i] * 1024)} }}
	for i := range n {
		if left[i] = len(g.preds[i]); left[i] == 0 {
			ready.push(i)
		}
	}
	start := make([]int64, n)
	ends := &minHeap[int]{key: func(i int) priority { return priority{hi: int(start[i] + g.dur[i])} }}
	now, busy := int64(0), 0
	for done := 0; done < n; {
		for ready.len() > 0 && (busy < c || g.dur[ready.front()] == 0) {
			i := ready.pop()
			start[i] = now
			if g.dur[i] > 0 {
				busy++
			}
			ends.push(i)
		}
		i := ends.pop()
		now = start[i] + g.dur[i]
		if g.dur[i] > 0 {
			busy--
		}
		done++
		for _, s := range g.succs[i] {
			if left[s]--; left[s] == 0 {
				ready.push(s)
			}
		}
	}
	return start
}

// topoByKey is a topological order of the graph that takes, among the
// runs whose predecessors are all placed, the highest key first.
func topoByKey(preds, succs [][]int, key []float64) []int {
	n := len(preds)
	left := make([]int, n)
	h := &minHeap[int]{key: func(i int) priority { return priority{hi: -int(key[i] * 1024)} }}
	for i := range n {
		if left[i] = len(preds[i]); left[i] == 0 {
			h.push(i)
		}
	}
	order := make([]int, 0, n)
	for h.len() > 0 {
		i := h.pop()
		order = append(order, i)
		for _, s := range succs[i] {
			if left[s]--; left[s] == 0 {
				h.push(s)
			}
		}
	}
	return order
}

// serialSchedule places the runs in the given order (which must keep
// preds), each at the earliest moment after its predecessors' ends with a
// slot free for all its duration.
func serialSchedule(order []int, preds [][]int, dur []int64, c int, horizon int64) []int64 {
	busy := make([]int32, horizon+1)
	start := make([]int64, len(dur))
	for _, i := range order {
		var t int64
		for _, p := range preds[i] {
			t = max(t, start[p]+dur[p])
		}
		for full := true; full; {
			full = false
			for k := t + dur[i] - 1; k >= t; k-- {
				if int(busy[k]) >= c {
					t, full = k+1, true
					break
				}
			}
		}
		for k := t; k < t+dur[i]; k++ {
			busy[k]++
		}
		start[i] = t
	}
	return start
}

func makespanOf(start, dur []int64) int64 {
	var m int64
	for i := range start {
		m = max(m, start[i]+dur[i])
	}
	return m
}

// checkSchedule reports a run that starts before a predecessor ends, or a
// moment with more than c runs running.
func checkSchedule(g *runGraph, start []int64, c int) error {
	type edge struct {
		t     int64
		delta int
	}
	var edges []edge
	for i := range g.runs {
		for _, p := range g.preds[i] {
			if start[i] < start[p]+g.dur[p] {
				return fmt.Errorf("%s starts at %d, before %s ends at %d", g.runs[i].label, start[i], g.runs[p].label, start[p]+g.dur[p])
			}
		}
		if g.dur[i] > 0 {
			edges = append(edges, edge{start[i], 1}, edge{start[i] + g.dur[i], -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		return a.delta - b.delta // ends before starts at the same moment
	})
	running := 0
	for _, e := range edges {
		if running += e.delta; running > c {
			return fmt.Errorf("%d runs at %d on %d slots", running, e.t, c)
		}
	}
	return nil
}

// optimalMakespan is the shortest schedule of a small run graph on c
// slots, by trying every order of serial schedule generation (every
// active schedule is one of those, and an optimal schedule is active),
// cutting orders that cannot beat the best so far. A run that takes no
// time is placed as soon as it may: it holds no slot.
func optimalMakespan(g *runGraph, c int) int64 {
	n := len(g.runs)
	var total int64
	for _, d := range g.dur {
		total += d
	}
	busy := make([]int32, total+1)
	start := make([]int64, n)
	placed := make([]bool, n)
	best := int64(math.MaxInt64)
	var walk func(done int, span int64)
	walk = func(done int, span int64) {
		if span >= best {
			return
		}
		if done == n {
			best = span
			return
		}
		eligible := func(i int) (int64, bool) {
			if placed[i] {
				return 0, false
			}
			var t int64
			for _, p := range g.preds[i] {
				if !placed[p] {
					return 0, false
				}
				t = max(t, start[p]+g.dur[p])
			}
			return t, true
		}
		for i := range n {
			if t, ok := eligible(i); ok && g.dur[i] == 0 {
				placed[i], start[i] = true, t
				walk(done+1, span)
				placed[i] = false
				return
			}
		}
		for i := range n {
			t, ok := eligible(i)
			if !ok {
				continue
			}
			for full := true; full; {
				full = false
				for k := t + g.dur[i] - 1; k >= t; k-- {
					if int(busy[k]) >= c {
						t, full = k+1, true
						break
					}
				}
			}
			for k := t; k < t+g.dur[i]; k++ {
				busy[k]++
			}
			placed[i], start[i] = true, t
			walk(done+1, max(span, t+g.dur[i]))
			placed[i] = false
			for k := t; k < t+g.dur[i]; k++ {
				busy[k]--
			}
		}
	}
	walk(0, 0)
	return best
}

// TestYardsticksBracketTheOptimum checks the yardsticks of
// BenchmarkScheduleLooped1000 against the exact optimum, on small random
// looped workflows (read-only, so that precedence is the only
// constraint) run through the real Run: the lower bound never exceeds
// the optimum, and no schedule (the scheduler's, a list schedule, the
// best known) beats it.
func TestYardsticksBracketTheOptimum(t *testing.T) {
	checked, tight := 0, 0
	for seed := uint64(1); checked < 40 && seed < 400; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		w := randomLoopedWorkflow(r, 4+r.IntN(7))
		for i := range w.Steps {
			w.Steps[i].WriteSet = nil
		}
		c := 2 + int(seed%2)
		w.MaxConcurrency = c
		play := func(label string) childPlan {
			p := propertyChild(seed)(label)
			h := fnv.New64a()
			fmt.Fprintf(h, "d%d/%s", seed, label)
			p.dur = 1 + int64(h.Sum64()%100)
			return p
		}
		sim := newSim(play)
		var made *runner
		simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-test", waiting: sim.waiting, finished: func(r *runner) { made = r }})
		dur := map[*stepRun]int64{}
		ran := 0
		for _, v := range made.s.runs {
			if v.agentID != "" {
				dur[v] = sim.ends[v.label] - sim.starts[v.label]
				ran++
			}
		}
		if ran < 4 || ran > 10 {
			continue
		}
		checked++
		var makespan int64
		for _, e := range sim.ends {
			makespan = max(makespan, e)
		}
		pre := precedence(made)
		g := newRunGraph(made.s.runs, pre, dur)
		opt := optimalMakespan(g, c)
		bound := runsLowerBound(made.s.runs, pre, dur, c)
		known, err := bestKnownSchedule(made.s.runs, pre, dur, c)
		require.NoError(t, err)
		blind := blindYardstick(made, pre, dur, c)
		// The non-greedy rules, deciding by estimates ±30 %.
		est := make([]int64, len(g.runs))
		for i := range est {
			if g.dur[i] > 0 {
				est[i] = max(1, int64(float64(g.dur[i])*(0.7+0.6*r.Float64())))
			}
		}
		ordered := planOrderedDispatch(g, c, estimatedPlan(g, est, c))
		reserving := reservingSchedule(g, c, longestPathKeys(g, est), est)
		for _, start := range [][]int64{ordered, reserving} {
			require.NoErrorf(t, checkSchedule(g, start, c), "seed %d", seed)
		}
		require.LessOrEqualf(t, bound, float64(opt)+1e-6, "seed %d: the bound %.1f is above the optimum %d", seed, bound, opt)
		for name, m := range map[string]int64{"the scheduler's": makespan, "the best known": known, "the blind list schedule": blind, "the plan-ordered": makespanOf(ordered, g.dur), "the reserving": makespanOf(reserving, g.dur)} {
			require.GreaterOrEqualf(t, m, opt, "seed %d: %s makespan %d beats the optimum %d", seed, name, m, opt)
		}
		if float64(opt) <= bound+1e-6 {
			tight++
		}
	}
	require.GreaterOrEqual(t, checked, 40, "too few small instances to check")
	t.Logf("%d instances, the bound equal to the optimum on %d", checked, tight)
}
