package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/pixir-go/pixir/budget"

	"github.com/pixir-go/pixir/runtime/prompt"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
)

// Mode is a permission mode.
type Mode string

const (
	ModeAuto     Mode = "auto"
	ModeAsk      Mode = "ask"
	ModeReadOnly Mode = "read_only"
)

// Modes lists the permission modes in the order they are offered.
var Modes = []Mode{ModeAuto, ModeAsk, ModeReadOnly}

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown mode %q: want one of auto, ask, read_only", s)
}

// StopReason says why a turn ended (ACP StopReason values).
type StopReason string

const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	// StopMaxTokens: a budget is spent, so the next model call was
	// refused, or the token limit of one answer cut the last one off
	// (ACP's max_tokens).
	StopMaxTokens StopReason = "max_tokens"
	StopCancelled StopReason = "cancelled"
)

// Errors a caller can tell apart.
var (
	ErrBusy            = errors.New("a turn is already running in this session; wait for it to end or cancel it with session/cancel")
	ErrSessionNotFound = errors.New("session not found")
	ErrSessionClosed   = errors.New("session is closed")
)

// Meta is what is known of a Session beside its Log, kept in
// <workspace>/.pixir/sessions/<id>.json.
type Meta struct {
	ID        string `json:"session_id"`
	Workspace string `json:"workspace"`
	// ParentID and Depth are set on the session of a Subagent.
	ParentID string `json:"parent_id,omitempty"`
	Depth    int    `json:"depth,omitempty"`
	Title    string `json:"title,omitempty"`
	Mode     Mode   `json:"mode"`
	Model    string `json:"model"`
	// Provider is the provider that served Model when the session last
	// ran (nil in metadata older versions wrote): pixir resume goes on
	// with it, not with what the environment chooses now.
	Provider  *ProviderUse `json:"provider,omitempty"`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
	// Count is how many turns the Log held at its size when the metadata
	// was saved; nil in metadata older versions wrote (the Log is
	// counted whole then).
	Count *LogCount `json:"log_count,omitempty"`
}

// ProviderUse is the provider a session ran with, as chosen by flags,
// environment, profile and config.toml: enough to choose it again.
type ProviderUse struct {
	Name string `json:"name"`
	// Profile is the [profiles.NAME] table it came from, if any.
	Profile string `json:"profile,omitempty"`
	BaseURL string `json:"base_url,omitempty"`
	// Script is the scripted provider's script file ("" for its default).
	Script string `json:"script,omitempty"`
}

// ReadMeta reads the stored metadata of session id in workspace.
func ReadMeta(workspace, id string) (Meta, error) { return readMeta(workspace, id) }

// Session is one conversation in one workspace. Its History is a fold over
// its Log; at most one Turn runs at a time.
type Session struct {
	rt        *Runtime
	workspace *Workspace
	log       *Log

	// depth is 0 for a user's session, and one more than its parent's for
	// a Subagent's; system is its agent's developer instructions.
	depth int
	// child says what a Subagent is, for its prompt; project is the
	// workspace of the user's session it descends from (empty for that
	// session itself).
	child   *prompt.Child
	project string
	// promptOnce builds the system prompt at the first model call: it
	// stays the same for the session's life, so that providers' prompt
	// caches hold.
	promptOnce sync.Once
	prompt     string
	// childPrompts are the system prompts of this session's children
	// that share its workspace, by what makes them differ
	// (childPromptKey): a workflow's thousand children in one workspace
	// read the project's files once, not each. (An isolated child's
	// prompt names its own snapshot: nothing to share.)
	childPrompts map[childPromptKey]string
	// effort is the reasoning effort its model calls ask for; a user's
	// session takes the runtime's.
	effort string

	// parent is the session a Subagent's session belongs to (nil for a
	// user's session); accounts are what its model calls count against:
	// its own first (the session's, or the Subagent's), then its workflow
	// run's, then its ancestors'.
	parent   *Session
	accounts budget.Accounts

	metaMu sync.Mutex // held while the metadata is saved
	// storePending: the metadata's first write was put off
	// (WithStoreAfter) and has not run yet (guarded by metaMu).
	storePending bool
	mu           sync.Mutex
	meta         Meta
	observer     Observer // sees events that happen outside a turn
	// descendants sees the events of the sessions descending from this
	// one (SetDescendantObserver).
	descendants Observer
	// fallbacks are the settings of the stored session that fell back to
	// defaults when it was opened (SetupNotices).
	fallbacks []fallback
	// context and window are the tokens of the last model call and the
	// model's context size, for the usage shown to the user.
	context int64
	window  int
	// histBytes is what History weighs in a request (kept as messages are
	// appended, so no model call adds it up again); calib corrects the
	// estimate of tokens by what the provider counted (0: none yet).
	histBytes int
	calib     float64
	history   []provider.Message
	// pending are the calls of the last model response without a result;
	// interrupted, calls that must be answered in the Log as interrupted
	// (recordInterrupted).
	pending     []openCall
	interrupted []openCall
	// restoreEvents are the subagent events read on opening, for the
	// Subagents Manager; dropped once it has them.
	restoreEvents []Event
	// detachedNow are the children this process found detached when it
	// opened the session (their end was not in the Log); unrecorded, the
	// events that say so not in the Log yet (recordDetached).
	detachedNow []SubagentEventData
	unrecorded  []SubagentEventData
	// recording keeps two recordDetached apart (the session's opening and
	// a turn that started meanwhile), so each end is written once.
	recording   sync.Mutex
	allowAlways map[string]bool
	// seen is what the model has seen of each file (tools.SeenFiles), by
	// absolute path: folded from the Log's tool results on opening.
	seen       map[string]tools.Seen
	turnCancel context.CancelFunc // non-nil while a turn runs
	turnDone   chan struct{}
	// turnCancelled is set once the running turn was told to stop: a
	// prompt then waits for it to end instead of being refused.
	turnCancelled bool
	// callIDs are the tool call ids of the session so far: a provider may
	// reuse its ids in later turns, and the session's must be unique.
	callIDs  map[string]bool
	closed   bool
	released bool // files closed by release
	// sharesWorkspace is set on a Subagent in its parent's workspace: the
	// parent owns that workspace's handle.
	sharesWorkspace bool
	// commands holds a Subagent's commands to its posture (nil for a
	// user's session); sandboxTold is set once the session was told its
	// commands cannot be sandboxed.
	commands    *childCommands
	sandboxTold bool
	// estimateTold is set once the session was told the model server
	// reports no usage, so its calls are estimated (estimatedUsage).
	estimateTold bool
	// keep and writes are what a Subagent may be offered and may write
	// (its profile, posture and step, and its parent's): its own children
	// are held to them too. nil and zero for a user's session.
	keep   func(tools.Tool) bool
	writes writeLimit

	// own is the tools of a session with tools of its own (a Subagent's:
	// its profile and posture narrow them, a workflow step adds
	// report_checkpoint), set before the first turn; nil means the
	// runtime's, so a user's session shares its cached specs. release
	// drops them (a finished child kept for send_input held a registry and
	// a list of specs each: a quarter of a long workflow's live heap) and
	// reacquire makes them again from offered, which is set with them and
	// never changes.
	own     atomic.Pointer[ownTools]
	offered struct {
		keep  func(tools.Tool) bool
		extra []tools.Tool
		set   bool
	}

	// mcp is the MCP servers the session may use (mcp.go); nil when it
	// has none. Guarded by mu.
	mcp *mcpAccess
}

// offerTools sets the tools of a Subagent's session: the runtime's that
// keep allows (nil keeps them all), then extra. The runtime's tools win on
// a name clash (the extra is dropped): a step's tool must not shadow a
// built-in whose posture the permission rules know. Only the tools offered
// can be called: the model is told of no other, and a call to another is
// an unknown tool.
func (s *Session) offerTools(keep func(tools.Tool) bool, extra []tools.Tool) {
	if keep == nil && len(extra) == 0 {
		return
	}
	s.offered.keep, s.offered.extra, s.offered.set = keep, extra, true
	s.own.Store(s.makeTools())
}

// ownTools are a session's own tools and their specs.
type ownTools struct {
	registry *tools.Registry
	specs    []provider.ToolSpec
}

// makeTools makes the tools offerTools was given.
func (s *Session) makeTools() *ownTools {
	keep, extra := s.offered.keep, s.offered.extra
	// Every child of a workflow comes through here: one walk of the
	// runtime's tools, their registry and specs made once for the children
	// that keep the same ones (rt.keptTools), and the extras' names
	// checked against the runtime's (which a keep may drop).
	base := s.rt.tools.Tools()
	var kept []bool
	for i, t := range base {
		if keep == nil || keep(t) {
			if kept == nil {
				kept = make([]bool, len(base))
			}
			kept[i] = true
		}
	}
	var own []tools.Tool
	var extraSpecs []provider.ToolSpec
	for i, t := range extra {
		name := t.Name()
		_, builtin := s.rt.tools.Get(name)
		if builtin || slices.ContainsFunc(extra[:i], func(o tools.Tool) bool { return o.Name() == name }) {
			s.rt.log.Warn("an extra tool is named like another; dropped", "session", s.ID(), "tool", name)
			continue
		}
		own = append(own, t)
		extraSpecs = append(extraSpecs, provider.ToolSpec{Name: name, Description: t.Description(), Parameters: t.Schema()})
	}
	shared := s.rt.keptTools(kept)
	return &ownTools{registry: shared.registry.With(own...), specs: s.rt.specsOf(shared, extraSpecs)}
}

// keptTools are the runtime's tools that kept marks, as a registry and
// their specs. Never changed once made: the children that share them
// only read them.
type keptTools struct {
	kept     []bool
	registry *tools.Registry
	specs    []provider.ToolSpec
	// last is the last list of specs with extras made from these
	// (specsOf).
	last atomic.Pointer[childSpecs]
}

// keptTools is the runtime's tools that kept marks: those made for the
// last child when it kept the same ones (every child of a workflow's
// agent keeps the same).
func (r *Runtime) keptTools(kept []bool) *keptTools {
	if last := r.kept.Load(); last != nil && slices.Equal(last.kept, kept) {
		return last
	}
	base, baseSpecs := r.tools.Tools(), r.toolSpecs()
	k := &keptTools{kept: kept, specs: make([]provider.ToolSpec, 0, len(base))}
	var ts []tools.Tool
	for i, keep := range kept {
		if keep {
			ts = append(ts, base[i])
			k.specs = append(k.specs, baseSpecs[i])
		}
	}
	k.registry = tools.NewRegistry(ts...)
	r.kept.Store(k)
	return k
}

// childSpecs is a list of tool specs with the extras' specs it was made
// with. Never changed once made: the children that share it only read
// it.
type childSpecs struct {
	extra []provider.ToolSpec
	specs []provider.ToolSpec
}

// specsOf is the specs of k's tools, then extra: the last child's list
// when it is the same.
func (r *Runtime) specsOf(k *keptTools, extra []provider.ToolSpec) []provider.ToolSpec {
	if len(extra) == 0 {
		return k.specs
	}
	if last := k.last.Load(); last != nil && slices.EqualFunc(last.extra, extra, sameSpec) {
		return last.specs
	}
	specs := append(slices.Clip(k.specs), extra...)
	k.last.Store(&childSpecs{extra: extra, specs: specs})
	return specs
}

func sameSpec(a, b provider.ToolSpec) bool {
	return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.Parameters, b.Parameters)
}

// toolsNow is this session's own tools, made for the asking while it is
// released; nil for a session that has none (the runtime's).
func (s *Session) toolsNow() *ownTools {
	if own := s.own.Load(); own != nil {
		return own
	}
	if s.offered.set {
		return s.makeTools()
	}
	return nil
}

// registry is the tools this session's turns can run.
func (s *Session) registry() *tools.Registry {
	if own := s.toolsNow(); own != nil {
		return own.registry
	}
	return s.rt.tools
}

// toolSpecs describes this session's tools to the model.
func (s *Session) toolSpecs() []provider.ToolSpec {
	if own := s.toolsNow(); own != nil {
		return own.specs
	}
	return s.rt.toolSpecs()
}

// projectRoot is the folder whose repository and instruction files apply
// to this session.
func (s *Session) projectRoot() string {
	if s.project != "" {
		return s.project
	}
	return s.workspace.Root()
}

// ID is the session id.
func (s *Session) ID() string { return s.meta.ID }

// Workspace is the session's confined workspace.
func (s *Session) Workspace() *Workspace { return s.workspace }

// Meta returns a copy of the session's metadata.
func (s *Session) Meta() Meta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta
}

// SetTitle names the session for people (pixir sessions, session/list)
// and records the change; a turn titles an untitled session from its
// prompt, and pixir run --workflow names its session after the workflow.
func (s *Session) SetTitle(title string) error {
	return s.updateMeta(func(m *Meta) { m.Title = title })
}

// Mode is the current permission mode.
func (s *Session) Mode() Mode { return s.Meta().Mode }

// heldMode is the mode this session's calls are held to now: its own,
// narrowed by each of its ancestors' as they are now. A user who switches
// a session to read_only (or ask) while its children run means them too:
// a child that started in auto must not go on changing the workspace, nor
// a grandchild.
func (s *Session) heldMode() Mode {
	m := s.Mode()
	for p := s.parent; p != nil; p = p.parent {
		m = narrower(m, p.Mode())
	}
	return m
}

// narrower is the narrower of two modes: read_only, then ask, then auto.
func narrower(a, b Mode) Mode {
	rank := func(m Mode) int {
		switch m {
		case ModeReadOnly:
			return 0
		case ModeAsk:
			return 1
		}
		return 2
	}
	if rank(b) < rank(a) {
		return b
	}
	return a
}

// Model is the current model.
func (s *Session) Model() string { return s.Meta().Model }

// SetMode changes the permission mode; it applies from the next tool call.
func (s *Session) SetMode(m Mode) error {
	if _, err := ParseMode(string(m)); err != nil {
		return err
	}
	return s.updateMeta(func(meta *Meta) { meta.Mode = m })
}

// SetModel changes the model used from the next model call.
func (s *Session) SetModel(model string) error {
	if !s.rt.knowsModel(model) {
		return fmt.Errorf("unknown model %q: want one of %s", model, strings.Join(s.rt.Models(), ", "))
	}
	return s.updateMeta(func(m *Meta) { m.Model = model })
}

// LogPath is where the session's Log is.
func (s *Session) LogPath() string { return s.log.Path() }

// Events reads the session's canonical events back from its Log.
func (s *Session) Events() ([]Event, LoadReport, error) {
	return ReadLog(s.log.Path())
}

// Cancel stops the running turn, if any, and waits for it to end.
func (s *Session) Cancel() {
	s.mu.Lock()
	cancel, done := s.turnCancel, s.turnDone
	s.turnCancelled = cancel != nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// CancelAsync stops the running turn, if any, and every running
// descendant Subagent, without waiting for the turn.
func (s *Session) CancelAsync() {
	s.mu.Lock()
	cancel := s.turnCancel
	s.turnCancelled = cancel != nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.rt.subagents.cancelChildrenAsync(s.ID())
}

// SetObserver sets who sees the events that happen outside a turn, such as
// the progress of Subagents that outlive the turn that spawned them.
func (s *Session) SetObserver(obs Observer) {
	s.mu.Lock()
	s.observer = obs
	s.mu.Unlock()
}

// SetDescendantObserver sets who sees every event of this session's
// descendants (its Subagents' sessions, theirs, and so on), each under its
// own session id: a client that shows children as sessions of their own.
func (s *Session) SetDescendantObserver(obs Observer) {
	s.mu.Lock()
	s.descendants = obs
	s.mu.Unlock()
}

// descendantObserver is the descendant observer of the user's session this
// session descends from, or nil.
func (s *Session) descendantObserver() Observer {
	for p := s.parent; p != nil; p = p.parent {
		p.mu.Lock()
		obs := p.descendants
		p.mu.Unlock()
		if obs != nil {
			return obs
		}
	}
	return nil
}

// emitBackground records an event from outside the turn loop and shows it
// to the session's observer (a Subagent's session: its ancestors'
// descendant observer).
func (s *Session) emitBackground(typ EventType, data any) error {
	obs := s.backgroundObserver()
	err := s.emit(obs, typ, data)
	if errors.Is(err, ErrLogWrite) && obs != nil {
		// The Log is full: the event is not recorded, but whoever watches
		// is still told (a Subagent's end must not leave its call running
		// forever in the editor). A reload shows what the Log holds: a
		// child whose end is not in it is detached.
		if raw, _, encErr := encodeEventData(data); encErr == nil {
			obs(Event{ID: uuid.Must(uuid.NewV7()).String(), SessionID: s.ID(), TS: time.Now().UTC(), Type: typ, Data: raw})
		}
	}
	return err
}

// emitBackgroundGroup is emitBackground of events produced together: one
// append of the Log (Session.emitGroup), whole or not at all.
func (s *Session) emitBackgroundGroup(group []eventOf) error {
	obs := s.backgroundObserver()
	err := s.emitGroup(obs, group)
	if errors.Is(err, ErrLogWrite) && obs != nil {
		// As emitBackground: not recorded, but whoever watches is told.
		for _, e := range group {
			if raw, _, encErr := encodeEventData(e.data); encErr == nil {
				obs(Event{ID: uuid.Must(uuid.NewV7()).String(), SessionID: s.ID(), TS: time.Now().UTC(), Type: e.typ, Data: raw})
			}
		}
	}
	return err
}

// backgroundObserver is who is shown events recorded outside the turn
// loop: the session's observer, or a Subagent's ancestors' descendant
// observer.
func (s *Session) backgroundObserver() Observer {
	s.mu.Lock()
	obs := s.observer
	s.mu.Unlock()
	if obs == nil && s.parent != nil {
		obs = s.descendantObserver()
	}
	return obs
}

// DetachedSubagents lists the children this process found detached when
// it opened the session: the Log had no end of theirs, and now has their
// detached end (or will before the next turn, when it could not be
// written). A child a load before this one found detached is not in it:
// the Log says so already.
func (s *Session) DetachedSubagents() []SubagentEventData {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.detachedNow)
}

// recordDetached records in the Log, once and durably, the end of every
// child the process that ran it left without one: a subagent_event failed
// with status detached and the reason, so that what reads the Log alone
// (pixir inspect, a later load) sees it ended. It runs when a session
// opens and before each turn; what it could not record (the Log cannot be
// written) stays for the next time.
func (s *Session) recordDetached() error {
	s.recording.Lock()
	defer s.recording.Unlock()
	s.mu.Lock()
	ds := slices.Clone(s.unrecorded)
	s.mu.Unlock()
	if len(ds) == 0 {
		return nil
	}
	for _, d := range ds {
		if err := s.emit(nil, EventSubagent, d); err != nil {
			return err
		}
		// By id: what is recorded leaves the list, whatever else changed
		// in it meanwhile.
		s.mu.Lock()
		s.unrecorded = slices.DeleteFunc(s.unrecorded, func(u SubagentEventData) bool { return u.SubagentID == d.SubagentID })
		s.mu.Unlock()
	}
	return s.log.Sync()
}

// release closes the files a Subagent's session holds between its runs, so
// thousands of finished children hold no descriptors; reacquire reopens
// them for a next run.
func (s *Session) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return
	}
	s.released = true
	s.own.Store(nil) // made again if it runs again (reacquire)
	if err := s.log.Close(); err != nil {
		s.rt.log.Warn("closing log", "session", s.ID(), "err", err)
	}
	if !s.sharesWorkspace {
		if err := s.workspace.Close(); err != nil {
			s.rt.log.Warn("closing workspace", "session", s.ID(), "err", err)
		}
	}
}

// dormantSession is what a finished Subagent's session keeps beside its
// Log once its Manager lets the session go (Manager.retire): what a next
// run (send_input) needs and the Log does not hold. Its History is folded
// from the Log again, its tools made again from its subagent's record
// (Runtime.wakeChildSession).
type dormantSession struct {
	meta   Meta
	prompt string // its system prompt, once built
	effort string
	// allowAlways and sandboxTold: what the user allowed for the rest of
	// the session, and whether it was told its commands are not sandboxed.
	allowAlways map[string]bool
	sandboxTold bool
}

// dormant is what this session keeps when it is let go between runs, or
// false while it cannot be: a turn runs, or calls of its last answer have
// no result yet.
func (s *Session) dormant() (*dormantSession, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turnCancel != nil || len(s.pending) > 0 || len(s.interrupted) > 0 {
		return nil, false
	}
	return &dormantSession{meta: s.meta, prompt: s.prompt, effort: s.effort, allowAlways: s.allowAlways, sandboxTold: s.sandboxTold}, true
}

func (s *Session) reacquire() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.released {
		return nil
	}
	ws := s.workspace
	if !s.sharesWorkspace {
		var err error
		if ws, err = NewWorkspace(s.workspace.Root()); err != nil {
			return err
		}
	}
	log, _, err := OpenLog(s.log.Path(), nil)
	if err != nil {
		if !s.sharesWorkspace {
			ws.Close()
		}
		return err
	}
	s.workspace, s.log, s.released = ws, log, false
	if s.offered.set {
		s.own.Store(s.makeTools())
	}
	return nil
}

// close cancels any turn, closes its Subagents and closes the Log.
// stop ends a session at process exit: no turn runs on, its files are
// released, and its children's snapshots are left as evidence.
func (s *Session) stop() {
	s.Cancel()
	s.markClosed()
	s.closeMCP()
	s.writeBack()
	s.release()
}

func (s *Session) close() {
	s.Cancel()
	s.rt.subagents.closeChildren(s.ID())
	s.markClosed()
	s.closeMCP()
	s.writeBack()
	s.release()
}

// writeBack writes the Log back, as reattachLog does before a turn, when
// the session ends: .pixir removed during its last turn (or after it) lost
// that turn, and every one before it, once the process ended.
func (s *Session) writeBack() {
	s.mu.Lock()
	released := s.released
	s.mu.Unlock()
	if released {
		return
	}
	if err := s.reattachLog(); err != nil {
		s.rt.log.Warn("writing back the session's Log at its end", "session", s.ID(), "err", err)
	}
}

// SessionsDir is where the Logs and metadata of a workspace's sessions
// are.
func SessionsDir(workspace string) string {
	return filepath.Join(workspace, StateDir, "sessions")
}

func logPath(workspace, id string) string {
	return filepath.Join(SessionsDir(workspace), id+".ndjson")
}

func metaPath(workspace, id string) string {
	return filepath.Join(SessionsDir(workspace), id+".json")
}

// reattachLog writes the session's Log back when its file was removed
// while the session was open (see Log.Reattach), before a turn appends to
// it, with the state folder's .gitignore: a git clean -fdx or an rm -r of
// .pixir between two prompts lost every turn, the last ones included,
// when the process ended. A Subagent's Log, beside its snapshot, is left
// as it is.
func (s *Session) reattachLog() error {
	if s.depth > 0 {
		return nil
	}
	// A workspace removed whole is not made again for its Log: the user
	// deleted the project, and the write-back at the session's end would
	// bring the folder back with no action of theirs.
	if _, err := os.Lstat(s.workspace.Root()); errors.Is(err, fs.ErrNotExist) {
		return &LogWriteError{Path: s.log.Path(), Err: fmt.Errorf("the workspace %s was removed while the session was open; its Log is not written back", s.workspace.Root())}
	}
	back, err := s.log.Reattach()
	if err != nil || !back {
		return err
	}
	if err := EnsureStateDir(s.workspace.Root()); err != nil {
		s.rt.log.Warn("writing back the state folder's .gitignore", "session", s.ID(), "err", err)
	}
	s.rt.log.Warn("the session's Log was removed while the session was open; it was written back from the open file", "session", s.ID(), "log", s.log.Path())
	return nil
}

// logCount is the Log's count of turns for the metadata.
func (s *Session) logCount() *LogCount {
	if s.log == nil {
		return nil
	}
	c := s.log.Count()
	return &c
}

// saveMeta writes the metadata as it is.
func (s *Session) saveMeta() error { return s.updateMeta(func(*Meta) {}) }

// saveMetaUnlessClosed writes the metadata as it is, unless the session
// was closed (or deleted) before: close marks it under metaMu, so a
// delete's removal of the file cannot be undone by this write.
func (s *Session) saveMetaUnlessClosed() error {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	s.mu.Lock()
	m, closed := s.meta, s.closed
	s.mu.Unlock()
	s.storePending = false
	if closed || s.depth > 0 {
		return nil
	}
	return writeMeta(m)
}

// markClosed says no turn runs and no metadata is saved from now on. A
// session closed before its put-off first write ran (session/close sent
// at once after session/new's answer, which the write follows) writes it
// now: a session closed cleanly has its metadata beside its Log. A delete
// closes the session before it removes the files.
func (s *Session) markClosed() {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	s.mu.Lock()
	m, write := s.meta, s.storePending && !s.closed && s.depth == 0
	s.closed = true
	s.mu.Unlock()
	s.storePending = false
	if write {
		s.warnMetaNotWritten(writeMeta(m))
	}
}

// warnMetaNotWritten logs a failed write of metadata whose caller has
// answered already: the Log alone is the session then.
func (s *Session) warnMetaNotWritten(err error) {
	if err != nil {
		s.rt.log.Warn("writing session metadata; it is rebuilt from the Log when the session is loaded", "session", s.ID(), "err", err)
	}
}

// updateMeta changes the metadata only once the change is saved
// (atomically: temp file and rename): a failed save leaves the session as
// it was, so what a client is told matches what is stored. A Subagent's
// session saves nothing: its parent's Log describes it.
func (s *Session) updateMeta(change func(*Meta)) error {
	s.metaMu.Lock() // saves in the order of the changes
	defer s.metaMu.Unlock()
	s.mu.Lock()
	m := s.meta
	s.mu.Unlock()
	change(&m)
	m.UpdatedAt = time.Now().UTC()
	if s.depth == 0 {
		m.Count = s.logCount()
		// .pixir removed while the session is open (a git clean -fdx): the
		// Log is written back first, as before a turn, so that the change
		// is saved beside it, not refused for a missing folder.
		if err := s.reattachLog(); err != nil {
			return fmt.Errorf("saving the session's metadata failed, so nothing was changed: %w", err)
		}
		if err := writeMeta(m); err != nil {
			return fmt.Errorf("saving the session's metadata failed, so nothing was changed: %w", err)
		}
	}
	s.mu.Lock()
	change(&s.meta) // onto the current state: a turn may have titled it meanwhile
	s.meta.UpdatedAt, s.meta.Count = m.UpdatedAt, m.Count
	s.mu.Unlock()
	return nil
}

func writeMeta(m Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	path := metaPath(m.Workspace, m.ID)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		// A write a full disk cut short leaves no temporary file behind:
		// nothing else would ever remove it (pixir gc takes Logs and
		// their metadata).
		_ = os.Remove(tmp)
	}
	return err
}

func readMeta(workspace, id string) (Meta, error) {
	b, err := os.ReadFile(metaPath(workspace, id))
	if err != nil {
		return Meta{}, err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, fmt.Errorf("session metadata %s: %w", metaPath(workspace, id), err)
	}
	return m, nil
}

// newSessionID is random from its first character (UUIDv4), so a few of
// them tell sessions apart: a person types a short start of it (pixir
// resume, pixir inspect). Sessions made with time-ordered ids (UUIDv7)
// before keep them; nothing orders sessions by id.
//
// Its bits come from math/rand/v2 (the runtime's ChaCha8, seeded from the
// operating system at start), not crypto/rand: an id names a file and is
// no secret (CreateLog's O_EXCL refuses a repeat), and crypto/rand's first
// read sets up the process's kernel random state, which made session/new
// pay about 0.5 ms at every start (docs/BENCHMARKS.md, Start-up).
func newSessionID() string {
	var u uuid.UUID
	binary.LittleEndian.PutUint64(u[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // the RFC 9562 variant
	return u.String()
}

// ValidSessionID reports whether id can name a session: ids are file
// names, so only letters, digits, '-' and '_'.
func ValidSessionID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		switch {
		case r == '-', r == '_', r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		default:
			return false
		}
	}
	return true
}

// emit stamps and persists a canonical event, then shows it to the
// observer. Ephemeral events are only shown.
func (s *Session) emit(obs Observer, typ EventType, data any) error {
	raw, pieces, err := encodeEventData(data)
	if err != nil {
		return fmt.Errorf("encoding %s event: %w", typ, err)
	}
	ev := Event{SessionID: s.ID(), TS: time.Now().UTC(), Type: typ, Data: raw, pieces: pieces, value: data}
	if typ.Canonical() {
		if err := s.log.Append(&ev); err != nil {
			return err
		}
	} else {
		ev.ID = uuid.Must(uuid.NewV7()).String()
	}
	if obs != nil {
		obs(ev)
	}
	return nil
}

// eventOf is one event of a group: its type and data.
type eventOf struct {
	typ  EventType
	data any
}

// emitGroup records canonical events produced together with one write of
// the Log (see Log.AppendGroup), then shows them to obs in order: all of
// them or, when the write fails, none.
func (s *Session) emitGroup(obs Observer, group []eventOf) error {
	evs := make([]Event, len(group))
	ptrs := make([]*Event, len(group))
	for i, e := range group {
		if !e.typ.Canonical() {
			return fmt.Errorf("a group of events is recorded in the Log, and %s events are live only", e.typ)
		}
		raw, pieces, err := encodeEventData(e.data)
		if err != nil {
			return fmt.Errorf("encoding %s event: %w", e.typ, err)
		}
		evs[i] = Event{SessionID: s.ID(), TS: time.Now().UTC(), Type: e.typ, Data: raw, pieces: pieces, value: e.data}
		ptrs[i] = &evs[i]
	}
	if err := s.log.AppendGroup(ptrs); err != nil {
		return err
	}
	if obs != nil {
		for _, ev := range evs {
			obs(ev)
		}
	}
	return nil
}

// modelText is the tool result as the model reads it: the envelope as
// json.Marshal writes it, which is byte for byte the "result" of the
// tool_result event in the Log (the event is encoded by json.Marshal too).
// So a History folded from the Log (modelTextRaw: the bytes as they are) is
// the History the live turn built (provider prompt caches rely on it),
// without decoding and encoding every result again on a load.
func modelText(r tools.Result) string {
	b, err := json.Marshal(r)
	if err != nil {
		return unencodableResult
	}
	return string(b)
}

const unencodableResult = `{"ok":false,"error":{"kind":"internal","message":"the tool result could not be encoded"}}`

// modelTextRaw is modelText of a result as the Log holds it.
func modelTextRaw(raw []byte) string {
	if len(raw) == 0 {
		return unencodableResult
	}
	return string(raw)
}

func titleFrom(text string) string {
	const most = 80
	// Only the first words count: a prompt can be a pasted file of
	// millions of words, or one word of millions of bytes. The words are
	// gathered on the stack, and only the title is allocated (every child
	// of a workflow has one).
	var buf [2 * (most + 2) * utf8.UTFMax]byte
	b := buf[:0]
	runes := 0 // in b, counted as it grows (a workflow step's prompt is many words)
	for word := range strings.FieldsSeq(text) {
		if len(b) > 0 {
			b = append(b, ' ')
			runes++
		}
		word = word[:min(len(word), (most+2)*utf8.UTFMax)]
		b = append(b, word...)
		if runes += utf8.RuneCountInString(word); runes > most {
			break
		}
	}
	if runes <= most {
		return string(b)
	}
	// string([]rune(b)[:most-1]) + "…", without the runes: an invalid
	// byte becomes U+FFFD as it does there.
	var cut [(most-1)*utf8.UTFMax + len("…")]byte
	out := cut[:0]
	for i, n := 0, 0; n < most-1; n++ {
		r, size := utf8.DecodeRune(b[i:])
		out = utf8.AppendRune(out, r)
		i += size
	}
	return string(append(out, "…"...))
}

// childPromptKey is what makes the system prompts of a session's children
// differ.
type childPromptKey struct {
	workspace, project string
	child              prompt.Child
}

// childPrompt is the system prompt of a child of s working in workspace,
// built once for all the children that share it. Like a session's own
// prompt, it holds for the parent's life: the same project files, read
// once.
func (s *Session) childPrompt(workspace, project string, child prompt.Child) string {
	k := childPromptKey{workspace: workspace, project: project, child: child}
	s.mu.Lock()
	text, ok := s.childPrompts[k]
	s.mu.Unlock()
	if ok {
		return text
	}
	text = s.rt.buildPrompt(workspace, project, &child).Text
	s.mu.Lock()
	if s.childPrompts == nil {
		s.childPrompts = map[childPromptKey]string{}
	}
	s.childPrompts[k] = text
	s.mu.Unlock()
	return text
}
