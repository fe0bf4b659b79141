package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Property tests on random looped graphs: random DAGs with nested loops
// (until, converge, both exhaustion policies), conditions, failure
// branches and fan-outs, played by children whose reports are a function
// of their run and the seed.

const propertySchema = `{"type":"object","properties":{"v":{"enum":["yes","no"]},"items":{"type":"array","items":{"type":"string"}}}}`

// randomLoopedWorkflow builds a valid random workflow of n steps. Loops
// are ranges of consecutive steps (a step depends only on earlier ones,
// so a range is always one group of the graph), nested or disjoint.
func randomLoopedWorkflow(r *rand.Rand, n int) *Workflow {
	w := &Workflow{MaxConcurrency: 1 + r.IntN(4)}
	for i := range n {
		st := Step{ID: fmt.Sprintf("s%d", i), Task: "t", OutputSchema: json.RawMessage(propertySchema)}
		for range r.IntN(3) {
			if i > 0 {
				st.DependsOn = append(st.DependsOn, fmt.Sprintf("s%d", r.IntN(i)))
			}
		}
		st.DependsOn = dedupe(st.DependsOn)
		if len(st.DependsOn) > 0 {
			d := st.DependsOn[0]
			switch r.IntN(6) {
			case 0:
				st.When = Conditions{{Step: d, Path: "/v", Equals: json.RawMessage(`"yes"`)}}
			case 1:
				st.When = Conditions{{Step: d, Status: []CheckpointStatus{CheckpointPartial}}}
			case 2:
				st.ForEach = &ForEach{Step: d, Path: "/items", MaxItems: 2}
				st.Task = "do ${item}"
				st.OutputSchema = nil
			case 3:
				if len(st.DependsOn) > 1 {
					st.Join = JoinAny
				}
			}
		}
		if r.IntN(4) == 0 && st.ForEach == nil {
			st.WriteSet = []string{fmt.Sprintf("area%d/**", r.IntN(3))}
		}
		w.Steps = append(w.Steps, st)
	}
	// A fan-out's source must not be a fan-out; its payload is nil.
	for i := range w.Steps {
		if f := w.Steps[i].ForEach; f != nil {
			src, _ := strconv.Atoi(strings.TrimPrefix(f.Step, "s"))
			if w.Steps[src].ForEach != nil || len(w.Steps[src].OutputSchema) == 0 {
				w.Steps[i].ForEach, w.Steps[i].Task = nil, "t"
				w.Steps[i].OutputSchema = json.RawMessage(propertySchema)
			}
		}
		if cs := w.Steps[i].When; len(cs) > 0 {
			src, _ := strconv.Atoi(strings.TrimPrefix(cs[0].Step, "s"))
			if w.Steps[src].ForEach != nil && cs[0].Path != "" {
				w.Steps[i].When = nil
			}
		}
	}
	var addLoops func(lo, hi, depth int)
	addLoops = func(lo, hi, depth int) {
		for a := lo; a < hi && depth < 3; {
			if r.IntN(3) != 0 {
				a++
				continue
			}
			b := min(hi, a+1+r.IntN(5))
			if b-a < 1 || (depth > 0 && a == lo && b == hi) {
				a++
				continue
			}
			l := Loop{ID: fmt.Sprintf("l%d", len(w.Loops)), MaxIterations: 1 + r.IntN(3)}
			for k := a; k < b; k++ {
				l.Steps = append(l.Steps, w.Steps[k].ID)
			}
			last := &w.Steps[b-1]
			if last.ForEach == nil && r.IntN(2) == 0 {
				l.Until = Conditions{{Step: last.ID, Path: "/v", Equals: json.RawMessage(`"yes"`)}}
			}
			if last.ForEach == nil && r.IntN(2) == 0 {
				l.Converge = Converges{{Step: last.ID, Path: "/v"}}
			}
			l.OnExhausted = []ExhaustionPolicy{Hold, Proceed}[r.IntN(2)]
			w.Loops = append(w.Loops, l)
			addLoops(a, b, depth+1)
			a = b
		}
	}
	addLoops(0, n, 0)
	pairFanOuts(r, w)
	return w
}

// pairFanOuts turns some later steps into fan-outs over the same items as
// an earlier fan-out, whose condition tests it (status only: an instance
// reports no payload), so that their instances pair up and are gated per
// instance (write-tests[i] → make[i]). A step is turned only when nothing
// reads its payload (a fan-out, a path condition, a loop's until or
// converge) and it is no join of alternatives.
func pairFanOuts(r *rand.Rand, w *Workflow) {
	readsPayload := map[string]bool{}
	for i := range w.Steps {
		if f := w.Steps[i].ForEach; f != nil {
			readsPayload[f.Step] = true
		}
		for _, c := range w.Steps[i].When {
			if c.Path != "" {
				readsPayload[c.Step] = true
			}
		}
	}
	for _, l := range w.Loops {
		for _, c := range l.Until {
			readsPayload[c.Step] = true
		}
		for _, c := range l.Converge {
			readsPayload[c.Step] = true
		}
	}
	for i := range w.Steps {
		f := w.Steps[i].ForEach
		if f == nil {
			continue
		}
		for k := i + 1; k < len(w.Steps); k++ {
			st := &w.Steps[k]
			if st.ForEach != nil || st.Join == JoinAny || readsPayload[st.ID] || r.IntN(3) != 0 {
				continue
			}
			st.ForEach = &ForEach{Step: f.Step, Path: f.Path, MaxItems: f.MaxItems}
			st.Task, st.OutputSchema = "then ${item}", nil
			st.DependsOn = dedupe(append(st.DependsOn, w.Steps[i].ID, f.Step))
			switch r.IntN(3) {
			case 0:
				st.When = Conditions{{Step: w.Steps[i].ID}}
			case 1:
				st.When = Conditions{{Step: w.Steps[i].ID, Status: []CheckpointStatus{CheckpointPartial}}}
			default:
				st.When = Conditions{{Any: Conditions{{Step: w.Steps[i].ID}, {Step: w.Steps[i].ID, Status: []CheckpointStatus{CheckpointSkipped}}}}}
			}
			st.WriteSet = nil
			break
		}
	}
}

// propertyChild plays a run from a hash of its label and the seed.
func propertyChild(seed uint64) func(string) childPlan {
	return func(label string) childPlan {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s", seed, label)
		x := h.Sum64()
		dur := int64(1 + x%7)
		if x%6 == 0 {
			return childPlan{dur: dur, report: `{"status":"partial","summary":"half"}`}
		}
		if strings.Contains(label, "[") {
			return childPlan{dur: dur}
		}
		v := []string{"yes", "no"}[(x>>8)%2]
		items := []string{`[]`, `["a"]`, `["a","b"]`}[(x>>16)%3]
		return childPlan{dur: dur, report: `{"status":"checkpoint_ready","summary":"ok","payload":{"v":"` + v + `","items":` + items + `}}`}
	}
}

func TestRandomLoopedGraphs(t *testing.T) {
	paired, early := 0, 0
	defer func() {
		// The generator makes paired fan-outs, and some of their
		// instances were gated before every instance they pair with was
		// decided (else the property says nothing of pairing).
		require.Positive(t, paired, "no graph with paired fan-outs")
		require.Positive(t, early, "no paired instance was gated before its fan-out's other instances were decided")
		t.Logf("%d graphs with paired fan-outs, %d instances gated early", paired, early)
	}()
	for seed := uint64(1); seed <= 60; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		w := randomLoopedWorkflow(r, 5+r.IntN(20))
		raw, err := json.Marshal(w)
		require.NoError(t, err)
		spec := string(raw)
		if _, err := Parse(raw); err != nil {
			t.Fatalf("seed %d: the generator made an invalid workflow: %v\n%s", seed, err, spec)
		}
		// The same workflow with estimates on some steps: they order
		// the runs, and change none of the rules.
		withEstimates(w, rand.New(rand.NewPCG(seed, 8)))
		raw, err = json.Marshal(w)
		require.NoError(t, err)
		estimated := string(raw)
		if slices.Contains(w.graph().perInstance, true) {
			paired++
		}
		for name, spec := range map[string]string{"": spec, "/estimates": estimated} {
			t.Run(fmt.Sprint(seed)+name, func(t *testing.T) {
				out, sim := runSim(t, spec, propertyChild(seed))
				early += pairedEarly(sim.events)
				checkLoopBounds(t, mustParse(t, spec), out)
				checkDecidedBeforeStarted(t, sim.events)
				rebuiltEquals(t, sim, out)
			})
		}
	}
}

// pairedEarly counts the instances whose condition was decided on a
// paired instance while another instance of that fan-out (the same run
// but another item) was not decided yet: gated per instance.
func pairedEarly(events []WorkflowEvent) int {
	decidedAt := map[string]int{}
	for k, ev := range events {
		switch ev.Kind {
		case EventCheckpointDecided, EventStepHeld, EventStepSkipped:
			if _, ok := decidedAt[ev.Run]; !ok {
				decidedAt[ev.Run] = k
			}
		}
	}
	n := 0
	for k, ev := range events {
		if ev.Kind != EventConditionDecided || !strings.Contains(ev.Run, "[") {
			continue
		}
		for _, seen := range ev.Seen {
			fanOut, _, ok := strings.Cut(seen.Run, "[")
			if !ok {
				continue
			}
			for run, at := range decidedAt {
				if other, _, _ := strings.Cut(run, "["); other == fanOut && run != seen.Run && at > k {
					n++
					break
				}
			}
		}
	}
	return n
}

// checkLoopBounds: no loop runs more than max_iterations, counted from
// the runs themselves.
func checkLoopBounds(t *testing.T, w *Workflow, out Outcome) {
	t.Helper()
	g := w.graph()
	for _, l := range out.Loops {
		require.LessOrEqual(t, l.Iterations, l.MaxIterations, l.Run)
	}
	seen := map[string]int{}
	for _, s := range out.Steps {
		if len(s.Iteration) == 0 {
			continue
		}
		chain := g.loopChain(g.index[s.StepID])
		for d, l := range chain {
			key := w.Loops[l].ID + "#" + joinInts(s.Iteration[:d])
			seen[key] = max(seen[key], s.Iteration[d])
			require.LessOrEqual(t, s.Iteration[d], w.Loops[l].MaxIterations, "%s: iteration %d of loop %s", s.Run, s.Iteration[d], w.Loops[l].ID)
		}
	}
	require.NotNil(t, seen)
}

// checkDecidedBeforeStarted: a run starts only after its condition was
// decided true, and after every run that condition looked at was decided.
func checkDecidedBeforeStarted(t *testing.T, events []WorkflowEvent) {
	t.Helper()
	decidedAt := map[string]int{}
	conditionAt := map[string]int{}
	// made is every run the workflow made.
	made := map[string]bool{}
	for _, ev := range events {
		if ev.Run != "" {
			made[ev.Run] = true
		}
	}
	for k, ev := range events {
		switch ev.Kind {
		case EventCheckpointDecided, EventStepHeld, EventStepSkipped:
			if _, ok := decidedAt[ev.Run]; !ok {
				decidedAt[ev.Run] = k
			}
		case EventConditionDecided:
			conditionAt[ev.Run] = k
			for _, s := range ev.Seen {
				if strings.Contains(s.Run, "loop ") {
					continue
				}
				at, ok := decidedAt[s.Run]
				// A fan-out is seen as a whole, by its run in that frame or,
				// from outside its loops, by its step id: every run of it
				// made was decided first (found in review: any one decided
				// run, or any run whose name began alike, passed).
				if !ok && !strings.Contains(s.Run, "[") {
					var runs, instances []string
					for run := range made {
						if strings.HasPrefix(run, s.Run+"[") || strings.HasPrefix(run, s.Run+"#") {
							runs = append(runs, run)
							if strings.Contains(run, "[") {
								instances = append(instances, run)
							}
						}
					}
					if len(instances) > 0 { // a fan-out's own run is not decided: its instances are
						runs = instances
					}
					require.NotEmpty(t, runs, "condition of %s saw %s, which never ran", ev.Run, s.Run)
					for _, run := range runs {
						at, ok := decidedAt[run]
						require.True(t, ok && at < k, "condition of %s saw %s before its run %s was decided", ev.Run, s.Run, run)
					}
					continue
				}
				require.Less(t, at, k, "condition of %s saw %s before it was decided", ev.Run, s.Run)
			}
		case EventStepScheduled:
			if c, ok := conditionAt[ev.Run]; ok {
				require.Less(t, c, k)
			}
		}
	}
}

func TestTheSameCheckpointsMakeTheSameDecisions(t *testing.T) {
	for seed := uint64(100); seed < 106; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		w := randomLoopedWorkflow(r, 18)
		if seed >= 104 {
			// With estimates, which the runs' durations complete.
			withEstimates(w, rand.New(rand.NewPCG(seed, 8)))
		}
		raw, err := json.Marshal(w)
		require.NoError(t, err)
		var first string
		for range 100 {
			w, err := Parse(raw)
			require.NoError(t, err)
			sim := newSim(propertyChild(seed))
			out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-d", Now: fixedClock(), waiting: sim.waiting})
			var b strings.Builder
			for _, ev := range sim.events {
				res := ""
				if ev.Result != nil {
					res = fmt.Sprint(*ev.Result)
				}
				fmt.Fprintf(&b, "%s %s %s %s %s\n", ev.Kind, ev.Run, res, ev.Decision, ev.HeldReason+ev.SkipReason)
			}
			o, _ := json.Marshal(out)
			got := b.String() + string(o)
			if first == "" {
				first = got
				continue
			}
			require.Equal(t, first, got, "seed %d", seed)
		}
	}
}
