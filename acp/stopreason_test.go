package acp

import (
	"bufio"
	"context"
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

// A session/cancel that reaches the server after the turn returned, before
// its reply is made, is answered "cancelled": the client cancelled a prompt
// it had no answer to (ACP answers such a prompt "cancelled"). The race is
// made deterministic by the beforeReply hook, which sends the cancel there.
func TestACancelBetweenTheTurnsEndAndItsReplyAnswersCancelled(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	script, err := scripted.Parse("script.toml", []byte("[[rule]]\nmatch = '.'\n  [[rule.reply]]\n  text = 'Done.'\n"))
	require.NoError(t, err)
	rt := runtime.New(runtime.Config{Home: filepath.Join(dir, "home"), Provider: scripted.New(script), Model: "scripted", Tools: tools.Builtins()})
	srv := NewServer(rt, Options{})
	cancels := 0
	srv.beforeReply = func(id string) {
		if cancels == 0 {
			params, _ := json.Marshal(SessionRequest{SessionID: id})
			srv.HandleNotification(context.Background(), MethodSessionCancel, params)
		}
		cancels++
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
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
	call := func(id int, method string, params any) json.RawMessage {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		require.NoError(t, err)
		_, err = inW.Write(append(b, '\n'))
		require.NoError(t, err)
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
	call(0, MethodInitialize, map[string]any{"protocolVersion": 1})
	var sess NewSessionResponse
	require.NoError(t, json.Unmarshal(call(1, MethodSessionNew, map[string]any{"cwd": ws, "mcpServers": []any{}}), &sess))
	prompt := map[string]any{"sessionId": sess.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}
	require.JSONEq(t, `{"stopReason":"cancelled"}`, string(call(2, MethodSessionPrompt, prompt)))
	// The next prompt, not cancelled, ends as its turn did.
	require.JSONEq(t, `{"stopReason":"end_turn"}`, string(call(3, MethodSessionPrompt, prompt)))
}

// Every reason a turn can end with has its ACP value; one without a reason
// is answered as Pixir's fault, never as a result without stopReason.
func TestAPromptIsNeverAnsweredWithoutAStopReason(t *testing.T) {
	for _, stop := range []runtime.StopReason{runtime.StopEndTurn, runtime.StopMaxTokens, runtime.StopMaxTurnRequests, runtime.StopCancelled} {
		r, err := promptReply(stop, false)
		require.NoError(t, err)
		require.Equal(t, string(stop), r.StopReason)
		r, err = promptReply(stop, true)
		require.NoError(t, err)
		require.Equal(t, "cancelled", r.StopReason)
	}
	_, err := promptReply("", false)
	require.ErrorContains(t, err, "without a stop reason")
}
