package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MCP's streamable http transport, as a JSON-RPC object stream: every
// message the client writes is POSTed to the endpoint; the answer comes
// back as the POST's JSON body or as server-sent events on it, and what
// the server sends on its own comes on a GET stream opened after
// initialization. The engine reads all of them from one queue.

// Headers of the transport.
const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "Mcp-Protocol-Version"
)

// closeGrace bounds the DELETE that ends the server's session.
const closeGrace = 2 * time.Second

// Reopening the stream the server sends on by itself (the GET stream),
// which a proxy's idle timeout or a server's restart of its streams ends
// while the session goes on.
const (
	// reconnectBase is the wait before reopening it, doubled for each
	// attempt in a row that failed, up to reconnectMax; the server's retry
	// field, when it sends one, takes its place.
	reconnectBase = 500 * time.Millisecond
	reconnectMax  = 30 * time.Second
	// reconnectTries failed attempts in a row (a stream that ended at once
	// is one), and the server is taken as gone (as when its session ends).
	reconnectTries = 6
	// streamHealthy: a stream that lasted this long, or carried a message,
	// ended for a reason of its own (an idle timeout), not for a failure.
	streamHealthy = 10 * time.Second
)

// clock is time as the stream's reconnecting sees it; tests give their own.
type clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends (then it returns ctx's error).
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type httpStream struct {
	url     string
	headers []Header
	client  *http.Client
	clock   clock
	max     int // bytes of one answer or event (maxMessage)

	ctx    context.Context // ends every request and reader at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // POSTs of calls, and stream readers

	incoming  chan []byte
	closeOnce sync.Once

	mu        sync.Mutex
	sessionID string
	version   string
	calls     map[uint64]context.CancelFunc // POSTs of calls still open
	failed    map[uint64]error              // calls the transport could not deliver
	closed    bool
	endErr    error // why the stream ended the connection by itself
}

func newHTTPStream(url string, headers []Header) *httpStream {
	ctx, cancel := context.WithCancel(context.Background())
	transport := http.DefaultTransport.(*http.Transport).Clone()
	return &httpStream{url: url, headers: headers, client: &http.Client{Transport: transport}, clock: realClock{}, max: maxMessage,
		ctx: ctx, cancel: cancel, incoming: make(chan []byte, 16),
		calls: map[uint64]context.CancelFunc{}, failed: map[uint64]error{}}
}

// envelope is what the stream reads of a message to route it.
type envelope struct {
	ID     *json.RawMessage `json:"id"`
	Method string           `json:"method"`
}

func (s *httpStream) WriteObject(obj any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return err
	}
	if env.ID == nil || env.Method == "" {
		// A notification or a reply: the server accepts it at once. The
		// engine holds its send lock while this runs, and ignores contexts,
		// so a server that does not accept it in time fails the send
		// instead of holding every other call and cancel behind it.
		ctx, cancel := context.WithTimeout(s.ctx, cancelGrace)
		defer cancel()
		resp, err := s.post(ctx, body)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode >= 300 {
			return fmt.Errorf("sending %q: the server answered %s", env.Method, resp.Status)
		}
		return nil
	}
	// A call: its answer may take as long as the tool, so it is read in
	// the background (the engine holds its send lock while writing).
	id, _ := strconv.ParseUint(string(*env.ID), 10, 64)
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return errors.New("the connection is closed")
	}
	s.calls[id] = cancel
	s.wg.Add(1)
	s.mu.Unlock()
	go func() { // ends with the answer, or when the call ends or the stream closes
		defer s.wg.Done()
		defer cancel()
		if err := s.roundTrip(ctx, env.Method, *env.ID, body); err != nil && ctx.Err() == nil {
			s.fail(id, *env.ID, err)
		}
	}()
	return nil
}

// roundTrip POSTs a call and queues what comes back. An event stream that
// ends without the call's answer is an error: nothing else would ever
// answer it, and its caller would wait until its timeout.
func (s *httpStream) roundTrip(ctx context.Context, method string, id json.RawMessage, body []byte) error {
	resp, err := s.post(ctx, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2<<10))
		return fmt.Errorf("sending %q: the server answered %s: %s", method, resp.Status, strings.TrimSpace(string(msg)))
	}
	if id := resp.Header.Get(sessionIDHeader); id != "" {
		s.mu.Lock()
		if s.sessionID == "" {
			s.sessionID = id
		}
		s.mu.Unlock()
	}
	switch mediaType(resp) {
	case "application/json":
		msg, err := io.ReadAll(io.LimitReader(resp.Body, int64(s.max)+1))
		if err != nil {
			return fmt.Errorf("reading the answer to %q: %w", method, err)
		}
		if len(msg) > s.max {
			return tooLarge(fmt.Sprintf("the answer to %q", method), s.max)
		}
		s.queue(ctx, msg)
		return nil
	case "text/event-stream":
		answered, err := s.readEvents(ctx, resp.Body, id, &sseState{})
		if err == nil && !answered {
			err = fmt.Errorf("the server ended the stream of its answer to %q before answering", method)
		}
		return err
	}
	return fmt.Errorf("the answer to %q has the content type %q, neither JSON nor an event stream", method, resp.Header.Get("Content-Type"))
}

func (s *httpStream) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	s.setHeaders(req)
	return s.client.Do(req)
}

func (s *httpStream) setHeaders(req *http.Request) {
	for _, h := range s.headers {
		req.Header.Set(h.Name, h.Value)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessionID != "" {
		req.Header.Set(sessionIDHeader, s.sessionID)
	}
	if s.version != "" {
		req.Header.Set(protocolVersionHeader, s.version)
	}
}

// sseState is what a client keeps of an event stream to reopen it.
type sseState struct {
	lastEventID string        // the id of the last event dispatched
	retry       time.Duration // the server's retry field; 0 if none
	messages    int           // message events read
}

// readEvents queues the data of every message event of a server-sent
// event stream until it ends, noting ids and retry in st; answered says
// whether one of them was the answer to the call with id (nil: the GET
// stream, which answers none).
func (s *httpStream) readEvents(ctx context.Context, body io.Reader, id json.RawMessage, st *sseState) (answered bool, err error) {
	r := bufio.NewReaderSize(&lineLimit{r: body, max: s.max, what: "a line of its event stream"}, 64<<10)
	var data []byte
	event := ""
	var eventID *string // the id field of the event being read, if any
	field := func(line []byte, name string) ([]byte, bool) {
		if !bytes.HasPrefix(line, []byte(name+":")) {
			return nil, false
		}
		return bytes.TrimPrefix(line[len(name)+1:], []byte(" ")), true
	}
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 { // the end of an event
				if eventID != nil { // set at dispatch: a torn event is not resumed past
					st.lastEventID = *eventID
				}
				if len(data) > 0 && (event == "" || event == "message") {
					answered = answered || answers(data, id)
					st.messages++
					s.queue(ctx, data)
				}
				data, event, eventID = nil, "", nil
			} else if v, ok := field(line, "data"); ok {
				if data != nil {
					data = append(data, '\n')
				}
				if len(data)+len(v) > s.max {
					return answered, tooLarge("an event it sent", s.max)
				}
				data = append(data, v...)
			} else if v, ok := field(line, "event"); ok {
				event = strings.TrimSpace(string(v))
			} else if v, ok := field(line, "id"); ok && !bytes.ContainsRune(v, 0) {
				id := string(v)
				eventID = &id
			} else if v, ok := field(line, "retry"); ok {
				if ms, err := strconv.ParseUint(string(v), 10, 31); err == nil {
					st.retry = time.Duration(ms) * time.Millisecond
				}
			}
		}
		if err == io.EOF {
			return answered, nil
		}
		if err != nil {
			return answered, err
		}
	}
}

// answers reports whether msg is the answer (a result or an error) to the
// call with id.
func answers(msg []byte, id json.RawMessage) bool {
	if id == nil {
		return false
	}
	var env envelope
	return json.Unmarshal(msg, &env) == nil && env.ID != nil && env.Method == "" &&
		bytes.Equal(bytes.TrimSpace(*env.ID), bytes.TrimSpace(id))
}

func (s *httpStream) queue(ctx context.Context, msg []byte) {
	select {
	case s.incoming <- msg:
	case <-ctx.Done():
	}
}

// fail answers a call the transport could not deliver, so that its caller
// hears of it; callFailed then has the error.
func (s *httpStream) fail(id uint64, rawID json.RawMessage, err error) {
	s.mu.Lock()
	_, waiting := s.calls[id]
	if waiting {
		s.failed[id] = err
	}
	s.mu.Unlock()
	if !waiting {
		return // its caller is gone: nobody would take the error
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rawID,
		"error": map[string]any{"code": codeTransport, "message": err.Error()}})
	s.queue(s.ctx, msg)
}

func (s *httpStream) callFailed(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.failed[id]
	delete(s.failed, id)
	return err
}

// callEnded stops reading the answer of a call its caller no longer waits
// for.
func (s *httpStream) callEnded(id uint64) {
	s.mu.Lock()
	cancel := s.calls[id]
	delete(s.calls, id)
	delete(s.failed, id) // an error nobody took any more
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// negotiated records the protocol version, sent with every later request,
// and opens the stream on which the server sends on its own.
func (s *httpStream) negotiated(version string) {
	s.mu.Lock()
	s.version = version
	s.wg.Add(1)
	s.mu.Unlock()
	go func() { // ends when the stream closes, or the server is taken as gone
		defer s.wg.Done()
		s.listen()
	}()
}

// listen keeps the GET stream open for the session's life: when it ends
// (a proxy's idle timeout, the server's restart of its streams), it is
// reopened after a wait, resuming after the last event id the server
// sent, while the session and its tools stay. A server without the
// stream (405, or anything but an event stream at first) is fine. The
// connection ends only when the server ends the session (404) or the
// stream cannot be reopened in reconnectTries attempts in a row.
func (s *httpStream) listen() {
	var st sseState
	var lastErr error
	// failures counts the attempts in a row that failed (a stream that
	// ended at once among them) against reconnectTries; waits, the waits
	// since the last stream that ended well, doubles each wait.
	failures, waits := 0, 0
	for first := true; ; first = false {
		opened := s.clock.Now()
		resp, err := s.openListen(st.lastEventID)
		if s.ctx.Err() != nil {
			if err == nil {
				resp.Body.Close()
			}
			return
		}
		switch {
		case err != nil:
			failures++
			lastErr = err
		case resp.StatusCode == http.StatusMethodNotAllowed,
			first && (resp.StatusCode != http.StatusOK || mediaType(resp) != "text/event-stream"):
			// Right after initialize a 404 is a server that routes only
			// POST, not a session that ended.
			resp.Body.Close()
			return // the server sends nothing on its own
		case resp.StatusCode == http.StatusNotFound && s.session() != "":
			resp.Body.Close()
			s.end(fmt.Errorf("it ended the session: reopening its event stream got %s", resp.Status))
			return
		case resp.StatusCode != http.StatusOK || mediaType(resp) != "text/event-stream":
			resp.Body.Close()
			failures++
			lastErr = fmt.Errorf("the server answered %s", resp.Status)
		default:
			before := st.messages
			_, err := s.readEvents(s.ctx, resp.Body, nil, &st)
			resp.Body.Close()
			if s.ctx.Err() != nil {
				return
			}
			if st.messages > before || s.clock.Now().Sub(opened) >= streamHealthy {
				failures, waits = 0, 0
			} else {
				failures++
				lastErr = errors.New("the server ended it at once")
				if err != nil {
					lastErr = err
				}
			}
		}
		if failures >= reconnectTries {
			s.end(fmt.Errorf("its event stream could not be reopened: %d attempts in a row failed, the last with: %w", failures, lastErr))
			return
		}
		if s.clock.Sleep(s.ctx, reconnectDelay(waits, st.retry)) != nil {
			return
		}
		waits++
	}
}

// reconnectDelay is the wait before reopening the GET stream when it
// has waited waits times since a stream last ended well: the server's
// retry (or reconnectBase), doubled for each of those waits, at most
// reconnectMax.
func reconnectDelay(waits int, retry time.Duration) time.Duration {
	d := reconnectBase
	if retry > 0 {
		d = retry
	}
	for range waits {
		if d >= reconnectMax {
			break
		}
		d *= 2
	}
	return min(d, reconnectMax)
}

// openListen opens the GET stream, resuming after lastEventID if set.
func (s *httpStream) openListen(lastEventID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	s.setHeaders(req)
	return s.client.Do(req)
}

func (s *httpStream) session() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
}

// end ends the connection from the transport's side, saying why.
func (s *httpStream) end(why error) {
	s.mu.Lock()
	if s.endErr == nil {
		s.endErr = why
	}
	s.mu.Unlock()
	s.cancel()
}

// ended says why the stream ended the connection by itself, if it did.
func (s *httpStream) ended() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endErr
}

func (s *httpStream) ReadObject(v any) error {
	select {
	case msg := <-s.incoming:
		return json.Unmarshal(msg, v)
	case <-s.ctx.Done():
		return io.EOF
	}
}

// Close ends the server's session (DELETE, as the transport asks) and
// every request still open.
func (s *httpStream) Close() error {
	s.closeOnce.Do(s.close)
	return nil
}

func (s *httpStream) close() {
	s.mu.Lock()
	s.closed = true
	sessionID := s.sessionID
	s.mu.Unlock()
	if sessionID != "" {
		ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
		if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil); err == nil {
			s.setHeaders(req)
			if resp, err := s.client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		cancel()
	}
	s.cancel()
	s.wg.Wait()
	s.client.CloseIdleConnections()
}

func mediaType(resp *http.Response) string {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt
}
