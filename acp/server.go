// Package acp is Pixir's Agent Client Protocol v1 front: the wire types it
// uses, the method routing, and the presenter that turns runtime Events into
// session/update notifications. It knows nothing of how tools or workflows
// work inside; the runtime does.
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pixir-go/pixir/acp/rpc"
	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
)

// Options configure a Server.
type Options struct {
	Version string
	Logger  *slog.Logger
	// MaxLineBytes is the largest message accepted; zero means
	// rpc.MaxLineBytes. Tests lower it.
	MaxLineBytes int
}

// Server answers one ACP client over one connection.
type Server struct {
	rt      *runtime.Runtime
	conn    *rpc.Conn
	log     *slog.Logger
	version string
	maxLine int

	mu     sync.Mutex
	client ClientCapabilities // what initialize said the client can do
	// turns marks the sessions with a prompt running; pendingNotices keeps
	// notices for a client without session.notices until the next turn.
	turns          map[string]bool
	pendingNotices map[string][]string
	// shownInTurn are the pending notices the running turn of a session
	// began with: a notice made again after it began (the after-reply
	// work of a session/load answered just before the prompt) is not
	// said a second time.
	shownInTurn map[string][]string
	// titles are the session titles this client was told.
	titles map[string]string
	// prompts are the session/prompt requests not answered yet, by
	// session.
	prompts map[string]*promptRun
	// cancelsAfter is, by session, how many requests the client had sent
	// before its latest session/cancel (startPrompt).
	cancelsAfter map[string]uint64
	// asks are the permission questions waiting for the client's answer,
	// by the session (or child's session) that asks, with the
	// session/cancel notifications that named it meanwhile
	// (AskPermission). An entry lives as long as a question: a cancel of
	// a session with none, or of an id that is no session, keeps nothing.
	asks map[string]*pendingAsks
	// children are the Subagents' sessions this client was told of, by
	// their id (children.go).
	children map[string]*childSession
	// stepEnds are the workflow steps' ends held for each session's
	// presenters (see presenter.ends).
	stepEnds map[string]*stepEnds
	// beforeReply, when set (tests), runs after a prompt's turn has
	// returned and before its reply is made.
	beforeReply func(sessionID string)
	// promptReached, when set (tests), runs as a prompt's handler reaches
	// a stage: "received" (before it is the session's prompt in flight)
	// and "registered" (before its turn starts); cancelHandled after a
	// session/cancel of a session was handled.
	promptReached func(stage, sessionID string)
	cancelHandled func(sessionID string)
}

// promptRun is a session/prompt request from its start until its reply is
// written.
type promptRun struct {
	replied chan struct{}
	// cancelled is set when the client sent session/cancel for it, ended
	// when its turn is over and its reply is being written.
	cancelled, ended bool
	// cancelTurn ends the context its turn runs in: a cancel that comes
	// before the turn has begun (when the session has no turn to stop
	// yet) still stops it.
	cancelTurn context.CancelFunc
}

// startPrompt makes p the session's prompt in flight. A prompt sent while
// a cancelled one has not been answered yet (clients send session/cancel
// and the next prompt at once) waits for that answer, so that no update of
// the new turn comes before it; any other prompt in flight makes this one
// busy. Its turn runs in turnCtx, which a session/cancel ends however
// early it comes: one the client sent after this prompt, handled before
// this handler got here, included. The returned funcs mark the end of its
// turn, and, run once the reply is written, its end.
func (s *Server) startPrompt(ctx context.Context, id string) (turnCtx context.Context, turnEnded func() (cancelled bool), replied func(), err error) {
	seq := rpc.RequestSeq(ctx)
	for {
		s.mu.Lock()
		prev := s.prompts[id]
		if prev == nil {
			turnCtx, cancelTurn := context.WithCancel(ctx)
			run := &promptRun{replied: make(chan struct{}), cancelTurn: cancelTurn}
			if seq != 0 && s.cancelsAfter[id] >= seq {
				// The client cancelled after it sent this prompt.
				run.cancelled = true
				cancelTurn()
			}
			if s.prompts == nil {
				s.prompts = map[string]*promptRun{}
			}
			s.prompts[id] = run
			s.mu.Unlock()
			turnEnded = func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				run.ended = true
				return run.cancelled
			}
			replied = func() {
				s.mu.Lock()
				delete(s.prompts, id)
				s.mu.Unlock()
				cancelTurn()
				close(run.replied)
			}
			return turnCtx, turnEnded, replied, nil
		}
		wait := prev.cancelled || prev.ended
		s.mu.Unlock()
		if !wait {
			return nil, nil, nil, rpc.Errorf(rpc.CodeInvalidRequest, "%v", runtime.ErrBusy)
		}
		select {
		case <-prev.replied:
		case <-ctx.Done():
			return nil, nil, nil, ctx.Err()
		}
	}
}

// pendingAsks are the questions a session is waiting on, and the
// session/cancel notifications that named it while any was.
type pendingAsks struct {
	n       int
	cancels uint64
}

// noteCancel counts a session/cancel the client sent for session id (its
// own or a child's), if a question of it waits for an answer.
func (s *Server) noteCancel(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.asks[id]; a != nil {
		a.cancels++
	}
}

// askStarted notes a question of session id waiting for the client's
// answer. cancelledSince reports whether the client sent session/cancel
// for the session since; ended marks the question answered or dropped.
func (s *Server) askStarted(id string) (cancelledSince func() bool, ended func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.asks[id]
	if a == nil {
		if s.asks == nil {
			s.asks = map[string]*pendingAsks{}
		}
		a = &pendingAsks{}
		s.asks[id] = a
	}
	a.n++
	before := a.cancels
	cancelledSince = func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return a.cancels != before
	}
	ended = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if a.n--; a.n == 0 {
			delete(s.asks, id)
		}
	}
	return cancelledSince, ended
}

// cancelPrompt marks the session's prompt in flight, if any, cancelled,
// and ends its turn's context; requestsBefore (rpc.RequestsBefore) is how
// many requests the client had sent before the cancel, so that a prompt
// among them whose handler has not started it yet starts cancelled.
func (s *Server) cancelPrompt(id string, requestsBefore uint64) {
	s.mu.Lock()
	if s.cancelsAfter == nil {
		s.cancelsAfter = map[string]uint64{}
	}
	s.cancelsAfter[id] = max(s.cancelsAfter[id], requestsBefore)
	var cancelTurn context.CancelFunc
	if run := s.prompts[id]; run != nil {
		run.cancelled = true
		cancelTurn = run.cancelTurn
	}
	s.mu.Unlock()
	if cancelTurn != nil {
		cancelTurn()
	}
}

// titleChanged reports whether title is news to the client for session
// id, and notes that it is told now.
func (s *Server) titleChanged(id, title string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if told, ok := s.titles[id]; ok && told == title {
		return false
	}
	if s.titles == nil {
		s.titles = map[string]string{}
	}
	s.titles[id] = title
	return true
}

// NewServer makes a Server for rt.
func NewServer(rt *runtime.Runtime, opt Options) *Server {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{rt: rt, log: opt.Logger, version: opt.Version, maxLine: opt.MaxLineBytes}
}

// Serve speaks ACP over r and w until r ends; the returned connection's
// Done channel closes once every reply has been written.
func (s *Server) Serve(r io.Reader, w io.Writer, closeInput func() error) *rpc.Conn {
	// The connection is set before the first message is read: a request
	// handled at once (an early session/load) presents through it.
	return rpc.Serve(r, w, closeInput, s, rpc.Options{Logger: s.log, MaxLineBytes: s.maxLine,
		OnConn: func(c *rpc.Conn) { s.conn = c }})
}

// HandleRequest implements rpc.Handler.
func (s *Server) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case MethodInitialize:
		return handle(params, s.initialize)
	case MethodAuthenticate:
		return handle(params, s.authenticate)
	case MethodSessionNew:
		return handle(params, func(p *NewSessionRequest) (any, error) { return s.newSession(ctx, p) })
	case MethodSessionLoad:
		return handle(params, func(p *LoadSessionRequest) (any, error) { return s.loadSession(ctx, p) })
	case MethodSessionResume:
		return handle(params, func(p *ResumeSessionRequest) (any, error) { return s.resumeSession(ctx, p) })
	case MethodSessionList:
		return handle(params, s.listSessions)
	case MethodSessionClose:
		return handle(params, func(p *SessionRequest) (any, error) { return s.closeSession(ctx, p) })
	case MethodSessionDelete:
		return handle(params, s.deleteSession)
	case MethodSessionFork:
		// Fields of session/new: sessionId names the source.
		return handle(params, func(p *ForkSessionRequest) (any, error) { return s.forkSession(ctx, p) })
	case MethodLogout:
		return s.logout()
	case MethodSessionPrompt:
		p, err := decodePrompt(params)
		if err != nil {
			return nil, err
		}
		return s.prompt(ctx, p)
	case MethodSessionSetMode:
		return handle(params, func(p *SetModeRequest) (any, error) { return s.setMode(ctx, p) })
	case MethodSessionSetConfig:
		return handle(params, func(p *SetConfigOptionRequest) (any, error) { return s.setConfigOption(ctx, p) })
	case MethodSessionCancel:
		// A notification in ACP: a client that sent it with an id is told
		// how to send it, and that it did nothing.
		return nil, rpc.Errorf(rpc.CodeMethodNotFound, "%s is a notification: send it without an \"id\" (nothing was cancelled)", method)
	}
	return nil, rpc.Errorf(rpc.CodeMethodNotFound, "method not found: %s", method)
}

// HandleNotification implements rpc.Handler. Unknown notifications are
// ignored, as JSON-RPC and ACP require.
func (s *Server) HandleNotification(ctx context.Context, method string, params json.RawMessage) {
	if method != MethodSessionCancel {
		s.log.Debug("ignored notification", "method", method)
		return
	}
	p, err := decodeParams[SessionRequest](params)
	if err != nil {
		s.log.Warn("bad session/cancel", "err", err)
		return
	}
	s.noteCancel(p.SessionID)
	if sess, err := s.rt.Session(p.SessionID); err == nil {
		s.cancelPrompt(p.SessionID, rpc.RequestsBefore(ctx))
		sess.CancelAsync()
		if s.cancelHandled != nil {
			s.cancelHandled(p.SessionID)
		}
		return
	}
	// A child's session (announced with capabilities.cancel): that child
	// only; its siblings and parent go on.
	s.mu.Lock()
	_, child := s.children[p.SessionID]
	s.mu.Unlock()
	if child {
		s.rt.CancelSubagent(p.SessionID)
	}
}

func handle[T any, PT interface {
	*T
	validator
}](params json.RawMessage, f func(*T) (any, error)) (any, error) {
	p, err := decodeParams[T, PT](params)
	if err != nil {
		return nil, err
	}
	return f(p)
}

func (s *Server) initialize(p *InitializeRequest) (any, error) {
	s.mu.Lock()
	s.client = p.ClientCapabilities
	unstable := present(p.ClientCapabilities.Subagents) || present(p.ClientCapabilities.Plan)
	s.mu.Unlock()
	sessionCaps := SessionCapabilities{List: &Marker{}, Resume: &Marker{}, Close: &Marker{}, Delete: &Marker{}}
	if unstable {
		sessionCaps.Fork = &Marker{}
	}
	if p.ClientInfo != nil {
		s.log.Info("client connected", "client", p.ClientInfo.Name, "version", p.ClientInfo.Version, "protocolVersion", *p.ProtocolVersion)
	}
	return InitializeResponse{
		// Version 1 is the only one Pixir speaks: it answers 1 whatever was
		// asked, and a client that cannot speak 1 closes the connection.
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: PromptCapabilities{EmbeddedContext: true},
			// stdio MCP servers are the baseline; http ones connect too.
			MCPCapabilities:     MCPCapabilities{HTTP: true},
			SessionCapabilities: sessionCaps,
		},
		AuthMethods: []AuthMethod{},
		AgentInfo:   Implementation{Name: "pixir", Title: "Pixir", Version: s.version},
	}, nil
}

func (s *Server) authenticate(p *AuthenticateRequest) (any, error) {
	// No method is advertised: the offline provider needs none, and hosted
	// providers read their keys from the environment.
	return nil, invalid("methodId", "%q is not an authentication method of Pixir (it advertises none)", p.MethodID)
}

// logout answers a client that signs the user out: Pixir has no sign-in
// (it advertises no authentication method, and no auth.logout), so there is
// nothing to forget; the answer says so rather than "method not found".
func (s *Server) logout() (any, error) {
	return map[string]any{"_meta": map[string]any{"pixir": map[string]any{
		"note": "Pixir has no sign-in to end: it advertises no authentication methods; hosted providers read their API keys from the environment, which logout does not change",
	}}}, nil
}

func (s *Server) newSession(ctx context.Context, p *NewSessionRequest) (any, error) {
	servers, err := mcpServers(p.MCPServers)
	if err != nil {
		return nil, err
	}
	// The session's metadata file is written once the answer is: the Log,
	// created before it, is all a crash in between could leave, and it
	// holds nothing the client saw (runtime.WithStoreAfter).
	sess, err := s.rt.NewSession(p.Cwd, runtime.WithMCPServers(servers),
		runtime.WithStoreAfter(func(store func()) { rpc.AfterReply(ctx, store) }))
	if err != nil {
		return nil, s.setupError(err)
	}
	s.watch(sess)
	s.setupNotices(ctx, sess, p.AdditionalDirectories)
	return NewSessionResponse{SessionID: sess.ID(), Modes: modeState(sess), ConfigOptions: s.configOptions(sess)}, nil
}

// setupError turns a failure to open a session into the right code.
func (s *Server) setupError(err error) error {
	switch {
	case errors.Is(err, runtime.ErrSessionInUse):
		return &rpc.Error{Code: rpc.CodeInvalidRequest, Message: err.Error()}
	case errors.Is(err, runtime.ErrSessionNotFound):
		return &rpc.Error{Code: rpc.CodeResourceNotFound, Message: err.Error()}
	case errors.Is(err, os.ErrNotExist):
		return invalid("cwd", "does not exist: %v", err)
	}
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return invalid("cwd", "is not usable: %v", err)
	}
	return err
}

func (s *Server) loadSession(ctx context.Context, p *LoadSessionRequest) (any, error) {
	if err := s.childError(p.SessionID, rpc.CodeResourceNotFound, notOnItsOwn); err != nil {
		return nil, err
	}
	servers, err := mcpServers(p.MCPServers)
	if err != nil {
		return nil, err
	}
	root, err := runtime.WorkspaceRoot(p.Cwd)
	if err != nil {
		return nil, s.setupError(err)
	}
	if err := s.openElsewhere(p.SessionID, root); err != nil {
		return nil, err
	}
	// The replay streams as the Log is read, in batches of lines: the
	// client sees the first updates at once, however long the session.
	// Presenting runs beside the reading (replayer), so on a machine with
	// two cores a load costs little more than reading the Log.
	pr := &presenter{s: s, ctx: ctx, sessionID: p.SessionID, root: root, replaying: true, batch: s.conn.Batch(),
		native: s.nativeChildren(), plans: s.plansByID(), ends: &stepEnds{}}
	rp := startReplayer(pr)
	sess, report, err := s.rt.OpenSession(p.SessionID, p.Cwd, rp.add, runtime.WithMCPServers(servers))
	rp.finish()
	pr.flushStepEnds() // a Log cut off mid workflow: its steps' ends as they were
	pr.flushPlans()    // and the plans of runs whose call never ended, as the Log tells them
	if ferr := pr.batch.Flush(); ferr != nil {
		s.log.Debug("replay not sent", "err", ferr)
	}
	pr.batch = nil
	if err != nil {
		return nil, s.setupError(err)
	}
	pr.sess = sess
	s.reportDamage(ctx, sess, report)
	pr.showDetached()
	s.watch(sess)
	s.setupNotices(ctx, sess, p.AdditionalDirectories)
	return SessionSetupResponse{Modes: modeState(sess), ConfigOptions: s.configOptions(sess)}, nil
}

func (s *Server) resumeSession(ctx context.Context, p *ResumeSessionRequest) (any, error) {
	if err := s.childError(p.SessionID, rpc.CodeResourceNotFound, notOnItsOwn); err != nil {
		return nil, err
	}
	servers, err := mcpServers(p.MCPServers)
	if err != nil {
		return nil, err
	}
	var opts []runtime.SessionOption
	if p.MCPServers != nil { // optional here: without it, a live session keeps its servers
		opts = append(opts, runtime.WithMCPServers(servers))
	}
	if root, err := runtime.WorkspaceRoot(p.Cwd); err == nil {
		if err := s.openElsewhere(p.SessionID, root); err != nil {
			return nil, err
		}
	}
	sess, report, err := s.rt.OpenSession(p.SessionID, p.Cwd, nil, opts...)
	if err != nil {
		return nil, s.setupError(err)
	}
	s.reportDamage(ctx, sess, report)
	// No replay (the client did not ask for one), but a child this opening
	// found detached changed since the client last saw it: its call is
	// updated, as a load does after its replay.
	pr := &presenter{s: s, ctx: ctx, sessionID: p.SessionID, sess: sess, native: s.nativeChildren()}
	pr.showDetached()
	s.watch(sess)
	s.setupNotices(ctx, sess, p.AdditionalDirectories)
	return SessionSetupResponse{Modes: modeState(sess), ConfigOptions: s.configOptions(sess)}, nil
}

// showDetached shows the children this process found detached when it
// opened the session (still running when their process ended) as what
// they are now: detached, not complete.
func (p *presenter) showDetached() {
	for _, d := range p.sess.DetachedSubagents() {
		if p.native {
			p.detachedNative(d)
			continue
		}
		msg := "the process that ran this subagent ended before it did"
		if d.Error != nil {
			msg = d.Error.Message
		}
		p.send(ToolCall{SessionUpdate: "tool_call_update", ToolCallID: subagentCallID(d.SubagentID), Status: "failed",
			Content: []ToolCallContent{{Type: "content", Content: &ContentBlock{Type: "text", Text: "detached: " + msg}}}})
	}
}

// openElsewhere refuses to load or resume a session this process has open
// in another workspace than root: the answer would say it was opened
// there while its tools went on working in its own workspace (a fresh
// process looks for its Log in root, and finds none).
func (s *Server) openElsewhere(id, root string) error {
	sess, err := s.rt.Session(id)
	if errors.Is(err, runtime.ErrSessionNotFound) {
		return nil // not open here: opening it looks in root
	}
	if err != nil || sess.Workspace().Root() == root {
		return err
	}
	return invalid("cwd", "session %s is open in this process in the workspace %s, not %s; load it with that cwd", id, sess.Workspace().Root(), root)
}

// reportDamage tells the client that lines of the session's Log were not
// events and were skipped: as a notice when it shows notices, otherwise
// as a message in the conversation, so that it is never silent.
func (s *Server) reportDamage(ctx context.Context, sess *runtime.Session, report runtime.LoadReport) {
	if report.Intact() {
		return
	}
	title := "Part of this session's Log is damaged and was skipped"
	detail := "Pixir read " + report.String() + ". The rest of the session is intact and usable."
	if report.Skipped > 0 || report.Undecoded > 0 {
		detail += " What was left out stays in " + sess.LogPath() + " for inspection (pixir inspect " + sess.ID() + ")."
	}
	if report.TornBytes > 0 {
		detail += " The torn last line was cut off, so the Log goes on from its last whole event."
	}
	s.mu.Lock()
	notices := advertised(s.client.Session.Notices)
	s.mu.Unlock()
	if notices {
		s.notify(ctx, sess.ID(), Notice{SessionUpdate: "notice", Severity: "warning", Title: title, Description: detail})
		return
	}
	s.notify(ctx, sess.ID(), ContentChunk{SessionUpdate: "agent_message_chunk", Content: textBlock("\n\n**" + title + ".** " + detail + "\n")})
}

// watch shows this client what happens in a session outside its turns:
// Subagents go on after the turn that spawned them, and their updates are
// sent as session/update notifications when they happen.
func (s *Server) watch(sess *runtime.Session) {
	sess.SetObserver(s.presenter(context.Background(), sess).live)
	if s.nativeChildren() {
		sess.SetDescendantObserver(s.descendantEvent)
	}
}

// setupNotices shows a client that advertises session.notices what it
// should know of a session it just opened (runtime SetupNotices: agent
// file warnings, no kernel sandbox, a setting that fell back), once the
// request's answer has told it the session. Other clients see these where
// they always did (pixir agents, a command's output, the logs).
func (s *Server) setupNotices(ctx context.Context, sess *runtime.Session, sent []json.RawMessage) {
	if len(sent) > 0 {
		dirs := make([]string, 0, len(sent))
		for _, raw := range sent {
			var dir string
			if json.Unmarshal(raw, &dir) != nil {
				dir = string(raw) // not a string: shown as it came
			}
			dirs = append(dirs, dir)
		}
		// Not advertised, so a client should not send it; one that does
		// is told, after the answer (a notice, or a message at its next
		// turn), and the session opens as it would without: refusing it
		// would break a client that sends it to every agent.
		s.log.Warn("additionalDirectories is not supported; the session works in its cwd only", "session", sess.ID(), "additionalDirectories", dirs)
		d := runtime.NoticeData{Source: "acp", Severity: "warning",
			Title: "Additional directories are not supported: " + strings.Join(dirs, ", "),
			Detail: "Pixir works in the session's folder (" + sess.Workspace().Root() + ") and beneath it only, and its tools refuse paths outside it: " +
				"no directory is added to it. Open a session in a folder that holds them all to work on them together."}
		rpc.AfterReply(ctx, func() { s.notice(sess.ID(), d) })
	}
	s.mu.Lock()
	notices := len(s.client.Session.Notices) > 0
	s.mu.Unlock()
	if !notices {
		return
	}
	rpc.AfterReply(ctx, func() {
		for _, d := range sess.SetupNotices() {
			s.notify(context.Background(), sess.ID(), Notice{SessionUpdate: "notice", Severity: d.Severity, Title: d.Title, Description: d.Detail})
		}
	})
}

// listPageSize bounds one page of session/list.
const listPageSize = 100

func (s *Server) listSessions(p *ListSessionsRequest) (any, error) {
	metas, err := s.rt.ListSessions(p.Cwd)
	if err != nil {
		return nil, s.setupError(err)
	}
	start := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 || n > len(metas) {
			return nil, invalid("cursor", "is not a cursor this agent returned: %q", p.Cursor)
		}
		start = n
	}
	resp := ListSessionsResponse{Sessions: []SessionInfo{}}
	end := min(start+listPageSize, len(metas))
	for _, m := range metas[start:end] {
		info := SessionInfo{SessionID: m.ID, Cwd: m.Workspace, Title: m.Title}
		if !m.UpdatedAt.IsZero() {
			info.UpdatedAt = m.UpdatedAt.UTC().Format(time.RFC3339)
		}
		resp.Sessions = append(resp.Sessions, info)
	}
	if end < len(metas) {
		resp.NextCursor = strconv.Itoa(end)
	}
	return resp, nil
}

// closeSession cancels the session's work as session/cancel would, frees
// it, and answers once the prompt in flight, if any, has been answered
// ("cancelled"), so that nothing of the closed session comes after the
// close's reply: the spec's "cancel any ongoing work, then free".
func (s *Server) closeSession(ctx context.Context, p *SessionRequest) (any, error) {
	if s.isChild(p.SessionID) {
		// A child's session the client closes (its tab): "cancel any
		// ongoing work related to the session (treat it as if
		// session/cancel was called)", as session/cancel on its id does;
		// its parent keeps it, as it keeps every child that ended. A
		// "not found" would not do: clients take it as closed (the SDK
		// answers it as success), and the child would go on working. The
		// answer waits for the child to stop, so that its last updates
		// come before it, not under a session the client closed; a child
		// that does not stop within childCloseWait (a tool that ignores
		// its cancel) is answered anyway, and stops when it can.
		if stopped := s.rt.CancelSubagent(p.SessionID); stopped != nil {
			wait := time.NewTimer(childCloseWait)
			defer wait.Stop()
			select {
			case <-stopped:
			case <-wait.C:
				s.log.Warn("answered session/close of a Subagent's session before the Subagent stopped", "session", p.SessionID, "waited", childCloseWait)
			case <-ctx.Done():
			}
		}
		return struct{}{}, nil
	}
	if _, err := s.rt.Session(p.SessionID); err == nil {
		// The requests read before this one: a prompt among them is
		// cancelled, started or not.
		s.cancelPrompt(p.SessionID, max(rpc.RequestSeq(ctx), 1)-1)
	}
	if err := s.rt.CloseSession(p.SessionID); err != nil {
		return nil, &rpc.Error{Code: rpc.CodeResourceNotFound, Message: err.Error()}
	}
	s.mu.Lock()
	run := s.prompts[p.SessionID]
	s.mu.Unlock()
	if run != nil {
		// Its turn has stopped (CloseSession waits for it): what is left
		// is its last updates and its reply.
		select {
		case <-run.replied:
		case <-ctx.Done():
		}
	}
	s.forget(p.SessionID)
	return struct{}{}, nil
}

// childCloseWait bounds how long a session/close of a Subagent's session
// waits for the Subagent to stop before it is answered.
const childCloseWait = 10 * time.Second

// forkSession makes a new session whose history is the source's up to
// now (session/fork).
func (s *Server) forkSession(ctx context.Context, p *ForkSessionRequest) (any, error) {
	if err := s.childError(p.SessionID, rpc.CodeResourceNotFound, notOnItsOwn); err != nil {
		return nil, err
	}
	servers, err := mcpServers(p.MCPServers)
	if err != nil {
		return nil, err
	}
	sess, _, err := s.rt.ForkSession(p.SessionID, p.Cwd, runtime.WithMCPServers(servers))
	if err != nil {
		return nil, s.setupError(err)
	}
	s.watch(sess)
	s.setupNotices(ctx, sess, p.AdditionalDirectories)
	return NewSessionResponse{SessionID: sess.ID(), Modes: modeState(sess), ConfigOptions: s.configOptions(sess)}, nil
}

// deleteSession removes a stored session (its Log, metadata and its
// Subagents' folders), refusing one that is running.
func (s *Server) deleteSession(p *SessionRequest) (any, error) {
	// Invalid, not "not found": clients take a "not found" answer to
	// session/delete as deleted, and nothing was.
	if err := s.childError(p.SessionID, rpc.CodeInvalidRequest, notOnItsOwn); err != nil {
		return nil, err
	}
	err := s.rt.DeleteSession(p.SessionID)
	switch {
	case err == nil:
	case errors.Is(err, runtime.ErrSessionNotFound):
		return nil, &rpc.Error{Code: rpc.CodeResourceNotFound, Message: err.Error()}
	case errors.Is(err, runtime.ErrSessionRunning), errors.Is(err, runtime.ErrSessionInUse):
		return nil, &rpc.Error{Code: rpc.CodeInvalidRequest, Message: err.Error()}
	default:
		return nil, err
	}
	s.forget(p.SessionID)
	return struct{}{}, nil
}

// forget drops what this connection keeps of a session it closed or
// deleted, and of the children it was told of under it: a long-lived
// connection keeps only what its open sessions need. A session opened
// again is told its title and children again.
func (s *Server) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := []string{id}
	for len(gone) > 0 {
		id := gone[0]
		gone = gone[1:]
		delete(s.titles, id)
		delete(s.pendingNotices, id) // no turn will show them now
		delete(s.stepEnds, id)
		delete(s.cancelsAfter, id)
		for child, c := range s.children {
			if c.parentID == id {
				delete(s.children, child)
				gone = append(gone, child)
			}
		}
	}
}

// session finds a live session or answers -32002.
func (s *Server) session(id string) (*runtime.Session, error) {
	sess, err := s.rt.Session(id)
	if err != nil {
		// A child's session, announced to this client: it takes no
		// prompt or setting of its own: say whose it is and what reaches
		// it.
		if err := s.childError(id, rpc.CodeResourceNotFound, "which takes no prompt or setting of its own; prompt that session instead (its model reaches the Subagent with send_input), or cancel the Subagent with session/cancel on this id"); err != nil {
			return nil, err
		}
		return nil, &rpc.Error{Code: rpc.CodeResourceNotFound, Message: err.Error()}
	}
	return sess, nil
}

// childError is the answer to a request naming the session of a Subagent
// this client was told of (subagent_update) as if it were a session of its
// own, or nil when id is none: it says whose child it is and what the
// client can do instead (what, after "which"), with code. Without it a session/load
// of a child said there was no Log of it, which there is, under its
// parent's.
func (s *Server) childError(id string, code int64, what string) error {
	s.mu.Lock()
	c := s.children[id]
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	return rpc.Errorf(code, "%v: %s is the session of a Subagent of session %s, %s",
		runtime.ErrSessionNotFound, id, c.parentID, what)
}

// isChild reports whether id is the session of a Subagent this client was
// told of.
func (s *Server) isChild(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.children[id] != nil
}

// notOnItsOwn is what a client can do with a child's session instead of
// loading, resuming, forking or deleting it.
const notOnItsOwn = "which is not loaded, resumed, forked or deleted on its own: its updates come on this connection as it runs, " +
	"and a session/load of its parent shows it again; session/cancel or session/close on this id stops the Subagent; deleting the parent deletes it"

func (s *Server) prompt(ctx context.Context, p *PromptRequest) (any, error) {
	sess, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	if s.promptReached != nil {
		s.promptReached("received", sess.ID())
	}
	turnCtx, turnEnded, replied, err := s.startPrompt(ctx, sess.ID())
	if err != nil {
		return nil, err
	}
	if s.promptReached != nil {
		s.promptReached("registered", sess.ID())
	}
	rpc.AfterReply(ctx, replied)
	defer turnEnded() // once more on the ways out without a reason: it only marks the end
	text, quoted := modelText(p.Prompt)
	prompt := runtime.Prompt{Text: text, TextJSON: quoted, Content: promptContent(p)}
	pr := s.presenter(ctx, sess)
	defer s.turnStarted(pr)()
	stop, err := sess.Prompt(turnCtx, prompt, s.turnOptions(sess, pr))
	switch {
	case errors.Is(err, runtime.ErrBusy):
		return nil, rpc.Errorf(rpc.CodeInvalidRequest, "%v", err)
	case errors.Is(err, runtime.ErrSessionClosed):
		return nil, &rpc.Error{Code: rpc.CodeResourceNotFound, Message: err.Error()}
	case err != nil:
		return nil, err
	}
	if s.beforeReply != nil {
		s.beforeReply(sess.ID())
	}
	// Decided once, as the turn is marked over: a session/cancel the
	// client sent before then is answered "cancelled", whatever the turn
	// decided before the cancel reached it.
	cancelled := turnEnded()
	pr.sessionInfo()
	return promptReply(stop, cancelled)
}

// promptReply is the answer to a session/prompt whose turn ended with
// stop: "cancelled" when the client cancelled it, else stop, which must be
// one of ACP's stop reasons. A reply without one is impossible: stopReason
// is required by the schema, and a client reading "" cannot tell a
// cancelled turn from a finished one; a turn that ended without a reason
// is a fault of Pixir's, answered as one (-32603), never as a result.
func promptReply(stop runtime.StopReason, cancelled bool) (PromptResponse, error) {
	if cancelled {
		stop = runtime.StopCancelled
	}
	switch stop {
	case runtime.StopEndTurn, runtime.StopMaxTokens, runtime.StopMaxTurnRequests, runtime.StopCancelled:
		return PromptResponse{StopReason: string(stop)}, nil
	}
	return PromptResponse{}, rpc.Errorf(rpc.CodeInternalError, "internal error: the turn ended without a stop reason (%q); its events are in the session's Log", stop)
}

// showsCompaction reports whether the client advertised
// session.compaction.
func (s *Server) showsCompaction() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return advertised(s.client.Session.Compaction)
}

// turnOptions connect a turn to this client: its updates, its permission
// answers, and its files and terminals when it offered them.
func (s *Server) turnOptions(sess *runtime.Session, pr *presenter) runtime.TurnOptions {
	s.mu.Lock()
	caps := s.client
	s.mu.Unlock()
	opt := runtime.TurnOptions{Observe: pr.live, Ask: &permissionAsker{s: s, sess: sess}}
	if caps.FS.ReadTextFile || caps.FS.WriteTextFile {
		opt.Files = clientFiles{s: s, sessionID: sess.ID(), read: caps.FS.ReadTextFile, write: caps.FS.WriteTextFile,
			local: sess.Workspace().Files()}
	}
	if caps.Terminal {
		opt.Terminals = clientTerminals{s: s, sessionID: sess.ID()}
	}
	return opt
}

// promptContent is the prompt's content blocks as the client sent them
// (the Log keeps them for replay): the "prompt" member of params, which the
// connection has checked is JSON. When that is not valid UTF-8, which JSON
// text must be, the decoded blocks (mended) are encoded instead.
func promptContent(p *PromptRequest) json.RawMessage {
	if p.content != nil {
		return p.content
	}
	content, _ := json.Marshal(p.Prompt)
	return content
}

func (s *Server) setMode(ctx context.Context, p *SetModeRequest) (any, error) {
	sess, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	mode, err := runtime.ParseMode(p.ModeID)
	if err != nil {
		return nil, invalid("modeId", "%v", err)
	}
	if err := sess.SetMode(mode); err != nil {
		return nil, err
	}
	s.notify(ctx, sess.ID(), CurrentModeUpdate{SessionUpdate: "current_mode_update", CurrentModeID: string(mode)})
	return struct{}{}, nil
}

func (s *Server) setConfigOption(ctx context.Context, p *SetConfigOptionRequest) (any, error) {
	sess, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	if p.Type != "" && p.Type != "value_id" {
		return nil, invalid("type", "%q is not supported: %s is a select option", p.Type, p.ConfigID)
	}
	var value string
	if err := json.Unmarshal(p.Value, &value); err != nil {
		return nil, invalid("value", "must be a string value id")
	}
	switch p.ConfigID {
	case "mode":
		mode, err := runtime.ParseMode(value)
		if err != nil {
			return nil, invalid("value", "%v", err)
		}
		if err := sess.SetMode(mode); err != nil {
			return nil, err
		}
		s.notify(ctx, sess.ID(), CurrentModeUpdate{SessionUpdate: "current_mode_update", CurrentModeID: string(mode)})
	case "model":
		if err := sess.SetModel(value); err != nil {
			return nil, invalid("value", "%v", err)
		}
	default:
		return nil, invalid("configId", "unknown config option %q: want mode or model", p.ConfigID)
	}
	return SetConfigOptionResponse{ConfigOptions: s.configOptions(sess)}, nil
}

var modeNames = map[runtime.Mode][2]string{
	runtime.ModeAuto:     {"Auto", "Tools run without asking; paths stay inside the workspace."},
	runtime.ModeAsk:      {"Ask", "Changes (writes, edits, commands) ask for permission first."},
	runtime.ModeReadOnly: {"Read only", "Changes are refused; reading and searching work."},
}

func modeState(sess *runtime.Session) *ModeState {
	st := &ModeState{CurrentModeID: string(sess.Mode())}
	for _, m := range runtime.Modes {
		st.AvailableModes = append(st.AvailableModes, SessionMode{ID: string(m), Name: modeNames[m][0], Description: modeNames[m][1]})
	}
	return st
}

func (s *Server) configOptions(sess *runtime.Session) []ConfigOption {
	mode := ConfigOption{ID: "mode", Name: "Mode", Category: "mode", Type: "select", CurrentValue: string(sess.Mode())}
	for _, m := range runtime.Modes {
		mode.Options = append(mode.Options, SelectOption{Value: string(m), Name: modeNames[m][0], Description: modeNames[m][1]})
	}
	model := ConfigOption{ID: "model", Name: "Model", Category: "model", Type: "select", CurrentValue: sess.Model(),
		Description: "Model of the " + s.rt.ProviderName() + " provider"}
	for _, m := range s.rt.Models() {
		model.Options = append(model.Options, SelectOption{Value: m, Name: m})
	}
	return []ConfigOption{mode, model}
}

// notify sends one session/update. A failure means the client is gone;
// the runtime carries on and the Log keeps the evidence.
func (s *Server) notify(ctx context.Context, sessionID string, update any) {
	if err := s.conn.Notify(ctx, MethodSessionUpdate, SessionNotification{SessionID: sessionID, Update: update}); err != nil {
		s.log.Debug("session/update not sent", "err", err)
	}
}

// permissionAsker asks the client through session/request_permission.
type permissionAsker struct {
	s    *Server
	sess *runtime.Session
}

func (a *permissionAsker) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionOutcome, error) {
	root := a.sess.Workspace().Root()
	native := req.ChildSessionID != "" && a.s.nativeChildren()
	if native {
		a.s.mu.Lock()
		if c := a.s.children[req.ChildSessionID]; c != nil {
			root = c.cwd // an isolated child works in its snapshot
		}
		a.s.mu.Unlock()
	}
	call := ToolCall{
		ToolCallID: req.ToolCallID, Title: req.Title, Kind: string(req.Kind), Status: "pending",
		RawInput: rawInput(req.Arguments), Locations: locations(root, req.Locations),
	}
	if req.Command != "" {
		command := textBlock("```sh\n" + req.Command + "\n```")
		call.Content = append(call.Content, ToolCallContent{Type: "content", Content: &command})
	}
	if len(req.Diffs) > 0 {
		inputs := make([]diffInput, len(req.Diffs))
		for i, d := range req.Diffs {
			inputs[i] = diffInput(d)
		}
		call.Content = append(call.Content, diffContents(root, inputs)...)
	}
	if req.Note != "" {
		note := textBlock(req.Note)
		call.Content = append(call.Content, ToolCallContent{Type: "content", Content: &note})
	}
	if native {
		// The child's own session asks, about its own tool call; its
		// parent's session shows it waiting on the user meanwhile.
		a.s.notify(ctx, req.SessionID, SubagentUpdate{SessionUpdate: "subagent_update", SessionID: req.ChildSessionID,
			State: &SubagentState{State: "requires_action"}})
		defer a.s.notify(context.WithoutCancel(ctx), req.SessionID, SubagentUpdate{SessionUpdate: "subagent_update", SessionID: req.ChildSessionID,
			State: &SubagentState{State: "running"}})
		req.SessionID = req.ChildSessionID
	} else if req.SubagentID != "" {
		// A child's own tool calls are not shown to the client; its tool
		// call in the parent's session is what the question is about. A
		// client that shows children as sessions has no such call: the
		// question (a step's merge) is about the call that ran the
		// workflow, whose status it does not change either.
		if !a.s.nativeChildren() || req.ToolCallID == "" {
			call.ToolCallID = subagentCallID(req.SubagentID)
		}
		call.Status, call.Kind, call.Locations = "", "", nil
	}
	// What "always" covers: the session that asks. A Subagent asking
	// through its parent's session (a client without native children)
	// remembers it for itself only: its siblings ask again.
	always := "Always allow " + req.Tool + " in this session"
	if req.ChildSessionID != "" && !native {
		always = "Always allow " + req.Tool + " for this subagent"
	}
	params := RequestPermissionRequest{
		SessionID: req.SessionID,
		ToolCall:  call,
		Options: []PermissionOption{
			{OptionID: string(runtime.AllowOnce), Name: "Allow once", Kind: "allow_once"},
			{OptionID: string(runtime.AllowAlways), Name: always, Kind: "allow_always"},
			{OptionID: string(runtime.RejectOnce), Name: "Reject", Kind: "reject_once"},
		},
	}
	var resp RequestPermissionResponse
	// After session/cancel the client answers "cancelled" itself to the
	// requests of the session it cancelled; a $/cancel_request would
	// cross its answer. A request it was not told to drop is withdrawn:
	// its session was closed (no session/cancel came), or it is a
	// child's, whose parent the client cancelled.
	cancelled, ended := a.s.askStarted(req.SessionID)
	defer ended()
	ctx = rpc.WithCancelNotice(ctx, func() bool { return !cancelled() })
	var answer json.RawMessage
	if err := a.s.conn.Call(ctx, MethodRequestPermission, params, &answer); err != nil {
		return runtime.PermissionCancelled, err
	}
	if err := json.Unmarshal(answer, &resp); err != nil {
		// Said as what was wrong with the answer and what one looks like:
		// the user and the model read it in the tool call's failure.
		shown := tools.Truncate(string(answer), 200)
		a.s.log.Warn("permission: the client's answer is not a permission outcome", "answer", shown, "err", err)
		return runtime.PermissionCancelled, fmt.Errorf("the client's answer %s is not a permission outcome: "+
			`want {"outcome":{"outcome":"selected","optionId":"allow_once"}} (or another option's id) or {"outcome":{"outcome":"cancelled"}}`, shown)
	}
	switch resp.Outcome.Outcome {
	case "cancelled":
		return runtime.PermissionCancelled, nil
	case "selected":
		switch o := runtime.PermissionOutcome(resp.Outcome.OptionID); o {
		case runtime.AllowOnce, runtime.AllowAlways, runtime.RejectOnce:
			return o, nil
		}
		a.s.log.Warn("permission: the client selected an unknown option; treating it as a rejection", "option", resp.Outcome.OptionID)
		return runtime.RejectOnce, nil
	}
	a.s.log.Warn("permission: the client answered an unknown outcome; treating it as a rejection", "outcome", resp.Outcome.Outcome)
	return runtime.RejectOnce, nil
}
