// The Subagents Manager (ADR 0011): its configuration and limits, the
// record it keeps of every child, and how children are stopped, closed,
// cancelled with their parent and shut down. A run of a child is in
// subagents_run.go, its evidence in subagents_events.go; what the agent
// tools and workflows see of it in subagents_tools.go and
// subagents_workflows.go.

package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/runtime/merge"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/runtime/wslock"
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
	// DefaultWaitTimeout is how long wait_agent waits without a timeout_ms.
	DefaultWaitTimeout = 30 * time.Second
	// progressEvery throttles the progress a running child reports.
	progressEvery = 250 * time.Millisecond
	summaryLimit  = 4 << 10
)

// AgentSpec is what a Subagent runs as.
type AgentSpec struct {
	Name string
	// Description says when to use it: the parent model reads it in the
	// catalogue of its system prompt.
	Description           string
	DeveloperInstructions string
	// Model, when set, is the model the child uses instead of its parent's;
	// a spawn is refused when it is not among the configured models.
	Model string
	// ReasoningEffort, when set, replaces the parent's for the child.
	ReasoningEffort string
	// Source says where the agent was defined, for messages: a file, or
	// "built-in".
	Source string
	// ReadOnly narrows the child to read_only whatever the parent's mode.
	ReadOnly bool
	// DenyNetwork closes TCP (connect and bind, loopback included) to the
	// child's commands, where the kernel can (Landlock ABI 4).
	DenyNetwork bool
	// MCPServers, when not nil, are the only MCP servers of the parent's
	// that the child may use (an agent file's allowed_mcp_servers); a name
	// the parent does not have is passed over.
	MCPServers []string
	// Profile narrows what the child may do beside its mode.
	Profile AgentProfile
}

// Shell settings of an agent profile.
const (
	// ShellWriteSet (or empty): commands may write beneath the folders of
	// the write sets (the whole workspace without one).
	ShellWriteSet = "write-set"
	// ShellReadOnly: commands see a read-only workspace whatever the
	// write set.
	ShellReadOnly = "read-only"
	// ShellDeny: the child is not offered bash.
	ShellDeny = "deny"
)

// AgentProfile is what an agent's children may do: the tools they are
// offered, where they may write, how their commands run. Each narrows;
// the zero AgentProfile narrows nothing.
type AgentProfile struct {
	// Tools, when not nil, is the allowlist of the tools offered: names,
	// or prefixes ending in "*".
	Tools []string
	// WriteSet, when not nil, are the path patterns (doublestar, workspace
	// relative) beneath which the child may change files, with any tool.
	WriteSet []string
	// Shell is ShellWriteSet (or empty), ShellReadOnly or ShellDeny.
	Shell string
	// Commands, when not nil, are the only programs its commands may
	// start (sandbox.Programs resolves them).
	Commands []string
}

// allowsTool reports whether the profile lets the child be offered name.
func (p AgentProfile) allowsTool(name string) bool {
	if name == "bash" && p.Shell == ShellDeny {
		return false
	}
	if p.Tools == nil {
		return true
	}
	for _, t := range p.Tools {
		if prefix, ok := strings.CutSuffix(t, "*"); ok && strings.HasPrefix(name, prefix) || t == name {
			return true
		}
	}
	return false
}

// AgentCatalog resolves agent names for one workspace.
type AgentCatalog interface {
	Agent(name string) (AgentSpec, bool)
	Names() []string
}

// brokenAgent is the error of an agent whose definition does not load,
// when cat knows of one (nil otherwise): a spawn of it is refused with
// that error, and no other definition runs in its place.
func brokenAgent(cat AgentCatalog, name string) error {
	if b, ok := cat.(interface{ Broken(name string) error }); ok {
		return b.Broken(name)
	}
	return nil
}

// otherBroken says, for a name cat does not know, which agent files do
// not load and why: one of them may be meant to define it (a file whose
// name cannot be read is known by its file's name). "" when none.
func otherBroken(cat AgentCatalog) string {
	b, ok := cat.(interface {
		Broken(name string) error
		BrokenNames() []string
	})
	if !ok {
		return ""
	}
	var problems []string
	for _, n := range b.BrokenNames() {
		if err := b.Broken(n); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) == 0 {
		return ""
	}
	return "; agent files that do not load, one of which may be meant to define it: " + strings.Join(problems, "; ")
}

// Snapshot is a copy of a workspace taken for an isolated child; Changes
// lists what the child did to it.
type Snapshot interface {
	Changes(ctx context.Context, dir string) (tools.FileChanges, error)
	// Overlay copies into the snapshot what another child changed in its
	// own (from), as the snapshot's baseline: Changes will not list it.
	Overlay(ctx context.Context, from string, ch tools.FileChanges) error
	// Merge brings the child's changes into a workspace, three-way against
	// the snapshot's base (merge.Merge; req.Snapshot is this snapshot's).
	Merge(ctx context.Context, req merge.Request) (tools.MergeReport, error)
}

// SubagentLimits are the [agents] table of config.toml (the names Codex
// uses). Zero means the default.
type SubagentLimits struct {
	MaxThreads int `toml:"max_threads"`
	MaxDepth   int `toml:"max_depth"`
	TimeoutMS  int `toml:"timeout_ms"`
	// MaxSubagents caps the Subagents one user session spawns in all
	// (workflow steps and its children's children included); 0: no cap.
	MaxSubagents int `toml:"max_subagents"`
	// WaitTimeoutMS is how long wait_agent waits when the model gives no
	// timeout_ms.
	WaitTimeoutMS int `toml:"wait_timeout_ms"`
}

// Timeout is TimeoutMS as a duration.
func (l SubagentLimits) Timeout() time.Duration { return time.Duration(l.TimeoutMS) * time.Millisecond }

// SubagentConfig bounds and equips the Subagents Manager. Limits come from
// configuration, never from the model.
type SubagentConfig struct {
	MaxThreads int
	MaxDepth   int
	Timeout    time.Duration
	// MaxSubagents caps the Subagents of one user session in all; 0: no
	// cap. WaitTimeout is wait_agent's default horizon.
	MaxSubagents int
	WaitTimeout  time.Duration
	// Agents loads the agent catalogue of a workspace; nil offers only the
	// built-in "default" agent.
	Agents func(workspace string) (AgentCatalog, error)
	// Snapshot copies src to dst for an isolated child; nil makes every
	// child shared.
	Snapshot func(ctx context.Context, src, dst string) (Snapshot, error)
	// RemoveSnapshot deletes a child's snapshot folder (and its base
	// beside it); nil is os.RemoveAll of the folder.
	RemoveSnapshot func(dir string) error
	// LoadSnapshot loads the snapshot of a child an earlier process took
	// (dir is its workspace), to merge a child restored from the Log; nil
	// cannot.
	LoadSnapshot func(dir string) (Snapshot, error)
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
	// running counts the children running, by the user session whose
	// tree they are in (Session.root): max_threads is each session's, so
	// one editor tab's children never queue another's.
	running map[string]int
	queue   []*subagent
	wg      sync.WaitGroup
	closed  bool
	// ended is closed, and replaced, whenever a run ends: waiters watch it
	// instead of every child's own channel.
	ended chan struct{}
	// spawned counts the Subagents of each user session (by its id), its
	// descendants' included, for max_subagents.
	spawned map[string]int
	// merging serialises this process's merges into a workspace (a
	// one-slot channel by its root), question included: two steps of one
	// workflow merge one after the other, each planned against the
	// other's result. Copies do not wait for it (see inWorkspace).
	merging sync.Map
}

// mergeLock is the lock that serialises this process's merges into the
// workspace at root: a one-slot channel, not a mutex, because a merge
// holds it across its question to the user, and another session's merge
// waiting behind that question must end when its own turn is cancelled.
func (m *Manager) mergeLock(root string) chan struct{} {
	l, _ := m.merging.LoadOrStore(root, make(chan struct{}, 1))
	return l.(chan struct{})
}

// inWorkspace runs f, a snapshot's copy or a dry run's plan, holding the
// workspace's lock at root to read (see runtime/wslock): a merge of this
// process or another (a second pixir run, an editor's pixir acp) writes
// before or after it, never during it. A merge takes the lock to write
// itself, only while it writes (after its question). The lock is released
// however f ends, a panic included: a copy that panicked (recovered by the
// child's run) must not leave every later merge waiting for good.
func (m *Manager) inWorkspace(ctx context.Context, root string, show func(string), f func() error) error {
	unlock, err := wslock.Lock(ctx, root, false, m.lockWaiting(root, "a snapshot's copy", show))
	if err != nil {
		return err
	}
	defer unlock()
	return f()
}

// lockWaitShown is how long a wait for another process's lock of the
// workspace lasts before the user is shown it (most last milliseconds).
const lockWaitShown = time.Second

// lockWaiting says on stderr that what (a copy, a merge) waits for
// another process's merge or copy in the workspace at root, and, with
// show, once the wait has lasted lockWaitShown, says it where the user
// sees it (the tool call that waits, in the editor): an editor's user saw
// nothing while pixir acp waited for a pixir run's merge.
func (m *Manager) lockWaiting(root, what string, show func(text string)) wslock.Waiting {
	return func(holder string) func() {
		m.rt.log.Warn(what+" waits for "+holder+" to end its merge or copy in the same workspace", "workspace", root)
		if show == nil {
			return nil
		}
		t := time.AfterFunc(lockWaitShown, func() {
			show("Waiting for " + holder + " to finish its merge or copy in this workspace: " + what + " goes on once it has.")
		})
		return func() { t.Stop() }
	}
}

// showOnCall is what shows the user a wait of the tool call callID of
// session s (a merge's, a workflow's step's copy): the call's progress.
func showOnCall(s *Session, callID string) func(string) {
	if callID == "" {
		return nil
	}
	return func(text string) {
		_ = s.emitBackground(EventStatus, ToolProgressData{ToolCallID: callID, Status: "in_progress", Activity: text})
	}
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
	// Set for a workflow step (stepChildren.Start): its label, a read_only
	// session whatever the parent's mode, tools of its own, its write set,
	// the ancestors' changes its snapshot starts with, and where its run's
	// end goes.
	name     string
	readOnly bool
	extra    []tools.Tool
	// limit is what the child may write: the step's write_set and its
	// agent's.
	limit   writeLimit
	inherit []workflows.Inherited // ancestors' changes for the snapshot
	// forkHistory, for spawn_agent's fork_context, is the parent's
	// History the child's session starts with.
	forkHistory []provider.Message
	// mcpServers narrows the parent's MCP servers the child may use (its
	// agent's and its step's allow lists); nil allows them all.
	mcpServers []string

	// Guarded by Manager.mu.
	// child is its session, made at its first run; once a run has ended
	// the session is let go (dormant keeps what a next run needs), unless
	// it has children of its own (Manager.retire).
	child   *Session
	dormant *dormantSession
	// snap is an isolated child's snapshot while something uses it
	// (snapUsers: its run, a merge); between uses it is let go when it can
	// be read back from disk (snapOnDisk), so a process that ran many
	// writers does not keep every one's manifest (~150 B a file).
	snap       Snapshot
	snapUsers  int
	snapOnDisk bool
	// snapRemoved: its work was merged whole and its snapshot removed
	// (dropMerged); nothing is left to merge or to run in.
	snapRemoved  bool
	status       tools.SubagentStatus
	summary      string
	failure      *tools.Failure
	changes      *tools.FileChanges
	violation    *tools.WriteSetViolation // of changes
	denied       int                      // mutations the user refused, all runs
	started      time.Time
	ended        time.Time
	input        string        // the prompt of the next run
	runs         int           // runs started
	done         chan struct{} // closed when the current run ends
	cancel       context.CancelFunc
	closing      bool
	childSession string // its session's id: chosen at the spawn, or known from the Log for a restored child
	childLog     string // the path of the child's Log
	restored     bool   // rebuilt from the Log: no session of this process
	stopping     bool   // a queued child being cancelled
	// stepEnd receives the child's view once, when the run the workflow
	// started ends.
	stepEnd chan<- tools.SubagentView
	// account is what the child's calls are charged to first; run, for a
	// workflow step, the run's account, charged next.
	account *budget.Account
	run     *budget.Account
	// seen is set once the parent's model was shown the child's end (a
	// wait, a list, a close, or its summary folded into the parent's
	// next model call); a workflow step's child is reported by its
	// workflow, and never folded.
	seen bool
}

// usageOf is what an account spent, or nil when nothing was.
func usageOf(a *budget.Account) *budget.Usage {
	if a == nil {
		return nil
	}
	if u := a.Spent(); !u.IsZero() {
		return &u
	}
	return nil
}

func newManager(rt *Runtime, cfg SubagentConfig) *Manager {
	return &Manager{rt: rt, cfg: cfg.withDefaults(), byID: map[string]*subagent{}, children: map[string][]*subagent{}, ended: make(chan struct{}),
		spawned: map[string]int{}}
}

// withDefaults fills the limits the configuration leaves zero.
func (c SubagentConfig) withDefaults() SubagentConfig {
	if c.MaxThreads <= 0 {
		c.MaxThreads = DefaultMaxThreads
	}
	if c.MaxDepth <= 0 {
		c.MaxDepth = DefaultMaxDepth
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultSubagentTimeout
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = DefaultWaitTimeout
	}
	return c
}

// spawnParent is who a child would be spawned for: the workspace, depth
// and permission mode of its parent session.
type spawnParent struct {
	workspace string
	depth     int
	mode      Mode
	// agents, when set, is the catalogue loaded once for many spawns
	// (a workflow run's steps); nil loads it for each.
	agents *catalogOnce
}

// catalogOnce is an agent catalogue loaded at its first use and kept: a
// workflow run's check and its thousands of steps see the same agents,
// read once.
type catalogOnce struct {
	once sync.Once
	cat  AgentCatalog
	err  error
}

// catalog is the agent catalogue of parent's workspace.
func (p spawnParent) catalog(load func(workspace string) (AgentCatalog, error)) (AgentCatalog, error) {
	if p.agents == nil {
		return load(p.workspace)
	}
	p.agents.once.Do(func() { p.agents.cat, p.agents.err = load(p.workspace) })
	return p.agents.cat, p.agents.err
}

// resolve is the one agent lookup: it picks the agent a child of parent
// would run as, its workspace mode and depth, and checks the limits a spawn
// must respect. The agent tools, the workflow ports and a workflow's dry
// run all ask it. Every refusal is a *tools.Failure the model (or the
// user) can act on.
func (m *Manager) resolve(parent spawnParent, req tools.SpawnRequest) (AgentSpec, string, int, error) {
	c := m.cfg
	depth := parent.depth + 1
	if depth > c.MaxDepth {
		return AgentSpec{}, "", 0, failure(tools.ErrPermissionDenied,
			"a subagent at depth %d cannot spawn more subagents (max_depth is %d); do the work yourself or report back to your parent", parent.depth, c.MaxDepth)
	}
	name := req.Agent
	if name == "" {
		name = "default"
	}
	spec := AgentSpec{Name: "default"}
	if c.Agents != nil {
		cat, err := parent.catalog(c.Agents)
		if err != nil {
			return AgentSpec{}, "", 0, failure(tools.ErrInvalidArgs, "the agent definitions of this workspace do not load: %v", err)
		}
		s, ok := cat.Agent(name)
		if err := brokenAgent(cat, name); !ok && err != nil {
			return AgentSpec{}, "", 0, failure(tools.ErrInvalidArgs,
				"%v. Tell the user to fix the file (pixir agents lists its problems); meanwhile spawn another agent or do the work yourself", err)
		}
		if !ok {
			return AgentSpec{}, "", 0, failure(tools.ErrNotFound, "there is no agent named %q; use one of: %s%s", name, strings.Join(cat.Names(), ", "), otherBroken(cat))
		}
		spec = s
	} else if name != "default" {
		return AgentSpec{}, "", 0, failure(tools.ErrNotFound, "there is no agent named %q; use default", name)
	}
	if spec.Model != "" && !m.rt.knowsModel(spec.Model) {
		// Never dropped silently: the child would run on another model
		// than its agent says.
		return AgentSpec{}, "", 0, failure(tools.ErrInvalidArgs,
			"agent %q asks for the model %q (model in %s), which is not among the models configured for the %s provider (%s); "+
				"tell the user to add it to models in config.toml if the provider serves it, or to remove model from the agent; meanwhile spawn another agent",
			spec.Name, spec.Model, spec.Source, m.rt.ProviderName(), strings.Join(m.rt.Models(), ", "))
	}
	mode := req.WorkspaceMode
	if mode == "" {
		mode = WorkspaceIsolated
		if spec.ReadOnly || parent.mode == ModeReadOnly {
			// A read-only child cannot change the workspace: its file
			// tools are refused, its commands run in a read-only sandbox
			// (or are refused where the kernel has none). A copy would
			// cost far more than its work (issue 15).
			mode = WorkspaceShared
		}
	}
	if mode == WorkspaceIsolated && c.Snapshot == nil {
		mode = WorkspaceShared
	}
	return spec, mode, depth, nil
}

func failure(kind tools.ErrorKind, format string, args ...any) error {
	return &tools.Failure{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// notifyEndedLocked wakes every waiter.
func (m *Manager) notifyEndedLocked() {
	close(m.ended)
	m.ended = make(chan struct{})
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
	if sa.status.Ended() {
		v.Summary, v.Error, v.Changes, v.WriteSetViolation = sa.summary, sa.failure, sa.changes, sa.violation
		v.DeniedChanges = sa.denied
	}
	v.Usage = usageOf(sa.account)
	return v
}

// dequeueLocked takes a queued child out of the queue, so no run will
// start it, and marks it as ending; the caller then ends it with
// endDequeued. It reports false when the child is not queued or another
// stop is already ending it.
func (m *Manager) dequeueLocked(sa *subagent) bool {
	if sa.status != tools.SubagentQueued || sa.stopping {
		return false
	}
	sa.stopping = true
	m.queue = slices.DeleteFunc(m.queue, func(q *subagent) bool { return q == sa })
	sa.ended = time.Now()
	sa.failure = &tools.Failure{Kind: tools.ErrCancelled, Message: "the subagent was cancelled before it started"}
	return true
}

func (m *Manager) endDequeued(sa *subagent) {
	m.end(sa, tools.SubagentEventCancelled, tools.SubagentCancelled, false)
}

// stop cancels a queued or running child and waits for its run to end.
func (m *Manager) stop(sa *subagent, closing bool) {
	m.mu.Lock()
	switch sa.status {
	case tools.SubagentQueued:
		dequeued := m.dequeueLocked(sa)
		m.mu.Unlock()
		if dequeued {
			m.endDequeued(sa)
		}
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

// removeSnapshot deletes an isolated child's workspace snapshot and its
// base; its Log, beside them, stays as evidence.
// useSnapshot returns sa's snapshot for one use (its run, a merge), to
// be given back with doneSnapshot. A snapshot let go between uses is read
// back from disk; load also reads one this process never held (a child
// restored from the Log). Nil, nil: sa has none to use.
func (m *Manager) useSnapshot(sa *subagent, load bool) (Snapshot, error) {
	m.mu.Lock()
	if sa.snapRemoved {
		m.mu.Unlock()
		return nil, errSnapshotRemoved
	}
	snap := sa.snap
	load = snap == nil && (load || sa.snapOnDisk) && m.cfg.LoadSnapshot != nil
	if snap != nil || load {
		// Counted before it is read back, so that dropMerged, which
		// removes only a snapshot nothing uses, cannot remove it under
		// the read.
		sa.snapUsers++
	}
	m.mu.Unlock()
	if !load {
		return snap, nil
	}
	loaded, err := m.cfg.LoadSnapshot(sa.workspace)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		sa.snapUsers--
		return nil, err
	}
	if sa.snap == nil {
		sa.snap = loaded
	}
	return sa.snap, nil
}

// errSnapshotRemoved: a workflow step's snapshot removed once its work was
// merged whole (dropMerged).
var errSnapshotRemoved = errors.New("its snapshot was removed once its work was merged whole")

// doneSnapshot ends a use of sa's snapshot (useSnapshot, or its run's
// after prepare made it). When no use is left and the snapshot can be
// read back (its manifest is saved beside it: Take, an overlay and a merge
// save it), it is let go: only children in use hold theirs in memory.
func (m *Manager) doneSnapshot(sa *subagent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sa.snap == nil {
		return
	}
	if sa.snapUsers > 0 {
		sa.snapUsers--
	}
	if sa.snapUsers == 0 && m.cfg.LoadSnapshot != nil {
		sa.snap, sa.snapOnDisk = nil, true
	}
}

func (m *Manager) removeSnapshot(sa *subagent) {
	remove := m.cfg.RemoveSnapshot
	if remove == nil {
		remove = func(dir string) error {
			return errors.Join(os.RemoveAll(dir), os.RemoveAll(merge.BaseDir(dir)))
		}
	}
	if err := remove(sa.workspace); err != nil {
		m.rt.log.Warn("removing a subagent snapshot", "subagent", sa.id, "err", err)
	}
}

// cancelChildren cancels every queued or running descendant of a session.
// Its queued children leave the queue first, all in one step: a running
// child that ends under this cancel frees a slot, and the scheduler must
// not start a sibling that is being cancelled with it.
func (m *Manager) cancelChildren(parentID string) {
	m.mu.Lock()
	mine := slices.Clone(m.children[parentID])
	var dequeued []*subagent
	for _, sa := range mine {
		if m.dequeueLocked(sa) {
			dequeued = append(dequeued, sa)
		}
	}
	m.mu.Unlock()
	for _, sa := range dequeued {
		m.endDequeued(sa)
	}
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

// CancelSubagent stops the current work of the Subagent whose own session
// is sessionID (and its descendants'), as a client's session/cancel on that
// child asks: its siblings and its parent go on, and the parent's model
// sees the child cancelled. The stop goes on in the background; the
// channel returned closes once it is over (the child's last events
// recorded and shown), and is nil when sessionID is no Subagent's session
// of this process.
func (r *Runtime) CancelSubagent(sessionID string) <-chan struct{} {
	m := r.subagents
	m.mu.Lock()
	var sa *subagent
	for _, c := range m.byID {
		if c.childSession == sessionID && !c.restored {
			sa = c
			break
		}
	}
	stopped := make(chan struct{})
	if sa == nil || m.closed { // shutdown stops it anyway
		m.mu.Unlock()
		if sa == nil {
			return nil
		}
		close(stopped)
		return stopped
	}
	m.wg.Add(1) // under the lock: shutdown waits for it
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		defer close(stopped)
		m.cancelChildren(sessionID)
		m.stop(sa, false)
	}()
	return stopped
}
