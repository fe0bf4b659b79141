// Package wiretest is a fake model server for provider tests: it replays
// recorded wire bytes (SSE streams, error bodies) exactly, in pieces, and
// can stall or drop the connection to stage faults.
package wiretest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Reply is one answer of the fake server.
type Reply struct {
	// Status defaults to 200.
	Status int
	// Delay holds the response back, headers included.
	Delay time.Duration
	// Header is added to the response; Content-Type defaults to
	// text/event-stream for 200 and application/json otherwise.
	Header map[string]string
	// Body is written in pieces of Chunk bytes (0: all at once), each
	// flushed, with Pause between them.
	Body  string
	Chunk int
	Pause time.Duration
	// Stall keeps the connection open, silent, after Body until the client
	// goes away.
	Stall bool
	// Drop resets the connection before any response, headers included.
	Drop bool
	// Cut closes the connection after Body, without ending the response;
	// Reset does it with a TCP reset, as a crashed server or proxy does.
	Cut, Reset bool
}

// Request is what the server received.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Server is an httptest server that answers with its Replies in turn,
// repeating the last one.
type Server struct {
	*httptest.Server
	stop chan struct{}
	gone chan int

	mu       sync.Mutex
	replies  []Reply
	answer   func(n int, body []byte) Reply
	requests []Request
}

// Answer makes the server choose each reply from the request: n is the
// request's number (0-based), body what it carried. It replaces the
// Replies, for servers that judge what they receive.
func (s *Server) Answer(f func(n int, body []byte) Reply) {
	s.mu.Lock()
	s.answer = f
	s.mu.Unlock()
}

// New starts a server on 127.0.0.1, closed when the test ends.
func New(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{replies: replies, stop: make(chan struct{}), gone: make(chan int, 64)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, ending stalled replies first.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.mu.Unlock()
	s.Server.Close()
}

// Gone receives the number (0-based) of each request whose client hung up
// while the server was still answering it: delaying, pausing between
// pieces, or stalling.
func (s *Server) Gone() <-chan int { return s.gone }

// WaitGone waits until a client hangs up. It has no deadline of its own: a
// client that never hangs up fails on go test's timeout, with every
// goroutine's stack, however busy the machine is.
func (s *Server) WaitGone() { <-s.gone }

// Requests returns what the server received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
	rep := Reply{Status: http.StatusNotFound, Body: `{"error":{"message":"no reply staged"}}`}
	if len(s.replies) > 0 {
		rep = s.replies[min(n, len(s.replies)-1)]
	}
	answer := s.answer
	s.mu.Unlock()
	if answer != nil {
		rep = answer(n, body)
	}
	clientGone := func() {
		select {
		case s.gone <- n:
		default:
		}
	}

	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			clientGone()
			return
		case <-s.stop:
			return
		}
	}
	if rep.Drop {
		hangUp(w, true)
		return
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status == http.StatusOK {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	flusher := w.(http.Flusher)
	flusher.Flush()
	data := rep.Body
	size := rep.Chunk
	if size <= 0 {
		size = len(data)
	}
	for len(data) > 0 {
		k := min(size, len(data))
		if _, err := io.WriteString(w, data[:k]); err != nil {
			return
		}
		flusher.Flush()
		data = data[k:]
		if len(data) > 0 && rep.Pause > 0 {
			select {
			case <-time.After(rep.Pause):
			case <-r.Context().Done():
				clientGone()
				return
			case <-s.stop:
				return
			}
		}
	}
	switch {
	case rep.Cut, rep.Reset:
		hangUp(w, rep.Reset)
	case rep.Stall:
		select {
		case <-r.Context().Done():
			clientGone()
		case <-s.stop:
		}
	}
}

// NoLeaks checks, when the test ends, that no goroutine it started is
// still running. Call it first, so that it runs after every other cleanup
// (servers closed, idle connections released).
func NoLeaks(t *testing.T) {
	t.Helper()
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
}

// hangUp closes the connection under the handler, with a TCP reset when
// asked.
func hangUp(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// File returns the content of a testdata file.
func File(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ClosedURL returns an http URL on 127.0.0.1 where nothing listens.
func ClosedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}
