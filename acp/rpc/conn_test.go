package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testHandler is a Handler whose behaviour each test chooses by method.
type testHandler struct {
	mu    sync.Mutex
	notes []string
	noted chan struct{} // closed, and replaced, at every notification
	conn  *Conn
	// held receives the id of each "hold" request as it starts; each
	// then waits for release to close.
	held    chan json.RawMessage
	release chan struct{}
}

func (h *testHandler) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "echo":
		return params, nil
	case "appender":
		return appended("by AppendJSON"), nil
	case "panic":
		panic("boom")
	case "fail":
		return nil, errors.New("disk on fire")
	case "coded":
		return nil, Errorf(CodeInvalidParams, "invalid params: %q must be a string", "cwd")
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	case "hold":
		h.held <- params
		<-h.release
		return "released", nil
	case "notes":
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.notes), nil
	case "ask":
		// Calls the peer from inside a request, as session/prompt does with
		// session/request_permission.
		var answer string
		if err := h.conn.Call(ctx, "question", map[string]any{"q": "?"}, &answer); err != nil {
			return nil, err
		}
		return "peer said " + answer, nil
	}
	return nil, Errorf(CodeMethodNotFound, "method not found: %s", method)
}

func (h *testHandler) HandleNotification(_ context.Context, method string, _ json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notes = append(h.notes, method)
	close(h.noted)
	h.noted = make(chan struct{})
}

// awaitNotes blocks until n notifications were handled.
func (h *testHandler) awaitNotes(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.notes) < n {
		noted := h.noted
		h.mu.Unlock()
		<-noted
		h.mu.Lock()
	}
}

// pipes runs a Conn over two real OS pipes and returns the test's ends.
type pipes struct {
	t      *testing.T
	toConn *os.File
	lines  *bufio.Reader
	conn   *Conn
	h      *testHandler
}

func serveOverPipes(t *testing.T, opt Options) *pipes {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	h := &testHandler{noted: make(chan struct{}), held: make(chan json.RawMessage, 8), release: make(chan struct{})}
	c := Serve(inR, outW, inR.Close, h, opt)
	h.conn = c
	p := &pipes{t: t, toConn: inW, lines: bufio.NewReaderSize(outR, 1<<20), conn: c, h: h}
	t.Cleanup(func() {
		_ = inW.Close()
		// No deadline: a connection that never ends fails on go test's
		// timeout, with every goroutine's stack.
		<-c.Done()
		_ = outW.Close()
		_ = outR.Close()
	})
	return p
}

func (p *pipes) send(line string) {
	p.t.Helper()
	_, err := p.toConn.WriteString(line + "\n")
	require.NoError(p.t, err)
}

// next reads the next line the connection wrote, as a generic object. It
// waits as long as the connection takes: a reply that never comes fails on
// go test's timeout, not on a guess at how busy the machine is.
func (p *pipes) next() map[string]any {
	p.t.Helper()
	line, err := p.lines.ReadString('\n')
	require.NoError(p.t, err)
	var m map[string]any
	require.NoError(p.t, json.Unmarshal([]byte(line), &m), "line %q", line)
	return m
}

func requireError(t *testing.T, msg map[string]any, id any, code float64) string {
	t.Helper()
	require.Equal(t, "2.0", msg["jsonrpc"])
	require.Equal(t, id, msg["id"], "id must be echoed exactly")
	e, ok := msg["error"].(map[string]any)
	require.True(t, ok, "want an error reply, got %v", msg)
	require.Equal(t, code, e["code"])
	return e["message"].(string)
}

func TestTransportEdges(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		id      any
		code    float64
		message string
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":`, nil, CodeParseError, "parse error: invalid JSON"},
		{"not JSON at all", `hello`, nil, CodeParseError, "parse error: invalid JSON"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"echo"}]`, nil, CodeInvalidRequest, "batch requests are not supported: send one message per line"},
		{"no method", `{"jsonrpc":"2.0","id":8}`, float64(8), CodeInvalidRequest, `invalid request: "method" is missing`},
		{"wrong version", `{"jsonrpc":"1.0","id":9,"method":"echo"}`, float64(9), CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`},
		{"method not a string", `{"jsonrpc":"2.0","id":10,"method":5}`, float64(10), CodeInvalidRequest, `invalid request: "method" must be a string`},
		{"id of wrong type", `{"jsonrpc":"2.0","id":{"a":1},"method":"echo"}`, nil, CodeInvalidRequest, `invalid request: "id" must be a string, a number or null`},
		{"a JSON scalar", `42`, nil, CodeInvalidRequest, "invalid request: a message must be a JSON object"},
		{"unknown method", `{"jsonrpc":"2.0","id":11,"method":"nope"}`, float64(11), CodeMethodNotFound, "method not found: nope"},
		{"coded handler error", `{"jsonrpc":"2.0","id":12,"method":"coded"}`, float64(12), CodeInvalidParams, `invalid params: "cwd" must be a string`},
		{"plain handler error", `{"jsonrpc":"2.0","id":13,"method":"fail"}`, float64(13), CodeInternalError, "internal error: disk on fire"},
		{"handler panic", `{"jsonrpc":"2.0","id":14,"method":"panic"}`, float64(14), CodeInternalError, "internal error while handling panic"},
	}
	p := serveOverPipes(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.send(tt.line)
			msg := requireError(t, p.next(), tt.id, tt.code)
			require.Equal(t, tt.message, msg)
			// The connection still serves the next request.
			p.send(`{"jsonrpc":"2.0","id":"after","method":"echo","params":{"ok":true}}`)
			reply := p.next()
			require.Equal(t, "after", reply["id"])
			require.Equal(t, map[string]any{"ok": true}, reply["result"])
		})
	}
}

func TestIDsAreEchoedExactly(t *testing.T) {
	p := serveOverPipes(t, Options{})
	for _, id := range []string{`-1`, `-9007199254740991`, `0`, `18446744073709551615`, `"abc"`, `""`, `"-1"`, `1.5`, `null`} {
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":{}}`)
		line, err := p.lines.ReadString('\n')
		require.NoError(t, err)
		var raw struct {
			ID json.RawMessage `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &raw))
		require.Equal(t, id, string(raw.ID), "reply: %s", line)
	}
}

func TestCancelRequestCancelsTheNamedRequest(t *testing.T) {
	p := serveOverPipes(t, Options{})
	p.send(`{"jsonrpc":"2.0","id":-7,"method":"block"}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"block"}`)
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":-7}}`)
	msg := requireError(t, p.next(), float64(-7), CodeRequestCancelled)
	require.Equal(t, "request cancelled", msg)
	// Request 2 was not named and is still running: the next reply is for
	// a new request, not for 2.
	p.send(`{"jsonrpc":"2.0","id":3,"method":"echo","params":1}`)
	require.Equal(t, float64(3), p.next()["id"])
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":2}}`)
	requireError(t, p.next(), float64(2), CodeRequestCancelled)
}

func TestRequestsRunConcurrently(t *testing.T) {
	p := serveOverPipes(t, Options{})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"echo","params":"fast"}`)
	require.Equal(t, float64(2), p.next()["id"], "a blocked request must not hold up the next")
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`)
	require.Equal(t, float64(1), p.next()["id"])
}

func TestCallFromInsideARequestDoesNotDeadlock(t *testing.T) {
	p := serveOverPipes(t, Options{})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ask"}`)
	q := p.next()
	require.Equal(t, "question", q["method"])
	p.send(`{"jsonrpc":"2.0","id":` + jsonNumber(q["id"]) + `,"result":"yes"}`)
	reply := p.next()
	require.Equal(t, float64(1), reply["id"])
	require.Equal(t, "peer said yes", reply["result"])
}

// A request already waiting when the connection starts may call the peer at
// once: the handler has the connection (OnConn) and the connection its
// engine before the first message is handed over.
func TestARequestWaitingAtStartCanCallThePeer(t *testing.T) {
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	_, err = inW.WriteString(`{"jsonrpc":"2.0","id":1,"method":"ask"}` + "\n")
	require.NoError(t, err)
	h := &testHandler{noted: make(chan struct{})}
	c := Serve(inR, outW, inR.Close, h, Options{OnConn: func(c *Conn) { h.conn = c }})
	p := &pipes{t: t, toConn: inW, lines: bufio.NewReaderSize(outR, 1<<20), conn: c, h: h}
	t.Cleanup(func() {
		_ = inW.Close()
		<-c.Done()
		_ = outW.Close()
		_ = outR.Close()
	})
	q := p.next()
	require.Equal(t, "question", q["method"])
	p.send(`{"jsonrpc":"2.0","id":` + jsonNumber(q["id"]) + `,"result":"yes"}`)
	require.Equal(t, "peer said yes", p.next()["result"])
}

func TestCancelledCallSendsCancelRequest(t *testing.T) {
	p := serveOverPipes(t, Options{})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ask"}`)
	q := p.next()
	require.Equal(t, "question", q["method"])
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`)
	// The handler's Call ends with its context, tells the peer, and the
	// request answers cancelled.
	got := map[string]map[string]any{}
	for range 2 {
		m := p.next()
		if m["method"] == "$/cancel_request" {
			got["cancel"] = m
		} else {
			got["reply"] = m
		}
	}
	require.Equal(t, q["id"], got["cancel"]["params"].(map[string]any)["requestId"])
	requireError(t, got["reply"], float64(1), CodeRequestCancelled)
}

func TestNotificationsAreHandledInOrder(t *testing.T) {
	p := serveOverPipes(t, Options{})
	var want []string
	for i := range 200 {
		m := "n" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		want = append(want, m)
		p.send(`{"jsonrpc":"2.0","method":"` + m + `"}`)
	}
	// A request after them is answered only once they were read; give the
	// ordered queue time to drain, then compare.
	p.send(`{"jsonrpc":"2.0","id":1,"method":"echo"}`)
	p.next()
	p.h.awaitNotes(len(want))
	p.h.mu.Lock()
	defer p.h.mu.Unlock()
	require.Equal(t, want, p.h.notes)
}

func TestRepliesInFlightAreWrittenWhenInputCloses(t *testing.T) {
	p := serveOverPipes(t, Options{})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"hold"}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"hold"}`)
	<-p.h.held
	<-p.h.held // both requests are running
	require.NoError(t, p.toConn.Close())
	close(p.h.release)
	ids := map[float64]bool{}
	for range 2 {
		m := p.next()
		require.Equal(t, "released", m["result"])
		ids[m["id"].(float64)] = true
	}
	require.Equal(t, map[float64]bool{1: true, 2: true}, ids)
	<-p.conn.Done()
}

func TestInputClosingFailsCallsWaitingOnThePeer(t *testing.T) {
	p := serveOverPipes(t, Options{})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ask"}`)
	require.Equal(t, "question", p.next()["method"])
	require.NoError(t, p.toConn.Close())
	msg := requireError(t, p.next(), float64(1), CodeInternalError)
	require.Contains(t, msg, ErrPeerGone.Error())
}

// The limit is lowered to 64 KiB: the same code path as the 64 MiB default,
// without pushing 64 MiB through the race detector (17 s on an idle
// machine, far more on a busy one).
func TestOversizedLineIsRefusedAndTheConnectionGoesOn(t *testing.T) {
	const limit = 64 << 10
	p := serveOverPipes(t, Options{MaxLineBytes: limit})
	done := make(chan error, 1)
	go func() {
		big := `{"jsonrpc":"2.0","id":1,"method":"echo","params":"` + strings.Repeat("a", 3*limit) + `"}` + "\n"
		_, err := p.toConn.WriteString(big)
		done <- err
	}()
	// Its id is in its first bytes: the error names it.
	msg := requireError(t, p.next(), float64(1), CodeInvalidRequest)
	require.Equal(t, "message exceeds 65536 bytes", msg)
	require.NoError(t, <-done)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"echo","params":"ok"}`)
	require.Equal(t, "ok", p.next()["result"])

	// A line of exactly the limit is accepted.
	params := strings.Repeat("b", limit-len(`{"jsonrpc":"2.0","id":3,"method":"echo","params":""}`))
	p.send(`{"jsonrpc":"2.0","id":3,"method":"echo","params":"` + params + `"}`)
	require.Equal(t, params, p.next()["result"])
}

func TestTheDefaultLineLimitIs64MiB(t *testing.T) {
	require.Equal(t, 64<<20, newLineStream(strings.NewReader(""), io.Discard, nil, 0).maxLine)
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// An answer to one of our calls that is over the line limit fails that
// call at once, wherever its id is (encoders write it first or last):
// nothing waits for an answer that was dropped.
func TestOversizedAnswerFailsTheCall(t *testing.T) {
	const limit = 64 << 10
	big := strings.Repeat("a", 3*limit)
	for _, tt := range []struct {
		name   string
		answer func(id string) string
	}{
		{"id first", func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":"` + big + `"}}` }},
		{"id last", func(id string) string { return `{"jsonrpc":"2.0","result":{"content":"` + big + `"},"id":` + id + `}` }},
		{"id last, spaced", func(id string) string { return `{ "result" : "` + big + `" , "jsonrpc" : "2.0" , "id" : ` + id + ` }` }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := serveOverPipes(t, Options{MaxLineBytes: limit})
			p.send(`{"jsonrpc":"2.0","id":"q","method":"ask"}`)
			q := p.next()
			require.Equal(t, "question", q["method"])
			done := make(chan error, 1)
			go func() {
				_, err := p.toConn.WriteString(tt.answer(jsonNumber(q["id"])) + "\n")
				done <- err
			}()
			msg := requireError(t, p.next(), "q", CodeInternalError)
			require.Contains(t, msg, "too large")
			require.NoError(t, <-done)
			p.send(`{"jsonrpc":"2.0","id":2,"method":"echo","params":"ok"}`)
			require.Equal(t, "ok", p.next()["result"])
		})
	}
}

// A request is handled after the notifications sent before it: a client
// that cancels a turn and prompts again at once finds the cancel done.
func TestRequestsWaitForTheNotificationsBeforeThem(t *testing.T) {
	p := serveOverPipes(t, Options{})
	for i := range 100 {
		for range 10 {
			p.send(`{"jsonrpc":"2.0","method":"note"}`)
		}
		p.send(`{"jsonrpc":"2.0","id":1,"method":"notes"}`)
		require.Equal(t, float64(10*(i+1)), p.next()["result"])
	}
}

// The peer answered our call and then cancelled the request that made it
// (a permission answered, then the turn cancelled): the answer needs no
// $/cancel_request.
func TestAnsweredCallIsNotCancelled(t *testing.T) {
	p := serveOverPipes(t, Options{})
	for i := range 30 {
		id := jsonNumber(i + 1)
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ask"}`)
		q := p.next()
		require.Equal(t, "question", q["method"])
		p.send(`{"jsonrpc":"2.0","id":` + jsonNumber(q["id"]) + `,"result":"yes"}` + "\n" +
			`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":` + id + `}}`)
		reply := p.next()
		require.NotEqual(t, "$/cancel_request", reply["method"], "an answered call was cancelled: %v", reply)
		require.Equal(t, float64(i+1), reply["id"])
	}
}

// appended is a result that encodes itself: as an object, where
// json.Marshal would write a string, so a reply shows which way it went.
type appended string

func (a appended) AppendJSON(b []byte) []byte {
	return append(append(append(b, `{"made":"`...), a...), `"}`...)
}

func TestAJSONAppenderResultIsWrittenAsItAppendsItself(t *testing.T) {
	p := serveOverPipes(t, Options{})
	p.send(`{"jsonrpc":"2.0","id":7,"method":"appender"}`)
	line, err := p.lines.ReadString('\n')
	require.NoError(t, err)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":7,"result":{"made":"by AppendJSON"}}`, line)
}

// A peer may send a request with the id of one still running (JSON-RPC says
// it should not; editors have bugs). Both run, and the second stays
// cancellable after the first ends: the first's end removed the second from
// the requests to cancel, so input ending left it running and the connection
// never closed.
func TestARequestUnderAReusedIDStaysCancellable(t *testing.T) {
	p := serveOverPipes(t, Options{DrainTimeout: time.Millisecond})
	p.send(`{"jsonrpc":"2.0","id":5,"method":"hold"}`)
	p.send(`{"jsonrpc":"2.0","id":5,"method":"block"}`)
	p.send(`{"jsonrpc":"2.0","id":6,"method":"echo","params":1}`)
	<-p.h.held
	require.Equal(t, float64(6), p.next()["id"]) // both id 5s are running
	close(p.h.release)
	first := p.next()
	require.Equal(t, float64(5), first["id"])
	require.Equal(t, "released", first["result"])
	// The peer leaves: the request still running under id 5 is cancelled
	// once the drain is over, and answered.
	require.NoError(t, p.toConn.Close())
	requireError(t, p.next(), float64(5), CodeRequestCancelled)
	<-p.conn.Done()
}

// $/cancel_request names an id: every request running under it is cancelled.
func TestCancelRequestCancelsEveryRequestUnderAReusedID(t *testing.T) {
	p := serveOverPipes(t, Options{})
	p.send(`{"jsonrpc":"2.0","id":"x","method":"block"}`)
	p.send(`{"jsonrpc":"2.0","id":"x","method":"block"}`)
	p.send(`{"jsonrpc":"2.0","id":6,"method":"echo","params":1}`)
	require.Equal(t, float64(6), p.next()["id"]) // both are running
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"x"}}`)
	requireError(t, p.next(), "x", CodeRequestCancelled)
	requireError(t, p.next(), "x", CodeRequestCancelled)
}

// The first answer to a call decides it: a client that answers a
// permission request twice (reject, then allow) must not have the second
// replace the first before the call takes it.
func TestASecondAnswerToACallDoesNotReplaceTheFirst(t *testing.T) {
	answers := `{"jsonrpc":"2.0","id":7,"result":"first"}` + "\n" + `{"jsonrpc":"2.0","id":7,"result":"second"}` + "\n"
	s := newLineStream(strings.NewReader(answers), io.Discard, nil, 0)
	var dropped []string
	s.onInvalid = func(reason string) { dropped = append(dropped, reason) }
	s.await("7")
	var v json.RawMessage
	require.NoError(t, s.ReadObject(&v))
	second := s.ReadObject(&v) // the call has not taken its result yet
	require.JSONEq(t, `"first"`, string(s.result("7")), "the second answer replaced the first")
	require.ErrorIs(t, second, io.EOF, "the second answer is not handed on")
	require.Equal(t, []string{"a second answer to call 7 was dropped: the first one decides"}, dropped)

	// Over real pipes: every call gets its first answer.
	p := serveOverPipes(t, Options{})
	for i := range 20 {
		p.send(`{"jsonrpc":"2.0","id":` + jsonNumber(i+1) + `,"method":"ask"}`)
		q := p.next()
		require.Equal(t, "question", q["method"])
		p.send(`{"jsonrpc":"2.0","id":` + jsonNumber(q["id"]) + `,"result":"no"}` + "\n" +
			`{"jsonrpc":"2.0","id":` + jsonNumber(q["id"]) + `,"result":"yes"}`)
		reply := p.next()
		require.Equal(t, float64(i+1), reply["id"])
		require.Equal(t, "peer said no", reply["result"], "the second answer replaced the first")
	}
}

// lockedLog is a log a connection writes from its goroutines.
type lockedLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// An answer to no call waiting for one (an id never used, or a call that
// already ended: a late answer after a cancel) is dropped with a line in
// the log that names it. It was dropped without a word, so a client whose
// answers never arrived (wrong id type, say) left nothing to go on.
func TestAnAnswerToNoWaitingCallIsLogged(t *testing.T) {
	var log lockedLog
	p := serveOverPipes(t, Options{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	p.send(`{"jsonrpc":"2.0","id":99,"result":"late"}`)
	p.send(`{"jsonrpc":"2.0","id":"q","error":{"code":-32603,"message":"no"}}`)
	p.send(`{"jsonrpc":"2.0","id":6,"method":"echo","params":1}`)
	require.Equal(t, float64(6), p.next()["id"], "the connection goes on")
	require.Contains(t, log.String(), "an answer to call 99 was dropped: no call of this connection waits for one")
	require.Contains(t, log.String(), `an answer to call \"q\" was dropped`)
}
