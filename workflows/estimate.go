package workflows

import (
	"fmt"
	"slices"
	"time"
)

// Duration estimates as a priority input (issue 12). The scheduler starts
// the waiting runs with the longest chain still ahead of them first; with
// estimates, a chain is measured in expected time instead of in steps.
// Estimates only order what may start: they never hold a step back, never
// stop one, and decisions stay a function of data (the spec, and the
// durations earlier runs took as their events record them), never of the
// clock at the moment of deciding. A workflow without any estimate is
// ordered as before, every step counting one.

// maxEstimate (1000h) bounds an estimate, so that chains of estimates, counted
// once per iteration their loops may run, add up without overflow.
const maxEstimate = 1000 * time.Hour

// parseEstimate reads a step's estimate: a Go duration, more than 0, at
// most maxEstimate.
func parseEstimate(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("it is not a duration (a number and a unit: ms, s, m, h)")
	case d <= 0:
		return 0, fmt.Errorf("it must be more than 0")
	case d > maxEstimate:
		return 0, fmt.Errorf("it must be at most 1000h")
	}
	return d, nil
}

// declaredEstimates is each step's estimate in milliseconds, 0 for a step
// without one, and the median of those given (0 when none is).
func declaredEstimates(w *Workflow) (est []int64, median int64) {
	est = make([]int64, len(w.Steps))
	var given []int64
	for i := range w.Steps {
		if w.Steps[i].Estimate == "" {
			continue
		}
		// Validate refused a bad one; a step that escaped it counts as
		// unestimated.
		if d, err := parseEstimate(w.Steps[i].Estimate); err == nil {
			est[i] = max(1, d.Milliseconds())
			given = append(given, est[i])
		}
	}
	return est, medianOf(given)
}

// staticWeights is what each step counts for along a chain before any
// run: its estimate, the median of the others' for a step without one,
// and 1 for every step of a workflow without any estimate.
func staticWeights(w *Workflow) []int64 {
	est, median := declaredEstimates(w)
	for i := range est {
		if est[i] == 0 {
			est[i] = max(1, median)
		}
	}
	return est
}

// medianOf is the median of xs (the lower of the middle two), 0 for none.
func medianOf(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// heightPlan measures, for every step, the longest chain of dependents
// from it to the end, each step on the chain weighing its estimate times
// the number of times its loops may run it, a loop's steps having behind
// them everything that waits for the loop's end. It is built once per
// workflow; eval measures it again for other weights in one pass.
type heightPlan struct {
	mult       []int64 // per step: the product of its loops' max_iterations
	dependents [][]int
	loops      [][]int // per step: the loops holding it, innermost first
	external   [][]int // per loop: the steps outside it that depend on one of its steps
	// order lists steps (i) and loops (^l) so that each comes after
	// everything its measure reads.
	order []int
}

func newHeightPlan(w *Workflow) *heightPlan {
	n := len(w.Steps)
	index := make(map[string]int, n)
	for i := range w.Steps {
		index[w.Steps[i].ID] = i
	}
	p := &heightPlan{mult: make([]int64, n), dependents: make([][]int, n), loops: make([][]int, n), external: make([][]int, len(w.Loops))}
	for i := range w.Steps {
		for _, d := range w.Steps[i].DependsOn {
			p.dependents[index[d]] = append(p.dependents[index[d]], i)
		}
	}
	parent, loopOf := nestLoops(w.Loops, index, n, func(int, string, string, ...any) {})
	members := make([][]int, len(w.Loops))
	for s := range n {
		p.mult[s] = 1
		for q := loopOf[s]; q >= 0; q = parent[q] {
			p.mult[s] *= int64(max(1, w.Loops[q].MaxIterations))
			p.loops[s] = append(p.loops[s], q)
			members[q] = append(members[q], s)
		}
	}
	for l := range members {
		for _, s := range members[l] {
			for _, d := range p.dependents[s] {
				if !slices.Contains(p.loops[d], l) && !slices.Contains(p.external[l], d) {
					p.external[l] = append(p.external[l], d)
				}
			}
		}
	}
	stepDone := make([]bool, n)
	loopDone := make([]bool, len(w.Loops))
	var step func(i int)
	loop := func(l int) {
		if loopDone[l] {
			return
		}
		loopDone[l] = true
		for _, d := range p.external[l] {
			step(d)
		}
		p.order = append(p.order, ^l)
	}
	step = func(i int) {
		if stepDone[i] {
			return
		}
		stepDone[i] = true
		for _, d := range p.dependents[i] {
			step(d)
		}
		for _, q := range p.loops[i] {
			loop(q)
		}
		p.order = append(p.order, i)
	}
	for i := range n {
		step(i)
	}
	return p
}

// eval fills height (one per step) for these weights; after is scratch,
// one per loop.
func (p *heightPlan) eval(weight, height, after []int64) {
	for _, x := range p.order {
		if x < 0 {
			l := ^x
			var a int64
			for _, d := range p.external[l] {
				a = max(a, height[d])
			}
			after[l] = a
			continue
		}
		var h int64
		for _, d := range p.dependents[x] {
			h = max(h, height[d])
		}
		for _, q := range p.loops[x] {
			h = max(h, after[q])
		}
		height[x] = h + weight[x]*p.mult[x]
	}
}

// runEstimates are the durations the runner expects of each step's next
// run, as the run goes on: the mean of the step's earlier runs in this
// run, else its declared estimate, else the median of what its agent's
// runs took so far in this run, else the median of the declared
// estimates. The runner keys a run by its step's height measured with
// them when the run is made.
//
// A run's key is fixed when it is made, so what a run took matters only
// for runs still to be made: those of a loop's later iterations (a step
// outside every loop runs once, and what waits for it was made already or
// waits for it), and, through its agent's median, those of steps without
// an estimate. Heights are measured again (one pass over the steps) at
// the next run made after such a duration moved by more than an eighth,
// not at every end: on 10,000 steps a pass at every end would cost more
// than the rest of the run.
type runEstimates struct {
	plan     *heightPlan
	declared []int64
	fallback int64
	agent    []string // each step's agent
	sum      []int64  // per step: the durations of its runs so far
	count    []int64
	byAgent  map[string][]int64 // sorted
	// guessing: the agents of steps without an estimate, with the median
	// their heights were last measured with.
	guessing map[string]int64
	weight   []int64
	height   []int64
	after    []int64
	dirty    bool
	passes   int // the heights' measures so far
}

// newRunEstimates is nil for a workflow without any estimate: its runs
// keep the static order, every step counting one.
func newRunEstimates(w *Workflow) *runEstimates {
	declared, median := declaredEstimates(w)
	if median == 0 {
		return nil
	}
	n := len(w.Steps)
	e := &runEstimates{
		plan: newHeightPlan(w), declared: declared, fallback: median, agent: make([]string, n),
		sum: make([]int64, n), count: make([]int64, n), byAgent: map[string][]int64{},
		weight: make([]int64, n), height: make([]int64, n), after: make([]int64, len(w.Loops)), dirty: true,
		guessing: map[string]int64{},
	}
	for i := range w.Steps {
		e.agent[i] = agentOrDefault(w.Steps[i].Agent)
		if declared[i] == 0 {
			e.guessing[e.agent[i]] = 0
		}
	}
	return e
}

// observe records that a run of step s took ms milliseconds.
func (e *runEstimates) observe(s int, ms int64) {
	ms = max(1, ms)
	e.sum[s] += ms
	e.count[s]++
	a := e.agent[s]
	xs := e.byAgent[a]
	k, _ := slices.BinarySearch(xs, ms)
	xs = slices.Insert(xs, k, ms)
	e.byAgent[a] = xs
	if len(e.plan.loops[s]) > 0 && moved(e.sum[s]/e.count[s], e.weight[s]) {
		e.dirty = true
	}
	if used, ok := e.guessing[a]; ok && moved(xs[(len(xs)-1)/2], used) {
		e.dirty = true
	}
}

// moved reports whether now differs from was by more than an eighth.
func moved(now, was int64) bool { return 8*now < 7*was || 8*now > 9*was }

// heightOf is step s's height under the estimates so far.
func (e *runEstimates) heightOf(s int) int64 {
	if e.dirty {
		e.dirty = false
		e.passes++
		for a := range e.guessing {
			e.guessing[a] = e.fallback
			if xs := e.byAgent[a]; len(xs) > 0 {
				e.guessing[a] = xs[(len(xs)-1)/2]
			}
		}
		for i := range e.weight {
			e.weight[i] = e.expected(i)
		}
		e.plan.eval(e.weight, e.height, e.after)
	}
	return e.height[s]
}

// expected is what step s's next run is expected to take.
func (e *runEstimates) expected(s int) int64 {
	switch {
	case e.count[s] > 0:
		return e.sum[s] / e.count[s]
	case e.declared[s] > 0:
		return e.declared[s]
	}
	if xs := e.byAgent[e.agent[s]]; len(xs) > 0 {
		return xs[(len(xs)-1)/2]
	}
	return e.fallback
}
