package acp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider/scripted"
	"github.com/pixir-go/pixir/tools"
)

// What a connection keeps by session id is kept while the session is open:
// a session/cancel of an id that is no session (or of one with no question
// waiting) kept a count for good, and closing a session left its title
// and the children it was told of. An editor that runs for days opens and
// closes thousands of sessions over one connection.
func TestWhatAConnectionKeepsBySessionEndsWithTheSession(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	script, err := scripted.Parse("script.toml", []byte(`
[[rule]]
match = "^spawn"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "child task", workspace_mode = "shared" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 600000 }
  [[rule.reply]]
  text = "Spawned."
[[rule]]
match = "."
  [[rule.reply]]
  text = "Done."
`))
	require.NoError(t, err)
	rt := runtime.New(runtime.Config{Home: filepath.Join(dir, "home"), Provider: scripted.New(script), Model: "scripted", Tools: tools.Builtins()})
	srv := NewServer(rt, Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	send := func(v any) {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		_, err = inW.Write(append(b, '\n'))
		require.NoError(t, err)
	}
	conn := srv.Serve(inR, outW, inR.Close)
	t.Cleanup(func() {
		_ = inW.Close()
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			_, _ = io.Copy(io.Discard, outR)
		}()
		<-conn.Done()
		_ = outW.Close()
		<-drained
		rt.Close()
	})
	out := bufio.NewReader(outR)
	id := 0
	call := func(method string, params any) json.RawMessage {
		id++
		send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		for {
			line, err := out.ReadBytes('\n')
			require.NoError(t, err)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			require.NoError(t, json.Unmarshal(line, &m))
			if m.Method == "" && string(m.ID) == fmt.Sprint(id) {
				require.Nil(t, m.Error, "%s", line)
				return m.Result
			}
		}
	}
	cancel := func(id string) {
		send(map[string]any{"jsonrpc": "2.0", "method": MethodSessionCancel, "params": map[string]any{"sessionId": id}})
	}
	kept := func() map[string]int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return map[string]int{"asks": len(srv.asks), "cancelsAfter": len(srv.cancelsAfter), "titles": len(srv.titles),
			"children": len(srv.children), "stepEnds": len(srv.stepEnds), "pendingNotices": len(srv.pendingNotices),
			"shownInTurn": len(srv.shownInTurn), "prompts": len(srv.prompts), "turns": len(srv.turns)}
	}

	call(MethodInitialize, map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"subagents": map[string]any{}}})
	start := kept()
	for i := range 500 {
		cancel(fmt.Sprintf("no-such-session-%d", i))
	}
	call(MethodSessionList, map[string]any{}) // handled after the notifications before it
	require.Equal(t, start, kept(), "a cancel of an id that is no session keeps nothing")

	for i := range 20 {
		var sess NewSessionResponse
		require.NoError(t, json.Unmarshal(call(MethodSessionNew, map[string]any{"cwd": ws, "mcpServers": []any{}}), &sess))
		text := "hello"
		if i%2 == 0 {
			text = "spawn one"
		}
		call(MethodSessionPrompt, map[string]any{"sessionId": sess.SessionID, "prompt": []any{map[string]any{"type": "text", "text": text}}})
		cancel(sess.SessionID)
		call(MethodSessionClose, map[string]any{"sessionId": sess.SessionID})
		require.Equal(t, start, kept(), "session %d closed: the connection keeps nothing of it", i)
	}
}
