package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

func TestToolName(t *testing.T) {
	tests := []struct{ server, tool, want string }{
		{"everything", "echo", "mcp__everything__echo"},
		{"GitHub Issues", "list.issues", "mcp__GitHub_Issues__list_issues"},
		{"", "ünïcode", "mcp______n_code"},
		{"srv", strings.Repeat("x", 80), "mcp__srv__" + strings.Repeat("x", 45) + "_" + shortHash("srv\x00"+strings.Repeat("x", 80))},
	}
	for _, tt := range tests {
		got := ToolName(tt.server, tt.tool)
		require.Equal(t, tt.want, got)
		require.LessOrEqual(t, len(got), maxToolName)
	}
	names := uniqueNames("s", []string{"a.b", "a_b", "c"}, func(string) bool { return false })
	require.Equal(t, "mcp__s__a_b", names[0])
	require.NotEqual(t, names[0], names[1])
	require.Equal(t, "mcp__s__c", names[2])
}

func TestCheck(t *testing.T) {
	require.NoError(t, Check([]ServerConfig{{Name: "a", Command: "x"}, {Name: "b", URL: "http://localhost:1/mcp"}}))
	err := Check([]ServerConfig{{Command: "x"}, {Name: "a", Command: "x"}, {Name: "a", URL: "ftp://x"}, {Name: "c"}, {Name: "d", Command: "x", URL: "http://x"}})
	require.Error(t, err)
	for _, want := range []string{"MCP server 1 has no name", `"a" is named twice`, `url "ftp://x" is not an http(s) URL`,
		`"c" has neither a command nor a url`, `"d" has both a command and a url`} {
		require.ErrorContains(t, err, want)
	}
}

// recorder collects what a Set tells its owner.
type recorder struct {
	notices chan Notice
	changed chan struct{}
	stderr  chan string
}

func newRecorder() *recorder {
	return &recorder{notices: make(chan Notice, 16), changed: make(chan struct{}, 64), stderr: make(chan string, 256)}
}

func (r *recorder) options(t *testing.T) Options {
	return Options{
		Dir: t.TempDir(), Version: "test",
		Logger:  slog.New(stderrHandler{r.stderr}),
		Notify:  func(n Notice) { r.notices <- n },
		Changed: func() { r.changed <- struct{}{} },
	}
}

// awaitStderr waits for a server's stderr line.
func (r *recorder) awaitStderr(t *testing.T, line string) {
	t.Helper()
	for got := range r.stderr {
		if got == line {
			return
		}
	}
}

// stderrHandler passes the stderr lines of servers to a channel.
type stderrHandler struct{ lines chan string }

func (h stderrHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h stderrHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "MCP server stderr" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "line" {
				select {
				case h.lines <- a.Value.String():
				default:
				}
			}
			return true
		})
	}
	return nil
}
func (h stderrHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h stderrHandler) WithGroup(string) slog.Handler      { return h }

// byName finds a tool of a set.
func byName(t *testing.T, s *Set, name string) tools.Tool {
	t.Helper()
	all, _ := s.Tools(nil)
	for _, tool := range all {
		if tool.Name() == name {
			return tool
		}
	}
	t.Fatalf("no tool %s among %d", name, len(all))
	return nil
}

func call(t *testing.T, tool tools.Tool, args string) tools.Result {
	t.Helper()
	return tool.Run(context.Background(), tools.Env{}, json.RawMessage(args))
}

func output(t *testing.T, r tools.Result) CallOutput {
	t.Helper()
	out, ok := r.Output.(CallOutput)
	require.True(t, ok, "output %#v", r.Output)
	return out
}

func startReady(t *testing.T, configs []ServerConfig, opt Options) *Set {
	t.Helper()
	s := Start(configs, opt)
	t.Cleanup(s.Close)
	require.NoError(t, s.Ready(context.Background()))
	return s
}

func TestStdioServerTools(t *testing.T) {
	rec := newRecorder()
	s := startReady(t, []ServerConfig{stdioConfig(t, "test srv")}, rec.options(t))
	st := s.Status()
	require.Len(t, st, 1)
	require.Equal(t, StateRunning, st[0].State, st[0].Error)
	require.Equal(t, "stdio", st[0].Transport)

	echo := byName(t, s, "mcp__test_srv__echo")
	require.Equal(t, tools.PostureRead, echo.Posture())
	require.Contains(t, echo.Description(), `Echoes its text.`)
	require.Contains(t, echo.Description(), `Tool "echo" of the MCP server "test srv"`)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(echo.Schema(), &schema))
	require.NotContains(t, schema, "$schema", "providers refuse $schema")
	require.Equal(t, "object", schema["type"])
	p := echo.Describe(nil)
	require.Equal(t, "test srv: Echo", p.Title)
	require.Equal(t, tools.KindFetch, p.Kind)
	require.Contains(t, p.Note, "workspace confinement does not bind it")

	note := byName(t, s, "mcp__test_srv__note")
	require.Equal(t, tools.PostureMutation, note.Posture(), "not annotated read-only: a mutation")
	require.Equal(t, tools.KindOther, note.Describe(nil).Kind)

	// Sanitised and provider-safe, and the root oneOf is not shown.
	wide := byName(t, s, "mcp__test_srv__wide_schema")
	require.NotContains(t, string(wide.Schema()), "oneOf")

	res := call(t, echo, `{"text":"hello"}`)
	require.True(t, res.OK, "%+v", res)
	require.Equal(t, "hello", output(t, res).Content)
	require.Equal(t, []tools.Block{{Type: "text", Text: "hello"}}, res.Blocks)
	rec.awaitStderr(t, "call echo")
}

func TestArgumentsAreCheckedBeforeTheCall(t *testing.T) {
	hs := newHTTPServer(t)
	s := startReady(t, []ServerConfig{{Name: "web", URL: hs.URL}}, newRecorder().options(t))
	echo := byName(t, s, "mcp__web__echo")

	tests := []struct {
		args string
		want []string
	}{
		{`{}`, []string{"/: missing property 'text'"}},
		{`{"text":"","times":0.5}`, []string{"/text: minLength: got 0, want 1", "/times: got number, want integer"}},
	}
	for _, tt := range tests {
		res := call(t, echo, tt.args)
		require.False(t, res.OK)
		require.Equal(t, tools.ErrInvalidArgs, res.Error.Kind)
		require.Equal(t, strings.Join(tt.want, "\n"), res.Error.Message)
		require.Equal(t, map[string]any{"problems": tt.want}, res.Error.Details)
	}
	for _, bad := range []string{``, `[1]`, `{"text":`} {
		res := call(t, echo, bad)
		require.Equal(t, tools.ErrInvalidArgs, res.Error.Kind, bad)
	}

	// Beyond the subset: anyOf is checked, $ref is not, and nothing valid
	// is refused.
	wide := byName(t, s, "mcp__web__wide_schema")
	res := call(t, wide, `{"id":true,"ref":7}`)
	require.Equal(t, []string{"/id: got boolean, want integer or string"}, res.Error.Details.(map[string]any)["problems"])
	require.True(t, call(t, wide, `{"id":7,"ref":{"x":1},"tags":["a"]}`).OK)

	// The server saw only the two valid calls.
	require.Equal(t, "call wide.schema", hs.next(t))
	require.Empty(t, hs.events)

	// A dry run checks and sends nothing.
	dry := echo.DryRun(context.Background(), tools.Env{}, json.RawMessage(`{"text":"x"}`))
	require.True(t, dry.OK)
	require.Empty(t, hs.events)
}

func TestResults(t *testing.T) {
	hs := newHTTPServer(t)
	s := startReady(t, []ServerConfig{{Name: "web", URL: hs.URL, Headers: []Header{{"Authorization", "Bearer sesame"}}}}, newRecorder().options(t))
	hs.mu.Lock()
	require.Equal(t, "Bearer sesame", hs.header.Get("Authorization"))
	hs.mu.Unlock()

	res := call(t, byName(t, s, "mcp__web__media"), `{}`)
	require.True(t, res.OK)
	out := output(t, res)
	require.Equal(t, strings.Join([]string{
		"here it is",
		"[image (image/png, 33 bytes): shown to the user, not readable here]",
		`[resource link "report": file:///tmp/report.txt (text/plain)]`,
		"<resource uri=\"mem://a\">\ninline text\n</resource>",
		"[resource mem://b (application/octet-stream, 3 bytes): binary, shown to the user, not readable here]",
	}, "\n"), out.Content)
	require.Len(t, res.Blocks, 5)
	require.Equal(t, "image", res.Blocks[1].Type)
	require.Equal(t, "image/png", res.Blocks[1].MimeType)
	require.NotEmpty(t, res.Blocks[1].Data)
	require.Equal(t, "resource_link", res.Blocks[2].Type)
	require.Equal(t, int64(42), *res.Blocks[2].Size)
	require.Equal(t, "inline text", res.Blocks[3].Text)
	require.Equal(t, "AQID", res.Blocks[4].Blob)

	// Structured content, once: the text that repeats it is dropped.
	res = call(t, byName(t, s, "mcp__web__weather"), `{}`)
	out = output(t, res)
	require.Empty(t, out.Content)
	env, err := json.Marshal(res)
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true,"output":{"structured_content":{"sky":"clear","temp":21}}}`, string(env))

	// The tool's own error: it ran and failed, in its words.
	res = call(t, byName(t, s, "mcp__web__fail"), `{}`)
	require.False(t, res.OK)
	require.Nil(t, res.Error)
	require.Equal(t, "no such ticket: PX-1", output(t, res).Content)

	// Big output is cut with a marker.
	res = call(t, byName(t, s, "mcp__web__big"), `{}`)
	out = output(t, res)
	require.Less(t, len(out.Content), textLimit+200)
	require.Contains(t, out.Content, "[… truncated ")
}

func TestCancelReachesTheServer(t *testing.T) {
	hs := newHTTPServer(t)
	cancelSlowCall(t, hs)
	require.Equal(t, "cancelled slow", hs.next(t), "notifications/cancelled reached the server")
}

// cancelSlowCall starts hs's slow tool, cancels it once the server has it
// and checks the caller hears "cancelled".
func cancelSlowCall(t *testing.T, hs *httpServer) {
	t.Helper()
	s := startReady(t, []ServerConfig{{Name: "web", URL: hs.URL}}, newRecorder().options(t))
	slow := byName(t, s, "mcp__web__slow")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result)
	go func() { done <- slow.Run(ctx, tools.Env{}, json.RawMessage(`{}`)) }()
	require.Equal(t, "call slow", hs.next(t))
	cancel()
	res := <-done
	require.Equal(t, tools.ErrCancelled, res.Error.Kind)
}

// TestAStreamThatEndsUnansweredFailsTheCall: a server that ends the
// event stream of a call's answer without answering (it is shutting down,
// or expects a reconnect Pixir does not make) fails the call at once; it
// does not leave it waiting for its timeout.
func TestAStreamThatEndsUnansweredFailsTheCall(t *testing.T) {
	hs := newHTTPServerWith(t, func(w http.ResponseWriter, _ *http.Request, method, tool string, _ http.Handler) bool {
		if method != "tools/call" || tool != "slow" {
			return false
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		return true // the stream ends here, with no event
	})
	s := startReady(t, []ServerConfig{{Name: "web", URL: hs.URL, ToolTimeout: time.Hour}}, newRecorder().options(t))
	res := call(t, byName(t, s, "mcp__web__slow"), `{}`)
	require.NotNil(t, res.Error)
	require.NotEqual(t, tools.ErrTimeout, res.Error.Kind, "it waited for its timeout")
	require.Contains(t, res.Error.Message, "ended the stream of its answer")
}

// TestADroppedRequestFailsTheCallAtOnce: an HTTP server that drops the
// connection of one call without answering ("Post …: EOF") fails that
// request; its session lives on, so the call neither waits for the
// server's end (it waited for the turn's, ignoring tool_timeout) nor
// says the server stopped. The turn's deadline only ends the test if the
// call hangs.
func TestADroppedRequestFailsTheCallAtOnce(t *testing.T) {
	hs := newHTTPServerWith(t, func(w http.ResponseWriter, _ *http.Request, method, tool string, _ http.Handler) bool {
		if method != "tools/call" || tool != "slow" {
			return false
		}
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = c.Close()
		}
		return true
	})
	s := startReady(t, []ServerConfig{{Name: "web", URL: hs.URL, ToolTimeout: time.Hour}}, newRecorder().options(t))
	turn, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res := byName(t, s, "mcp__web__slow").Run(turn, tools.Env{}, json.RawMessage(`{}`))
	require.NoError(t, turn.Err(), "the call waited for the turn's end: %+v", res.Error)
	require.NotNil(t, res.Error)
	require.Equal(t, tools.ErrInternal, res.Error.Kind)
	require.Contains(t, res.Error.Message, `calling the MCP server "web" failed`)
	require.Contains(t, res.Error.Message, "EOF")
	require.NotContains(t, res.Error.Message, "stopped")
	// The session lives on: the next call is answered.
	require.True(t, call(t, byName(t, s, "mcp__web__echo"), `{"text":"x"}`).OK)
}

// TestAServerThatNeverTakesTheCancelDoesNotHoldTheCall: the cancel of a
// call is a notification the server must accept; one that never does
// (busy with that very call) costs the caller a bounded wait, not its
// call for ever.
func TestAServerThatNeverTakesTheCancelDoesNotHoldTheCall(t *testing.T) {
	hs := newHTTPServerWith(t, func(w http.ResponseWriter, r *http.Request, method, _ string, next http.Handler) bool {
		if method != "notifications/cancelled" {
			return false
		}
		<-r.Context().Done() // not accepted while the client waits: it gives up
		// Only then does the server take it, so that its slow tool ends.
		next.ServeHTTP(w, r.Clone(context.Background()))
		return true
	})
	cancelSlowCall(t, hs)
	require.Equal(t, "cancelled slow", hs.next(t), "the server took the cancel once the client had given up")
}

func TestToolTimeout(t *testing.T) {
	hs := newHTTPServer(t)
	s := startReady(t, []ServerConfig{{Name: "web", URL: hs.URL, ToolTimeout: 50 * time.Millisecond}}, newRecorder().options(t))
	res := call(t, byName(t, s, "mcp__web__slow"), `{}`)
	require.Equal(t, tools.ErrTimeout, res.Error.Kind)
	require.Contains(t, res.Error.Message, `did not answer within 50ms`)
	require.Contains(t, res.Error.Message, `raise tool_timeout for the server "web"`)
	require.Equal(t, "call slow", hs.next(t))
	require.Equal(t, "cancelled slow", hs.next(t))
}

func TestToolListChanged(t *testing.T) {
	rec := newRecorder()
	s := startReady(t, []ServerConfig{stdioConfig(t, "grower")}, rec.options(t))
	<-rec.changed // the first listing
	gen := s.Generation()
	require.True(t, call(t, byName(t, s, "mcp__grower__grow"), `{}`).OK)
	<-rec.changed // notifications/tools/list_changed, then a new listing
	require.Greater(t, s.Generation(), gen)
	res := call(t, byName(t, s, "mcp__grower__late"), `{}`)
	require.True(t, res.OK, "%+v", res)
}

func TestServerCrashWithdrawsItsTools(t *testing.T) {
	rec := newRecorder()
	s := startReady(t, []ServerConfig{stdioConfig(t, "fragile"), stdioConfig(t, "sturdy")}, rec.options(t))
	crash := byName(t, s, "mcp__fragile__crash")
	echo := byName(t, s, "mcp__fragile__echo")

	res := call(t, crash, `{}`)
	require.False(t, res.OK)
	require.Equal(t, tools.ErrInternal, res.Error.Kind)
	require.Contains(t, res.Error.Message, `the MCP server "fragile" stopped during the call`)

	n := <-rec.notices
	require.Equal(t, "fragile", n.Server)
	require.Equal(t, SeverityError, n.Severity)
	require.Contains(t, n.Title, `MCP server "fragile" stopped (it exited: exit status 3); its `)
	require.Contains(t, n.Detail, "crashing on purpose")

	all, _ := s.Tools(nil)
	for _, tool := range all {
		require.False(t, strings.HasPrefix(tool.Name(), "mcp__fragile__"), "withdrawn: %s", tool.Name())
	}
	// A call through a tool the model still had is refused plainly.
	res = call(t, echo, `{"text":"x"}`)
	require.Equal(t, tools.ErrUnknownTool, res.Error.Kind)
	require.Contains(t, res.Error.Message, `the MCP server "fragile" is not running`)

	// The other server goes on.
	require.True(t, call(t, byName(t, s, "mcp__sturdy__echo"), `{"text":"still here"}`).OK)
	require.Equal(t, StateStopped, s.Status()[0].State)
	require.Equal(t, StateRunning, s.Status()[1].State)
}

func TestStartFailures(t *testing.T) {
	rec := newRecorder()
	opt := rec.options(t)
	s := startReady(t, []ServerConfig{
		{Name: "missing", Command: "/nonexistent/mcp-server"},
		{Name: "quitter", Command: "/bin/sh", Args: []string{"-c", "echo 'no config found' >&2; exit 7"}},
		{Name: "ok", URL: newHTTPServer(t).URL},
	}, opt)
	got := map[string]Notice{}
	for range 2 {
		n := <-rec.notices
		got[n.Server] = n
	}
	require.Contains(t, got["missing"].Title, `MCP server "missing" did not start`)
	require.Contains(t, got["missing"].Detail, "no such file or directory")
	require.Contains(t, got["quitter"].Detail, "exit status 7")
	require.Contains(t, got["quitter"].Detail, "no config found")
	st := s.Status()
	require.Equal(t, StateFailed, st[0].State)
	require.Equal(t, StateFailed, st[1].State)
	require.Equal(t, StateRunning, st[2].State)
	all, _ := s.Tools(nil)
	require.NotEmpty(t, all)
	narrowed, _ := s.Tools([]string{"missing"})
	require.Empty(t, narrowed)
}

func TestCloseStopsTheServers(t *testing.T) {
	rec := newRecorder()
	s := Start([]ServerConfig{stdioConfig(t, "a")}, rec.options(t))
	require.NoError(t, s.Ready(context.Background()))
	pid := s.servers[0].proc.cmd.Process.Pid
	s.Close()
	<-s.servers[0].proc.exited
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the server is gone")
	select {
	case n := <-rec.notices:
		t.Fatalf("a server stopped by Close is no news: %+v", n)
	default:
	}
	s.Close() // twice is fine
}

func TestCloseWhileStarting(t *testing.T) {
	rec := newRecorder()
	s := Start([]ServerConfig{stdioConfig(t, "a"), {Name: "b", Command: "/bin/sh", Args: []string{"-c", "exec sleep 60"}}}, rec.options(t))
	s.Close()
	require.NoError(t, s.Ready(context.Background()), "closing ends the start")
	for _, st := range s.Status() {
		require.Equal(t, StateStopped, st.State, st.Error)
	}
	select {
	case n := <-rec.notices:
		t.Fatalf("a server stopped by Close is no news: %+v", n)
	default:
	}
}

// BenchmarkCallOverhead measures what the adapter adds to a call: checking
// the arguments, the time limit and converting the result, against the
// same call made straight with the SDK's session, in turn, on one server.
func BenchmarkCallOverhead(b *testing.B) {
	s := Start([]ServerConfig{stdioConfig(b, "bench")}, Options{Dir: b.TempDir()})
	defer s.Close()
	if err := s.Ready(context.Background()); err != nil {
		b.Fatal(err)
	}
	all, _ := s.Tools(nil)
	var echo tools.Tool
	for _, t := range all {
		if t.Name() == "mcp__bench__echo" {
			echo = t
		}
	}
	args := json.RawMessage(`{"text":"hello","times":2}`)
	session := s.servers[0].session
	var adapter, direct time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if i%2 == 0 {
			if r := echo.Run(context.Background(), tools.Env{}, args); !r.OK {
				b.Fatal(r.Error)
			}
			adapter += time.Since(start)
		} else {
			if _, err := session.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
			direct += time.Since(start)
		}
	}
	b.ReportMetric(float64(adapter)/float64(direct), "adapter/direct")
}

func TestProgressReachesTheCaller(t *testing.T) {
	hs := newHTTPServer(t)
	s := startReady(t, []ServerConfig{{Name: "web", URL: hs.URL}}, newRecorder().options(t))
	steps := byName(t, s, "mcp__web__steps")
	got := make(chan string, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result)
	go func() {
		done <- steps.Run(ctx, tools.Env{Progress: func(m string) { got <- m }}, json.RawMessage(`{}`))
	}()
	require.Equal(t, "1/2: step 1", <-got)
	require.Equal(t, "2/2: step 2", <-got)
	cancel()
	require.Equal(t, tools.ErrCancelled, (<-done).Error.Kind)
	require.Equal(t, "call steps", hs.next(t))
	// Closing the client before the server has the cancel would leave the
	// SDK's http server waiting for the call at session close.
	require.Equal(t, "cancelled steps", hs.next(t))
}

// A message over the limit is refused, not held: a stdio server that sends
// one is stopped, with the reason in its notice (reading on, its line
// would have taken Pixir's memory); an http server's call fails, and the
// server goes on, whether it answers with JSON or an event stream.
func TestAMessageOverTheLimitIsRefused(t *testing.T) {
	rec := newRecorder()
	stream := newHTTPServer(t)
	plain := newHTTPServerOpts(t, nil, &sdk.StreamableHTTPOptions{JSONResponse: true})
	opt := rec.options(t)
	opt.maxMessage = 64 << 10 // below big's 96 KiB
	s := startReady(t, []ServerConfig{stdioConfig(t, "local"), {Name: "web", URL: stream.URL}, {Name: "json", URL: plain.URL}}, opt)

	res := call(t, byName(t, s, "mcp__local__big"), `{}`)
	require.False(t, res.OK)
	require.Equal(t, tools.ErrInternal, res.Error.Kind)
	n := <-rec.notices
	require.Equal(t, "local", n.Server)
	require.Contains(t, n.Title, `MCP server "local" stopped (a message it sent is over 64 KiB, more than Pixir takes from an MCP server); its `)

	for _, name := range []string{"web", "json"} {
		res = call(t, byName(t, s, "mcp__"+name+"__big"), `{}`)
		require.False(t, res.OK, name)
		require.Contains(t, res.Error.Message, "is over 64 KiB, more than Pixir takes from an MCP server", name)
		require.True(t, call(t, byName(t, s, "mcp__"+name+"__echo"), `{"text":"still here"}`).OK, name)
	}
}
