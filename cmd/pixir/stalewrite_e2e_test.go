package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const staleWriteScript = `
[[rule]]
match = "^read a$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "a.txt" }
  [[rule.reply]]
  text = "{{.ToolResult}}"

[[rule]]
match = "^write a$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "a.txt", content = "one\ntwo\n" }
  [[rule.reply]]
  text = "{{.ToolResult}}"
`

// A write over a file the model has not seen as it is now is refused:
// one it never read in this session, and one the user changed since the
// model read it (the model would write back what it read, and the user's
// line would be gone). The session remembers what its model saw across a
// session/load in another process: the Log holds it.
func TestAStaleWriteDoesNotClobberTheUsersChange(t *testing.T) {
	e := newEnv(t, staleWriteScript)
	path := filepath.Join(e.ws, "a.txt")
	require.NoError(t, os.WriteFile(path, []byte("one\n"), 0o644))
	file := func() string {
		t.Helper()
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}
	a := e.start()
	a.initialize()
	sid := a.newSession()
	id := 2
	say := func(a *agent, text string) string {
		t.Helper()
		m, before := a.call(id, "session/prompt", promptParams(sid, text))
		id++
		require.Equal(t, "end_turn", stopReason(t, m))
		return agentText(updates(t, before))
	}

	got := say(a, "write a")
	require.Contains(t, got, `"kind":"conflict"`)
	require.Contains(t, got, "a.txt already exists and you have not read it in this session")
	require.Equal(t, "one\n", file(), "never read: not replaced")

	require.Contains(t, say(a, "read a"), `"ok":true`)
	require.NoError(t, os.WriteFile(path, []byte("one\nthe user's line\n"), 0o644))
	got = say(a, "write a")
	require.Contains(t, got, `"kind":"conflict"`)
	require.Contains(t, got, "a.txt changed since you last read or wrote it")
	require.Contains(t, got, "read it again first")
	require.Equal(t, "one\nthe user's line\n", file(), "the user's line is kept")

	require.Contains(t, say(a, "read a"), `"ok":true`)
	require.Contains(t, say(a, "write a"), `"ok":true`)
	require.Equal(t, "one\ntwo\n", file())
	require.Contains(t, say(a, "write a"), `"ok":true`, "what its own write left is what it has seen")
	a.exit()

	// Another process loads the session: what the model saw is in the Log.
	require.NoError(t, os.WriteFile(path, []byte("one\ntwo\nlater\n"), 0o644))
	b := e.start()
	b.initialize()
	b.result(1, "session/load", map[string]any{"sessionId": sid, "cwd": e.ws, "mcpServers": []any{}}, nil)
	got = say(b, "write a")
	require.Contains(t, got, "a.txt changed since you last read or wrote it")
	require.Equal(t, "one\ntwo\nlater\n", file())
	// Put back as the model last saw it, the file may be written again:
	// the loaded session remembers its write (a new one would not).
	require.NoError(t, os.WriteFile(path, []byte("one\ntwo\n"), 0o644))
	require.Contains(t, say(b, "write a"), `"ok":true`)
}

// A Subagent's reads are its own: a child in the parent's workspace that
// writes over a file only its parent read is refused, and says why.
func TestASubagentHasItsOwnMemoryOfWhatItRead(t *testing.T) {
	e := newEnv(t, staleWriteScript+`
[[rule]]
match = "^delegate the write$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "child: write a", workspace_mode = "shared" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  [[rule.reply]]
  text = "{{.ToolResult}}"

[[rule]]
match = "^child: write a"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "a.txt", content = "one\ntwo\n" }
  [[rule.reply]]
  text = "child says: {{.ToolResult}}"
`)
	path := filepath.Join(e.ws, "a.txt")
	require.NoError(t, os.WriteFile(path, []byte("one\n"), 0o644))
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, before := a.call(2, "session/prompt", promptParams(sid, "read a"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Contains(t, agentText(updates(t, before)), `"ok":true`)
	m, before = a.call(3, "session/prompt", promptParams(sid, "delegate the write"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Contains(t, agentText(updates(t, before)), "a.txt already exists and you have not read it in this session")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "one\n", string(b))
}
