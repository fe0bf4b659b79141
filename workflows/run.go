package workflows

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pixir-go/pixir/budget"
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

	// waiting, in tests, is called each time Run is about to wait for an
	// event: a simulated clock delivers its next child ends then.
	waiting func()
}

// planEvery bounds how often the plan is shown: ACP sends the whole plan
// each time, so a large workflow would otherwise cost O(steps) per event.
// The last state is always shown.
const planEvery = 100 * time.Millisecond

// runner is one run of a workflow: the scheduler, driven by the
// children's ends, which arrive on its own channel.
type runner struct {
	ctx      context.Context
	children Children
	evidence Evidence
	merger   Merger
	w        *Workflow
	opt      RunOptions
	prior    *Reuse // the checkpoints reused from an earlier run
	sched    *scheduler
	slots    []*reportSlot

	outcomes     []*StepOutcome      // nil until decided or held
	decidedSteps []int               // steps in the order they were decided
	agentIDs     []string            // each started step's child
	stepOf       map[string]int      // a started child's step
	waves        []int               // each started step's dispatch round
	reasons      []string            // why the workflow closed a step early
	mergedBy     map[string][]string // a merged path: the steps that merged it, in order
	round        int
	started      time.Time
	planShown    time.Time
	lastPlan     []tools.PlanEntry

	// ends receives every started child's final view. At most
	// MaxConcurrency children are started and not yet decided, so it never
	// holds more ends than that: a send from the Manager never waits.
	ends chan tools.SubagentView
	// recordErr is the first failure to write the Log: the run goes on (the
	// children are real), but the result says the evidence is incomplete.
	recordErr error
	// account is the run's budget, which its children's calls are charged
	// to: once it is spent, no step starts.
	account *budget.Account
}

// run is Prepared.Run.
func run(ctx context.Context, p *Prepared, opt RunOptions) Outcome {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	w := p.w
	n := len(w.Steps)
	r := &runner{
		ctx: ctx, children: p.ports.Children, evidence: p.ports.Evidence, merger: p.ports.Merger, mergedBy: map[string][]string{}, w: w, opt: opt, prior: p.reuse, sched: newScheduler(w, newOverlapCache()),
		slots: make([]*reportSlot, n), outcomes: make([]*StepOutcome, n),
		agentIDs: make([]string, n), stepOf: make(map[string]int, n), waves: make([]int, n), reasons: make([]string, n),
		ends: make(chan tools.SubagentView, min(n, w.MaxConcurrency)), started: opt.Now(),
		account: p.runAccount(opt.WorkflowID),
	}
	for i := range w.Steps {
		st := &w.Steps[i]
		r.slots[i] = &reportSlot{stepID: st.ID}
		if len(st.OutputSchema) > 0 {
			// Validate compiled it already; it cannot fail here.
			r.slots[i].schema, _ = tools.CompileSchema("output_schema", st.OutputSchema)
		}
	}
	r.record(WorkflowEvent{Kind: EventWorkflowStarted, Workflow: w})
	r.reuse()
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
	for !r.sched.idle() {
		if r.opt.waiting != nil && acted {
			r.opt.waiting()
		}
		acted = true
		select {
		case v := <-r.ends:
			r.ended(v)
			// Decide every end already delivered before starting anything,
			// so steps unlocked at the same moment start in priority order,
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
	return out
}

// reuse decides, before anything starts, the steps an earlier run made
// checkpoint_ready (resume_from).
func (r *runner) reuse() {
	if r.prior == nil {
		return
	}
	for i := range r.w.Steps {
		prior, ok := r.prior.Steps[r.w.Steps[i].ID]
		if !ok {
			continue
		}
		out := reusedOutcome(prior, r.prior.From)
		r.outcomes[i] = &out
		r.decidedSteps = append(r.decidedSteps, i)
		r.record(WorkflowEvent{Kind: EventCheckpointDecided, StepID: out.StepID, Outcome: &out})
		r.sched.reuse(i)
	}
}

// NewWorkflowID makes a workflow id.
func NewWorkflowID() string { return "wf-" + randomHex(6) }

// dispatch starts every step the scheduler lets start now.
func (r *runner) dispatch(ctx context.Context) {
	if ctx.Err() != nil {
		// Cancelled before this dispatch: nothing more starts, and what
		// would have is held, not failed.
		r.stop(StoppedCancelled)
		return
	}
	for {
		start := r.sched.next()
		if len(start) == 0 {
			return
		}
		r.round++
		failedToStart := false
		for _, i := range start {
			if !r.startStep(ctx, i) {
				failedToStart = true
			}
		}
		if !failedToStart {
			return
		}
		// A step that could not start was decided at once; that may have
		// freed a slot or held dependents, so look again.
	}
}

// startStep asks the Manager for step i's child; a refusal decides the
// step failed on the spot, except a spent budget, which stops the run:
// the step is held with every other that has not started.
func (r *runner) startStep(ctx context.Context, i int) bool {
	st := &r.w.Steps[i]
	if r.sched.stopped != "" {
		// Stopped by a step of the same round: this one never starts.
		r.holdUnstarted(i, r.sched.stopped)
		return false
	}
	if err := r.account.Exhausted(); err != nil {
		r.holdUnstarted(i, StoppedBudget)
		return false
	}
	var deps []*StepOutcome
	for _, j := range r.sched.deps[i] {
		deps = append(deps, r.outcomes[j])
	}
	mode, inherit := st.WorkspaceMode, r.inheritance(i)
	if len(inherit) > 0 && mode == Shared && st.PermissionMode == ReadOnly {
		// The shared workspace lacks what its isolated ancestors wrote; a
		// snapshot holding it is what the step must read.
		mode = Isolated
	}
	if mode == Shared {
		inherit = nil
	}
	req := StepRequest{
		Agent: st.Agent, Task: childPrompt(r.w, st, deps, inherit), Name: st.ID,
		WorkspaceMode: string(mode), ReadOnly: st.PermissionMode == ReadOnly,
		Timeout:    time.Duration(st.TimeoutMS) * time.Millisecond,
		Tools:      []tools.Tool{reportCheckpoint(r.slots[i])},
		Inherit:    inherit,
		Ended:      r.ends,
		MCPServers: st.MCPServers,
		Account:    r.account,
	}
	if st.PermissionMode == Writer {
		req.WriteSet, req.MayWrite = st.WriteSet, writeSetMatcher(st.WriteSet)
	}
	r.waves[i] = r.round
	view, err := r.children.Start(ctx, req)
	if err != nil {
		f := tools.AsFailure(err)
		if f.Kind == tools.ErrBudgetExhausted {
			r.holdUnstarted(i, StoppedBudget)
			return false
		}
		out := StepOutcome{
			StepID: st.ID, Agent: agentOrDefault(st.Agent), Wave: r.round, Posture: st.PermissionMode,
			WorkspaceMode: st.WorkspaceMode, DependsOn: nonNil(st.DependsOn),
			SubagentStatus: tools.SubagentNotStarted, CheckpointStatus: CheckpointFailed,
			Summary: "the step's child could not be started: " + f.Message, Error: f,
		}
		r.decided(i, out)
		return false
	}
	r.agentIDs[i], r.stepOf[view.ID] = view.ID, i
	r.record(WorkflowEvent{Kind: EventStepScheduled, StepID: st.ID, Wave: r.round, SubagentID: view.ID})
	return true
}

// inheritance is what step i's snapshot starts with: the changes its
// ancestors made in isolated snapshots and did not merge into the
// workspace, in the order they were decided
// (an ancestor's snapshot already holds its own ancestors' changes, but
// its change list names only its own work, so every ancestor counts).
func (r *runner) inheritance(i int) []Inherited {
	seen := map[int]bool{}
	var visit func(j int)
	visit = func(j int) {
		for _, d := range r.sched.deps[j] {
			if !seen[d] {
				seen[d] = true
				visit(d)
			}
		}
	}
	visit(i)
	var out []Inherited
	for _, j := range r.decidedSteps {
		o := r.outcomes[j]
		if !seen[j] || o.WorkspaceMode != Isolated || o.Changes == nil || o.Workspace == "" ||
			len(o.Changes.Added)+len(o.Changes.Changed)+len(o.Changes.Deleted) == 0 {
			continue
		}
		if o.Merge != nil && o.Merge.Status == tools.MergeMerged {
			continue // in the workspace, which the step's snapshot is taken from
		}
		out = append(out, Inherited{StepID: o.StepID, Workspace: o.Workspace, Changes: *o.Changes})
	}
	return out
}

// holdUnstarted takes back the start of step i, which the scheduler had
// let start, and stops the run for reason (a spent budget), holding i with
// every step that had not started.
func (r *runner) holdUnstarted(i int, reason string) {
	r.sched.unstart(i)
	if r.sched.stopped == "" {
		r.halt(reason)
		return
	}
	r.hold(r.sched.holdPending(i, r.sched.stopped))
}

// halt starts nothing more and holds what has not started, but lets the
// running children end by themselves: a spent budget refuses their next
// model call, so they end soon, with what they did recorded, instead of
// being cancelled in the middle of a tool call.
func (r *runner) halt(reason string) {
	r.hold(r.sched.stop(reason))
}

// ended decides the step whose child ended.
func (r *runner) ended(v tools.SubagentView) {
	i := r.stepOf[v.ID]
	out := decide(&r.w.Steps[i], v, r.slots[i])
	out.Wave = r.waves[i]
	out.Reason = r.reasons[i]
	if out.Reason == StoppedTimeout && v.Status == tools.SubagentCancelled {
		// The workflow's clock ran out, not the step's: say it as a timeout.
		out.Error = &tools.Failure{Kind: tools.ErrTimeout, Message: fmt.Sprintf(
			"the workflow's timeout_ms (%d) passed while this step ran; it was stopped, and its work so far is in its own log", r.w.TimeoutMS)}
	}
	r.decided(i, r.land(i, out))
	if r.sched.stopped == "" && r.account.Exhausted() != nil {
		// Running steps get no more model calls; none starts.
		r.halt(StoppedBudget)
	}
}

// decided records a step's outcome and lets the scheduler act on it:
// dependents unlock or are held, and fail_fast stops the rest.
func (r *runner) decided(i int, out StepOutcome) {
	r.outcomes[i] = &out
	r.decidedSteps = append(r.decidedSteps, i)
	r.record(WorkflowEvent{Kind: EventCheckpointDecided, StepID: out.StepID, Outcome: &out})
	ready := out.CheckpointStatus == CheckpointReady
	r.hold(r.sched.finish(i, ready))
	if !ready && r.w.FailurePolicy == FailFast {
		r.stop(StoppedFailFast)
	}
}

// hold records held steps.
func (r *runner) hold(held []heldStep) {
	for _, h := range held {
		out := heldOutcome(&r.w.Steps[h.index], h.reason, h.blockedBy)
		r.outcomes[h.index] = &out
		r.record(WorkflowEvent{Kind: EventStepHeld, StepID: out.StepID, HeldReason: h.reason, BlockedBy: h.blockedBy})
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

// stop starts nothing more, holds what has not started and stops the
// running children, all at once, returning when they have ended. Their
// end events are buffered, and decided by the loop like any other.
func (r *runner) stop(reason string) {
	r.hold(r.sched.stop(reason))
	var wg sync.WaitGroup
	for _, i := range r.sched.running {
		if r.reasons[i] == "" {
			r.reasons[i] = reason
		}
		wg.Go(func() { r.children.Stop(r.agentIDs[i]) })
	}
	wg.Wait()
}

// finish records the end of the run and assembles its Outcome.
func (r *runner) finish() Outcome {
	steps := make([]StepOutcome, len(r.outcomes))
	for i, o := range r.outcomes {
		steps[i] = *o
	}
	elapsed := r.opt.Now().Sub(r.started).Milliseconds()
	out := assemble(r.w, r.opt.WorkflowID, steps, r.sched.stopped, elapsed)
	r.record(WorkflowEvent{Kind: EventWorkflowFinished, Status: out.Status, StoppedBy: out.StoppedBy, ElapsedMS: elapsed})
	if r.recordErr != nil {
		out.SafeNextActions = append(out.SafeNextActions, NextAction{Action: "ask_user",
			Reason: "the workflow's evidence could not all be written to the session Log (" + r.recordErr.Error() + "); check the disk before relying on the Log"})
	}
	return out
}

// record writes a workflow_event, keeping the first failure.
func (r *runner) record(ev WorkflowEvent) {
	ev.WorkflowID, ev.ToolCallID = r.opt.WorkflowID, r.opt.ToolCallID
	if err := r.evidence.Record(ev); err != nil && r.recordErr == nil {
		r.recordErr = err
	}
}

// showPlan shows the steps as the user's plan, kept current; a plan the
// user already sees is not sent again. A workflow of more than
// maxPlanEntries steps shows that many (planSteps) and one entry that
// counts the rest: ACP sends the whole plan each time.
func (r *runner) showPlan() {
	r.planShown = r.opt.Now()
	shown, rest := r.planSteps()
	entries := make([]tools.PlanEntry, 0, len(shown)+1)
	for _, i := range shown {
		entries = append(entries, planEntry(&r.w.Steps[i], r.sched.state[i], r.outcomes[i]))
	}
	if rest.steps > 0 {
		entries = append(entries, rest.entry())
	}
	if slices.Equal(entries, r.lastPlan) {
		return
	}
	r.lastPlan = entries
	r.evidence.ShowPlan(entries)
}

// planRest counts the steps a plan leaves out.
type planRest struct{ steps, done, ready int }

func (p planRest) entry() tools.PlanEntry {
	e := tools.PlanEntry{Priority: tools.PlanPriorityMedium, Status: tools.PlanInProgress,
		Content: fmt.Sprintf("… and %d more steps: %d done (%d checkpoint_ready), %d to do", p.steps, p.done, p.ready, p.steps-p.done)}
	if p.done == p.steps {
		e.Status = tools.PlanCompleted
	}
	return e
}

// planSteps picks the steps the plan shows, in declaration order: all of
// them when they fit; otherwise the running ones, then those decided but
// not checkpoint_ready (they need attention), then those still to run,
// then the ready ones, up to maxPlanEntries-1, and counts the rest.
func (r *runner) planSteps() ([]int, planRest) {
	n := len(r.w.Steps)
	if n <= maxPlanEntries {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all, planRest{}
	}
	class := func(i int) int {
		switch o := r.outcomes[i]; {
		case o == nil && r.sched.state[i] == stateRunning:
			return 0
		case o != nil && o.CheckpointStatus != CheckpointReady:
			return 1
		case o == nil:
			return 2
		}
		return 3
	}
	var counts [4]int
	for i := range n {
		counts[class(i)]++
	}
	// Take whole classes while they fit, then part of the next.
	room, take := maxPlanEntries-1, [4]int{}
	for c := range counts {
		take[c] = min(counts[c], room)
		room -= take[c]
	}
	var shown []int
	var rest planRest
	for i := range n {
		c := class(i)
		if take[c] > 0 {
			take[c]--
			shown = append(shown, i)
			continue
		}
		rest.steps++
		if o := r.outcomes[i]; o != nil {
			rest.done++
			if o.CheckpointStatus == CheckpointReady {
				rest.ready++
			}
		}
	}
	return shown, rest
}

func agentOrDefault(a string) string {
	if a == "" {
		return "default"
	}
	return a
}
