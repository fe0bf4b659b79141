package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// Workspace modes of a Subagent.
const (
	WorkspaceIsolated = "isolated"
	WorkspaceShared   = "shared"
)

// Subagent limits when the configuration leaves them zero.
const (
	DefaultMaxThreads      = 6
	DefaultMaxDepth        = 1
	DefaultSubagentTimeout = 120 * time.Second
	// progressEvery throttles the progress a running child reports.
	progressEvery = 250 * time.Millisecond
	summaryLimit  = 4 << 10
)

// AgentSpec is what a Subagent runs as.
type AgentSpec struct {
	Name                  string
	DeveloperInstructions string
	Model                 string
	// ReadOnly narrows the child to read_only whatever the parent's mode.
	ReadOnly bool
}

// AgentCatalog resolves agent names for one workspace.
type AgentCatalog interface {
	Agent(name string) (AgentSpec, bool)
	Names() []string
}

// Snapshot is a copy of a workspace taken for an isolated child; Changes
// lists what the child did to it.
type Snapshot interface {
	Changes(ctx context.Context, dir string) (tools.FileChanges, error)
	// Overlay copies into the snapshot what another child changed in its
	// own (from), as the snapshot's baseline: Changes will not list it.
	Overlay(ctx context.Context, from string, ch tools.FileChanges) error
}

// SubagentLimits are the [agents] table of config.toml (the names Codex
// uses). Zero means the default.
type SubagentLimits struct {
	MaxThreads int `toml:"max_threads"`
	MaxDepth   int `toml:"max_depth"`
	TimeoutMS  int `toml:"timeout_ms"`
}

// Timeout is TimeoutMS as a duration.
func (l SubagentLimits) Timeout() time.Duration { return time.Duration(l.TimeoutMS) * time.Millisecond }

// SubagentConfig bounds and equips the Subagents Manager. Limits come from
// configuration, never from the model.
type SubagentConfig struct {
	MaxThreads int
	MaxDepth   int
	Timeout    time.Duration
	// Agents loads the agent catalogue of a workspace; nil offers only the
	// built-in "default" agent.
	Agents func(workspace string) (AgentCatalog, error)
	// Snapshot copies src to dst for an isolated child; nil makes every
	// child shared.
	Snapshot func(ctx context.Context, src, dst string) (Snapshot, error)
	// RemoveSnapshot deletes a child's snapshot folder; nil is os.RemoveAll.
	RemoveSnapshot func(dir string) error
}

// SubagentEventData is the Data of a subagent_event in the parent's Log:
// enough to rebuild every child's view from the Log alone.
type SubagentEventData struct {
	Event            tools.SubagentEvent  `json:"event"`
	ParentID         string               `json:"parent_id"`
	SubagentID       string               `json:"subagent_id"`
	ChildSessionID   string               `json:"child_session_id,omitempty"`
	ChildLog         string               `json:"child_log,omitempty"`
	ParentToolCallID string               `json:"parent_tool_call_id,omitempty"`
	Agent            string               `json:"agent"`
	Name             string               `json:"name,omitempty"` // a workflow step's label (its id)
	Task             string               `json:"task"`
	Depth            int                  `json:"depth"`
	Status           tools.SubagentStatus `json:"status"`
	Workspace        string               `json:"workspace"`
	WorkspaceMode    string               `json:"workspace_mode"`
	Input            string               `json:"input,omitempty"`
	Summary          string               `json:"summary,omitempty"`
	Error            *tools.Failure       `json:"error,omitempty"`
	Changes          *tools.FileChanges   `json:"changes,omitempty"`
	ElapsedMS        int64                `json:"elapsed_ms"`
}

// SubagentProgressData is the ephemeral status event of a running child.
type SubagentProgressData struct {
	SubagentID string `json:"subagent_id"`
	Activity   string `json:"activity"`
}

// Manager runs every Subagent of a Runtime: it is the single authority for
// their concurrency (max_threads, with a FIFO queue), depth, time limits and
// lifecycle, and it supervises every goroutine it starts.
type Manager struct {
	rt  *Runtime
	cfg SubagentConfig

	mu   sync.Mutex
	byID map[string]*subagent
	// children indexes the subagents of each parent session.
	children map[string][]*subagent
	running  int
	queue    []*subagent
	wg       sync.WaitGroup
	closed   bool
	// ended is closed, and replaced, whenever a run ends: waiters watch it
	// instead of every child's own channel.
	ended chan struct{}
}

type subagent struct {
	id, agent, task  string
	parent           *Session
	parentToolCallID string
	depth            int
	mode, workspace  string
	timeout          time.Duration
	spec             AgentSpec
	ask              Asker
	// Set by StartStep for a workflow step: its label, a read_only session
	// whatever the parent's mode, tools of its own, and who to tell when
	// its run ends.
	name     string
	readOnly bool
	extra    []tools.Tool
	mayWrite func(rel string) bool // nil: anywhere in the workspace
	writeSet []string
	inherit  []workflows.Inherited // ancestors' changes for the snapshot

	// Guarded by Manager.mu.
	child        *Session
	snap         Snapshot
	status       tools.SubagentStatus
	summary      string
	failure      *tools.Failure
	changes      *tools.FileChanges
	started      time.Time
	ended        time.Time
	input        string        // the prompt of the next run
	runs         int           // runs started
	done         chan struct{} // closed when the current run ends
	cancel       context.CancelFunc
	closing      bool
	childSession string // known from the Log for a restored child
	childLog     string // the path of the child's Log
	restored     bool   // rebuilt from the Log: no session of this process
	stopping     bool   // a queued child being cancelled
	// onEnd is called once, when the run StartStep asked for ends.
	onEnd func(tools.SubagentView)
}

func newManager(rt *Runtime, cfg SubagentConfig) *Manager {
	if cfg.MaxThreads <= 0 {
		cfg.MaxThreads = DefaultMaxThreads
	}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = DefaultMaxDepth
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultSubagentTimeout
	}
	return &Manager{rt: rt, cfg: cfg, byID: map[string]*subagent{}, children: map[string][]*subagent{}, ended: make(chan struct{})}
}

// notifyEndedLocked wakes every waiter.
func (m *Manager) notifyEndedLocked() {
	close(m.ended)
	m.ended = make(chan struct{})
}

// binding is the tools.Subagents of one tool call of one session.
type binding struct {
	m          *Manager
	parent     *Session
	toolCallID string
	ask        Asker
}

func failure(kind tools.ErrorKind, format string, args ...any) error {
	return &tools.Failure{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// resolve picks the agent and checks the limits a spawn must respect.
func (b binding) resolve(req tools.SpawnRequest) (AgentSpec, string, int, error) {
	m := b.m
	depth := b.parent.depth + 1
	if depth > m.cfg.MaxDepth {
		return AgentSpec{}, "", 0, failure(tools.ErrPermissionDenied,
			"a subagent at depth %d cannot spawn more subagents (max_depth is %d); do the work yourself or report back to your parent", b.parent.depth, m.cfg.MaxDepth)
	}
	name := req.Agent
	if name == "" {
		name = "default"
	}
	spec := AgentSpec{Name: "default"}
	if m.cfg.Agents != nil {
		cat, err := m.cfg.Agents(b.parent.workspace.Root())
		if err != nil {
			return AgentSpec{}, "", 0, failure(tools.ErrInvalidArgs, "the agent definitions of this workspace do not load: %v", err)
		}
		s, ok := cat.Agent(name)
		if !ok {
			return AgentSpec{}, "", 0, failure(tools.ErrNotFound, "there is no agent named %q; use one of: %s", name, strings.Join(cat.Names(), ", "))
		}
		spec = s
	} else if name != "default" {
		return AgentSpec{}, "", 0, failure(tools.ErrNotFound, "there is no agent named %q; use default", name)
	}
	mode := req.WorkspaceMode
	if mode == "" {
		mode = WorkspaceIsolated
	}
	if mode == WorkspaceIsolated && m.cfg.Snapshot == nil {
		mode = WorkspaceShared
	}
	return spec, mode, depth, nil
}

// Preview implements tools.Subagents.
func (b binding) Preview(req tools.SpawnRequest) (tools.SubagentView, error) {
	spec, mode, depth, err := b.resolve(req)
	if err != nil {
		return tools.SubagentView{}, err
	}
	return tools.SubagentView{Agent: spec.Name, Task: req.Task, Status: tools.SubagentNotStarted, Depth: depth, WorkspaceMode: mode}, nil
}

// Spawn implements tools.Subagents.
func (b binding) Spawn(_ context.Context, req tools.SpawnRequest) (tools.SubagentView, error) {
	return b.spawn(req, stepOptions{})
}

var _ workflows.Spawner = binding{}

// stepOptions are what a workflow step adds to a spawn.
type stepOptions struct {
	name     string
	readOnly bool
	extra    []tools.Tool
	ended    func(tools.SubagentView)
	mayWrite func(rel string) bool
	writeSet []string
	inherit  []workflows.Inherited
}

// StartStep implements workflows.Spawner: a Spawn that also carries the
// step's name, read_only, extra tools and end callback.
func (b binding) StartStep(ctx context.Context, req workflows.StepRequest, ended func(tools.SubagentView)) (tools.SubagentView, error) {
	if ctx.Err() != nil {
		return tools.SubagentView{}, failure(tools.ErrCancelled, "the workflow was cancelled before step %q started", req.Name)
	}
	return b.spawn(tools.SpawnRequest{Agent: req.Agent, Task: req.Task, WorkspaceMode: req.WorkspaceMode, Timeout: req.Timeout},
		stepOptions{name: req.Name, readOnly: req.ReadOnly, extra: req.Tools, ended: ended, mayWrite: req.MayWrite, writeSet: req.WriteSet, inherit: req.Inherit})
}

// StopStep implements workflows.Spawner. It waits for done even when stop
// had nothing to do: an end already under way (another stop, or the run's
// own end) may still be in the step's callback. So the callback must not
// call StopStep: it would wait for itself.
func (b binding) StopStep(id string) {
	m := b.m
	m.mu.Lock()
	sa, err := b.mine(id)
	m.mu.Unlock()
	if err != nil {
		return
	}
	m.stop(sa, false)
	m.mu.Lock()
	done := sa.done
	m.mu.Unlock()
	<-done
}

// RecordWorkflowEvent implements workflows.Spawner: workflow events take
// the path of subagent events, so the Log and live observers both see them.
func (b binding) RecordWorkflowEvent(d workflows.WorkflowEvent) error {
	return b.parent.emitBackground(EventWorkflow, d)
}

// WorkflowEvents implements workflows.Spawner: the workflow events of
// the parent's Log, read from the Log itself (the truth), for resume_from.
func (b binding) WorkflowEvents() ([]workflows.WorkflowEvent, error) {
	events, _, err := ReadLog(b.parent.log.Path())
	if err != nil {
		return nil, err
	}
	var out []workflows.WorkflowEvent
	for _, ev := range events {
		if ev.Type != EventWorkflow {
			continue
		}
		var d workflows.WorkflowEvent
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return nil, fmt.Errorf("workflow event %d of the Log: %w", ev.Seq, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// ShowPlan implements workflows.Spawner.
func (b binding) ShowPlan(entries []tools.PlanEntry) {
	if entries == nil {
		entries = []tools.PlanEntry{} // an empty plan clears the one shown
	}
	if err := b.parent.emitBackground(EventPlan, PlanData{Entries: entries}); err != nil {
		b.m.rt.log.Warn("showing a workflow plan", "session", b.parent.ID(), "err", err)
	}
}

func (b binding) spawn(req tools.SpawnRequest, opt stepOptions) (tools.SubagentView, error) {
	m := b.m
	spec, mode, depth, err := b.resolve(req)
	if err != nil {
		return tools.SubagentView{}, err
	}
	if strings.TrimSpace(req.Task) == "" {
		return tools.SubagentView{}, failure(tools.ErrInvalidArgs, "task is empty; say what the subagent should do and report")
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = m.cfg.Timeout
	}
	id := "sa-" + uuid.Must(uuid.NewV7()).String()[24:]
	sa := &subagent{
		id: id, agent: spec.Name, task: req.Task, parent: b.parent, parentToolCallID: b.toolCallID,
		depth: depth, mode: mode, timeout: timeout, spec: spec, ask: b.ask,
		status: tools.SubagentQueued, input: req.Task, done: make(chan struct{}),
		name: opt.name, readOnly: opt.readOnly, extra: opt.extra, onEnd: opt.ended,
		mayWrite: opt.mayWrite, writeSet: opt.writeSet, inherit: opt.inherit,
	}
	if mode == WorkspaceShared {
		sa.workspace = b.parent.workspace.Root()
	} else {
		sa.workspace = filepath.Join(m.home(sa), "workspace")
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return tools.SubagentView{}, failure(tools.ErrCancelled, "the runtime is shutting down")
	}
	m.byID[id] = sa
	m.children[sa.parent.ID()] = append(m.children[sa.parent.ID()], sa)
	view := m.viewLocked(sa)
	m.mu.Unlock()
	m.enqueue(sa, "")
	return view, nil
}

// enqueue records that sa is queued, and only then lets the scheduler see
// it, so its "queued" event always comes before its "started".
func (m *Manager) enqueue(sa *subagent, input string) {
	m.record(sa, tools.SubagentEventQueued, input)
	m.mu.Lock()
	if sa.status == tools.SubagentQueued && !sa.stopping { // not cancelled meanwhile
		m.queue = append(m.queue, sa)
	}
	m.mu.Unlock()
	m.schedule()
}

// schedule starts queued children, in order, while there is capacity.
func (m *Manager) schedule() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for !m.closed && m.running < m.cfg.MaxThreads && len(m.queue) > 0 {
		sa := m.queue[0]
		m.queue = m.queue[1:]
		m.running++
		ctx, cancel := context.WithTimeout(context.Background(), sa.timeout)
		sa.cancel = cancel
		sa.status = tools.SubagentRunning
		sa.started = time.Now()
		sa.runs++
		input := sa.input
		event := tools.SubagentEventStarted
		if sa.runs > 1 {
			event = tools.SubagentEventInput
		}
		m.wg.Add(1)
		go m.run(ctx, sa, event, input)
	}
}

// run is one turn of a child, from its start to its end; it always ends
// the run (status, event, capacity) whatever happens inside, panics
// included.
func (m *Manager) run(ctx context.Context, sa *subagent, event tools.SubagentEvent, input string) {
	defer m.wg.Done()
	status, summary, fail := tools.SubagentFailed, "", (*tools.Failure)(nil)
	var changes *tools.FileChanges
	defer func() {
		if p := recover(); p != nil {
			m.rt.log.Error("subagent panicked", "subagent", sa.id, "panic", p, "stack", string(debug.Stack()))
			status, fail = tools.SubagentFailed, &tools.Failure{Kind: tools.ErrInternal, Message: fmt.Sprintf("the subagent crashed: %v", p)}
		}
		m.finish(sa, status, summary, fail, changes)
	}()

	child, err := m.prepare(ctx, sa)
	if err != nil {
		status, fail = m.outcome(ctx, sa, tools.AsFailure(err))
		return
	}
	m.record(sa, event, input)

	tracker := &childTracker{m: m, sa: sa}
	var ask Asker
	if sa.ask != nil {
		ask = childAsker{sa: sa}
	}
	opts := TurnOptions{Observe: tracker.observe, Ask: ask}
	if sa.mayWrite != nil {
		opts.Files = writeSetFiles{Files: child.workspace.Files(), root: child.workspace.Root(), may: sa.mayWrite, set: sa.writeSet}
	}
	stop, err := child.Prompt(ctx, Prompt{Text: input}, opts)
	summary = tracker.summary()
	if sa.snap != nil {
		if ch, err := sa.snap.Changes(context.WithoutCancel(ctx), child.workspace.Root()); err == nil {
			changes = &ch
		} else {
			m.rt.log.Warn("subagent changes unknown", "subagent", sa.id, "err", err)
		}
	}
	if !m.hasLiveChildren(child.ID()) {
		// Its grandchildren, if any, still report into its Log.
		child.release()
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
	default:
		status = tools.SubagentCompleted
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
	child := sa.child
	m.mu.Unlock()
	if child != nil {
		return child, child.reacquire()
	}
	if sa.mode == WorkspaceIsolated {
		snap, err := m.cfg.Snapshot(ctx, sa.parent.workspace.Root(), sa.workspace)
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
	mode := sa.parent.Mode()
	if sa.spec.ReadOnly || sa.readOnly {
		mode = ModeReadOnly
	}
	model := sa.parent.Model()
	if sa.spec.Model != "" && m.rt.knowsModel(sa.spec.Model) {
		model = sa.spec.Model
	}
	child, err := m.rt.newChildSession(sa.workspace, m.home(sa), sa.parent, sa.depth, mode, model, sa.spec.DeveloperInstructions)
	if err != nil {
		return nil, err
	}
	child.addTools(sa.extra)
	m.mu.Lock()
	sa.child, sa.childLog = child, child.log.Path()
	m.mu.Unlock()
	return child, nil
}

// finish ends a run: it records the outcome, frees the slot and starts
// the next queued child.
func (m *Manager) finish(sa *subagent, status tools.SubagentStatus, summary string, fail *tools.Failure, changes *tools.FileChanges) {
	m.mu.Lock()
	sa.cancel()
	if sa.closing {
		status = tools.SubagentCancelled
		fail = &tools.Failure{Kind: tools.ErrCancelled, Message: "the subagent was closed while it ran"}
	}
	sa.summary, sa.failure, sa.ended = summary, fail, time.Now()
	if changes != nil {
		sa.changes = changes
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

// record writes a subagent_event for sa's current state to its parent's
// Log and shows it to whoever watches the parent.
func (m *Manager) record(sa *subagent, event tools.SubagentEvent, input string) {
	m.mu.Lock()
	d := m.eventLocked(sa, event, input, sa.status)
	m.mu.Unlock()
	m.emit(sa, d)
}

// eventLocked is the subagent_event of sa as it is, with status.
func (m *Manager) eventLocked(sa *subagent, event tools.SubagentEvent, input string, status tools.SubagentStatus) SubagentEventData {
	d := SubagentEventData{
		Event: event, ParentID: sa.parent.ID(), SubagentID: sa.id, ParentToolCallID: sa.parentToolCallID,
		Agent: sa.agent, Name: sa.name, Task: sa.task, Depth: sa.depth, Status: status, Workspace: sa.workspace,
		WorkspaceMode: sa.mode, Input: input, ElapsedMS: m.elapsedLocked(sa),
	}
	if sa.child != nil {
		d.ChildSessionID, d.ChildLog = sa.child.ID(), sa.childLog
	}
	if status.Ended() {
		d.Summary, d.Error, d.Changes = sa.summary, sa.failure, sa.changes
	}
	return d
}

func (m *Manager) emit(sa *subagent, d SubagentEventData) {
	if err := sa.parent.emitBackground(EventSubagent, d); err != nil {
		m.rt.log.Error("recording a subagent event", "subagent", sa.id, "err", err)
	}
}

// end makes a run's outcome visible: the event is recorded first, then
// waiters see the status, so no one learns of an end before the Log does.
// A step's callback runs before done closes, so StopStep returns only
// once the workflow has heard of the end.
func (m *Manager) end(sa *subagent, event tools.SubagentEvent, status tools.SubagentStatus, freeSlot bool) {
	m.mu.Lock()
	d := m.eventLocked(sa, event, "", status)
	m.mu.Unlock()
	m.emit(sa, d)
	m.mu.Lock()
	sa.status = status
	if freeSlot {
		m.running--
	}
	done := sa.done
	onEnd := sa.onEnd
	sa.onEnd = nil // once: later runs (send_input) are not the step's
	var view tools.SubagentView
	if onEnd != nil {
		view = m.viewLocked(sa)
	}
	m.notifyEndedLocked()
	m.mu.Unlock()
	if onEnd != nil {
		m.callEnded(sa, onEnd, view)
	}
	close(done)
}

// callEnded runs a step's callback; a panic in it is the workflow's bug
// and must not leave done open or take the Manager's goroutine down.
func (m *Manager) callEnded(sa *subagent, onEnd func(tools.SubagentView), v tools.SubagentView) {
	defer func() {
		if p := recover(); p != nil {
			m.rt.log.Error("a step's end callback panicked", "subagent", sa.id, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	onEnd(v)
}

func (m *Manager) elapsedLocked(sa *subagent) int64 {
	switch {
	case sa.started.IsZero():
		return 0
	case sa.ended.After(sa.started):
		return sa.ended.Sub(sa.started).Milliseconds()
	}
	return time.Since(sa.started).Milliseconds()
}

func (m *Manager) viewLocked(sa *subagent) tools.SubagentView {
	v := tools.SubagentView{
		ID: sa.id, Agent: sa.agent, Task: sa.task, Status: sa.status, Depth: sa.depth,
		Workspace: sa.workspace, WorkspaceMode: sa.mode, ElapsedMS: m.elapsedLocked(sa),
		ChildSessionID: sa.childSession,
	}
	if sa.child != nil {
		v.ChildSessionID = sa.child.ID()
	}
	if sa.status.Ended() {
		v.Summary, v.Error, v.Changes = sa.summary, sa.failure, sa.changes
	}
	return v
}

// mine finds a child of this binding's session.
func (b binding) mine(id string) (*subagent, error) {
	sa, ok := b.m.byID[id]
	if !ok || sa.parent.ID() != b.parent.ID() {
		return nil, failure(tools.ErrNotFound, "there is no subagent %q in this session; list_agents shows them", id)
	}
	return sa, nil
}

// List implements tools.Subagents.
func (b binding) List(context.Context) ([]tools.SubagentView, error) {
	m := b.m
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []tools.SubagentView
	for _, sa := range m.children[b.parent.ID()] {
		out = append(out, m.viewLocked(sa))
	}
	return out, nil
}

// Wait implements tools.Subagents. Reaching the horizon is an outcome, not
// an error, and never stops a child.
func (b binding) Wait(ctx context.Context, req tools.WaitRequest) (tools.WaitOutcome, error) {
	m := b.m
	m.mu.Lock()
	ids := req.IDs
	if len(ids) == 0 {
		for _, sa := range m.children[b.parent.ID()] {
			ids = append(ids, sa.id)
		}
	}
	var targets []*subagent
	for _, id := range ids {
		sa, err := b.mine(id)
		if err != nil {
			m.mu.Unlock()
			return tools.WaitOutcome{}, err
		}
		targets = append(targets, sa)
	}
	m.mu.Unlock()

	horizon := time.NewTimer(req.Timeout)
	defer horizon.Stop()
	for {
		m.mu.Lock()
		finished := 0
		for _, sa := range targets {
			if sa.status.Ended() {
				finished++
			}
		}
		wake := m.ended
		if finished == len(targets) || (req.Any && finished > 0) {
			out := m.outcomeLocked(targets)
			m.mu.Unlock()
			return out, nil
		}
		m.mu.Unlock()
		select {
		case <-wake:
		case <-horizon.C:
			m.mu.Lock()
			out := m.outcomeLocked(targets)
			m.mu.Unlock()
			out.Incomplete = true
			return out, nil
		case <-ctx.Done():
			return tools.WaitOutcome{}, failure(tools.ErrCancelled, "the wait was cancelled with the turn; the subagents were cancelled too")
		}
	}
}

// outcomeLocked is what a wait reports of its targets now.
func (m *Manager) outcomeLocked(targets []*subagent) tools.WaitOutcome {
	out := tools.WaitOutcome{Agents: []tools.SubagentView{}, Finished: []string{}, Pending: []string{}}
	for _, sa := range targets {
		out.Agents = append(out.Agents, m.viewLocked(sa))
		if sa.status.Ended() {
			out.Finished = append(out.Finished, sa.id)
		} else {
			out.Pending = append(out.Pending, sa.id)
		}
	}
	return out
}

// SendInput implements tools.Subagents: a child that ended its turn runs
// another one with the message.
func (b binding) SendInput(_ context.Context, id, message string) (tools.SubagentView, error) {
	m := b.m
	m.mu.Lock()
	sa, err := b.mine(id)
	if err != nil {
		m.mu.Unlock()
		return tools.SubagentView{}, err
	}
	switch sa.status {
	case tools.SubagentQueued, tools.SubagentRunning:
		m.mu.Unlock()
		return tools.SubagentView{}, failure(tools.ErrPermissionDenied,
			"subagent %s is %s and cannot take input now; wait for it with wait_agent, then send_input, or close it with close_agent", id, sa.status)
	case tools.SubagentClosed, tools.SubagentDetached:
		m.mu.Unlock()
		return tools.SubagentView{}, failure(tools.ErrPermissionDenied,
			"subagent %s is %s and takes no more input; spawn a new one with spawn_agent", id, sa.status)
	}
	if sa.restored {
		m.mu.Unlock()
		return tools.SubagentView{}, failure(tools.ErrPermissionDenied,
			"subagent %s ran in an earlier Pixir process and cannot be resumed; spawn a new one with spawn_agent (its summary is in list_agents)", id)
	}
	sa.status, sa.input, sa.done = tools.SubagentQueued, message, make(chan struct{})
	sa.summary, sa.failure, sa.stopping = "", nil, false
	view := m.viewLocked(sa)
	m.mu.Unlock()
	m.enqueue(sa, message)
	return view, nil
}

// Close implements tools.Subagents.
func (b binding) Close(_ context.Context, id string) (tools.SubagentView, error) {
	m := b.m
	m.mu.Lock()
	sa, err := b.mine(id)
	if err != nil {
		m.mu.Unlock()
		return tools.SubagentView{}, err
	}
	m.mu.Unlock()
	m.stop(sa, true)
	return m.closeEnded(sa), nil
}

// stop cancels a queued or running child and waits for its run to end.
func (m *Manager) stop(sa *subagent, closing bool) {
	m.mu.Lock()
	switch sa.status {
	case tools.SubagentQueued:
		if sa.stopping {
			m.mu.Unlock()
			return // another stop is ending it
		}
		sa.stopping = true
		m.queue = slices.DeleteFunc(m.queue, func(q *subagent) bool { return q == sa })
		sa.ended = time.Now()
		sa.failure = &tools.Failure{Kind: tools.ErrCancelled, Message: "the subagent was cancelled before it started"}
		// Out of the queue, so no run will start it while it ends here.
		m.mu.Unlock()
		m.end(sa, tools.SubagentEventCancelled, tools.SubagentCancelled, false)
		return
	case tools.SubagentRunning:
		sa.closing = sa.closing || closing
		cancel, done := sa.cancel, sa.done
		m.mu.Unlock()
		cancel()
		<-done
		return
	}
	m.mu.Unlock()
}

// closeEnded marks an ended child closed and frees its snapshot.
func (m *Manager) closeEnded(sa *subagent) tools.SubagentView {
	m.mu.Lock()
	if sa.status == tools.SubagentClosed {
		v := m.viewLocked(sa)
		m.mu.Unlock()
		return v
	}
	sa.status = tools.SubagentClosed
	child, isolated := sa.child, sa.mode == WorkspaceIsolated
	v := m.viewLocked(sa)
	m.mu.Unlock()
	m.record(sa, tools.SubagentEventClosed, "")
	if child != nil {
		child.close()
	}
	if isolated {
		m.removeSnapshot(sa)
	}
	return v
}

// home is the folder of a Subagent's own state under its parent's
// workspace: .pixir/subagents/<id>/ holds its session Log and, when
// isolated, its workspace snapshot.
func (m *Manager) home(sa *subagent) string {
	return filepath.Join(sa.parent.workspace.Root(), StateDir, "subagents", sa.id)
}

// removeSnapshot deletes an isolated child's workspace snapshot; its Log,
// beside it, stays as evidence.
func (m *Manager) removeSnapshot(sa *subagent) {
	remove := m.cfg.RemoveSnapshot
	if remove == nil {
		remove = os.RemoveAll
	}
	if err := remove(sa.workspace); err != nil {
		m.rt.log.Warn("removing a subagent snapshot", "subagent", sa.id, "err", err)
	}
}

// cancelChildren cancels every queued or running descendant of a session.
func (m *Manager) cancelChildren(parentID string) {
	m.mu.Lock()
	mine := slices.Clone(m.children[parentID])
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, sa := range mine {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.mu.Lock()
			child := sa.child
			m.mu.Unlock()
			if child != nil {
				m.cancelChildren(child.ID())
			}
			m.stop(sa, false)
		}()
	}
	wg.Wait()
}

func (m *Manager) hasLiveChildren(parentID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, sa := range m.children[parentID] {
		if !sa.status.Ended() {
			return true
		}
	}
	return false
}

// cancelChildrenAsync cancels a session's descendants without waiting,
// under the Manager's supervision.
func (m *Manager) cancelChildrenAsync(parentID string) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.cancelChildren(parentID)
	}()
}

// closeChildren closes every child of a closing session.
func (m *Manager) closeChildren(parentID string) {
	m.cancelChildren(parentID)
	m.mu.Lock()
	mine := slices.Clone(m.children[parentID])
	m.mu.Unlock()
	for _, sa := range mine {
		m.closeEnded(sa)
	}
}

// shutdown cancels every child and waits for all of them.
func (m *Manager) shutdown() {
	m.mu.Lock()
	m.closed = true
	live := slices.Clone(m.queue)
	for _, sa := range m.byID {
		if sa.status == tools.SubagentRunning {
			live = append(live, sa)
		}
	}
	m.mu.Unlock()
	for _, sa := range live {
		m.stop(sa, false)
	}
	m.wg.Wait()
}

// restore rebuilds the children of a session reopened from its Log. A
// child that was not over when its process ended is detached: no process
// runs it, and nothing says it finished.
func (m *Manager) restore(parent *Session, events []Event) {
	last := map[string]SubagentEventData{}
	var order []string
	for _, ev := range events {
		if ev.Type != EventSubagent {
			continue
		}
		var d SubagentEventData
		if json.Unmarshal(ev.Data, &d) != nil || d.SubagentID == "" {
			continue
		}
		if _, seen := last[d.SubagentID]; !seen {
			order = append(order, d.SubagentID)
		}
		last[d.SubagentID] = d
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range order {
		if _, live := m.byID[id]; live {
			continue
		}
		d := last[id]
		sa := &subagent{
			id: id, agent: d.Agent, name: d.Name, task: d.Task, parent: parent, parentToolCallID: d.ParentToolCallID,
			depth: d.Depth, mode: d.WorkspaceMode, workspace: d.Workspace, status: d.Status,
			summary: d.Summary, failure: d.Error, changes: d.Changes, childSession: d.ChildSessionID,
			done: make(chan struct{}), restored: true,
		}
		if !sa.status.Ended() {
			sa.status = tools.SubagentDetached
			sa.failure = &tools.Failure{Kind: tools.ErrDetached, Message: "the process that ran this subagent ended before it did; its work is not known to be complete"}
		}
		close(sa.done)
		m.byID[id] = sa
		m.children[parent.ID()] = append(m.children[parent.ID()], sa)
	}
}

// detached lists the children of a session that are detached.
func (m *Manager) detached(parentID string) []SubagentEventData {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []SubagentEventData
	for _, sa := range m.children[parentID] {
		if sa.status == tools.SubagentDetached {
			out = append(out, SubagentEventData{SubagentID: sa.id, Agent: sa.agent, Task: sa.task, Status: sa.status, Error: sa.failure, ParentToolCallID: sa.parentToolCallID})
		}
	}
	return out
}

// childAsker asks the client that drives the parent on a child's behalf:
// the client knows the parent's session and the child's tool call there,
// not the child's own session.
type childAsker struct{ sa *subagent }

func (c childAsker) AskPermission(ctx context.Context, req PermissionRequest) (PermissionOutcome, error) {
	if req.SubagentID == "" {
		req.SessionID, req.SubagentID = c.sa.parent.ID(), c.sa.id
		who := c.sa.agent
		if c.sa.name != "" { // a workflow step: the user knows it by its id
			who = c.sa.name + " (" + c.sa.agent + ")"
		}
		req.Title = who + ": " + req.Title
	}
	return c.sa.ask.AskPermission(ctx, req)
}

// childTracker watches a child's turn: it remembers the final answer and a
// provider failure, and reports throttled progress to the parent.
type childTracker struct {
	m    *Manager
	sa   *subagent
	mu   sync.Mutex
	last string
	// failed is set when the child's turn ended on a provider failure.
	failed   *tools.Failure
	reported time.Time
}

func (t *childTracker) observe(ev Event) {
	var activity string
	switch ev.Type {
	case EventAssistantMessage:
		var d AssistantMessageData
		if json.Unmarshal(ev.Data, &d) == nil && d.Text != "" {
			t.mu.Lock()
			t.last = d.Text
			t.mu.Unlock()
			activity = titleFrom(d.Text)
		}
	case EventToolCall:
		var d ToolCallData
		if json.Unmarshal(ev.Data, &d) == nil {
			activity = d.Title
		}
	case EventTurnFailed:
		var d TurnFailedData
		if json.Unmarshal(ev.Data, &d) == nil {
			t.mu.Lock()
			t.failed = &tools.Failure{Kind: d.Kind, Message: d.Message}
			t.mu.Unlock()
		}
	}
	if activity == "" {
		return
	}
	t.mu.Lock()
	if time.Since(t.reported) < progressEvery {
		t.mu.Unlock()
		return
	}
	t.reported = time.Now()
	t.mu.Unlock()
	_ = t.sa.parent.emitBackground(EventStatus, SubagentProgressData{SubagentID: t.sa.id, Activity: activity})
}

func (t *childTracker) summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.last) > summaryLimit {
		return keepEnds(t.last, summaryLimit)
	}
	return t.last
}

// keepEnds shortens a child's final answer to about limit bytes, keeping
// its start and its end: a report's conclusion (and a workflow step's
// "checkpoint_status:" line) is at the end.
func keepEnds(s string, limit int) string {
	tail := limit / 4
	head := strings.ToValidUTF8(s[:limit-tail], "")
	end := s[len(s)-tail:]
	for len(end) > 0 && !utf8.RuneStart(end[0]) {
		end = end[1:]
	}
	return fmt.Sprintf("%s\n[… %d bytes omitted; the whole answer is in the subagent's log]\n%s", head, len(s)-len(head)-len(end), end)
}

// Spawner runs workflow steps as Subagents of this session outside any
// turn (pixir run --workflow, the smoke checks): the same Manager, limits
// and evidence as run_workflow inside a turn. ask, when not nil, answers
// the children's permission requests.
func (s *Session) Spawner(ask Asker) workflows.Spawner {
	return binding{m: s.rt.subagents, parent: s, ask: ask}
}

// writeSetFiles holds a workflow step's child to its write set: a write
// outside it is refused before it touches the disk, so writers the
// scheduler let run side by side (disjoint write sets) cannot collide
// through the file tools.
type writeSetFiles struct {
	tools.Files
	root string
	may  func(rel string) bool
	set  []string
}

func (f writeSetFiles) WriteFile(ctx context.Context, path string, data []byte) error {
	rel, err := filepath.Rel(f.root, path)
	if err == nil && !f.may(filepath.ToSlash(rel)) {
		return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: fmt.Sprintf(
			"%s is outside this workflow step's write_set (%s); write only there, or report needs_orchestrator if the task needs more",
			filepath.ToSlash(rel), strings.Join(f.set, ", "))}
	}
	return f.Files.WriteFile(ctx, path, data)
}
