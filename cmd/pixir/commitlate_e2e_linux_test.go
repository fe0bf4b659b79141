package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A user who edits a file the run changed, while the run goes on (after
// the step that changed it ended): the run's commit leaves that file out
// and says why, so the commit made under the run's message never holds
// the user's edit; the edit stays in the working file. A file the run
// changed and nobody touched since is committed. The commit took the
// whole file, the user's edit with the run's work.
func TestAFileTheUserEditedWhileTheRunWentOnIsLeftOutOfItsCommit(t *testing.T) {
	e := newRunEnv(t)
	e.file("code.txt", "base\n")
	e.file("other.txt", "base\n")
	git(t, e.ws, "init", "-q")
	git(t, e.ws, "config", "user.name", "t")
	git(t, e.ws, "config", "user.email", "t@t")
	git(t, e.ws, "add", "-A")
	git(t, e.ws, "commit", "-qm", "base")
	// gate, a reader, waits for the user's edit (the file edited, which
	// the test makes once it is done).
	script := e.file("script.toml", `
[[rule]]
match = '\A\[w\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "code.txt" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "code.txt", content = "base\nthe run's line\n" }
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "other.txt" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "other.txt", content = "base\nthe run's other line\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"written"}'
  [[rule.reply]]
  text = "written"
[[rule]]
match = '\A\[gate\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "while [ ! -e edited ]; do sleep 0.01; done" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"gated"}'
  [[rule.reply]]
  text = "gated"
`)
	wf := e.file("wf.json", `{"commit":{"message":"the run's work","exclude":["script.toml","wf.json","edited"]},"steps":[
		{"id":"w","task":"[w] write","write_set":["code.txt","other.txt"],"workspace_mode":"shared"},
		{"id":"gate","agent":"explorer","task":"[gate] wait","depends_on":["w"]}]}`)
	git(t, e.ws, "add", "-A")
	git(t, e.ws, "commit", "-qm", "the script")

	cmd := e.command("run", "--script", script, "--workflow", wf, "--json")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var stderr strings.Builder
	lines := bufio.NewScanner(pipe)
	for lines.Scan() {
		stderr.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "step w checkpoint_ready") {
			break
		}
	}
	require.Contains(t, stderr.String(), "step w checkpoint_ready")
	seen := time.Now()
	// The kernel stamps a change with a clock that may lag the one Pixir
	// read by a tick: the edit is made once a change is stamped later
	// than the moment the step's end was seen.
	probe := filepath.Join(t.TempDir(), "probe")
	for {
		require.NoError(t, os.WriteFile(probe, nil, 0o644))
		fi, err := os.Stat(probe)
		require.NoError(t, err)
		if changedAt(fi).After(seen) {
			break
		}
	}
	f, err := os.OpenFile(filepath.Join(e.ws, "code.txt"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("the user's line, written meanwhile\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	e.file("edited", "")
	rest, _ := io.ReadAll(pipe)
	stderr.Write(rest)
	_ = cmd.Wait()

	out := validEnvelope(t, stdout.String(), "run_workflow_output.json")["output"].(map[string]any)
	commit := out["commit"].(map[string]any)
	require.Equal(t, "committed", commit["status"], "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	require.Equal(t, []any{"other.txt"}, commit["files"])
	left := commit["left_out"].([]any)
	require.Len(t, left, 1)
	require.Equal(t, "code.txt", left[0].(map[string]any)["path"])
	require.Contains(t, left[0].(map[string]any)["reason"], "after the run's last change to it")

	require.Equal(t, "base\n", git(t, e.ws, "show", "HEAD:code.txt"), "left out: the commit holds nothing of the user's edit")
	require.Equal(t, "base\nthe run's other line\n", git(t, e.ws, "show", "HEAD:other.txt"))
	require.Equal(t, "base\nthe run's line\nthe user's line, written meanwhile\n", e.read("code.txt"), "the working file keeps both")
	require.Contains(t, stdout.String(), "code.txt left out")
}
