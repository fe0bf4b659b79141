package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
// all commits done → the work's commit, then chore(todo): … with TODO/).
// The other scenarios below take the same story and change a
// role's answers (practiceScenario); the other rows run on the simulated
// runtime (workflows/practice_test.go).
func TestThePracticeRunsEndToEndToACommit(t *testing.T) {
	p := newPracticeRepo(t)
	out, stderr := p.run(p.scenario(""))
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)

	require.Equal(t, []string{
		"issue:checkpoint_ready",
		"plan#1.1:checkpoint_ready", "check-plan#1.1:checkpoint_ready", "simplify-plan#1.1:checkpoint_ready",
		"plan#1.2:checkpoint_ready", "check-plan#1.2:checkpoint_ready", "simplify-plan#1.2:checkpoint_ready",
		"split#1.1:checkpoint_ready", "check-split#1.1:checkpoint_ready",
		"write-tests#1.1[1]:checkpoint_ready", "test-signoff#1.1[1]:skipped", "seam#1.1[1]:skipped", "test-review#1[1]:skipped", "test-fix#1[1]:skipped",
		"make#1.1.1[1]:partial", "diagnose#1.1.1:checkpoint_ready", "redesign#1.1.1:checkpoint_ready",
		"make#1.1.2[1]:checkpoint_ready", "diagnose#1.1.2:skipped", "redesign#1.1.2:skipped",
		"final-check#1.1:checkpoint_ready", "final-simplify#1.1:checkpoint_ready", "test-diagnose#1.1:skipped", "test-redo#1.1:skipped", "cosmetic-fix#1.1:skipped",
		"commit:checkpoint_ready", "summary:checkpoint_ready",
	}, practiceRuns(out))
	require.Equal(t, []string{"revisit: satisfied at iteration 1 of 2", "plan-review#1: satisfied at iteration 2 of 3",
		"split-review#1: satisfied at iteration 1 of 2", "testability#1: satisfied at iteration 1 of 2", "final-review#1: satisfied at iteration 1 of 3", "escalation#1.1: satisfied at iteration 2 of 2"}, practiceLoops(out))

	// The roles ran as their built-in agents.
	for run, agent := range map[string]string{"issue": "pm", "check-plan#1.2": "check", "simplify-plan#1.2": "simplify", "write-tests#1.1[1]": "test", "make#1.1.2[1]": "make", "commit": "pm"} {
		require.Equal(t, agent, runOf(t, out, run).Agent, run)
	}
	// The reviser got the findings; the fresh make got the redesign.
	require.Contains(t, p.prompt(out, "plan#1.2"), "the plan names no test file")
	require.Contains(t, p.prompt(out, "make#1.1.2[1]"), "redesign#1.1.1 (checkpoint_ready")
	// make is held to its task's files: its write set is calc.sh alone.
	require.Contains(t, p.prompt(out, "make#1.1.2[1]"), "You may write only: calc.sh.")
	// Pixir verified RED before the implementation and GREEN before closing.
	require.Contains(t, runOf(t, out, "write-tests#1.1[1]").Checkpoint.Verification[0], "verified by Pixir: `sh tests/run.sh` exited 1, as required (fail)")
	require.Contains(t, runOf(t, out, "commit").Checkpoint.Verification[0], "verified by Pixir: `sh tests/run.sh` exited 0, as required (pass)")

	// The artifacts, the TODO status flips and the follow-up.
	for _, f := range []string{"plan.md", "task-1.md", "summary.md"} {
		require.FileExists(t, filepath.Join(p.e.ws, ".workflow", "run-GAL-1", f))
	}
	require.Contains(t, p.read("TODO/GAL-1.md"), "status: Done")
	require.Contains(t, p.read("TODO/GAL-1-1.md"), "parent: GAL-1\nlabel: bug")

	p.requireTwoCommits(out, demoWork, "TODO/GAL-1-1.md", "TODO/GAL-1.md", "TODO/README.md")
	p.requireRebuilt(out, sessionOf(t, p.e.ws, stderr))
}

// Row 6, TESTS_READY + escalate_to_check: true, through the binary: test
// asks for a light review of its tests; check finds a problem (NEEDS
// WORK); test fixes them (RED again, verified by Pixir); then make goes
// on as in the demo, and the run reaches its commit. The review and the
// fix are task 1's own instances, decided on write-tests[1]'s payload,
// and the decision is evidence in the Log with the value it saw.
func TestThePracticeEscalatesATasksTestsAndStillCommits(t *testing.T) {
	p := newPracticeRepo(t)
	out, stderr := p.run(p.scenario(testEscalates))
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)

	runs := practiceRuns(out)
	for _, r := range []string{"write-tests#1.1[1]:checkpoint_ready", "test-review#1[1]:checkpoint_ready", "test-fix#1[1]:checkpoint_ready",
		"make#1.1.2[1]:checkpoint_ready", "commit:checkpoint_ready", "summary:checkpoint_ready"} {
		require.Contains(t, runs, r, out.Output)
	}
	require.Equal(t, "check", runOf(t, out, "test-review#1[1]").Agent)
	require.Equal(t, "test", runOf(t, out, "test-fix#1[1]").Agent)
	seen := runOf(t, out, "test-review#1[1]").Conditions
	require.Len(t, seen, 1)
	require.Equal(t, "write-tests#1.1[1]", seen[0].Run)
	require.JSONEq(t, "true", string(seen[0].Value))
	// The review saw why test escalated; the fix saw the review; make saw
	// both; the fix is verified RED by Pixir.
	require.Contains(t, p.prompt(out, "test-review#1[1]"), "the expectation of mul 3 4 may be wrong")
	require.Contains(t, p.prompt(out, "test-fix#1[1]"), "assert through calc.sh")
	require.Contains(t, p.prompt(out, "make#1.1.1[1]"), "test-fix#1[1] (checkpoint_ready")
	require.Contains(t, runOf(t, out, "test-fix#1[1]").Checkpoint.Verification[0], "verified by Pixir: `sh tests/run.sh` exited 1, as required (fail)")

	// The Log holds the per-instance decision.
	var decided []workflows.WorkflowEvent
	for _, ev := range workflowEvents(t, readLog(t, p.e.ws, sessionOf(t, p.e.ws, stderr))) {
		if ev.Kind == workflows.EventConditionDecided && strings.HasPrefix(ev.Run, "test-review#1[") {
			decided = append(decided, ev)
		}
	}
	require.Len(t, decided, 1)
	require.True(t, *decided[0].Result)

	p.requireTwoCommits(out, demoWork, "TODO/GAL-1-1.md", "TODO/GAL-1.md", "TODO/README.md")
	p.requireRebuilt(out, sessionOf(t, p.e.ws, stderr))
}

// Row 1 through the binary: Pixir's sanity checks stop the practice with
// an error before any agent runs — on the base branch, on a detached
// HEAD, without the file (the bare repository: runtime's
// TestGitCommitterPreflightNamesEachProblem) — and nothing is committed.
func TestThePracticeStopsBeforeAnyAgentWhenItsSanityChecksFail(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		setup      func(p *practiceRepo)
	}{
		{"branch == base", "the workspace is on main, the base branch", func(p *practiceRepo) { p.git("switch", "-q", "main") }},
		{"detached HEAD", "HEAD is detached (at ", func(p *practiceRepo) { p.git("switch", "-q", "--detach") }},
		{"missing TODO/<ID>.md", "TODO/GAL-1.md does not exist in the workspace", func(p *practiceRepo) {
			require.NoError(t, os.Remove(filepath.Join(p.e.ws, "TODO", "GAL-1.md")))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPracticeRepo(t)
			tt.setup(p)
			cmd := p.command(p.scenario(""))
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "a failed run exits non-zero: %v\n%s", err, stderr.String())
			out := runOutcome(t, stdout.String())
			require.Equal(t, workflows.StatusFailed, out.Status, out.Output)
			require.True(t, strings.HasPrefix(out.StoppedBy, workflows.StoppedPreflight+": "), out.StoppedBy)
			require.Contains(t, out.StoppedBy, tt.want)
			require.Contains(t, out.Output, tt.want)
			for _, s := range out.Steps {
				require.Empty(t, s.AgentID, "%s: no agent ran", s.Run)
			}
			require.Equal(t, p.base, p.git("rev-parse", "HEAD"), "nothing committed")
		})
	}
}

// Rows 3 and 5 through the binary: Pixir checks that plan.md, and every
// task-N.md the split reports, exist when the step reports ready (verify
// exists); a step that skipped writing its file is refused and is not
// checkpoint_ready, and the run does not reach its commit.
func TestThePracticeRefusesAPlanOrSplitThatSkippedItsFile(t *testing.T) {
	for _, tt := range []struct {
		name, rule, run, want string
	}{
		{"plan.md not written", `
[[rule]]
name = "the plan, reported but never written"
match = '\AWrite the plan for issue'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"plan.md written"}'
  [[rule.reply]]
  text = "plan.md written."
`, "plan#1.1", "Pixir checked that .workflow/run-GAL-1/plan.md exists (the plan is written (row 3)): it does not exist."},
		{"task-2.md not written", `
[[rule]]
name = "the split reports two tasks and writes one"
match = '\ASplit the reviewed plan'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = ".workflow/run-GAL-1/task-1.md" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = ".workflow/run-GAL-1/task-1.md", content = "# Task 1: mul\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"two tasks","payload":{"tasks":[{"id":"1","files":["calc.sh"],"tests":["tests/test_mul.sh"]},{"id":"2","files":["calc.sh"],"tests":["tests/test_div.sh"]}]}}'
  [[rule.reply]]
  text = "split into two tasks"
`, "split#1.1", "Pixir checked that .workflow/run-GAL-1/task-2.md exists (every task spec is written (row 5)): it does not exist."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPracticeRepo(t)
			cmd := p.command(p.scenario(tt.rule))
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			var exit *exec.ExitError
			require.True(t, errors.As(cmd.Run(), &exit), stderr.String())
			out := runOutcome(t, stdout.String())
			require.NotEqual(t, workflows.StatusCompleted, out.Status, out.Output)
			got := runOf(t, out, tt.run)
			require.Equal(t, workflows.CheckpointFailed, got.CheckpointStatus, out.Output)
			require.Contains(t, got.Error.Message, tt.want)
			require.Equal(t, p.base, p.git("rev-parse", "HEAD"), "nothing committed")
			require.Len(t, out.Commits, 2, "neither of the two commits is made")
			for _, c := range out.Commits {
				require.Equal(t, workflows.NotCommitted, c.Status)
				require.Equal(t, "the workflow is "+string(out.Status)+", not completed: nothing is committed", c.Reason)
			}
		})
	}
}

// testEscalates is test writing task 1's tests and asking for a light
// review, check's review (NEEDS WORK) and test's fix.
const testEscalates = `
[[rule]]
name = "test writes the failing test and escalates it"
match = '\AWrite the failing tests of task'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "tests/test_mul.sh" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "tests/test_mul.sh", content = "[ \"$(sh -c '. ./calc.sh; mul 3 4')\" = 13 ] || { echo \"mul 3 4: want 13\"; exit 1; }\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"RED; escalated","produced":["tests/test_mul.sh"],"payload":{"result":"TESTS_READY","escalate_to_check":true,"notes":"the expectation of mul 3 4 may be wrong"}}'
  [[rule.reply]]
  text = "RED, escalated"

[[rule]]
name = "check reviews the escalated tests"
match = '\ALight review of the tests of task'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"NEEDS WORK","payload":{"verdict":"NEEDS WORK","route":"test_design","findings":["assert through calc.sh as the other tests do"]}}'
  [[rule.reply]]
  text = "NEEDS WORK"

[[rule]]
name = "test fixes the tests"
match = '\AFix the tests of task'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "tests/test_mul.sh" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "tests/test_mul.sh", content = ". ./calc.sh\n[ \"$(mul 3 4)\" = 13 ] || { echo \"mul 3 4: got $(mul 3 4), want 13\"; exit 1; }\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"fixed; still RED","produced":["tests/test_mul.sh"]}'
  [[rule.reply]]
  text = "fixed"
`

// Row 6, NOT_TESTABLE: missing testability seam, through the binary: the
// split gives three tasks; test reports task 2 NOT_TESTABLE (missing_seam:
// its clock reads the date itself), which Pixir does not hold to the RED
// check (the verify entry's when: no tests were written); make adds the
// seam, held to task 2's files; test writes task 2's tests again in loop
// testability's second iteration, RED as Pixir verifies; make implements
// every task, and the run reaches its commit.
func TestThePracticeAddsAMissingSeamThenTestsAndCommits(t *testing.T) {
	p := newPracticeRepo(t)
	out, stderr := p.run(p.scenario(threeTasksOneMissingASeam))
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)

	runs := practiceRuns(out)
	for _, r := range []string{
		"write-tests#1.1[2]:checkpoint_ready", "seam#1.1[2]:checkpoint_ready", "write-tests#1.2[2]:checkpoint_ready",
		"seam#1.2[2]:skipped", "seam#1.1[1]:skipped", "seam#1.1[3]:skipped",
		"make#1.1.2[1]:checkpoint_ready", "make#1.1.2[2]:checkpoint_ready", "make#1.1.2[3]:checkpoint_ready",
		"commit:checkpoint_ready", "summary:checkpoint_ready",
	} {
		require.Contains(t, runs, r, out.Output)
	}
	require.Contains(t, practiceLoops(out), "testability#1: satisfied at iteration 2 of 2")

	// The NOT_TESTABLE report skipped the RED check, and the evidence says
	// why, with the value seen; the tests written after the seam are RED.
	require.Equal(t, `not verified by Pixir: `+"`sh tests/run.sh` (expect fail)"+` (the new tests fail before the implementation (RED)) does not apply to this report: its when /result = "TESTS_READY" does not hold (/result is "NOT_TESTABLE")`,
		runOf(t, out, "write-tests#1.1[2]").Checkpoint.Verification[0])
	require.Contains(t, runOf(t, out, "write-tests#1.2[2]").Checkpoint.Verification[0], "verified by Pixir: `sh tests/run.sh` exited 1, as required (fail)")

	// The seam is make's, held to task 2's file, told what is missing; the
	// second test run sees the seam.
	require.Equal(t, "make", runOf(t, out, "seam#1.1[2]").Agent)
	require.Contains(t, p.prompt(out, "seam#1.1[2]"), "You may write only: clock.sh.")
	require.Contains(t, p.prompt(out, "seam#1.1[2]"), "clock.sh reads the date itself")
	require.Contains(t, p.prompt(out, "write-tests#1.2[2]"), "seam#1.1[2] (checkpoint_ready")
	// Row 9: the future-seam note (repeated by the last report, as its
	// task says) reaches pm with the tech-debt instruction.
	require.Contains(t, p.prompt(out, "commit"), `"future_seam":"a fake clock for every script"`)
	require.Contains(t, p.prompt(out, "commit"), "one (label tech-debt) for every future_seam note")

	p.requireTwoCommits(out, []string{"calc.sh", "clock.sh", "neg.sh", "tests/test_clock.sh", "tests/test_mul.sh", "tests/test_neg.sh"},
		"TODO/GAL-1-1.md", "TODO/GAL-1.md", "TODO/README.md")
	p.requireRebuilt(out, sessionOf(t, p.e.ws, stderr))
}

// threeTasksOneMissingASeam splits the demo's issue into three tasks (mul
// as in the demo, a clock stamp, neg); the clock's tests need a seam.
const threeTasksOneMissingASeam = `
[[rule]]
name = "the split into three tasks"
match = '\ASplit the reviewed plan'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = ".workflow/run-GAL-1/task-1.md" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = ".workflow/run-GAL-1/task-1.md", content = "# Task 1: mul\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = ".workflow/run-GAL-1/task-2.md" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = ".workflow/run-GAL-1/task-2.md", content = "# Task 2: stamp prints t=<now>\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = ".workflow/run-GAL-1/task-3.md" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = ".workflow/run-GAL-1/task-3.md", content = "# Task 3: neg\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"three tasks","payload":{"tasks":[{"id":"1","files":["calc.sh"],"tests":["tests/test_mul.sh"]},{"id":"2","files":["clock.sh"],"tests":["tests/test_clock.sh"]},{"id":"3","files":["neg.sh"],"tests":["tests/test_neg.sh"]}]}}'
  [[rule.reply]]
  text = "split into three tasks"

[[rule]]
name = "test writes task 2's tests once the seam is there"
match = '(?s)\AWrite the failing tests of task 2 .*This is iteration 2 of at most 2 of loop "testability"'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "tests/test_clock.sh" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "tests/test_clock.sh", content = ". ./clock.sh\nNOW=5\n[ \"$(stamp)\" = t=5 ] || { echo \"stamp: want t=5\"; exit 1; }\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"RED: stamp is missing","produced":["tests/test_clock.sh"],"payload":{"result":"TESTS_READY","future_seam":"a fake clock for every script"}}'
  [[rule.reply]]
  text = "RED"

[[rule]]
name = "test finds task 2 missing a seam"
match = '\AWrite the failing tests of task 2 '
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"NOT_TESTABLE: missing seam","payload":{"result":"NOT_TESTABLE","kind":"missing_seam","notes":"clock.sh reads the date itself: let NOW override it","future_seam":"a fake clock for every script"}}'
  [[rule.reply]]
  text = "NOT_TESTABLE"

[[rule]]
name = "test writes task 3's tests"
match = '\AWrite the failing tests of task 3 '
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "tests/test_neg.sh" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "tests/test_neg.sh", content = ". ./neg.sh\n[ \"$(neg 2)\" = -2 ] || { echo \"neg 2: want -2\"; exit 1; }\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"RED: neg.sh is missing","produced":["tests/test_neg.sh"],"payload":{"result":"TESTS_READY"}}'
  [[rule.reply]]
  text = "RED"

[[rule]]
name = "make adds task 2's seam"
match = '\AThe test step could not test task 2 '
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "clock.sh" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "clock.sh", content = "now() { echo \"${NOW:-$(date +%s)}\"; }\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"now() reads NOW when set","produced":["clock.sh"]}'
  [[rule.reply]]
  text = "seam added"

[[rule]]
name = "make implements task 2"
match = '\AImplement task 2 '
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "clock.sh" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "clock.sh", content = "now() { echo \"${NOW:-$(date +%s)}\"; }\nstamp() { echo \"t=$(now)\"; }\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"stamp implemented","produced":["clock.sh"]}'
  [[rule.reply]]
  text = "GREEN"

[[rule]]
name = "make implements task 3"
match = '\AImplement task 3 '
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "neg.sh" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "neg.sh", content = "neg() { echo $((0 - $1)); }\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"neg implemented","produced":["neg.sh"]}'
  [[rule.reply]]
  text = "GREEN"
`

// Row 8's convergence through the binary: the final review finds the same
// production-code problem twice, so its loop stops early (converged, at
// iteration 2 of 3) and the run goes on as the spec says — document the
// blockers; proceed: the outcome, its table and pixir inspect say
// converged and carry the blocker as a known limitation, pm is told and
// files it as a follow-up (row 9), and the commit holds only the run's
// files.
func TestThePracticeConvergesAndProceedsWithItsBlocker(t *testing.T) {
	p := newPracticeRepo(t)
	const finding = "mul accepts letters"
	// The loop converges on both reviewers' findings: each blocker says
	// whose it is.
	const blocker = "final-check: " + finding
	out, stderr := p.run(p.scenario(finalMakeAgain(2) + finalCheckSays(0, finding) + pmFilesFollowUp))
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)

	runs := practiceRuns(out)
	require.Contains(t, runs, "make#1.2.1[1]:checkpoint_ready", "the production-code finding sent make back")
	require.Contains(t, runs, "final-check#1.2:checkpoint_ready")
	require.NotContains(t, strings.Join(runs, " "), "final-check#1.3", "converged: no third review")
	const state = "final-review#1: converged at iteration 2 of 3 → proceeding with 1 blocker"
	require.Contains(t, practiceLoops(out), state)
	require.Contains(t, out.Output, "- "+state+": "+blocker)
	require.Equal(t, []string{"loop final-review#1 (converged): " + blocker}, out.SeamObligations)
	require.Equal(t, []string{"loop final-review#1 ended converged after 2 of 3 iterations; its dependents proceeded with 1 unresolved blocker: " + blocker}, out.KnownLimitations)
	// The second make got the finding; pm got the blocker to file.
	require.Contains(t, p.prompt(out, "make#1.2.1[1]"), finding)
	require.Contains(t, p.prompt(out, "commit"), "Loop final-review#1 ended "+strings.TrimPrefix(state, "final-review#1: ")+" without meeting its until")
	require.Contains(t, p.prompt(out, "commit"), "- "+blocker)
	require.Contains(t, p.read("TODO/GAL-1-1.md"), "parent: GAL-1\nlabel: followup")

	inspect, errOut, code := p.e.pixir("inspect", sessionOf(t, p.e.ws, stderr))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, inspect, "loop "+state+"; blockers: final-check: mul accepts lett…", "inspect cuts the line")

	p.requireTwoCommits(out, demoWork, "TODO/GAL-1-1.md", "TODO/GAL-1.md", "TODO/README.md")
	p.requireRebuilt(out, sessionOf(t, p.e.ws, stderr))
}

// Row 8's exhaustion through the binary: three final reviews, each with a
// new finding, exhaust the loop; the run proceeds with the last blockers.
func TestThePracticeExhaustsItsFinalReviewAndProceeds(t *testing.T) {
	p := newPracticeRepo(t)
	out, stderr := p.run(p.scenario(finalMakeAgain(2) + finalMakeAgain(3) +
		finalCheckSays(1, "the first finding") + finalCheckSays(2, "the second finding") + finalCheckSays(3, "the third finding") + pmFilesFollowUp))
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)

	const state = "final-review#1: exhausted after 3 of 3 iterations → proceeding with 1 blocker"
	require.Contains(t, practiceLoops(out), state)
	require.Contains(t, practiceRuns(out), "final-check#1.3:checkpoint_ready")
	require.Equal(t, []string{"loop final-review#1 (exhausted): final-check: the third finding"}, out.SeamObligations)
	require.Contains(t, p.prompt(out, "commit"), "- final-check: the third finding")
	inspect, errOut, code := p.e.pixir("inspect", sessionOf(t, p.e.ws, stderr))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, inspect, "loop "+state+"; blockers: final-check: the third fi…", "inspect cuts the line")
	p.requireTwoCommits(out, demoWork, "TODO/GAL-1-1.md", "TODO/GAL-1.md", "TODO/README.md")
}

// A practice run killed (kill -9) in its final review and resumed with
// pixir resume --resume-from: the resumed run reuses every phase that
// ended, and its commit holds what the whole workflow changed — the
// implementation and tests of the reused phases too — not only what the
// resumed part changed.
func TestAResumedPracticeCommitsTheWholeRunsWork(t *testing.T) {
	p := newPracticeRepo(t)
	hung := p.scenario(`
[[rule]]
name = "check never finishes the final review"
match = '\AFinal review of the change for issue \S+ against'
  [[rule.reply]]
  hang = true
`)
	cmd := p.command(hung)
	var stdout bytes.Buffer
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	require.NoError(t, cmd.Start())
	stderr.waitFor("step final-check#1.1 running")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	var exit *exec.ExitError
	require.True(t, errors.As(cmd.Wait(), &exit))
	require.Equal(t, p.base, p.git("rev-parse", "HEAD"), "nothing committed before the end")

	// The session id is printed at the end, which never came: the Log is
	// the one session of the workspace.
	sid := onlySession(t, p.e.ws)
	events := workflowEvents(t, readLog(t, p.e.ws, sid))
	wfID := events[len(events)-1].WorkflowID

	args := append([]string{"resume", sid, "--workflow", "practice", "--resume-from", wfID}, practiceArgs(p.scenario(""))...)
	resumed := p.e.command(args...)
	resumed.Env = append(resumed.Env, gitIdentity...)
	var outBuf, errBuf strings.Builder
	resumed.Stdout, resumed.Stderr = &outBuf, &errBuf
	require.NoError(t, resumed.Run(), errBuf.String())
	out := runOutcome(t, outBuf.String())
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)
	for _, r := range []string{"issue", "plan#1.2", "write-tests#1.1[1]", "redesign#1.1.1", "make#1.1.2[1]"} {
		require.Equal(t, wfID, runOf(t, out, r).ReusedFrom, "%s ended before the kill: reused", r)
	}
	require.Empty(t, runOf(t, out, "final-check#1.1").ReusedFrom)
	require.Empty(t, runOf(t, out, "commit").ReusedFrom)

	p.requireTwoCommits(out, demoWork, "TODO/GAL-1-1.md", "TODO/GAL-1.md", "TODO/README.md")
}

// A practice run killed (kill -9) between its two commits — right after
// the work's commit, by a post-commit hook — and resumed: the resumed run
// reuses every step, finds the work's files as HEAD has them and does not
// commit them again (unchanged: committed already), then makes the
// chore(todo) commit. git log holds each commit once, with its files.
func TestAPracticeKilledBetweenItsCommitsResumesWithoutCommittingTwice(t *testing.T) {
	p := newPracticeRepo(t)
	cmd := p.command(p.scenario(""))
	var stdout bytes.Buffer
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	hook := filepath.Join(p.e.ws, ".git", "hooks", "post-commit")
	require.NoError(t, os.MkdirAll(filepath.Dir(hook), 0o755))
	// Once: the hook removes itself, then kills git's parent, pixir, which
	// waits for git to end.
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\nrm -f \"$0\"\nkill -9 \"$(cut -d' ' -f4 /proc/$PPID/stat)\"\n"), 0o755))
	require.NoError(t, cmd.Start())
	var exit *exec.ExitError
	require.True(t, errors.As(cmd.Wait(), &exit), "pixir is killed after the first commit: %s", stderr.String())
	require.Equal(t, p.base, p.git("rev-parse", "HEAD~1"), "killed after the work's commit")
	work := p.git("rev-parse", "HEAD")
	require.Equal(t, "GAL-1: implemented by the practice workflow", p.git("log", "-1", "--format=%s"))
	require.NoFileExists(t, hook)

	sid := onlySession(t, p.e.ws)
	events := workflowEvents(t, readLog(t, p.e.ws, sid))
	wfID := events[len(events)-1].WorkflowID

	resumed := p.e.command(append([]string{"resume", sid, "--workflow", "practice", "--resume-from", wfID}, practiceArgs(p.scenario(""))...)...)
	resumed.Env = append(resumed.Env, gitIdentity...)
	var outBuf, errBuf strings.Builder
	resumed.Stdout, resumed.Stderr = &outBuf, &errBuf
	require.NoError(t, resumed.Run(), errBuf.String())
	out := runOutcome(t, outBuf.String())
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)
	require.Equal(t, wfID, runOf(t, out, "commit").ReusedFrom, "every step ended before the kill: reused")

	require.Equal(t, work, p.git("rev-parse", "HEAD~1"), "the work's commit, once")
	require.Equal(t, p.base, p.git("rev-parse", "HEAD~2"))
	todo := []string{"TODO/GAL-1-1.md", "TODO/GAL-1.md", "TODO/README.md"}
	require.Equal(t, []workflows.CommitReport{
		{Status: workflows.NotCommitted, Message: "GAL-1: implemented by the practice workflow", Files: demoWork, Unchanged: true,
			Reason: "the run's files are as the repository's HEAD has them (committed already): nothing to commit"},
		{Status: workflows.Committed, Commit: p.git("rev-parse", "HEAD"), Message: "chore(todo): GAL-1 done, follow-ups filed", Files: todo},
	}, out.Commits)
	require.Equal(t, "chore(todo): GAL-1 done, follow-ups filed\n\n"+strings.Join(todo, "\n")+"\nGAL-1: implemented by the practice workflow\n\n"+strings.Join(demoWork, "\n"),
		p.git("log", "--name-only", "--format=%s", p.base+"..HEAD"))
	require.Equal(t, "?? NOTES.txt", p.git("status", "--porcelain"))
}

// A practice whose chore commit a hook refuses did its work but not all
// the commits it asks for: partial (exit 2), never success, saying why;
// once the hook is gone, a resume reuses every step and makes only the
// commit that was missed.
func TestAPracticeWhoseCommitIsRefusedIsPartialAndResumes(t *testing.T) {
	p := newPracticeRepo(t)
	hook := filepath.Join(p.e.ws, ".git", "hooks", "commit-msg")
	require.NoError(t, os.MkdirAll(filepath.Dir(hook), 0o755))
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\nif grep -q '^chore(todo)' \"$1\"; then echo 'no chore commits today' >&2; exit 1; fi\n"), 0o755))
	// As a person runs it (no --json): what happened and what to do next.
	args := practiceArgs(p.scenario(""))
	require.Equal(t, "--json", args[len(args)-1])
	cmd := p.e.command(append([]string{"run", "--workflow", "practice"}, args[:len(args)-1]...)...)
	cmd.Env = append(cmd.Env, gitIdentity...)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	var exit *exec.ExitError
	require.True(t, errors.As(cmd.Run(), &exit), "a missed commit is not success: %s", output.String())
	require.Equal(t, exitPartial, exit.ExitCode())
	shown := output.String()
	require.Contains(t, shown, "PARTIAL")
	require.Contains(t, shown, "no chore commits today", "why the commit was not made")
	require.Equal(t, p.base, p.git("rev-parse", "HEAD~1"), "the work's commit is made")
	require.Equal(t, "GAL-1: implemented by the practice workflow", p.git("log", "-1", "--format=%s"))
	work := p.git("rev-parse", "HEAD")

	sid := onlySession(t, p.e.ws)
	events := workflowEvents(t, readLog(t, p.e.ws, sid))
	finished := events[len(events)-1]
	require.Equal(t, workflows.EventWorkflowFinished, finished.Kind)
	require.Equal(t, workflows.StatusPartial, finished.Status, "the Log says partial too")
	var chore *workflows.CommitReport
	for _, ev := range events {
		if ev.Kind == workflows.EventCommitted && strings.HasPrefix(ev.Commit.Message, "chore(todo)") {
			chore = ev.Commit
		}
	}
	require.NotNil(t, chore)
	require.Equal(t, workflows.NotCommitted, chore.Status)
	require.True(t, chore.Missed)
	require.Contains(t, shown, "every step is done, but a commit was not made")
	require.Contains(t, shown, "--resume-from "+finished.WorkflowID, "the command that makes only the missing commits")
	require.NotContains(t, shown, "decide about :", "no step-less decision")

	require.NoError(t, os.Remove(hook))
	resumed := p.e.command(append([]string{"resume", sid, "--workflow", "practice", "--resume-from", finished.WorkflowID}, practiceArgs(p.scenario(""))...)...)
	resumed.Env = append(resumed.Env, gitIdentity...)
	var outBuf, errBuf strings.Builder
	resumed.Stdout, resumed.Stderr = &outBuf, &errBuf
	require.NoError(t, resumed.Run(), errBuf.String())
	again := runOutcome(t, outBuf.String())
	require.Equal(t, workflows.StatusCompleted, again.Status, again.Output)
	require.Equal(t, finished.WorkflowID, runOf(t, again, "commit").ReusedFrom, "every step is reused")
	require.True(t, again.Commits[0].Unchanged, "the work's commit is not made twice")
	require.Equal(t, workflows.Committed, again.Commits[1].Status)
	require.Equal(t, work, p.git("rev-parse", "HEAD~1"))
	require.Equal(t, "chore(todo): GAL-1 done, follow-ups filed", p.git("log", "-1", "--format=%s"))
}

// A workflow's list of commits that cannot be sound is refused before
// anything runs, with what is wrong and where: no session, no commit.
func TestAListOfCommitsIsRefusedBeforeAnythingRuns(t *testing.T) {
	for _, tt := range []struct {
		name, commits, want string
	}{
		{"an overlap", `[{message: work, paths: ["src/**"]}, {message: docs, paths: ["src/*.md", "TODO/**"]}]`,
			`commit.commits[1].paths "src/*.md" and commit.commits[0].paths "src/**" can match the same file`},
		{"an empty list", `[]`, "commit.commits is empty; give at least one {message, paths}, or use commit.message"},
		{"a bad path pattern", `[{message: work}, {message: todo, paths: ["../TODO/**"]}]`,
			`commit.commits[1].paths[0] pattern "../TODO/**" is invalid: it climbs out of the workspace`},
		{"a file no commit takes", `[{message: work, paths: ["src/**"]}, {message: todo, paths: ["TODO/**"]}]`,
			`steps[0] "a": write_set "docs/**" meets no commit's paths: a file it writes would be in no commit`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPracticeRepo(t)
			p.e.file("two.yaml", "commit:\n  commits: "+tt.commits+"\nsteps:\n  - id: a\n    task: do a\n    write_set: [\"src/**\", \"docs/**\"]\n")
			_, stderr, code := p.e.pixir("run", "--workflow", "two.yaml")
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, tt.want)
			_, stderr, code = p.e.pixir("sessions")
			require.Equal(t, exitOK, code)
			require.Contains(t, stderr, "no sessions in")
			require.Equal(t, p.base, p.git("rev-parse", "HEAD"))
		})
	}
}

// Row 8, a strictly cosmetic finding, through the binary: the final
// review finds a typo in calc.sh and routes it cosmetic; the orchestrator
// (the default agent) fixes exactly that in the task's files, held to
// them (its attempt at a file outside is refused), and the reviewers look
// again and accept: the fix is in the commit.
func TestThePracticeFixesACosmeticFindingAndReviewsAgain(t *testing.T) {
	p := newPracticeRepo(t)
	out, _ := p.run(p.scenario(finalMakeAgain(2) + cosmeticFinding + orchestratorFixesTypo))
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)

	runs := practiceRuns(out)
	for _, r := range []string{"final-check#1.1:checkpoint_ready", "cosmetic-fix#1.1[1]:checkpoint_ready", "final-check#1.2:checkpoint_ready", "final-simplify#1.2:checkpoint_ready"} {
		require.Contains(t, runs, r, out.Output)
	}
	require.NotContains(t, strings.Join(runs, " "), "test-diagnose#1.1:checkpoint_ready")
	require.Contains(t, practiceLoops(out), "final-review#1: satisfied at iteration 2 of 3")
	fix := runOf(t, out, "cosmetic-fix#1.1[1]")
	require.Equal(t, "default", fix.Agent)
	require.Contains(t, p.prompt(out, "cosmetic-fix#1.1[1]"), "You may write only: calc.sh, tests/test_mul.sh.")
	require.Contains(t, p.prompt(out, "cosmetic-fix#1.1[1]"), "calc.sh: arithmetc")
	require.Contains(t, p.prompt(out, "final-check#1.2"), "cosmetic-fix#1.1[1] (checkpoint_ready")
	require.Contains(t, p.read("calc.sh"), "# calc.sh: shell arithmetic,")
	require.NoFileExists(t, filepath.Join(p.e.ws, "STYLE.md"), "the fix is held to the task's files")

	p.requireTwoCommits(out, demoWork, "TODO/GAL-1-1.md", "TODO/GAL-1.md", "TODO/README.md")
}

// cosmeticFinding is check's first final review: a typo, routed cosmetic
// (the implementation writes "arithmetc").
const cosmeticFinding = `
[[rule]]
name = "make writes calc.sh with a typo"
match = '(?s)\AImplement task.*This is iteration 2 of at most 2 of loop "escalation"'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "calc.sh" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "calc.sh", content = "# calc.sh: shell arithmetc, sourced by its users and tests.\nadd() { echo $(($1 + $2)); }\nmul() { echo $(($1 * $2)); }\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"mul implemented; GREEN","produced":["calc.sh"]}'
  [[rule.reply]]
  text = "GREEN"

[[rule]]
name = "check, final review: a cosmetic finding"
match = '(?s)\AFinal review of the change for issue \S+ against.*This is iteration 1 of at most 3 of loop "final-review"'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"NEEDS WORK: a typo","payload":{"verdict":"NEEDS WORK","route":"cosmetic","findings":["calc.sh: arithmetc is misspelt in the header comment"]}}'
  [[rule.reply]]
  text = "NEEDS WORK"
`

// orchestratorFixesTypo is the orchestrator's cosmetic fix: a write
// outside its task's files first (refused), then the typo alone.
const orchestratorFixesTypo = `
[[rule]]
name = "the orchestrator fixes the typo"
match = '\AThe final review of issue \S+ routed a strictly cosmetic finding'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "STYLE.md" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "STYLE.md", content = "spelling matters\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "edit"
  arguments = { path = "calc.sh", old_text = "shell arithmetc,", new_text = "shell arithmetic," }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"calc.sh: the typo fixed","produced":["calc.sh"]}'
  [[rule.reply]]
  text = "fixed"
`

// Scenario parts: rules put before the demo's script, so they answer
// first (the first rule that matches wins).

// finalMakeAgain is make sent back by the final review at iteration n:
// the implementation is already right; it reports GREEN again.
func finalMakeAgain(n int) string {
	return `
[[rule]]
name = "make, sent back by the final review"
match = '(?s)\AImplement task.*This is iteration ` + strconv.Itoa(n) + ` of at most 3 of loop "final-review"'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "sh tests/run.sh" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"calc.sh unchanged: GREEN","verification":["sh tests/run.sh: ok"]}'
  [[rule.reply]]
  text = "GREEN"
`
}

// finalCheckSays is check's final review at iteration n (0: every one):
// NEEDS WORK with a production-code finding.
func finalCheckSays(n int, finding string) string {
	match := `\AFinal review of the change for issue \S+ against`
	if n > 0 {
		match = `(?s)` + match + `.*This is iteration ` + strconv.Itoa(n) + ` of at most 3 of loop "final-review"`
	}
	return `
[[rule]]
name = "check, final review: NEEDS WORK"
match = '` + match + `'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"NEEDS WORK","payload":{"verdict":"NEEDS WORK","route":"production_code","findings":["` + finding + `"]}}'
  [[rule.reply]]
  text = "NEEDS WORK"
`
}

// pmFilesFollowUp is pm finishing the issue with an unresolved blocker:
// Done, and the blocker filed as a follow-up sub-issue.
const pmFilesFollowUp = `
[[rule]]
name = "pm finishes the issue and files the blocker"
match = '\AFinish issue'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "edit"
  arguments = { path = "TODO/GAL-1.md", old_text = "status: In Progress", new_text = "status: Done" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "TODO/GAL-1-1.md" }
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "TODO/GAL-1-1.md", content = "title: the final review's unresolved blocker\nstatus: Todo\nparent: GAL-1\nlabel: followup\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "edit"
  arguments = { path = "TODO/README.md", old_text = "multiplies — In Progress", new_text = "multiplies — Done\n  - [GAL-1-1](GAL-1-1.md) the final review's unresolved blocker — Todo (followup)" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"GAL-1 Done; GAL-1-1 filed (followup)","produced":["TODO/GAL-1.md","TODO/GAL-1-1.md","TODO/README.md"]}'
  [[rule.reply]]
  text = "GAL-1 is Done."
`

// practiceRepo is a temporary git repository holding the demo project,
// committed, with a file of the user's beside it that no run may commit.
type practiceRepo struct {
	t    *testing.T
	e    *runEnv
	base string // the commit the run starts from
}

func newPracticeRepo(t *testing.T) *practiceRepo {
	t.Helper()
	p := &practiceRepo{t: t, e: newRunEnv(t)}
	require.NoError(t, os.CopyFS(p.e.ws, os.DirFS(filepath.Join(practiceDemo, "repo"))))
	p.git("init", "-q", "-b", "main")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "the demo project")
	p.base = p.git("rev-parse", "HEAD")
	p.git("switch", "-q", "-c", "GAL-1") // the work's own branch, off its base (main)
	// Something of the user's, not the run's: it stays out of the commit.
	require.NoError(t, os.WriteFile(filepath.Join(p.e.ws, "NOTES.txt"), []byte("mine\n"), 0o644))
	return p
}

// practiceDemo is the offline practice of examples/.
var practiceDemo = filepath.Join("..", "..", "examples", "practice-demo")

func (p *practiceRepo) git(args ...string) string {
	p.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = p.e.ws
	cmd.Env = append(os.Environ(), gitIdentity...)
	out, err := cmd.CombinedOutput()
	require.NoError(p.t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// scenario is the demo's script with rules of its own before it, in a file
// outside the repository.
func (p *practiceRepo) scenario(rules string) string {
	p.t.Helper()
	demo, err := os.ReadFile(filepath.Join(practiceDemo, "script.toml"))
	require.NoError(p.t, err)
	f, err := os.CreateTemp(filepath.Dir(p.e.ws), "scenario-*.toml")
	require.NoError(p.t, err)
	_, err = f.WriteString(rules + "\n" + string(demo))
	require.NoError(p.t, err)
	require.NoError(p.t, f.Close())
	return f.Name()
}

// practiceArgs are the practice's arguments for the demo, on script.
func practiceArgs(script string) []string {
	return []string{"--set", "issue=GAL-1", "--set", "test_command=sh tests/run.sh", "--script", script, "--json"}
}

// command is pixir run of the practice on script.
func (p *practiceRepo) command(script string) *exec.Cmd {
	cmd := p.e.command(append([]string{"run", "--workflow", "practice"}, practiceArgs(script)...)...)
	cmd.Env = append(cmd.Env, gitIdentity...)
	return cmd
}

// run runs the practice on script to its end: its outcome and stderr.
func (p *practiceRepo) run(script string) (workflows.Outcome, string) {
	p.t.Helper()
	cmd := p.command(script)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(p.t, cmd.Run(), stderr.String())
	return runOutcome(p.t, stdout.String()), stderr.String()
}

func (p *practiceRepo) read(name string) string {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.e.ws, name))
	require.NoError(p.t, err)
	return string(b)
}

// prompt is the task a run's child was given.
func (p *practiceRepo) prompt(out workflows.Outcome, run string) string {
	p.t.Helper()
	return firstUserText(p.t, childLog(p.t, p.e.ws, runOf(p.t, out, run)))
}

// requireTwoCommits checks that the run made the practice's two commits
// on top of the base (row 9, ADR-11), each with exactly its files: the
// work, then TODO/ (the file and the follow-ups) in a
// chore(todo) commit; that it left the user's file alone; and that the
// committed work passes its tests.
func (p *practiceRepo) requireTwoCommits(out workflows.Outcome, work []string, todo ...string) {
	p.t.Helper()
	require.Equal(p.t, p.base, p.git("rev-parse", "HEAD~2"))
	require.Nil(p.t, out.Commit)
	require.Equal(p.t, []workflows.CommitReport{
		{Status: workflows.Committed, Commit: p.git("rev-parse", "HEAD~1"), Message: "GAL-1: implemented by the practice workflow", Files: work},
		{Status: workflows.Committed, Commit: p.git("rev-parse", "HEAD"), Message: "chore(todo): GAL-1 done, follow-ups filed", Files: todo},
	}, out.Commits)
	require.Equal(p.t, "chore(todo): GAL-1 done, follow-ups filed\n\n"+strings.Join(todo, "\n")+"\nGAL-1: implemented by the practice workflow\n\n"+strings.Join(work, "\n"),
		p.git("log", "--name-only", "--format=%s", p.base+"..HEAD"))
	require.Contains(p.t, out.Output, "Committed "+p.git("rev-parse", "--short=12", "HEAD~1")+fmt.Sprintf(" (%d files): GAL-1: implemented by the practice workflow\n", len(work))+
		"Committed "+p.git("rev-parse", "--short=12", "HEAD")+fmt.Sprintf(" (%d files): chore(todo): GAL-1 done, follow-ups filed", len(todo)))
	require.Equal(p.t, "?? NOTES.txt", p.git("status", "--porcelain"), "the user's file, untouched; .pixir/ and .workflow/ ignored")
	passed := []string{"ok   tests/test_add.sh"} // the demo's own test, then the run's
	for _, f := range work {
		if strings.HasPrefix(f, "tests/test_") {
			passed = append(passed, "ok   "+f)
		}
	}
	slices.Sort(passed)
	require.Equal(p.t, strings.Join(passed, "\n"), runTests(p.t, p.e.ws), "the committed work passes its tests")
}

// demoWork is the demo's work: calc.sh and its test.
var demoWork = []string{"calc.sh", "tests/test_mul.sh"}

// requireRebuilt checks that the Log rebuilds the outcome, commit included.
func (p *practiceRepo) requireRebuilt(out workflows.Outcome, sid string) {
	p.t.Helper()
	rebuilt := workflows.Rebuild(workflowEvents(p.t, readLog(p.t, p.e.ws, sid)))
	require.Len(p.t, rebuilt, 1)
	want, _ := json.Marshal(out)
	got, _ := json.Marshal(rebuilt[0])
	require.JSONEq(p.t, string(want), string(got))
}

// practiceRuns are the outcome's runs with their checkpoint statuses.
func practiceRuns(out workflows.Outcome) []string {
	var runs []string
	for _, s := range out.Steps {
		runs = append(runs, s.Run+":"+string(s.CheckpointStatus))
	}
	return runs
}

// practiceLoops are the outcome's loop runs and their states.
func practiceLoops(out workflows.Outcome) []string {
	var loops []string
	for _, l := range out.Loops {
		loops = append(loops, l.Run+": "+workflows.LoopStateText(&l))
	}
	return loops
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
