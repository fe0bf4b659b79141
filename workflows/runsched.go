package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/tools"
)

// The scheduler: the greedy, deterministic scheduler of ADR 0012, over
// step runs instead of steps, so that loops repeat groups of steps and
// fan-outs instantiate a step per item (issue 12). It only decides; it
// never waits and does no I/O but recording its decisions (run.go starts
// and stops the children and drives it from their ends).
//
// A workflow runs as frames: the workflow itself, and one frame per
// iteration of each loop. A frame holds the members of its scope (steps
// and inner loops) and gates each once the members it depends on are
// decided: a step's gate holds it (a dependency not checkpoint_ready),
// skips it (its condition is false, or a dependency it needs was
// skipped) or makes its runs (one, or one per item of a fan-out); an inner
// loop's gate starts its first iteration. When every member of an
// iteration is decided, the loop's until, convergence and bound decide
// the next iteration or the loop's end. Runs wait in priority order (the
// longest chain of dependents first, then declaration order, then
// iteration and item) for a free slot and no conflict with a running run.
// Every decision is a function of the checkpoints seen alone, so the same
// ends in the same order make the same runs in the same order.

// runState is where a step run is.
type runState uint8

const (
	runWaiting  runState = iota // made, waiting for a slot
	runRunning                  // its child is queued or running
	runReady                    // decided checkpoint_ready
	runNotReady                 // decided anything else after running (or failing to start)
	runHeld                     // will never start
	runSkipped                  // its condition was false
)

// stepRun is one run of a step: a step in a frame, and for a fan-out one
// item.
type stepRun struct {
	seq     int // creation order
	step    int
	frame   *frame
	item    int // 0-based item of a fan-out instance, -1 otherwise
	items   int // the number of instances of its fan-out
	itemVal any
	label   string // check-plan#2, make[3], plain steps their id
	spec    *Step  // the step as this run runs it (a fan-out's bindings replaced)
	state   runState
	outcome *StepOutcome
	inputs  []*stepRun // its dependencies' runs, whose checkpoints it receives
	agentID string
	// childEnded: its child ended; it waits in runner.landing.
	childEnded bool
	wave       int
	reason     string // why the workflow closed it early
	slot       *reportSlot
	// fresh: a new child ran for it or for one of its inputs, so its
	// outcome may differ from a resumed run's (resume_from).
	fresh bool
	// payload caches the decoded payload of its checkpoint.
	payload        any
	payloadDecoded bool
	// madeAt and decidedAt count the runs decided when it was made and
	// when it was decided: what it can have waited for.
	madeAt, decidedAt int
	profile           profileID // its conflict profile, once it waits
	key               priority  // its place among the waiting runs (runKey)
	// partners is how many paired instances it still waits for (an
	// instance of a fan-out decided per instance); views what its gate
	// saw of its dependencies, to gate it once they are decided.
	partners int
	views    []depView
}

// memberState is one member of a frame.
type memberState struct {
	unmet   int // members it depends on not yet decided
	gated   bool
	decided bool
	runs    []*stepRun // a step's runs: one, or a fan-out's instances
	pending int        // its runs not yet decided
	// instantiated: a fan-out's instances are made, so the members whose
	// edges to it are paired (scopeNode.paired) no longer wait for it.
	instantiated bool
	loop         *loopRun // an inner loop's run
	// base is the largest wave of what the member waited for (the
	// members it depends on, the iteration it is in); end the largest wave
	// of its runs (a loop's: of all its iterations). A step's runs are
	// wave base+1: a wave is a dependency level, as in the dry run.
	base, end int
}

// frame is the workflow, or one iteration of a loop.
type frame struct {
	scope     int
	loop      *loopRun // nil for the workflow
	iter      int      // 1-based iteration
	iters     []int    // the iterations of every loop holding it, outermost first
	prev      *frame   // the loop's previous iteration
	members   []memberState
	undecided int
	done      bool
	runs      []*stepRun // runs made directly in it
	inner     []*frame   // frames of its inner loops
	fresh     bool       // a run in it (at any depth) is fresh
	ran       bool       // a run in it (at any depth) ran or was reused
	begun     bool       // its iteration_started was recorded
	// base is the largest wave the iteration waited for (its loop's
	// dependencies, the previous iteration); end the largest wave in it.
	base, end int
}

// loopRun is one run of a loop: its iterations in one frame of its
// enclosing scope.
type loopRun struct {
	loop     int
	parent   *frame
	local    int // its member position in parent
	frames   []*frame
	state    LoopState
	blockers []string
	// last is, per converge value, the previous iteration's, canonical
	// (absent: not seen yet, or the payload had none); blockersOf each,
	// the loop's blockers when it ends unresolved.
	last      []string
	hasLast   []bool
	blockersK [][]string
	label     string // plan-review, or escalation#2 inside a loop's iteration 2
	outcome   *LoopOutcome
}

// unresolvedHold reports whether the loop ended without its until and
// holds its dependents.
func (l *loopRun) unresolvedHold(def *Loop) bool {
	return (l.state == LoopExhausted || l.state == LoopConverged) && def.OnExhausted == Hold
}

// gateItem is a member whose gate is due.
type gateItem struct {
	f     *frame
	local int
}

// sched is the scheduler's state inside a runner.
type sched struct {
	g       *graph
	root    *frame
	runs    []*stepRun // every run, in creation order
	loops   []*loopRun // every loop run, in start order
	running []*stepRun // in start order, until decided
	// ended counts the running runs whose children ended and which wait
	// to be decided (runner.landing): they hold their write sets against
	// conflicting runs, not a slot.
	ended   int
	queue   []gateItem // gates due, first in first out
	stopped string

	// The waiting runs, one queue per conflict profile (profiles.go) in
	// priority order; heads holds the profiles with waiting runs by their
	// first run's key, except those parked on the running run that blocks
	// them (until it ends, nothing can unblock them).
	index           *conflictIndex
	queues          []minHeap[*stepRun]
	heads           profileHeap
	parked          map[*stepRun][]profileID
	runningProfiles []runningProfile
	decisions       int // runs decided so far
	// partnerWaits are the instances waiting for a paired instance to be
	// decided, by that instance, in the order they began to wait.
	partnerWaits map[*stepRun][]*stepRun
	// decisionWaits are the conditions that test a step not decided yet
	// (a paired fan-out whose instances were gated one by one, some still
	// running), a loop iteration's until or a step's when: each is decided
	// once the step is.
	decisionWaits []decisionWait
	// estimates, for a workflow with any, measure chains in expected time
	// (estimate.go); nil otherwise.
	estimates *runEstimates
}

// newFrame makes a frame of scope sc and queues the gates of its members
// that wait for nothing.
func (r *runner) newFrame(sc int, lr *loopRun, iter int, prev *frame, outer *frame, base int) *frame {
	s := &r.s
	scope := &s.g.scopes[sc]
	f := &frame{scope: sc, loop: lr, iter: iter, prev: prev, members: make([]memberState, len(scope.members)), undecided: len(scope.members), base: base, end: base}
	if outer != nil {
		f.iters = append(slices.Clone(outer.iters), iter)
		outer.inner = append(outer.inner, f)
	}
	for k := range scope.members {
		f.members[k].unmet = len(scope.deps[k])
		if f.members[k].unmet == 0 {
			s.queue = append(s.queue, gateItem{f, k})
		}
	}
	return f
}

// raiseEnd records that member local of f reaches wave w: its end, its
// frame's, and those of the loops holding the frame.
func (r *runner) raiseEnd(f *frame, local, w int) {
	for {
		m := &f.members[local]
		if m.end >= w && f.end >= w {
			return
		}
		m.end, f.end = max(m.end, w), max(f.end, w)
		if f.loop == nil {
			return
		}
		f, local = f.loop.parent, f.loop.local
	}
}

// drain gates every member that is due, and whatever that makes due in
// turn.
func (r *runner) drain() {
	s := &r.s
	for len(s.queue) > 0 {
		it := s.queue[0]
		s.queue = s.queue[1:]
		m := &it.f.members[it.local]
		if m.gated {
			continue
		}
		m.gated = true
		m.base = it.f.base
		for _, k := range s.g.scopes[it.f.scope].deps[it.local] {
			m.base = max(m.base, it.f.members[k].end)
		}
		member := s.g.scopes[it.f.scope].members[it.local]
		if !isLoop(member) {
			// Skipped or held, a step still counts as a level, as the dry
			// run counts every conditional step as if it ran.
			r.raiseEnd(it.f, it.local, m.base+1)
		}
		if isLoop(member) {
			r.startLoop(it.f, it.local, loopOfMember(member))
		} else {
			r.gateStep(it.f, it.local, member)
		}
	}
}

// memberDecided marks a member decided and lets the members that depend
// on it go on: a member whose last dependency this was is gated; a step
// that cannot run without this one (not ready, not tested by its
// condition) is held at once.
func (r *runner) memberDecided(f *frame, local int) {
	s := &r.s
	m := &f.members[local]
	if m.decided {
		return
	}
	m.decided = true
	f.undecided--
	scope := &s.g.scopes[f.scope]
	blocks := r.memberBlocks(f, local)
	for j, dl := range scope.dependents[local] {
		dm := &f.members[dl]
		if dm.gated {
			continue
		}
		if !m.instantiated || !scope.paired[local][j] {
			dm.unmet-- // else counted when the instances were made
		}
		switch {
		case dm.unmet == 0:
			s.queue = append(s.queue, gateItem{f, dl})
		case blocks && r.heldAtOnce(f, dl, scope.members[local]):
			s.queue = append(s.queue, gateItem{f, dl})
		}
	}
	if f.undecided == 0 && !f.done {
		f.done = true
		if f.loop != nil {
			r.iterationDone(f.loop, f)
		}
	}
}

// memberInstantiated lets the members whose edges to a fan-out are
// paired go on once its instances are made: each of their instances waits
// for its own item's, not for every instance (gateInstance).
func (r *runner) memberInstantiated(f *frame, local int) {
	s := &r.s
	m := &f.members[local]
	m.instantiated = true
	scope := &s.g.scopes[f.scope]
	for j, dl := range scope.dependents[local] {
		dm := &f.members[dl]
		if dm.gated || !scope.paired[local][j] {
			continue
		}
		if dm.unmet--; dm.unmet == 0 {
			s.queue = append(s.queue, gateItem{f, dl})
		}
	}
}

// memberBlocks reports whether a decided member is not checkpoint_ready:
// a step with a run that is not, or a loop that ended holding.
func (r *runner) memberBlocks(f *frame, local int) bool {
	m := &f.members[local]
	if m.loop != nil {
		return m.loop.unresolvedHold(m.loop.def(r.w))
	}
	for _, run := range m.runs {
		if run.state != runReady && run.state != runSkipped {
			return true
		}
	}
	return false
}

// heldAtOnce reports whether member dl (a step that needs all its
// dependencies) depends on the decided member through a dependency its
// condition does not test: then it can never run, and it is held now
// rather than when its other dependencies end.
func (r *runner) heldAtOnce(f *frame, dl, decided int) bool {
	g := r.s.g
	member := g.scopes[f.scope].members[dl]
	if isLoop(member) || r.w.Steps[member].Join == JoinAny {
		return false
	}
	for k, d := range g.deps[member] {
		// A paired dependency holds only the instance of its own item.
		if g.tolerated[member][k] || g.paired[member][k] || !inMember(g, d, decided, f.scope) {
			continue
		}
		return true
	}
	return false
}

// inMember reports whether step d is member m of scope sc, or inside it.
func inMember(g *graph, d, m, sc int) bool {
	if !g.inScope(d, sc) {
		return false
	}
	return g.memberIn(d, sc) == m
}

func (l *loopRun) def(w *Workflow) *Loop { return &w.Loops[l.loop] }

// depView is what a step's gate sees of one of its dependencies.
type depView struct {
	step    int
	runs    []*stepRun
	status  CheckpointStatus // the runs' aggregate; held when a loop holds it
	decided bool
	label   string   // its run (for a fan-out, the step and instance count)
	loop    *loopRun // a loop on the way that ended holding its dependents
}

// view resolves step d as seen from frame f: in f's iteration of every
// loop they share, in the last iteration of the loops only d is in.
func (r *runner) view(d int, f *frame) depView {
	g := r.s.g
	for !g.inScope(d, f.scope) {
		f = f.loop.parent
	}
	v := depView{step: d}
	for {
		member := g.memberIn(d, f.scope)
		m := &f.members[g.localOf(member)]
		if !isLoop(member) {
			v.runs, v.decided = m.runs, m.decided
			break
		}
		lr := m.loop
		if lr == nil || len(lr.frames) == 0 {
			return v
		}
		if !m.decided {
			v.decided = false
		}
		if v.loop == nil && m.decided && lr.unresolvedHold(lr.def(r.w)) {
			v.loop = lr
		}
		f = lr.frames[len(lr.frames)-1]
	}
	v.status, v.label = aggregate(v.runs)
	if len(v.runs) == 0 {
		v.label = r.w.Steps[d].ID
	}
	if v.loop != nil && v.decided {
		v.status = CheckpointHeld
		v.label = "loop " + v.loop.label
	}
	return v
}

// aggregate is the status of a step's runs taken together: ready when
// all are, skipped when all are, otherwise the first that is neither (a
// fan-out is only as good as its worst instance).
func aggregate(runs []*stepRun) (CheckpointStatus, string) {
	if len(runs) == 0 {
		return "", ""
	}
	label := runs[0].label
	if len(runs) > 1 || runs[0].item >= 0 {
		label = runs[0].spec.ID
		if i := strings.IndexByte(label, '['); i >= 0 {
			label = label[:i]
		}
	}
	all := func(st CheckpointStatus) bool {
		for _, r := range runs {
			if r.outcome == nil || r.outcome.CheckpointStatus != st {
				return false
			}
		}
		return true
	}
	switch {
	case all(CheckpointReady):
		return CheckpointReady, label
	case all(CheckpointSkipped):
		return CheckpointSkipped, label
	case readyOrSkipped(runs):
		// A fan-out decided per instance (its condition tests a paired
		// fan-out): the instances meant to run are ready.
		return CheckpointReady, label
	}
	for _, want := range []CheckpointStatus{CheckpointFailed, CheckpointNeedsOrchestrator, CheckpointPartial, CheckpointHeld} {
		for _, r := range runs {
			if r.outcome != nil && r.outcome.CheckpointStatus == want {
				return want, label
			}
		}
	}
	return "", label // some still running
}

// readyOrSkipped reports whether every run is decided ready or skipped.
func readyOrSkipped(runs []*stepRun) bool {
	for _, r := range runs {
		if r.outcome == nil || (r.outcome.CheckpointStatus != CheckpointReady && r.outcome.CheckpointStatus != CheckpointSkipped) {
			return false
		}
	}
	return true
}

// instanceView is a fan-out dependency as one instance of a paired
// fan-out sees it: just its instance of the same item, when v's runs are
// the instances of its items (not one run deciding the whole step, nor
// behind a loop that held it).
func instanceView(v depView, item int) (depView, bool) {
	if v.loop != nil || item >= len(v.runs) || v.runs[item].item != item || v.runs[item].items != len(v.runs) {
		return v, false
	}
	run := v.runs[item]
	out := depView{step: v.step, runs: []*stepRun{run}, decided: run.outcome != nil, label: run.label}
	if run.outcome != nil {
		out.status = run.outcome.CheckpointStatus
	}
	return out, true
}

// appendNew appends label unless list has it: the steps of one loop that
// a step depends on are one "loop …" to wait for, named once.
func appendNew(list []string, label string) []string {
	if slices.Contains(list, label) {
		return list
	}
	return append(list, label)
}

// gateStep decides step s in frame f: held, skipped, or its runs made.
func (r *runner) gateStep(f *frame, local, s int) {
	g := r.s.g
	st := &r.w.Steps[s]
	var blocked, skipped []string
	anyReady := false
	views := make([]depView, len(g.deps[s]))
	for k, d := range g.deps[s] {
		v := r.view(d, f)
		views[k] = v
		if g.paired[s][k] {
			if _, ok := instanceView(v, 0); ok {
				continue // each instance is gated on its own (fanOut)
			}
		}
		switch {
		case v.decided && v.status == CheckpointReady:
			anyReady = true
		case g.tolerated[s][k] && v.decided:
		case v.decided && v.status == CheckpointSkipped:
			skipped = appendNew(skipped, v.label)
		default:
			blocked = appendNew(blocked, v.label)
		}
	}
	if r.s.stopped != "" {
		// Nothing starts any more: held, naming what it still waited for.
		var waited []string
		for _, v := range views {
			if !v.decided || v.status != CheckpointReady {
				waited = appendNew(waited, v.label)
			}
		}
		r.makeHeld(f, local, s, r.s.stopped, waited)
		return
	}
	if st.Join == JoinAny {
		switch {
		case anyReady:
			blocked, skipped = nil, nil
		case len(blocked) == 0 && len(skipped) > 0 && len(skipped) < len(g.deps[s]):
			skipped = nil // the rest are tested by the condition
		}
	}
	switch {
	case len(blocked) > 0:
		r.makeHeld(f, local, s, HeldDependency, blocked)
		return
	case len(skipped) > 0:
		r.makeSkipped(f, local, s, fmt.Sprintf("skipped: %s, which it needs, was skipped", strings.Join(skipped, ", ")), nil, views)
		return
	}
	if len(g.when[s]) > 0 && !g.perInstance[s] && r.testsUndecided(g.when[s], f) {
		// It tests a paired fan-out upstream not decided yet: its gate
		// is taken again once it is (nothing is made before).
		r.s.decisionWaits = append(r.s.decisionWaits, decisionWait{f: f, local: local, s: s})
		return
	}
	if len(g.when[s]) > 0 && !g.perInstance[s] {
		ok, seen := r.evalAll(g.when[s], f, nil)
		label := r.runLabel(s, f, -1)
		r.record(WorkflowEvent{Kind: EventConditionDecided, StepID: st.ID, Run: label, Condition: "when", Result: &ok, Seen: seen})
		if !ok {
			r.makeSkipped(f, local, s, falseText(g.when[s], seen), seen, views)
			return
		}
		r.conditions[label] = seen
	}
	if fan := g.fan[s]; fan != nil {
		r.fanOut(f, local, s, fan, views)
		return
	}
	run := r.newRun(f, local, s, -1, nil, st, views)
	r.startOrReuse(run)
}

// runLabel names step s's run in frame f: check-plan#2 in a loop's
// second iteration (#1.2 for loops in loops), make[3] for the third
// instance of a fan-out, the step's id otherwise.
func (r *runner) runLabel(s int, f *frame, item int) string {
	label := r.w.Steps[s].ID
	if len(f.iters) > 0 {
		label += "#" + joinInts(f.iters)
	}
	if item >= 0 {
		label += "[" + strconv.Itoa(item+1) + "]"
	}
	return label
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ".")
}

// newRun makes a run of step s in frame f.
func (r *runner) newRun(f *frame, local, s, item int, itemVal any, spec *Step, views []depView) *stepRun {
	run := &stepRun{seq: len(r.s.runs), step: s, frame: f, item: item, itemVal: itemVal, label: r.runLabel(s, f, item), spec: spec, madeAt: r.s.decisions,
		wave: f.members[local].base + 1}
	for _, v := range views {
		run.inputs = append(run.inputs, v.runs...)
	}
	for _, in := range run.inputs {
		run.fresh = run.fresh || in.fresh
	}
	for p := f; p != nil; p = parentFrame(p) {
		if p.prev != nil && p.prev.fresh {
			run.fresh = true
		}
	}
	r.s.runs = append(r.s.runs, run)
	f.runs = append(f.runs, run)
	m := &f.members[local]
	m.runs = append(m.runs, run)
	m.pending++
	return run
}

func parentFrame(f *frame) *frame {
	if f.loop == nil {
		return nil
	}
	return f.loop.parent
}

// makeHeld decides step s held in frame f, with one run.
func (r *runner) makeHeld(f *frame, local, s int, reason string, blockedBy []string) {
	r.decideHeld(r.newRun(f, local, s, -1, nil, &r.w.Steps[s], nil), reason, blockedBy)
}

// decideHeld decides a made run held, blocked by blockedBy.
func (r *runner) decideHeld(run *stepRun, reason string, blockedBy []string) {
	spec := &r.w.Steps[run.step]
	run.state = runHeld
	out := heldOutcome(spec, reason, blockedBy)
	r.describeRun(&out, run)
	run.outcome = &out
	r.record(WorkflowEvent{Kind: EventStepHeld, StepID: spec.ID, Run: run.label, HeldReason: reason, BlockedBy: blockedBy})
	r.runDecided(run)
}

// makeSkipped decides step s skipped in frame f, with one run.
func (r *runner) makeSkipped(f *frame, local, s int, reason string, seen []ConditionSeen, views []depView) {
	r.skipRun(r.newRun(f, local, s, -1, nil, &r.w.Steps[s], views), reason, seen)
}

// skipRun decides a made run skipped.
func (r *runner) skipRun(run *stepRun, reason string, seen []ConditionSeen) {
	spec := &r.w.Steps[run.step]
	run.state = runSkipped
	out := skippedOutcome(spec, reason, seen)
	r.describeRun(&out, run)
	run.outcome = &out
	r.record(WorkflowEvent{Kind: EventStepSkipped, StepID: spec.ID, Run: run.label, SkipReason: reason, Seen: seen})
	r.runDecided(run)
}

// describeRun fills the fields that place an outcome among the runs.
func (r *runner) describeRun(out *StepOutcome, run *stepRun) {
	out.Run = run.label
	if l := r.s.g.loopOf[run.step]; l >= 0 {
		out.Loop, out.Iteration = r.w.Loops[l].ID, slices.Clone(run.frame.iters)
	}
	if run.item >= 0 {
		out.Item = run.item + 1
	}
}

// fanOut makes one run of step s per item of its source's payload array,
// or decides it failed (not an array, more items than the cap) or
// skipped (no item).
func (r *runner) fanOut(f *frame, local, s int, fan *fanOut, views []depView) {
	st := &r.w.Steps[s]
	src := r.view(fan.source, f)
	fail := func(msg string) {
		run := r.newRun(f, local, s, -1, nil, st, views)
		run.state = runNotReady
		out := StepOutcome{
			StepID: st.ID, Agent: agentOrDefault(st.Agent), Posture: st.PermissionMode, WorkspaceMode: st.WorkspaceMode,
			DependsOn: nonNil(st.DependsOn), SubagentStatus: tools.SubagentNotStarted, CheckpointStatus: CheckpointFailed,
			Summary: "not started: " + msg, Error: &tools.Failure{Kind: tools.ErrInvalidArgs, Message: msg},
		}
		r.describeRun(&out, run)
		run.outcome = &out
		run.fresh = true // nothing to reuse: decide it again next time
		r.record(WorkflowEvent{Kind: EventCheckpointDecided, StepID: st.ID, Run: run.label, Outcome: &out})
		r.runDecided(run)
		r.failFast(run)
	}
	if len(src.runs) != 1 {
		fail(fmt.Sprintf("for_each.step %q has no single run to read items from", r.w.Steps[fan.source].ID))
		return
	}
	payload := r.payloadOf(src.runs[0])
	v, ok := lookup(payload, fan.path)
	arr, isArray := v.([]any)
	switch {
	case !ok:
		fail(fmt.Sprintf("the payload of %s has nothing at %s (for_each.path); there are no items to fan out over", src.runs[0].label, st.ForEach.Path))
		return
	case !isArray:
		fail(fmt.Sprintf("the payload of %s holds %s at %s (for_each.path), not an array", src.runs[0].label, jsonTypeOf(v), st.ForEach.Path))
		return
	case len(arr) > fan.maxItems:
		fail(fmt.Sprintf("the payload of %s holds %d items at %s, more than for_each.max_items (%d); nothing was started", src.runs[0].label, len(arr), st.ForEach.Path, fan.maxItems))
		return
	case len(arr) == 0:
		r.makeSkipped(f, local, s, fmt.Sprintf("skipped: the payload of %s holds no items at %s", src.runs[0].label, st.ForEach.Path), nil, views)
		return
	}
	g := r.s.g
	for k, v := range views {
		if g.paired[s][k] && len(v.runs) != len(arr) {
			if _, ok := instanceView(v, 0); ok {
				fail(fmt.Sprintf("its condition pairs its instances with those of %s, which has %d, and the payload of %s holds %s at %s", v.label, len(v.runs), src.runs[0].label, plural.Of(len(arr), "item", "items"), st.ForEach.Path))
				return
			}
		}
	}
	r.record(WorkflowEvent{Kind: EventFanOut, StepID: st.ID, Run: r.runLabel(s, f, -1), Items: len(arr), MaxItems: fan.maxItems})
	runs := make([]*stepRun, len(arr))
	errs := make([]error, len(arr))
	gates := make([]instanceGate, len(arr))
	for k, item := range arr {
		spec, err := instantiate(st, k, item)
		if err != nil {
			spec = st
		}
		iv := views
		if g.perInstance[s] {
			iv = r.instanceViews(s, views, k)
		}
		runs[k] = r.newRun(f, local, s, k, item, spec, iv)
		runs[k].items, errs[k] = len(arr), err
		if err == nil && g.perInstance[s] {
			runs[k].views = iv
			gates[k] = r.gateInstance(runs[k], iv)
		}
	}
	if len(g.scopes[f.scope].dependents[local]) > 0 {
		r.memberInstantiated(f, local)
	}
	// Every instance is made before any is decided, so the step is not
	// decided before it has all its runs.
	for k, run := range runs {
		switch {
		case errs[k] != nil:
		case len(gates[k].waitFor) > 0:
			r.awaitPartners(run, gates[k].waitFor)
		case gates[k].held:
			r.decideHeld(run, HeldDependency, gates[k].blocked)
		case gates[k].skip != "":
			r.skipRun(run, gates[k].skip, gates[k].seen)
		default:
			r.startOrReuse(run)
		}
	}
	for k, run := range runs {
		if errs[k] == nil {
			continue
		}
		run.state = runNotReady
		out := StepOutcome{
			StepID: st.ID, Agent: agentOrDefault(st.Agent), Posture: st.PermissionMode, WorkspaceMode: st.WorkspaceMode,
			DependsOn: nonNil(st.DependsOn), SubagentStatus: tools.SubagentNotStarted, CheckpointStatus: CheckpointFailed,
			Summary: "not started: " + errs[k].Error(), Error: &tools.Failure{Kind: tools.ErrInvalidArgs, Message: errs[k].Error()},
		}
		r.describeRun(&out, run)
		run.outcome = &out
		run.fresh = true
		r.record(WorkflowEvent{Kind: EventCheckpointDecided, StepID: st.ID, Run: run.label, Outcome: &out})
		r.runDecided(run)
		r.failFast(run)
	}
}

// instanceViews are step s's dependency views as its instance of item k
// sees them: each paired fan-out reduced to its instance of item k.
func (r *runner) instanceViews(s int, views []depView, k int) []depView {
	out := slices.Clone(views)
	for j := range out {
		if r.s.g.paired[s][j] {
			out[j], _ = instanceView(out[j], k)
		}
	}
	return out
}

// instanceGate is what gating decided for one instance of a fan-out
// decided per instance: wait (for the paired instances not decided yet),
// held (a paired instance it needs is not ready), skipped (with why), or
// none of these (it runs).
type instanceGate struct {
	waitFor []*stepRun
	held    bool
	blocked []string
	skip    string
	seen    []ConditionSeen
}

// gateInstance gates one instance of a fan-out decided per instance: on
// the paired instances of its dependencies, then on its condition, each
// leaf that tests a paired fan-out looking at the instance of the same
// item. The condition's decision is recorded for the instance.
func (r *runner) gateInstance(run *stepRun, views []depView) instanceGate {
	g := r.s.g
	s := run.step
	var out instanceGate
	var skipped []string
	for k, v := range views {
		if !g.paired[s][k] || len(v.runs) != 1 || v.runs[0].item != run.item {
			continue // gated as a whole (gateStep)
		}
		partner := v.runs[0]
		if partner.outcome == nil {
			out.waitFor = append(out.waitFor, partner)
			continue
		}
		switch status := partner.outcome.CheckpointStatus; {
		case status == CheckpointReady, g.tolerated[s][k]:
		case status == CheckpointSkipped:
			skipped = appendNew(skipped, v.label)
		default:
			out.blocked = appendNew(out.blocked, v.label)
		}
	}
	switch {
	case len(out.waitFor) > 0:
		return instanceGate{waitFor: out.waitFor}
	case r.s.stopped != "":
		// Nothing starts any more: held, naming what it still waited for.
		out.held = true
		return out
	case len(out.blocked) > 0:
		out.held = true
		return out
	case len(skipped) > 0:
		out.skip = fmt.Sprintf("skipped: %s, which it needs, was skipped", strings.Join(skipped, ", "))
		return out
	}
	ok, seen := r.evalAll(g.when[s], run.frame, &pairing{step: s, item: run.item})
	r.record(WorkflowEvent{Kind: EventConditionDecided, StepID: r.w.Steps[s].ID, Run: run.label, Condition: "when", Result: &ok, Seen: seen})
	if !ok {
		out.skip, out.seen = falseText(g.when[s], seen), seen
		return out
	}
	r.conditions[run.label] = seen
	return out
}

// pairing is the instance a condition is decided for: step's instance of
// item (0-based).
type pairing struct{ step, item int }

// awaitPartners makes an instance wait for its paired instances that are
// not decided yet; the last of them to be decided gates it.
func (r *runner) awaitPartners(run *stepRun, partners []*stepRun) {
	s := &r.s
	if s.partnerWaits == nil {
		s.partnerWaits = map[*stepRun][]*stepRun{}
	}
	run.partners = len(partners)
	for _, p := range partners {
		s.partnerWaits[p] = append(s.partnerWaits[p], run)
	}
}

// partnerDecided gates the instances whose last undecided paired
// instance was run, in the order they began to wait.
func (r *runner) partnerDecided(run *stepRun) {
	waiting, ok := r.s.partnerWaits[run]
	if !ok {
		return
	}
	delete(r.s.partnerWaits, run)
	for _, w := range waiting {
		if w.partners--; w.partners > 0 {
			continue
		}
		// What it can have waited for, and whether a new child ran for
		// one of its inputs, as of now (resume_from).
		w.madeAt = r.s.decisions
		for _, in := range w.inputs {
			w.fresh = w.fresh || in.fresh
		}
		gate := r.gateInstance(w, w.views)
		switch {
		case gate.held && r.s.stopped != "":
			r.decideHeld(w, r.s.stopped, gate.blocked)
		case gate.held:
			r.decideHeld(w, HeldDependency, gate.blocked)
		case gate.skip != "":
			r.skipRun(w, gate.skip, gate.seen)
		default:
			r.startOrReuse(w)
		}
	}
}

// startOrReuse reuses a run's checkpoint from the run resumed from when it
// may (resume_from), or queues it for a slot.
func (r *runner) startOrReuse(run *stepRun) {
	if out, ok := r.reusable(run); ok {
		r.reuse(run, out)
		return
	}
	run.fresh = true
	for f := run.frame; f != nil; f = parentFrame(f) {
		f.fresh = true
	}
	run.state = runWaiting
	r.makeRunnable(run)
}

// reuse decides run with the outcome of the run it reuses. Apart from
// startOrReuse so that the outcome, which the run keeps, is allocated for
// a reused run only, not for every run started.
func (r *runner) reuse(run *stepRun, out StepOutcome) {
	merging := r.prior.Merging[run.label]
	if merging {
		// Ready, and its merge was cut off: the child's work is merged
		// now (what landed already brings nothing new), as it would
		// have been; the step is not run again.
		if b := out.Checkpoint; b != nil {
			c := *b
			c.KnownLimitations = slices.Clone(b.KnownLimitations)
			out.Checkpoint = &c
		}
		out.Merge = nil
		r.awaitMerge()
		out = r.land(run, out)
	}
	run.state = runReady
	if out.CheckpointStatus != CheckpointReady {
		run.state = runNotReady
	}
	r.describeRun(&out, run)
	run.outcome = &out
	r.markRan(run.frame)
	r.noteChanges(run)
	if e := r.s.estimates; e != nil && out.ElapsedMS > 0 {
		// What it took when it ran, as a run that went on would
		// have counted it: a resumed run orders the rest alike.
		e.observe(run.step, out.ElapsedMS)
	}
	r.record(WorkflowEvent{Kind: EventCheckpointDecided, StepID: out.StepID, Run: run.label, Outcome: &out})
	r.runDecided(run)
	if merging {
		r.failFast(run)
	}
}

// runKey places a waiting run in priority order: its step's rank (the
// longest chain of dependents first), then the order runs were made. With
// estimates, the expected time still ahead of its step comes first, as
// measured when the run is made (keys never change in the queues).
func (s *sched) runKey(run *stepRun) priority {
	key := priority{lo: s.g.rank[run.step]<<32 | run.seq}
	if s.estimates != nil {
		key.hi = -int(s.estimates.heightOf(run.step))
	}
	return key
}

func runKeyOf(run *stepRun) priority { return run.key }

// makeRunnable queues a waiting run with the waiting runs of its conflict
// profile (profiles.go). A profile with waiting runs is either in heads or
// parked on the running run that blocks it.
func (r *runner) makeRunnable(run *stepRun) {
	s := &r.s
	q := s.index.profile(run.spec)
	run.profile, run.key = q, s.runKey(run)
	for int(q) >= len(s.queues) {
		s.queues = append(s.queues, minHeap[*stepRun]{key: runKeyOf})
	}
	queue := &s.queues[q]
	queue.push(run)
	switch {
	case queue.len() == 1:
		s.heads.push(q)
	case queue.front() == run && s.heads.has(q):
		s.heads.fix(q) // run goes before the rest of its profile
	}
}

// headKey is the key of a profile's first waiting run.
func (s *sched) headKey(q profileID) priority { return s.queues[q].front().key }

// markRan notes that a run of frame f (and of every frame holding it) ran
// or was reused.
func (r *runner) markRan(f *frame) {
	for ; f != nil; f = parentFrame(f) {
		f.ran = true
	}
}

// runDecided lets a decided run's member go on once all its runs are.
func (r *runner) runDecided(run *stepRun) {
	r.s.decisions++
	run.decidedAt = r.s.decisions
	f := run.frame
	local := r.s.g.localOf(run.step)
	m := &f.members[local]
	m.pending--
	if m.pending == 0 {
		r.memberDecided(f, local)
	}
	r.partnerDecided(run)
	r.retryDecisions()
}

// next marks and returns the runs to start now, in priority order: a
// waiting run starts when a slot is free and it conflicts with no running
// run (one whose child ended and that waits for its merge or its turn to
// be decided frees its slot but still counts as running for conflicts:
// a run started beside it must not write what it is merging); one that
// conflicts does not block later ones. It looks only at the
// first waiting run of each conflict profile: when that one conflicts with
// a running run, so does every run behind it, and the profile is parked
// on that run until it ends. So a decision costs in proportion to the runs
// it starts and the profiles it looks at, not to every waiting run.
func (r *runner) next() []*stepRun {
	s := &r.s
	if s.stopped != "" || r.failing {
		return nil
	}
	var start []*stepRun
	// Runs that ended and wait to be decided give their slots back, up to
	// MaxConcurrency of them: each keeps a snapshot until it is merged, so
	// at most twice MaxConcurrency snapshots are alive while merges wait.
	for len(s.running)-min(s.ended, r.w.MaxConcurrency) < r.w.MaxConcurrency && s.heads.len() > 0 {
		q := s.heads.top()
		queue := &s.queues[q]
		if queue.dropWhile(func(run *stepRun) bool { return run.state != runWaiting }) {
			if queue.len() == 0 {
				s.heads.pop()
			} else {
				s.heads.fix(q)
			}
			continue
		}
		if by := r.conflictsWithRunning(q); by != nil {
			s.heads.pop()
			s.parked[by] = append(s.parked[by], q)
			continue
		}
		run := queue.pop()
		if queue.len() == 0 {
			s.heads.pop()
		} else {
			s.heads.fix(q)
		}
		run.state = runRunning
		s.running = append(s.running, run)
		r.addRunning(run)
		start = append(start, run)
	}
	return start
}

// conflictsWithRunning returns the first running run (in start order)
// whose profile conflicts with q, or nil.
func (r *runner) conflictsWithRunning(q profileID) *stepRun {
	for _, pc := range r.s.runningProfiles {
		if r.s.index.conflict(q, pc.id) {
			return pc.first
		}
	}
	return nil
}

// runningProfile is a profile of running runs: its first to start, and
// how many run.
type runningProfile struct {
	id    profileID
	first *stepRun
	n     int
}

func (r *runner) addRunning(run *stepRun) {
	s := &r.s
	for k := range s.runningProfiles {
		if s.runningProfiles[k].id == run.profile {
			s.runningProfiles[k].n++
			return
		}
	}
	s.runningProfiles = append(s.runningProfiles, runningProfile{id: run.profile, first: run, n: 1})
}

// finished takes a started run out of the running ones, and lets the
// profiles parked on it be looked at again.
func (r *runner) finished(run *stepRun) {
	s := &r.s
	if !slices.Contains(s.running, run) {
		return
	}
	s.running = slices.DeleteFunc(s.running, func(o *stepRun) bool { return o == run })
	if run.childEnded {
		s.ended--
	}
	for _, q := range s.parked[run] {
		if s.queues[q].len() > 0 && !s.heads.has(q) {
			s.heads.push(q)
		}
	}
	delete(s.parked, run)
	for k := range s.runningProfiles {
		pc := &s.runningProfiles[k]
		if pc.id != run.profile {
			continue
		}
		if pc.n--; pc.n == 0 {
			s.runningProfiles = slices.Delete(s.runningProfiles, k, k+1)
		} else if pc.first == run {
			// The next of its runs to have started is now its first.
			for _, o := range s.running {
				if o.profile == run.profile {
					pc.first = o
					break
				}
			}
		}
		return
	}
}

// waitingRuns takes every waiting run out of the queues, in priority
// order, and empties them.
func (r *runner) waitingRuns() []*stepRun {
	s := &r.s
	var out []*stepRun
	for q := range s.queues {
		for s.queues[q].len() > 0 {
			if run := s.queues[q].pop(); run.state == runWaiting {
				out = append(out, run)
			}
		}
	}
	s.heads.clear()
	slices.SortFunc(out, func(a, b *stepRun) int {
		if a.key.before(b.key) {
			return -1
		}
		return 1 // keys differ: seq is in every one
	})
	return out
}

// startLoop starts the first iteration of inner loop l in frame f.
func (r *runner) startLoop(f *frame, local, l int) {
	lr := &loopRun{loop: l, parent: f, local: local, label: r.w.Loops[l].ID, state: LoopRunning}
	if len(f.iters) > 0 {
		lr.label += "#" + joinInts(f.iters)
	}
	f.members[local].loop = lr
	r.s.loops = append(r.s.loops, lr)
	if r.s.stopped != "" {
		// Never started: its steps are held in a first iteration that
		// did not begin.
		lr.state = LoopStopped
		r.startIteration(lr, false)
		return
	}
	r.startIteration(lr, true)
}

// startIteration begins the next iteration of a loop run.
func (r *runner) startIteration(lr *loopRun, record bool) {
	var prev *frame
	if n := len(lr.frames); n > 0 {
		prev = lr.frames[n-1]
	}
	iter := len(lr.frames) + 1
	if record {
		r.record(WorkflowEvent{Kind: EventIterationStarted, Loop: r.w.Loops[lr.loop].ID, Run: lr.label, Iteration: iter})
	}
	base := lr.parent.members[lr.local].base
	if prev != nil {
		base = max(base, prev.end)
	}
	f := r.newFrame(r.s.g.scopeOf(lr.loop), lr, iter, prev, lr.parent, base)
	f.begun = record
	lr.frames = append(lr.frames, f)
}

// iterationDone decides, once every member of an iteration is decided,
// whether the loop ends and how: satisfied (its until holds), converged
// (its converge value repeats), exhausted (max_iterations), held or
// skipped (nothing in the iteration could run), or stopped (the workflow
// stopped); otherwise the next iteration starts.
func (r *runner) iterationDone(lr *loopRun, f *frame) {
	def := lr.def(r.w)
	g := r.s.g
	ev := WorkflowEvent{Kind: EventIterationFinished, Loop: def.ID, Run: lr.label, Iteration: f.iter}
	var untilSeen []ConditionSeen
	satisfied := false
	switch {
	case r.s.stopped != "" || lr.state == LoopStopped:
		ev.Decision = string(LoopStopped)
	case !f.ran:
		ev.Decision = string(LoopHeld)
		if r.allSkipped(f) {
			ev.Decision = string(LoopSkipped)
		}
	case r.testsUndecided(g.until[lr.loop], f):
		// Its until tests a paired fan-out whose instances are not all
		// decided (only their partners in the loop were): decide when
		// they are.
		r.s.decisionWaits = append(r.s.decisionWaits, decisionWait{lr: lr, f: f})
		return
	default:
		if len(g.until[lr.loop]) > 0 {
			satisfied, untilSeen = r.evalAll(g.until[lr.loop], f, nil)
			ev.Seen = untilSeen
		} else {
			satisfied = r.allRanReady(f)
		}
		ev.Result = &satisfied
		switch {
		case satisfied:
			ev.Decision = string(LoopSatisfied)
		default:
			if r.converged(lr, f, &ev) {
				ev.Decision = string(LoopConverged)
			}
			if ev.Decision == "" && f.iter >= def.MaxIterations {
				ev.Decision = string(LoopExhausted)
			}
			if ev.Decision == "" {
				ev.Decision = "next"
			}
		}
	}
	if f.begun {
		r.record(ev)
	}
	if ev.Decision == "next" {
		r.startIteration(lr, true)
		return
	}
	lr.state = LoopState(ev.Decision)
	if lr.state == LoopExhausted || lr.state == LoopConverged {
		if len(lr.blockers) == 0 {
			lr.blockers = unmetText(untilSeen, r.notReadyRuns(f))
		}
	} else {
		lr.blockers = nil
	}
	out := LoopOutcome{
		Loop: def.ID, Run: lr.label, Iterations: len(lr.frames), MaxIterations: def.MaxIterations, State: lr.state,
		OnExhausted: def.OnExhausted, Blockers: nonNil(lr.blockers),
	}
	if lr.state == LoopStopped && !f.ran && len(lr.frames) == 1 {
		out.Iterations = 0
	}
	lr.outcome = &out
	r.record(WorkflowEvent{Kind: EventLoopFinished, Loop: def.ID, Run: lr.label, LoopOutcome: &out})
	r.memberDecided(lr.parent, lr.local)
	if lr.unresolvedHold(def) {
		r.failFastLoop()
	}
}

// decisionWait is a condition waiting for a step it tests: loop lr's
// until in iteration f, or (lr nil) the when of step s, member local of f.
type decisionWait struct {
	lr       *loopRun
	f        *frame
	local, s int
}

func (d decisionWait) conds(g *graph) []cond {
	if d.lr != nil {
		return g.until[d.lr.loop]
	}
	return g.when[d.s]
}

// testsUndecided reports whether a step tested by conds is not decided
// as seen from frame f. Only a paired fan-out can be: the steps after it
// were gated on its instances one by one, so what follows them may come
// before its last instance ends.
func (r *runner) testsUndecided(conds []cond, f *frame) bool {
	for k := range conds {
		c := &conds[k]
		if c.op == "leaf" && !r.view(c.step, f).decided {
			return true
		}
		if r.testsUndecided(c.subs, f) {
			return true
		}
	}
	return false
}

// retryDecisions decides the conditions that waited, once what they test
// is decided, in the order they began to wait.
func (r *runner) retryDecisions() {
	for k := 0; k < len(r.s.decisionWaits); k++ {
		d := r.s.decisionWaits[k]
		if r.testsUndecided(d.conds(r.s.g), d.f) {
			continue
		}
		r.s.decisionWaits = slices.Delete(r.s.decisionWaits, k, k+1)
		if d.lr != nil {
			r.iterationDone(d.lr, d.f)
		} else {
			r.gateStep(d.f, d.local, d.s)
		}
		k = -1 // deciding it may have decided what the others wait for
	}
}

// converged compares each of the loop's converge values in iteration f
// with the previous iteration's, records what it saw in ev (Value for a
// single value, Values for a list), and reports whether every value is
// present and the same as before. A value whose step did not run in f
// keeps its previous value and does not converge; a run whose payload
// has no value at the path forgets it.
func (r *runner) converged(lr *loopRun, f *frame, ev *WorkflowEvent) bool {
	conv := r.s.g.loops[lr.loop].converge
	if len(conv) == 0 {
		return false
	}
	if lr.last == nil {
		lr.last, lr.hasLast, lr.blockersK = make([]string, len(conv)), make([]bool, len(conv)), make([][]string, len(conv))
	}
	all := true
	for k, cv := range conv {
		v := r.view(cv.step, f)
		if len(v.runs) != 1 {
			all = false
			continue
		}
		seen := ConvergeSeen{Converge: cv.text, Run: v.runs[0].label}
		val, ok := lookup(r.payloadOf(v.runs[0]), cv.path)
		if !ok {
			lr.hasLast[k], lr.blockersK[k] = false, nil
			all = false
		} else {
			c := canonical(val, true)
			seen.Value = json.RawMessage(canonical(val, false))
			seen.Same = lr.hasLast[k] && lr.last[k] == c
			all = all && seen.Same
			lr.last[k], lr.hasLast[k], lr.blockersK[k] = c, true, blockersOf(val)
		}
		if len(conv) == 1 {
			ev.Value = seen.Value
		} else {
			ev.Values = append(ev.Values, seen)
		}
	}
	// The blockers: each blocking value's items; with several values,
	// each item says whose it is.
	lr.blockers = nil
	for k, b := range lr.blockersK {
		if !conv[k].blocks {
			continue
		}
		for _, item := range b {
			if len(conv) > 1 {
				item = r.w.Steps[conv[k].step].ID + ": " + item
			}
			lr.blockers = append(lr.blockers, item)
		}
	}
	return all
}

// blockersOf lists a converge value as blockers: each element of an array
// (strings as they are), or the value itself.
func blockersOf(v any) []string {
	one := func(x any) string {
		if s, ok := x.(string); ok {
			return s
		}
		return canonical(x, false)
	}
	if arr, ok := v.([]any); ok {
		out := make([]string, 0, len(arr))
		for _, x := range arr {
			out = append(out, one(x))
		}
		return out
	}
	return []string{one(v)}
}

// unmetText says what kept a loop from its until: the conditions that were
// false, with the values seen, or the runs that were not ready.
func unmetText(seen []ConditionSeen, notReady []string) []string {
	var out []string
	for _, s := range seen {
		if !s.Result {
			out = append(out, s.text())
		}
	}
	if len(out) == 0 {
		out = notReady
	}
	return out
}

// allSkipped reports whether every run of a frame (at any depth) was
// skipped.
func (r *runner) allSkipped(f *frame) bool {
	for _, run := range f.runs {
		if run.state != runSkipped {
			return false
		}
	}
	for _, in := range f.inner {
		if !r.allSkipped(in) {
			return false
		}
	}
	return true
}

// allRanReady is a loop's until by default: every run of the iteration
// that was not skipped is ready, and every inner loop ended satisfied.
func (r *runner) allRanReady(f *frame) bool {
	for _, run := range f.runs {
		if run.state != runReady && run.state != runSkipped {
			return false
		}
	}
	for k := range f.members {
		if lr := f.members[k].loop; lr != nil && lr.state != LoopSatisfied && lr.state != LoopSkipped {
			return false
		}
	}
	return true
}

// notReadyRuns names a frame's runs that are neither ready nor skipped.
func (r *runner) notReadyRuns(f *frame) []string {
	var out []string
	for _, run := range f.runs {
		if run.state != runReady && run.state != runSkipped {
			out = append(out, run.label+": "+string(run.outcome.CheckpointStatus))
		}
	}
	for k := range f.members {
		if lr := f.members[k].loop; lr != nil && lr.state != LoopSatisfied && lr.state != LoopSkipped {
			out = append(out, "loop "+lr.label+": "+string(lr.state))
		}
	}
	return out
}

// payloadOf is a run's checkpoint payload, decoded once.
func (r *runner) payloadOf(run *stepRun) any {
	if !run.payloadDecoded {
		run.payloadDecoded = true
		if o := run.outcome; o != nil && o.Checkpoint != nil && len(o.Checkpoint.Payload) > 0 {
			run.payload, _ = decodeValue(o.Checkpoint.Payload)
		}
	}
	return run.payload
}

// falseText is the skip reason of a false condition: what each test saw,
// after the condition as written when it is not only tests (any, not:
// the tests' values alone do not say how they combined).
func falseText(conds []cond, seen []ConditionSeen) string {
	if !slices.ContainsFunc(conds, func(c cond) bool { return c.op != "leaf" }) {
		return "skipped: its condition was false: " + seenText(seen)
	}
	texts := make([]string, len(conds))
	for k := range conds {
		texts[k] = conds[k].text
	}
	return "skipped: its condition " + strings.Join(texts, " and ") + " was false: " + seenText(seen)
}

// evalAll evaluates conditions that must all hold, from frame f, with
// what each leaf saw. Every leaf is evaluated (no short cut), so the
// evidence shows every value the decision depended on.
func (r *runner) evalAll(conds []cond, f *frame, p *pairing) (bool, []ConditionSeen) {
	var seen []ConditionSeen
	ok := true
	for k := range conds {
		if !r.eval(&conds[k], f, p, &seen) {
			ok = false
		}
	}
	return ok, seen
}

func (r *runner) eval(c *cond, f *frame, p *pairing, seen *[]ConditionSeen) bool {
	switch c.op {
	case "all":
		ok := true
		for k := range c.subs {
			if !r.eval(&c.subs[k], f, p, seen) {
				ok = false
			}
		}
		return ok
	case "any":
		ok := false
		for k := range c.subs {
			if r.eval(&c.subs[k], f, p, seen) {
				ok = true
			}
		}
		return ok
	case "not":
		return !r.eval(&c.subs[0], f, p, seen)
	}
	v := r.view(c.step, f)
	if p != nil && r.s.g.pairs(p.step, c.step) {
		v, _ = instanceView(v, p.item)
	}
	s := ConditionSeen{Condition: c.text, Path: c.pointer, Run: v.label, Status: v.status}
	ok := false
	if c.status == nil {
		ok = v.status == CheckpointReady
	} else {
		ok = slices.Contains(c.status, v.status)
	}
	if c.path != nil {
		var val any
		present := false
		if len(v.runs) == 1 {
			val, present = lookup(r.payloadOf(v.runs[0]), c.path)
		}
		if present {
			s.Value = json.RawMessage(canonical(val, false))
		}
		ok = ok && testValue(c, val, present)
	}
	s.Result = ok
	*seen = append(*seen, s)
	return ok
}

// testValue applies a leaf's value test to the value at its path.
func testValue(c *cond, val any, present bool) bool {
	switch c.test {
	case "exists":
		return present == c.exists
	case "equals", "in":
		if !present {
			return false
		}
		return slices.Contains(c.values, canonical(val, false))
	case "contains":
		arr, ok := val.([]any)
		if !present || !ok {
			return false
		}
		for _, x := range arr {
			if canonical(x, false) == c.values[0] {
				return true
			}
		}
	}
	return false
}
