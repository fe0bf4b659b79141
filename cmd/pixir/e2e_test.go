package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/acp/client"
	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/merge"
	"github.com/pixir-go/pixir/tools"
)

// These tests drive the built pixir binary over real pipes, as an editor
// does.

var pixirBin string

func TestMain(m *testing.M) {
	if os.Getenv("PIXIR_TEST_MCP_SERVER") == "stdio" {
		serveTestMCP() // this binary as an MCP server (mcp_e2e_test.go)
		return
	}
	dir, err := os.MkdirTemp("", "pixir-e2e-")
	if err != nil {
		panic(err)
	}
	pixirBin = filepath.Join(dir, "pixir")
	// Built as make build does: static, without symbol table and DWARF;
	// with the test hooks (merge.HoldEnv) a release build leaves out.
	build := exec.Command("go", "build", "-ldflags=-s -w", "-tags="+merge.TestHooksTag, "-o", pixirBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building pixir:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// agent is a pixir acp process and the raw lines it writes.
type agent struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncBuffer
	home   string
	ws     string
}

type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	grew chan struct{} // closed, and replaced, at every write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grew != nil {
		close(s.grew)
	}
	s.grew = make(chan struct{})
	return s.b.Write(p)
}

// waitFor blocks until the buffer holds want. It has no deadline: text
// that never comes fails on go test's timeout, whatever the machine's load.
func (s *syncBuffer) waitFor(want string) {
	s.waitUntil(func(text string) bool { return strings.Contains(text, want) })
}

// waitForMatch blocks until the buffer holds a match of re, as waitFor.
func (s *syncBuffer) waitForMatch(re *regexp.Regexp) {
	s.waitUntil(re.MatchString)
}

func (s *syncBuffer) waitUntil(holds func(text string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !holds(s.b.String()) {
		if s.grew == nil {
			s.grew = make(chan struct{})
		}
		grew := s.grew
		s.mu.Unlock()
		<-grew
		s.mu.Lock()
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// onlySession is the id of the one session whose Log is in workspace ws:
// what a killed pixir run would have printed at its end.
func onlySession(t *testing.T, ws string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(ws, ".pixir", "sessions", "*.ndjson"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	return strings.TrimSuffix(filepath.Base(logs[0]), ".ndjson")
}

// env is a workspace and a PIXIR_HOME shared by the processes of one test.
type env struct {
	t      *testing.T
	home   string
	ws     string
	script string
}

func newEnv(t *testing.T, script string) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, home: filepath.Join(dir, "home"), ws: filepath.Join(dir, "ws")}
	require.NoError(t, os.MkdirAll(e.ws, 0o755))
	if script != "" {
		e.script = filepath.Join(dir, "script.toml")
		require.NoError(t, os.WriteFile(e.script, []byte(script), 0o644))
	}
	return e
}

func (e *env) start(args ...string) *agent {
	e.t.Helper()
	return e.startWith(nil, args...)
}

// startWith is start with more variables in pixir's environment.
func (e *env) startWith(vars map[string]string, args ...string) *agent {
	t := e.t
	t.Helper()
	if e.script != "" {
		args = append([]string{"--script", e.script}, args...)
	}
	return e.startCommand(exec.Command(pixirBin, append([]string{"acp"}, args...)...), vars)
}

// startCommand starts cmd, which runs pixir acp, in the environment.
func (e *env) startCommand(cmd *exec.Cmd, vars map[string]string) *agent {
	t := e.t
	t.Helper()
	cmd.Env = append(os.Environ(), "PIXIR_HOME="+e.home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=")
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	a := &agent{t: t, cmd: cmd, lines: make(chan string, 4096), stderr: &syncBuffer{}, home: e.home, ws: e.ws}
	cmd.Stderr = a.stderr
	var err error
	a.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				a.lines <- line
			}
			if err != nil {
				close(a.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = a.cmd.Process.Kill()
		_ = a.cmd.Wait()
		if t.Failed() {
			t.Logf("pixir stderr:\n%s", a.stderr.String())
		}
	})
	return a
}

// stderrAtExit ends the agent (its input closed) and returns all it
// wrote to stderr: the pipe is copied by a goroutine of exec's, so what
// pixir wrote before a reply may not be in a.stderr when the reply is
// read; after Wait it all is.
func (a *agent) stderrAtExit() string {
	a.t.Helper()
	a.exit()
	return a.stderr.String()
}

// exit closes the agent's input and waits for it to end, cleanly.
func (a *agent) exit() {
	a.t.Helper()
	require.NoError(a.t, a.stdin.Close())
	require.NoError(a.t, a.cmd.Wait())
}

func (a *agent) send(line string) {
	a.t.Helper()
	_, err := io.WriteString(a.stdin, line+"\n")
	require.NoError(a.t, err)
}

func (a *agent) sendJSON(v any) {
	a.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(a.t, err)
	a.send(string(b))
}

type message struct {
	raw    string
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// next returns the next message the agent wrote. It waits as long as the
// agent takes: a message that never comes fails on go test's timeout, not on
// a guess at how busy the machine is.
func (a *agent) next() message {
	a.t.Helper()
	line, ok := <-a.lines
	require.True(a.t, ok, "agent closed stdout")
	var m message
	require.NoError(a.t, json.Unmarshal([]byte(line), &m), "agent wrote %q", line)
	m.raw = strings.TrimSpace(line)
	return m
}

// awaitUpdate reads the agent's messages until a session/update for which
// match is true, and returns it.
func (a *agent) awaitUpdate(match func(update map[string]any) bool) map[string]any {
	a.t.Helper()
	for {
		m := a.next()
		if m.Method != "session/update" {
			continue
		}
		if ups := updates(a.t, []message{m}); match(ups[0]) {
			return ups[0]
		}
	}
}

// reply reads until the response with id, collecting the notifications and
// requests on the way.
func (a *agent) reply(id string) (message, []message) {
	a.t.Helper()
	return a.serveUntilReply(id, nil)
}

// call sends a request and returns its reply and what came before it.
func (a *agent) call(id int, method string, params any) (message, []message) {
	a.t.Helper()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return a.reply(fmt.Sprint(id))
}

func (a *agent) result(id int, method string, params any, into any) []message {
	a.t.Helper()
	m, before := a.call(id, method, params)
	require.Nil(a.t, m.Error, "%s failed: %s", method, m.raw)
	if into != nil {
		require.NoError(a.t, json.Unmarshal(m.Result, into))
	}
	return before
}

func (a *agent) initialize() {
	a.t.Helper()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1}, nil)
}

func (a *agent) newSession() string {
	a.t.Helper()
	var r struct {
		SessionID string `json:"sessionId"`
	}
	a.result(1, "session/new", map[string]any{"cwd": a.ws, "mcpServers": []any{}}, &r)
	require.NotEmpty(a.t, r.SessionID)
	return r.SessionID
}

func promptParams(sessionID, text string) map[string]any {
	return map[string]any{"sessionId": sessionID, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// stopReason reads the stop reason out of a prompt reply.
func stopReason(t *testing.T, m message) string {
	t.Helper()
	require.Nil(t, m.Error, "prompt failed: %s", m.raw)
	var r struct {
		StopReason string `json:"stopReason"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &r))
	return r.StopReason
}

// updates decodes the session/update notifications among msgs.
func updates(t *testing.T, msgs []message) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range msgs {
		if m.Method != "session/update" {
			continue
		}
		var p struct {
			Update map[string]any `json:"update"`
		}
		require.NoError(t, json.Unmarshal(m.Params, &p))
		out = append(out, p.Update)
	}
	return out
}

// agentText concatenates the agent_message_chunk texts.
func agentText(ups []map[string]any) string {
	var b strings.Builder
	for _, u := range ups {
		if u["sessionUpdate"] == "agent_message_chunk" {
			b.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	return b.String()
}

const testScript = `
[[rule]]
match = "hang"
  [[rule.reply]]
  text = "Starting"
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "echo started" }
  [[rule.reply]]
  hang = true
[[rule]]
match = "slowly"
  [[rule.reply]]
  delay_ms = 300
  text = "done slowly"
[[rule]]
match = "fail"
  [[rule.reply]]
  error = "upstream exploded"
[[rule]]
match = "loop"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "a.txt" }
[[rule]]
match = "run it"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "echo hi" }
  [[rule.reply]]
  text = "Ran it."
[[rule]]
match = "write"
  [[rule.reply]]
  text = "Writing."
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "a.txt", content = "hello\n" }
  [[rule.reply]]
  text = "Wrote it."
[[rule]]
  [[rule.reply]]
  text = "You said: {{.User}}"
`

func TestTransportEdgesOverTheBinary(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	tests := []struct {
		name, line, id string
		code           int
		message        string
	}{
		{"malformed line", `{"jsonrpc":"2.0","id":1,"method":"initialize"`, "null", -32700, "parse error: invalid JSON"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}]`, "null", -32600, "batch requests are not supported: send one message per line"},
		{"unknown method", `{"jsonrpc":"2.0","id":-3,"method":"session/fly","params":{}}`, "-3", -32601, "method not found: session/fly"},
		{"string id", `{"jsonrpc":"2.0","id":"x-1","method":"nope"}`, `"x-1"`, -32601, "method not found: nope"},
		// ACP's cancel is a notification; sent with an id, the answer says so
		// (it said "method not found: session/cancel", a method Pixir has).
		{"cancel with an id", `{"jsonrpc":"2.0","id":12,"method":"session/cancel","params":{"sessionId":"s"}}`, "12", -32601,
			`session/cancel is a notification: send it without an "id" (nothing was cancelled)`},
		{"params missing", `{"jsonrpc":"2.0","id":4,"method":"session/new"}`, "4", -32602, "invalid params: params are required"},
		{"field of wrong type", `{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":5,"mcpServers":[]}}`, "5", -32602, `invalid params: "cwd" must be a string, got number`},
		{"field missing", `{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"mcpServers":[]}}`, "6", -32602, `invalid params: missing required field "cwd"`},
		{"relative cwd", `{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"rel","mcpServers":[]}}`, "7", -32602, `invalid params: "cwd" must be an absolute path, got "rel"`},
		// A file given as cwd is the client's mistake, not an internal error
		// (it was -32603 "internal error: workspace … is not a directory").
		{"cwd a file", `{"jsonrpc":"2.0","id":18,"method":"session/new","params":{"cwd":"` + file + `","mcpServers":[]}}`, "18", -32602,
			`invalid params: "cwd" is not usable: workspace ` + file + `: not a directory`},
		{"list in a file", `{"jsonrpc":"2.0","id":19,"method":"session/list","params":{"cwd":"` + file + `"}}`, "19", -32602,
			`invalid params: "cwd" is not usable: workspace ` + file + `: not a directory`},
		{"mcpServers missing", `{"jsonrpc":"2.0","id":8,"method":"session/new","params":{"cwd":"/tmp"}}`, "8", -32602, `invalid params: missing required field "mcpServers"`},
		{"prompt block without type", `{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"s","prompt":[{}]}}`, "9", -32602, `invalid params: missing required field "prompt[0].type"`},
		// A block without its content is refused, never taken as empty.
		{"text block without text", `{"jsonrpc":"2.0","id":13,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"a"},{"type":"text"}]}}`, "13", -32602, `invalid params: missing required field "prompt[1].text"`},
		{"text block with null text", `{"jsonrpc":"2.0","id":14,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":null}]}}`, "14", -32602, `invalid params: "prompt[0].text" must be a string, got null`},
		{"text block with a number", `{"jsonrpc":"2.0","id":15,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":5}]}}`, "15", -32602, `invalid params: "prompt.text" must be a string, got number`},
		{"resource without uri", `{"jsonrpc":"2.0","id":16,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"resource","resource":{"text":"x"}}]}}`, "16", -32602, `invalid params: missing required field "prompt[0].resource.uri"`},
		{"resource with null text", `{"jsonrpc":"2.0","id":17,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"resource","resource":{"uri":"file:///a","text":null}}]}}`, "17", -32602, `invalid params: "prompt[0].resource" needs text or blob`},
		{"unknown session", `{"jsonrpc":"2.0","id":10,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}`, "10", -32002, "session not found: nope is not open in this process; load or resume it first"},
		{"unknown mode", `{"jsonrpc":"2.0","id":11,"method":"session/set_mode","params":{"sessionId":"nope","modeId":"x"}}`, "11", -32002, "session not found: nope is not open in this process; load or resume it first"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.t = t
			a.send(tt.line)
			m := a.next()
			require.Equal(t, tt.id, string(m.ID), m.raw)
			require.NotNil(t, m.Error, m.raw)
			require.Equal(t, tt.code, m.Error.Code, m.raw)
			require.Equal(t, tt.message, m.Error.Message)
			// The connection still serves.
			var init struct {
				ProtocolVersion int `json:"protocolVersion"`
			}
			a.result(100+i, "initialize", map[string]any{"protocolVersion": 1}, &init)
			require.Equal(t, 1, init.ProtocolVersion)
		})
	}
	a.t = t
	// Unknown notifications are ignored: nothing is written for them.
	a.send(`{"jsonrpc":"2.0","method":"_vendor/poke","params":{}}`)
	a.send(`{"jsonrpc":"2.0","id":-9007199254740991,"method":"initialize","params":{"protocolVersion":7}}`)
	m := a.next()
	require.Equal(t, "-9007199254740991", string(m.ID), "the first line written answers the request: %s", m.raw)
	require.JSONEq(t, `1`, string(mustField(t, m.Result, "protocolVersion")))
}

func mustField(t *testing.T, raw json.RawMessage, field string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[field]
}

func TestLargeLinesAreAccepted(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	big := strings.Repeat("z", 48<<20) // base64 images and whole files arrive this way
	m, _ := a.call(2, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{
		map[string]any{"type": "text", "text": "read this"},
		map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///big.txt", "text": big}},
	}})
	require.Equal(t, "end_turn", stopReason(t, m))
}

func TestCancelRequestCancelsAPrompt(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": -42, "method": "session/prompt", "params": promptParams(sid, "hang please")})
	// Wait until the turn is under way.
	for m := a.next(); m.Method != "session/update"; m = a.next() {
	}
	a.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":-42}}`)
	m, _ := a.reply("-42")
	require.Equal(t, "cancelled", stopReason(t, m))
}

func TestSessionCancelAnswersCancelledOnceAndTheSessionGoesOn(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": promptParams(sid, "hang please")})
	for m := a.next(); m.Method != "session/update"; m = a.next() {
	}
	// A second prompt while the first runs is refused clearly.
	busy, _ := a.call(3, "session/prompt", promptParams(sid, "hello"))
	require.NotNil(t, busy.Error)
	require.Equal(t, -32600, busy.Error.Code)
	require.Contains(t, busy.Error.Message, "a turn is already running in this session")

	a.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	m, _ := a.reply("2")
	require.Equal(t, "cancelled", stopReason(t, m))

	// The next turn works, and no second answer for request 2 ever came.
	m, before := a.call(4, "session/prompt", promptParams(sid, "hello again"))
	require.Equal(t, "end_turn", stopReason(t, m))
	for _, b := range before {
		require.NotEqual(t, "2", string(b.ID), "request 2 was answered twice: %s", b.raw)
	}
	require.Equal(t, "You said: hello again", agentText(updates(t, before)))
}

func TestRepliesInFlightAreWrittenWhenStdinCloses(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": promptParams(sid, "do it slowly")})
	require.NoError(t, a.stdin.Close())
	m, before := a.reply("7")
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Equal(t, "done slowly", agentText(updates(t, before)))
	require.NoError(t, a.cmd.Wait(), "pixir must exit 0 when its input ends")
}

func TestPermissionRequestFromInsideAPrompt(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.result(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "write a file")})
	var seen []message
	var req message
	for {
		m := a.next()
		if m.Method == "session/request_permission" {
			req = m
			break
		}
		seen = append(seen, m)
	}
	var p struct {
		ToolCall struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"toolCall"`
		Options []struct{ OptionID, Kind string }
	}
	require.NoError(t, json.Unmarshal(req.Params, &p))
	announced := false
	for _, u := range updates(t, seen) {
		if u["sessionUpdate"] == "tool_call" && u["toolCallId"] == p.ToolCall.ToolCallID {
			announced = true
			require.Equal(t, "pending", u["status"])
		}
	}
	require.True(t, announced, "the tool_call must be sent before its permission request")
	var kinds []string
	for _, o := range p.Options {
		kinds = append(kinds, o.Kind)
	}
	require.Equal(t, []string{"allow_once", "allow_always", "reject_once"}, kinds)
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
		"outcome": map[string]any{"outcome": "selected", "optionId": p.Options[0].OptionID}}})
	m, _ := a.reply("3")
	require.Equal(t, "end_turn", stopReason(t, m))
	data, err := os.ReadFile(filepath.Join(e.ws, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(data))
}

func TestProviderFailureEndsTheTurnReadably(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, before := a.call(2, "session/prompt", promptParams(sid, "fail now"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Contains(t, agentText(updates(t, before)), "the model provider failed")
	require.Contains(t, agentText(updates(t, before)), "upstream exploded")
	m, _ = a.call(3, "session/prompt", promptParams(sid, "still there?"))
	require.Equal(t, "end_turn", stopReason(t, m))
	events := readLog(t, e.ws, sid)
	require.Contains(t, eventTypes(events), "turn_failed")
}

func TestMaxTurnRequests(t *testing.T) {
	e := newEnv(t, testScript)
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, "a.txt"), []byte("x"), 0o644))
	a := e.start("--max-turn-requests", "3")
	a.initialize()
	sid := a.newSession()
	m, before := a.call(2, "session/prompt", promptParams(sid, "loop forever"))
	require.Equal(t, "max_turn_requests", stopReason(t, m))
	calls := 0
	for _, u := range updates(t, before) {
		if u["sessionUpdate"] == "tool_call" {
			calls++
		}
	}
	require.Equal(t, 3, calls)
}

type logEvent struct {
	ID        string          `json:"id"`
	SessionID string          `json:"session_id"`
	Seq       int64           `json:"seq"`
	TS        time.Time       `json:"ts"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
}

func readLog(t *testing.T, ws, sid string) []logEvent {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, ".pixir", "sessions", sid+".ndjson"))
	require.NoError(t, err)
	var out []logEvent
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev logEvent
		require.NoError(t, json.Unmarshal([]byte(line), &ev), "log line %q", line)
		out = append(out, ev)
	}
	return out
}

func eventTypes(events []logEvent) []string {
	var out []string
	for _, ev := range events {
		out = append(out, ev.Type)
	}
	return out
}

func TestTheLogHoldsCanonicalEventEnvelopes(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, _ := a.call(2, "session/prompt", promptParams(sid, "write a file"))
	require.Equal(t, "end_turn", stopReason(t, m))
	events := readLog(t, e.ws, sid)
	require.Equal(t, []string{
		"user_message", "assistant_message", "provider_usage", "tool_call", "permission_decision",
		"tool_result", "assistant_message", "provider_usage",
	}, eventTypes(events))
	for i, ev := range events {
		require.Equal(t, int64(i+1), ev.Seq)
		require.Equal(t, sid, ev.SessionID)
		require.NotEmpty(t, ev.ID)
		require.False(t, ev.TS.IsZero())
		require.NotEmpty(t, ev.Data)
	}
}

func TestKilledDuringATurnLosesNothingWrittenBefore(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, _ := a.call(2, "session/prompt", promptParams(sid, "write a file"))
	require.Equal(t, "end_turn", stopReason(t, m))
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "hang now")})
	// Kill once the turn ran its tool and hangs in its second model call.
	for {
		m := a.next()
		if m.Method == "session/update" && strings.Contains(m.raw, `"status":"completed"`) {
			break
		}
	}
	before := readLog(t, e.ws, sid)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	_ = a.cmd.Wait()

	// A crash mid-write leaves a torn last line; simulate one.
	logFile := filepath.Join(e.ws, ".pixir", "sessions", sid+".ndjson")
	f, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"id":"torn","session_id":"` + sid + `","seq":99,"ty`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	b := e.start()
	b.initialize()
	_, replay := b.call(1, "session/load", map[string]any{"sessionId": sid, "cwd": e.ws, "mcpServers": []any{}})
	ups := updates(t, replay)
	var users []string
	for _, u := range ups {
		if u["sessionUpdate"] == "user_message_chunk" {
			users = append(users, u["content"].(map[string]any)["text"].(string))
		}
	}
	require.Equal(t, []string{"write a file", "hang now"}, users)
	require.Contains(t, agentText(ups), "Wrote it.")
	require.Contains(t, agentText(ups), "Starting")
	// The torn line is reported to the client (no session.notices: as a
	// message) and in the log.
	require.Contains(t, agentText(ups), "Part of this session's Log is damaged and was skipped")
	require.Contains(t, agentText(ups), "cut off mid-write) was left out")
	b.stderr.waitFor("the torn last line")

	// Everything logged before the kill is still there, and the session
	// goes on appending after the cut.
	after := readLog(t, e.ws, sid)
	require.Equal(t, before, after[:len(before)])
	m, _ = b.call(2, "session/prompt", promptParams(sid, "hello after the crash"))
	require.Equal(t, "end_turn", stopReason(t, m))
	final := readLog(t, e.ws, sid)
	require.Greater(t, len(final), len(after))
	require.Equal(t, final[len(after)-1].Seq+1, final[len(after)].Seq)
}

func TestCancelWithdrawsAPendingPermissionRequest(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.result(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "write a file")})
	var req message
	for req = a.next(); req.Method != "session/request_permission"; req = a.next() {
	}
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	// Pixir stops waiting for its question without a $/cancel_request
	// (after session/cancel ACP has the client answer it "cancelled"
	// itself: a withdrawal would cross that answer), answers the prompt
	// cancelled, and the tool call ends failed (it never ran).
	m, before := a.reply("3")
	require.Equal(t, "cancelled", stopReason(t, m))
	for _, b := range before {
		require.NotEqual(t, "$/cancel_request", b.Method, "no withdrawal crosses the client's own cancelled answer")
	}
	var last map[string]any
	for _, u := range updates(t, before) {
		if u["sessionUpdate"] == "tool_call_update" {
			last = u
		}
	}
	require.Equal(t, "failed", last["status"])
	_, err := os.Stat(filepath.Join(e.ws, "a.txt"))
	require.True(t, os.IsNotExist(err), "the write must not have happened")
	// The client's answer, after the prompt's, is harmless.
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}})
	m, _ = a.call(4, "session/prompt", promptParams(sid, "hello"))
	require.Equal(t, "end_turn", stopReason(t, m))
}

func TestBadConfigurationIsAClearError(t *testing.T) {
	tests := []struct {
		name, config string
		args         []string
		want         string
	}{
		{"unknown key", "provider = \"scripted\"\nmodle = \"x\"\n", nil, `config.toml:2:1: unknown key "modle"`},
		{"wrong type", "max_turn_requests = \"many\"\n", nil, "config.toml:1:"},
		{"unknown provider", "", []string{"--provider", "gpt"}, `unknown provider "gpt": available providers are: scripted`},
		{"missing script", "", []string{"--script", "/nonexistent/script.toml"}, "/nonexistent/script.toml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if tt.config != "" {
				require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(tt.config), 0o644))
			}
			cmd := exec.Command(pixirBin, append([]string{"acp"}, tt.args...)...)
			cmd.Env = append(os.Environ(), "PIXIR_HOME="+home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.Equal(t, exitUsage, exit.ExitCode())
			require.Contains(t, stderr.String(), tt.want)
			require.Empty(t, stdout.String(), "stdout belongs to the protocol")
		})
	}
}

// A config.toml with several problems names every one of them, in the
// order of the file, each with its line, column and key: wrong types (which
// go-toml stops at), unknown keys and bad values together.
func TestEveryProblemOfAConfigIsShownAtOnce(t *testing.T) {
	const config = `max_turn_requests = -1
model = 3
connect_timeout = 90
modle = "x"
[agents]
max_threads = -2
max_depth = "x"
[profiles.a]
idle_timeout = "90"
context_window = -1
models = [
  1,
  2,
]
max_tokens = -3
scripted = { script = 5 }
`
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644))
	cmd := exec.Command(pixirBin, "run", "hello")
	cmd.Env = append(os.Environ(), "PIXIR_HOME="+home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=")
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var exit *exec.ExitError
	require.ErrorAs(t, cmd.Run(), &exit)
	require.Equal(t, exitUsage, exit.ExitCode())
	at := filepath.Join(home, "config.toml") + ":"
	want := []string{
		at + "1:1: max_turn_requests must be positive, got -1",
		at + "2:9: model: got a TOML integer, want a string",
		at + `3:1: connect_timeout: got a TOML integer, want a duration such as "2m30s"`,
		at + `4:1: unknown key "modle"; did you mean "model"?`,
		at + "6:1: [agents] max_threads must be positive, got -2",
		at + "7:13: agents.max_depth: got a TOML string, want an integer",
		at + `9:16: profiles.a.idle_timeout: want a duration with a unit, such as "90s" or "2m", got 90`,
		at + "10:1: profiles.a.context_window must be positive, got -1",
		at + "12:3: profiles.a.models: got a TOML integer, want an array of strings",
		at + "15:1: profiles.a.max_tokens must be positive, got -3",
		at + "16:",
	}
	got := strings.Split(strings.TrimSpace(strings.TrimPrefix(stderr.String(), "pixir: ")), "\n")
	require.Len(t, got, len(want), "stderr:\n%s", stderr.String())
	for i := range want {
		require.True(t, strings.HasPrefix(got[i], want[i]), "line %d: got %q, want %q", i+1, got[i], want[i])
	}
	// A value inside an inline table is named by its own key.
	require.Equal(t, at+"16:23: profiles.a.scripted.script: got a TOML integer, want a string", got[10])

	// A file that is not TOML has one problem: where it stops being TOML.
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte("model = 3\nmax_tokens = = 2\n"), 0o644))
	stderr.Reset()
	cmd = exec.Command(pixirBin, "run", "hello")
	cmd.Env = append(os.Environ(), "PIXIR_HOME="+home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=")
	cmd.Dir = t.TempDir()
	cmd.Stderr = &stderr
	require.Error(t, cmd.Run())
	require.Equal(t, "pixir: "+at+"2:14: not valid TOML: unexpected character U+003D '=' at start of value", strings.TrimSpace(stderr.String()))
}

// A server whose name holds a dot: its key left out for its type does not
// hide the problem of the server whose name begins its own, and both are
// named as TOML writes them.
func TestAConfigProblemOfAServerNamedWithADotHidesNoOther(t *testing.T) {
	const config = `[mcp_servers.a]
command = "x"
url = "https://example.com/mcp"

[mcp_servers."a.b"]
command = 42
`
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644))
	cmd := exec.Command(pixirBin, "run", "hello")
	cmd.Env = append(os.Environ(), "PIXIR_HOME="+home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=")
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var exit *exec.ExitError
	require.ErrorAs(t, cmd.Run(), &exit)
	require.Equal(t, exitUsage, exit.ExitCode())
	at := filepath.Join(home, "config.toml") + ":"
	require.Equal(t, "pixir: "+at+`1:2: [mcp_servers.a]: MCP server "a" has both a command and a url; give one`+"\n"+
		at+`6:11: mcp_servers."a.b".command: got a TOML integer, want a string`, strings.TrimSpace(stderr.String()))
}

func TestLogsGoToStderrAndTheLogFile(t *testing.T) {
	e := newEnv(t, testScript)
	logFile := filepath.Join(t.TempDir(), "pixir.log")
	a := e.start("--log-file", logFile)
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientInfo": map[string]any{"name": "e2e-client", "version": "1"}}, nil)
	a.exit()
	data, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Contains(t, string(data), "client=e2e-client")
	require.Contains(t, a.stderr.String(), "client=e2e-client")
}

// serveUntilReply answers the agent's requests with handlers until the reply
// to id arrives, and returns everything the agent wrote on the way. With nil
// handlers requests are only collected, for the test to answer itself.
func (a *agent) serveUntilReply(id string, handlers map[string]func(params json.RawMessage) any) (message, []message) {
	a.t.Helper()
	var seen []message
	for {
		m := a.next()
		if m.Method == "" && string(m.ID) == id {
			return m, seen
		}
		seen = append(seen, m)
		if handlers == nil || m.Method == "" || len(m.ID) == 0 {
			continue
		}
		h, ok := handlers[m.Method]
		require.True(a.t, ok, "unexpected request from the agent: %s", m.raw)
		switch v := h(m.Params).(type) {
		case noReply: // the test leaves it unanswered
		case *rpcError:
			a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": v})
		default:
			a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": v})
		}
	}
}

// noReply, returned by a handler of serveUntilReply, leaves the agent's
// request unanswered.
type noReply struct{}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func TestEditorFilesAndTerminalsAreUsedWhenOffered(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{
		"fs": map[string]any{"readTextFile": true, "writeTextFile": true}, "terminal": true}}, nil)
	sid := a.newSession()
	target := filepath.Join(e.ws, "a.txt")

	// write: the old text is read from the editor (which has no such file),
	// and the new text written through it, not to the disk.
	var written map[string]any
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": promptParams(sid, "write a file")})
	m, _ := a.serveUntilReply("2", map[string]func(json.RawMessage) any{
		"fs/read_text_file": func(p json.RawMessage) any {
			require.JSONEq(t, `{"sessionId":"`+sid+`","path":"`+target+`"}`, string(p))
			return &rpcError{Code: -32002, Message: "Resource not found"}
		},
		"fs/write_text_file": func(p json.RawMessage) any {
			require.NoError(t, json.Unmarshal(p, &written))
			return map[string]any{}
		},
	})
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Equal(t, map[string]any{"sessionId": sid, "path": target, "content": "hello\n"}, written)
	_, err := os.Stat(target)
	require.True(t, os.IsNotExist(err), "the editor owns the write; nothing goes to disk behind its back")

	// bash: runs in an editor terminal that is embedded in the tool call.
	var calls []string
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "run it")})
	m, seen := a.serveUntilReply("3", map[string]func(json.RawMessage) any{
		"terminal/create": func(p json.RawMessage) any {
			calls = append(calls, "create")
			var req struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
				Cwd     string   `json:"cwd"`
			}
			require.NoError(t, json.Unmarshal(p, &req))
			require.Equal(t, "bash", req.Command)
			require.Equal(t, []string{"-c", "echo hi"}, req.Args)
			return map[string]any{"terminalId": "term-1"}
		},
		"terminal/wait_for_exit": func(json.RawMessage) any {
			calls = append(calls, "wait")
			return map[string]any{"exitCode": 0}
		},
		"terminal/output": func(json.RawMessage) any {
			calls = append(calls, "output")
			return map[string]any{"output": "hi\n", "truncated": false, "exitStatus": map[string]any{"exitCode": 0}}
		},
		"terminal/release": func(json.RawMessage) any {
			calls = append(calls, "release")
			return map[string]any{}
		},
	})
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Equal(t, []string{"create", "wait", "output", "release"}, calls)
	var embedded, final map[string]any
	for _, u := range updates(t, seen) {
		if u["sessionUpdate"] != "tool_call_update" || u["content"] == nil {
			continue
		}
		if u["status"] == nil {
			embedded = u
		} else {
			final = u
		}
	}
	want := []any{map[string]any{"type": "terminal", "terminalId": "term-1"}}
	require.Equal(t, want, embedded["content"], "the terminal is shown while the command runs")
	require.Equal(t, "completed", final["status"])
	require.Equal(t, want, final["content"])
	require.Contains(t, string(mustField(t, mustJSON(t, final["rawOutput"]), "output")), `"exit_code":0`)
}

// A command that fails in the editor's terminal (here: its time limit)
// keeps the terminal in its tool call's final content, above the reason:
// content replaces, and the final update used to carry the reason only, so
// the editor stopped showing what the command printed just when it was
// wanted.
func TestAFailedCommandKeepsItsEditorTerminal(t *testing.T) {
	e := newEnv(t, `
[[rule]]
match = "^run slowly$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "sleep 60", timeout_ms = 50 }
  [[rule.reply]]
  text = "It timed out."
`)
	a := e.start()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"terminal": true}}, nil)
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": promptParams(sid, "run slowly")})
	m, seen := a.serveUntilReply("2", map[string]func(json.RawMessage) any{
		"terminal/create":        func(json.RawMessage) any { return map[string]any{"terminalId": "term-1"} },
		"terminal/wait_for_exit": func(json.RawMessage) any { return noReply{} },
		"terminal/kill":          func(json.RawMessage) any { return map[string]any{} },
		"terminal/output": func(json.RawMessage) any {
			return map[string]any{"output": "started\n", "truncated": false, "exitStatus": map[string]any{"signal": "SIGKILL"}}
		},
		"terminal/release": func(json.RawMessage) any { return map[string]any{} },
	})
	require.Equal(t, "end_turn", stopReason(t, m))
	var final map[string]any
	for _, u := range updates(t, seen) {
		if u["sessionUpdate"] == "tool_call_update" && u["status"] == "failed" {
			final = u
		}
	}
	require.NotNil(t, final, "the call ends failed")
	content, _ := final["content"].([]any)
	require.Len(t, content, 2, "%v", final)
	require.Equal(t, map[string]any{"type": "terminal", "terminalId": "term-1"}, content[0])
	require.Contains(t, fmt.Sprint(content[1]), "timeout: the command did not finish within 50ms")
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

const subagentScript = `
[[rule]]
match = "^spawn two$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "child quick", workspace_mode = "shared" }
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "child hang", workspace_mode = "shared" }
  [[rule.reply]]
  text = "Spawned."
[[rule]]
match = "^list them$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "list_agents"
  [[rule.reply]]
  text = "{{.ToolResult}}"
[[rule]]
match = "^child hang"
  [[rule.reply]]
  hang = true
[[rule]]
match = "^child"
  [[rule.reply]]
  text = "summary of {{.User}}"
`

// killWithAChildRunning starts pixir acp on subagentScript, spawns its two
// children (the quick one finishes, the other hangs) and kills the
// process with SIGKILL once the quick one's end has reached the client
// (so its end is in the Log). It returns the session's id.
func killWithAChildRunning(t *testing.T, e *env) string {
	t.Helper()
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, during := a.call(2, "session/prompt", promptParams(sid, "spawn two"))
	require.Equal(t, "end_turn", stopReason(t, m))
	childCompleted := func(u map[string]any) bool {
		id, _ := u["toolCallId"].(string)
		return strings.HasPrefix(id, "subagent-") && u["status"] == "completed"
	}
	if !slices.ContainsFunc(updates(t, during), childCompleted) {
		a.awaitUpdate(childCompleted)
	}
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	_ = a.cmd.Wait()
	return sid
}

func TestKilledWithChildrenRunningReloadsThemDetached(t *testing.T) {
	e := newEnv(t, subagentScript)
	sid := killWithAChildRunning(t, e)

	b := e.start()
	b.initialize()
	_, replay := b.call(1, "session/load", map[string]any{"sessionId": sid, "cwd": e.ws, "mcpServers": []any{}})
	final := map[string]map[string]any{}
	for _, u := range updates(t, replay) {
		id, _ := u["toolCallId"].(string)
		if !strings.HasPrefix(id, "subagent-") {
			continue
		}
		if final[id] == nil {
			final[id] = map[string]any{}
		}
		for k, v := range u {
			final[id][k] = v
		}
	}
	require.Len(t, final, 2)
	statuses := map[string]string{}
	for _, u := range final {
		statuses[u["title"].(string)] = u["status"].(string)
	}
	require.Equal(t, map[string]string{"default: child quick": "completed", "default: child hang": "failed"}, statuses)

	m, before := b.call(2, "session/prompt", promptParams(sid, "list them"))
	require.Equal(t, "end_turn", stopReason(t, m))
	text := agentText(updates(t, before))
	require.Contains(t, text, `"status":"detached"`)
	require.Contains(t, text, `"summary":"summary of child quick"`, "a completed child's summary is intact")

	// The load recorded the hung child's end in the Log, detached with
	// the reason, so what reads the Log alone says so after later turns.
	// Before, inspect showed it "running, no end in the Log" for ever.
	requireDetachedOnce := func() {
		t.Helper()
		n := 0
		events, _ := logOf(t, e.ws, sid)
		for _, ev := range events {
			var d runtime.SubagentEventData
			if ev.Type == runtime.EventSubagent && json.Unmarshal(ev.Data, &d) == nil && d.Status == tools.SubagentDetached {
				n++
				require.Equal(t, tools.SubagentEventFailed, d.Event)
				require.Equal(t, tools.ErrDetached, d.Error.Kind)
				require.Contains(t, d.Error.Message, "the process that ran this subagent ended before it did")
			}
		}
		require.Equal(t, 1, n, "recorded once")
	}
	requireDetachedOnce()
	stdout, stderr, code := (&runEnv{t: t, home: e.home, ws: e.ws}).pixir("inspect", sid)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "[detached]")
	require.Contains(t, stdout, "error: detached: the process that ran this subagent ended before it did")
	require.NotContains(t, stdout, "no end in the Log")
	b.exit()

	// A second load records nothing again, and shows it ended the same.
	c := e.start()
	c.initialize()
	_, replay = c.call(1, "session/load", map[string]any{"sessionId": sid, "cwd": e.ws, "mcpServers": []any{}})
	failed := 0
	for _, u := range updates(t, replay) {
		if id, _ := u["toolCallId"].(string); strings.HasPrefix(id, "subagent-") && u["status"] == "failed" {
			failed++
			require.Contains(t, fmt.Sprint(u["content"]), "detached: the process that ran this subagent ended")
		}
	}
	require.Equal(t, 1, failed, "shown ended once")
	m, before = c.call(2, "session/prompt", promptParams(sid, "list them"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Contains(t, agentText(updates(t, before)), `"status":"detached"`)
	c.exit()
	requireDetachedOnce()
}

func TestASubagentsPermissionRequestNamesItsToolCallInTheParentSession(t *testing.T) {
	e := newEnv(t, `
[[rule]]
match = "^delegate a write$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "write a file", workspace_mode = "shared" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 10000 }
  [[rule.reply]]
  text = "done"
[[rule]]
match = "^write a file$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "child.txt", content = "from the child\n" }
  [[rule.reply]]
  text = "wrote it"
`)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.result(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "delegate a write")})
	var asked map[string]any
	m, seen := a.serveUntilReply("3", map[string]func(json.RawMessage) any{
		"session/request_permission": func(p json.RawMessage) any {
			require.NoError(t, json.Unmarshal(p, &asked))
			res, err := client.Select(p, "allow_once")
			require.NoError(t, err)
			return res
		},
	})
	require.Equal(t, "end_turn", stopReason(t, m))
	// spawn_agent itself asks first (a mutation); then the child's write.
	require.Equal(t, sid, asked["sessionId"], "the client is asked in the session it knows")
	callID := asked["toolCall"].(map[string]any)["toolCallId"].(string)
	require.True(t, strings.HasPrefix(callID, "subagent-"), callID)
	announced := false
	for _, u := range updates(t, seen) {
		if u["sessionUpdate"] == "tool_call" && u["toolCallId"] == callID {
			announced = true
		}
	}
	require.True(t, announced, "the child's tool call was sent before the question about it")
	data, err := os.ReadFile(filepath.Join(e.ws, "child.txt"))
	require.NoError(t, err)
	require.Equal(t, "from the child\n", string(data))
}

// A session/resume after a crash (kill -9) replays nothing, but updates
// the tool call of the child the crash left running: the editor that
// resumes shows it failed, detached, as a load does. Before, a resume sent
// no update at all, and the editor showed the child running for ever.
func TestResumeAfterACrashUpdatesTheDetachedChildsCall(t *testing.T) {
	e := newEnv(t, subagentScript)
	sid := killWithAChildRunning(t, e)

	b := e.start()
	b.initialize()
	m, before := b.call(1, "session/resume", map[string]any{"sessionId": sid, "cwd": e.ws, "mcpServers": []any{}})
	require.Nil(t, m.Error, m.raw)
	var calls []map[string]any
	for _, u := range updates(t, before) {
		require.Equal(t, "tool_call_update", u["sessionUpdate"], "a resume replays nothing: %v", u)
		calls = append(calls, u)
	}
	require.Len(t, calls, 1, "the hung child's call, and only it")
	require.True(t, strings.HasPrefix(calls[0]["toolCallId"].(string), "subagent-"))
	require.Equal(t, "failed", calls[0]["status"])
	require.Contains(t, fmt.Sprint(calls[0]["content"]), "detached: the process that ran this subagent ended")
	b.exit()
}

// An editor that shows children as sessions of their own
// (clientCapabilities.subagents) and resumes after a crash is told the
// child the crash left running ended, not known to be complete: a
// subagent_update (state unknown, detached) that announces the child to
// this connection, which had not been told of it. Before, such an editor
// was sent nothing, and showed the child running for ever.
func TestResumeAfterACrashShowsANativeEditorTheDetachedChild(t *testing.T) {
	e := newEnv(t, subagentScript)
	sid := killWithAChildRunning(t, e)

	b := e.start()
	b.initializeWith(map[string]any{"subagents": map[string]any{}})
	m, before := b.call(1, "session/resume", map[string]any{"sessionId": sid, "cwd": e.ws, "mcpServers": []any{}})
	require.Nil(t, m.Error, m.raw)
	var children []map[string]any
	for _, u := range updates(t, before) {
		require.Equal(t, "subagent_update", u["sessionUpdate"], "a resume replays nothing: %v", u)
		children = append(children, u)
	}
	require.Len(t, children, 1, "the hung child, and only it")
	u := children[0]
	require.NotEmpty(t, u["sessionId"])
	require.Equal(t, "default: child hang", u["title"], "announced to this connection")
	require.Equal(t, e.ws, u["cwd"])
	state, _ := u["state"].(map[string]any)
	require.Equal(t, "unknown", state["state"], "%v", u)
	require.Contains(t, fmt.Sprint(state["_meta"]), "detached")
	b.exit()
}
