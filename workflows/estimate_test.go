package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

func TestEstimatesAreValidated(t *testing.T) {
	cases := []struct{ estimate, want string }{
		{"ten minutes", `steps[0] "a": estimate "ten minutes": it is not a duration (a number and a unit: ms, s, m, h); write a duration such as 90s, 10m or 1h30m (or drop it)`},
		{"10", `steps[0] "a": estimate "10": it is not a duration (a number and a unit: ms, s, m, h); write a duration such as 90s, 10m or 1h30m (or drop it)`},
		{"0s", `steps[0] "a": estimate "0s": it must be more than 0; write a duration such as 90s, 10m or 1h30m (or drop it)`},
		{"-5m", `steps[0] "a": estimate "-5m": it must be more than 0; write a duration such as 90s, 10m or 1h30m (or drop it)`},
		{"1001h", `steps[0] "a": estimate "1001h": it must be at most 1000h; write a duration such as 90s, 10m or 1h30m (or drop it)`},
	}
	for _, c := range cases {
		t.Run(c.estimate, func(t *testing.T) {
			_, err := Parse(json.RawMessage(fmt.Sprintf(`{"steps":[{"id":"a","task":"x","estimate":%q}]}`, c.estimate)))
			require.Error(t, err)
			f := tools.AsFailure(err)
			require.Equal(t, c.want, f.Message)
			d := f.Details.(ValidationDetails)
			require.Equal(t, "invalid_duration", d.Problems[0].Code)
			require.Equal(t, "estimate", d.Problems[0].Field)
		})
	}
	for _, ok := range []string{"500ms", "90s", "10m", "1h30m", "1000h"} {
		_, err := Parse(json.RawMessage(fmt.Sprintf(`{"steps":[{"id":"a","task":"x","estimate":%q}]}`, ok)))
		require.NoError(t, err, ok)
	}
}

// TestEstimatesOrderTheRunnableSteps: a chain is measured in expected
// time once steps have estimates, in steps otherwise; a step without an
// estimate counts the median of the others'.
func TestEstimatesOrderTheRunnableSteps(t *testing.T) {
	cases := []struct {
		name, spec string
		order      [][]string
	}{
		{"no estimates: the longest chain of steps first", `{"max_concurrency":1,"steps":[
			{"id":"long","task":"x"},
			{"id":"a","task":"x"},{"id":"b","task":"x","depends_on":["a"]},{"id":"c","task":"x","depends_on":["b"]}]}`,
			// a heads 3 steps, b 2, long and c 1 (long declared first).
			[][]string{{"a"}, {"b"}, {"long"}, {"c"}}},
		{"estimates: the longest expected time first", `{"max_concurrency":1,"steps":[
			{"id":"long","task":"x","estimate":"1h"},
			{"id":"a","task":"x","estimate":"5m"},{"id":"b","task":"x","depends_on":["a"],"estimate":"5m"},{"id":"c","task":"x","depends_on":["b"],"estimate":"5m"}]}`,
			[][]string{{"long"}, {"a"}, {"b"}, {"c"}}},
		{"a step without one counts the median of the others'", `{"max_concurrency":1,"steps":[
			{"id":"long","task":"x","estimate":"10m"},
			{"id":"a","task":"x","estimate":"1m"},{"id":"b","task":"x","depends_on":["a"]},{"id":"c","task":"x","depends_on":["b"],"estimate":"30m"}]}`,
			// a heads 1m + b (the median: 10m) + 30m = 41m > 10m.
			[][]string{{"a"}, {"b"}, {"c"}, {"long"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The dry run's order (every step taking one tick).
			_, err := Waves(mustParse(t, c.spec))
			require.NoError(t, err)
			var planned [][]string
			for _, i := range priorityOrder(mustParse(t, c.spec)) {
				planned = append(planned, []string{mustParse(t, c.spec).Steps[i].ID})
			}
			// The run's: every step taking as long.
			_, sim := runSim(t, c.spec, durations(nil))
			require.Equal(t, c.order, sim.byStart())
			// Runnable at once, long and a start in the order of their
			// priority, as the dry run ranks them.
			require.Equal(t, c.order[0][0], planned[0][0])
		})
	}
}

// TestARunCountsWhatItsStepTookBefore: a loop's later iteration is
// ordered by what the earlier one took (item 2), a step without an
// estimate by what its agent's runs took (item 3), and a workflow without
// estimates keeps its order whatever the runs took.
func TestARunCountsWhatItsStepTookBefore(t *testing.T) {
	minutes := func(m int64) int64 { return m * int64(time.Minute/time.Millisecond) }
	t.Run("a loop's second iteration", func(t *testing.T) {
		spec := `{"max_concurrency":1,"steps":[
			{"id":"a","task":"x","estimate":"10m"},
			{"id":"b","task":"x","estimate":"3m"},
			{"id":"c","task":"x","estimate":"4m"}],
			"loops":[{"id":"l","steps":["a"],"max_iterations":2,"on_exhausted":"proceed"}]}`
		play := func(label string) childPlan {
			p := childPlan{dur: minutes(1)}
			if label == "a#1" {
				p.report = `{"status":"partial","summary":"not yet"}`
			}
			return p
		}
		// a#1 first (10m, twice: 20m); it took 1m, so a#2 counts 2m and
		// goes after c (4m) and b (3m). Told nothing, a#2 would count 20m.
		_, sim := runSim(t, spec, play)
		require.Equal(t, [][]string{{"a#1"}, {"c"}, {"b"}, {"a#2"}}, sim.byStart())
	})
	t.Run("a resumed run counts what its reused runs took", func(t *testing.T) {
		spec := `{"max_concurrency":1,"steps":[
			{"id":"a","task":"x","estimate":"10m"},
			{"id":"b","task":"x","estimate":"3m"},
			{"id":"c","task":"x","estimate":"4m"}],
			"loops":[{"id":"l","steps":["a"],"max_iterations":2,"on_exhausted":"proceed"}]}`
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sim := newSim(func(label string) childPlan {
			p := childPlan{dur: minutes(1)}
			switch label {
			case "a#1":
				p.report = `{"status":"partial","summary":"not yet"}`
			case "c":
				cancel() // the first run is cut once a#1 and c are decided
			}
			return p
		})
		simRun(t, ctx, sim, mustParse(t, spec), RunOptions{WorkflowID: "wf-1", Now: fixedClock(), waiting: sim.waiting})
		sim.order, sim.starts = nil, map[string]int64{}

		// Resumed, a#1 and c are reused: a#1 took 1m, so a#2 counts 2m
		// and goes after b (3m), as in the run that was not cut; told
		// nothing of a#1, it would count 20m and go first.
		w := mustParse(t, spec)
		w.ResumeFrom = "wf-1"
		out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-2", Now: fixedClock(), waiting: sim.waiting})
		require.Equal(t, "wf-1", out.Steps[0].ReusedFrom, out.Output)
		require.Equal(t, [][]string{{"b"}, {"a#2"}}, sim.byStart())
	})
	t.Run("an agent's runs", func(t *testing.T) {
		spec := `{"max_concurrency":1,"steps":[
			{"id":"e","task":"x","agent":"explorer","estimate":"10m"},
			{"id":"f","task":"x","agent":"worker","estimate":"9m"},
			{"id":"d","task":"x","agent":"explorer","depends_on":["e"]},
			{"id":"g","task":"x","agent":"worker","estimate":"2m"}]}`
		// e first (10m + d's 9m, the median of the estimates). It took
		// 30m, so d counts the explorer's 30m and goes before f (9m);
		// counting the median, it would tie with f and go after it.
		_, sim := runSim(t, spec, durations(map[string]int64{"e": minutes(30)}))
		require.Equal(t, [][]string{{"e"}, {"d"}, {"f"}, {"g"}}, sim.byStart())
	})
	t.Run("no estimates: durations change nothing", func(t *testing.T) {
		spec := `{"max_concurrency":1,"steps":[
			{"id":"a","task":"x"},{"id":"b","task":"x"},{"id":"c","task":"x"}],
			"loops":[{"id":"l","steps":["a"],"max_iterations":2,"on_exhausted":"proceed"}]}`
		play := func(label string) childPlan {
			p := childPlan{dur: 1}
			if label == "a#1" {
				p.report = `{"status":"partial","summary":"not yet"}`
			}
			return p
		}
		_, sim := runSim(t, spec, play)
		require.Equal(t, [][]string{{"a#1"}, {"a#2"}, {"b"}, {"c"}}, sim.byStart())
	})
}

// withEstimates gives about two steps in three of w a random estimate.
func withEstimates(w *Workflow, r *rand.Rand) {
	for i := range w.Steps {
		if r.IntN(3) != 0 {
			w.Steps[i].Estimate = fmt.Sprintf("%ds", 1+r.IntN(600))
		}
	}
}

// TestAnEstimateInAWorkflowFile: YAML's 10m is the string a spec holds;
// a bare number is refused with the field named.
func TestAnEstimateInAWorkflowFile(t *testing.T) {
	raw, err := DecodeFile("w.yaml", []byte("steps:\n  - id: a\n    task: x\n    estimate: 10m\n"))
	require.NoError(t, err)
	w, err := Parse(raw)
	require.NoError(t, err)
	require.Equal(t, "10m", w.Steps[0].Estimate)
	est, _ := declaredEstimates(w)
	require.Equal(t, []int64{600_000}, est)

	raw, err = DecodeFile("w.yaml", []byte("steps:\n  - id: a\n    task: x\n    estimate: 10\n"))
	require.NoError(t, err)
	_, err = Parse(raw)
	require.ErrorContains(t, err, "steps[].estimate: got JSON number, want string")
}

// BenchmarkEstimatesMeasureAgain is one measure of every step's height
// of a 1,000-step looped workflow with estimates: what an end costs the
// runner when a duration moved enough to be measured again (at most once
// per end; ScheduleLooped1000 reports how many a run makes).
func BenchmarkEstimatesMeasureAgain(b *testing.B) {
	w := loopedWorkflow(1000, 1, 6)
	estimateFirstRuns(w, 1, true)
	e := newRunEstimates(w)
	k := 0
	cpu := cpuTime()
	for b.Loop() {
		k = (k + 7) % len(w.Steps)
		e.observe(k, int64(1+k%100))
		e.dirty = true
		e.heightOf(k)
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N)/1000, "cpu-µs/op")
}
