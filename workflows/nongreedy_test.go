package workflows

// Non-greedy yardsticks of BenchmarkScheduleLooped1000 (issue 12): two
// rules that may leave a slot idle, played offline on the runs a workflow
// made, deciding by the estimates the runtime has (each step's declared
// estimate) while the runs take what they took. They know more than the
// runtime (every run the workflow will make, before any is made) and so
// measure how far such a rule could go at best.

import (
	"cmp"
	"slices"
	"time"
)

// declaredPerRun is, for each run of g that ran, its step's declared
// estimate in milliseconds (0 for a run that did not run): what the
// runtime expects of a run before any of its step's runs ended.
func declaredPerRun(w *Workflow, g *runGraph) []int64 {
	est := make([]int64, len(g.runs))
	for i, v := range g.runs {
		if g.dur[i] == 0 {
			continue
		}
		d, err := parseEstimate(w.Steps[v.step].Estimate)
		if err != nil {
			d = time.Millisecond
		}
		est[i] = max(1, d.Milliseconds())
	}
	return est
}

// estimatedPlan is the shortest schedule of g's runs found under the
// durations est, as bestKnownSchedule's first try: by the longest path of
// est, by serial schedule generation and by list scheduling, each
// improved by forward-backward passes. It returns each run's planned start.
func estimatedPlan(g *runGraph, est []int64, c int) []int64 {
	planned := &runGraph{runs: g.runs, dur: est, preds: g.preds, succs: g.succs}
	n := len(g.runs)
	path := make([]float64, n)
	var total int64
	for i := n - 1; i >= 0; i-- { // creation order is topological
		for _, s := range g.succs[i] {
			path[i] = max(path[i], path[s])
		}
		path[i] += float64(est[i])
		total += est[i]
	}
	horizon := 2*total + 2
	var best []int64
	bestSpan := int64(-1)
	for _, start := range [][]int64{serialSchedule(topoByKey(g.preds, g.succs, path), g.preds, est, c, horizon), parallelSchedule(planned, c, path)} {
		span, improved, err := forwardBackward(planned, start, c, horizon)
		if err != nil {
			panic(err) // a schedule the passes made broke a constraint: the passes are wrong
		}
		if bestSpan < 0 || span < bestSpan {
			best, bestSpan = improved, span
		}
	}
	return best
}

// planOrderedDispatch plays a plan online: runs start in the order of
// their planned starts (ties in creation order), each once a slot is free
// and its predecessors ended, none before every run planned earlier
// started, so a slot stays idle while the next run of the plan waits. The
// runs take g.dur. It returns the starts.
func planOrderedDispatch(g *runGraph, c int, plan []int64) []int64 {
	n := len(g.runs)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Or(cmp.Compare(plan[a], plan[b]), a-b) })
	left := make([]int, n)
	for i := range n {
		left[i] = len(g.preds[i])
	}
	start := make([]int64, n)
	var running []int
	now, next, busy := int64(0), 0, 0
	for done := 0; done < n; done++ {
		// A run's predecessors are planned no later than it (and made
		// before it), so the next run of the plan waits only for
		// running runs.
		for next < n && left[order[next]] == 0 && (busy < c || g.dur[order[next]] == 0) {
			i := order[next]
			next++
			start[i] = now
			if g.dur[i] > 0 {
				busy++
			}
			running = append(running, i)
		}
		k := firstToEnd(running, start, g.dur)
		i := running[k]
		running = slices.Delete(running, k, k+1)
		now = start[i] + g.dur[i]
		if g.dur[i] > 0 {
			busy--
		}
		for _, s := range g.succs[i] {
			left[s]--
		}
	}
	return start
}

// firstToEnd is the position of the running run that ends first (ties:
// the one made first).
func firstToEnd(running []int, start, dur []int64) int {
	k := 0
	for j, i := range running {
		if e, ek := start[i]+dur[i], start[running[k]]+dur[running[k]]; e < ek || (e == ek && i < running[k]) {
			k = j
		}
	}
	return k
}

// reservingSchedule is list scheduling by key (higher first) that keeps
// a slot for an urgent run about to become runnable: a run whose every
// predecessor started, some still running, with a higher key than the
// waiting run that would take the slot. The waiting run does not start
// when, by the estimates, it would still run when the urgent one becomes
// runnable and the urgent one would then find no slot (counting the
// running runs expected to run past that moment and the slots kept for
// runs more urgent than the waiting one). A running run is expected to
// end at its start plus its estimate, and no sooner than now. The runs
// take g.dur. It returns the starts.
func reservingSchedule(g *runGraph, c int, key []float64, est []int64) []int64 {
	n := len(g.runs)
	left := make([]int, n)      // predecessors not ended
	unstarted := make([]int, n) // predecessors not started
	started := make([]bool, n)
	ended := make([]bool, n)
	start := make([]int64, n)
	var ready, running []int
	for i := range n {
		left[i], unstarted[i] = len(g.preds[i]), len(g.preds[i])
		if left[i] == 0 {
			ready = append(ready, i)
		}
	}
	type soonRun struct {
		at  int64 // when the estimates expect it runnable
		key float64
	}
	var soon []soonRun
	now := int64(0)
	expectedEnd := func(i int) int64 { return max(now+1, start[i]+est[i]) }
	for done := 0; done < n; done++ {
		slices.SortFunc(ready, func(a, b int) int { return cmp.Or(cmp.Compare(key[b], key[a]), a-b) })
		// The runs about to become runnable, taken again after each
		// start: a run started now may be the last predecessor to start.
		findSoon := func() {
			soon = soon[:0]
			seen := map[int]bool{}
			for _, r := range running {
				for _, s := range g.succs[r] {
					if seen[s] || started[s] || unstarted[s] > 0 {
						continue
					}
					seen[s] = true
					var at int64
					for _, p := range g.preds[s] {
						if !ended[p] {
							at = max(at, expectedEnd(p))
						}
					}
					soon = append(soon, soonRun{at, key[s]})
				}
			}
		}
		findSoon()
		busy := 0
		for _, r := range running {
			if g.dur[r] > 0 {
				busy++
			}
		}
		fits := func(x int) bool {
			end := now + est[x]
			for _, y := range soon {
				if y.key <= key[x] || end <= y.at {
					continue
				}
				used := 1 // x
				for _, r := range running {
					if g.dur[r] > 0 && expectedEnd(r) > y.at {
						used++
					}
				}
				for _, z := range soon {
					if z.key > key[x] && z.at <= y.at {
						used++
					}
				}
				if used > c {
					return false
				}
			}
			return true
		}
		waiting := ready[:0:0]
		for _, x := range ready {
			if g.dur[x] > 0 && (busy >= c || !fits(x)) {
				waiting = append(waiting, x)
				continue
			}
			start[x], started[x] = now, true
			running = append(running, x)
			if g.dur[x] > 0 {
				busy++
			}
			for _, s := range g.succs[x] {
				unstarted[s]--
			}
			findSoon()
		}
		ready = waiting
		// Nothing running means nothing is about to become runnable:
		// every waiting run started above.
		k := firstToEnd(running, start, g.dur)
		i := running[k]
		running = slices.Delete(running, k, k+1)
		now, ended[i] = start[i]+g.dur[i], true
		for _, s := range g.succs[i] {
			if left[s]--; left[s] == 0 {
				ready = append(ready, s)
			}
		}
	}
	return start
}

// longestPathKeys is, for each run of g, the longest chain of est from
// its start to the end.
func longestPathKeys(g *runGraph, est []int64) []float64 {
	key := make([]float64, len(g.runs))
	for i := len(g.runs) - 1; i >= 0; i-- {
		for _, s := range g.succs[i] {
			key[i] = max(key[i], key[s])
		}
		key[i] += float64(est[i])
	}
	return key
}
