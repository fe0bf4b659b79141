package workflows

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// step builds a normalised step for the conflict tests.
func step(id string, mode PermissionMode, ws WorkspaceMode, read, write []string) Step {
	w := Workflow{Steps: []Step{{ID: id, Task: "t", PermissionMode: mode, WorkspaceMode: ws, ReadSet: read, WriteSet: write}}}
	w.Normalize()
	return w.Steps[0]
}

func TestConflictRules(t *testing.T) {
	src := []string{"src/**"}
	docs := []string{"docs/**"}
	cases := []struct {
		name      string
		a, b      Step
		conflict  ConflictRule // "" for none
		patterns  []string
		mergeRisk bool
	}{
		{"read-only steps never conflict, even reading everything",
			step("r1", ReadOnly, Shared, nil, nil), step("r2", ReadOnly, Shared, nil, nil), "", []string(nil), false},
		{"writers with overlapping write sets serialize",
			step("w1", Writer, Isolated, src, []string{"src/a/*.go"}), step("w2", Writer, Isolated, src, src),
			RuleWriteOverlap, []string{"src/a/*.go", "src/**"}, true},
		{"writers with disjoint write sets run together",
			step("w1", Writer, Isolated, nil, src), step("w2", Writer, Isolated, nil, docs), "", []string(nil), false},
		{"a writer without a write set claims the whole workspace",
			step("w1", Writer, Isolated, nil, nil), step("w2", Writer, Isolated, nil, docs),
			RuleWriteOverlap, []string{WholeWorkspace, "docs/**"}, true},
		{"shared writers serialize on write overlap too, without merge risk",
			step("w1", Writer, Shared, src, src), step("w2", Writer, Shared, src, []string{"src/x.go"}),
			RuleWriteOverlap, []string{"src/**", "src/x.go"}, false},
		{"a shared writer conflicts with a reader whose read set overlaps",
			step("w", Writer, Shared, nil, src), step("r", ReadOnly, Shared, []string{"src/*.go"}, nil),
			RuleSharedWriteRead, []string{"src/**", "src/*.go"}, false},
		{"the same, with the reader first",
			step("r", ReadOnly, Shared, []string{"src/*.go"}, nil), step("w", Writer, Shared, nil, src),
			RuleSharedWriteRead, []string{"src/*.go", "src/**"}, false},
		{"a reader without a read set is taken to read everything",
			step("w", Writer, Shared, nil, src), step("r", ReadOnly, Shared, nil, nil),
			RuleSharedWriteRead, []string{"src/**", WholeWorkspace}, false},
		{"a shared writer does not block a reader of other paths",
			step("w", Writer, Shared, nil, src), step("r", ReadOnly, Shared, docs, nil), "", []string(nil), false},
		{"an isolated writer does not block readers",
			step("w", Writer, Isolated, nil, src), step("r", ReadOnly, Shared, src, nil), "", []string(nil), false},
		{"a shared writer blocks an isolated writer that reads its paths",
			step("w", Writer, Shared, nil, src), step("i", Writer, Isolated, nil, docs),
			RuleSharedWriteRead, []string{"src/**", WholeWorkspace}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Conflicts(&c.a, &c.b)
			require.Equal(t, c.conflict != "", ok, got.Reason)
			if ok {
				require.Equal(t, c.conflict, got.Rule)
				require.Equal(t, c.patterns, got.Patterns)
				require.Equal(t, c.a.ID, got.Step)
				require.Equal(t, c.b.ID, got.With)
				require.NotEmpty(t, got.Reason)
			}
			_, back := Conflicts(&c.b, &c.a)
			require.Equal(t, ok, back, "conflict must be symmetric")
			_, risk := MergeRiskOf(&c.a, &c.b)
			require.Equal(t, c.mergeRisk, risk)
		})
	}
}

func mustParse(t *testing.T, spec string) *Workflow {
	t.Helper()
	w, err := Parse(json.RawMessage(spec))
	require.NoError(t, err)
	return w
}

func TestWavesShapes(t *testing.T) {
	cases := []struct {
		name       string
		spec       string
		waves      [][]string // dependency levels
		order      [][]string // what the scheduler starts together, every step taking the same time
		serialized []string   // "step<-with:rule@wave"
		risks      int
	}{
		{"diamond",
			`{"steps":[{"id":"a","task":"t"},{"id":"b","task":"t","depends_on":["a"]},
			{"id":"c","task":"t","depends_on":["a"]},{"id":"d","task":"t","depends_on":["b","c"]}]}`,
			[][]string{{"a"}, {"b", "c"}, {"d"}}, [][]string{{"a"}, {"b", "c"}, {"d"}}, nil, 0},
		{"parallel fan-out of readers",
			`{"steps":[{"id":"r1","task":"t"},{"id":"r2","task":"t"},{"id":"r3","task":"t"},{"id":"r4","task":"t"},
			{"id":"sum","task":"t","depends_on":["r1","r2","r3","r4"]}]}`,
			[][]string{{"r1", "r2", "r3", "r4"}, {"sum"}}, [][]string{{"r1", "r2", "r3", "r4"}, {"sum"}}, nil, 0},
		{"serialized writer pair",
			`{"steps":[{"id":"w1","task":"t","write_set":["src/**"]},{"id":"w2","task":"t","write_set":["src/a.go"]},
			{"id":"r","task":"t","read_set":["src/**"]}]}`,
			[][]string{{"w1", "w2", "r"}}, [][]string{{"w1", "r"}, {"w2"}},
			[]string{"w2<-w1:write_sets_overlap@1"}, 1},
		{"shared writer holds overlapping readers back",
			`{"steps":[{"id":"w","task":"t","write_set":["src/**"],"workspace_mode":"shared"},
			{"id":"r1","task":"t","read_set":["src/x.go"]},{"id":"r2","task":"t","read_set":["docs/**"]}]}`,
			[][]string{{"w", "r1", "r2"}}, [][]string{{"w", "r2"}, {"r1"}},
			[]string{"r1<-w:shared_writer_read_overlap@1"}, 0},
		{"max_concurrency 1",
			`{"max_concurrency":1,"steps":[{"id":"a","task":"t"},{"id":"b","task":"t"},{"id":"c","task":"t","depends_on":["a"]}]}`,
			[][]string{{"a", "b"}, {"c"}}, [][]string{{"a"}, {"b"}, {"c"}},
			[]string{"b<-:max_concurrency@1", "c<-:max_concurrency@2"}, 0},
		{"max_concurrency 2 keeps declaration order",
			`{"max_concurrency":2,"steps":[{"id":"a","task":"t"},{"id":"b","task":"t"},{"id":"c","task":"t"},{"id":"d","task":"t","depends_on":["a"]}]}`,
			[][]string{{"a", "b", "c"}, {"d"}}, [][]string{{"a", "b"}, {"c", "d"}},
			[]string{"c<-:max_concurrency@1"}, 0},
		{"a step held back is recorded once, at the wave it became ready for, with the first step it conflicts with",
			`{"steps":[{"id":"w1","task":"t","permission_mode":"writer"},{"id":"w2","task":"t","permission_mode":"writer"},
			{"id":"w3","task":"t","permission_mode":"writer"}]}`,
			[][]string{{"w1", "w2", "w3"}}, [][]string{{"w1"}, {"w2"}, {"w3"}},
			[]string{"w2<-w1:write_sets_overlap@1", "w3<-w1:write_sets_overlap@1"}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Waves(mustParse(t, c.spec))
			require.NoError(t, err)
			require.Equal(t, c.waves, d.Waves)
			require.Equal(t, c.order, d.order)
			var ser []string
			for _, s := range d.Serialized {
				ser = append(ser, fmt.Sprintf("%s<-%s:%s@%d", s.Step, s.With, s.Rule, s.Wave))
				require.NotEmpty(t, s.Reason)
			}
			require.Equal(t, c.serialized, ser)
			require.Len(t, d.MergeRisks, c.risks)
			for _, p := range d.Steps {
				require.Positive(t, p.Wave)
				require.Contains(t, d.Waves[p.Wave-1], p.ID)
			}
		})
	}
}

func TestWavesReportsPostureAndMode(t *testing.T) {
	d, err := Waves(mustParse(t, `{"dry_run":true,"steps":[{"id":"look","task":"t","agent":"explorer","read_set":["lib"]},
		{"id":"fix","task":"t","agent":"worker","write_set":["lib/**"],"depends_on":["look"]}]}`))
	require.NoError(t, err)
	b, err := json.Marshal(d)
	require.NoError(t, err)
	require.JSONEq(t, `{"max_concurrency":6,"failure_policy":"keep_going","waves":[["look"],["fix"]],
		"steps":[
		 {"id":"look","agent":"explorer","wave":1,"posture":"read_only","workspace_mode":"shared","depends_on":[],"read_set":["lib"],"write_set":[],"max_runs":1},
		 {"id":"fix","agent":"worker","wave":2,"posture":"writer","workspace_mode":"isolated","depends_on":["look"],"read_set":["**/*"],"write_set":["lib/**"],"max_runs":1,"merge":"on_ready"}],
		"serialized":[],"merge_conflict_risk":[],"merge_conflict_risk_count":{"pairs":0},"loops":[],"max_runs":2,
		"summary":{"steps":2,"waves":2,"serialized_steps":0}}`, string(b))
}

func TestWavesRejectsInvalid(t *testing.T) {
	_, err := Waves(&Workflow{MaxConcurrency: 1, FailurePolicy: KeepGoing})
	require.ErrorContains(t, err, "invalid_args: steps: the workflow has no steps")
}

func TestWavesDeterministic(t *testing.T) {
	spec := `{"max_concurrency":3,"steps":[
		{"id":"plan","task":"t"},
		{"id":"r1","task":"t","depends_on":["plan"],"read_set":["src/**"]},
		{"id":"r2","task":"t","depends_on":["plan"],"read_set":["docs/**"]},
		{"id":"w1","task":"t","depends_on":["plan"],"write_set":["src/a/**"]},
		{"id":"w2","task":"t","depends_on":["plan"],"write_set":["src/**/*.go"]},
		{"id":"w3","task":"t","depends_on":["plan"],"write_set":["docs/**"],"workspace_mode":"shared"},
		{"id":"rev","task":"t","depends_on":["w1","w2","w3"]},
		{"id":"fin","task":"t","depends_on":["rev","r1","r2"]}]}`
	first, err := Waves(mustParse(t, spec))
	require.NoError(t, err)
	for range 100 {
		again, err := Waves(mustParse(t, spec))
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
	// Wave 2 considers the writers first (each has rev and fin behind it,
	// the readers only fin): w1 starts; w2 overlaps w1's writes; w3 writes
	// docs/** in the shared workspace, which w1 and w2 (no read set:
	// everything) read; then r1 and r2 fill the wave's other two slots.
	require.Equal(t, [][]string{{"plan"}, {"r1", "r2", "w1"}, {"w2"}, {"w3"}, {"rev"}, {"fin"}}, first.order)
	// The waves are dependency levels: the writers held back stay in wave 2.
	require.Equal(t, [][]string{{"plan"}, {"r1", "r2", "w1", "w2", "w3"}, {"rev"}, {"fin"}}, first.Waves)
	var ser []string
	for _, s := range first.Serialized {
		ser = append(ser, fmt.Sprintf("%s<-%s:%s@%d", s.Step, s.With, s.Rule, s.Wave))
	}
	require.Equal(t, []string{"w2<-w1:write_sets_overlap@2", "w3<-w1:shared_writer_read_overlap@2"}, ser)
	require.Equal(t, 2, first.Summary.SerializedSteps)
}

// TestWavesInvariants checks, over seeded random graphs, what every plan
// must satisfy: each step in exactly one tick of the scheduler's order,
// after all its dependencies, no tick over max_concurrency, no two
// conflicting steps in one tick; each step's wave one more than its
// dependencies' largest; and the same plan on every run.
func TestWavesInvariants(t *testing.T) {
	for seed := range uint64(20) {
		w := randomWorkflow(150, seed)
		w.MaxConcurrency = 1 + int(seed%7)
		d, err := Waves(w)
		require.NoError(t, err)
		again, err := Waves(w)
		require.NoError(t, err)
		require.Equal(t, d, again)

		level := map[string]int{}
		for k, ids := range d.Waves {
			for _, id := range ids {
				level[id] = k + 1
			}
		}
		for _, s := range w.Steps {
			want := 1
			for _, dep := range s.DependsOn {
				want = max(want, level[dep]+1)
			}
			require.Equal(t, want, level[s.ID], "the wave of %s is its dependency level", s.ID)
		}
		waveOf := map[string]int{}
		for k, ids := range d.order {
			require.LessOrEqual(t, len(ids), w.MaxConcurrency)
			for _, id := range ids {
				_, dup := waveOf[id]
				require.False(t, dup, id)
				waveOf[id] = k + 1
			}
		}
		require.Len(t, waveOf, len(w.Steps))
		byID := map[string]*Step{}
		for i := range w.Steps {
			byID[w.Steps[i].ID] = &w.Steps[i]
		}
		for _, s := range w.Steps {
			for _, dep := range s.DependsOn {
				require.Less(t, waveOf[dep], waveOf[s.ID], "%s runs before its dependency %s", s.ID, dep)
			}
		}
		for _, ids := range d.order {
			for x := range ids {
				for y := x + 1; y < len(ids); y++ {
					c, bad := Conflicts(byID[ids[x]], byID[ids[y]])
					require.False(t, bad, c.Reason)
				}
			}
		}
	}
}

// TestDryRunTextCutsLongChains: a chain of 40 steps is 40 waves; the text
// lists the first maxRenderedWaves and counts the rest.
func TestDryRunTextCutsLongChains(t *testing.T) {
	w := &Workflow{}
	for i := range 40 {
		st := Step{ID: fmt.Sprintf("s%d", i), Task: "t"}
		if i > 0 {
			st.DependsOn = []string{fmt.Sprintf("s%d", i-1)}
		}
		w.Steps = append(w.Steps, st)
	}
	d, err := Waves(w)
	require.NoError(t, err)
	require.Equal(t, 40, d.Summary.Waves)
	require.Equal(t, 40, d.Steps[39].Wave)
	text := RenderPlan(&d)
	require.Contains(t, text, "Dry run: 40 steps in 40 waves")
	require.Contains(t, text, fmt.Sprintf("\nWave %d: s%d\n… and %d more waves", maxRenderedWaves, maxRenderedWaves-1, 40-maxRenderedWaves))
}

// TestSerializedWithinAWave: the dry run's text says who waits within a
// wave, naming the other step's wave when it is another.
func TestSerializedWithinAWave(t *testing.T) {
	d, err := Waves(mustParse(t, `{"steps":[{"id":"a","task":"t","write_set":["src/**"]},{"id":"b","task":"t","write_set":["src/**"]},
		{"id":"c","task":"t","depends_on":["x"],"write_set":["src/x.go"]},{"id":"x","task":"t"},{"id":"slow","task":"t"},
		{"id":"d","task":"t","depends_on":["slow"]}],"max_concurrency":2}`))
	require.NoError(t, err)
	require.Equal(t, [][]string{{"a", "b", "x", "slow"}, {"c", "d"}}, d.Waves)
	text := RenderPlan(&d)
	// x and slow have dependents, so they take the two slots first; c,
	// wave 2, starts at the tick a does and writes inside a's set.
	require.Contains(t, text, "Serialized (3 steps held back; each keeps its wave and waits for another step or a slot):\n"+
		"- within wave 1, a waits for a free slot: a was ready but all 2 slots of max_concurrency were taken\n"+
		"- within wave 1, b waits for a free slot: ")
	require.Contains(t, text, "- in wave 2, c runs after a (wave 1): both write: ")
}

func TestSerializedJSON(t *testing.T) {
	d, err := Waves(mustParse(t, `{"max_concurrency":1,"steps":[{"id":"a","task":"t"},{"id":"b","task":"t"}]}`))
	require.NoError(t, err)
	b, err := json.Marshal(d.Serialized)
	require.NoError(t, err)
	require.JSONEq(t, `[{"wave":1,"step":"b","rule":"max_concurrency","reason":"b was ready but all 1 slots of max_concurrency were taken"}]`, string(b))
}

func TestDryRunShowsTheControlFlow(t *testing.T) {
	d, err := Waves(mustParse(t, practiceSpec(t)))
	require.NoError(t, err)
	// issue, commit and summary once; revisit 2 × (plan-review 3 × 3 +
	// split-review 2 × 2 + testability 2 × (write-tests, test-signoff and
	// seam 8 each) + test-review and test-fix 8 each + final-review 3 ×
	// (escalation 2 × (make 8 + diagnose + redesign) + 4 reviews and
	// fixes + cosmetic-fix 8)).
	require.Equal(t, 3+2*(9+4+2*(8+8+8)+8+8+3*(2*(8+1+1)+4+8)), d.MaxRuns)
	require.Len(t, d.Loops, 6)
	require.Equal(t, PlannedLoop{ID: "escalation", Steps: []string{"make", "diagnose", "redesign"}, Within: "final-review", MaxIterations: 2,
		Until: "(make is checkpoint_ready or not write-tests is checkpoint_ready)", OnExhausted: Hold}, d.Loops[4])
	var make PlannedStep
	for _, s := range d.Steps {
		if s.ID == "make" {
			make = s
		}
	}
	require.Equal(t, "escalation", make.Loop)
	require.Equal(t, "split /tasks", make.ForEach)
	require.Equal(t, 2*3*2*8, make.MaxRuns)
	// The first iteration's waves: every step once; final-check waits for
	// the whole escalation loop, commit for the whole revisit loop.
	require.Equal(t, [][]string{{"issue"}, {"plan"}, {"check-plan", "simplify-plan"}, {"split"}, {"check-split"}, {"write-tests"},
		{"test-signoff", "seam"}, {"test-review"}, {"test-fix"}, {"make"}, {"diagnose"}, {"redesign"}, {"final-check", "final-simplify"}, {"test-diagnose", "cosmetic-fix"}, {"test-redo"}, {"commit"}, {"summary"}}, d.Waves)
	text := RenderPlan(&d)
	require.Contains(t, text, "At most 349 step runs")
	// A condition decided per instance says so.
	require.Contains(t, text, "| test-review | read_only | shared | write-tests | – | – | revisit | write-tests /escalate_to_check = true (each instance against the same item's write-tests) | split /tasks (max 8) | 16 |")
	require.Contains(t, text, "- plan-review [plan, check-plan, simplify-plan]: at most 3 iterations, within loop revisit; until check-plan /verdict = \"ACCEPTABLE\" and simplify-plan /verdict = \"ACCEPTABLE\"; stops early when check-plan /findings, simplify-plan /findings all repeat; unresolved: proceed")
	require.Contains(t, text, "| diagnose | read_only | shared | make | – | – | escalation | make status in [partial, failed, needs_orchestrator] | – | 12 |")

	// With its verify entries (practiceSpec drops them for the simulated
	// runtime): the RED check applies only to TESTS_READY reports.
	var practice *Template
	for _, tpl := range builtinTemplates() {
		if tpl.Name == "practice" {
			practice = tpl
		}
	}
	w, err := practice.Instantiate(map[string]any{"issue": "GAL-1"})
	require.NoError(t, err)
	d, err = Waves(w)
	require.NoError(t, err)
	require.Contains(t, RenderPlan(&d), "- write-tests: `go test ./...` (expect fail), only when the payload has /result = \"TESTS_READY\"\n")
}
