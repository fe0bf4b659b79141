package runtime

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/runtime/merge"
	"github.com/pixir-go/pixir/runtime/prompt"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/sandbox"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// DefaultMaxTurnRequests bounds model calls in one turn when Config leaves
// it zero.
const DefaultMaxTurnRequests = 50

// Config wires a Runtime.
type Config struct {
	// Home is $PIXIR_HOME: global state such as the index of workspaces.
	Home     string
	Provider provider.Provider
	// Model is the model new sessions use; Models the ones a client may
	// switch to (Model is always among them).
	Model  string
	Models []string
	// ProviderUse says which provider serves Model, as the session's
	// metadata records it (see Meta.Provider); zero records nothing.
	ProviderUse ProviderUse
	// ReasoningEffort is what sessions ask of reasoning models
	// (model_reasoning_effort); empty leaves it to the model. A Subagent's
	// agent may set its own.
	ReasoningEffort string
	// MaxTurnRequests bounds model calls per turn (max_turn_requests).
	MaxTurnRequests int
	Tools           []tools.Tool
	// Workflows offers run_workflow besides Tools: each call is bound to
	// the workflow ports of its session, its tool call and its turn.
	Workflows bool
	// Prompt configures the system prompt ([prompt] in config.toml).
	Prompt    prompt.Options
	Logger    *slog.Logger
	Subagents SubagentConfig
	// Sandbox runs the tools' commands; nil runs them with the default
	// sandbox configuration.
	Sandbox *sandbox.Sandbox
	// MCP is config.toml's MCP servers and timeouts.
	MCP MCPConfig
	// Version is Pixir's, told to MCP servers.
	Version string
	// Budget limits what sessions, Subagents and workflow runs spend.
	Budget BudgetConfig
	// ModelInfo describes models by name: context windows and prices.
	ModelInfo map[string]ModelInfo
	// Compaction says when and how long conversations are compacted.
	Compaction CompactionConfig
	// ContextWindow is the provider's context window as configured (or
	// known for it), for the models ModelInfo gives none: what compaction
	// weighs requests against. 0: unknown, and nothing is compacted until
	// a context-length error says it.
	ContextWindow int
}

// Runtime owns the live Sessions of one process.
type Runtime struct {
	cfg   Config
	tools *tools.Registry
	log   *slog.Logger

	specsOnce sync.Once
	specs     []provider.ToolSpec
	// kept is the last set of the runtime's tools made for a child's own
	// (Session.makeTools): every child of a workflow is offered the same
	// tools, and each made the same registry and specs again.
	kept atomic.Pointer[keptTools]

	subagents *Manager

	// facts are what was learned of models while running; hasPrices
	// whether any model has a price (computed once).
	facts      modelFacts
	pricedOnce sync.Once
	hasPrices  bool

	// childLogs makes children's Logs one at a time: they are made in
	// one folder, where concurrent makes contend in the kernel.
	childLogs sync.Mutex

	mu       sync.Mutex
	sessions map[string]*Session
	// opening holds a channel per session being opened, closed when the
	// open ends: a second open of it waits instead of racing for its Log.
	opening map[string]chan struct{}
}

// New makes a Runtime.
func New(cfg Config) *Runtime {
	if cfg.MaxTurnRequests <= 0 {
		cfg.MaxTurnRequests = DefaultMaxTurnRequests
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Model != "" && !slices.Contains(cfg.Models, cfg.Model) {
		cfg.Models = append([]string{cfg.Model}, cfg.Models...)
	}
	all := cfg.Tools
	if cfg.Workflows {
		// Unbound: its schema and description for the model; each call
		// runs one bound to its ports (turn.tool).
		all = append(slices.Clip(all), workflows.RunWorkflowTool(workflows.Ports{}))
	}
	rt := &Runtime{
		cfg:      cfg,
		tools:    tools.NewRegistry(all...),
		log:      cfg.Logger,
		sessions: map[string]*Session{},
		opening:  map[string]chan struct{}{},
	}
	rt.subagents = newManager(rt, cfg.Subagents)
	return rt
}

// newChildSession makes the session of a Subagent, id (a new one when
// empty), working in dir, with its
// Log in logDir (outside a snapshot, so the Log outlives it). It is owned by
// the Subagents Manager, not listed among the user's sessions.
// agent is what the child runs as, its ReasoningEffort already resolved.
// accounts are what its model calls count against.
func (r *Runtime) newChildSession(id, dir, logDir string, parent *Session, depth int, mode Mode, model string, agent AgentSpec, accounts budget.Accounts) (*Session, error) {
	shared := dir == parent.workspace.Root()
	ws := parent.workspace
	if !shared {
		var err error
		if ws, err = NewWorkspace(dir); err != nil {
			return nil, err
		}
	}
	if id == "" {
		id = newSessionID()
	}
	r.childLogs.Lock()
	if shared {
		// A shared child's folder is new (an isolated one holds its
		// snapshot already): make it in one call, not after a failed open
		// and a walk up (CreateLog still does when this fails).
		_ = os.Mkdir(logDir, 0o755)
	}
	log, err := CreateLog(filepath.Join(logDir, id+".ndjson"))
	r.childLogs.Unlock()
	if err != nil {
		if !shared {
			ws.Close()
		}
		return nil, fmt.Errorf("creating the subagent's log: %w", err)
	}
	now := time.Now().UTC()
	return r.childSession(ws, log, parent, agent, accounts, Meta{
		ID: id, Workspace: ws.Root(), ParentID: parent.ID(), Depth: depth, Mode: mode, Model: model, CreatedAt: now, UpdatedAt: now,
	}), nil
}

// childSession is the session of a Subagent of parent, with its workspace
// and Log open, as meta describes it.
func (r *Runtime) childSession(ws *Workspace, log *Log, parent *Session, agent AgentSpec, accounts budget.Accounts, meta Meta) *Session {
	child := &prompt.Child{Agent: agent.Name, DeveloperInstructions: agent.DeveloperInstructions,
		Depth: meta.Depth, MaxDepth: r.subagents.cfg.MaxDepth, ReadOnly: meta.Mode == ModeReadOnly}
	return &Session{rt: r, workspace: ws, log: log, depth: meta.Depth, child: child, project: parent.projectRoot(), effort: agent.ReasoningEffort,
		parent: parent, accounts: accounts, sharesWorkspace: ws == parent.workspace, meta: meta}
}

// wakeChildSession makes again the session of a Subagent that its Manager
// let go between runs (Manager.retire), working in dir with its Log at
// logPath: its History folded from the Log, as a resumed session's is, and
// the rest from what was kept.
func (r *Runtime) wakeChildSession(was *dormantSession, dir, logPath string, parent *Session, agent AgentSpec, accounts budget.Accounts) (*Session, error) {
	ws := parent.workspace
	if dir != ws.Root() {
		var err error
		if ws, err = NewWorkspace(dir); err != nil {
			return nil, err
		}
	}
	fold := &historyFold{log: r.log}
	log, report, err := OpenLog(logPath, fold.add)
	if err != nil {
		if ws != parent.workspace {
			ws.Close()
		}
		return nil, fmt.Errorf("opening the subagent's log: %w", err)
	}
	fold.noteIn(&report)
	if !report.Intact() {
		r.log.Info("subagent log was damaged; kept what was intact", "session", was.meta.ID, "log", logPath, "report", report.String())
	}
	agent.ReasoningEffort = was.effort
	s := r.childSession(ws, log, parent, agent, accounts, was.meta)
	s.history, s.histBytes, s.callIDs, s.interrupted = fold.history, historyBytes(fold.history), fold.callIDs, fold.unanswered()
	// The correction of the token estimate is the Log's, as a resumed
	// session's is (historyFold.calib).
	s.calib, s.allowAlways, s.sandboxTold, s.seen = fold.calib, was.allowAlways, was.sandboxTold, fold.seen
	if was.prompt != "" { // the prompt it had, so that providers' prompt caches hold
		s.promptOnce.Do(func() { s.prompt = was.prompt })
	}
	return s, nil
}

// SystemPrompt is the system prompt of a session in the workspace dir: what
// `pixir prompt` shows. With agent set, it is the prompt of a child of that
// agent spawned there (in the workspace itself, as a shared child works).
func (r *Runtime) SystemPrompt(dir, agent string) (prompt.Prompt, error) {
	ws, err := NewWorkspace(dir)
	if err != nil {
		return prompt.Prompt{}, err
	}
	defer ws.Close()
	var child *prompt.Child
	if agent != "" {
		spec := AgentSpec{Name: "default"}
		if r.cfg.Subagents.Agents != nil {
			cat, err := r.cfg.Subagents.Agents(ws.Root())
			if err != nil {
				return prompt.Prompt{}, err
			}
			s, ok := cat.Agent(agent)
			if err := brokenAgent(cat, agent); !ok && err != nil {
				return prompt.Prompt{}, fmt.Errorf("%w; fix the file (pixir agents lists its problems)", err)
			}
			if !ok {
				return prompt.Prompt{}, fmt.Errorf("there is no agent named %q; pixir agents lists them%s", agent, otherBroken(cat))
			}
			spec = s
		} else if agent != "default" {
			return prompt.Prompt{}, fmt.Errorf("there is no agent named %q", agent)
		}
		child = &prompt.Child{Agent: spec.Name, DeveloperInstructions: spec.DeveloperInstructions, Depth: 1,
			MaxDepth: r.subagents.cfg.MaxDepth, ReadOnly: spec.ReadOnly}
	}
	return r.buildPrompt(ws.Root(), ws.Root(), child), nil
}

// buildPrompt builds a session's system prompt, with the catalogue of
// the agents and workflow templates it may use (none for a child that
// cannot spawn).
func (r *Runtime) buildPrompt(workspace, project string, child *prompt.Child) prompt.Prompt {
	var catalogue string
	if child == nil || child.Depth < child.MaxDepth {
		catalogue = r.catalogue(project)
	}
	return prompt.Build(prompt.Input{
		Options:   r.cfg.Prompt,
		Workspace: workspace,
		Project:   project,
		Home:      r.cfg.Home,
		Now:       time.Now(),
		Catalogue: catalogue,
		Child:     child,
	})
}

// Models lists the models a session may use.
func (r *Runtime) Models() []string { return slices.Clone(r.cfg.Models) }

// ProviderName names the configured provider.
func (r *Runtime) ProviderName() string { return r.cfg.Provider.Name() }

func (r *Runtime) knowsModel(m string) bool { return slices.Contains(r.cfg.Models, m) }

// providerUse is what a session's metadata records of the provider, or
// nil when the configuration said nothing of it.
func (r *Runtime) providerUse() *ProviderUse {
	if r.cfg.ProviderUse == (ProviderUse{}) {
		return nil
	}
	u := r.cfg.ProviderUse
	return &u
}

// toolSpecs describes the tools to the model, built once.
func (r *Runtime) toolSpecs() []provider.ToolSpec {
	r.specsOnce.Do(func() {
		for _, t := range r.tools.All() {
			r.specs = append(r.specs, provider.ToolSpec{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()})
		}
	})
	return r.specs
}

// NewSession starts a session in the workspace dir, and its MCP servers.
func (r *Runtime) NewSession(dir string, opts ...SessionOption) (*Session, error) {
	ws, err := NewWorkspace(dir)
	if err != nil {
		return nil, err
	}
	if err := EnsureStateDir(ws.Root()); err != nil {
		ws.Close()
		return nil, err
	}
	r.recoverMerges(ws.Root())
	id := newSessionID()
	log, err := CreateLog(logPath(ws.Root(), id))
	if err != nil {
		ws.Close()
		return nil, logFileError(ws.Root(), logPath(ws.Root(), id), "creating session log", err)
	}
	now := time.Now().UTC()
	s := &Session{rt: r, workspace: ws, log: log, accounts: budget.Accounts{r.sessionAccount()}, meta: Meta{
		ID: id, Workspace: ws.Root(), Mode: ModeAuto, Model: r.cfg.Model, Provider: r.providerUse(), CreatedAt: now, UpdatedAt: now,
	}}
	// The workspace is indexed first, even when the metadata waits: a
	// session of a workspace the home has not seen would otherwise be
	// unlisted, and not deletable, if the process died before the store.
	r.rememberWorkspace(ws.Root())
	if o := sessionOptionsOf(opts); o.storeAfter != nil {
		s.storePending = true // before the store can run: set before anyone else sees s
		o.storeAfter(s.storeStart)
	} else if err := writeMeta(s.meta); err != nil {
		log.Close()
		ws.Close()
		return nil, fmt.Errorf("writing session metadata: %w", err)
	}
	r.mu.Lock()
	r.sessions[id] = s
	r.mu.Unlock()
	s.startMCP(r.mcpServersFor(opts))
	return s, nil
}

// WithStoreAfter lets a new session's metadata file be written later:
// NewSession hands its writing to after, which runs it once the caller has answered (ACP's
// session/new, whose reply an editor waits for before it can prompt).
// The Log is created, and locked, before NewSession returns. A process
// that dies before the store runs leaves a session with no turn: its
// metadata was the defaults (auto mode, the configured model), which
// OpenSession rebuilds from the Log alone, and ListSessions lists it by
// its Log.
func WithStoreAfter(after func(store func())) SessionOption {
	return func(o *sessionOptions) { o.storeAfter = after }
}

// storeStart writes what WithStoreAfter put off. A failure is logged, not
// returned: the reply is sent, and the Log alone is the session.
func (s *Session) storeStart() { s.warnMetaNotWritten(s.saveMetaUnlessClosed()) }

// Session returns a live session of this process.
func (r *Runtime) Session(id string) (*Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sessions[id]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("%w: %s is not open in this process; load or resume it first", ErrSessionNotFound, id)
}

// OpenSession makes a session stored in workspace dir live again, or
// returns it when it already is (see openSession), and starts its MCP
// servers: the configuration's and those of opts. A live session given no
// servers keeps the ones it runs; given other ones, it replaces them.
func (r *Runtime) OpenSession(id, dir string, visit func(Event), opts ...SessionOption) (*Session, LoadReport, error) {
	s, report, err := r.openLive(id, dir, visit)
	if err == nil && s.depth == 0 && (len(opts) > 0 || s.mcpAccess() == nil) {
		s.startMCP(r.mcpServersFor(opts))
	}
	return s, report, err
}

// openLive makes a session stored in workspace dir live again, or
// returns it when it already is. visit, when not nil, sees each canonical
// event as the Log is read, so a replay can stream; the interrupted
// results recorded on opening (see recordInterrupted) come last. The
// report says what of the Log was damaged: damaged lines are skipped,
// never fatal. A session another process has open is refused with
// ErrSessionInUse, naming that process.
func (r *Runtime) openLive(id, dir string, visit func(Event)) (*Session, LoadReport, error) {
	if !ValidSessionID(id) {
		return nil, LoadReport{}, fmt.Errorf("%w: %q is not a session id", ErrSessionNotFound, id)
	}
	for {
		r.mu.Lock()
		if s, ok := r.sessions[id]; ok {
			r.mu.Unlock()
			report, err := ScanLog(s.log.Path(), visit)
			return s, report, err
		}
		wait, busy := r.opening[id]
		if !busy {
			r.opening[id] = make(chan struct{})
			r.mu.Unlock()
			break
		}
		r.mu.Unlock()
		<-wait // another open of it is under way: then it is live, or failed
	}
	s, report, err := r.openSession(id, dir, visit)
	r.mu.Lock()
	if err == nil {
		r.sessions[id] = s
	}
	close(r.opening[id])
	delete(r.opening, id)
	r.mu.Unlock()
	if err != nil {
		return nil, report, err
	}
	detached := r.subagents.restore(s, s.restoreEvents)
	s.mu.Lock()
	s.restoreEvents = nil
	s.detachedNow, s.unrecorded = detached, slices.Clone(detached)
	for i := range s.unrecorded {
		s.unrecorded[i].Task = "" // written once, at the spawn
	}
	s.mu.Unlock()
	if err := s.recordDetached(); err != nil {
		r.log.Warn("recording the children a crash left detached", "session", id, "err", err)
	}
	return s, report, nil
}

func (r *Runtime) openSession(id, dir string, visit func(Event)) (*Session, LoadReport, error) {
	ws, err := NewWorkspace(dir)
	if err != nil {
		return nil, LoadReport{}, err
	}
	path := logPath(ws.Root(), id)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		ws.Close()
		return nil, LoadReport{}, fmt.Errorf("%w: no log for %s in %s", ErrSessionNotFound, id, ws.Root())
	}
	if err := EnsureStateDir(ws.Root()); err != nil {
		ws.Close()
		return nil, LoadReport{}, err
	}
	r.recoverMerges(ws.Root())
	fold := &historyFold{log: r.log}
	log, report, err := OpenLog(path, func(ev Event) {
		fold.add(ev)
		if visit != nil {
			visit(ev)
		}
	})
	if err != nil {
		ws.Close()
		return nil, report, logFileError(ws.Root(), path, "opening session log", err)
	}
	fold.noteIn(&report)
	if !report.Intact() {
		r.log.Info("session log was damaged; kept what was intact", "session", id, "log", path, "report", report.String())
	}
	meta, err := readMeta(ws.Root(), id)
	if err != nil {
		// The Log is the truth; metadata can be rebuilt.
		r.log.Warn("session metadata missing; rebuilding it", "session", id, "err", err)
		meta = Meta{ID: id, Workspace: ws.Root(), Mode: ModeAuto, Model: r.cfg.Model, CreatedAt: time.Now().UTC()}
	}
	var fallbacks []fallback
	if !r.knowsModel(meta.Model) {
		if meta.Model != "" {
			fallbacks = append(fallbacks, fallback{title: fmt.Sprintf("Model %q is not configured; the session uses %q", meta.Model, r.cfg.Model),
				detail: "The session was last run with a model this configuration does not list (model or models in config.toml); pick another with the model option."})
		}
		meta.Model = r.cfg.Model
	}
	if _, err := ParseMode(string(meta.Mode)); err != nil {
		fallbacks = append(fallbacks, fallback{title: fmt.Sprintf("Mode %q is unknown; the session is in auto mode", meta.Mode),
			detail: "Its stored metadata names a mode Pixir does not have; pick one with the mode option."})
		meta.Mode = ModeAuto
	}
	if meta.Title == "" {
		meta.Title = fold.title
	}
	// It goes on with this runtime's provider: that is what it last used
	// once its next turn saves the metadata.
	meta.Provider = r.providerUse()
	s := &Session{rt: r, workspace: ws, log: log, meta: meta, depth: meta.Depth, history: fold.history, histBytes: historyBytes(fold.history),
		interrupted: fold.unanswered(), restoreEvents: fold.subagents, accounts: budget.Accounts{r.sessionAccount()},
		callIDs: fold.callIDs, allowAlways: fold.allowAlways, fallbacks: fallbacks, calib: fold.calib, seen: fold.seen}
	// What it spent before counts against its budget still.
	s.accounts[0].Start(fold.spent())
	// A crash left calls without results: answer them now, so the next
	// model call is valid and the editor sees them ended. When the Log
	// cannot be written, the next turn tries again first.
	if err := s.recordInterrupted(visit); err != nil {
		r.log.Warn("recording the results of interrupted tool calls", "session", id, "err", err)
	}
	return s, report, nil
}

// recoverMerges finishes the merges a process left half-done in the
// workspace (it was killed while it applied one): each file is old or
// new until then, and the journal says which to write.
func (r *Runtime) recoverMerges(root string) {
	done, err := merge.Recover(context.Background(), root, func(holder string) func() {
		r.log.Warn("finishing a half-done merge waits for "+holder+" to end its merge or copy in the same workspace", "workspace", root)
		return nil
	})
	for _, id := range done {
		r.log.Info("finished a merge an earlier process left half-done", "workspace", root, "merge", id)
	}
	if err != nil {
		r.log.Warn("unfinished merges in the workspace", "workspace", root, "err", err)
	}
}

// CloseSession stops a live session and releases it. Its Log stays, so it
// can be loaded again.
func (r *Runtime) CloseSession(id string) error {
	r.mu.Lock()
	s, ok := r.sessions[id]
	delete(r.sessions, id)
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s is not open", ErrSessionNotFound, id)
	}
	s.close()
	return nil
}

// Close stops every Subagent and every live session, as a process does at
// exit. It does not close them the way session/close does: children's
// snapshots stay, since an isolated writer's work lives only there (there
// is no merge-back), and their Logs say how each one ended.
func (r *Runtime) Close() {
	r.subagents.shutdown()
	r.mu.Lock()
	live := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		live = append(live, s)
	}
	r.sessions = map[string]*Session{}
	r.mu.Unlock()
	for _, s := range live {
		s.stop()
	}
	merge.Wait() // the versions finished merges replaced are freed
}

// ListSessions lists stored sessions, newest first: of workspace dir, or of
// every workspace this Pixir home has seen when dir is empty.
func (r *Runtime) ListSessions(dir string) ([]Meta, error) {
	var workspaces []string
	if dir != "" {
		ws, err := NewWorkspace(dir)
		if err != nil {
			return nil, err
		}
		ws.Close()
		workspaces = []string{ws.Root()}
	} else {
		workspaces = r.knownWorkspaces()
	}
	var out []Meta
	for _, w := range workspaces {
		entries, err := os.ReadDir(SessionsDir(w))
		if err != nil {
			continue
		}
		for _, e := range entries {
			id, ok := strings.CutSuffix(e.Name(), ".ndjson")
			if !ok {
				continue
			}
			if s, err := r.Session(id); err == nil {
				out = append(out, s.Meta())
				continue
			}
			m, err := readMeta(w, id)
			if err != nil {
				m = Meta{ID: id, Workspace: w}
			}
			if m.ParentID != "" {
				continue // a Subagent's session, listed by its parent
			}
			if info, err := e.Info(); err == nil && info.ModTime().After(m.UpdatedAt) {
				m.UpdatedAt = info.ModTime().UTC()
			}
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	return out, nil
}

func (r *Runtime) workspacesFile() string {
	if r.cfg.Home == "" {
		return ""
	}
	return filepath.Join(r.cfg.Home, "workspaces")
}

// rememberWorkspace adds a workspace to the home's index so that listing
// without a cwd finds its sessions.
func (r *Runtime) rememberWorkspace(root string) {
	path := r.workspacesFile()
	if path == "" || slices.Contains(r.knownWorkspaces(), root) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		r.log.Warn("cannot create pixir home", "err", err)
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		r.log.Warn("cannot index workspace", "err", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(root + "\n"); err != nil {
		r.log.Warn("cannot index workspace", "err", err)
	}
}

func (r *Runtime) knownWorkspaces() []string {
	path := r.workspacesFile()
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out
}
