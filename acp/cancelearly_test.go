package acp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider/scripted"
	"github.com/pixir-go/pixir/tools"
)

// A session/cancel the client sends right after its session/prompt can be
// handled before the prompt's handler has made it the session's prompt in
// flight ("received"), or before its turn has begun ("registered"): there
// was no turn to stop then, and the turn ran as if never cancelled (with a
// model that hangs, until a second cancel). Each stage is made
// deterministic by a hook that sends the cancel on the wire there and
// waits until it was handled.
func TestACancelSentRightAfterThePromptStopsItsTurn(t *testing.T) {
	for _, stage := range []string{"received", "registered"} {
		t.Run(stage, func(t *testing.T) {
			dir := t.TempDir()
			ws := filepath.Join(dir, "ws")
			require.NoError(t, os.MkdirAll(ws, 0o755))
			script, err := scripted.Parse("script.toml", []byte("[[rule]]\nmatch = '.'\n  [[rule.reply]]\n  text = 'Done.'\n"))
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
			handled := make(chan struct{}, 1)
			srv.cancelHandled = func(string) { handled <- struct{}{} }
			first := true
			srv.promptReached = func(at, id string) {
				if at != stage || !first {
					return
				}
				first = false
				send(map[string]any{"jsonrpc": "2.0", "method": MethodSessionCancel, "params": map[string]any{"sessionId": id}})
				<-handled
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
			// call returns the result of request id and the lines before it.
			call := func(id int, method string, params any) (json.RawMessage, string) {
				send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
				var seen strings.Builder
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
						return m.Result, seen.String()
					}
					seen.Write(line)
				}
			}
			call(0, MethodInitialize, map[string]any{"protocolVersion": 1})
			var sess NewSessionResponse
			res, _ := call(1, MethodSessionNew, map[string]any{"cwd": ws, "mcpServers": []any{}})
			require.NoError(t, json.Unmarshal(res, &sess))
			prompt := map[string]any{"sessionId": sess.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}
			res, updates := call(2, MethodSessionPrompt, prompt)
			require.JSONEq(t, `{"stopReason":"cancelled"}`, string(res))
			require.NotContains(t, updates, "Done.", "the cancelled turn's model answered")
			// The next prompt, sent after the cancel, is not cancelled by it.
			res, updates = call(3, MethodSessionPrompt, prompt)
			require.JSONEq(t, `{"stopReason":"end_turn"}`, string(res))
			require.Contains(t, updates, "Done.")
		})
	}
}
