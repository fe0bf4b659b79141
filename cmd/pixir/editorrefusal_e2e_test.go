package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// An editor's refusal of fs/read_text_file reaches the model as the
// editor's refusal, with its reason: it came as kind internal, a fault of
// Pixir's, and the model had nothing to act on.
func TestAnEditorsRefusalToReadSaysSo(t *testing.T) {
	e := newEnv(t, staleWriteScript)
	a := e.start()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{
		"fs": map[string]any{"readTextFile": true, "writeTextFile": true}}}, nil)
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": promptParams(sid, "read a")})
	m, seen := a.serveUntilReply("2", map[string]func(json.RawMessage) any{
		"fs/read_text_file": func(json.RawMessage) any {
			return &rpcError{Code: -32603, Message: "the file is open in a binary editor"}
		},
	})
	require.Equal(t, "end_turn", stopReason(t, m))
	got := agentText(updates(t, seen))
	require.Contains(t, got, `"kind":"permission_denied"`)
	require.Contains(t, got, "the editor refused fs/read_text_file for")
	require.Contains(t, got, "the file is open in a binary editor (code -32603); this is the editor's answer, not a missing file")
}
