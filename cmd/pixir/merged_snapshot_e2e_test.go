package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAStepMergedWholeLeavesNoSnapshot: a workflow step's snapshot was
// kept after its work was merged into the workspace, until pixir gc
// removed it seven days later (qa32s: 4.7 GB after 50 steps over 20,000
// files). Once the step is decided with every change merged, nothing needs
// it: the snapshot and its base go, the child's Log stays. A step whose
// work was not merged keeps its snapshot: the work is there only.
func TestAStepMergedWholeLeavesNoSnapshot(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = '\[write\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "src/made.txt", content = "made by the writer\n" }
  [[rule.reply]]
  text = "wrote it"
`)
	home := func(merge string) (string, string) {
		t.Helper()
		wf := e.file("wf.json", `{"merge":"`+merge+`","steps":[{"id":"make","task":"[write] make it","write_set":["src/**"]}]}`)
		stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
		require.Equal(t, exitOK, code, stderr)
		step := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)["steps"].([]any)[0].(map[string]any)
		return filepath.Join(e.ws, ".pixir", "subagents", step["agent_id"].(string)), step["merge"].(map[string]any)["status"].(string)
	}

	dir, status := home("on_ready")
	require.Equal(t, "merged", status)
	require.FileExists(t, filepath.Join(e.ws, "src", "made.txt"))
	require.NoDirExists(t, filepath.Join(dir, "workspace"), "a merged step's snapshot is removed")
	require.NoDirExists(t, filepath.Join(dir, "base"))
	logs, err := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	require.NoError(t, err)
	require.Len(t, logs, 1, "the child's Log stays")

	require.NoError(t, os.Remove(filepath.Join(e.ws, "src", "made.txt")))
	dir, status = home("never")
	require.Equal(t, "not_merged", status)
	require.DirExists(t, filepath.Join(dir, "workspace"), "work not merged stays in its snapshot")
	require.FileExists(t, filepath.Join(dir, "workspace", "src", "made.txt"))
	require.DirExists(t, filepath.Join(dir, "base"))
}
