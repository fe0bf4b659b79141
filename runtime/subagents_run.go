// One run of a child: the FIFO queue under max_threads, the child's
// session and snapshot made on its first run, its turn, and its end.

package runtime

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// enqueue records that sa is queued, and only then lets the scheduler see
// it, so its "queued" event always comes before its "started". A workflow
// step's step_scheduled event, when given, is written with it in one
// append: both or neither, and before the child's start.
func (m *Manager) enqueue(sa *subagent, input string, scheduled *workflows.Scheduled) {
	if scheduled == nil {
		m.record(sa, tools.SubagentEventQueued, input)
	} else {
		m.mu.Lock()
		d := m.eventLocked(sa, tools.SubagentEventQueued, input, sa.status)
		m.mu.Unlock()
		scheduled.Event.SubagentID = sa.id
		scheduled.Err = sa.parent.emitBackgroundGroup([]eventOf{{EventSubagent, d}, {EventWorkflow, scheduled.Event}})
		if scheduled.Err != nil {
			m.rt.log.Error("recording a subagent event", "subagent", sa.id, "err", scheduled.Err)
		}
	}
	m.mu.Lock()
	if sa.status == tools.SubagentQueued && !sa.stopping { // not cancelled meanwhile
		m.queue = append(m.queue, sa)
	}
	m.mu.Unlock()
	m.schedule()
}

// schedule starts queued children, in order, while their user session
// has capacity (max_threads is each session's: its children, its
// children's children and its workflows' steps).
func (m *Manager) schedule() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	waiting := m.queue[:0]
	for _, sa := range m.queue {
		root := sa.parent.root().ID()
		if m.running[root] >= m.cfg.MaxThreads {
			waiting = append(waiting, sa)
			continue
		}
		if m.running == nil {
			m.running = map[string]int{}
		}
		m.running[root]++
		// Its deadline is counted from the start its elapsed time is: a
		// run that timed out has run its whole timeout. Two readings of
		// the clock (context.WithTimeout's, then started) differed by as
		// much as 63 ms under load, and a step stopped at its timeout_ms
		// of 300 said it had run 237 ms.
		sa.started = time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), sa.started.Add(sa.timeout))
		sa.cancel = cancel
		sa.status = tools.SubagentRunning
		sa.runs++
		input := sa.input
		event := tools.SubagentEventStarted
		if sa.runs > 1 {
			event = tools.SubagentEventInput
		}
		m.wg.Add(1)
		go m.run(ctx, sa, event, input)
	}
	clear(m.queue[len(waiting):])
	m.queue = waiting
}

// run is one turn of a child, from its start to its end; it always ends
// the run (status, event, capacity) whatever happens inside, panics
// included.
func (m *Manager) run(ctx context.Context, sa *subagent, event tools.SubagentEvent, input string) {
	growStack() // see growStack
	defer m.wg.Done()
	status, summary, fail := tools.SubagentFailed, "", (*tools.Failure)(nil)
	var changes *tools.FileChanges
	var violation *tools.WriteSetViolation
	defer func() {
		if p := recover(); p != nil {
			m.rt.log.Error("subagent panicked", "subagent", sa.id, "panic", p, "stack", string(debug.Stack()))
			status, fail = tools.SubagentFailed, &tools.Failure{Kind: tools.ErrInternal, Message: fmt.Sprintf("the subagent crashed: %v", p)}
		}
		m.finish(sa, status, summary, fail, changes, violation)
	}()

	child, err := m.prepare(ctx, sa)
	if err != nil {
		status, fail = m.outcome(ctx, sa, tools.AsFailure(err))
		return
	}
	recorded := input
	if event == tools.SubagentEventStarted && input == sa.task {
		// The task, on the queued event of the spawn: not written again.
		// A child cancelled while queued and then sent input starts with
		// that input instead, which its started event says.
		recorded = ""
	}
	m.record(sa, event, recorded)

	tracker := newChildTracker(m, sa)
	var ask Asker
	if sa.ask != nil {
		ask = childAsker{sa: sa}
	}
	// A client that shows children as sessions of their own sees the
	// child's events as they happen, under the child's session id.
	opts := TurnOptions{Observe: func(ev Event) {
		tracker.observe(ev)
		if show := child.descendantObserver(); show != nil {
			show(ev)
		}
	}, Ask: ask}
	if sa.limit.limits() {
		opts.Files = writeSetFiles{Files: child.workspace.Files(), root: child.workspace.Root(), limit: sa.limit}
	}
	// A shared child's changes are found by stamping what it can reach
	// before and after its run; an isolated child's snapshot lists them.
	var before tree
	var scan []string
	// unknown is why the child's changes could not be found: a writer
	// with a write set is then not reported completed (unchecked).
	var unknown error
	snap, err := m.useSnapshot(sa, false)
	switch {
	case err != nil:
		unknown = fmt.Errorf("its snapshot cannot be read: %w", err)
		m.rt.log.Warn("subagent changes will be unknown: its snapshot cannot be read", "subagent", sa.id, "err", err)
	case snap != nil:
		defer m.doneSnapshot(sa)
	default:
		scan = child.sharedScan(sa.limit)
	}
	if scan != nil {
		if before, err = scanTree(ctx, child.workspace.Root(), scan); err != nil {
			unknown = err
			m.rt.log.Warn("subagent changes will be unknown", "subagent", sa.id, "err", err)
			before = nil
		}
	}
	// A writer's new git repositories (src/.git) are looked for in every
	// workspace, whatever its write set: a write set that allows src/**
	// allows src/.git/hooks too, and without one nothing is scanned.
	var reposBefore []string
	watchRepos := child.Mode() != ModeReadOnly
	if watchRepos {
		if reposBefore, err = nestedRepos(ctx, child.workspace.Root()); err != nil {
			m.rt.log.Warn("a git repository the subagent makes will not be seen", "subagent", sa.id, "err", err)
			watchRepos = false
		}
	}
	runStart := time.Now()
	stop, err := child.Prompt(ctx, Prompt{Text: input}, opts)
	tracker.progress.stop()
	summary = tracker.summary()
	if n := tracker.deniedByUser(); n > 0 {
		m.mu.Lock()
		sa.denied += n
		m.mu.Unlock()
	}
	switch {
	case snap != nil:
		if ch, err := snap.Changes(context.WithoutCancel(ctx), child.workspace.Root()); err == nil {
			changes = &ch
		} else {
			unknown = err
			m.rt.log.Warn("subagent changes unknown", "subagent", sa.id, "err", err)
		}
	case before != nil:
		if after, err := scanTree(context.WithoutCancel(ctx), child.workspace.Root(), scan); err == nil {
			ch := changesSince(before, after)
			changes = &ch
		} else {
			unknown = err
			m.rt.log.Warn("subagent changes unknown", "subagent", sa.id, "err", err)
		}
	}
	violation = m.checkWrites(sa, changes, runStart)
	var madeRepo *tools.Failure
	if watchRepos {
		if after, rerr := nestedRepos(context.WithoutCancel(ctx), child.workspace.Root()); rerr != nil {
			m.rt.log.Warn("a git repository the subagent made may not be seen", "subagent", sa.id, "err", rerr)
		} else if made := madeRepos(reposBefore, after); len(made) > 0 {
			madeRepo = nestedRepoFailure(made, sa.mode)
		}
	}
	if !m.hasLiveChildren(child.ID()) {
		// Its grandchildren, if any, still report into its Log.
		child.release()
		m.retire(sa, child)
	}
	switch {
	case err != nil:
		status, fail = tools.SubagentFailed, tools.AsFailure(err)
	case stop == StopCancelled || ctx.Err() != nil:
		status, fail = m.outcome(ctx, sa, nil)
	case tracker.failed != nil:
		status, fail = tools.SubagentFailed, tracker.failed
	case stop == StopMaxTurnRequests:
		status, fail = tools.SubagentFailed, &tools.Failure{Kind: tools.ErrInternal, Message: "the subagent reached its limit of model calls in one turn"}
	case stop == StopMaxTokens:
		// Its last answer was cut off: the summary is what arrived, partial
		// work, never reported completed (a workflow step's child counts as
		// no checkpoint_ready for it).
		status, fail = tools.SubagentFailed, &tools.Failure{Kind: tools.ErrProviderError,
			Message: "the subagent's last answer was cut off at the model's token limit (max_tokens): its summary is what arrived before the cut, unfinished; raise max_tokens in config.toml, or give it a smaller task"}
	default:
		status = tools.SubagentCompleted
	}
	switch {
	case violation != nil && status == tools.SubagentCompleted:
		status, fail = tools.SubagentFailed, violationFailure(violation, sa.limit)
	case unknown != nil && changes == nil && sa.limit.limits() && status == tools.SubagentCompleted:
		// Fail closed: a writer whose check could not run is not
		// reported clean.
		status, fail = tools.SubagentFailed, uncheckedFailure(unknown, sa.limit)
	}
	switch {
	case madeRepo == nil:
	case status == tools.SubagentCompleted:
		status, fail = tools.SubagentFailed, madeRepo
	case fail != nil:
		fail = &tools.Failure{Kind: fail.Kind, Message: fail.Message + "; and " + madeRepo.Message, Details: fail.Details}
	}
}

// outcome names how a run that stopped early ended: timed out, cancelled,
// or failed with f.
func (m *Manager) outcome(ctx context.Context, sa *subagent, f *tools.Failure) (tools.SubagentStatus, *tools.Failure) {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return tools.SubagentTimedOut, &tools.Failure{Kind: tools.ErrTimeout, Message: fmt.Sprintf("the subagent did not finish within %s and was stopped; its work so far is in its own log", sa.timeout)}
	case ctx.Err() != nil:
		return tools.SubagentCancelled, &tools.Failure{Kind: tools.ErrCancelled, Message: "the subagent was cancelled"}
	case f != nil:
		return tools.SubagentFailed, f
	}
	return tools.SubagentFailed, &tools.Failure{Kind: tools.ErrInternal, Message: "the subagent stopped without an answer"}
}

// prepare makes the child's session on its first run: its workspace (a
// snapshot, or the parent's) and its Log.
func (m *Manager) prepare(ctx context.Context, sa *subagent) (*Session, error) {
	m.mu.Lock()
	child, was := sa.child, sa.dormant
	m.mu.Unlock()
	if child != nil {
		return child, child.reacquire()
	}
	if sa.mode == WorkspaceIsolated && was == nil {
		root := sa.parent.workspace.Root()
		var snap Snapshot
		// A wait for another process is shown on the workflow's call for
		// a step, on the child's own progress for a spawned child (its
		// spawn_agent call has ended).
		show := showOnCall(sa.parent, sa.parentToolCallID)
		if sa.name == "" {
			show = func(text string) {
				_ = sa.parent.emitBackground(EventStatus, SubagentProgressData{SubagentID: sa.id, Activity: text})
			}
		}
		err := m.inWorkspace(ctx, root, show, func() (err error) {
			snap, err = m.cfg.Snapshot(ctx, root, sa.workspace)
			return err
		})
		if err != nil {
			m.removeSnapshot(sa) // a partial copy is no use to anyone
			return nil, fmt.Errorf("taking the workspace snapshot: %w", err)
		}
		for _, in := range sa.inherit {
			if err := snap.Overlay(ctx, in.Workspace, in.Changes); err != nil {
				m.removeSnapshot(sa)
				return nil, fmt.Errorf("bringing step %s's changes into the snapshot: %w", in.StepID, err)
			}
		}
		m.mu.Lock()
		sa.snap = snap
		m.mu.Unlock()
	}
	mode := sa.parent.heldMode()
	if sa.spec.ReadOnly || sa.readOnly {
		mode = ModeReadOnly
	}
	// The spawn was refused unless the agent's model is configured.
	model := sa.parent.Model()
	if sa.spec.Model != "" {
		model = sa.spec.Model
	}
	agent := sa.spec
	if agent.ReasoningEffort == "" {
		agent.ReasoningEffort = sa.parent.reasoningEffort()
	}
	accounts := budget.Accounts{sa.account}
	if sa.run != nil {
		accounts = append(accounts, sa.run)
	}
	accounts = append(accounts, sa.parent.accounts...)
	var err error
	if was != nil {
		// It ran before: as it was then, whatever its parent is now.
		mode = was.meta.Mode
		child, err = m.rt.wakeChildSession(was, sa.workspace, sa.childLog, sa.parent, agent, accounts)
	} else {
		child, err = m.rt.newChildSession(sa.childSession, sa.workspace, m.home(sa), sa.parent, sa.depth, mode, model, agent, accounts)
	}
	if err != nil {
		return nil, err
	}
	child.commands = newChildCommands(sa.workspace, sa.parent.workspace.Root(), sa.limit, sa.spec).within(sa.parent.commands)
	offered := m.offered(sa, mode)
	if parent := sa.parent.keep; parent != nil {
		own := offered // a child is offered nothing its parent was not
		offered = func(t tools.Tool) bool { return own(t) && parent(t) }
	}
	if sa.forkHistory != nil {
		if err := child.startFrom(sa.forkHistory); err != nil {
			child.release()
			return nil, err
		}
	}
	child.keep, child.writes = offered, sa.limit
	child.offerTools(offered, sa.extra)
	child.inheritMCP(sa.parent, sa.mcpServers, offered)
	m.mu.Lock()
	sa.child, sa.childLog, sa.dormant = child, child.log.Path(), nil
	m.mu.Unlock()
	return child, nil
}

// retire lets a finished child's session go: a workflow of thousands of
// steps kept every one (its History, tools, commands, contexts: a few KiB
// each, which every collection marked again), though a step's child runs
// again only if it is sent input. What a next run needs beside the Log is
// kept (dormantSession), and prepare makes the session again from it. A
// child with children of its own keeps its session (they hold it as their
// parent), as does one started from a fork of its parent's History (which
// its Log does not hold) or one whose last answer has calls without
// results.
func (m *Manager) retire(sa *subagent, child *Session) {
	was, ok := child.dormant()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !ok || sa.forkHistory != nil || len(m.children[child.ID()]) > 0 {
		return
	}
	sa.child, sa.dormant = nil, was
}

// agentTools are the tools that spawn and steer Subagents: of no use to a
// child that may spawn none (at the maximum depth, or read_only: spawning
// is a mutation).
var agentTools = []string{"spawn_agent", "wait_agent", "send_input", "close_agent", "list_agents", "merge_agent", workflows.RunWorkflowName}

// offered says which of the runtime's tools a child is offered: those its
// agent's profile allows, less what its posture would refuse anyway. A
// read_only child gets no tool that changes files, and bash only where the
// kernel can hold its commands to read-only; a child that cannot spawn
// (read_only, or at the maximum depth) gets no agent tools; a child whose commands must be confined (a
// read-only shell, a list of programs) gets bash only where Landlock can
// confine them. What is refused is not offered, so the model never plans
// with a tool it cannot use.
func (m *Manager) offered(sa *subagent, mode Mode) func(tools.Tool) bool {
	cannotSpawn := sa.depth >= m.cfg.MaxDepth || mode == ModeReadOnly
	landlock := m.rt.sandboxSupport().Landlock
	p := sa.spec.Profile
	return func(t tools.Tool) bool {
		name := t.Name()
		switch {
		case !p.allowsTool(name):
			return false
		case cannotSpawn && slices.Contains(agentTools, name):
			return false
		}
		if _, commands := t.(tools.Sandboxed); commands {
			confined := mode == ModeReadOnly || p.Shell == ShellReadOnly || p.Commands != nil
			return landlock || !confined
		}
		return mode != ModeReadOnly || t.Posture() != tools.PostureMutation
	}
}

// finish ends a run: it records the outcome, frees the slot and starts
// the next queued child.
func (m *Manager) finish(sa *subagent, status tools.SubagentStatus, summary string, fail *tools.Failure, changes *tools.FileChanges, violation *tools.WriteSetViolation) {
	m.mu.Lock()
	sa.cancel()
	if sa.closing {
		status = tools.SubagentCancelled
		fail = &tools.Failure{Kind: tools.ErrCancelled, Message: "the subagent was closed while it ran"}
	}
	sa.summary, sa.failure, sa.ended = summary, fail, time.Now()
	if changes != nil {
		sa.changes, sa.violation = changes, laterViolation(sa.violation, violation)
	}
	m.mu.Unlock()
	event := map[tools.SubagentStatus]tools.SubagentEvent{
		tools.SubagentCompleted: tools.SubagentEventFinished, tools.SubagentTimedOut: tools.SubagentEventTimedOut, tools.SubagentCancelled: tools.SubagentEventCancelled,
	}[status]
	if event == "" {
		event = tools.SubagentEventFailed
	}
	m.end(sa, event, status, true)
	m.schedule()
}

// end makes a run's outcome visible: the event is recorded first, then
// waiters see the status, so no one learns of an end before the Log does.
// A step's end is sent before done closes, so stepChildren.Stop returns
// only once the workflow has the end.
func (m *Manager) end(sa *subagent, event tools.SubagentEvent, status tools.SubagentStatus, freeSlot bool) {
	m.mu.Lock()
	d := m.eventLocked(sa, event, "", status)
	m.mu.Unlock()
	m.emit(sa, d)
	m.mu.Lock()
	sa.status = status
	if freeSlot {
		root := sa.parent.root().ID()
		if m.running[root]--; m.running[root] <= 0 {
			delete(m.running, root)
		}
		sa.cancel = nil // its run's context (cancelled by finish) goes with the run
	}
	done := sa.done
	stepEnd := sa.stepEnd
	sa.stepEnd = nil // once: later runs (send_input) are not the step's
	var view tools.SubagentView
	if stepEnd != nil {
		view = m.viewLocked(sa)
	}
	m.notifyEndedLocked()
	m.mu.Unlock()
	if stepEnd != nil {
		stepEnd <- view // the workflow keeps room for it (workflows.Children)
	}
	close(done)
}

// childAsker asks the client that drives the parent on a child's behalf:
// the client knows the parent's session and the child's tool call there,
// not the child's own session.
type childAsker struct{ sa *subagent }

func (c childAsker) AskPermission(ctx context.Context, req PermissionRequest) (PermissionOutcome, error) {
	if req.SubagentID == "" {
		req.ChildSessionID = req.SessionID
		req.SessionID, req.SubagentID = c.sa.parent.ID(), c.sa.id
		who := c.sa.agent
		if c.sa.name != "" { // a workflow step: the user knows it by its id
			who = c.sa.name + " (" + c.sa.agent + ")"
		}
		req.Title = who + ": " + req.Title
	}
	return c.sa.ask.AskPermission(ctx, req)
}

// childStack is about the stack a child's run reaches (its turn, the
// events' encoding: encoding/json is recursive).
const childStack = 12 << 10

// growStack takes a child's stack at once, at the start of its goroutine.
// A goroutine starts with 2 KiB and doubles its stack when a call needs
// more, copying every frame on it (each frame's pointers adjusted through
// the function tables): a child's run did that two or three times, the
// last deep inside its turn, about 7 % of a workflow run's CPU
// (BenchmarkRunWorkflowVsLogs). One frame of childStack bytes makes the
// runtime grow it to the size needed in one copy, while it holds one
// frame.
//
//go:noinline
func growStack() {
	var frame [childStack]byte
	touchStack(frame[:])
}

// touchStack uses the frame, so the compiler keeps it.
//
//go:noinline
func touchStack(b []byte) { b[len(b)-1] = 1 }
