package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A session switched to read_only while its child runs holds the child
// too: the child, spawned in auto into the shared workspace, waits on a
// FIFO until the switch has been answered, then tries the write tool and
// a command. Before, the child kept the mode it started with and wrote
// both files after the user had said read_only. Without Landlock its
// command is refused (nothing can hold it read-only).
func TestASessionSwitchedToReadOnlyHoldsItsRunningChild(t *testing.T) {
	for _, landlock := range []bool{true, false} {
		t.Run(fmt.Sprintf("landlock=%v", landlock), func(t *testing.T) {
			if landlock {
				needLandlock(t)
			}
			switchedToReadOnly(t, landlock)
		})
	}
}

func switchedToReadOnly(t *testing.T, landlock bool) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "go-on")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	e := newEnv(t, fmt.Sprintf(`
[[rule]]
match = '\ACHILD'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "read line < %s; echo waited" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "by-write.txt", content = "written after read_only\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "echo x > by-bash.txt" }
  [[rule.reply]]
  text = "child done"

[[rule]]
match = 'spawn'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "CHILD go", agent = "default", workspace_mode = "shared" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 600000 }
  [[rule.reply]]
  text = "parent done"
`, fifo))
	if !landlock {
		e.writeConfig("[sandbox]\nlandlock = false\n")
	}
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": promptParams(sid, "spawn")})
	// The child's first command is running, started in auto: the FIFO
	// opens for writing once it opens it to read. (Waiting instead for
	// its tool call's title let the switch overtake the command's start
	// at times: without Landlock the command was then refused, never
	// read, and this open waited until go test's 10-minute limit.)
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	require.NoError(t, err)
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "session/set_mode", "params": map[string]any{"sessionId": sid, "modeId": "read_only"}})
	m, _ := a.reply("5")
	require.Nil(t, m.Error, m.raw)
	_, err = f.WriteString("go on\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	m, _ = a.reply("4")
	require.Equal(t, "end_turn", stopReason(t, m))

	for _, name := range []string{"by-write.txt", "by-bash.txt"} {
		_, err := os.Stat(filepath.Join(e.ws, name))
		require.ErrorIs(t, err, fs.ErrNotExist, "%s was written after the session was switched to read_only", name)
	}
}

// pixir resume without --mode keeps the session's mode: a session left
// read_only is not widened to auto by a resume that did not ask (before,
// --mode's default was set on it, and the resumed turn wrote the file),
// nor does it run a workflow; --mode auto given says so, and is kept.
func TestResumeKeepsTheSessionsModeWithoutModeFlag(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = 'write'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "out.txt", content = "written\n" }
  [[rule.reply]]
  text = "{{output .ToolResult}}"

[[rule]]
  [[rule.reply]]
  text = "hello"
`)
	wf := e.file("wf.json", `{"steps":[{"id":"w","task":"write","write_set":["out.txt"]}]}`)
	_, stderr, code := e.pixir("run", "--script", script, "--mode", "read_only", "hello")
	require.Equal(t, 0, code, stderr)
	sid := regexp.MustCompile(`pixir: session ([0-9a-f-]{8,}) `).FindStringSubmatch(stderr)[1]

	stdout, stderr, code := e.pixir("resume", "--script", script, sid, "write it")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "permission_denied")
	require.Contains(t, stderr, "pixir: session "+sid+" is in read_only mode, as it was left; --mode auto (or ask) changes it")
	_, err := os.Stat(filepath.Join(e.ws, "out.txt"))
	require.ErrorIs(t, err, fs.ErrNotExist, "a resume without --mode wrote in a read_only session")

	_, stderr, code = e.pixir("resume", "--script", script, "--workflow", wf, sid)
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "read_only mode does not allow")
	_, err = os.Stat(filepath.Join(e.ws, "out.txt"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	_, stderr, code = e.pixir("resume", "--script", script, "--mode", "auto", sid, "write it")
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stderr, "as it was left")
	b, err := os.ReadFile(filepath.Join(e.ws, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "written\n", string(b))
	_, stderr, code = e.pixir("resume", "--script", script, sid, "hello again")
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stderr, "as it was left", "the session is in auto mode now")
}
