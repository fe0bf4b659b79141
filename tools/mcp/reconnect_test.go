package mcp

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// fakeClock is the time of an http stream's reconnecting: each Sleep is
// told on sleeps and lasts until the test wakes it.
type fakeClock struct {
	sleeps chan time.Duration
	wake   chan struct{}

	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{sleeps: make(chan time.Duration), wake: make(chan struct{}), now: time.Unix(1e9, 0)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case c.sleeps <- d:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-c.wake:
		c.advance(d)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sleep waits for the stream to sleep, returns how long it asked for,
// and wakes it.
func (c *fakeClock) sleep() time.Duration {
	d := <-c.sleeps
	c.wake <- struct{}{}
	return d
}

// writeWatcher tells when the handler first writes (the SDK's GET stream
// is then open) and passes flushes through.
type writeWatcher struct {
	http.ResponseWriter
	once  sync.Once
	wrote chan struct{}
}

func (w *writeWatcher) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.once.Do(func() { close(w.wrote) })
	return n, err
}

func (w *writeWatcher) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// get is a GET the server was sent.
type get struct {
	lastEventID string
	sessionID   string
}

// TestEventStreamIsReopened: the GET stream dropped (as by a proxy's idle
// timeout) is reopened after a wait, resuming after the last event id:
// what the server sent meanwhile arrives, the session is the same, its
// tools stay, and nobody is told the server stopped.
func TestEventStreamIsReopened(t *testing.T) {
	gets := make(chan get, 4)
	open := make(chan struct{})
	drop := make(chan struct{})
	var later atomic.Bool // a GET after the first
	hs := newHTTPServerOpts(t, func(w http.ResponseWriter, r *http.Request, _, _ string, next http.Handler) bool {
		if r.Method != http.MethodGet {
			return false
		}
		gets <- get{r.Header.Get("Last-Event-ID"), r.Header.Get(sessionIDHeader)}
		if later.Swap(true) {
			return false
		}
		// The first stream is the SDK's, until the test drops it.
		ctx, cancel := context.WithCancel(r.Context())
		go func() {
			<-drop
			cancel()
		}()
		next.ServeHTTP(&writeWatcher{ResponseWriter: w, wrote: open}, r.WithContext(ctx))
		return true
	}, &sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})

	rec := newRecorder()
	opt := rec.options(t)
	clock := newFakeClock()
	opt.clock = clock
	s := startReady(t, []ServerConfig{{Name: "web", URL: hs.URL}}, opt)
	<-rec.changed // the first listing
	g1 := <-gets
	require.Empty(t, g1.lastEventID)
	<-open

	// A notification on the first stream.
	require.True(t, call(t, byName(t, s, "mcp__web__grow"), `{}`).OK)
	require.Equal(t, "call grow", hs.next(t))
	<-rec.changed
	byName(t, s, "mcp__web__late")

	close(drop)
	var d time.Duration
	select {
	case d = <-clock.sleeps:
	case n := <-rec.notices: // the connection ended with the stream
		t.Fatalf("a dropped stream stopped the server: %+v", n)
	}
	require.Equal(t, reconnectBase, d, "a stream that carried a message ended for no failure")
	// While it is down, calls go on, and the server's notification waits
	// in its event store.
	require.True(t, call(t, byName(t, s, "mcp__web__shrink"), `{}`).OK)
	require.Equal(t, "call shrink", hs.next(t))
	clock.wake <- struct{}{}

	g2 := <-gets
	require.NotEmpty(t, g2.lastEventID, "it resumes after the last event")
	require.Equal(t, g1.sessionID, g2.sessionID, "in the same session")
	<-rec.changed // the notification sent while the stream was down
	all, _ := s.Tools(nil)
	for _, tool := range all {
		require.NotEqual(t, "mcp__web__late", tool.Name())
	}
	require.True(t, call(t, byName(t, s, "mcp__web__echo"), `{"text":"still"}`).OK)
	require.Equal(t, StateRunning, s.Status()[0].State)
	select {
	case n := <-rec.notices:
		t.Fatalf("a reopened stream is no news: %+v", n)
	default:
	}
}

// TestEventStreamOfAnEndedSession: when the server has ended the session,
// reopening the stream gets 404 and the server is reported stopped.
func TestEventStreamOfAnEndedSession(t *testing.T) {
	gets := make(chan get, 4)
	var later atomic.Bool // a GET after the first
	hs := newHTTPServerWith(t, func(w http.ResponseWriter, r *http.Request, _, _ string, _ http.Handler) bool {
		if r.Method != http.MethodGet {
			return false
		}
		gets <- get{r.Header.Get("Last-Event-ID"), r.Header.Get(sessionIDHeader)}
		if later.Swap(true) {
			return false // the SDK's: it has ended the session by now
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		return true // the first stream ends at once
	})
	rec := newRecorder()
	opt := rec.options(t)
	clock := newFakeClock()
	opt.clock = clock
	s := startReady(t, []ServerConfig{{Name: "web", URL: hs.URL}}, opt)
	g1 := <-gets
	require.Equal(t, reconnectBase, <-clock.sleeps)

	// The session ends on the server (here: a DELETE of it).
	req, err := http.NewRequest(http.MethodDelete, hs.URL, nil)
	require.NoError(t, err)
	req.Header.Set(sessionIDHeader, g1.sessionID)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
	clock.wake <- struct{}{}

	n := <-rec.notices
	require.Contains(t, n.Title, `MCP server "web" stopped (it ended the session: reopening its event stream got 404 Not Found); its `)
	require.Equal(t, StateStopped, s.Status()[0].State)
	all, _ := s.Tools(nil)
	require.Empty(t, all, "its tools are withdrawn")
}

// TestAServerWhoseFirstEventStreamIs404Runs: a server with sessions that
// routes only POST answers the first GET 404 ("Cannot GET /mcp"): it has
// no stream, and runs with its tools, as before streams were reopened.
func TestAServerWhoseFirstEventStreamIs404Runs(t *testing.T) {
	gets := make(chan struct{}, 4)
	hs := newHTTPServerWith(t, func(w http.ResponseWriter, r *http.Request, _, _ string, _ http.Handler) bool {
		if r.Method != http.MethodGet {
			return false
		}
		gets <- struct{}{}
		http.Error(w, "Cannot GET /mcp", http.StatusNotFound)
		return true
	})
	rec := newRecorder()
	opt := rec.options(t)
	opt.clock = newFakeClock()
	s := startReady(t, []ServerConfig{{Name: "web", URL: hs.URL}}, opt)
	<-gets
	require.Equal(t, StateRunning, s.Status()[0].State)
	all, _ := s.Tools(nil)
	require.NotEmpty(t, all)
}

// TestEventStreamReopeningIsBounded: failed attempts to reopen the stream
// wait longer each time (from the server's retry, when it gives one), and
// after reconnectTries in a row the server is reported stopped; a stream
// that lasted is no failure.
func TestEventStreamReopeningIsBounded(t *testing.T) {
	tests := []struct {
		name  string
		first string        // what the first stream carries before it ends
		lasts time.Duration // how long it lasts
		want  []time.Duration
	}{
		// A stream that ended at once is the first failed attempt: five
		// reopens follow it, each waiting twice the one before.
		{"no retry", "", 0, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{"the server's retry", "retry: 3000\n\n", 0, []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second, 24 * time.Second, 30 * time.Second}},
		// After a stream that lasted, six reopens: the first after the
		// base wait, each one after twice the wait before.
		{"a stream that lasted", ": idle\n\n", streamHealthy, []time.Duration{500 * time.Millisecond,
			time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			gets := 0
			var mu sync.Mutex
			hs := newHTTPServerWith(t, func(w http.ResponseWriter, r *http.Request, _, _ string, _ http.Handler) bool {
				if r.Method != http.MethodGet {
					return false
				}
				mu.Lock()
				gets++
				n := gets
				mu.Unlock()
				if n > 1 {
					http.Error(w, "the proxy's upstream is away", http.StatusServiceUnavailable)
					return true
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte(tt.first))
				w.(http.Flusher).Flush()
				clock.advance(tt.lasts)
				return true
			})
			rec := newRecorder()
			opt := rec.options(t)
			opt.clock = clock
			startReady(t, []ServerConfig{{Name: "web", URL: hs.URL}}, opt)
			var got []time.Duration
			for range tt.want {
				got = append(got, clock.sleep())
			}
			require.Equal(t, tt.want, got)
			n := <-rec.notices
			require.Contains(t, n.Title, `MCP server "web" stopped (its event stream could not be reopened: 6 attempts in a row failed, the last with: the server answered 503 Service Unavailable)`)
			mu.Lock()
			require.Equal(t, len(tt.want)+1, gets)
			mu.Unlock()
		})
	}
}
