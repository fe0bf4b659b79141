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

// scheduler is the greedy, deterministic scheduler of ADR 0012 over the
// steps of a workflow, as the dry run plays it (waves): every step taking
// one tick, every loop run once, every fan-out as one step. A run
// schedules step runs instead (runsched.go: loops' iterations, fan-outs'
// instances, conditions), with the same priority order and conflict
// profiles, so with equal durations and no control flow the two make the
// same choices. It is a pure state machine: no clock, no goroutines, no
// I/O.
//
// A step is runnable once every dependency is checkpoint_ready. next starts
// runnable steps in priority order (the longest chain of dependents first,
// then declaration order) while max_concurrency has room,
// skipping any that conflicts (Conflicts) with a running step; a skipped
// step does not block later ones.
//
// The runnable steps wait in one queue per conflict profile (profiles.go),
// and next looks only at the first step of each queue: when that one
// conflicts with a running step, so does every step behind it, which are
// skipped together. So a decision costs in proportion to the steps it
// starts and the profiles it looks at, not to every runnable step.
type scheduler struct {
	w          *Workflow
	deps       [][]int // indices of each step's dependencies
	dependents [][]int
	unmet      []int // dependencies not yet checkpoint_ready
	state      []stepState
	rank       []int // position in priorityOrder
	running    []int // in start order
	stopped    string

	index   *conflictIndex
	profile []profileID // each step's
	// queues holds each profile's runnable steps, by rank; a step that
	// left the pending state (reused) is dropped when it reaches the front.
	queues []minHeap[int]
	// heads holds the profiles with runnable steps, by the rank of their
	// first; nothing else is runnable.
	heads profileHeap
	// runningProfiles are the profiles of the running steps, each once, in
	// the order their first running step started, with its count.
	runningProfiles []profileCount

	// parked holds, by running step, the profiles next found blocked by
	// it (their first running step in conflict, in start order): they stay
	// out of heads until it ends, since until then nothing can unblock
	// them. So a decision looks at a blocked profile again only after the
	// step that blocked it ended, not at every end.
	parked [][]profileID

	// blocked, filled by each next, are the profiles it found blocked by a
	// running step, with the first such step (in start order).
	blocked []blockedProfile

	// examined counts the profiles next looked at: with the overlap
	// searches, the work a dry run's budget counts.
	examined int

	// With track set, became collects the steps that become runnable.
	track  bool
	became []int

	// Loop gates (gateLoops): steps left to finish in each loop, the
	// steps waiting for each loop, and the loop tree.
	loopLeft   []int
	gated      [][]int
	loopOf     []int
	loopParent []int
}

type profileCount struct {
	id    profileID
	first int // the first of its running steps to start
	n     int
}

type blockedProfile struct {
	id profileID
	by int // the running step it conflicts with
}

func newScheduler(w *Workflow, patterns *overlapCache) *scheduler {
	n := len(w.Steps)
	g := w.graph()
	s := &scheduler{
		w: w, deps: g.deps, dependents: g.dependents, rank: g.rank,
		unmet: make([]int, n), state: make([]stepState, n),
		index: newConflictIndex(patterns), profile: make([]profileID, n), parked: make([][]profileID, n),
	}
	s.heads.rank = s.headRank
	for i := range w.Steps {
		s.profile[i] = s.index.profile(&w.Steps[i])
	}
	s.queues = make([]minHeap[int], s.index.profiles())
	for q := range s.queues {
		s.queues[q].key = func(i int) priority { return priority{lo: s.rank[i]} }
	}
	for i := range w.Steps {
		s.unmet[i] = len(s.deps[i])
	}
	s.gateLoops(g)
	for i := range w.Steps {
		if s.unmet[i] == 0 {
			s.makeRunnable(i)
		}
	}
	return s
}

// gateLoops makes a step that depends on a loop's step (from outside that
// loop) wait for the whole loop: for the dry run, which plans the first
// iteration of every loop, its last step. A loop's gate opens when all
// its steps (nested loops' included) are checkpoint_ready. (In a run, a
// loop's end is its own decision: until, converge, exhaustion; see
// runsched.go.)
func (s *scheduler) gateLoops(g *graph) {
	if len(g.loops) == 0 {
		return
	}
	s.loopLeft = make([]int, len(g.loops))
	s.gated = make([][]int, len(g.loops))
	for l := range g.loops {
		s.loopLeft[l] = g.loops[l].size
	}
	s.loopOf, s.loopParent = g.loopOf, make([]int, len(g.loops))
	for l := range g.loops {
		s.loopParent[l] = g.loops[l].parent
	}
	for i := range s.deps {
		var waits []int
		for _, d := range s.deps[i] {
			if m := g.memberIn(d, g.commonScope(i, d)); isLoop(m) && !slices.Contains(waits, loopOfMember(m)) {
				waits = append(waits, loopOfMember(m))
			}
		}
		for _, l := range waits {
			s.gated[l] = append(s.gated[l], i)
			s.unmet[i]++
		}
	}
}

// makeRunnable queues i with the runnable steps of its profile. A profile
// with runnable steps is either in heads or parked.
func (s *scheduler) makeRunnable(i int) {
	if s.track {
		s.became = append(s.became, i)
	}
	q := s.profile[i]
	queue := &s.queues[q]
	queue.push(i)
	switch {
	case queue.len() == 1:
		s.heads.push(q)
	case queue.front() == i && s.heads.has(q):
		s.heads.fix(q) // i goes before the rest of its profile
	}
}

// headRank is the rank of a profile's first runnable step.
func (s *scheduler) headRank(q profileID) priority { return priority{lo: s.rank[s.queues[q].front()]} }

// next marks and returns the steps to start now, in priority order.
func (s *scheduler) next() []int {
	s.blocked = s.blocked[:0]
	if s.stopped != "" {
		return nil
	}
	var start []int
	for len(s.running) < s.w.MaxConcurrency && s.heads.len() > 0 {
		q := s.heads.top()
		s.examined++
		queue := &s.queues[q]
		if queue.dropWhile(func(i int) bool { return s.state[i] != statePending }) {
			// Steps that left the queue's front meanwhile (reused).
			if queue.len() == 0 {
				s.heads.pop()
			} else {
				s.heads.fix(q)
			}
			continue
		}
		if by, ok := s.conflictsWithRunning(q); ok {
			// Every step of this profile is blocked until by ends.
			s.heads.pop()
			s.parked[by] = append(s.parked[by], q)
			s.blocked = append(s.blocked, blockedProfile{id: q, by: by})
			continue
		}
		i := queue.pop()
		if queue.len() == 0 {
			s.heads.pop()
		} else {
			s.heads.fix(q)
		}
		s.state[i] = stateRunning
		s.running = append(s.running, i)
		s.addRunning(i)
		start = append(start, i)
	}
	return start
}

// conflictsWithRunning returns the first running step (in start order)
// whose profile conflicts with q.
func (s *scheduler) conflictsWithRunning(q profileID) (int, bool) {
	for _, r := range s.runningProfiles {
		if s.index.conflict(q, r.id) {
			return r.first, true
		}
	}
	return 0, false
}

func (s *scheduler) addRunning(i int) {
	q := s.profile[i]
	for k := range s.runningProfiles {
		if s.runningProfiles[k].id == q {
			s.runningProfiles[k].n++
			return
		}
	}
	s.runningProfiles = append(s.runningProfiles, profileCount{id: q, first: i, n: 1})
}

func (s *scheduler) removeRunning(i int) {
	s.running = slices.DeleteFunc(s.running, func(r int) bool { return r == i })
	for _, q := range s.parked[i] {
		if s.queues[q].len() > 0 {
			s.heads.push(q)
		}
	}
	s.parked[i] = nil
	q := s.profile[i]
	for k := range s.runningProfiles {
		pc := &s.runningProfiles[k]
		if pc.id != q {
			continue
		}
		if pc.n--; pc.n == 0 {
			s.runningProfiles = slices.Delete(s.runningProfiles, k, k+1)
		} else if pc.first == i {
			// The next of its steps to have started is now its first.
			for _, r := range s.running {
				if s.profile[r] == q {
					pc.first = r
					break
				}
			}
		}
		return
	}
}

// finish records the decision of running step i. A ready step unlocks
// the dependents whose last dependency it was; any other decision holds
// every pending step downstream of it, which finish returns.
func (s *scheduler) finish(i int, ready bool) []heldStep {
	s.removeRunning(i)
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
	if s.loopLeft != nil {
		for l := s.loopOf[i]; l >= 0; l = s.loopParent[l] {
			if s.loopLeft[l]--; s.loopLeft[l] > 0 {
				continue
			}
			for _, d := range s.gated[l] {
				s.unmet[d]--
				if s.unmet[d] == 0 && s.state[d] == statePending && s.stopped == "" {
					s.makeRunnable(d)
				}
			}
		}
	}
	return nil
}

// takeBecame returns the steps that became runnable since the last call
// (with track set), in the order they did.
func (s *scheduler) takeBecame() []int {
	b := s.became
	s.became = nil
	return b
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

// profileHeap is a min-heap of profiles by rank (their first runnable
// step's, remembered in the entry), which knows where each profile is so
// that a change of its rank moves it (fix).
type profileHeap struct {
	rank  func(profileID) priority
	items []headEntry
	at    []int32 // position in items by profile; -1 when absent
}

type headEntry struct {
	rank priority
	id   profileID
}

func (h *profileHeap) len() int           { return len(h.items) }
func (h *profileHeap) top() profileID     { return h.items[0].id }
func (h *profileHeap) less(a, b int) bool { return h.items[a].rank.before(h.items[b].rank) }

func (h *profileHeap) has(q profileID) bool { return int(q) < len(h.at) && h.at[q] >= 0 }

func (h *profileHeap) clear() {
	for _, e := range h.items {
		h.at[e.id] = -1
	}
	h.items = h.items[:0]
}

func (h *profileHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.at[h.items[a].id], h.at[h.items[b].id] = int32(a), int32(b)
}

func (h *profileHeap) push(q profileID) {
	for int(q) >= len(h.at) {
		h.at = append(h.at, -1)
	}
	h.items = append(h.items, headEntry{rank: h.rank(q), id: q})
	h.at[q] = int32(len(h.items) - 1)
	h.up(len(h.items) - 1)
}

func (h *profileHeap) pop() profileID {
	top := h.items[0].id
	last := len(h.items) - 1
	h.swap(0, last)
	h.items = h.items[:last]
	h.at[top] = -1
	if last > 0 {
		h.down(0)
	}
	return top
}

// fix restores the order after q's rank changed.
func (h *profileHeap) fix(q profileID) {
	k := int(h.at[q])
	h.items[k].rank = h.rank(q)
	if !h.down(k) {
		h.up(k)
	}
}

func (h *profileHeap) up(k int) {
	for k > 0 {
		parent := (k - 1) / 2
		if !h.less(k, parent) {
			break
		}
		h.swap(k, parent)
		k = parent
	}
}

func (h *profileHeap) down(k int) bool {
	start := k
	for n := len(h.items); ; {
		l, r, m := 2*k+1, 2*k+2, k
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == k {
			break
		}
		h.swap(k, m)
		k = m
	}
	return k > start
}
