// The Manager as the agent tools see it: tools.Subagents bound to one
// session and tool call, with the agent lookup and the limits a spawn
// must respect.

package runtime

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pixir-go/pixir/tools"
)

// binding is the tools.Subagents of one tool call of one session.
type binding struct {
	m          *Manager
	parent     *Session
	toolCallID string
	ask        Asker
	// files, when set, are the editor's: merges write text through them.
	files tools.Files
	// agents, when set, is the agent catalogue all its spawns share (a
	// workflow run's).
	agents *catalogOnce
}

// spawner is this binding's session as Manager.resolve sees it.
func (b binding) spawner() spawnParent {
	return spawnParent{workspace: b.parent.workspace.Root(), depth: b.parent.depth, mode: b.parent.heldMode(), agents: b.agents}
}

// resolve picks the agent and checks the limits a spawn from this
// binding's session must respect, and the MCP servers it names.
func (b binding) resolve(req tools.SpawnRequest) (AgentSpec, string, int, error) {
	spec, mode, depth, err := b.m.resolve(b.spawner(), req)
	if err == nil && req.MCPServers != nil {
		err = b.parent.checkMCPNames(req.MCPServers)
	}
	return spec, mode, depth, err
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
	// A spent budget refuses the spawn: the child's first model call
	// would be refused anyway, and a workflow then holds the step.
	if err := b.parent.exhausted(); err != nil {
		return tools.SubagentView{}, err
	}
	if err := opt.run.Exhausted(); err != nil {
		return tools.SubagentView{}, err
	}
	id := "sa-" + uuid.Must(uuid.NewV7()).String()[24:]
	sa := &subagent{
		id: id, agent: spec.Name, task: req.Task, parent: b.parent, parentToolCallID: b.toolCallID,
		depth: depth, mode: mode, timeout: timeout, spec: spec, ask: b.ask,
		status: tools.SubagentQueued, input: req.Task, done: make(chan struct{}),
		name: opt.name, readOnly: opt.readOnly, extra: opt.extra, stepEnd: opt.ended,
		inherit: opt.inherit, mcpServers: narrowed(spec.MCPServers, req.MCPServers),
		limit:   newWriteLimit(opt.writeSet, opt.mayWrite, spec).within(b.parent.writes),
		account: m.rt.subagentAccount(id), run: opt.run, seen: opt.name != "",
		// Known from the start, so that a client shown children as sessions
		// of their own can be told of it while it is queued.
		childSession: newSessionID(),
	}
	if req.ForkContext {
		// Taken now, while the call that spawns it has no result: the
		// child starts from what the parent had seen before it.
		sa.forkHistory = b.parent.forkedHistory()
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
	root := b.parent.root().ID()
	if most := m.cfg.MaxSubagents; most > 0 && m.spawned[root] >= most {
		m.mu.Unlock()
		return tools.SubagentView{}, failure(tools.ErrBudgetExhausted,
			"this session has spawned %d subagents, as many as [agents] max_subagents allows; do the rest of the work yourself, "+
				"or tell the user to raise max_subagents in config.toml", m.spawned[root])
	}
	m.spawned[root]++
	m.byID[id] = sa
	m.children[sa.parent.ID()] = append(m.children[sa.parent.ID()], sa)
	view := m.viewLocked(sa)
	m.mu.Unlock()
	m.enqueue(sa, "", opt.scheduled)
	return view, nil
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
		if sa.status.Ended() {
			sa.seen = true
		}
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
	timeout := req.Timeout
	if req.Default {
		timeout = m.defaultWaitLocked(targets)
	}
	m.mu.Unlock()

	horizon := time.NewTimer(timeout)
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

// deadlineGrace is how long past the latest deadline of its children a
// default wait lasts: the Manager ends a child at its deadline, and its
// end is recorded a moment later.
const deadlineGrace = time.Second

// defaultWaitLocked is the horizon of a wait the model gave no timeout:
// the configured default, and no longer than the latest deadline of the
// targets when every one has started (a queued child's is not known yet).
func (m *Manager) defaultWaitLocked(targets []*subagent) time.Duration {
	horizon := m.cfg.WaitTimeout
	var latest time.Time
	for _, sa := range targets {
		switch sa.status {
		case tools.SubagentQueued:
			return horizon
		case tools.SubagentRunning:
			if d := sa.started.Add(sa.timeout); d.After(latest) {
				latest = d
			}
		}
	}
	if latest.IsZero() {
		return horizon // every one has ended: the wait returns at once
	}
	return min(horizon, time.Until(latest)+deadlineGrace)
}

// outcomeLocked is what a wait reports of its targets now. The model sees
// the ends it reports: they are not folded into its next call.
func (m *Manager) outcomeLocked(targets []*subagent) tools.WaitOutcome {
	out := tools.WaitOutcome{Agents: []tools.SubagentView{}, Finished: []string{}, Pending: []string{}}
	for _, sa := range targets {
		out.Agents = append(out.Agents, m.viewLocked(sa))
		if sa.status.Ended() {
			sa.seen = true
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
	if sa.snapRemoved {
		m.mu.Unlock()
		return tools.SubagentView{}, failure(tools.ErrPermissionDenied, removedSnapshot, id)
	}
	sa.status, sa.input, sa.done = tools.SubagentQueued, message, make(chan struct{})
	sa.summary, sa.failure, sa.stopping = "", nil, false
	sa.seen = sa.name != "" // its next end is news
	view := m.viewLocked(sa)
	m.mu.Unlock()
	m.enqueue(sa, message, nil)
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
	v := m.closeEnded(sa)
	m.mu.Lock()
	sa.seen = true
	m.mu.Unlock()
	return v, nil
}
