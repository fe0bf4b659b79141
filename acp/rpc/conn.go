// Package rpc is Pixir's JSON-RPC 2.0 connection over a newline-delimited
// byte stream (stdin/stdout for ACP). It runs on sourcegraph/jsonrpc2 and
// closes the edges that engine leaves open: requests are handled concurrently
// with a context each, client notifications in the order received,
// $/cancel_request cancels the request it names, malformed input is answered
// instead of killing the connection, any id is echoed exactly, and replies in
// flight are written before the connection reports that it is done.
package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/pixir-go/pixir/internal/jsonraw"
)

// Handler serves what the peer sends. HandleRequest runs on its own goroutine
// with a context that ends when the peer cancels the request or the
// connection shuts down; it may call Conn.Call and Conn.Notify freely.
// HandleNotification calls run one at a time, in the order received, and
// all of those received before a reply to one of our Calls finish before that
// Call returns; so a notification handler must not wait on a Call.
type Handler interface {
	HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error)
	HandleNotification(ctx context.Context, method string, params json.RawMessage)
}

// Options tune a Conn. The zero value is usable.
type Options struct {
	Logger *slog.Logger
	// DrainTimeout bounds how long requests still running when input ends
	// may take to finish before their contexts are cancelled. Zero means 10s.
	DrainTimeout time.Duration
	// MaxLineBytes is the largest message accepted; zero means
	// MaxLineBytes. Tests lower it to exercise the limit cheaply.
	MaxLineBytes int
	// OnConn, if set, is given the connection before its first message is
	// read, so a handler that calls back through it (notifications, requests
	// to the peer) never sees it missing.
	OnConn func(*Conn)
}

// Conn is one JSON-RPC connection.
type Conn struct {
	engine *jsonrpc2.Conn
	stream *lineStream
	h      Handler
	log    *slog.Logger
	drain  time.Duration

	// ctx lives as long as the connection; request contexts derive from it.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// inflight holds the requests whose handlers are not yet past their
	// reply. A set, not a map by id: a peer may reuse an id while a request
	// with it still runs, and each must stay cancellable (by
	// $/cancel_request, and when input ends) until it ends itself.
	inflight map[*inflightRequest]struct{}
	handlers sync.WaitGroup

	// inputDone is closed when the peer's input has ended: no reply to our
	// own calls can arrive after that.
	inputDone chan struct{}
	// interrupted, once Interrupt is called, is closed when no request
	// is in flight (guarded by mu).
	interrupted chan struct{}
	// stopping is set by Interrupt: a request read after it starts
	// cancelled (guarded by mu).
	stopping bool
	done     chan struct{}
	// started is closed once engine is set: the engine's read loop may hand
	// over the first message before NewConn has returned.
	started chan struct{}

	// notes is the queue of notifications to handle, made with the
	// goroutine that handles them at the first one (read loop only): a
	// start pays for each goroutine, and a connection that gets no
	// notification needs neither.
	notes   chan *inbound
	notesWG sync.WaitGroup
	// notesQueued counts the notifications queued (read loop only);
	// notesHandled those handled, and notesChanged is closed, and
	// replaced, at each (both under mu). A request waits for the
	// notifications that came before it: a session/cancel then a prompt
	// sent at once must find the cancel done.
	notesQueued  uint64
	notesHandled uint64
	notesChanged chan struct{}
	// requestsRead counts the requests read (read loop only): a request's
	// number, and for a notification the requests read before it
	// (RequestSeq, RequestsBefore).
	requestsRead uint64

	nextID atomic.Uint64
}

// Serve starts serving r and writing to w. closeInput, if not nil, is called
// when the connection closes so a blocked read returns.
func Serve(r io.Reader, w io.Writer, closeInput func() error, h Handler, opt Options) *Conn {
	c := &Conn{
		h:            h,
		log:          opt.Logger,
		drain:        opt.DrainTimeout,
		inflight:     map[*inflightRequest]struct{}{},
		inputDone:    make(chan struct{}),
		done:         make(chan struct{}),
		started:      make(chan struct{}),
		notesChanged: make(chan struct{}),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.drain == 0 {
		c.drain = 10 * time.Second
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.stream = newLineStream(r, w, closeInput, opt.MaxLineBytes)
	c.stream.beforeEOF = c.inputEnded
	// A reply is delivered only after the notifications that arrived before
	// it were handled, so a caller sees a peer's updates before its answer.
	c.stream.beforeResponse = c.notesWG.Wait
	c.stream.onInvalid = func(reason string) { c.log.Warn("answered invalid input", "reason", reason) }
	c.stream.onUnawaited = func(reason string) { c.log.Info("dropped an answer", "reason", reason) }
	// The engine closes the stream once, last, when it disconnects (after
	// its pending calls are failed): the connection is done then. (Not a
	// goroutine waiting on DisconnectNotify: a start pays for every
	// goroutine, and this one would only wait.)
	c.stream.afterClose = func() {
		c.cancel()
		close(c.done)
	}

	if opt.OnConn != nil {
		opt.OnConn(c)
	}
	c.engine = jsonrpc2.NewConn(c.ctx, c.stream, dispatcher{c},
		jsonrpc2.SetLogger(slogPrinter{c.log}))
	close(c.started)
	return c
}

// Done is closed when the connection has ended and every reply was written.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close ends the connection now.
func (c *Conn) Close() error { return c.engine.Close() }

// Interrupt ends the work of the connection before its process does (on
// SIGTERM): every request's context ends, as when the peer cancels each,
// requests read later start ended, and it returns once every handler has
// replied (or could not) and run what follows its reply. A prompt's
// handler records its end before it replies, so the process may exit
// then without leaving a turn open in its Log.
func (c *Conn) Interrupt() {
	c.mu.Lock()
	c.stopping = true
	for req := range c.inflight {
		req.cancel()
	}
	if len(c.inflight) == 0 {
		c.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	c.interrupted = idle
	c.mu.Unlock()
	<-idle
}

// dispatcher adapts Conn to the engine's Handler interface.
type dispatcher struct{ c *Conn }

func (d dispatcher) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	<-d.c.started // a handler may call the peer through c.engine
	d.c.dispatch(ctx, conn, req)
}

// dispatch runs inside the engine's read loop, so it never blocks on work.
// req is the stand-in of a message the stream parked; the message itself is
// taken from the stream.
func (c *Conn) dispatch(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) {
	msg := c.stream.take(req)
	if msg == nil {
		c.log.Error("the engine handed over a request the stream did not park", "method", req.Method)
		return
	}
	if msg.id == nil {
		if msg.method == "$/cancel_request" {
			c.cancelRequest(msg.params)
			return
		}
		msg.seq = c.requestsRead
		if c.notes == nil {
			c.notes = make(chan *inbound, 1024)
			go c.runNotifications(c.notes)
		}
		c.notesWG.Add(1)
		select {
		case c.notes <- msg:
			c.notesQueued++
		case <-c.ctx.Done():
			c.notesWG.Done()
		}
		return
	}
	c.requestsRead++
	msg.seq = c.requestsRead
	ctx, cancel := context.WithCancel(c.ctx)
	running := &inflightRequest{id: string(msg.id), cancel: cancel}
	c.mu.Lock()
	c.inflight[running] = struct{}{}
	c.handlers.Add(1)
	if c.stopping {
		cancel()
	}
	c.mu.Unlock()
	go c.serveRequest(ctx, running, msg, c.notesQueued)
}

// inflightRequest is a request whose handler runs: its id as echoed, and
// how to cancel it.
type inflightRequest struct {
	id     string
	cancel context.CancelFunc
}

func (c *Conn) serveRequest(ctx context.Context, req *inflightRequest, msg *inbound, notesBefore uint64) {
	defer c.handlers.Done()
	id, method := msg.id, msg.method
	defer func() {
		c.mu.Lock()
		delete(c.inflight, req)
		if c.interrupted != nil && len(c.inflight) == 0 {
			close(c.interrupted)
			c.interrupted = nil
		}
		c.mu.Unlock()
		req.cancel()
	}()
	c.awaitNotes(ctx, notesBefore)
	hooks := &afterReply{seq: msg.seq}
	defer hooks.run()
	ctx = context.WithValue(ctx, afterReplyKey{}, hooks)
	result, err := c.call(ctx, method, msg.params)
	var raw []byte
	if err == nil {
		if raw, err = encode(result); err != nil {
			err = fmt.Errorf("encoding result: %w", err)
		}
	}
	// The reply is written even when ctx was cancelled: the peer is owed one.
	if err == nil {
		c.replyNotSent(method, c.stream.writeResult(id, raw))
		return
	}
	wire := toWireError(ctx, err)
	if wire.Code == CodeInternalError {
		c.log.Error("request failed", "method", method, "err", err)
	}
	c.replyNotSent(method, c.stream.writeError(id, wire))
}

type afterReplyKey struct{}

// afterReply holds what runs once a request's reply is written, and the
// request's number (RequestSeq).
type afterReply struct {
	mu  sync.Mutex
	fns []func()
	seq uint64
}

type requestsBeforeKey struct{}

// RequestSeq is the place of the request whose handler has ctx among the
// requests read from the peer (1, 2, …), or 0 outside a request. With
// RequestsBefore, it tells whether a notification was sent after a request
// whose handler has not got far yet: a session/cancel sent right after a
// session/prompt, handled before the prompt's handler began.
func RequestSeq(ctx context.Context) uint64 {
	if h, ok := ctx.Value(afterReplyKey{}).(*afterReply); ok {
		return h.seq
	}
	return 0
}

// RequestsBefore is, in a notification's handler, how many requests had
// been read from the peer before the notification.
func RequestsBefore(ctx context.Context) uint64 {
	n, _ := ctx.Value(requestsBeforeKey{}).(uint64)
	return n
}

func (h *afterReply) run() {
	h.mu.Lock()
	fns := h.fns
	h.fns = nil
	h.mu.Unlock()
	for _, f := range fns {
		f()
	}
}

// AfterReply runs f once the reply to the request whose handler has ctx is
// written (or could not be): what must follow the reply, such as updates
// of a session the client learns of from it. Outside a request, f runs at
// once.
func AfterReply(ctx context.Context, f func()) {
	if h, ok := ctx.Value(afterReplyKey{}).(*afterReply); ok {
		h.mu.Lock()
		h.fns = append(h.fns, f)
		h.mu.Unlock()
		return
	}
	f()
}

func (c *Conn) replyNotSent(method string, err error) {
	if err != nil {
		c.log.Warn("reply not sent", "method", method, "err", err)
	}
}

// call runs the handler and turns a panic into an internal error.
func (c *Conn) call(ctx context.Context, method string, params json.RawMessage) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panicked", "method", method, "panic", p, "stack", string(debug.Stack()))
			err = Errorf(CodeInternalError, "internal error while handling %s", method)
		}
	}()
	return c.h.HandleRequest(ctx, method, params)
}

func (c *Conn) runNotifications(notes <-chan *inbound) {
	for {
		select {
		case n := <-notes:
			func() {
				defer c.notesWG.Done()
				defer func() {
					if p := recover(); p != nil {
						c.log.Error("notification handler panicked", "method", n.method, "panic", p)
					}
				}()
				c.h.HandleNotification(context.WithValue(c.ctx, requestsBeforeKey{}, n.seq), n.method, n.params)
			}()
			c.mu.Lock()
			c.notesHandled++
			close(c.notesChanged)
			c.notesChanged = make(chan struct{})
			c.mu.Unlock()
		case <-c.ctx.Done():
			return
		}
	}
}

// awaitNotes waits until n notifications have been handled, or ctx ends.
func (c *Conn) awaitNotes(ctx context.Context, n uint64) {
	for {
		c.mu.Lock()
		handled, changed := c.notesHandled, c.notesChanged
		c.mu.Unlock()
		if handled >= n {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

func (c *Conn) cancelRequest(params json.RawMessage) {
	id, ok := jsonraw.Lookup(params, "requestId")
	if !ok || !isValidID(id) {
		c.log.Warn("ignored $/cancel_request without requestId")
		return
	}
	key := string(echoID(id))
	c.mu.Lock()
	defer c.mu.Unlock()
	for req := range c.inflight {
		if req.id == key { // every request running under a reused id
			req.cancel()
		}
	}
}

// inputEnded runs when the peer's input is exhausted, before the engine
// closes the connection. Calls we made can no longer be answered, so they
// fail at once; requests still running get DrainTimeout to reply.
func (c *Conn) inputEnded() {
	close(c.inputDone)
	c.mu.Lock()
	idle := len(c.inflight) == 0
	c.mu.Unlock()
	if idle {
		// Every handler is past its reply and its after-reply work, with
		// only handlers.Done left: nothing to bound, no goroutine to start.
		c.handlers.Wait()
		c.notesWG.Wait()
		return
	}
	finished := make(chan struct{})
	go func() {
		c.handlers.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(c.drain):
		c.log.Warn("input ended; cancelling requests still running")
		c.mu.Lock()
		for req := range c.inflight {
			req.cancel()
		}
		c.mu.Unlock()
		<-finished
	}
	// Let queued notifications run out before the connection context ends.
	c.notesWG.Wait()
}

// Notify sends a notification to the peer. Params are encoded once; a
// json.RawMessage is written as it is, once checked.
func (c *Conn) Notify(_ context.Context, method string, params any) error {
	return c.stream.writeNotification(method, params)
}

// Batch is a run of notifications written together: each is a whole line,
// and the lines reach the peer in order, in writes of about batchBytes
// instead of one write each (a session/load replays a whole session in
// one run). Other messages may come between batches, never inside a
// line. Flush writes what is held: the caller flushes before sending
// anything that must follow the batch (a reply, a notification of its
// own). A Batch is used by one goroutine.
type Batch struct {
	s   *lineStream
	buf []byte
	err error
}

// batchBytes is how much a Batch holds before it writes.
const batchBytes = 64 << 10

// Batch starts a batch of notifications.
func (c *Conn) Batch() *Batch { return &Batch{s: c.stream} }

// Notify adds a notification to the batch, writing the batch when it is
// full. After a failed write, every later call fails the same way.
func (b *Batch) Notify(method string, params any) error {
	if b.err != nil {
		return b.err
	}
	line, err := notificationLine(method, params)
	if err != nil {
		return err
	}
	b.buf = append(b.buf, line...)
	if len(b.buf) >= batchBytes {
		return b.Flush()
	}
	return nil
}

// Flush writes what the batch holds.
func (b *Batch) Flush() error {
	if b.err != nil || len(b.buf) == 0 {
		return b.err
	}
	b.err = b.s.writeLine(b.buf)
	b.buf = b.buf[:0]
	return b.err
}

// ErrPeerGone is returned by Call when the peer's input ended before it
// answered.
var ErrPeerGone = errors.New("the client closed its connection before answering")

// Call sends a request to the peer and waits for the answer. When ctx ends
// first, the peer is sent $/cancel_request for it and ctx's error returned.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	id := c.nextID.Add(1)
	key := strconv.FormatUint(id, 10)
	c.stream.await(key)
	defer c.stream.result(key) // drops an answer that came too late
	w, err := c.engine.DispatchCall(ctx, method, params, jsonrpc2.PickID(jsonrpc2.ID{Num: id}))
	if err != nil {
		return err
	}
	waitCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-c.inputDone:
			stop()
		case <-waitCtx.Done():
		}
	}()
	err = w.Wait(waitCtx, nil)
	switch {
	case err == nil:
		if raw := c.stream.result(key); result != nil && raw != nil {
			return json.Unmarshal(raw, result)
		}
		return nil
	case ctx.Err() != nil:
		// An answer that came as ctx ended (the peer answered a permission
		// request, then cancelled the turn) needs no cancelling.
		if !c.stream.wasAnswered(key) && cancelNoticeWanted(ctx) {
			_ = c.engine.Notify(context.Background(), "$/cancel_request", map[string]any{"requestId": id})
		}
		return ctx.Err()
	case waitCtx.Err() != nil:
		return ErrPeerGone
	}
	var wire *jsonrpc2.Error
	if errors.As(err, &wire) {
		if c.stream.answerTooLarge(key) {
			return fmt.Errorf("%w: %s", ErrAnswerTooLarge, wire.Message)
		}
		return &Error{Code: wire.Code, Message: wire.Message, Data: rawData(wire.Data)}
	}
	return err
}

type cancelNoticeKey struct{}

// WithCancelNotice returns a context for Call that decides, when it ends,
// whether the peer is sent $/cancel_request: wanted is asked then. An ACP
// client answers its pending permission requests itself after
// session/cancel, so those need none.
func WithCancelNotice(ctx context.Context, wanted func() bool) context.Context {
	return context.WithValue(ctx, cancelNoticeKey{}, wanted)
}

func cancelNoticeWanted(ctx context.Context) bool {
	if wanted, ok := ctx.Value(cancelNoticeKey{}).(func() bool); ok {
		return wanted()
	}
	return true
}

// ErrAnswerTooLarge is returned by Call when the peer's answer was longer
// than the largest message the connection accepts: it was dropped unread.
var ErrAnswerTooLarge = errors.New("the answer was too large to accept")

func rawData(d *json.RawMessage) json.RawMessage {
	if d == nil {
		return nil
	}
	return *d
}

// slogPrinter adapts slog to the engine's Printf logger.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Printf(format string, v ...any) {
	p.log.Debug(fmt.Sprintf(format, v...))
}
