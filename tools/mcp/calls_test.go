package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

// TestCancelledCallsAreForgotten: every call cancelled while the server
// works on it is forgotten at once, over both transports; the engine's
// own calls kept each one until an answer came, which a server told to
// cancel never sends.
func TestCancelledCallsAreForgotten(t *testing.T) {
	const calls = 16
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			rec := newRecorder()
			var cfg ServerConfig
			var event func() string // the next thing that happens in the server
			if transport == "http" {
				hs := newHTTPServer(t)
				cfg = ServerConfig{Name: "srv", URL: hs.URL}
				event = func() string { return hs.next(t) }
			} else {
				cfg = stdioConfig(t, "srv")
				event = func() string {
					for line := range rec.stderr {
						if strings.HasPrefix(line, "call ") || strings.HasPrefix(line, "cancelled ") {
							return line
						}
					}
					return ""
				}
			}
			s := startReady(t, []ServerConfig{cfg}, rec.options(t))
			slow := byName(t, s, "mcp__srv__slow")
			session := s.servers[0].session

			ctx, cancel := context.WithCancel(context.Background())
			results := make(chan tools.Result, calls)
			for range calls {
				go func() { results <- slow.Run(ctx, tools.Env{}, json.RawMessage(`{}`)) }()
			}
			for range calls {
				require.Equal(t, "call slow", event())
			}
			require.Equal(t, calls, session.pendingCalls(), "every call waits")
			cancel()
			for range calls {
				require.Equal(t, tools.ErrCancelled, (<-results).Error.Kind)
			}
			require.Zero(t, session.pendingCalls(), "the cancelled calls are forgotten")
			for range calls {
				require.Equal(t, "cancelled slow", event(), "the server was told")
			}

			// The connection goes on.
			res := call(t, byName(t, s, "mcp__srv__echo"), `{"text":"after"}`)
			require.True(t, res.OK, "%+v", res)
			require.Zero(t, session.pendingCalls())
		})
	}
}

// TestInitializeIsNeverCancelled: the MCP specification forbids a client
// to cancel initialize; one that takes too long is given up on by closing
// the connection, and notifications/cancelled is never sent for it.
func TestInitializeIsNeverCancelled(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		var mu sync.Mutex
		var sent []string
		asked, ended := make(chan struct{}), make(chan struct{})
		hs := newHTTPServerWith(t, func(w http.ResponseWriter, r *http.Request, method, _ string, _ http.Handler) bool {
			mu.Lock()
			sent = append(sent, method)
			mu.Unlock()
			if method == "initialize" {
				close(asked)
				<-r.Context().Done() // never answered: the client gives up
				close(ended)
			}
			return true
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := connect(ctx, newHTTPStream(hs.URL, nil), "test", slog.New(slog.DiscardHandler), nil, nil)
			done <- err
		}()
		<-asked
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		<-ended // the client closed the request: the connection is closed
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []string{"initialize"}, sent, "nothing else was sent: no notifications/cancelled")
	})
	t.Run("stdio", func(t *testing.T) {
		// A server that never answers and says on stderr what it reads.
		cfg := ServerConfig{Name: "mute", Command: "/bin/sh", Args: []string{"-c", "cat >&2"}}
		rec := newRecorder()
		p, err := startProcess(cfg, t.TempDir(), slog.New(stderrHandler{rec.stderr}), maxMessage)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := connect(ctx, p.stream(), "test", slog.New(slog.DiscardHandler), nil, nil)
			done <- err
		}()
		require.Contains(t, <-rec.stderr, `"method":"initialize"`)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		// connect returned once the server was stopped and its stderr read
		// to the end: all it was sent is in rec.stderr.
		<-p.exited
		close(rec.stderr)
		for line := range rec.stderr {
			require.NotContains(t, line, "notifications/cancelled")
		}
	})
}
