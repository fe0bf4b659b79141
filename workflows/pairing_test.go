package workflows

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Paired fan-outs (the same for_each, tested by the condition) are gated
// per instance: an instance starts once its own item's partners are
// decided, not once every instance of the fan-outs it pairs with is. All
// on the simulated clock: "while it still runs" is a start before an end.

const threeTasks = `{"status":"checkpoint_ready","summary":"three tasks","payload":{"tasks":[` +
	`{"id":"t1","files":["src/a.go"],"tests":["src/a_test.go"]},` +
	`{"id":"t2","files":["src/b.go"],"tests":["src/b_test.go"]},` +
	`{"id":"t3","files":["src/c.go"],"tests":["src/c_test.go"]}]}}`

// perTask is the practice's per-task chain (builtin/practice.yaml:
// write-tests → test-review → test-fix → make, paired by task) with each
// step reading only its own task's files, so that only the gating orders
// the instances (the practice's steps read the whole shared workspace,
// and its writers take turns by the conflict rules).
const perTask = `{"max_concurrency":6,"steps":[
	{"id":"split","task":"Split.","output_schema":{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"files":{"type":"array","items":{"type":"string"}},"tests":{"type":"array","items":{"type":"string"}}}}}}}},
	{"id":"write-tests","task":"Tests of ${item.id}.","depends_on":["split"],"for_each":{"step":"split","path":"/tasks"},
	 "write_set":["${item.tests}"],"read_set":["${item.tests}"],
	 "output_schema":{"type":"object","properties":{"escalate_to_check":{"type":"boolean"}}}},
	{"id":"test-review","task":"Review the tests of ${item.id}.","depends_on":["write-tests"],"for_each":{"step":"split","path":"/tasks"},
	 "when":{"step":"write-tests","path":"/escalate_to_check","equals":true},"read_set":["${item.tests}"],
	 "output_schema":{"type":"object","properties":{"verdict":{"enum":["ACCEPTABLE","NEEDS WORK"]}}}},
	{"id":"test-fix","task":"Fix the tests of ${item.id}.","depends_on":["test-review"],"for_each":{"step":"split","path":"/tasks"},
	 "when":{"step":"test-review","path":"/verdict","equals":"NEEDS WORK"},"write_set":["${item.tests}"],"read_set":["${item.tests}"]},
	{"id":"make","task":"Make ${item.id}.","depends_on":["split","write-tests","test-review","test-fix"],"for_each":{"step":"split","path":"/tasks"},
	 "when":[{"step":"write-tests"},{"step":"test-review","status":["checkpoint_ready","skipped"]},{"step":"test-fix","status":["checkpoint_ready","skipped"]}],
	 "write_set":["${item.files}"],"read_set":["${item.files}","${item.tests}"]},
	{"id":"final","task":"Review it all.","depends_on":["make"],"read_set":["src/**"]}]}`

// perTaskPlan plays the chain: three tasks, every run 1 unit unless dur
// says otherwise, reports by label.
func perTaskPlan(reports map[string]string, dur map[string]int64) func(string) childPlan {
	return func(label string) childPlan {
		p := childPlan{dur: 1, report: `{"status":"checkpoint_ready","summary":"` + label + ` done"}`}
		id := label
		if i := strings.IndexAny(id, "#["); i >= 0 {
			id = id[:i]
		}
		switch id {
		case "split":
			p.report = threeTasks
		case "write-tests":
			p.report = `{"status":"checkpoint_ready","summary":"red","payload":{"escalate_to_check":false}}`
		case "test-review":
			p.report = `{"status":"checkpoint_ready","summary":"sound","payload":{"verdict":"ACCEPTABLE"}}`
		}
		if r, ok := reports[label]; ok {
			p.report = r
		}
		if d, ok := dur[label]; ok {
			p.dur = d
		}
		return p
	}
}

func TestAPairedInstanceStartsWhenItsOwnPartnersAreDecided(t *testing.T) {
	// before: each pair is a run that starts while the other still runs;
	// after: a run that starts only once the other has ended.
	type pair struct{ run, other string }
	const escalate = `{"status":"checkpoint_ready","summary":"escalated","payload":{"escalate_to_check":true}}`
	cases := []struct {
		name    string
		reports map[string]string
		dur     map[string]int64
		before  []pair
		after   []pair
		held    []string
		status  Status
	}{{
		name:   "task 1's make runs while task 3's tests are still running",
		dur:    map[string]int64{"write-tests[3]": 20},
		before: []pair{{"make[1]", "write-tests[3]"}, {"make[2]", "write-tests[3]"}},
		after:  []pair{{"make[3]", "write-tests[3]"}, {"final", "make[3]"}},
		status: StatusCompleted,
	}, {
		name: "task 3's escalation (review, then fix) holds only task 3's make",
		reports: map[string]string{"write-tests[3]": escalate,
			"test-review[3]": `{"status":"checkpoint_ready","summary":"no","payload":{"verdict":"NEEDS WORK"}}`},
		dur:    map[string]int64{"test-review[3]": 10, "test-fix[3]": 10},
		before: []pair{{"make[1]", "test-review[3]"}, {"make[2]", "test-review[3]"}},
		after:  []pair{{"test-fix[3]", "test-review[3]"}, {"make[3]", "test-fix[3]"}, {"final", "make[3]"}},
		status: StatusCompleted,
	}, {
		name:    "task 2's tests fail late: tasks 1 and 3 are made meanwhile, task 2's make is held",
		reports: map[string]string{"write-tests[2]": `{"status":"needs_orchestrator","summary":"BLOCKED"}`},
		dur:     map[string]int64{"write-tests[2]": 20},
		before:  []pair{{"make[1]", "write-tests[2]"}, {"make[3]", "write-tests[2]"}},
		held:    []string{"make[2]", "final"},
		status:  StatusPartial,
	}, {
		name:   "a slow instance holds no other item's chain at any link",
		dur:    map[string]int64{"write-tests[1]": 30, "test-review[2]": 0},
		before: []pair{{"make[2]", "write-tests[1]"}, {"make[3]", "write-tests[1]"}},
		after:  []pair{{"make[1]", "write-tests[1]"}},
		status: StatusCompleted,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, sim := runSim(t, perTask, perTaskPlan(c.reports, c.dur))
			require.Equal(t, c.status, out.Status, out.Output)
			starts := sim.startTimes()
			for _, p := range c.before {
				require.Contains(t, starts, p.run)
				require.Contains(t, sim.ends, p.other)
				require.Less(t, starts[p.run], sim.ends[p.other], "%s starts while %s still runs", p.run, p.other)
			}
			for _, p := range c.after {
				require.Contains(t, starts, p.run)
				require.GreaterOrEqual(t, starts[p.run], sim.ends[p.other], "%s waits for %s", p.run, p.other)
			}
			for _, run := range c.held {
				require.Equal(t, CheckpointHeld, runOf(out, run).CheckpointStatus, run)
				require.NotContains(t, starts, run)
			}
			checkDecidedBeforeStarted(t, sim.events)
			rebuiltEquals(t, sim, out)
		})
	}
}

// In the practice itself, task 1's make is gated (its condition decided
// on task 1's tests, review and fix) while task 3's escalated tests are
// still under review; it starts when the conflict rules let it (the
// practice's writers share the workspace and read all of it, so they
// take turns). The tests themselves end together: loop testability
// decides on every task's tests before any review or make.
func TestThePracticeGatesEachTasksMakeOnItsOwnTests(t *testing.T) {
	reports := practiceReports{"split": threeTasks, "write-tests#1.1[3]": escalated}
	sim := newSim(func(label string) childPlan {
		p := reports.plan(label)
		if label == "test-review#1[3]" {
			p.dur = 20
		}
		return p
	})
	out := simRun(t, context.Background(), sim, mustParse(t, practiceSpec(t)), RunOptions{WorkflowID: "wf-p", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusCompleted, out.Status, out.Output)
	at := func(kind, run string) int {
		for k, ev := range sim.events {
			if ev.Kind == kind && ev.Run == run {
				return k
			}
		}
		t.Fatalf("no %s of %s", kind, run)
		return -1
	}
	review3 := at(EventCheckpointDecided, "test-review#1[3]")
	for _, task := range []string{"1", "2"} {
		require.Less(t, at(EventConditionDecided, "make#1.1.1["+task+"]"), review3, "task %s's make is gated on its own tests", task)
	}
	require.Greater(t, at(EventConditionDecided, "make#1.1.1[3]"), review3)
	checkDecidedBeforeStarted(t, sim.events)
	rebuiltEquals(t, sim, out)
}

// Pairing changes only when a paired instance starts: a dependency that
// is not paired (the condition does not test it) is still a join, and a
// fan-out over the same items whose source is not decided yet holds every
// instance.
func TestUnpairedFanOutsStillJoin(t *testing.T) {
	const tasks = `{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"string"}}}}`
	spec := func(when string) string {
		return `{"steps":[
		{"id":"split","task":"Split.","output_schema":` + tasks + `},
		{"id":"test","task":"Test ${item}.","depends_on":["split"],"for_each":{"step":"split","path":"/tasks"}},
		{"id":"make","task":"Make ${item}.","depends_on":["split","test"]` + when + `,"for_each":{"step":"split","path":"/tasks"}}]}`
	}
	plan := func(label string) childPlan {
		switch label {
		case "split":
			return childPlan{dur: 1, report: ready(`{"tasks":["a","b"]}`)}
		case "test[2]":
			return childPlan{dur: 10}
		}
		return childPlan{dur: 1}
	}
	t.Run("paired: make[1] starts when test[1] ends", func(t *testing.T) {
		out, sim := runSim(t, spec(`,"when":{"step":"test"}`), plan)
		require.Equal(t, StatusCompleted, out.Status, out.Output)
		require.Equal(t, [][]string{{"split"}, {"test[1]", "test[2]"}, {"make[1]"}, {"make[2]"}}, sim.byStart())
		require.Less(t, sim.startTimes()["make[1]"], sim.ends["test[2]"])
		rebuiltEquals(t, sim, out)
	})
	t.Run("unpaired: make waits for every test", func(t *testing.T) {
		out, sim := runSim(t, spec(""), plan)
		require.Equal(t, StatusCompleted, out.Status, out.Output)
		require.Equal(t, [][]string{{"split"}, {"test[1]", "test[2]"}, {"make[1]", "make[2]"}}, sim.byStart())
		require.Equal(t, sim.ends["test[2]"], sim.startTimes()["make[1]"])
	})
	t.Run("paired, a failed partner holds only its own item", func(t *testing.T) {
		failing := func(label string) childPlan {
			if label == "test[2]" {
				return childPlan{dur: 10, report: `{"status":"failed","summary":"no"}`}
			}
			return plan(label)
		}
		out, sim := runSim(t, spec(`,"when":{"step":"test"}`), failing)
		require.Less(t, sim.startTimes()["make[1]"], sim.ends["test[2]"])
		require.Equal(t, CheckpointHeld, runOf(out, "make[2]").CheckpointStatus)
		require.Equal(t, []string{"test[2]"}, runOf(out, "make[2]").BlockedBy)
		rebuiltEquals(t, sim, out)
	})
	t.Run("paired, a partner fan-out held as a whole holds every instance", func(t *testing.T) {
		// test also needs gate, which fails: test is never instantiated,
		// so there is no instance to pair with and make is held whole.
		gated := strings.Replace(spec(`,"when":{"step":"test"}`), `"depends_on":["split"],"for_each"`, `"depends_on":["split","gate"],"for_each"`, 1)
		gated = strings.Replace(gated, `{"id":"test"`, `{"id":"gate","task":"Gate."},{"id":"test"`, 1)
		out, sim := runSim(t, gated, func(label string) childPlan {
			if label == "gate" {
				return childPlan{dur: 5, report: `{"status":"failed","summary":"no"}`}
			}
			return plan(label)
		})
		require.Equal(t, []string{"split", "gate"}, sim.order)
		require.Equal(t, CheckpointHeld, runOf(out, "test").CheckpointStatus)
		require.Equal(t, CheckpointHeld, runOf(out, "make").CheckpointStatus)
		require.Equal(t, []string{"test"}, runOf(out, "make").BlockedBy)
		rebuiltEquals(t, sim, out)
	})
}

// A loop whose body pairs with a fan-out outside it starts once that
// fan-out's instances are made; its until may test that fan-out as a
// whole, so the iteration is decided only once every instance is, never
// on a value not decided yet.
func TestALoopsUntilWaitsForThePairedFanOutItTests(t *testing.T) {
	spec := `{"steps":[
		{"id":"split","task":"Split.","output_schema":{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"string"}}}}},
		{"id":"bad","task":"Fail."},
		{"id":"test","task":"Test ${item}.","depends_on":["split"],"for_each":{"step":"split","path":"/tasks"}},
		{"id":"make","task":"Make ${item}.","depends_on":["split","test","bad"],"when":{"step":"test"},"for_each":{"step":"split","path":"/tasks"}},
		{"id":"note","task":"Note.","depends_on":["split"]}],
		"loops":[{"id":"l","steps":["make","note"],"max_iterations":2,"until":{"step":"test"}}]}`
	out, sim := runSim(t, spec, func(label string) childPlan {
		switch label {
		case "split":
			return childPlan{dur: 1, report: ready(`{"tasks":["a","b"]}`)}
		case "bad":
			return childPlan{dur: 1, report: `{"status":"failed","summary":"no"}`}
		case "test[2]":
			return childPlan{dur: 10}
		}
		return childPlan{dur: 1}
	})
	// note#1 ended long before test[2]: the iteration waited for it.
	require.Less(t, sim.ends["note#1"], sim.ends["test[2]"])
	testDecided, finished := -1, -1
	for k, ev := range sim.events {
		switch {
		case ev.Kind == EventCheckpointDecided && ev.Run == "test[2]":
			testDecided = k
		case ev.Kind == EventIterationFinished && ev.Loop == "l":
			finished = k
			require.Len(t, ev.Seen, 1)
			require.Equal(t, CheckpointReady, ev.Seen[0].Status, "the until saw every instance decided")
		}
	}
	require.Greater(t, finished, testDecided)
	require.Equal(t, LoopSatisfied, out.Loops[0].State)
	require.Equal(t, 1, out.Loops[0].Iterations)
	require.Equal(t, CheckpointHeld, runOf(out, "make#1").CheckpointStatus)
	rebuiltEquals(t, sim, out)
}

// Killed while task 3's tests ran, after tasks 1 and 2 were made: the
// resumed run reuses every ready instance and runs only task 3's chain.
func TestResumeReusesThePairedInstancesThatWereReady(t *testing.T) {
	plays := perTaskPlan(nil, map[string]int64{"write-tests[3]": 20})
	_, first := runSim(t, perTask, plays)
	cut := undecided(first.events, "write-tests[3]")
	sim := newSim(plays)
	sim.events = cut
	w := mustParse(t, perTask)
	w.ResumeFrom = "wf-test"
	out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-2", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusCompleted, out.Status, out.Output)
	require.Equal(t, []string{"write-tests[3]", "make[3]", "final"}, sim.order)
	for _, run := range []string{"split", "write-tests[1]", "write-tests[2]", "make[1]", "make[2]"} {
		require.Equal(t, "wf-test", runOf(out, run).ReusedFrom, run)
	}
	rebuiltEquals(t, sim, out)
}

// A step after a paired fan-out, whose condition tests the fan-out it
// pairs with as a whole, is decided once every instance of it is, even
// when the step between them was decided early (held at once).
func TestAConditionWaitsForThePairedFanOutItTests(t *testing.T) {
	spec := `{"steps":[
		{"id":"split","task":"Split.","output_schema":{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"string"}}}}},
		{"id":"bad","task":"Fail."},
		{"id":"test","task":"Test ${item}.","depends_on":["split"],"for_each":{"step":"split","path":"/tasks"}},
		{"id":"make","task":"Make ${item}.","depends_on":["split","test","bad"],"when":{"step":"test"},"for_each":{"step":"split","path":"/tasks"}},
		{"id":"after","task":"After.","depends_on":["make"],"when":[{"step":"make","status":["held"]},{"step":"test"}]}]}`
	out, sim := runSim(t, spec, func(label string) childPlan {
		switch label {
		case "split":
			return childPlan{dur: 1, report: ready(`{"tasks":["a","b"]}`)}
		case "bad":
			return childPlan{dur: 1, report: `{"status":"failed","summary":"no"}`}
		case "test[2]":
			return childPlan{dur: 10}
		}
		return childPlan{dur: 1}
	})
	require.Equal(t, CheckpointHeld, runOf(out, "make").CheckpointStatus)
	require.Contains(t, sim.order, "after", "the condition saw test ready: %v", runOf(out, "after").Summary)
	require.GreaterOrEqual(t, sim.startTimes()["after"], sim.ends["test[2]"])
	checkDecidedBeforeStarted(t, sim.events)
	rebuiltEquals(t, sim, out)
}

// Inside a loop, an instance pairs with the same iteration's instances:
// iteration 2's make[1] is gated on iteration 2's write-tests[1] alone.
func TestPairedInstancesPairWithinTheirIteration(t *testing.T) {
	looped := strings.TrimSuffix(strings.TrimSpace(perTask), "}") +
		`,"loops":[{"id":"l","steps":["write-tests","test-review","test-fix","make"],"max_iterations":2,"until":{"step":"make"}}]}`
	out, sim := runSim(t, looped, perTaskPlan(map[string]string{"make#1[2]": `{"status":"partial","summary":"half"}`},
		map[string]int64{"write-tests#2[3]": 20}))
	require.Equal(t, StatusCompleted, out.Status, out.Output)
	require.Equal(t, 2, out.Loops[0].Iterations)
	for _, ev := range sim.events {
		if ev.Kind == EventConditionDecided && strings.HasPrefix(ev.Run, "make#2[") {
			item := strings.TrimPrefix(ev.Run, "make#2")
			require.Equal(t, "write-tests#2"+item, ev.Seen[0].Run, "%s tests its own iteration's instance", ev.Run)
		}
	}
	require.Less(t, sim.startTimes()["make#2[1]"], sim.ends["write-tests#2[3]"])
	require.GreaterOrEqual(t, sim.startTimes()["make#2[1]"], sim.ends["make#1[3]"], "the next iteration starts after the last")
	checkDecidedBeforeStarted(t, sim.events)
	rebuiltEquals(t, sim, out)
}
