package workflows

import (
	"context"

	"testing"

	"github.com/stretchr/testify/require"
)

// TestAGreedyRuleLosesWhereAReservingOneWins shows what the non-greedy
// yardsticks measure (nongreedy_test.go) on cases small enough to follow,
// on the simulated clock: the scheduler's greedy rule against the
// reserving rule and the plan-ordered one, both told the exact durations
// here, and the exact optimum.
func TestAGreedyRuleLosesWhereAReservingOneWins(t *testing.T) {
	cases := []struct {
		name string
		// steps in a topological order; durations are the estimates too.
		spec string
		dur  map[string]int64
		// greedy is the scheduler's makespan, reserving and planned the
		// rules', optimum the shortest schedule.
		greedy, reserving, planned, optimum int64
	}{
		{
			// a unlocks two long steps at once: the greedy rule fills the
			// second slot with x while a runs (a slot is free and x is
			// runnable), so one of them waits for x; the reserving rule
			// keeps the slot for them.
			name: "two urgent steps runnable at the same end",
			spec: `{"max_concurrency":2,"steps":[
				{"id":"a","task":"t","estimate":"2ms"},{"id":"x","task":"t","estimate":"12ms"},
				{"id":"l1","task":"t","depends_on":["a"],"estimate":"10ms"},{"id":"l2","task":"t","depends_on":["a"],"estimate":"10ms"},
				{"id":"m1","task":"t","depends_on":["l1"],"estimate":"5ms"},{"id":"m2","task":"t","depends_on":["l2"],"estimate":"5ms"}]}`,
			dur:    map[string]int64{"a": 2, "x": 12, "l1": 10, "l2": 10, "m1": 5, "m2": 5},
			greedy: 27, reserving: 24, planned: 24, optimum: 24,
		},
		{
			// One urgent step: it gets the slot its only dependency
			// frees, so keeping one gains nothing.
			name: "one urgent step takes the slot its dependency frees",
			spec: `{"max_concurrency":2,"steps":[
				{"id":"a","task":"t","estimate":"2ms"},{"id":"x","task":"t","estimate":"12ms"},
				{"id":"l1","task":"t","depends_on":["a"],"estimate":"10ms"},{"id":"m1","task":"t","depends_on":["l1"],"estimate":"5ms"}]}`,
			dur:    map[string]int64{"a": 2, "x": 12, "l1": 10, "m1": 5},
			greedy: 17, reserving: 17, planned: 17, optimum: 17,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sim := newSim(durations(c.dur))
			w := mustParse(t, c.spec)
			var made *runner
			out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-test", waiting: sim.waiting, finished: func(r *runner) { made = r }})
			require.Equal(t, StatusCompleted, out.Status)
			var greedy int64
			for _, e := range sim.ends {
				greedy = max(greedy, e)
			}
			dur := map[*stepRun]int64{}
			for _, v := range made.s.runs {
				dur[v] = sim.ends[v.label] - sim.starts[v.label]
			}
			g := newRunGraph(made.s.runs, precedence(made), dur)
			est := declaredPerRun(made.w, g)
			require.Equal(t, g.dur, est, "the estimates are the durations here")
			reserving := reservingSchedule(g, 2, longestPathKeys(g, est), est)
			planned := planOrderedDispatch(g, 2, estimatedPlan(g, est, 2))
			for _, start := range [][]int64{reserving, planned} {
				require.NoError(t, checkSchedule(g, start, 2))
			}
			require.Equal(t, []int64{c.greedy, c.reserving, c.planned, c.optimum},
				[]int64{greedy, makespanOf(reserving, g.dur), makespanOf(planned, g.dur), optimalMakespan(g, 2)})
		})
	}
}
