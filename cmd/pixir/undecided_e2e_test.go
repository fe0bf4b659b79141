package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
)

// TestAResumeRefusesToRunAgainASharedWriterThatEndedUndecided: a shared
// writer's child completed (its end is in the Log, its line in the
// workspace), and the process was killed before the step's checkpoint was
// decided. The Log is cut there, as the kill leaves it (no hook stops a
// real process in that window). --resume-from refuses to run the step
// again on top of its own change, says why and what to do, and changes
// nothing: the line is there once. Before, the step ran again and the
// line was appended twice.
func TestAResumeRefusesToRunAgainASharedWriterThatEndedUndecided(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = '\A\[w\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "echo line >> out.txt" }
  [[rule.reply]]
  text = "appended"
`)
	out := e.file("out.txt", "") // the sandbox lets a writer change files, not make them at the top
	wf := e.file("wf.json", `{"name":"append","steps":[{"id":"w","task":"[w] append a line","permission_mode":"writer","workspace_mode":"shared"}]}`)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
	require.Equal(t, exitOK, code, stderr)
	var first struct {
		Output struct {
			WorkflowID string `json:"workflow_id"`
		} `json:"output"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &first))
	sid := e.sessionIDs()[0]
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "line\n", string(b))

	// Cut the Log after the child's end: the checkpoint of its step and
	// everything after it were never written.
	logFile := filepath.Join(e.ws, ".pixir", "sessions", sid+".ndjson")
	data, err := os.ReadFile(logFile)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	cut := -1
	for i, line := range lines {
		var ev runtime.Event
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Type != runtime.EventSubagent {
			continue
		}
		var d runtime.SubagentEventData
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		if d.Event == tools.SubagentEventFinished {
			cut = i + 1
		}
	}
	require.Positive(t, cut)
	require.NoError(t, os.WriteFile(logFile, []byte(strings.Join(lines[:cut], "")), 0o644))

	stdout, stderr, code = e.pixir("resume", sid, "--script", script, "--workflow", wf, "--resume-from", first.Output.WorkflowID, "--json")
	require.NotEqual(t, exitOK, code, "%s\n%s", stdout, stderr)
	require.Contains(t, stdout+stderr, "completed and the process ended before its checkpoint was decided")
	require.Contains(t, stdout+stderr, "running it again would apply it twice")
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "line\n", string(b), "the work is applied once")

	// Changed, the step is a new one: it runs, as asked.
	e.file("wf.json", strings.Replace(`{"name":"append","steps":[{"id":"w","task":"[w] append a line","permission_mode":"writer","workspace_mode":"shared"}]}`, "append a line", "append another line", 1))
	_, stderr, code = e.pixir("resume", sid, "--script", script, "--workflow", wf, "--resume-from", first.Output.WorkflowID, "--json")
	require.Equal(t, exitOK, code, stderr)
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "line\nline\n", string(b))
}
