package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A workflow's commit, through the binary, of a file the user had changed
// before the run (not committed) and the run changed too: the commit
// holds HEAD's version with the run's change alone; the user's edit stays
// in the working file, uncommitted. A file whose run's change overlaps
// the user's is left out of the commit, and the outcome says so. The
// commit took the whole file, the user's edits with the run's (2e2337a
// said so in the README).
func TestAWorkflowCommitsOnlyItsPartOfAFileTheUserChanged(t *testing.T) {
	e := newRunEnv(t)
	var top, clash strings.Builder
	for range 30 {
		top.WriteString("line\n")
		clash.WriteString("row\n")
	}
	e.file("code.txt", top.String())
	e.file("clash.txt", clash.String())
	git(t, e.ws, "init", "-q")
	git(t, e.ws, "config", "user.name", "t")
	git(t, e.ws, "config", "user.email", "t@t")
	git(t, e.ws, "add", "-A")
	git(t, e.ws, "commit", "-qm", "base")
	// The user's uncommitted edits: the first line of each file.
	e.file("code.txt", "the user's line\n"+strings.Repeat("line\n", 29))
	e.file("clash.txt", "the user's row\n"+strings.Repeat("row\n", 29))

	script := e.file("script.toml", `
[[rule]]
match = '\A\[w\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "echo 'the run line' >> code.txt && c=$(tail -n +2 clash.txt) && { echo 'the run row'; echo \"$c\"; } > clash.txt" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"edited"}'
  [[rule.reply]]
  text = "edited"
`)
	wf := e.file("wf.json", `{"commit":{"message":"the run's work","exclude":["script.toml","wf.json"]},"steps":[
		{"id":"w","task":"[w] edit","write_set":["code.txt","clash.txt"]}]}`)
	stdout, stderr, _ := e.pixir("run", "--script", script, "--workflow", wf, "--json")

	out := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)
	commit := out["commit"].(map[string]any)
	require.Equal(t, "committed", commit["status"], "stdout: %s\nstderr: %s", stdout, stderr)
	require.Equal(t, []any{"code.txt"}, commit["files"])
	left := commit["left_out"].([]any)
	require.Len(t, left, 1)
	require.Equal(t, "clash.txt", left[0].(map[string]any)["path"])
	require.Contains(t, left[0].(map[string]any)["reason"], "does not apply to HEAD's version cleanly")

	require.Equal(t, strings.Repeat("line\n", 30)+"the run line\n", git(t, e.ws, "show", "HEAD:code.txt"), "HEAD's version with the run's change alone")
	require.Equal(t, "the user's line\n"+strings.Repeat("line\n", 29)+"the run line\n", e.read("code.txt"), "the working file as the run left it")
	diff := git(t, e.ws, "diff", "--", "code.txt")
	require.Contains(t, diff, "+the user's line", "the user's edit is still theirs, uncommitted")
	require.NotContains(t, diff, "the run line")
	require.Equal(t, strings.Repeat("row\n", 30), git(t, e.ws, "show", "HEAD:clash.txt"), "left out")
	require.Contains(t, stderr+stdout, "clash.txt left out")
}
