package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/acp/client"
	"github.com/pixir-go/pixir/runtime/merge"
)

// twoProcessesScript plays both processes: an editor's session whose
// workflow merges a writer into a.txt (asking first: ask mode), and a
// pixir run whose isolated child reads a.txt from its snapshot.
const twoProcessesScript = `
[[rule]]
match = '\A\[w\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "a.txt" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "a.txt", content = "merged\n" }
  [[rule.reply]]
  text = "wrote it"

[[rule]]
match = '\A\[r\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "a.txt" }
  [[rule.reply]]
  text = "saw {{output .ToolResult | oneline}}"

[[rule]]
match = '^run the writer$'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '{"name":"write","steps":[{"id":"w","task":"[w] write a.txt","permission_mode":"writer","workspace_mode":"isolated","merge":"on_ready"}]}'
  [[rule.reply]]
  text = "ran it"

[[rule]]
match = '^spawn a reader$'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "[r] read a.txt", workspace_mode = "isolated" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 60000 }
  [[rule.reply]]
  text = "{{.ToolResult}}"
`

// startRun starts, in e's workspace, a pixir run whose isolated child
// reads a.txt from its snapshot. waited is closed when the run says on
// stderr that it waits for another process (pid …) in the workspace;
// exited gets the run's end.
func startRun(t *testing.T, e *env) (out *strings.Builder, stderr *syncBuffer, waited chan struct{}, exited chan error) {
	t.Helper()
	run := exec.Command(pixirBin, "run", "--script", e.script, "spawn a reader")
	run.Dir = e.ws
	run.Env = append(os.Environ(), "PIXIR_HOME="+e.home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=")
	out, stderr = &strings.Builder{}, &syncBuffer{}
	run.Stdout, run.Stderr = out, stderr
	require.NoError(t, run.Start())
	waited, exited = make(chan struct{}), make(chan error, 1)
	var ended atomic.Bool
	go func() {
		stderr.waitUntil(func(text string) bool {
			return ended.Load() || strings.Contains(text, "waits for another process (pid ")
		})
		if !ended.Load() {
			close(waited)
		}
	}()
	go func() {
		err := run.Wait()
		ended.Store(true)
		_, _ = stderr.Write(nil) // wakes the wait above
		exited <- err
	}()
	t.Cleanup(func() { _ = run.Process.Kill() })
	return out, stderr, waited, exited
}

// TestAMergeQuestionDoesNotHoldAnotherProcessesSnapshot: an editor's
// pixir acp asks the user whether to merge a workflow step (ask mode)
// while a pixir run in the same workspace spawns an isolated child. The
// run's snapshot does not wait for the user's answer (said only on the
// run's stderr, which the editor's user never sees): it copies the
// workspace as it is, before the merge, and the run ends while the
// question still waits. Before, the merge held the workspace's lock
// across its question, and the run waited for a human in another tool.
func TestAMergeQuestionDoesNotHoldAnotherProcessesSnapshot(t *testing.T) {
	e := newEnv(t, twoProcessesScript)
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, "a.txt"), []byte("base\n"), 0o644))
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.result(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)

	ran := false
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "run the writer")})
	m, seenMsgs := a.serveUntilReply("3", map[string]func(json.RawMessage) any{
		"session/request_permission": func(raw json.RawMessage) any {
			var q map[string]any
			require.NoError(t, json.Unmarshal(raw, &q))
			if title, _ := q["toolCall"].(map[string]any)["title"].(string); strings.HasPrefix(title, "Merge") && !ran {
				// The merge waits on this answer: the other process
				// spawns its child now, and ends before it is given.
				ran = true
				out, stderr, waited, exited := startRun(t, e)
				select {
				case err := <-exited:
					require.NoError(t, err, "the run's stderr:\n%s", stderr.String())
				case <-waited:
					t.Fatalf("the run's snapshot waits for the other process's merge question")
				}
				require.Contains(t, out.String(), "saw base", "the run's child got the workspace as it was before the merge")
			}
			res, err := client.Select(raw, "allow_once")
			require.NoError(t, err)
			return res
		},
	})
	require.Equal(t, "end_turn", stopReason(t, m))
	require.True(t, ran, "the merge asked: %s", agentText(updates(t, seenMsgs)))
	b, err := os.ReadFile(filepath.Join(e.ws, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "merged\n", string(b))
}

// TestASnapshotWaitsForAMergeOfAnotherProcess: an editor's pixir acp is
// held (the test hook) in the middle of writing a merge into the
// workspace, and a pixir run in the same workspace starts a session and
// spawns an isolated child. The run waits for the merge, and says on
// stderr whose (before, it waited for a merge journal it found with no
// word: merge.Recover's lock was its own); the acp is then killed (kill
// -9): the run finishes the half-done merge and its child reads the
// merged file. A snapshot never copies half of a merge of another process.
func TestASnapshotWaitsForAMergeOfAnotherProcess(t *testing.T) {
	e := newEnv(t, twoProcessesScript)
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, "a.txt"), []byte("base\n"), 0o644))
	a := e.startWith(map[string]string{merge.HoldEnv: "1"})
	a.initialize()
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "run the writer")})
	a.stderr.waitFor("merge held after 1 operations")

	out, stderr, waited, exited := startRun(t, e)
	select {
	case <-waited:
	case err := <-exited:
		t.Fatalf("the run ended (%v) without waiting for the other process's merge; its stderr:\n%s", err, stderr.String())
	}
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	require.NoError(t, <-exited, "the run's stderr:\n%s", stderr.String())
	require.Contains(t, out.String(), "saw merged", "the run's child got the workspace after the merge")
	b, err := os.ReadFile(filepath.Join(e.ws, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "merged\n", string(b))
	journals, err := filepath.Glob(filepath.Join(e.ws, ".pixir", "merges", "*", "journal.json"))
	require.NoError(t, err)
	require.Empty(t, journals, "the run finished the killed process's merge")
}

// TestAWaitForAnotherProcessesMergeIsShownInTheEditor: an editor's pixir
// acp runs a workflow whose isolated step must copy the workspace while
// another process (a second pixir acp, held by the test hook) is in the
// middle of writing a merge into it. The step's copy waits, and once the
// wait lasts, the editor is told on the run_workflow call who it waits
// for, once. Before, the wait was said only on the acp's stderr, which an
// editor's user never sees: the call sat silent.
func TestAWaitForAnotherProcessesMergeIsShownInTheEditor(t *testing.T) {
	e := newEnv(t, twoProcessesScript)
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, "a.txt"), []byte("base\n"), 0o644))
	// The editor's session is open first: opening one while another
	// process's merge is half done waits to finish it (merge.Recover).
	a := e.start()
	a.initialize()
	sid := a.newSession()
	h := e.startWith(map[string]string{merge.HoldEnv: "1"})
	h.initialize()
	hid := h.newSession()
	h.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(hid, "run the writer")})
	h.stderr.waitFor("merge held after 1 operations")

	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "run the writer")})
	waits := func(u map[string]any) bool {
		return u["sessionUpdate"] == "tool_call_update" && strings.Contains(fmt.Sprint(u["content"]), "Waiting for another process (pid ")
	}
	shown := a.awaitUpdate(waits)
	require.Equal(t, "in_progress", shown["status"])
	require.Contains(t, fmt.Sprint(shown["content"]), fmt.Sprintf("pid %d", h.cmd.Process.Pid))
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGKILL))
	m, after := a.serveUntilReply("3", nil)
	require.Equal(t, "end_turn", stopReason(t, m))
	for _, u := range updates(t, after) {
		require.False(t, waits(u), "the wait is shown once: %v", u)
	}
	b, err := os.ReadFile(filepath.Join(e.ws, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "merged\n", string(b))
}
