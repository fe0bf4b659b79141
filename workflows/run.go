package workflows

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/tools"
)

// RunOptions identify a run.
type RunOptions struct {
	// WorkflowID names the run in its events and result; NewWorkflowID
	// makes one.
	WorkflowID string
	// ToolCallID is the run_workflow call, recorded in every event.
	ToolCallID string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// NoPlan: nobody shows the plan (pixir run draws its own rows from the
	// events), so it is never built. A plan is built from every run each
	// time it is shown, up to ten times a second: on 10,000 steps that was
	// a tenth of the run's CPU for nothing.
	NoPlan bool

	// waiting, in tests, is called each time Run is about to wait for an
	// event: a simulated clock delivers its next child ends then.
	waiting func()
	// finished, in benchmarks, sees the runner at the end of the run.
	finished func(r *runner)
}

// planEvery bounds how often the plan is shown: ACP sends the whole plan
// each time, so a large workflow would otherwise cost O(steps) per event.
// The last state is always shown.
const planEvery = 100 * time.Millisecond

// runner is one run of a workflow: the scheduler (scheduler.go), driven
// by the children's ends, which arrive on its own channel.
type runner struct {
	ctx      context.Context
	children Children
	evidence Evidence
	merger   Merger
	// committer makes the run's commit (commitWork); before is the
	// workspace's uncommitted work when the run started.
	committer Committer
	before    BeforeRun
	// mergedBy: a merged path, and the runs that merged it, in order.
	mergedBy map[string][]string
	// changedAt: of each file the run changed, when its last change was
	// decided (noteLanded), for the commit.
	changedMu sync.Mutex
	changedAt map[string]time.Time
	// account is the run's budget, which its children's calls are charged
	// to: once it is spent, no step starts.
	account  *budget.Account
	budgets  Budgets
	w        *Workflow
	opt      RunOptions
	prior    *Reuse // the checkpoints reused from an earlier run
	s        sched
	schemas  []*tools.Schema // each step's compiled output_schema, once it ran
	schemaOf map[string]*tools.Schema
	// closings are each step's prompt closing (closing), made at its
	// first run.
	closings []string

	// carriers are the decided isolated runs whose snapshots hold
	// changes, in the order they were decided: all that a later run's
	// snapshot may inherit, so a start looks at them, not at every
	// decided run.
	carriers []*stepRun
	byAgent  map[string]*stepRun // a started child's run
	// conditions are the when decisions of runs that went ahead, by run
	// label, for their outcomes.
	conditions map[string][]ConditionSeen
	started    time.Time
	planShown  time.Time
	lastPlan   []tools.PlanEntry

	// ends receives every started child's final view. At most
	// MaxConcurrency children are started and not yet ended, so it never
	// holds more ends than that: a send from the Manager never waits.
	ends chan tools.SubagentView
	// landing are the runs whose children ended, not yet decided, in the
	// order they ended: the first waits for its merge (mergeAsync), the
	// others for it, so runs are merged and decided in the order they
	// ended, one merge at a time, while their slots start other runs.
	landing []*landingRun
	// merges receives the answer of the merge in flight (merging).
	merges  chan mergeAnswer
	merging bool
	// failing: a run failed under fail_fast and waits to be decided;
	// nothing starts meanwhile (failFast stops the run at its decision).
	failing bool
	// recordErr is the first failure to write the Log: the run goes on (the
	// children are real), but the result says the evidence is incomplete.
	recordErr error
}

// run is Prepared.Run.
func run(ctx context.Context, p *Prepared, opt RunOptions) Outcome {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	w := p.w
	n := len(w.Steps)
	r := &runner{
		ctx: ctx, children: p.ports.Children, evidence: p.ports.Evidence, merger: p.ports.Merger, committer: p.ports.Committer, mergedBy: map[string][]string{},
		account: p.runAccount(opt.WorkflowID), budgets: p.ports.Budgets, w: w, opt: opt, prior: p.reuse,
		s:       sched{g: w.graph(), index: newConflictIndex(newOverlapCache()), parked: map[*stepRun][]profileID{}, estimates: newRunEstimates(w)},
		schemas: make([]*tools.Schema, n), schemaOf: map[string]*tools.Schema{}, byAgent: map[string]*stepRun{}, conditions: map[string][]ConditionSeen{},
		ends: make(chan tools.SubagentView, max(1, w.MaxConcurrency)), merges: make(chan mergeAnswer, 1), started: opt.Now(),
	}
	defer func() {
		if p := recover(); p != nil {
			// A fault in the runner: no child it started outlives it (each
			// is stopped, its end sent and shown), and the panic goes on to
			// the tool's recover, which reports an internal failure as the
			// run_workflow call's end (the editor's steps end with it).
			r.stopRunning()
			panic(p)
		}
	}()
	r.s.heads.rank = r.s.headKey
	r.s.root = r.newFrame(0, nil, 0, nil, nil, 0)
	why := r.preflight()
	started := WorkflowEvent{Kind: EventWorkflowStarted, Workflow: w, Before: r.recordBefore(why != "")}
	if started.Before != nil {
		r.before = *started.Before
	}
	r.record(started)
	if why != "" {
		// Nothing starts: every step is held, naming why.
		r.s.stopped = why
	}
	r.drain()
	r.dispatch(ctx)
	r.showPlan()

	var deadline <-chan time.Time
	if w.TimeoutMS > 0 {
		t := time.NewTimer(time.Duration(w.TimeoutMS) * time.Millisecond)
		defer t.Stop()
		deadline = t.C
	}
	planTimer := time.NewTimer(planEvery)
	planTimer.Stop()
	defer planTimer.Stop()
	planDue := false // a change is waiting for planTimer
	done := ctx.Done()
	// acted: the last wait ended on something other than a plan refresh.
	// A simulated clock delivers its next ends only then, or a refresh
	// (on the real clock) would let two rounds of ends arrive as one.
	acted := true
	for len(r.s.running) > 0 {
		if r.opt.waiting != nil && acted && !r.merging {
			// A simulated clock stands still while a merge is made.
			r.opt.waiting()
		}
		acted = true
		select {
		case v := <-r.ends:
			r.ended(v)
			// Decide every end already delivered before starting anything,
			// so runs unlocked at the same moment start in priority order,
			// not in the order their dependencies happened to end.
			for drained := false; !drained; {
				select {
				case v := <-r.ends:
					r.ended(v)
				default:
					drained = true
				}
			}
			r.dispatch(ctx)
		case a := <-r.merges:
			r.merging = false
			if a.panicked != nil {
				// The merger's fault, raised where run's recover sees it,
				// as when the loop made the merge itself.
				panic(a.panicked)
			}
			l := r.landing[0]
			l.rep, l.err, l.answered = a.rep, a.err, true
			r.settle()
			r.dispatch(ctx)
		case <-deadline:
			deadline = nil
			r.stop(StoppedTimeout)
		case <-done:
			done = nil
			r.stop(StoppedCancelled)
		case <-planTimer.C:
			planDue, acted = false, false
			r.showPlan()
			continue
		}
		if r.opt.NoPlan {
			continue
		}
		if wait := planEvery - r.opt.Now().Sub(r.planShown); wait > 0 {
			if !planDue {
				planDue = true
				planTimer.Reset(wait)
			}
		} else {
			r.showPlan()
		}
	}
	out := r.finish()
	r.showPlan()
	if r.opt.finished != nil {
		r.opt.finished(r)
	}
	return out
}

// NewWorkflowID makes a workflow id.
func NewWorkflowID() string { return "wf-" + randomHex(6) }

// dispatch starts every run the scheduler lets start now.
func (r *runner) dispatch(ctx context.Context) {
	if ctx.Err() != nil {
		// Cancelled before this dispatch: nothing more starts, and what
		// would have is held, not failed.
		r.stop(StoppedCancelled)
		return
	}
	for {
		start := r.next()
		if len(start) == 0 {
			return
		}
		failedToStart := false
		for _, run := range start {
			if !r.startRun(ctx, run) {
				failedToStart = true
			}
		}
		if !failedToStart {
			return
		}
		// A run that could not start was decided at once; that may have
		// freed a slot or made runs, so look again.
	}
}

// startRun asks the Manager for a run's child; a refusal decides the run
// failed on the spot, except a spent budget, which stops the run: the run
// is held with every other that has not started.
func (r *runner) startRun(ctx context.Context, run *stepRun) bool {
	st := run.spec
	if r.s.stopped != "" {
		// Stopped by a run of the same round: this one never starts.
		r.holdUnstarted(run, r.s.stopped)
		return false
	}
	if err := r.spent(); err != nil {
		r.holdUnstarted(run, StoppedBudget)
		return false
	}
	var deps []*StepOutcome
	for _, in := range run.inputs {
		deps = append(deps, in.outcome)
	}
	mode, inherit := st.WorkspaceMode, r.inheritance(run)
	if len(inherit) > 0 && mode == Shared && st.PermissionMode == ReadOnly {
		// The shared workspace lacks what its isolated ancestors wrote; a
		// snapshot holding it is what the step must read.
		mode = Isolated
	}
	if mode == Shared {
		inherit = nil
	}
	run.slot = &reportSlot{stepID: run.label, schema: r.schema(run.step), verify: st.Verify}
	req := StepRequest{
		Agent: st.Agent, Task: r.childPrompt(run, deps, inherit), Name: run.label,
		WorkspaceMode: string(mode), ReadOnly: st.PermissionMode == ReadOnly,
		Timeout:    time.Duration(st.TimeoutMS) * time.Millisecond,
		Tools:      []tools.Tool{reportCheckpoint(run.slot)},
		Inherit:    inherit,
		MCPServers: st.MCPServers,
		Ended:      r.ends,
		Account:    r.account,
	}
	if st.PermissionMode == Writer {
		req.WriteSet, req.MayWrite = st.WriteSet, writeSetMatcher(st.WriteSet)
	}
	// Written by Start with the child's queued event: one append, not two.
	req.Scheduled = &Scheduled{Event: r.stamped(WorkflowEvent{Kind: EventStepScheduled, StepID: r.w.Steps[run.step].ID, Run: run.label, Wave: run.wave})}
	view, err := r.children.Start(ctx, req)
	if err != nil {
		f := tools.AsFailure(err)
		if f.Kind == tools.ErrBudgetExhausted {
			r.holdUnstarted(run, StoppedBudget)
			return false
		}
		out := StepOutcome{
			StepID: r.w.Steps[run.step].ID, Agent: agentOrDefault(st.Agent), Wave: run.wave, Posture: st.PermissionMode,
			WorkspaceMode: st.WorkspaceMode, DependsOn: nonNil(st.DependsOn),
			SubagentStatus: tools.SubagentNotStarted, CheckpointStatus: CheckpointFailed,
			Summary: "the step's child could not be started: " + f.Message, Error: f,
		}
		r.decided(run, out)
		return false
	}
	run.agentID = view.ID
	r.byAgent[view.ID] = run
	r.recorded(req.Scheduled.Err)
	return true
}

// schema is step s's compiled output_schema (nil without one), compiled
// at its first run and shared by the steps that give the same one.
func (r *runner) schema(s int) *tools.Schema {
	raw := r.w.Steps[s].OutputSchema
	if len(raw) == 0 {
		return nil
	}
	if r.schemas[s] == nil {
		if c, ok := r.schemaOf[string(raw)]; ok {
			r.schemas[s] = c
		} else {
			// Validate compiled it already; it cannot fail here.
			r.schemas[s], _ = tools.CompileSchema("output_schema", raw)
			r.schemaOf[string(raw)] = r.schemas[s]
		}
	}
	return r.schemas[s]
}

// inheritance is what a run's snapshot starts with: the changes that the
// runs it builds on made in isolated snapshots and did not merge into the
// workspace, in the order they were decided. It builds on its inputs and theirs, and on every earlier
// iteration of the loops holding it (an ancestor's snapshot already holds
// its own ancestors' changes, but its change list names only its own
// work, so every ancestor counts).
func (r *runner) inheritance(run *stepRun) []Inherited {
	if len(r.carriers) == 0 {
		return nil // nothing to inherit: no walk
	}
	seen := map[*stepRun]bool{}
	var stack []*stepRun
	push := func(xs []*stepRun) {
		for _, x := range xs {
			if !seen[x] {
				seen[x] = true
				stack = append(stack, x)
			}
		}
	}
	seenFrame := map[*frame]bool{}
	var earlier func(f *frame)
	earlier = func(f *frame) {
		push(f.runs)
		for _, in := range f.inner {
			earlier(in)
		}
	}
	// What a run builds on: its inputs, and every earlier iteration of
	// the loops holding it, and theirs in turn.
	visit := func(x *stepRun) {
		push(x.inputs)
		for f := x.frame; f != nil; f = parentFrame(f) {
			if seenFrame[f] {
				break
			}
			seenFrame[f] = true
			for p := f.prev; p != nil; p = p.prev {
				earlier(p)
			}
		}
	}
	visit(run)
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visit(x)
	}
	var out []Inherited
	for _, d := range r.carriers {
		o := d.outcome
		if !seen[d] {
			continue
		}
		if o.Merge != nil && o.Merge.Status == tools.MergeMerged {
			continue // in the workspace, which the step's snapshot is taken from
		}
		out = append(out, Inherited{StepID: d.label, Workspace: o.Workspace, Changes: *o.Changes})
	}
	return out
}

// noteChanges keeps a decided isolated run with changes among the
// carriers (inheritance).
func (r *runner) noteChanges(run *stepRun) {
	if o := run.outcome; o.WorkspaceMode == Isolated && o.Changes != nil && o.Workspace != "" && !o.Changes.Empty() {
		r.carriers = append(r.carriers, run)
	}
}

// ended decides the run whose child ended.
func (r *runner) ended(v tools.SubagentView) {
	run := r.byAgent[v.ID]
	out := decide(run.spec, v, run.slot)
	out.StepID = r.w.Steps[run.step].ID
	out.Wave = run.wave
	out.Reason = run.reason
	if out.Reason == StoppedTimeout && v.Status == tools.SubagentCancelled {
		// The workflow's clock ran out, not the step's: say it as a timeout.
		out.Error = &tools.Failure{Kind: tools.ErrTimeout, Message: fmt.Sprintf(
			"the workflow's timeout_ms (%d) passed while this step ran; it was stopped, and its work so far is in its own log", r.w.TimeoutMS)}
	}
	r.describeRun(&out, run)
	run.childEnded = true
	r.s.ended++
	if out.CheckpointStatus != CheckpointReady && r.failFastFor(run) {
		// Its running siblings are stopped and nothing starts from now,
		// not from its decision: the runs that ended before it are merged
		// and decided first, and while a merge waits their slots would
		// start the rest of the workflow. What has not started is held
		// when it is decided (failFast), its dependents for it first.
		r.failing = true
		r.stopChildren(StoppedFailFast)
	}
	r.landing = append(r.landing, &landingRun{run: run, out: out})
	r.settle()
}

// landingRun is a run whose child ended, on its way to its decision: its
// outcome so far, and its merge's answer once it has one.
type landingRun struct {
	run              *stepRun
	out              StepOutcome
	planned, merging bool // toLand looked at it; it asked the merger
	answered         bool
	rep              tools.MergeReport
	err              error
}

type mergeAnswer struct {
	rep tools.MergeReport
	err error
	// panicked is what a panic in the merger left, with its stack.
	panicked *mergePanic
}

// mergePanic is a panic of the merger, carried to the run's loop.
type mergePanic struct {
	value any
	stack []byte
}

func (p *mergePanic) String() string {
	return fmt.Sprintf("%v\n\nin the merge, at:\n%s", p.value, p.stack)
}

// settle decides the ended runs in the order they ended, as far as it
// can: a run to merge first has its merge made (mergeAsync), and it and
// the runs behind it wait for the answer, which the loop brings back.
func (r *runner) settle() {
	for len(r.landing) > 0 {
		l := r.landing[0]
		if !l.planned {
			l.planned = true
			if l.out, l.merging = r.toLand(l.run, l.out); l.merging {
				r.mergeAsync(l)
			}
		}
		if l.merging && !l.answered {
			return
		}
		r.landing = r.landing[1:]
		out := l.out
		if l.merging {
			out = r.landed(l.run, out, l.rep, l.err)
		}
		r.decided(l.run, out)
		if r.s.stopped == "" && r.spent() != nil {
			// Running steps get no more model calls; none starts. The
			// session's budget as much as the run's: spent while every step
			// already ran, no start is refused to say so.
			r.halt(StoppedBudget)
		}
	}
}

// mergeAsync asks the merger for l's merge on a goroutine of its own,
// whose answer the loop receives from r.merges: a merge can wait (for
// this process's other merges and their questions to the user, for
// another process's hold on the workspace), and the loop goes on
// starting runs meanwhile. One merge is in flight at a time; it ends by
// itself (the run's context ends it when the run is cancelled), and the
// loop, which runs while any run is undecided, receives its answer.
func (r *runner) mergeAsync(l *landingRun) {
	r.merging = true
	req := MergeRequest{StepID: l.run.label, AgentID: l.out.AgentID}
	go func() {
		var a mergeAnswer
		defer func() {
			if p := recover(); p != nil {
				a = mergeAnswer{panicked: &mergePanic{value: p, stack: debug.Stack()}}
			}
			r.merges <- a
		}()
		a.rep, a.err = r.merger.Merge(r.ctx, req)
	}()
}

// awaitMerge waits for the merge in flight to end, and puts its answer
// back for the loop: a merge made out of turn (a resumed run's, in
// reuse) comes after it, never beside it.
func (r *runner) awaitMerge() {
	if r.merging {
		r.merges <- <-r.merges
	}
}

// holdUnstarted takes back the start of a run the scheduler had let
// start, and stops the workflow for reason (a spent budget), holding it
// with every run that had not started.
func (r *runner) holdUnstarted(run *stepRun, reason string) {
	r.finished(run)
	if r.s.stopped == "" {
		r.halt(reason)
	}
	r.holdRun(run, r.s.stopped)
}

// holdRun decides a run that never started held, for reason.
func (r *runner) holdRun(run *stepRun, reason string) {
	run.state = runHeld
	out := heldOutcome(&r.w.Steps[run.step], reason, r.notReadyInputs(run))
	r.describeRun(&out, run)
	run.outcome = &out
	r.record(WorkflowEvent{Kind: EventStepHeld, StepID: out.StepID, Run: run.label, HeldReason: reason, BlockedBy: out.BlockedBy})
	r.runDecided(run)
	r.drain()
}

// decided records a started run's outcome and lets the scheduler act on
// it: dependents gate, loops decide their next iteration, fail_fast stops
// the rest.
func (r *runner) decided(run *stepRun, out StepOutcome) {
	if out.Checkpoint != nil {
		out.Checkpoint.StepID = out.StepID
	}
	r.describeRun(&out, run)
	if seen, ok := r.conditions[run.label]; ok {
		out.Conditions = seen
	}
	run.outcome = &out
	run.state = runNotReady
	if out.CheckpointStatus == CheckpointReady {
		run.state = runReady
	}
	r.finished(run)
	r.markRan(run.frame)
	r.noteChanges(run)
	if e := r.s.estimates; e != nil && run.agentID != "" {
		// What the run took, as its checkpoint_decided event records it.
		e.observe(run.step, out.ElapsedMS)
	}
	r.record(WorkflowEvent{Kind: EventCheckpointDecided, StepID: out.StepID, Run: run.label, Outcome: &out})
	r.runDecided(run)
	r.drain()
	r.failFast(run)
}

// failFast stops the workflow under fail_fast when a run ended not ready
// and nothing handles it: it is in no loop (a loop's until decides what
// its runs' failures mean) and no step tests its status (a failure
// branch).
func (r *runner) failFast(run *stepRun) {
	if run.state != runReady && r.failFastFor(run) {
		r.stop(StoppedFailFast)
	}
}

// failFastFor says whether run not being ready stops the workflow: under
// fail_fast, in no loop, with no step that tolerates its failure.
func (r *runner) failFastFor(run *stepRun) bool {
	if r.w.FailurePolicy != FailFast || run.frame.loop != nil {
		return false
	}
	g := r.s.g
	for _, d := range g.dependents[run.step] {
		for k, dep := range g.deps[d] {
			if dep == run.step && g.tolerated[d][k] {
				return false
			}
		}
	}
	return true
}

// failFastLoop stops the workflow under fail_fast when a loop ended
// unresolved and holds its dependents.
func (r *runner) failFastLoop() {
	if r.w.FailurePolicy == FailFast {
		r.stop(StoppedFailFast)
	}
}

// heldOutcome is the outcome of a step that never started.
func heldOutcome(st *Step, reason string, blockedBy []string) StepOutcome {
	summary := "not started: the workflow stopped (" + reason + ")"
	if reason == HeldDependency {
		summary = fmt.Sprintf("not started: its dependencies %v did not become checkpoint_ready", blockedBy)
	}
	return StepOutcome{
		StepID: st.ID, Agent: agentOrDefault(st.Agent), Posture: st.PermissionMode, WorkspaceMode: st.WorkspaceMode,
		DependsOn: nonNil(st.DependsOn), SubagentStatus: tools.SubagentNotStarted, CheckpointStatus: CheckpointHeld,
		Summary: summary, HeldReason: reason, BlockedBy: blockedBy,
	}
}

// skippedOutcome is the outcome of a run not taken.
func skippedOutcome(st *Step, reason string, seen []ConditionSeen) StepOutcome {
	return StepOutcome{
		StepID: st.ID, Agent: agentOrDefault(st.Agent), Posture: st.PermissionMode, WorkspaceMode: st.WorkspaceMode,
		DependsOn: nonNil(st.DependsOn), SubagentStatus: tools.SubagentNotStarted, CheckpointStatus: CheckpointSkipped,
		Summary: reason, SkipReason: reason, Conditions: seen,
	}
}

// halt starts nothing more and holds what has not started, but lets the
// running children end by themselves: a spent budget refuses their next
// model call, so they end soon, with what they did recorded, instead of
// being cancelled in the middle of a tool call.
func (r *runner) halt(reason string) {
	s := &r.s
	if s.stopped != "" {
		return
	}
	s.stopped = reason
	for _, run := range r.waitingRuns() {
		r.holdRun(run, reason)
	}
	r.drain()
}

// stop starts nothing more, holds what has not started and stops the
// running children, all at once, returning when they have ended. Their
// end events are buffered, and decided by the loop like any other.
func (r *runner) stop(reason string) {
	r.halt(reason)
	r.stopChildren(reason)
}

// stopChildren stops the running children, returning when they have
// ended; each run's reason is reason unless it has one.
func (r *runner) stopChildren(reason string) {
	var wg sync.WaitGroup
	for _, run := range r.s.running {
		if run.childEnded {
			continue // ended: it waits to be decided
		}
		if run.reason == "" {
			run.reason = reason
		}
		wg.Go(func() { r.children.Stop(run.agentID) })
	}
	wg.Wait()
}

// stopRunning stops every child still running and returns once their
// ends are sent, deciding nothing: what a runner that cannot go on does.
func (r *runner) stopRunning() {
	var wg sync.WaitGroup
	for _, run := range r.s.running {
		if run.childEnded {
			continue
		}
		wg.Go(func() { r.children.Stop(run.agentID) })
	}
	wg.Wait()
}

// notReadyInputs names a run's inputs that are not checkpoint_ready.
func (r *runner) notReadyInputs(run *stepRun) []string {
	var out []string
	for _, in := range run.inputs {
		if in.state != runReady {
			out = append(out, in.label)
		}
	}
	return out
}

// finish records the end of the run and assembles its Outcome.
func (r *runner) finish() Outcome {
	steps := make([]StepOutcome, len(r.s.runs))
	for i, run := range r.s.runs {
		steps[i] = *run.outcome
	}
	var loops []LoopOutcome
	for _, lr := range r.s.loops {
		if lr.outcome != nil {
			loops = append(loops, *lr.outcome)
		}
	}
	elapsed := r.opt.Now().Sub(r.started).Milliseconds()
	out := assemble(r.w, r.opt.WorkflowID, steps, loops, r.s.stopped, elapsed)
	out.Commit, out.Commits = r.commitWork(&out), r.commitParts(&out)
	if out.Commit != nil || out.Commits != nil {
		settleCommits(&out)
		out.Output = Render(&out)
	}
	r.record(WorkflowEvent{Kind: EventWorkflowFinished, Status: out.Status, StoppedBy: out.StoppedBy, ElapsedMS: elapsed})
	if r.recordErr != nil {
		out.SafeNextActions = append(out.SafeNextActions, NextAction{Action: "ask_user",
			Reason: "the workflow's evidence could not all be written to the session Log (" + r.recordErr.Error() + "); check the disk before relying on the Log"})
	}
	return out
}

// record writes a workflow_event, keeping the first failure.
func (r *runner) record(ev WorkflowEvent) {
	r.noteLanded(ev)
	r.recorded(r.evidence.Record(r.stamped(ev)))
}

// stamped is ev as this run records it: with its workflow and call.
func (r *runner) stamped(ev WorkflowEvent) WorkflowEvent {
	ev.WorkflowID, ev.ToolCallID = r.opt.WorkflowID, r.opt.ToolCallID
	return ev
}

// recorded keeps the first failure to write the run's evidence.
func (r *runner) recorded(err error) {
	if err != nil && r.recordErr == nil {
		r.recordErr = err
	}
}

// showPlan shows the runs as the user's plan, kept current: each step's
// runs (a step not yet run as itself, pending), each loop's state before
// its first step; a plan the user already sees is not sent again. A plan
// of more than maxPlanEntries entries shows that many (planPick) and one
// entry that counts the rest: ACP sends the whole plan each time.
func (r *runner) showPlan() {
	r.planShown = r.opt.Now()
	if r.opt.NoPlan {
		return
	}
	runs := make([]planItem, len(r.s.runs))
	for k, run := range r.s.runs {
		runs[k] = planItem{at: run.step, label: run.label, task: run.spec.Task, running: run.state == runRunning, out: run.outcome, class: planClass(run),
			ready: run.outcome != nil && run.outcome.CheckpointStatus == CheckpointReady}
	}
	var loops []planItem
	if len(r.s.loops) > 0 {
		loops = make([]planItem, len(r.s.loops))
		for k, lr := range r.s.loops {
			loops[k] = planItem{at: lr.loop, loop: r.loopNow(lr), class: planRunning}
		}
	}
	entries := buildPlan(r.w, r.s.g, runs, loops)
	if slices.Equal(entries, r.lastPlan) {
		return
	}
	r.lastPlan = entries
	r.evidence.ShowPlan(entries)
}

// buildPlan is the one builder of a run's plan: the live one (showPlan)
// and the one its Log tells (PlanOf), which a client that reopens the
// session gets, cannot differ. runs are the items of the step runs in the
// order the runs were made, each at its step's index; loops the items of
// the loop runs, each at its loop's index. The plan is in the steps'
// order: each loop's entry before the first step of the loop (a loop no
// step is in is not shown), then each step's runs in the order they were
// made, or the step itself, to do, when it has none; planPick keeps what
// a plan shows.
func buildPlan(w *Workflow, g *graph, runs, loops []planItem) []tools.PlanEntry {
	n := len(w.Steps)
	// The runs by step, in the order they were made: a counting sort,
	// end[s] the end of step s's runs in order.
	end := make([]int32, n)
	for k := range runs {
		end[runs[k].at]++
	}
	var sum int32
	for s := range end {
		sum += end[s]
		end[s] = sum - end[s] // the start, until the runs are placed
	}
	order := make([]int32, len(runs))
	for k := range runs {
		order[end[runs[k].at]] = int32(k)
		end[runs[k].at]++
	}
	// The loops by their first step, in the order they came.
	var loopAt []int
	if len(loops) > 0 {
		first := make([]int, len(w.Loops))
		for l := range first {
			first[l] = -1
		}
		for s := range w.Steps {
			for _, l := range g.loopChain(s) {
				if first[l] < 0 {
					first[l] = s
				}
			}
		}
		loopAt = make([]int, len(loops))
		for k := range loops {
			loopAt[k] = first[loops[k].at]
		}
	}
	all := make([]planItem, 0, len(runs)+len(loops))
	var begin int32
	for s := range w.Steps {
		for k := range loops {
			if loopAt[k] == s {
				all = append(all, loops[k])
			}
		}
		if begin == end[s] {
			st := &w.Steps[s]
			all = append(all, planItem{label: st.ID, task: st.Task, class: planToDo})
			continue
		}
		for _, k := range order[begin:end[s]] {
			all = append(all, runs[k])
		}
		begin = end[s]
	}
	return planPick(all)
}

// planItem is a plan entry, made only when it is shown (a plan of
// 10,000 runs shows 100 of them, up to ten times a second), and how much
// it needs to be seen.
type planItem struct {
	// at is the index of the item's step (of its loop, for a loop's).
	at          int
	label, task string
	running     bool
	out         *StepOutcome
	loop        *LoopOutcome // a loop's entry, when set
	class       int
	ready       bool
}

func (it *planItem) entry() tools.PlanEntry {
	if it.loop != nil {
		return loopEntry(it.loop)
	}
	return planEntry(it.label, it.task, it.running, it.out)
}

// Plan classes, first shown first.
const (
	planRunning   = iota // running runs and loops
	planAttention        // decided, not ready (nor skipped, nor an earlier iteration)
	planToDo             // waiting, or not made yet
	planSettled          // ready, skipped, earlier iterations
)

func planClass(run *stepRun) int {
	switch o := run.outcome; {
	case o == nil && run.state == runRunning:
		return planRunning
	case o == nil:
		return planToDo
	case o.CheckpointStatus == CheckpointReady || o.CheckpointStatus == CheckpointSkipped || o.Superseded:
		return planSettled
	}
	return planAttention
}

// planPick keeps every entry when they fit; otherwise the running ones,
// then those that need attention, then those to do, then the settled
// ones, up to maxPlanEntries-1, in plan order, and one entry counting the
// rest.
func planPick(all []planItem) []tools.PlanEntry {
	entries := make([]tools.PlanEntry, 0, min(len(all), maxPlanEntries))
	if len(all) <= maxPlanEntries {
		for i := range all {
			entries = append(entries, all[i].entry())
		}
		return entries
	}
	var counts [4]int
	for _, it := range all {
		counts[it.class]++
	}
	// Take whole classes while they fit, then part of the next.
	room, take := maxPlanEntries-1, [4]int{}
	for c := range counts {
		take[c] = min(counts[c], room)
		room -= take[c]
	}
	var rest planRest
	for i := range all {
		it := &all[i]
		if take[it.class] > 0 {
			take[it.class]--
			entries = append(entries, it.entry())
			continue
		}
		rest.steps++
		if it.class == planAttention || it.class == planSettled {
			rest.done++
			if it.ready {
				rest.ready++
			}
		}
	}
	return append(entries, rest.entry())
}

// planRest counts the entries a plan leaves out.
type planRest struct{ steps, done, ready int }

func (p planRest) entry() tools.PlanEntry {
	e := tools.PlanEntry{Priority: tools.PlanPriorityMedium, Status: tools.PlanInProgress,
		Content: fmt.Sprintf("… and %s: %d done (%d checkpoint_ready), %d to do", plural.Of(p.steps, "more step", "more steps"), p.done, p.ready, p.steps-p.done)}
	if p.done == p.steps {
		e.Status = tools.PlanCompleted
	}
	return e
}

// loopNow is a loop run's outcome so far.
func (r *runner) loopNow(lr *loopRun) *LoopOutcome {
	if lr.outcome != nil {
		return lr.outcome
	}
	def := lr.def(r.w)
	return &LoopOutcome{Loop: def.ID, Run: lr.label, Iterations: len(lr.frames), MaxIterations: def.MaxIterations, State: LoopRunning, OnExhausted: def.OnExhausted}
}

func agentOrDefault(a string) string {
	if a == "" {
		return "default"
	}
	return a
}
