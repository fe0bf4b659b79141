package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/acp/client"
)

// twoProcessesScript plays both processes: an editor's session whose
// workflow merges a writer into a.txt (asking first: ask mode), and a
// pixir run whose isolated child reads a.txt from its snapshot.
const twoProcessesScript = `
[[rule]]
match = '\A\[w\]'
  [[rule.reply]]
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

// TestASnapshotWaitsForAMergeOfAnotherProcess: an editor's pixir acp
// merges a workflow step into the workspace, and holds the merge (ask
// mode: the question is asked within it) while a pixir run in the same
// workspace spawns an isolated child. The run's snapshot waits for the
// merge, says on stderr whose, and copies the workspace after it: its
// child reads the merged file. Before, the rule "a snapshot never copies
// while a merge writes" was held by a lock of one process only: the run
// copied at once, in the middle of the other's merge.
func TestASnapshotWaitsForAMergeOfAnotherProcess(t *testing.T) {
	e := newEnv(t, twoProcessesScript)
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, "a.txt"), []byte("base\n"), 0o644))
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.result(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)

	var run *exec.Cmd
	var runOut strings.Builder
	waited := false
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "run the writer")})
	m, seenMsgs := a.serveUntilReply("3", map[string]func(json.RawMessage) any{
		"session/request_permission": func(raw json.RawMessage) any {
			var q map[string]any
			require.NoError(t, json.Unmarshal(raw, &q))
			if title, _ := q["toolCall"].(map[string]any)["title"].(string); strings.HasPrefix(title, "Merge") && run == nil {
				// The merge is under way and waits on this answer: the
				// other process starts its child now.
				run = exec.Command(pixirBin, "run", "--script", e.script, "spawn a reader")
				run.Dir = e.ws
				run.Env = append(os.Environ(), "PIXIR_HOME="+e.home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=")
				run.Stdout = &runOut
				stderr, err := run.StderrPipe()
				require.NoError(t, err)
				require.NoError(t, run.Start())
				sc := bufio.NewScanner(stderr)
				var seen []string
				for sc.Scan() {
					seen = append(seen, sc.Text())
					if strings.Contains(sc.Text(), "pixir: warning: a snapshot's copy waits for another process (pid ") {
						waited = true
						break
					}
				}
				require.True(t, waited, "the run's snapshot did not wait for the merge; its stderr:\n%s", strings.Join(seen, "\n"))
				go func() { _, _ = bufio.NewReader(stderr).WriteTo(nopWriter{}) }() // the rest, unread
			}
			res, err := client.Select(raw, "allow_once")
			require.NoError(t, err)
			return res
		},
	})
	require.Equal(t, "end_turn", stopReason(t, m))
	require.NotNil(t, run, "the merge asked: %s", agentText(updates(t, seenMsgs)))
	require.NoError(t, run.Wait())
	b, err := os.ReadFile(filepath.Join(e.ws, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "merged\n", string(b))
	require.Contains(t, runOut.String(), "saw merged", "the run's child got the workspace after the merge")
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
