package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// additionalDirectories is gated by sessionCapabilities.additionalDirectories,
// which Pixir does not advertise. A client that sends it anyway gets its
// session (refusing it would break a client that sends it to every
// agent), and is told the directories are not used: a notice to a client
// that shows notices, a message at the next turn to one that does not,
// and a warning on stderr. Before, they were dropped without a word.
func TestAdditionalDirectoriesAreSaidToBeUnsupported(t *testing.T) {
	e := newEnv(t, testScript)
	other := filepath.Join(t.TempDir(), "lib")
	params := map[string]any{"cwd": e.ws, "mcpServers": []any{}, "additionalDirectories": []any{other}}

	a := e.start()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"session": map[string]any{"notices": map[string]any{}}}}, nil)
	var r struct {
		SessionID string `json:"sessionId"`
	}
	a.result(1, "session/new", params, &r)
	require.NotEmpty(t, r.SessionID, "the session opens")
	// The notice follows session/new's answer: it is read before the
	// answer to the next request.
	m, seen := a.call(2, "session/prompt", promptParams(r.SessionID, "write a file"))
	require.Equal(t, "end_turn", stopReason(t, m))
	var notices []map[string]any
	for _, u := range updates(t, seen) {
		if u["sessionUpdate"] == "notice" && u["title"] != "Commands run without the kernel sandbox" {
			notices = append(notices, u)
		}
	}
	require.Len(t, notices, 1)
	require.Equal(t, "warning", notices[0]["severity"])
	require.Equal(t, "Additional directories are not supported: "+other, notices[0]["title"])
	require.Contains(t, a.stderrAtExit(), "additionalDirectories is not supported")

	// A client that shows no notices: an entry that is not a string opens
	// the session too (it failed session/new as invalid params), and the
	// message comes once at the next turn however often the session was
	// loaded again before it.
	b := e.start()
	b.initialize()
	params["additionalDirectories"] = []any{other, 5}
	b.result(1, "session/new", params, &r)
	for i := range 2 {
		load := loadParams(r.SessionID, e.ws)
		load["additionalDirectories"] = params["additionalDirectories"]
		b.result(2+i, "session/load", load, nil)
	}
	var during []message
	m, during = b.call(4, "session/prompt", promptParams(r.SessionID, "write a file"))
	require.Equal(t, "end_turn", stopReason(t, m))
	text := agentText(updates(t, during))
	require.Equal(t, 1, strings.Count(text, "Additional directories are not supported: "+other+", 5"), text)
}
