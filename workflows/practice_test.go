package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The routing matrix of the practice (multi-agent-workflow-design.txt,
// §4), row by row, over the built-in template practice
// (builtin/practice.yaml) for GAL-1 on the simulated runtime: given the
// roles' verdicts and findings, which step runs follow, how
// many iterations each loop takes, and the workflow's final status.
//
// Runs are named by their loops' iterations, outermost first: revisit
// holds every phase between the issue and the commit, so plan#1.2 is the
// plan's second iteration of plan-review in the first revisit, and
// make#1.1.2[1] is task 1's make in the second escalation cycle of the
// first final review of the first revisit.
//
// Rows that are a role's own work, not a route between roles, are not
// decisions of the workflow and have no case: 2 "status Todo → flip to In
// Progress" (issue's pm does it), 3 and 5 "plan / tasks drafted → write the
// file" (the plan and split writers), 6 "stub-first tests pass with no
// todo!() panic → reject" (write-tests' verify: Pixir runs the tests and
// refuses a ready report unless they fail; checkpoint_test.go and the
// practice through the binary, cmd/pixir/practice_e2e_test.go), and 9 "pre-existing bug / advisory / all commits done" (commit's pm
// files them from the checkpoints it receives; the NOT_TESTABLE
// future-seam note has a case: it reaches pm's prompt).
//
// Row 6's escalation is per task: test-review and test-fix fan out over
// the split's tasks like write-tests and make, so their conditions are
// decided per instance against the same task's instance (paired
// instances): one task's escalation reviews and fixes that task's tests
// while the other task goes straight on. Row 6's NOT_TESTABLE is per task
// too (test-signoff and seam pair with write-tests), and its retries are
// loop testability's iterations: write-tests#1.2[1] is task 1's tests
// written again after its seam (every task's test step runs again in an
// iteration: a loop repeats its steps whole).

// practiceReports are the roles' reports by run label: the first key that
// is a prefix of the label (longest first) wins; runs not named report a
// ready checkpoint with the role's usual payload.
type practiceReports map[string]string

func verdict(v, route string, findings ...string) string {
	f, _ := json.Marshal(append([]string{}, findings...))
	return fmt.Sprintf(`{"status":"checkpoint_ready","summary":"%s","payload":{"verdict":"%s","route":"%s","findings":%s}}`, v, v, route, f)
}

const (
	twoTasks = `{"status":"checkpoint_ready","summary":"two tasks","payload":{"tasks":[` +
		`{"id":"t1","files":["src/a.go"],"tests":["src/a_test.go"]},{"id":"t2","files":["src/b.go"],"tests":["src/b_test.go"]}]}}`
	testsReady        = `{"status":"checkpoint_ready","summary":"TESTS_READY","payload":{"result":"TESTS_READY"}}`
	escalated         = `{"status":"checkpoint_ready","summary":"TESTS_READY, escalated","payload":{"result":"TESTS_READY","escalate_to_check":true,"notes":"the fixture may hide the race"}}`
	notReady          = `{"status":"partial","summary":"could not reach GREEN"}`
	notTestable       = `{"status":"checkpoint_ready","summary":"NOT_TESTABLE","payload":{"result":"NOT_TESTABLE","kind":"general","notes":"it only changes a log line","future_seam":"inject the logger so the line can be asserted"}}`
	notTestableNoKind = `{"status":"checkpoint_ready","summary":"NOT_TESTABLE","payload":{"result":"NOT_TESTABLE","notes":"no way to observe it"}}`
	missingSeam       = `{"status":"checkpoint_ready","summary":"NOT_TESTABLE: missing seam","payload":{"result":"NOT_TESTABLE","kind":"missing_seam","notes":"the clock is a global: pass it in"}}`
	signoffNo         = `{"status":"needs_orchestrator","summary":"not signed off: a test through the log writer is possible"}`
	testDesign        = `{"status":"checkpoint_ready","summary":"the test is at fault","payload":{"test_design_error":true}}`
	notTestFault      = `{"status":"checkpoint_ready","summary":"the code is at fault","payload":{"test_design_error":false,"notes":"check the loop bound"}}`
)

func (p practiceReports) plan(label string) childPlan {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	for _, k := range keys {
		if strings.HasPrefix(label, k) {
			return childPlan{dur: 1, report: p[k]}
		}
	}
	id, _, _ := strings.Cut(label, "#")
	report := `{"status":"checkpoint_ready","summary":"done"}`
	switch id {
	case "issue":
		report = `{"status":"checkpoint_ready","summary":"found","payload":{"found":true,"status":"In Progress"}}`
	case "check-plan", "simplify-plan", "check-split", "final-check", "final-simplify", "test-review":
		report = verdict("ACCEPTABLE", "none")
	case "split":
		report = twoTasks
	case "diagnose", "test-diagnose":
		report = testDesign
	case "write-tests":
		report = testsReady
	case "test-signoff":
		report = `{"status":"checkpoint_ready","summary":"ACCEPTABLE: no tests","payload":{"verdict":"ACCEPTABLE"}}`
	}
	return childPlan{dur: 1, report: report}
}

// practiceRun runs the practice with these reports.
func practiceRun(t *testing.T, reports practiceReports) (Outcome, *simRuntime) {
	t.Helper()
	sim := newSim(reports.plan)
	out := simRun(t, context.Background(), sim, mustParse(t, practiceSpec(t)), RunOptions{WorkflowID: "wf-p", Now: fixedClock(), waiting: sim.waiting})
	return out, sim
}

// loopStates are the loop runs as "run: state iterations".
func loopStates(out Outcome) []string {
	var s []string
	for _, l := range out.Loops {
		s = append(s, fmt.Sprintf("%s: %s %d", l.Run, l.State, l.Iterations))
	}
	return s
}

// matrixRow is a row of the routing matrix: given the reports, which runs
// follow, the loops' ends and the final status.
type matrixRow struct {
	row     string
	reports practiceReports
	ran     []string // runs that must have started
	notRan  []string // runs that must not have
	skipped []string // final runs skipped
	loops   []string // loop runs (all of them, in order)
	status  Status
	check   func(t *testing.T, out Outcome, sim *simRuntime)
}

func TestPracticeRoutingMatrix(t *testing.T) {
	happy := []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1",
		"final-review#1: satisfied 1", "escalation#1.1: satisfied 1"}
	cases := []matrixRow{{
		row:     "2: @pm does not find the issue → stop with error (row 1: TestPracticeSanityChecksStopBeforeAnyAgent)",
		reports: practiceReports{"issue": `{"status":"failed","summary":"TODO/GAL-1.md does not exist"}`},
		ran:     []string{"issue"}, notRan: []string{"plan#1.1"},
		loops:  []string{"revisit: held 1", "plan-review#1: held 1", "split-review#1: held 1", "testability#1: held 1", "final-review#1: held 1", "escalation#1.1: held 1"},
		status: StatusFailed,
	}, {
		row:     "2: @pm reports the issue not found, yet ready → refused (found must be true); the run stops",
		reports: practiceReports{"issue": `{"status":"checkpoint_ready","summary":"no such issue","payload":{"found":false}}`},
		ran:     []string{"issue"}, notRan: []string{"plan#1.1"},
		loops:  []string{"revisit: held 1", "plan-review#1: held 1", "split-review#1: held 1", "testability#1: held 1", "final-review#1: held 1", "escalation#1.1: held 1"},
		status: StatusFailed,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Contains(t, runOf(out, "issue").Error.Message, "/found")
		},
	}, {
		row: "4: both reviewers ACCEPTABLE → proceed to phase 5", reports: practiceReports{},
		ran:    []string{"plan#1.1", "check-plan#1.1", "simplify-plan#1.1", "split#1.1", "write-tests#1.1[1]", "write-tests#1.1[2]", "make#1.1.1[1]", "make#1.1.1[2]", "final-check#1.1", "commit"},
		notRan: []string{"plan#1.2", "diagnose#1.1.1", "test-review#1"},
		loops:  happy, status: StatusCompleted,
		skipped: []string{"test-signoff#1.1[1]", "test-signoff#1.1[2]", "seam#1.1[1]", "seam#1.1[2]", "test-review#1[1]", "test-review#1[2]", "test-fix#1[1]", "test-fix#1[2]", "diagnose#1.1.1", "redesign#1.1.1", "test-diagnose#1.1", "test-redo#1.1", "cosmetic-fix#1.1"},
	}, {
		row:     "4: either reviewer NEEDS WORK → plan.md edited in place, reviewed again",
		reports: practiceReports{"simplify-plan#1.1": verdict("NEEDS WORK", "none", "drop the cache layer")},
		ran:     []string{"plan#1.2", "check-plan#1.2", "simplify-plan#1.2", "split#1.1"},
		loops:   []string{"revisit: satisfied 1", "plan-review#1: satisfied 2", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: satisfied 1"},
		status:  StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			// The reviser receives the reviewers' findings of iteration 1.
			require.Contains(t, sim.prompts["plan#1.2"], "The previous iteration (1) of loop \"plan-review\" ended with these checkpoints")
			require.Contains(t, sim.prompts["plan#1.2"], `"drop the cache layer"`)
			require.True(t, runOf(out, "plan#1.1").Superseded)
			require.False(t, runOf(out, "plan#1.2").Superseded)
		},
	}, {
		row:     "4: @check BLOCK → plan.md edited for the finding, reviewed again",
		reports: practiceReports{"check-plan#1.1": verdict("BLOCK", "plan_level", "the plan ignores the migration")},
		ran:     []string{"plan#1.2", "check-plan#1.2"},
		loops:   []string{"revisit: satisfied 1", "plan-review#1: satisfied 2", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: satisfied 1"},
		status:  StatusCompleted,
	}, {
		row: "4: the same finding twice → convergence, the loop stops early (and proceeds)",
		reports: practiceReports{
			"check-plan#1.1": verdict("NEEDS WORK", "none", "name the error kinds", "test the overflow"),
			"check-plan#1.2": verdict("NEEDS WORK", "none", "test the overflow", "name the error kinds"), // same set, another order
		},
		ran: []string{"plan#1.2", "split#1.1"}, notRan: []string{"plan#1.3"},
		loops:  []string{"revisit: satisfied 1", "plan-review#1: converged 2", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: satisfied 1"},
		status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			// Each blocker says whose it is: the loop converges on both
			// reviewers' findings.
			require.Equal(t, []string{"check-plan: test the overflow", "check-plan: name the error kinds"}, out.Loops[1].Blockers)
			require.Contains(t, out.SeamObligations, "loop plan-review#1 (converged): check-plan: name the error kinds")
			require.Contains(t, out.KnownLimitations[0], "loop plan-review#1 ended converged after 2 of 3 iterations")
			// The split is told what stayed unresolved.
			require.Contains(t, sim.prompts["split#1.1"], "Loop plan-review#1 ended converged at iteration 2 of 3 → proceeding with 2 blockers")
		},
	}, {
		row: "4: one reviewer repeats its finding, the other changes → not converged; the loop goes on",
		reports: practiceReports{
			"check-plan#1.1":    verdict("NEEDS WORK", "none", "name the error kinds"),
			"check-plan#1.2":    verdict("NEEDS WORK", "none", "name the error kinds"),
			"simplify-plan#1.1": verdict("NEEDS WORK", "none", "drop the cache layer"),
			"simplify-plan#1.2": verdict("NEEDS WORK", "none", "inline the parser"),
			"check-plan#1.3":    verdict("ACCEPTABLE", "none"),
		},
		ran:    []string{"plan#1.3", "check-plan#1.3", "simplify-plan#1.3", "split#1.1"},
		loops:  []string{"revisit: satisfied 1", "plan-review#1: satisfied 3", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: satisfied 1"},
		status: StatusCompleted,
	}, {
		row: "4: both reviewers repeat their findings → converged (simplify's findings are blockers too, named by their step)",
		reports: practiceReports{
			"check-plan#1.1":    verdict("NEEDS WORK", "none", "name the error kinds"),
			"check-plan#1.2":    verdict("NEEDS WORK", "none", "name the error kinds"),
			"simplify-plan#1.1": verdict("NEEDS WORK", "none", "drop the cache layer"),
			"simplify-plan#1.2": verdict("NEEDS WORK", "none", "drop the cache layer"),
		},
		ran: []string{"plan#1.2", "split#1.1"}, notRan: []string{"plan#1.3"},
		loops:  []string{"revisit: satisfied 1", "plan-review#1: converged 2", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: satisfied 1"},
		status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Equal(t, []string{"check-plan: name the error kinds", "simplify-plan: drop the cache layer"}, out.Loops[1].Blockers)
		},
	}, {
		row: "4: unresolved after 3 cycles → blockers documented, proceed",
		reports: practiceReports{
			"check-plan#1.1": verdict("NEEDS WORK", "none", "a"),
			"check-plan#1.2": verdict("NEEDS WORK", "none", "b"),
			"check-plan#1.3": verdict("NEEDS WORK", "none", "c"),
		},
		ran:    []string{"plan#1.3", "split#1.1", "commit"},
		loops:  []string{"revisit: satisfied 1", "plan-review#1: exhausted 3", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: satisfied 1"},
		status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Equal(t, []string{"check-plan: c"}, out.Loops[1].Blockers)
			require.Contains(t, out.Output, "- plan-review#1: exhausted after 3 of 3 iterations → proceeding with 1 blocker: check-plan: c")
			// Phase 9: pm is told the blocker to file; the summary documents it.
			for _, run := range []string{"commit", "summary"} {
				require.Contains(t, sim.prompts[run], "Loop plan-review#1 ended exhausted after 3 of 3 iterations → proceeding with 1 blocker without meeting its until", run)
				require.Contains(t, sim.prompts[run], "\n- check-plan: c\n", run)
			}
		},
	}, {
		row:     "5.5: @check NEEDS WORK on the split → task specs edited, reviewed again (max 2)",
		reports: practiceReports{"check-split#1.1": verdict("NEEDS WORK", "none", "task 2 overlaps task 1")},
		ran:     []string{"split#1.2", "check-split#1.2", "write-tests#1.1[1]"},
		loops:   []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 2", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: satisfied 1"},
		status:  StatusCompleted,
	}, {
		row:     "5.5: @check BLOCK (the plan does not decompose) → back to the plan review",
		reports: practiceReports{"check-split#1.1": verdict("BLOCK", "plan_level", "the plan does not decompose")},
		ran:     []string{"split#1.1", "plan#2.1", "check-plan#2.1", "split#2.1", "write-tests#2.1[1]", "commit"},
		notRan:  []string{"split#1.2", "write-tests#1.1[1]", "make#1.1.1[1]"},
		loops: []string{"revisit: satisfied 2", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: skipped 1", "final-review#1: skipped 1", "escalation#1.1: skipped 1",
			"plan-review#2: satisfied 1", "split-review#2: satisfied 1", "testability#2: satisfied 1", "final-review#2: satisfied 1", "escalation#2.1: satisfied 1"},
		status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Contains(t, sim.prompts["plan#2.1"], "The previous iteration (1) of loop \"revisit\"")
			require.Contains(t, sim.prompts["plan#2.1"], "the plan does not decompose")
			require.Equal(t, CheckpointSkipped, runOf(out, "write-tests#1.1").CheckpointStatus)
		},
	}, {
		row:     "6: TESTS_READY, no escalation → phase 7",
		reports: practiceReports{},
		ran:     []string{"write-tests#1.1[1]", "make#1.1.1[1]"}, notRan: []string{"test-review#1[1]", "test-review#1[2]"},
		loops: happy, status: StatusCompleted,
	}, {
		row:     "6: TESTS_READY + escalate_to_check: true → @check light review → @test fixes → forward (per task)",
		reports: practiceReports{"write-tests#1.1[2]": escalated, "test-review#1[2]": verdict("NEEDS WORK", "test_design", "assert the error, not the log")},
		ran:     []string{"test-review#1[2]", "test-fix#1[2]", "make#1.1.1[1]", "make#1.1.1[2]", "commit"},
		notRan:  []string{"test-review#1[1]", "test-fix#1[1]"},
		loops:   happy, status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			// Task 2's review was decided on task 2's tests, and the
			// decision is evidence with the value it saw.
			seen := runOf(out, "test-review#1[2]").Conditions
			require.Len(t, seen, 1)
			require.Equal(t, "write-tests#1.1[2]", seen[0].Run)
			require.JSONEq(t, "true", string(seen[0].Value))
			require.Contains(t, runOf(out, "test-review#1[1]").Summary, "skipped: its condition was false")
			require.Contains(t, sim.prompts["test-review#1[2]"], "the fixture may hide the race")
			// Each make receives its own task's tests, review and fix.
			require.Contains(t, sim.prompts["make#1.1.1[2]"], "test-fix#1[2] (checkpoint_ready")
			require.Contains(t, sim.prompts["make#1.1.1[2]"], "assert the error, not the log")
			require.NotContains(t, sim.prompts["make#1.1.1[1]"], "test-fix#1[2]")
			require.Equal(t, CheckpointSkipped, runOf(out, "test-fix#1[1]").CheckpointStatus)
		},
	}, {
		row:     "6: TESTS_READY + escalate_to_check: true, the light review ACCEPTABLE → no fix, forward",
		reports: practiceReports{"write-tests#1.1[1]": escalated},
		ran:     []string{"test-review#1[1]", "make#1.1.1[1]", "commit"},
		notRan:  []string{"test-fix#1[1]", "test-review#1[2]"},
		loops:   happy, status: StatusCompleted,
	}, {
		row: "6: BLOCKED → needs the orchestrator; that task does not go on, the plan is revisited",
		reports: practiceReports{
			"write-tests#1.1[1]": `{"status":"needs_orchestrator","summary":"BLOCKED: the task spec contradicts the plan"}`,
			"write-tests#2.1[1]": `{"status":"needs_orchestrator","summary":"BLOCKED: the task spec contradicts the plan"}`,
		},
		ran:    []string{"make#1.1.1[2]", "plan#2.1"},
		notRan: []string{"test-review#1[1]", "make#1.1.1[1]", "make#2.1.1[1]", "final-check#1.1", "make#1.1.2[2]"},
		loops: []string{"revisit: exhausted 2", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: satisfied 1",
			"plan-review#2: satisfied 1", "split-review#2: satisfied 1", "testability#2: satisfied 1", "final-review#2: satisfied 1", "escalation#2.1: satisfied 1"},
		status: StatusPartial,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Contains(t, out.SeamObligations, "write-tests#2.1[1]: BLOCKED: the task spec contradicts the plan")
			require.Equal(t, CheckpointHeld, runOf(out, "make#2.1.1[1]").CheckpointStatus)
			require.Equal(t, []string{"write-tests#2.1[1]"}, runOf(out, "make#2.1.1[1]").BlockedBy)
			require.Equal(t, CheckpointHeld, runOf(out, "commit").CheckpointStatus)
		},
	}, {
		row:     "6: NOT_TESTABLE general → @check sign-off; the task goes to @make without tests",
		reports: practiceReports{"write-tests#1.1[2]": notTestable},
		ran:     []string{"test-signoff#1.1[2]", "make#1.1.1[1]", "make#1.1.1[2]", "commit"},
		notRan:  []string{"test-signoff#1.1[1]", "seam#1.1[2]", "write-tests#1.2[2]", "test-review#1[2]"},
		loops:   happy, status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Equal(t, "check", runOf(out, "test-signoff#1.1[2]").Agent)
			require.Contains(t, sim.prompts["test-signoff#1.1[2]"], "it only changes a log line")
			seen := runOf(out, "test-signoff#1.1[2]").Conditions
			require.Len(t, seen, 2)
			require.Equal(t, "write-tests#1.1[2]", seen[1].Run)
			require.JSONEq(t, `"general"`, string(seen[1].Value))
			// Task 2's make goes on with the sign-off, task 1's without.
			require.Contains(t, sim.prompts["make#1.1.1[2]"], "test-signoff#1.1[2] (checkpoint_ready")
			require.NotContains(t, sim.prompts["make#1.1.1[1]"], "test-signoff#1.1[2]")
		},
	}, {
		// Found in review: with no kind, neither the sign-off nor the
		// seam ran and make went on with no tests.
		row:     "6: NOT_TESTABLE with no kind → @check sign-off as for general, never make without it",
		reports: practiceReports{"write-tests#1.1[2]": notTestableNoKind},
		ran:     []string{"test-signoff#1.1[2]", "make#1.1.1[1]", "make#1.1.1[2]", "commit"},
		notRan:  []string{"test-signoff#1.1[1]", "seam#1.1[2]", "write-tests#1.2[2]"},
		loops:   happy, status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Contains(t, sim.prompts["make#1.1.1[2]"], "test-signoff#1.1[2] (checkpoint_ready")
		},
	}, {
		row:     "6: NOT_TESTABLE general, the sign-off refused → back to @test (loop testability), then TESTS_READY",
		reports: practiceReports{"write-tests#1.1[2]": notTestable, "test-signoff#1.1[2]": signoffNo},
		ran:     []string{"test-signoff#1.1[2]", "write-tests#1.2[1]", "write-tests#1.2[2]", "make#1.1.1[2]", "commit"},
		notRan:  []string{"test-signoff#1.2[2]", "make#1.1.1[3]"},
		loops:   []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 2", "final-review#1: satisfied 1", "escalation#1.1: satisfied 1"},
		status:  StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Contains(t, sim.prompts["write-tests#1.2[2]"], "a test through the log writer is possible")
		},
	}, {
		row:     "6: NOT_TESTABLE missing_seam → @make adds the seam, @test runs again, seam then TESTS_READY",
		reports: practiceReports{"write-tests#1.1[1]": missingSeam},
		ran:     []string{"seam#1.1[1]", "write-tests#1.2[1]", "make#1.1.1[1]", "make#1.1.1[2]", "commit"},
		notRan:  []string{"seam#1.1[2]", "seam#1.2[1]", "test-signoff#1.1[1]"},
		loops:   []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 2", "final-review#1: satisfied 1", "escalation#1.1: satisfied 1"},
		status:  StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			// make adds the seam, held to task 1's files, told what is missing.
			require.Equal(t, "make", runOf(out, "seam#1.1[1]").Agent)
			require.Contains(t, sim.prompts["seam#1.1[1]"], "the clock is a global: pass it in")
			require.Contains(t, sim.prompts["seam#1.1[1]"], "src/a.go")
			require.NotContains(t, sim.prompts["seam#1.1[1]"], "src/b.go")
			// test writes task 1's tests again, seeing the seam.
			require.Contains(t, sim.prompts["write-tests#1.2[1]"], "seam#1.1[1] (checkpoint_ready")
			require.Equal(t, CheckpointSkipped, runOf(out, "seam#1.1[2]").CheckpointStatus)
		},
	}, {
		row: "6: NOT_TESTABLE missing_seam, the seam twice → loop testability exhausted; the task's make held, the plan revisited, then held",
		reports: practiceReports{"write-tests#1.1[1]": missingSeam, "write-tests#1.2[1]": missingSeam,
			"write-tests#2.1[1]": missingSeam, "write-tests#2.2[1]": missingSeam},
		ran:    []string{"seam#1.1[1]", "seam#1.2[1]", "plan#2.1", "seam#2.2[1]"},
		notRan: []string{"make#1.1.1[1]", "make#2.1.1[1]", "final-check#2.1", "commit"},
		loops: []string{"revisit: exhausted 2", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: exhausted 2", "final-review#1: held 1", "escalation#1.1: held 1",
			"plan-review#2: satisfied 1", "split-review#2: satisfied 1", "testability#2: exhausted 2", "final-review#2: held 1", "escalation#2.1: held 1"},
		status: StatusPartial,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Equal(t, CheckpointHeld, runOf(out, "make#2.1.1").CheckpointStatus)
			require.Equal(t, []string{"loop testability#2"}, runOf(out, "make#2.1.1").BlockedBy)
			require.Equal(t, CheckpointHeld, runOf(out, "commit").CheckpointStatus)
			require.Contains(t, out.Output, "testability#2: exhausted after 2 of 2 iterations")
		},
	}, {
		row:     "7: Implementation Complete → phase 8",
		reports: practiceReports{},
		ran:     []string{"make#1.1.1[2]", "final-check#1.1", "final-simplify#1.1"}, notRan: []string{"diagnose#1.1.1"},
		loops: happy, status: StatusCompleted,
	}, {
		row:     "7: Incomplete + escalate test_design (or an entry-validation flag) → @check diagnoses, @test redesigns, a fresh @make",
		reports: practiceReports{"make#1.1.1[1]": notReady},
		ran:     []string{"diagnose#1.1.1", "redesign#1.1.1", "make#1.1.2[1]", "make#1.1.2[2]", "final-check#1.1"},
		loops:   []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: satisfied 2"},
		status:  StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			// The fresh make sees the diagnosis and the redesign.
			require.Contains(t, sim.prompts["make#1.1.2[1]"], "redesign#1.1.1 (checkpoint_ready")
			require.True(t, runOf(out, "make#1.1.1[1]").Superseded, "the stuck run is history: it counts for nothing in the verdict")
		},
	}, {
		row:     "7: Incomplete, no flag → re-dispatched once with @check's notes",
		reports: practiceReports{"make#1.1.1[2]": notReady, "diagnose#1.1.1": notTestFault},
		ran:     []string{"diagnose#1.1.1", "make#1.1.2[2]"}, notRan: []string{"redesign#1.1.1"},
		loops:  []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: satisfied 2"},
		status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Contains(t, sim.prompts["make#1.1.2[2]"], "check the loop bound")
		},
	}, {
		row:     "7: the escalation loop exhausted after 2 cycles → back to the plan (phase 3)",
		reports: practiceReports{"make#1.1.": notReady},
		ran:     []string{"make#1.1.2[1]", "plan#2.1", "make#2.1.1[1]", "commit"},
		notRan:  []string{"final-check#1.1", "make#1.1.3[1]", "make#1.2.1[1]"},
		loops: []string{"revisit: satisfied 2", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: exhausted 2",
			"plan-review#2: satisfied 1", "split-review#2: satisfied 1", "testability#2: satisfied 1", "final-review#2: satisfied 1", "escalation#2.1: satisfied 1"},
		status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Equal(t, CheckpointHeld, runOf(out, "final-check#1.1").CheckpointStatus)
			require.Equal(t, []string{"loop escalation#1.1"}, runOf(out, "final-check#1.1").BlockedBy)
		},
	}, {
		row:     "8: @check and @simplify ACCEPTABLE → phase 9",
		reports: practiceReports{},
		ran:     []string{"final-check#1.1", "final-simplify#1.1", "commit"}, notRan: []string{"test-diagnose#1.1", "make#1.2.1[1]"},
		loops: happy, status: StatusCompleted,
	}, {
		row:     "8: @check BLOCK, production-code finding → a new @make from the finding",
		reports: practiceReports{"final-check#1.1": verdict("BLOCK", "production_code", "the overflow is still there")},
		ran:     []string{"make#1.2.1[1]", "make#1.2.1[2]", "final-check#1.2", "commit"}, notRan: []string{"test-diagnose#1.1"},
		loops:  []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 2", "escalation#1.1: satisfied 1", "escalation#1.2: satisfied 1"},
		status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Contains(t, sim.prompts["make#1.2.1[1]"], "the overflow is still there")
		},
	}, {
		row:     "8: @check BLOCK, test-design finding → @check → @test → @make re-verifies",
		reports: practiceReports{"final-check#1.1": verdict("BLOCK", "test_design", "the test asserts the log line")},
		ran:     []string{"test-diagnose#1.1", "test-redo#1.1", "make#1.2.1[1]", "final-check#1.2"},
		loops:   []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 2", "escalation#1.1: satisfied 1", "escalation#1.2: satisfied 1"},
		status:  StatusCompleted,
	}, {
		row:     "8: @check BLOCK, plan-level finding → back to phase 3 with the finding",
		reports: practiceReports{"final-check#1.1": verdict("BLOCK", "plan_level", "the design needs a queue")},
		ran:     []string{"plan#2.1", "final-check#2.1", "commit"}, notRan: []string{"make#1.2.1[1]"},
		loops: []string{"revisit: satisfied 2", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 1", "escalation#1.1: satisfied 1",
			"plan-review#2: satisfied 1", "split-review#2: satisfied 1", "testability#2: satisfied 1", "final-review#2: satisfied 1", "escalation#2.1: satisfied 1"},
		status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Contains(t, sim.prompts["plan#2.1"], "the design needs a queue")
		},
	}, {
		row:     "8: @simplify advisory → recorded, not blocking",
		reports: practiceReports{"final-simplify#1.1": verdict("NEEDS WORK", "none", "inline the helper")},
		ran:     []string{"commit"}, notRan: []string{"final-check#1.2"},
		loops: happy, status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Contains(t, sim.prompts["commit"], "inline the helper")
			require.Contains(t, sim.prompts["summary"], "inline the helper", "recorded in the summary's advisory notes")
		},
	}, {
		row: "8: the same finding twice → convergence; stop the loop (and proceed with it)",
		reports: practiceReports{
			"final-check#1.1": verdict("NEEDS WORK", "production_code", "the overflow"),
			"final-check#1.2": verdict("NEEDS WORK", "production_code", "the overflow"),
		},
		ran: []string{"final-check#1.2", "commit"}, notRan: []string{"final-check#1.3"},
		loops:  []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: converged 2", "escalation#1.1: satisfied 1", "escalation#1.2: satisfied 1"},
		status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			// Phase 9 files the unresolved blocker: commit is told.
			require.Contains(t, sim.prompts["commit"], "Loop final-review#1 ended converged at iteration 2 of 3 → proceeding with 1 blocker")
			require.Contains(t, sim.prompts["commit"], "- final-check: the overflow")
		},
	}, {
		row: "8: final-check repeats its finding while final-simplify's changes → not converged, a third review",
		reports: practiceReports{
			"final-check#1.1":    verdict("NEEDS WORK", "production_code", "the overflow"),
			"final-check#1.2":    verdict("NEEDS WORK", "production_code", "the overflow"),
			"final-simplify#1.1": verdict("NEEDS WORK", "none", "inline the helper"),
			"final-simplify#1.2": verdict("NEEDS WORK", "none", "drop the option"),
			"final-check#1.3":    verdict("ACCEPTABLE", "none"),
		},
		ran:    []string{"final-check#1.3", "commit"},
		loops:  []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 3", "escalation#1.1: satisfied 1", "escalation#1.2: satisfied 1", "escalation#1.3: satisfied 1"},
		status: StatusCompleted,
	}, {
		row:     "8: strictly cosmetic finding → the orchestrator fixes it in the tasks' files; re-review ACCEPTABLE",
		reports: practiceReports{"final-check#1.1": verdict("NEEDS WORK", "cosmetic", "typo in the usage line of src/b.go")},
		ran:     []string{"cosmetic-fix#1.1[1]", "cosmetic-fix#1.1[2]", "final-check#1.2", "final-simplify#1.2", "commit"},
		notRan:  []string{"test-diagnose#1.1", "cosmetic-fix#1.2[1]", "final-check#1.3"},
		loops:   []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 2", "escalation#1.1: satisfied 1", "escalation#1.2: satisfied 1"},
		status:  StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			fix := runOf(out, "cosmetic-fix#1.1[2]")
			require.Equal(t, "default", fix.Agent, "the orchestrator's own fix")
			// Held to its task's files and tests, not the whole tree.
			require.Contains(t, sim.prompts["cosmetic-fix#1.1[2]"], "You may write only: src/b.go, src/b_test.go.")
			require.Contains(t, sim.prompts["cosmetic-fix#1.1[2]"], "typo in the usage line of src/b.go")
			require.Contains(t, sim.prompts["final-check#1.2"], "cosmetic-fix#1.1[2] (checkpoint_ready", "the reviewers see the fix")
		},
	}, {
		row:     "8: ACCEPTABLE with a cosmetic finding → fixed, and reviewed once more",
		reports: practiceReports{"final-check#1.1": verdict("ACCEPTABLE", "cosmetic", "missing newline at the end of src/a.go")},
		ran:     []string{"cosmetic-fix#1.1[1]", "final-check#1.2", "commit"},
		loops:   []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: satisfied 2", "escalation#1.1: satisfied 1", "escalation#1.2: satisfied 1"},
		status:  StatusCompleted,
	}, {
		row: "8: the same cosmetic finding twice → converged; proceed with it",
		reports: practiceReports{
			"final-check#1.1": verdict("NEEDS WORK", "cosmetic", "typo: \"the the\" in a comment"),
			"final-check#1.2": verdict("NEEDS WORK", "cosmetic", "typo: \"the the\" in a comment"),
		},
		ran:    []string{"cosmetic-fix#1.1[1]", "cosmetic-fix#1.2[1]", "final-check#1.2", "commit"},
		notRan: []string{"final-check#1.3"},
		loops:  []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: converged 2", "escalation#1.1: satisfied 1", "escalation#1.2: satisfied 1"},
		status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Equal(t, []string{"final-check: typo: \"the the\" in a comment"}, out.Loops[4].Blockers)
		},
	}, {
		row:     "8: 3 cycles exhausted → blockers documented; proceed",
		reports: practiceReports{"final-check#1.": verdict("NEEDS WORK", "production_code", "x")}, // x, then y, then z below
		ran:     []string{"final-check#1.3", "commit"},
		loops:   []string{"revisit: satisfied 1", "plan-review#1: satisfied 1", "split-review#1: satisfied 1", "testability#1: satisfied 1", "final-review#1: exhausted 3", "escalation#1.1: satisfied 1", "escalation#1.2: satisfied 1", "escalation#1.3: satisfied 1"},
		status:  StatusCompleted,
	}, {
		row:     "9: a NOT_TESTABLE future-seam note reaches @pm, to be filed as a sub-issue (label tech-debt)",
		reports: practiceReports{"write-tests#1.1[2]": notTestable},
		ran:     []string{"commit"},
		loops:   happy, status: StatusCompleted,
		check: func(t *testing.T, out Outcome, sim *simRuntime) {
			require.Contains(t, sim.prompts["commit"], "label tech-debt) for every future_seam note")
			require.Contains(t, sim.prompts["commit"], "write-tests#1.1[2] (checkpoint_ready")
			require.Contains(t, sim.prompts["commit"], "inject the logger so the line can be asserted")
		},
	}}
	// The exhaustion row needs a new finding each time, or it converges.
	exhaustion := slices.IndexFunc(cases, func(c matrixRow) bool {
		return strings.HasPrefix(c.row, "8: 3 cycles exhausted")
	})
	cases[exhaustion].reports = practiceReports{
		"final-check#1.1": verdict("NEEDS WORK", "production_code", "x"),
		"final-check#1.2": verdict("NEEDS WORK", "production_code", "y"),
		"final-check#1.3": verdict("NEEDS WORK", "production_code", "z"),
	}
	for _, c := range cases {
		t.Run(c.row, func(t *testing.T) {
			out, sim := practiceRun(t, c.reports)
			require.Equal(t, c.status, out.Status, out.Output)
			for _, r := range c.ran {
				require.Contains(t, sim.order, r, "%s must have run\n%s", r, out.Output)
			}
			for _, r := range c.notRan {
				require.NotContains(t, sim.order, r, "%s must not have run\n%s", r, out.Output)
			}
			require.Equal(t, c.loops, loopStates(out), out.Output)
			if c.skipped != nil {
				require.Equal(t, c.skipped, out.SkippedSteps)
			}
			if c.check != nil {
				c.check(t, out, sim)
			}
			// Every loop run stays within its bound, and the Log alone
			// gives the same outcome.
			for _, l := range out.Loops {
				require.LessOrEqual(t, l.Iterations, l.MaxIterations)
			}
			rebuiltEquals(t, sim, out)
		})
	}
}

// stepOf finds a run's outcome by its label.
func runOf(out Outcome, run string) StepOutcome {
	for _, s := range out.Steps {
		if s.Run == run {
			return s
		}
	}
	return StepOutcome{}
}

// Row 1: the practice's sanity checks are Pixir's, made before any agent
// runs, from the template's commit (base from its argument, the issue's
// file): a failed check stops the run failed, nothing started. Each
// check itself: runtime's TestGitCommitterPreflightNamesEachProblem and
// cmd/pixir's TestThePracticeStopsBeforeAnyAgentWhenItsSanityChecksFail.
func TestPracticeSanityChecksStopBeforeAnyAgent(t *testing.T) {
	sim := newSim(practiceReports{}.plan)
	fc := &fakeCommitter{problems: []string{"the workspace is on main, the base branch; the work needs a branch of its own (git switch -c <branch>)"}}
	p, err := Prepare(mustParse(t, practiceSpec(t)), Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
	require.NoError(t, err)
	out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-p", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, []PreflightRequest{{Base: "main", Files: []string{"TODO/GAL-1.md"}}}, fc.preflight)
	require.Equal(t, StatusFailed, out.Status, out.Output)
	require.Empty(t, sim.order, "no agent ran")
	require.Equal(t, "preflight_failed: "+fc.problems[0], out.StoppedBy)
	require.Equal(t, CheckpointHeld, runOf(out, "issue").CheckpointStatus)
	rebuiltEquals(t, sim, out)
}
