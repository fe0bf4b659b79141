package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/merge"
	"github.com/pixir-go/pixir/workflows"
)

// kill -9 of pixir in the middle of a workflow's merge-back, then
// `pixir resume` of the workflow: the first process is held by the test
// hook once 17 of the writer's 40 files are in the workspace and killed
// there; every file is then old or new, never torn, and the resumed
// session finishes the merge from its journal when it opens, so all are
// new.
func TestKillPixirDuringAMergeThenResumeCompletesIt(t *testing.T) {
	const files, holdAfter = 40, 17
	e := newRunEnv(t)
	for i := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(e.ws, "src"), 0o755))
		e.file(fmt.Sprintf("src/f%02d.txt", i), oldContent(i))
	}
	// The writer rewrites all 40 files in its snapshot with one command.
	script := e.file("script.toml", `
[[rule]]
match = '\[write\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = 'for i in $(seq -w 0 `+fmt.Sprint(files-1)+`); do printf "new %s\n%s\n" "$i" "$(head -c 3000 /dev/zero | tr "\0" n)" > src/f$i.txt; done' }
  [[rule.reply]]
  text = "rewrote them"
`)
	wf := e.file("wf.json", `{"steps":[{"id":"make","task":"[write] rewrite the files","write_set":["src/**"]}]}`)

	cmd := e.command("run", "--script", script, "--workflow", wf, "--json")
	cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", merge.HoldEnv, holdAfter))
	var stdout bytes.Buffer
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	held := make(chan struct{})
	go func() {
		stderr.waitFor(fmt.Sprintf("merge held after %d operations", holdAfter))
		close(held)
	}()
	select {
	case <-held:
	case err := <-exited:
		t.Fatalf("pixir ended before its merge was held (%v):\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	var exit *exec.ExitError
	require.True(t, errors.As(<-exited, &exit))
	status, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok && status.Signaled() && status.Signal() == syscall.SIGKILL, "killed by SIGKILL: %v", exit)

	// Held with 17 applied (the other workers stop at the hook too): each
	// file is old or new, at least 17 new and some still old, and the
	// journal is there for the next process.
	news := 0
	for i := range files {
		switch got := e.read(fmt.Sprintf("src/f%02d.txt", i)); got {
		case oldContent(i):
		case newContent(i):
			news++
		default:
			t.Fatalf("src/f%02d.txt is neither old nor new after the kill: %q", i, got)
		}
	}
	require.GreaterOrEqual(t, news, holdAfter)
	require.Less(t, news, files, "the merge was stopped before its end")
	journals, err := filepath.Glob(filepath.Join(e.ws, ".pixir", "merges", "*", "journal.json"))
	require.NoError(t, err)
	require.Len(t, journals, 1, "the killed merge's journal")

	// The session id is printed at the end, which never came: the Log is
	// the one session of the workspace.
	sid := onlySession(t, e.ws)
	var wfID string
	for _, ev := range workflowEvents(t, readLog(t, e.ws, sid)) {
		wfID = ev.WorkflowID
	}
	require.NotEmpty(t, wfID)

	out, errOut, code := e.pixir("resume", sid, "--script", script, "--workflow", wf, "--resume-from", wfID, "--json", "--verbose")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out, errOut)
	require.Contains(t, errOut, "finished a merge an earlier process left half-done", "the session finished it when it opened")
	outcome := runOutcome(t, out)
	require.Equal(t, workflows.StatusCompleted, outcome.Status, outcome.Output)
	// The session finished the journal when it opened; the step, whose
	// merge began but was never decided, is not run again: its child is
	// merged again, and that merge had nothing left to write.
	step := runOf(t, outcome, "make")
	require.NotNil(t, step.Merge, outcome.Output)
	require.Equal(t, "merged", string(step.Merge.Status), outcome.Output)
	require.Zero(t, step.Merge.Applied.Count(), "the resumed session's recovery wrote every file, not a second merge: %s", outcome.Output)
	for i := range files {
		require.Equal(t, newContent(i), e.read(fmt.Sprintf("src/f%02d.txt", i)), "src/f%02d.txt after the resume", i)
	}
	left, err := filepath.Glob(filepath.Join(e.ws, ".pixir", "merges", "*", "journal.json"))
	require.NoError(t, err)
	require.Empty(t, left, "the journal is gone once its merge is finished")
}

func oldContent(i int) string { return fmt.Sprintf("old %02d\n", i) }

func newContent(i int) string {
	return fmt.Sprintf("new %02d\n%s\n", i, strings.Repeat("n", 3000))
}

// kill -9 in the middle of a ready writer's merge, then a resume of the
// run: the step is not run again on top of its own work. Its writer
// appended a line to each of two files; the kill came after the first
// was merged, and the resumed session's recovery finished the merge when
// it opened. The resumed run merged the killed run's child again (nothing
// left to write) and reused its checkpoint: each file has the line once.
// Before, the step ran again, since the Log had no checkpoint for it, and
// its new child appended the line a second time: the work was applied
// twice and the run said completed.
func TestKillDuringAMergeThenResumeDoesNotRunTheStepAgain(t *testing.T) {
	e := newRunEnv(t)
	require.NoError(t, os.MkdirAll(filepath.Join(e.ws, "src"), 0o755))
	e.file("src/a.txt", "base\n")
	e.file("src/b.txt", "base\n")
	script := e.file("script.toml", `
[[rule]]
match = '\[append\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = 'echo "one more line" >> src/a.txt; echo "one more line" >> src/b.txt' }
  [[rule.reply]]
  text = "appended"
`)
	wf := e.file("wf.json", `{"steps":[{"id":"app","task":"[append] add a line to each file","write_set":["src/**"]}]}`)

	cmd := e.command("run", "--script", script, "--workflow", wf, "--json")
	cmd.Env = append(cmd.Env, merge.HoldEnv+"=1")
	var stdout bytes.Buffer
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	held := make(chan struct{})
	go func() {
		stderr.waitFor("merge held after 1 operations")
		close(held)
	}()
	select {
	case <-held:
	case err := <-exited:
		t.Fatalf("pixir ended before its merge was held (%v):\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	var exit *exec.ExitError
	require.True(t, errors.As(<-exited, &exit), "killed")

	sid := onlySession(t, e.ws)
	var wfID, child string
	for _, ev := range workflowEvents(t, readLog(t, e.ws, sid)) {
		wfID = ev.WorkflowID
		require.NotEqual(t, workflows.EventCheckpointDecided, ev.Kind, "killed before the step was decided")
		if ev.Kind == workflows.EventStepMerging {
			child = ev.Outcome.AgentID
		}
	}
	require.NotEmpty(t, child, "the merge's start is in the Log")

	// pixir inspect tells it as the Log does: the step was ready, its
	// child completed, its merge cut off. It said the child was running
	// when the process ended, its work not known to be complete.
	insp, errOut, code := e.pixir("inspect", "--json", sid)
	require.Equal(t, exitOK, code, errOut)
	var tree struct {
		Workflows []struct {
			Steps []struct {
				CheckpointStatus string `json:"checkpoint_status"`
				SubagentStatus   string `json:"subagent_status"`
				Merge            struct {
					Status string `json:"status"`
					Reason string `json:"reason"`
				} `json:"merge"`
			} `json:"steps"`
		} `json:"workflows"`
	}
	require.NoError(t, json.Unmarshal([]byte(insp), &tree), insp)
	require.Len(t, tree.Workflows, 1, insp)
	require.Len(t, tree.Workflows[0].Steps, 1, insp)
	st := tree.Workflows[0].Steps[0]
	require.Equal(t, "needs_orchestrator", st.CheckpointStatus, insp)
	require.Equal(t, "completed", st.SubagentStatus, insp)
	require.Equal(t, "not_merged", st.Merge.Status, insp)
	require.Contains(t, st.Merge.Reason, "the process ended during the merge", insp)

	out, errOut, code := e.pixir("resume", sid, "--script", script, "--workflow", wf, "--resume-from", wfID, "--json")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out, errOut)
	outcome := runOutcome(t, out)
	require.Equal(t, workflows.StatusCompleted, outcome.Status, outcome.Output)
	step := runOf(t, outcome, "app")
	require.Equal(t, wfID, step.ReusedFrom, "the step is not run again: %s", outcome.Output)
	require.Equal(t, child, step.AgentID, "the killed run's child is the one merged")
	require.NotNil(t, step.Merge, outcome.Output)
	require.Equal(t, "merged", string(step.Merge.Status), outcome.Output)
	for _, f := range []string{"src/a.txt", "src/b.txt"} {
		require.Equal(t, "base\none more line\n", e.read(f), "%s has the step's line once", f)
	}
}
