package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// session/load (or resume) of a session this process has open, with a cwd
// other than its workspace, is refused naming both: it answered as if
// loaded there, and the session's tools went on working in its own
// workspace, where the client did not think they were. A fresh process
// looks for the Log in the cwd given and finds none.
func TestLoadingAnOpenSessionElsewhereIsRefused(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	other := t.TempDir()
	for i, method := range []string{"session/load", "session/resume"} {
		m, before := a.call(2+i, method, map[string]any{"sessionId": sid, "cwd": other, "mcpServers": []any{}})
		require.NotNil(t, m.Error, "%s elsewhere: %s", method, m.raw)
		require.Equal(t, -32602, m.Error.Code)
		require.Contains(t, m.Error.Message, "is open in this process in the workspace "+e.ws)
		require.Contains(t, m.Error.Message, other)
		require.Empty(t, updates(t, before), "nothing replayed")
	}
	a.result(4, "session/load", map[string]any{"sessionId": sid, "cwd": e.ws, "mcpServers": []any{}}, nil)
}
