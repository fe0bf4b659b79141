package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/workflows"
)

// The practice end to end: the built-in template practice through the
// binary, on the offline scenario of examples/practice-demo (the scripted
// provider plays every role), in a temporary git repository made from
// examples/practice-demo/repo. It covers these rows of the routing matrix
// (spec/multi-agent-workflow-design.txt §4): 2 (@pm flips Todo to In
// Progress), 3 and 5 (plan.md and task-N.md written), 4 (NEEDS WORK → the
// plan revised in place and reviewed again; both ACCEPTABLE → phase 5),
// 5.5 (ACCEPTABLE → phase 6), 6 (TESTS_READY → phase 7, RED verified by
// Pixir), 7 (Implementation Incomplete + escalate test_design → @check →
// @test → a fresh @make, within 2 cycles), 8 (both ACCEPTABLE → phase 9),
// 9 (a pre-existing bug filed as a sub-issue via @pm; Done; the summary;
// a commit). The other rows run on the simulated runtime
// (workflows/practice_test.go).
func TestThePracticeRunsEndToEndToACommit(t *testing.T) {
	e := newRunEnv(t)
	demo := filepath.Join("..", "..", "examples", "practice-demo")
	require.NoError(t, os.CopyFS(e.ws, os.DirFS(filepath.Join(demo, "repo"))))
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = e.ws
		cmd.Env = append(os.Environ(), gitIdentity...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "the demo project")
	base := git("rev-parse", "HEAD")
	// Something of the user's, not the run's: it stays out of the commit.
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, "NOTES.txt"), []byte("mine\n"), 0o644))

	script, err := filepath.Abs(filepath.Join(demo, "script.toml"))
	require.NoError(t, err)
	cmd := e.command("run", "--workflow", "practice", "--set", "issue=GAL-1", "--set", "test_command=sh tests/run.sh", "--script", script, "--json")
	cmd.Env = append(cmd.Env, gitIdentity...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	out := runOutcome(t, stdout.String())
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)

	var runs []string
	for _, s := range out.Steps {
		runs = append(runs, s.Run+":"+string(s.CheckpointStatus))
	}
	require.Equal(t, []string{
		"issue:checkpoint_ready",
		"plan#1.1:checkpoint_ready", "check-plan#1.1:checkpoint_ready", "simplify-plan#1.1:checkpoint_ready",
		"plan#1.2:checkpoint_ready", "check-plan#1.2:checkpoint_ready", "simplify-plan#1.2:checkpoint_ready",
		"split#1.1:checkpoint_ready", "check-split#1.1:checkpoint_ready",
		"write-tests#1[1]:checkpoint_ready", "test-review#1:skipped", "test-fix#1:skipped",
		"make#1.1.1[1]:partial", "diagnose#1.1.1:checkpoint_ready", "redesign#1.1.1:checkpoint_ready",
		"make#1.1.2[1]:checkpoint_ready", "diagnose#1.1.2:skipped", "redesign#1.1.2:skipped",
		"final-check#1.1:checkpoint_ready", "final-simplify#1.1:checkpoint_ready", "test-diagnose#1.1:skipped", "test-redo#1.1:skipped",
		"commit:checkpoint_ready", "summary:checkpoint_ready",
	}, runs)
	var loops []string
	for _, l := range out.Loops {
		loops = append(loops, l.Run+": "+workflows.LoopStateText(&l))
	}
	require.Equal(t, []string{"revisit: satisfied at iteration 1 of 2", "plan-review#1: satisfied at iteration 2 of 3",
		"split-review#1: satisfied at iteration 1 of 2", "final-review#1: satisfied at iteration 1 of 3", "escalation#1.1: satisfied at iteration 2 of 2"}, loops)

	// The roles ran as their built-in agents.
	for run, agent := range map[string]string{"issue": "pm", "check-plan#1.2": "check", "simplify-plan#1.2": "simplify", "write-tests#1[1]": "test", "make#1.1.2[1]": "make", "commit": "pm"} {
		require.Equal(t, agent, runOf(t, out, run).Agent, run)
	}
	// The reviser got the findings; the fresh make got the redesign.
	require.Contains(t, firstUserText(t, childLog(t, e.ws, runOf(t, out, "plan#1.2"))), "the plan names no test file")
	require.Contains(t, firstUserText(t, childLog(t, e.ws, runOf(t, out, "make#1.1.2[1]"))), "redesign#1.1.1 (checkpoint_ready")
	// make is held to its task's files: its write set is calc.sh alone.
	require.Contains(t, firstUserText(t, childLog(t, e.ws, runOf(t, out, "make#1.1.2[1]"))), "You may write only: calc.sh.")
	// Pixir verified RED before the implementation and GREEN before closing.
	require.Contains(t, runOf(t, out, "write-tests#1[1]").Checkpoint.Verification[0], "verified by Pixir: `sh tests/run.sh` exited 1, as required (fail)")
	require.Contains(t, runOf(t, out, "commit").Checkpoint.Verification[0], "verified by Pixir: `sh tests/run.sh` exited 0, as required (pass)")

	// The artifacts, the TODO status flips and the follow-up.
	for _, f := range []string{"plan.md", "task-1.md", "summary.md"} {
		require.FileExists(t, filepath.Join(e.ws, ".workflow", "run-GAL-1", f))
	}
	issue, err := os.ReadFile(filepath.Join(e.ws, "TODO", "GAL-1.md"))
	require.NoError(t, err)
	require.Contains(t, string(issue), "status: Done")
	followUp, err := os.ReadFile(filepath.Join(e.ws, "TODO", "GAL-1-1.md"))
	require.NoError(t, err)
	require.Contains(t, string(followUp), "parent: GAL-1\nlabel: bug")

	// One commit on top of the base, with exactly the intended files.
	require.Equal(t, base, git("rev-parse", "HEAD~1"))
	require.Equal(t, &workflows.CommitReport{Status: workflows.Committed, Commit: git("rev-parse", "HEAD"), Message: "GAL-1: implemented by the practice workflow",
		Files: []string{"TODO/GAL-1-1.md", "TODO/GAL-1.md", "TODO/README.md", "calc.sh", "tests/test_mul.sh"}}, out.Commit)
	require.Equal(t, "TODO/GAL-1-1.md\nTODO/GAL-1.md\nTODO/README.md\ncalc.sh\ntests/test_mul.sh", git("show", "--name-only", "--format=", "HEAD"))
	require.Equal(t, "?? NOTES.txt", git("status", "--porcelain"), "the user's file, untouched; .pixir/ and .workflow/ ignored")
	require.Equal(t, "ok   tests/test_add.sh\nok   tests/test_mul.sh", runTests(t, e.ws), "the committed work passes its tests")

	// The Log rebuilds the outcome, commit included.
	events := readLog(t, e.ws, sessionOf(t, e.ws, stderr.String()))
	rebuilt := workflows.Rebuild(workflowEvents(t, events))
	require.Len(t, rebuilt, 1)
	want, _ := json.Marshal(out)
	got, _ := json.Marshal(rebuilt[0])
	require.JSONEq(t, string(want), string(got))
}

// gitIdentity lets git commit in a test whatever the machine's config.
var gitIdentity = []string{"GIT_AUTHOR_NAME=pixir test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=pixir test", "GIT_COMMITTER_EMAIL=test@example.com"}

// runTests runs the demo project's tests and returns their output.
func runTests(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("sh", "tests/run.sh")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.TrimSpace(string(out))
}
