package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

// patternPool mixes what makes overlap hard: globstars, classes, braces,
// case variants, directories named by literal, a file beneath a directory.
var patternPool = []string{
	"src/**", "src/a/**", "src/a/*.go", "src/A/x.go", "src/b/*.go", "src/{a,b}/y.go", "docs/**", "docs/*.md",
	"**/*.md", "**/*_test.go", "test/**/*_test.go", "cmd", "cmd/pixir/main.go", "lib/x.go", "lib/[xy].go",
	"**/gen/**", "README.md", "readme.md", "*", "**/*",
}

// mixedWorkflow is a random DAG whose steps draw read and write sets from
// patternPool, in both workspaces, so that many conflict profiles meet.
func mixedWorkflow(n int, seed uint64) *Workflow {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b9))
	pick := func() []string {
		k := 1 + r.IntN(2)
		var out []string
		for range k {
			out = append(out, patternPool[r.IntN(len(patternPool))])
		}
		return out
	}
	w := &Workflow{MaxConcurrency: 1 + r.IntN(8)}
	for i := range n {
		s := Step{ID: fmt.Sprintf("s%d", i), Task: "t"}
		for range r.IntN(3) {
			if i > 0 {
				s.DependsOn = append(s.DependsOn, fmt.Sprintf("s%d", r.IntN(i)))
			}
		}
		if r.IntN(2) == 0 {
			s.ReadSet = pick()
		}
		switch r.IntN(3) {
		case 0:
			s.WriteSet = pick()
		case 1:
			s.PermissionMode = Writer // the whole workspace
		}
		if s.PermissionMode == Writer || len(s.WriteSet) > 0 {
			s.WorkspaceMode = []WorkspaceMode{Isolated, Shared}[r.IntN(2)]
		}
		w.Steps = append(w.Steps, s)
	}
	w.Normalize()
	return w
}

// naiveWaves is the planner as it was before conflict profiles: every
// runnable step looked at in priority order at every tick, against every
// step started in it. It is the reference the planner must agree with.
func naiveWaves(w *Workflow) [][]string {
	n := len(w.Steps)
	index := map[string]int{}
	for i := range w.Steps {
		index[w.Steps[i].ID] = i
	}
	wave := make([]int, n)
	order := priorityOrder(w)
	var out [][]string
	for started := 0; started < n; {
		t := len(out) + 1
		var now []int
		for _, i := range order {
			if wave[i] != 0 {
				continue
			}
			done := true
			for _, d := range w.Steps[i].DependsOn {
				if x := wave[index[d]]; x == 0 || x >= t {
					done = false
				}
			}
			if !done || len(now) >= w.MaxConcurrency {
				continue
			}
			blocked := false
			for _, r := range now {
				if _, ok := Conflicts(&w.Steps[i], &w.Steps[r]); ok {
					blocked = true
				}
			}
			if !blocked {
				now = append(now, i)
			}
		}
		slices.Sort(now)
		var ids []string
		for _, i := range now {
			wave[i] = t
			ids = append(ids, w.Steps[i].ID)
		}
		out = append(out, ids)
		started += len(now)
	}
	return out
}

// naiveMergeRisks is every pair of steps through MergeRiskOf.
func naiveMergeRisks(w *Workflow) []MergeRisk {
	var out []MergeRisk
	for i := range w.Steps {
		for j := i + 1; j < len(w.Steps); j++ {
			if r, ok := MergeRiskOf(&w.Steps[i], &w.Steps[j]); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// TestPlannerAgreesWithNaive holds the planner (profiles, per-profile
// queues) and the merge-risk count (groups, the prefix trie) to the
// all-pairs algorithms they replace, over random workflows with many
// profiles: the same waves, the same count of steps held back, the same
// merge-risk count and the same first pairs.
func TestPlannerAgreesWithNaive(t *testing.T) {
	for seed := range uint64(60) {
		w := mixedWorkflow(40+int(seed)*3, seed)
		require.NoError(t, Check(w))
		d, err := Waves(w)
		require.NoError(t, err)
		require.Equal(t, naiveWaves(w), d.order, "seed %d", seed)

		readyFor := map[string]int{} // the tick each step became runnable for
		waveOf := map[string]int{}
		for k, ids := range d.order {
			for _, id := range ids {
				waveOf[id] = k + 1
			}
		}
		held := 0
		for _, s := range w.Steps {
			readyFor[s.ID] = 1
			for _, dep := range s.DependsOn {
				readyFor[s.ID] = max(readyFor[s.ID], waveOf[dep]+1)
			}
			if waveOf[s.ID] > readyFor[s.ID] {
				held++
			}
		}
		require.Equal(t, held, d.Summary.SerializedSteps, "seed %d", seed)
		for _, s := range d.Serialized {
			require.Equal(t, readyFor[s.Step], s.tick, "a step is recorded at the tick it became ready for")
			if s.Rule != RuleMaxConcurrency {
				require.Equal(t, s.tick, waveOf[s.With], "held back by a step started at that tick")
			}
		}

		all := naiveMergeRisks(w)
		require.Equal(t, len(all), d.MergeRiskCount.Pairs, "seed %d", seed)
		require.False(t, d.MergeRiskCount.AtLeast)
		require.Equal(t, all[:min(len(all), maxListed)], nonNilRisks(d.MergeRisks), "seed %d", seed)
	}
}

func nonNilRisks(r []MergeRisk) []MergeRisk {
	if len(r) == 0 {
		return nil
	}
	return r
}

// TestMergeRiskCountSaysWhenItStopped: write sets built so that every pair
// overlaps under the conservative rules ("**/f1.go" could be a directory
// holding f2.go) and the prefix trie cannot tell them apart make the count
// a lower bound once the comparisons run out, and the result says so.
func TestMergeRiskCountSaysWhenItStopped(t *testing.T) {
	defer func(n int) { maxOverlapChecks = n }(maxOverlapChecks)
	maxOverlapChecks = 500
	w := &Workflow{}
	for i := range 100 {
		w.Steps = append(w.Steps, Step{ID: fmt.Sprintf("s%d", i), Task: "t", WriteSet: []string{fmt.Sprintf("**/f%d.go", i)}})
	}
	d, err := Waves(w)
	require.NoError(t, err)
	require.True(t, d.MergeRiskCount.AtLeast)
	require.Positive(t, d.MergeRiskCount.Pairs)
	require.Less(t, d.MergeRiskCount.Pairs, 100*99/2)
	require.Contains(t, RenderPlan(&d), fmt.Sprintf("Merge risks (at least %d pairs of writers)", d.MergeRiskCount.Pairs))

	maxOverlapChecks = 1 << 20
	d, err = Waves(w)
	require.NoError(t, err)
	require.Equal(t, RiskCount{Pairs: 100 * 99 / 2}, d.MergeRiskCount)
}

// overlappingWriters is n steps, every one a writer of the same tree, the
// shape that used to make a dry run quadratic in time and in size.
func overlappingWriters(n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"steps":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"w%d","task":"Rewrite part %d of src.","write_set":["src/**"]}`, i, i)
	}
	b.WriteString(`]}`)
	return json.RawMessage(b.String())
}

// TestDryRunIsBounded: 300 writers of one tree are 44,850 pairs at merge
// risk and 299 steps held back; the dry run the model reads counts them
// all, names the first, and says what it left out.
func TestDryRunIsBounded(t *testing.T) {
	w, err := Decode(overlappingWriters(300))
	require.NoError(t, err)
	p, err := Prepare(w, Ports{Agents: anyAgent{}})
	require.NoError(t, err)
	out, err := p.DryRun(context.Background())
	require.NoError(t, err)

	require.Equal(t, PlanSummary{Steps: 300, Waves: 1, SerializedSteps: 299}, out.Summary, "one wave: no step depends on another")
	require.Equal(t, RiskCount{Pairs: 300 * 299 / 2}, out.MergeRiskCount)
	require.Len(t, out.MergeRisks, maxListed)
	require.Len(t, out.Serialized, maxListed)
	require.Len(t, out.Steps, maxListedSteps)
	require.Len(t, out.Waves, 1)
	require.Len(t, out.Waves[0], maxListedSteps)
	require.Equal(t, &Truncation{Waves: 1, Steps: 100, Serialized: 299 - maxListed, MergeRisks: 44850 - maxListed, Note: dryRunNote}, out.Truncated)
	// The first pairs, in declaration order.
	require.Equal(t, []string{"w0", "w1"}, out.MergeRisks[0].Steps)
	require.Equal(t, []string{"w0", "w50"}, out.MergeRisks[maxListed-1].Steps)

	b, err := json.Marshal(tools.OK(out))
	require.NoError(t, err)
	require.Less(t, len(b), 128<<10, "the whole result the model reads")
	require.Less(t, len(out.Output), 32<<10, "the text")
	for _, marker := range []string{"Wave 1: w0, w1, ", "- within wave 1, w1 runs after w0: ", "| … | | | | | 240 more steps |", "- … and 279 more\n", "Merge risks (44850 pairs of writers):", "- … and 44830 more pairs"} {
		require.Contains(t, out.Output, marker)
	}
}

// anyAgent accepts every agent.
type anyAgent struct{}

func (anyAgent) CheckSpawn(tools.SpawnRequest) error { return nil }

// countdownContext ends after its Err has been asked a number of times:
// a cancellation that arrives while the planner works, deterministically.
type countdownContext struct {
	context.Context
	left int
}

func (c *countdownContext) Err() error {
	if c.left--; c.left < 0 {
		return context.Canceled
	}
	return nil
}

// TestDryRunStopsWhenCancelled: a dry run looks at its context as it plans,
// so a cancelled prompt does not wait for a big plan to finish.
func TestDryRunStopsWhenCancelled(t *testing.T) {
	w, err := Decode(overlappingWriters(2000))
	require.NoError(t, err)
	p, err := Prepare(w, Ports{Agents: anyAgent{}})
	require.NoError(t, err)
	ctx := &countdownContext{Context: context.Background(), left: 10}
	_, err = p.DryRun(ctx)
	f := tools.AsFailure(err)
	require.Equal(t, tools.ErrCancelled, f.Kind, f.Message)
	require.Negative(t, ctx.left, "it stopped at the first look after the cancel")
	require.Greater(t, ctx.left, -3)
}

// TestOverlapCacheAgreesWithOverlap: the cache's shortcut (leading literal
// segments that differ) and its memory give Overlap's answers.
func TestOverlapCacheAgreesWithOverlap(t *testing.T) {
	pool := append(slices.Clone(patternPool), "SRC/a/x.go", "src/a", "src/ab/**", "{src,docs}/**", "src\\*/x", "[s]rc/**", "lib", "library/x",
		"**/a.go", "**/b/**", "**/{x,y}.md", "**/[b-a]", "**/f1.go", "**/f2.go", "**/*.go")
	c := newOverlapCache()
	for range 2 { // the second time from memory
		for _, a := range pool {
			for _, b := range pool {
				require.Equal(t, Overlap(a, b), c.overlap(a, b), "%s ~ %s", a, b)
			}
		}
	}
}

// TestPairBitsGrow: the profile-pair matrix keeps what it holds as it
// grows, and keeps nothing beyond its bound.
func TestPairBitsGrow(t *testing.T) {
	var m pairBits
	want := map[[2]profileID]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		p, q := profileID(r.IntN(700)), profileID(r.IntN(700))
		v := r.IntN(2) == 0
		m.set(p, q, v)
		want[[2]profileID{p, q}], want[[2]profileID{q, p}] = v, v
	}
	for k, v := range want {
		require.Equal(t, v, m.get(k[0], k[1]), "%v", k)
	}
	m.set(maxDenseProfiles, 3, true)
	require.False(t, m.get(maxDenseProfiles, 3))
}

// TestValidationIsBounded: a spec with thousands of problems gets the
// first hundred, a count of the rest, and messages that do not grow with
// the spec (the known ids, a long cycle, many cycles).
func TestValidationIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"steps":[`)
	for i := range 5000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"s%d","task":"t","depends_on":["nope%d"]}`, i, i)
	}
	b.WriteString(`]}`)
	_, err := Parse(json.RawMessage(b.String()))
	f := tools.AsFailure(err)
	d := f.Details.(ValidationDetails)
	require.Len(t, d.Problems, maxProblems)
	require.Equal(t, 5000-maxProblems, d.MoreProblems)
	require.Contains(t, f.Message, "… and 4900 more problems (details.more_problems)")
	require.Contains(t, d.Problems[0].Message, `known ids: s0, s1, s2`)
	require.Contains(t, d.Problems[0].Message, "… and 4980 more")
	require.Less(t, len(f.Message), 32<<10)

	// One cycle through 1,000 steps, and 200 little ones.
	w := &Workflow{}
	for i := range 1000 {
		w.Steps = append(w.Steps, Step{ID: fmt.Sprintf("c%d", i), Task: "t", DependsOn: []string{fmt.Sprintf("c%d", (i+1)%1000)}})
	}
	for i := range 200 {
		w.Steps = append(w.Steps,
			Step{ID: fmt.Sprintf("x%d", i), Task: "t", DependsOn: []string{fmt.Sprintf("y%d", i)}},
			Step{ID: fmt.Sprintf("y%d", i), Task: "t", DependsOn: []string{fmt.Sprintf("x%d", i)}})
	}
	f = tools.AsFailure(Check(w))
	d = f.Details.(ValidationDetails)
	require.Len(t, d.Problems, maxCycles+1)
	require.Len(t, d.Problems[0].Cycle, 1001, "the cycle itself is whole in the details")
	require.Contains(t, d.Problems[0].Message, "c19 -> … 961 more … -> c981")
	require.Equal(t, fmt.Sprintf("cycle: more than %d cycles; fix these and check again", maxCycles), d.Problems[maxCycles].Message)
	require.Less(t, len(f.Message), 16<<10)
}

// TestBigRunIsBounded runs 1,000 overlapping writers (a third of them
// failing) through Run on the simulated clock: every plan it shows has at
// most maxPlanEntries entries, the last counting the rest, and the result
// run_workflow returns lists the steps that need attention first, cut,
// with the counts whole and a note saying where the rest is.
func TestBigRunIsBounded(t *testing.T) {
	w, err := Decode(overlappingWriters(1000))
	require.NoError(t, err)
	w.MaxConcurrency = 8
	for i := range w.Steps {
		if i%2 == 0 {
			w.Steps[i].WriteSet = []string{fmt.Sprintf("src/f%d.go", i)} // these run side by side
		}
	}
	sim := newSim(func(step string) childPlan {
		i, err := strconv.Atoi(strings.TrimPrefix(step, "w"))
		if err != nil {
			panic(err)
		}
		if i%3 == 0 {
			return childPlan{dur: 1, status: tools.SubagentFailed, summary: "it broke"}
		}
		return childPlan{dur: 1}
	})
	out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-big", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusPartial, out.Status)
	require.Len(t, out.Steps, 1000, "Run's own outcome is whole")
	require.Equal(t, 334, out.Summary.FailedSteps)

	require.NotEmpty(t, sim.plans)
	for _, plan := range sim.plans {
		require.LessOrEqual(t, len(plan), maxPlanEntries)
	}
	last := sim.plans[len(sim.plans)-1]
	require.Equal(t, "… and 901 more steps: 901 done (666 checkpoint_ready), 0 to do", last[len(last)-1].Content)
	require.Equal(t, tools.PlanCompleted, last[len(last)-1].Status)

	b := out.Bounded()
	require.Len(t, b.Steps, maxOutcomeSteps)
	for _, s := range b.Steps {
		require.Equal(t, CheckpointFailed, s.CheckpointStatus, "the steps that need attention come first")
	}
	require.Len(t, b.UsableCheckpoints, maxListedSteps)
	require.Len(t, b.FailedSteps, maxListedSteps)
	require.Equal(t, out.Summary, b.Summary)
	require.Equal(t, &OutcomeTruncation{Steps: 900, Waves: b.Truncated.Waves, StepIDs: (666 - 200) + (334 - 200) + (334 - 200), Note: outcomeNote}, b.Truncated)
	require.Positive(t, b.Truncated.Waves)
	require.Equal(t, out.MergeConflictRiskCount, b.MergeConflictRiskCount)
	require.Equal(t, RiskCount{Pairs: 500*499/2 + 500*500}, out.MergeConflictRiskCount, "the writers of src/** are at risk with each other and with those of a file in src")
	enc, err := json.Marshal(tools.Result{Output: b})
	require.NoError(t, err)
	require.Less(t, len(enc), 256<<10)
	require.Less(t, len(out.Output), 32<<10)
	require.Contains(t, out.Output, "… and 374730 more pairs")
	require.Contains(t, out.Output, "- retry_failed_steps [w0, w3, w6, w9, w12, w15, w18, w21, w24, w27, w30, w33, w36, w39, w42, w45, w48, w51, w54, w57 … and 314 more]")

	small := Outcome{Steps: out.Steps[:3], Waves: [][]string{{"w0"}}}
	require.Nil(t, small.Bounded().Truncated, "a small outcome is returned as it is")
}

// TestDryRunWorkIsBounded: writers of distinct sets that all overlap under
// the conservative rules ("**/f1.go" could be a directory holding f2.go)
// cost the square of their number to order. Past its work budget a dry run
// stops looking for the steps held back, and says so; its waves, which
// are dependency levels, stay exact.
func TestDryRunWorkIsBounded(t *testing.T) {
	defer func(n int) { maxPlanWork = n }(maxPlanWork)
	maxPlanWork = 5000
	w := &Workflow{}
	for i := range 300 {
		w.Steps = append(w.Steps, Step{ID: fmt.Sprintf("s%d", i), Task: "t", WriteSet: []string{fmt.Sprintf("**/f%d.go", i)}})
	}
	d, err := Waves(w)
	require.NoError(t, err)
	require.NotEmpty(t, d.Incomplete)
	placed := 0
	for k, tick := range d.order {
		require.Equal(t, []string{fmt.Sprintf("s%d", k)}, tick, "the order it found is exact: one writer at a time")
		placed++
	}
	require.Equal(t, 300-placed, d.Summary.UnplacedSteps)
	require.Positive(t, d.Summary.UnplacedSteps)
	require.Len(t, d.Waves, 1, "no step depends on another")
	require.Len(t, d.Waves[0], 300)
	require.Equal(t, 1, d.Steps[299].Wave)
	require.Contains(t, RenderPlan(&d), fmt.Sprintf("Incomplete: the search for held-back steps stopped after %d of 300 steps", placed))
	require.Equal(t, RiskCount{Pairs: 300 * 299 / 2}, d.MergeRiskCount, "two patterns that both start and end with ** are told apart at once")
}
