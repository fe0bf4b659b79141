package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/tools"
)

// Options configure a Set.
type Options struct {
	// Dir is where stdio servers run: the session's workspace.
	Dir    string
	Logger *slog.Logger
	// Notify is told when a server fails to start, stops, or changes its
	// tools. It is called from the Set's goroutines, one notice at a time
	// per server, and must not block for long.
	Notify func(Notice)
	// Changed, when set, is called after the tools of a server changed
	// (listed, refreshed or withdrawn); Tools then returns the new ones.
	Changed func()
	// Version is Pixir's, told to servers as the client's.
	Version string

	// clock, when set by a test, is the time http servers' streams wait
	// by to reconnect.
	clock clock
	// maxMessage, when set by a test, is the bound of one message from a
	// server in place of the package's maxMessage.
	maxMessage int
}

// messageLimit is the bound of one message from a server.
func (o Options) messageLimit() int {
	if o.maxMessage > 0 {
		return o.maxMessage
	}
	return maxMessage
}

// Severities of a Notice (ACP's notice severities).
const (
	SeverityInfo    = "info"
	SeverityWarning = "warning"
	SeverityError   = "error"
)

// Notice is something about a server that the user should see.
type Notice struct {
	Server   string `json:"server"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	Detail   string `json:"detail,omitempty"`
}

// Server states.
const (
	StateStarting = "starting"
	StateRunning  = "running"
	StateFailed   = "failed"  // did not start
	StateStopped  = "stopped" // died, or was closed
)

// ServerStatus is a server as pixir tools shows it.
type ServerStatus struct {
	Name      string
	Transport string
	State     string
	// Error says why a failed or stopped server is not running.
	Error string
	Tools []tools.Tool
}

// Set is the MCP servers of one session, started together and stopped
// together. Children of the session use the same Set (narrowed to the
// servers they may use), so a server runs once per session, however many
// Subagents call it.
type Set struct {
	opt     Options
	servers []*server
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // one run goroutine per server

	mu       sync.Mutex
	gen      uint64        // bumped whenever a server's tools change
	starting int           // servers not yet running or failed
	ready    chan struct{} // closed when starting reaches 0
	closed   bool
}

// Start starts every server in the background and returns at once; Ready
// waits for them. A server that fails is reported through Notify and has
// no tools; the others carry on.
func Start(configs []ServerConfig, opt Options) *Set {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Set{opt: opt, ctx: ctx, cancel: cancel, ready: make(chan struct{}), starting: len(configs)}
	for _, c := range configs {
		s.servers = append(s.servers, &server{set: s, cfg: c, state: StateStarting, refresh: make(chan struct{}, 1), done: make(chan struct{})})
	}
	if len(configs) == 0 {
		close(s.ready)
	}
	for _, srv := range s.servers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			srv.run(ctx)
		}()
	}
	return s
}

// Ready waits until every server has started or failed to (and a failure
// has been through Notify), or ctx ends.
func (s *Set) Ready(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Configs are the servers as they were given.
func (s *Set) Configs() []ServerConfig {
	out := make([]ServerConfig, len(s.servers))
	for i, srv := range s.servers {
		out[i] = srv.cfg
	}
	return out
}

// Names lists the servers, in the order they were given.
func (s *Set) Names() []string {
	names := make([]string, len(s.servers))
	for i, srv := range s.servers {
		names[i] = srv.cfg.Name
	}
	return names
}

// Generation changes whenever the tools of a server change: a cache of
// Tools is good while it stays the same.
func (s *Set) Generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// Tools returns the tools of the running servers that allow admits (all
// when allow is nil), in server order, and the generation they belong to.
func (s *Set) Tools(allow []string) ([]tools.Tool, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tools.Tool
	for _, srv := range s.servers {
		if allow != nil && !slices.Contains(allow, srv.cfg.Name) {
			continue
		}
		for _, t := range srv.tools {
			out = append(out, t)
		}
	}
	return out, s.gen
}

// Status describes every server.
func (s *Set) Status() []ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ServerStatus, len(s.servers))
	for i, srv := range s.servers {
		st := ServerStatus{Name: srv.cfg.Name, Transport: srv.cfg.Transport(), State: srv.state}
		if srv.err != nil {
			st.Error = srv.err.Error()
		}
		for _, t := range srv.tools {
			st.Tools = append(st.Tools, t)
		}
		out[i] = st
	}
	return out
}

// Close stops every server and waits for them to end. It is safe to call
// more than once.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

func (s *Set) changed() {
	if s.opt.Changed != nil {
		s.opt.Changed()
	}
}

func (s *Set) notify(n Notice) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || s.opt.Notify == nil {
		return // a server stopped by Close is no news
	}
	s.opt.Notify(n)
}

// server is one MCP server and the goroutine that owns its connection.
type server struct {
	set     *Set
	cfg     ServerConfig
	refresh chan struct{} // tools/list_changed arrived
	// done is closed when run returns: a server that stopped has been
	// recorded and the user told.
	done chan struct{}

	// Guarded by set.mu.
	state   string
	err     error
	tools   []*tool
	counted bool // counted out of Set.starting

	session *client  // set once connected; owned by run
	proc    *process // stdio servers

	// progress routes the server's progress notifications to the calls
	// that asked for them, by progress token.
	progressMu sync.Mutex
	progress   map[string]chan<- string
	calls      uint64
}

// track registers a call for progress; untrack must follow.
func (srv *server) track(ch chan<- string) string {
	srv.progressMu.Lock()
	defer srv.progressMu.Unlock()
	srv.calls++
	token := fmt.Sprintf("pixir-%d", srv.calls)
	if srv.progress == nil {
		srv.progress = map[string]chan<- string{}
	}
	srv.progress[token] = ch
	return token
}

func (srv *server) untrack(token string) {
	srv.progressMu.Lock()
	defer srv.progressMu.Unlock()
	delete(srv.progress, token)
}

// onProgress passes a progress notification to its call, dropping it when
// the call is not reading (progress is a hint, never a wait).
func (srv *server) onProgress(p progressParams) {
	token, _ := p.ProgressToken.(string)
	srv.progressMu.Lock()
	ch := srv.progress[token]
	srv.progressMu.Unlock()
	if ch == nil {
		return
	}
	msg := fmt.Sprintf("%g", p.Progress)
	if p.Total > 0 {
		msg += fmt.Sprintf("/%g", p.Total)
	}
	if p.Message != "" {
		msg += ": " + p.Message
	}
	select {
	case ch <- msg:
	default:
	}
}

// run connects, lists the tools, then serves list changes until the
// server stops or the Set closes.
func (srv *server) run(ctx context.Context) {
	defer close(srv.done)
	log := srv.set.opt.Logger.With("server", srv.cfg.Name)
	startCtx, cancel := context.WithTimeout(ctx, srv.cfg.startupTimeout())
	err := srv.connect(startCtx, log)
	if err == nil {
		err = srv.list(startCtx)
	}
	cancel()
	if err != nil && ctx.Err() != nil { // closed while starting: no news
		if srv.session != nil {
			srv.session.Close()
		} else if srv.proc != nil {
			srv.proc.stop()
		}
		srv.setState(StateStopped, errors.New("the session closed"), true)
		srv.started()
		return
	}
	if err != nil {
		detail := srv.failure(ctx, err)
		if srv.session != nil {
			srv.session.Close()
		} else if srv.proc != nil {
			srv.proc.stop()
		}
		srv.fail(detail)
		return
	}
	log.Info("MCP server started", "transport", srv.cfg.Transport(), "tools", srv.toolCount())
	srv.started()

	closed := make(chan struct{})
	go func() { // ends when the connection does: run closes it on the way out
		srv.session.Wait()
		close(closed)
	}()
	defer func() {
		srv.session.Close()
		<-closed
	}()
	for {
		select {
		case <-ctx.Done():
			srv.setState(StateStopped, errors.New("the session closed"), true)
			return
		case <-closed:
			srv.died(log)
			return
		case <-srv.refresh:
			srv.relist(ctx, log)
		}
	}
}

func (srv *server) connect(ctx context.Context, log *slog.Logger) error {
	changed := func() {
		select {
		case srv.refresh <- struct{}{}:
		default: // one refresh is already due
		}
	}
	switch srv.cfg.Transport() {
	case "http":
		st := newHTTPStream(srv.cfg.URL, srv.cfg.Headers)
		if srv.set.opt.clock != nil {
			st.clock = srv.set.opt.clock
		}
		st.max = srv.set.opt.messageLimit()
		cs, err := connect(ctx, st, srv.set.opt.Version, log, srv.onProgress, changed)
		if err != nil {
			return fmt.Errorf("connecting to %s: %w", srv.cfg.URL, err)
		}
		srv.session = cs
	default:
		p, err := startProcess(srv.cfg, srv.set.opt.Dir, log, srv.set.opt.messageLimit())
		if err != nil {
			return err
		}
		srv.proc = p
		cs, err := connect(ctx, p.stream(), srv.set.opt.Version, log, srv.onProgress, changed)
		if err != nil {
			return err
		}
		srv.session = cs
	}
	return nil
}

// list fetches every page of the server's tools and publishes them.
func (srv *server) list(ctx context.Context) error {
	remote, err := srv.session.listTools(ctx)
	if err != nil {
		return fmt.Errorf("listing its tools: %w", err)
	}
	s := srv.set
	s.mu.Lock()
	srv.tools = srv.adapt(remote)
	srv.state = StateRunning
	s.gen++
	s.mu.Unlock()
	s.changed()
	return nil
}

// relist answers tools/list_changed.
func (srv *server) relist(ctx context.Context, log *slog.Logger) {
	before := srv.toolCount()
	lctx, cancel := context.WithTimeout(ctx, srv.cfg.startupTimeout())
	defer cancel()
	if err := srv.list(lctx); err != nil {
		if ctx.Err() == nil {
			log.Warn("MCP server: refreshing its tools failed; keeping the ones it had", "err", err)
		}
		return
	}
	log.Info("MCP server changed its tools", "before", before, "after", srv.toolCount())
}

// adapt makes Pixir tools of the server's tools; set.mu is held. Names
// clash with no other server's: each carries its server's name.
func (srv *server) adapt(remote []*remoteTool) []*tool {
	names := make([]string, len(remote))
	for i, t := range remote {
		names[i] = t.Name
	}
	taken := func(name string) bool {
		for _, other := range srv.set.servers {
			if other == srv {
				continue
			}
			for _, t := range other.tools {
				if t.name == name {
					return true
				}
			}
		}
		return false
	}
	out := make([]*tool, len(remote))
	for i, name := range uniqueNames(srv.cfg.Name, names, taken) {
		out[i] = newTool(srv, name, remote[i])
	}
	return out
}

func (srv *server) toolCount() int {
	srv.set.mu.Lock()
	defer srv.set.mu.Unlock()
	return len(srv.tools)
}

// started counts the server out of the ones Ready waits for.
func (srv *server) started() {
	s := srv.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if srv.counted {
		return
	}
	srv.counted = true
	s.starting--
	if s.starting == 0 {
		close(s.ready)
	}
}

// setState records a state and withdraws the tools when asked to.
func (srv *server) setState(state string, err error, withdraw bool) int {
	s := srv.set
	s.mu.Lock()
	srv.state, srv.err = state, err
	n := len(srv.tools)
	withdrawn := withdraw && n > 0
	if withdrawn {
		srv.tools = nil
		s.gen++
	}
	s.mu.Unlock()
	if withdrawn {
		s.changed()
	}
	return n
}

// failure says why a server did not start: the error, how its process
// ended if it did, and the end of its stderr.
func (srv *server) failure(ctx context.Context, err error) string {
	detail := err.Error()
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		detail = fmt.Sprintf("it did not answer within %s", srv.cfg.startupTimeout())
	}
	if srv.proc != nil {
		select {
		case <-srv.proc.exited:
			detail += "; " + srv.proc.exitReason()
		default:
		}
		if tail := srv.proc.stderrTail(); tail != "" {
			detail += "\n" + tail
		}
	}
	return detail
}

// fail records a server that did not start, and tells the user.
func (srv *server) fail(detail string) {
	srv.setState(StateFailed, errors.New(detail), true)
	srv.set.notify(Notice{Server: srv.cfg.Name, Severity: SeverityError,
		Title:  fmt.Sprintf("MCP server %q did not start; its tools are not available", srv.cfg.Name),
		Detail: detail})
	// After the notice, as in died: the log line means it is recorded.
	srv.set.opt.Logger.Warn("MCP server did not start", "server", srv.cfg.Name, "err", detail)
	srv.started() // after the notice: Ready promises it has been told
}

// died records a server whose connection ended while the session still
// wanted it: its tools are withdrawn and the user is told.
func (srv *server) died(log *slog.Logger) {
	reason := "its connection closed"
	ours := srv.session.stream.ended()
	if ours != nil {
		reason = ours.Error()
	}
	if srv.proc != nil {
		// Its output ended: it is exiting, or gone. stop reaps it (and
		// ends one that closed its stdout but lingers, or that Pixir
		// stopped reading).
		exitedAlone := ours == nil && srv.proc.waitExit(exitGrace)
		srv.proc.stop()
		if exitedAlone {
			reason = srv.proc.exitReason()
		}
	}
	detail, tail := reason, ""
	if srv.proc != nil {
		tail = srv.proc.stderrTail()
	}
	if tail != "" {
		detail += "\n" + tail
	}
	n := srv.setState(StateStopped, errors.New(reason), true)
	// The session records the notice before the log says so: whoever
	// reads the log line and prompts next finds the notice in that turn.
	srv.set.notify(Notice{Server: srv.cfg.Name, Severity: SeverityError,
		Title:  fmt.Sprintf("MCP server %q stopped (%s); its %s withdrawn", srv.cfg.Name, reason, plural.Of(n, "tool is", "tools are")),
		Detail: detail})
	attrs := []any{"reason", reason}
	if tail != "" {
		attrs = append(attrs, "stderr", tail)
	}
	log.Warn("MCP server stopped", attrs...)
}

// gone reports whether a stdio server's process has ended.
func (srv *server) gone() bool {
	if srv.proc == nil {
		return false
	}
	select {
	case <-srv.proc.exited:
		return true
	default:
		return false
	}
}

// stateOf reports the state of a server and why it is not running.
func (srv *server) stateOf() (string, error) {
	srv.set.mu.Lock()
	defer srv.set.mu.Unlock()
	return srv.state, srv.err
}
