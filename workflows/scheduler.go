package workflows

import (
	"slices"
)

// stepState is where a step is in the scheduler.
type stepState uint8

const (
	statePending  stepState = iota // waiting for its dependencies or a slot
	stateRunning                   // its child is queued or running
	stateReady                     // decided checkpoint_ready
	stateNotReady                  // decided anything else
	stateHeld                      // will never start
)

// heldStep is a step the scheduler gave up on, and why.
type heldStep struct {
	index     int
	reason    string
	blockedBy []string // dependencies that are not checkpoint_ready
}

// scheduler is the greedy, deterministic scheduler of ADR 0012 as a pure
// state machine: no clock, no goroutines, no I/O. Run drives it from the
// children's end events; the tests and benchmarks drive it from a
// simulated clock. It only decides; it never waits.
//
// A step is runnable once every dependency is checkpoint_ready. next starts
// runnable steps in priority order (the longest chain of dependents first,
// then declaration order) while max_concurrency has room,
// skipping any that conflicts (Conflicts) with a running step; a skipped
// step does not block later ones. A step whose dependency ends without a
// ready checkpoint is held at once, with its own dependents.
type scheduler struct {
	w          *Workflow
	deps       [][]int // indices of each step's dependencies
	dependents [][]int
	unmet      []int // dependencies not yet checkpoint_ready
	state      []stepState
	rank       []int // position in priorityOrder
	runnable   []int // pending steps with unmet == 0, by rank
	running    []int // in start order
	stopped    string
	overlap    func(a, b string) bool
}

func newScheduler(w *Workflow) *scheduler {
	n := len(w.Steps)
	index := make(map[string]int, n)
	for i := range w.Steps {
		index[w.Steps[i].ID] = i
	}
	s := &scheduler{
		w: w, deps: make([][]int, n), dependents: make([][]int, n),
		unmet: make([]int, n), state: make([]stepState, n),
		overlap: memoOverlap(),
	}
	s.rank = make([]int, n)
	for r, i := range priorityOrder(w) {
		s.rank[i] = r
	}
	for i := range w.Steps {
		for _, d := range w.Steps[i].DependsOn {
			j := index[d]
			s.deps[i] = append(s.deps[i], j)
			s.dependents[j] = append(s.dependents[j], i)
		}
		s.unmet[i] = len(s.deps[i])
		if s.unmet[i] == 0 {
			s.makeRunnable(i)
		}
	}
	return s
}

// makeRunnable adds i to the runnable steps, kept in priority order.
func (s *scheduler) makeRunnable(i int) {
	at, _ := slices.BinarySearchFunc(s.runnable, s.rank[i], func(r, rank int) int { return s.rank[r] - rank })
	s.runnable = slices.Insert(s.runnable, at, i)
}

// memoOverlap remembers each pattern pair's answer: workflows reuse a few
// patterns across many steps.
func memoOverlap() func(a, b string) bool {
	memo := map[[2]string]bool{}
	return func(a, b string) bool {
		k := [2]string{a, b}
		v, ok := memo[k]
		if !ok {
			v = Overlap(a, b)
			memo[k] = v
		}
		return v
	}
}

// next marks and returns the steps to start now, in priority order.
func (s *scheduler) next() []int {
	if s.stopped != "" {
		return nil
	}
	var start []int
	kept := s.runnable[:0]
	for k, i := range s.runnable {
		if len(s.running) >= s.w.MaxConcurrency {
			kept = append(kept, s.runnable[k:]...)
			break
		}
		if s.blocked(i) {
			kept = append(kept, i)
			continue
		}
		s.state[i] = stateRunning
		s.running = append(s.running, i)
		start = append(start, i)
	}
	s.runnable = kept
	return start
}

// blocked reports whether step i conflicts with a running step.
func (s *scheduler) blocked(i int) bool {
	for _, r := range s.running {
		if _, ok := conflicts(s.overlap, &s.w.Steps[i], &s.w.Steps[r]); ok {
			return true
		}
	}
	return false
}

// finish records the decision of running step i. A ready step unlocks
// the dependents whose last dependency it was; any other decision holds
// every pending step downstream of it, which finish returns.
func (s *scheduler) finish(i int, ready bool) []heldStep {
	s.running = slices.DeleteFunc(s.running, func(r int) bool { return r == i })
	if !ready {
		s.state[i] = stateNotReady
		return s.holdDownstream(i)
	}
	s.state[i] = stateReady
	for _, d := range s.dependents[i] {
		s.unmet[d]--
		if s.unmet[d] == 0 && s.state[d] == statePending && s.stopped == "" {
			s.makeRunnable(d)
		}
	}
	return nil
}

// reuse marks pending step i checkpoint_ready without running it (its
// checkpoint comes from an earlier run) and unlocks its dependents.
func (s *scheduler) reuse(i int) {
	s.runnable = slices.DeleteFunc(s.runnable, func(r int) bool { return r == i })
	s.running = append(s.running, i)
	s.state[i] = stateRunning
	s.finish(i, true)
}

// holdDownstream holds the pending dependents of i, and theirs, each with
// the dependencies that keep it from starting.
func (s *scheduler) holdDownstream(i int) []heldStep {
	var held []heldStep
	queue := []int{i}
	for len(queue) > 0 {
		j := queue[0]
		queue = queue[1:]
		for _, d := range s.dependents[j] {
			if s.state[d] != statePending {
				continue
			}
			s.state[d] = stateHeld
			held = append(held, heldStep{index: d, reason: HeldDependency, blockedBy: s.notReadyDeps(d)})
			queue = append(queue, d)
		}
	}
	slices.SortFunc(held, func(a, b heldStep) int { return a.index - b.index })
	return held
}

// notReadyDeps names the dependencies of i that did not become (or are not
// yet) checkpoint_ready.
func (s *scheduler) notReadyDeps(i int) []string {
	var out []string
	for _, j := range s.deps[i] {
		if s.state[j] != stateReady {
			out = append(out, s.w.Steps[j].ID)
		}
	}
	return out
}

// stop makes the scheduler start nothing more and holds every pending
// step with reason; running steps are left for their end events.
func (s *scheduler) stop(reason string) []heldStep {
	if s.stopped != "" {
		return nil
	}
	s.stopped = reason
	s.runnable = nil
	var held []heldStep
	for i, st := range s.state {
		if st == statePending {
			s.state[i] = stateHeld
			held = append(held, heldStep{index: i, reason: reason, blockedBy: s.notReadyDeps(i)})
		}
	}
	return held
}

// idle reports whether nothing runs: with nothing runnable either, the
// workflow is over.
func (s *scheduler) idle() bool { return len(s.running) == 0 }
