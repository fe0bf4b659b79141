package workflows

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

const verdictSchema = `{"type":"object","required":["verdict"],"properties":{"verdict":{"enum":["ACCEPTABLE","NEEDS WORK","BLOCK"]},"findings":{"type":"array","items":{"type":"string"}}}}`

// reports plays each run by label (exact), everything else ready.
func reports(m map[string]string) func(string) childPlan {
	return func(label string) childPlan {
		if r, ok := m[label]; ok {
			return childPlan{dur: 1, report: r}
		}
		return childPlan{dur: 1, report: `{"status":"checkpoint_ready","summary":"` + label + ` done"}`}
	}
}

func ready(payload string) string {
	return `{"status":"checkpoint_ready","summary":"done","payload":` + payload + `}`
}

// rebuiltEquals checks that the Log's events alone give the outcome Run
// returned.
func rebuiltEquals(t *testing.T, sim *simRuntime, out Outcome) {
	t.Helper()
	events, _ := sim.WorkflowEvents()
	raw, err := json.Marshal(events)
	require.NoError(t, err)
	var decoded []WorkflowEvent
	require.NoError(t, json.Unmarshal(raw, &decoded))
	rebuilt := Rebuild(decoded)
	require.NotEmpty(t, rebuilt)
	want, _ := json.Marshal(out)
	got, _ := json.Marshal(rebuilt[len(rebuilt)-1])
	require.JSONEq(t, string(want), string(got))
	// And the plan the run showed last (a client that reopens the session
	// is shown it again, from the Log).
	var last []WorkflowEvent
	for _, ev := range decoded {
		if ev.WorkflowID == out.WorkflowID {
			last = append(last, ev)
		}
	}
	plan, ok := PlanOf(last)
	require.True(t, ok)
	sim.mu.Lock()
	shown := sim.plans[len(sim.plans)-1]
	sim.mu.Unlock()
	require.Equal(t, shown, plan, "the plan rebuilt from the Log is the one the run showed last")
}

func TestConditionsSkipBranchesAndJoinsWaitForAny(t *testing.T) {
	spec := `{"steps":[
		{"id":"review","task":"x","output_schema":` + verdictSchema + `},
		{"id":"accept","task":"x","depends_on":["review"],"when":{"step":"review","path":"/verdict","equals":"ACCEPTABLE"}},
		{"id":"revise","task":"x","depends_on":["review"],"when":{"step":"review","path":"/verdict","in":["NEEDS WORK","BLOCK"]}},
		{"id":"after-revise","task":"x","depends_on":["revise"]},
		{"id":"finish","task":"x","depends_on":["accept","after-revise"],"join":"any"},
		{"id":"both","task":"x","depends_on":["accept","revise"]}]}`
	for _, c := range []struct {
		verdict, took string
		skipped       []string
	}{
		{"ACCEPTABLE", "accept", []string{"revise", "after-revise", "both"}},
		{"NEEDS WORK", "revise", []string{"accept", "both"}},
	} {
		t.Run(c.verdict, func(t *testing.T) {
			out, sim := runSim(t, spec, reports(map[string]string{"review": ready(`{"verdict":"` + c.verdict + `"}`)}))
			require.Equal(t, StatusCompleted, out.Status, out.Output)
			require.Equal(t, c.skipped, out.SkippedSteps)
			require.Contains(t, sim.order, c.took)
			require.Contains(t, sim.order, "finish", "the join runs on the branch taken")
			for _, s := range c.skipped {
				require.NotContains(t, sim.order, s)
			}
			rebuiltEquals(t, sim, out)
		})
	}
	// Every decision is evidence, with the values it saw.
	out, sim := runSim(t, spec, reports(map[string]string{"review": ready(`{"verdict":"BLOCK"}`)}))
	var decided []WorkflowEvent
	for _, ev := range sim.events {
		if ev.Kind == EventConditionDecided {
			decided = append(decided, ev)
		}
	}
	require.Len(t, decided, 2)
	require.Equal(t, "accept", decided[0].Run)
	require.False(t, *decided[0].Result)
	require.Equal(t, []ConditionSeen{{Condition: `review /verdict = "ACCEPTABLE"`, Path: "/verdict", Run: "review", Status: CheckpointReady, Value: json.RawMessage(`"BLOCK"`), Result: false}}, decided[0].Seen)
	require.True(t, *decided[1].Result)
	accept := runOf(out, "accept")
	require.Equal(t, CheckpointSkipped, accept.CheckpointStatus)
	require.Equal(t, `skipped: its condition was false: review /verdict = "ACCEPTABLE" (saw "BLOCK"): false`, accept.SkipReason)
	require.Equal(t, tools.SubagentNotStarted, accept.SubagentStatus)
	require.Contains(t, runOf(out, "both").SkipReason, "accept, which it needs, was skipped")
	require.Len(t, runOf(out, "revise").Conditions, 1, "a run that went ahead keeps what its condition saw")
	require.Contains(t, out.Output, "| accept | default | – | not_started | skipped |")
	require.Contains(t, out.Output, "COMPLETED — 4 of 6 steps checkpoint_ready, 2 skipped")
}

func TestAFailureBranchRunsOnlyWhenItsDependencyIsNotReady(t *testing.T) {
	spec := `{"steps":[
		{"id":"implement","task":"x"},
		{"id":"escalate","task":"x","depends_on":["implement"],"when":{"step":"implement","status":["partial","needs_orchestrator"]}},
		{"id":"review","task":"x","depends_on":["implement"]}]}`
	out, sim := runSim(t, spec, reports(nil))
	require.Equal(t, StatusCompleted, out.Status)
	require.Equal(t, []string{"escalate"}, out.SkippedSteps)
	require.NotContains(t, sim.order, "escalate")

	out, sim = runSim(t, spec, reports(map[string]string{"implement": `{"status":"partial","summary":"stuck on the parser"}`}))
	require.Contains(t, sim.order, "escalate")
	require.Equal(t, []string{"review"}, out.HeldSteps, "the branch runs; the ordinary dependent is held")
	require.Contains(t, sim.prompts["escalate"], "each with its status: you run because your condition tests it")
	require.Contains(t, sim.prompts["escalate"], "### implement (partial")
	require.Equal(t, StatusPartial, out.Status, "implement is still partial: the outcome says so")

	// Failed is not in the branch's list: the branch is skipped, not held.
	out, _ = runSim(t, spec, reports(map[string]string{"implement": `{"status":"failed","summary":"no"}`}))
	require.Equal(t, []string{"escalate"}, out.SkippedSteps)
}

func TestFailFastLetsFailureBranchesAndLoopsHandleFailures(t *testing.T) {
	spec := `{"failure_policy":"fail_fast","steps":[
		{"id":"implement","task":"x"},
		{"id":"escalate","task":"x","depends_on":["implement"],"when":{"step":"implement","status":["partial"]}},
		{"id":"other","task":"x","depends_on":["escalate"]}]}`
	out, sim := runSim(t, spec, reports(map[string]string{"implement": `{"status":"partial","summary":"stuck"}`}))
	require.Empty(t, out.StoppedBy, "a failure a branch handles does not stop the workflow")
	require.Contains(t, sim.order, "other")

	loop := `{"failure_policy":"fail_fast","steps":[{"id":"try","task":"x"},{"id":"after","task":"x","depends_on":["try"]}],
		"loops":[{"id":"retry","steps":["try"],"max_iterations":3}]}`
	out, sim = runSim(t, loop, reports(map[string]string{"try#1": `{"status":"failed","summary":"flaky"}`}))
	require.Empty(t, out.StoppedBy, "a loop answers its runs' failures")
	require.Equal(t, []string{"try#1", "try#2", "after"}, sim.order)
	require.Equal(t, StatusCompleted, out.Status)

	out, _ = runSim(t, loop, reports(map[string]string{"try#1": `{"status":"failed","summary":"flaky"}`, "try#2": `{"status":"failed","summary":"flaky"}`, "try#3": `{"status":"failed","summary":"flaky"}`}))
	require.Equal(t, StoppedFailFast, out.StoppedBy, "a loop that ends unresolved and holds stops a fail_fast workflow")
	require.Equal(t, []LoopOutcome{{Loop: "retry", Run: "retry", Iterations: 3, MaxIterations: 3, State: LoopExhausted, OnExhausted: Hold,
		Blockers: []string{"try#3: failed"}}}, out.Loops)
}

func TestLoopsRepeatUntilAndEndHonestly(t *testing.T) {
	spec := `{"steps":[
		{"id":"draft","task":"Write the plan.","write_set":["plan.md"]},
		{"id":"review","task":"Review the plan.","depends_on":["draft"],"output_schema":` + verdictSchema + `},
		{"id":"ship","task":"Ship it.","depends_on":["review"]}],
		"loops":[{"id":"plan","steps":["draft","review"],"max_iterations":3,
			"until":{"step":"review","path":"/verdict","equals":"ACCEPTABLE"},"converge":{"step":"review","path":"/findings"}%s}]}`
	needs := func(f ...string) string {
		b, _ := json.Marshal(f)
		return ready(`{"verdict":"NEEDS WORK","findings":` + string(b) + `}`)
	}
	ok := ready(`{"verdict":"ACCEPTABLE","findings":[]}`)

	t.Run("two iterations, then satisfied", func(t *testing.T) {
		out, sim := runSim(t, strings.Replace(spec, "%s", "", 1), reports(map[string]string{"review#1": needs("name the owner"), "review#2": ok}))
		require.Equal(t, []string{"draft#1", "review#1", "draft#2", "review#2", "ship"}, sim.order)
		require.Equal(t, StatusCompleted, out.Status)
		require.Equal(t, []LoopOutcome{{Loop: "plan", Run: "plan", Iterations: 2, MaxIterations: 3, State: LoopSatisfied, OnExhausted: Hold, Blockers: []string{}}}, out.Loops)
		require.Equal(t, []int{2}, runOf(out, "review#2").Iteration)
		require.Equal(t, "plan", runOf(out, "review#2").Loop)
		require.Contains(t, sim.prompts["draft#2"], "This is iteration 2 of at most 3 of loop \"plan\".")
		require.Contains(t, sim.prompts["draft#2"], "name the owner")
		require.Contains(t, sim.prompts["ship"], "### review#2 (checkpoint_ready")
		require.NotContains(t, sim.prompts["ship"], "review#1", "a dependent outside sees the last iteration")
		kinds := sim.kinds()
		require.Contains(t, kinds, "iteration_started:")
		require.Contains(t, out.Output, "- plan: satisfied at iteration 2 of 3")
		require.Contains(t, out.Output, "COMPLETED — 3 of 3 steps checkpoint_ready; 2 runs of earlier iterations")
		rebuiltEquals(t, sim, out)
	})
	t.Run("the same findings twice: converged, held", func(t *testing.T) {
		out, sim := runSim(t, strings.Replace(spec, "%s", "", 1), reports(map[string]string{"review#1": needs("a", "b"), "review#2": needs("b", "a")}))
		require.Equal(t, []string{"draft#1", "review#1", "draft#2", "review#2"}, sim.order)
		require.Equal(t, StatusPartial, out.Status, "unresolved and held: never completed")
		require.Equal(t, LoopConverged, out.Loops[0].State)
		require.Equal(t, []string{"b", "a"}, out.Loops[0].Blockers)
		require.Equal(t, []string{"loop plan"}, runOf(out, "ship").BlockedBy)
		require.Contains(t, out.SeamObligations, "loop plan (converged): a")
		rebuiltEquals(t, sim, out)
	})
	t.Run("a converge list: converged only when every value repeats", func(t *testing.T) {
		both := `{"steps":[
			{"id":"draft","task":"Write the plan.","write_set":["plan.md"]},
			{"id":"review","task":"Review the plan.","depends_on":["draft"],"output_schema":` + verdictSchema + `},
			{"id":"simplify","task":"Simplify the plan.","depends_on":["draft"],"output_schema":` + verdictSchema + `},
			{"id":"ship","task":"Ship it.","depends_on":["review","simplify"]}],
			"loops":[{"id":"plan","steps":["draft","review","simplify"],"max_iterations":3,"on_exhausted":"proceed",
				"until":{"step":"review","path":"/verdict","equals":"ACCEPTABLE"},
				"converge":[{"step":"review","path":"/findings"},{"step":"simplify","path":"/findings"}]}]}`
		// review repeats itself from the start; simplify changes once,
		// then repeats: converged at 3, not 2.
		out, sim := runSim(t, both, reports(map[string]string{
			"review#1": needs("a"), "review#2": needs("a"), "review#3": needs("a"),
			"simplify#1": needs("x"), "simplify#2": needs("y"), "simplify#3": needs("y"),
		}))
		require.Equal(t, StatusCompleted, out.Status, out.Output)
		require.Equal(t, LoopConverged, out.Loops[0].State)
		require.Equal(t, 3, out.Loops[0].Iterations, "one reviewer repeating while the other changes is not convergence")
		// The until waits for review alone: simplify is advisory, and its
		// findings are compared, not blockers.
		require.Equal(t, []string{"review: a"}, out.Loops[0].Blockers)
		var values [][]ConvergeSeen
		for _, ev := range sim.events {
			if ev.Kind == EventIterationFinished {
				require.Nil(t, ev.Value, "a list records each value in values")
				values = append(values, ev.Values)
			}
		}
		require.Equal(t, [][]ConvergeSeen{
			{{Converge: "review /findings", Run: "review#1", Value: json.RawMessage(`["a"]`)}, {Converge: "simplify /findings", Run: "simplify#1", Value: json.RawMessage(`["x"]`)}},
			{{Converge: "review /findings", Run: "review#2", Value: json.RawMessage(`["a"]`), Same: true}, {Converge: "simplify /findings", Run: "simplify#2", Value: json.RawMessage(`["y"]`)}},
			{{Converge: "review /findings", Run: "review#3", Value: json.RawMessage(`["a"]`), Same: true}, {Converge: "simplify /findings", Run: "simplify#3", Value: json.RawMessage(`["y"]`), Same: true}},
		}, values)
		require.Contains(t, out.Output, "- plan: converged at iteration 3 of 3 → proceeding with 1 blocker: review: a")
		rebuiltEquals(t, sim, out)

		// The other way round, and the dry run shows both values.
		out, _ = runSim(t, both, reports(map[string]string{
			"review#1": needs("a"), "review#2": needs("b"), "simplify#1": needs("x"), "simplify#2": needs("x"), "review#3": ok,
		}))
		require.Equal(t, LoopSatisfied, out.Loops[0].State)
		require.Equal(t, 3, out.Loops[0].Iterations)
		plan, err := Waves(mustParse(t, both))
		require.NoError(t, err)
		require.Equal(t, "review /findings, simplify /findings", plan.Loops[0].Converge)
	})
	t.Run("exhausted at 3, proceeding with its blockers", func(t *testing.T) {
		out, sim := runSim(t, strings.Replace(spec, "%s", `,"on_exhausted":"proceed"`, 1),
			reports(map[string]string{"review#1": needs("a"), "review#2": needs("b"), "review#3": needs("c", "d")}))
		require.Equal(t, []string{"draft#1", "review#1", "draft#2", "review#2", "draft#3", "review#3", "ship"}, sim.order)
		require.Equal(t, StatusCompleted, out.Status)
		require.Equal(t, LoopExhausted, out.Loops[0].State)
		require.Equal(t, []string{"c", "d"}, out.Loops[0].Blockers)
		require.Equal(t, []string{"loop plan (exhausted): c", "loop plan (exhausted): d"}, out.SeamObligations)
		require.Equal(t, []string{"loop plan ended exhausted after 3 of 3 iterations; its dependents proceeded with 2 unresolved blockers: c; d"}, out.KnownLimitations)
		require.Contains(t, sim.prompts["ship"], "- c\n- d\n")
		require.Contains(t, out.Output, "- plan: exhausted after 3 of 3 iterations → proceeding with 2 blockers: c; d")
		rebuiltEquals(t, sim, out)
	})
	t.Run("a failed iteration is retried within the bound", func(t *testing.T) {
		out, sim := runSim(t, strings.Replace(spec, "%s", "", 1), reports(map[string]string{"draft#1": `{"status":"failed","summary":"no"}`, "review#2": ok}))
		require.Equal(t, []string{"draft#1", "draft#2", "review#2", "ship"}, sim.order)
		require.Equal(t, CheckpointHeld, runOf(out, "review#1").CheckpointStatus)
		require.Equal(t, StatusCompleted, out.Status, "the failed iteration is history")
	})
	t.Run("an isolated writer's iterations build on each other", func(t *testing.T) {
		sim := newSim(func(label string) childPlan {
			p := reports(map[string]string{"review#1": needs("x"), "review#2": ok})(label)
			if strings.HasPrefix(label, "draft") {
				p.changes = &tools.FileChanges{Changed: []string{"plan.md"}}
			}
			return p
		})
		simRun(t, context.Background(), sim, mustParse(t, strings.Replace(spec, "%s", "", 1)), RunOptions{WorkflowID: "wf", Now: fixedClock(), waiting: sim.waiting})
		inherit := sim.reqs["draft#2"].Inherit
		require.Len(t, inherit, 1)
		require.Equal(t, "draft#1", inherit[0].StepID)
		require.Equal(t, []string{"draft#1", "draft#2"}, []string{sim.reqs["ship"].Inherit[0].StepID, sim.reqs["ship"].Inherit[1].StepID})
	})
}

func TestFanOutOverAPayloadArray(t *testing.T) {
	const tasks = `{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"object","properties":{"title":{"type":"string"},"files":{"type":"array","items":{"type":"string"}}}}}}}`
	spec := `{"steps":[
		{"id":"split","task":"Split the work.","output_schema":` + tasks + `},
		{"id":"make","task":"Do ${item.title} (#${index}); touch only ${item.files}.","depends_on":["split"],
		 "for_each":{"step":"split","path":"/tasks","max_items":3},"write_set":["${item.files}"]},
		{"id":"review","task":"Review.","depends_on":["make"]}]}`
	split := func(items string) map[string]string {
		return map[string]string{"split": ready(`{"tasks":` + items + `}`)}
	}

	t.Run("one instance per item, each held to its own files", func(t *testing.T) {
		out, sim := runSim(t, spec, reports(split(`[{"title":"parser","files":["src/parse.go"]},{"title":"lexer","files":["src/lex.go","src/lex/"]},{"title":"docs","files":["docs/*.md"]}]`)))
		require.Equal(t, StatusCompleted, out.Status, out.Output)
		require.Equal(t, []string{"split", "make[1]", "make[2]", "make[3]", "review"}, sim.order)
		require.Equal(t, [][]string{{"split"}, {"make[1]", "make[2]", "make[3]"}, {"review"}}, sim.byStart(), "disjoint files: the instances run together")
		require.Equal(t, []string{"src/parse.go"}, sim.reqs["make[1]"].WriteSet)
		require.Equal(t, []string{"src/lex.go", "src/lex/**"}, sim.reqs["make[2]"].WriteSet)
		require.Equal(t, []string{`docs/\*.md`}, sim.reqs["make[3]"].WriteSet, "an item's path is literal: its glob cannot widen the write set")
		may := sim.reqs["make[1]"].MayWrite
		require.True(t, may("src/parse.go"))
		require.False(t, may("src/lex.go"))
		require.False(t, sim.reqs["make[3]"].MayWrite("docs/README.md"))
		require.True(t, strings.HasPrefix(sim.prompts["make[2]"], "Do lexer (#2); touch only src/lex.go, src/lex/."))
		require.Contains(t, sim.prompts["make[2]"], `You are instance 2 of 3 of step "make", one per item of split /tasks; your item: {"files":["src/lex.go","src/lex/"],"title":"lexer"}`)
		for _, r := range []string{"make[1]", "make[2]", "make[3]"} {
			require.Contains(t, sim.prompts["review"], "### "+r+" (checkpoint_ready", "the join receives every instance")
		}
		require.Equal(t, 3, runOf(out, "make[3]").Item)
		rebuiltEquals(t, sim, out)
	})
	t.Run("overlapping instances serialize", func(t *testing.T) {
		_, sim := runSim(t, spec, reports(split(`[{"title":"a","files":["src/x.go"]},{"title":"b","files":["src/x.go"]}]`)))
		require.Equal(t, [][]string{{"split"}, {"make[1]"}, {"make[2]"}, {"review"}}, sim.byStart())
	})
	t.Run("an instance that fails holds the join", func(t *testing.T) {
		m := split(`[{"title":"a","files":["a.go"]},{"title":"b","files":["b.go"]}]`)
		m["make[2]"] = `{"status":"failed","summary":"no"}`
		out, _ := runSim(t, spec, reports(m))
		require.Equal(t, []string{"review"}, out.HeldSteps)
		require.Equal(t, []string{"make"}, runOf(out, "review").BlockedBy)
		require.Equal(t, []string{"make[2]"}, out.FailedSteps)
	})
	// A schema that does not say what /tasks is: only the run can tell.
	loose := strings.Replace(spec, tasks, `{"type":"object"}`, 1)
	for _, c := range []struct{ name, spec, items, why string }{
		{"more items than the cap", spec, `[{"files":["a"]},{"files":["b"]},{"files":["c"]},{"files":["d"]}]`, "the payload of split holds 4 items at /tasks, more than for_each.max_items (3); nothing was started"},
		{"not an array", loose, `{"files":["a"]}`, "the payload of split holds object at /tasks (for_each.path), not an array"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, sim := runSim(t, c.spec, reports(split(c.items)))
			require.Equal(t, []string{"split"}, sim.order, "no instance starts")
			m := runOf(out, "make")
			require.Equal(t, CheckpointFailed, m.CheckpointStatus)
			require.Equal(t, "not started: "+c.why, m.Summary)
			require.Equal(t, []string{"review"}, out.HeldSteps, "the rest goes on under the failure policy")
			rebuiltEquals(t, sim, out)
		})
	}
	t.Run("no items: skipped", func(t *testing.T) {
		out, _ := runSim(t, spec, reports(split(`[]`)))
		require.Equal(t, []string{"make", "review"}, out.SkippedSteps)
		require.Equal(t, StatusCompleted, out.Status)
	})
	t.Run("an item's leading ./ is read as models mean it", func(t *testing.T) {
		out, sim := runSim(t, spec, reports(split(`[{"title":"a","files":["./src/a.go","./docs/"]}]`)))
		require.Equal(t, StatusCompleted, out.Status, out.Output)
		require.Equal(t, []string{"src/a.go", "docs/**"}, sim.reqs["make[1]"].WriteSet)
	})
	t.Run("an item that climbs out of the workspace fails its instance only", func(t *testing.T) {
		out, sim := runSim(t, spec, reports(split(`[{"title":"a","files":["../../etc/passwd"]},{"title":"b","files":["ok.go"]}]`)))
		require.Equal(t, []string{"split", "make[2]"}, sim.order)
		bad := runOf(out, "make[1]")
		require.Equal(t, CheckpointFailed, bad.CheckpointStatus)
		require.Contains(t, bad.Summary, `item 1: its write_set pattern "../../etc/passwd" is invalid: it climbs out of the workspace`)
		rebuiltEquals(t, sim, out)
	})
	// "./**" would be read as "**" and "src/" as "src/**": a value that is
	// "." or empty, or has such a segment, would widen the pattern.
	inDir := strings.Replace(spec, `"write_set":["${item.files}"]`, `"write_set":["${item.title}/**"]`, 1)
	// Models write a folder with its trailing "/": before a "/" of the
	// pattern it is the folder; at the end of one, the folder's contents
	// (a trailing "/" reads as "/**"). A leading "./" is read as meant.
	atEnd := strings.Replace(spec, `"write_set":["${item.files}"]`, `"write_set":["src/${item.title}"]`, 1)
	for _, c := range []struct{ name, spec, title, want string }{
		{"a folder with its trailing / before /**", inDir, "TODO/", "TODO/**"},
		{"a nested folder with its trailing / before /**", inDir, "docs/TODO/", "docs/TODO/**"},
		{"a folder with ./ and a trailing / before /**", inDir, "./TODO/", "TODO/**"},
		{"a folder without its trailing / before /**", inDir, "TODO", "TODO/**"},
		{"a folder with its trailing / at the end", atEnd, "x/", "src/x/**"},
		{"a folder with ./ inside a pattern", atEnd, "./x", "src/x"},
		{"a folder with ./ and its trailing / inside a pattern", atEnd, "./x/", "src/x/**"},
	} {
		t.Run(c.name+" is the folder", func(t *testing.T) {
			out, sim := runSim(t, c.spec, reports(split(`[{"title":"`+c.title+`","files":["a.go"]}]`)))
			require.Equal(t, StatusCompleted, out.Status, out.Output)
			require.Equal(t, []string{c.want}, sim.reqs["make[1]"].WriteSet)
		})
	}
	for _, c := range []struct{ name, spec, items, why string }{
		{"a value with two trailing /", inDir, `[{"title":"TODO//","files":["a.go"]},{"title":"b","files":["b.go"]}]`, `binds ${item.title} to "TODO//", which has an empty or "." segment`},
		{"a value that is / alone", inDir, `[{"title":"/","files":["a.go"]},{"title":"b","files":["b.go"]}]`, `binds ${item.title} to "/", which has an empty or "." segment`},
		{"an element that is .", spec, `[{"title":"a","files":["."]},{"title":"b","files":["ok.go"]}]`, `item 1: write_set binds ${item.files}, whose element "." has an empty or "." segment`},
		{"an element that is ./", spec, `[{"title":"a","files":["./"]},{"title":"b","files":["ok.go"]}]`, `whose element "./" is empty`},
		{"an element that is ./.", spec, `[{"title":"a","files":["./."]},{"title":"b","files":["ok.go"]}]`, `whose element "./." has an empty or "." segment`},
		{"an element with a space before its .", spec, `[{"title":"a","files":[" ."]},{"title":"b","files":["ok.go"]}]`, `whose element " ." begins or ends with a space`},
		{"an empty element", spec, `[{"title":"a","files":[""]},{"title":"b","files":["ok.go"]}]`, `whose element "" is empty`},
		{"a value that is . inside a pattern", inDir, `[{"title":".","files":["a.go"]},{"title":"b","files":["b.go"]}]`, `item 1: write_set pattern "${item.title}/**" binds ${item.title} to ".", which has an empty or "." segment`},
		{"a value with a . segment", inDir, `[{"title":"src/./x","files":["a.go"]},{"title":"b","files":["b.go"]}]`, `binds ${item.title} to "src/./x", which has an empty or "." segment`},
		{"an empty value inside a pattern", inDir, `[{"title":"","files":["a.go"]},{"title":"b","files":["b.go"]}]`, `binds ${item.title} to "", which is empty`},
		{"a space and . inside a pattern (trimmed, it would be ./**)", inDir, `[{"title":" .","files":["a.go"]},{"title":"b","files":["b.go"]}]`, `binds ${item.title} to " .", which begins or ends with a space`},
		{"a no-break space and . inside a pattern", inDir, `[{"title":"\u00a0.","files":["a.go"]},{"title":"b","files":["b.go"]}]`, "which begins or ends with a space"},
		{"a space alone inside a pattern", inDir, `[{"title":" ","files":["a.go"]},{"title":"b","files":["b.go"]}]`, `binds ${item.title} to " ", which begins or ends with a space`},
	} {
		t.Run(c.name+" fails its instance, never widening its write set", func(t *testing.T) {
			out, sim := runSim(t, c.spec, reports(split(c.items)))
			require.Equal(t, []string{"split", "make[2]"}, sim.order, out.Output)
			bad := runOf(out, "make[1]")
			require.Equal(t, CheckpointFailed, bad.CheckpointStatus)
			require.Contains(t, bad.Summary, c.why)
			rebuiltEquals(t, sim, out)
		})
	}
}

func TestAStoppedWorkflowHoldsWhatItsLoopsWouldHaveRun(t *testing.T) {
	w := mustParse(t, `{"timeout_ms":30,"steps":[{"id":"a","task":"x"},{"id":"b","task":"x","depends_on":["a"]},{"id":"c","task":"x","depends_on":["b"]}],
		"loops":[{"id":"l","steps":["a","b"],"max_iterations":3}]}`)
	sim := newSim(func(label string) childPlan {
		if label == "b#2" {
			return childPlan{hang: true}
		}
		if label == "b#1" {
			return childPlan{dur: 1, report: `{"status":"failed","summary":"flaky"}`}
		}
		return childPlan{dur: 1}
	})
	out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-t", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StoppedTimeout, out.StoppedBy)
	require.Equal(t, []LoopOutcome{{Loop: "l", Run: "l", Iterations: 2, MaxIterations: 3, State: LoopStopped, OnExhausted: Hold, Blockers: []string{}}}, out.Loops)
	require.Equal(t, []string{"b#2"}, out.TimeoutSteps)
	require.Equal(t, []string{"c"}, out.HeldSteps)
	rebuiltEquals(t, sim, out)
}

func TestRebuildOfAnInterruptedLoop(t *testing.T) {
	spec := `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x","depends_on":["a"]},{"id":"c","task":"x","depends_on":["b"]}],
		"loops":[{"id":"l","steps":["a","b"],"max_iterations":3}]}`
	_, sim := runSim(t, spec, reports(map[string]string{"b#1": `{"status":"failed","summary":"flaky"}`}))
	// The process died while a#2 ran: its decision and everything after
	// never reached the Log.
	cut := undecided(sim.events, "a#2")
	o := Rebuild(cut)[0]
	require.Equal(t, StoppedInterrupted, o.StoppedBy)
	require.Equal(t, tools.SubagentDetached, runOf(o, "a#2").SubagentStatus)
	require.Equal(t, CheckpointHeld, runOf(o, "c").CheckpointStatus)
	require.Equal(t, []LoopOutcome{{Loop: "l", Run: "l", Iterations: 2, MaxIterations: 3, State: LoopInterrupted, OnExhausted: Hold, Blockers: []string{}}}, o.Loops)
	require.Contains(t, o.Output, "- l: iteration 2 of 3, interrupted")
}

func TestResumeContinuesALoopWhereItStopped(t *testing.T) {
	spec := `{"steps":[
		{"id":"draft","task":"x"},
		{"id":"review","task":"x","depends_on":["draft"],"output_schema":` + verdictSchema + `},
		{"id":"ship","task":"x","depends_on":["review"]}],
		"loops":[{"id":"plan","steps":["draft","review"],"max_iterations":3,"until":{"step":"review","path":"/verdict","equals":"ACCEPTABLE"}}]}`
	plays := reports(map[string]string{
		"review#1": ready(`{"verdict":"NEEDS WORK","findings":["x"]}`),
		"review#2": ready(`{"verdict":"ACCEPTABLE"}`),
	})
	_, first := runSim(t, spec, plays)
	// Killed while review#2 ran: draft#2 was decided, nothing after it.
	var cut []WorkflowEvent
	for _, ev := range first.events {
		cut = append(cut, ev)
		if ev.Kind == EventStepScheduled && ev.Run == "review#2" {
			break
		}
	}
	sim := newSim(plays)
	sim.events = cut
	w := mustParse(t, spec)
	w.ResumeFrom = "wf-test"
	out := simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-2", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, []string{"review#2", "ship"}, sim.order, "no ready run and no finished iteration runs again")
	require.Equal(t, StatusCompleted, out.Status)
	for _, r := range []string{"draft#1", "review#1", "draft#2"} {
		require.Equal(t, "wf-test", runOf(out, r).ReusedFrom, r)
	}
	require.Equal(t, LoopSatisfied, out.Loops[0].State)
	require.Equal(t, 2, out.Loops[0].Iterations)
	rebuiltEquals(t, sim, out)

	// A failed run in an iteration that ended is history, reused as it
	// was; the same failure at the workflow's level is retried.
	retry := `{"steps":[{"id":"try","task":"x"},{"id":"then","task":"x"}],"loops":[{"id":"l","steps":["try"],"max_iterations":2}]}`
	flaky := reports(map[string]string{"try#1": `{"status":"failed","summary":"flaky"}`, "then": `{"status":"failed","summary":"flaky"}`})
	_, first = runSim(t, retry, flaky)
	sim = newSim(reports(nil))
	sim.events = first.events
	w = mustParse(t, retry)
	w.ResumeFrom = "wf-test"
	out = simRun(t, context.Background(), sim, w, RunOptions{WorkflowID: "wf-3", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, []string{"then"}, sim.order)
	require.Equal(t, CheckpointFailed, runOf(out, "try#1").CheckpointStatus)
	require.Equal(t, StatusCompleted, out.Status)
}

// A skip reason says what a payload test found: nothing at its path is
// said as such, not as the run's status (`write-tests /escalate_to_check
// = true (saw checkpoint_ready)` read as if that were the value).
func TestASkipReasonSaysAPathHadNoValue(t *testing.T) {
	spec := `{"steps":[
		{"id":"review","task":"x","output_schema":{"type":"object","properties":{"verdict":{"type":"string"},"escalate":{"type":"boolean"}}}},
		{"id":"escalated","task":"x","depends_on":["review"],"when":{"step":"review","path":"/escalate","equals":true}},
		{"id":"mixed","task":"x","depends_on":["review"],"when":{"step":"review","status":["checkpoint_ready"],"path":"/escalate","exists":true}},
		{"id":"other","task":"x","depends_on":["review"],"when":{"step":"review","path":"/verdict","equals":"BLOCK"}}]}`
	out, sim := runSim(t, spec, reports(map[string]string{"review": ready(`{"verdict":"ACCEPTABLE"}`)}))
	require.Equal(t, `skipped: its condition was false: review /escalate = true (saw nothing at /escalate; review is checkpoint_ready): false`, runOf(out, "escalated").SkipReason)
	require.Equal(t, `skipped: its condition was false: review status in [checkpoint_ready] and /escalate exists (saw nothing at /escalate; review is checkpoint_ready): false`, runOf(out, "mixed").SkipReason)
	require.Equal(t, `skipped: its condition was false: review /verdict = "BLOCK" (saw "ACCEPTABLE"): false`, runOf(out, "other").SkipReason)
	rebuiltEquals(t, sim, out)
}

// What a test looked at is recorded as it is (ConditionSeen.Path), not
// read back from the condition's text. A Log written before Path was
// recorded still rebuilds the same outcome, each test with its path.
func TestAConditionsPathIsRecordedAndOldLogsStillRead(t *testing.T) {
	spec := `{"steps":[
		{"id":"review","task":"x","output_schema":{"type":"object","properties":{"verdict":{"type":"string"},"escalate":{"type":"boolean"}}}},
		{"id":"escalated","task":"x","depends_on":["review"],"when":{"step":"review","path":"/escalate","equals":true}},
		{"id":"plain","task":"x","depends_on":["review"],"when":{"step":"review","status":["failed"]}}]}`
	out, sim := runSim(t, spec, reports(map[string]string{"review": ready(`{"verdict":"ACCEPTABLE"}`)}))
	require.Equal(t, "/escalate", runOf(out, "escalated").Conditions[0].Path)
	require.Empty(t, runOf(out, "plain").Conditions[0].Path, "a test of a status alone has no path")
	events, _ := sim.WorkflowEvents()
	raw, err := json.Marshal(events)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"path":"/escalate"`)
	old := strings.ReplaceAll(string(raw), `"path":"/escalate",`, "")
	require.NotContains(t, old, `"path":"/escalate"`)
	var decoded []WorkflowEvent
	require.NoError(t, json.Unmarshal([]byte(old), &decoded))
	want, _ := json.Marshal(out)
	got, _ := json.Marshal(Rebuild(decoded)[0])
	require.JSONEq(t, string(want), string(got), "an old Log's outcome, paths and all")
}

// A loop that ends unresolved and holds its dependents names itself once
// among what they wait for, and the next actions say what would change
// that: a resume_from run reuses the loop's iterations and decides the
// same, so "run only what is left" would hold them again.
func TestAHoldingLoopsNextActionIsADecision(t *testing.T) {
	spec := `{"steps":[
		{"id":"draft","task":"Write the plan.","write_set":["plan.md"]},
		{"id":"review","task":"Review the plan.","depends_on":["draft"],"output_schema":` + verdictSchema + `},
		{"id":"ship","task":"Ship it.","depends_on":["draft","review"]},
		{"id":"other","task":"x"},
		{"id":"after-other","task":"x","depends_on":["other"]}],
		"loops":[{"id":"plan","steps":["draft","review"],"max_iterations":2,
			"until":{"step":"review","path":"/verdict","equals":"ACCEPTABLE"}}]}`
	needs := ready(`{"verdict":"NEEDS WORK","findings":["a"]}`)
	out, sim := runSim(t, spec, reports(map[string]string{"review#1": needs, "review#2": needs}))
	require.Equal(t, StatusPartial, out.Status, out.Output)
	require.Equal(t, LoopExhausted, out.Loops[0].State)
	require.Equal(t, []string{"loop plan"}, runOf(out, "ship").BlockedBy, "two of its dependencies are the one loop")
	require.Equal(t, "not started: its dependencies [loop plan] did not become checkpoint_ready", runOf(out, "ship").Summary)
	var actions []string
	for _, a := range out.SafeNextActions {
		actions = append(actions, a.Action)
		if a.Action == "rerun_held_steps" {
			t.Fatalf("a held loop's dependents are not rerun by resuming: %+v", a)
		}
	}
	require.Equal(t, []string{"ask_user", "abort"}, actions)
	ask := out.SafeNextActions[0]
	require.Equal(t, map[string]string{"resume_from": out.WorkflowID}, ask.Args)
	require.Equal(t, `loop plan ended exhausted after 2 of 2 iterations and holds ship (on_exhausted: hold): a resume_from run reuses its iterations and ends it the same way; raise its max_iterations (it goes on with iteration 3) or set its on_exhausted to proceed (its dependents run, told its blockers), then call run_workflow again with resume_from`, ask.Reason)
	rebuiltEquals(t, sim, out)

	// A step held by something else is still rerun.
	out, _ = runSim(t, spec, func(label string) childPlan {
		switch label {
		case "review#1", "review#2":
			return childPlan{dur: 1, report: needs}
		case "other":
			return childPlan{dur: 1, report: `{"status":"failed","summary":"no"}`}
		}
		return childPlan{dur: 1, report: `{"status":"checkpoint_ready","summary":"ok"}`}
	})
	actions = nil
	for _, a := range out.SafeNextActions {
		actions = append(actions, a.Action)
		if a.Action == "rerun_held_steps" {
			require.Equal(t, []string{"after-other"}, a.StepIDs)
		}
	}
	require.Equal(t, []string{"retry_failed_steps", "rerun_held_steps", "ask_user", "abort"}, actions)
}

// splitFanOutSpec fans make out over split's tasks, one at a time, and
// ends with end.
const splitFanOutSpec = `{"max_concurrency":1,"steps":[
	{"id":"split","task":"x","output_schema":{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"string"}}}}},
	{"id":"make","task":"${item}","depends_on":["split"],"for_each":{"step":"split","path":"/tasks"}},
	{"id":"end","task":"x","depends_on":["make"]}]}`

// A run that ended mid fan-out (kill -9) shows every instance its fan_out
// event announced: those never started are held (interrupted), not left
// out of the outcome and of pixir inspect.
func TestRebuildOfAnInterruptedFanOutHoldsTheInstancesNotStarted(t *testing.T) {
	_, sim := runSim(t, splitFanOutSpec, reports(map[string]string{"split": ready(`{"tasks":["a","b","c"]}`)}))
	// The process died while make[2] ran.
	cut := undecided(sim.events, "make[2]")
	o := Rebuild(cut)[0]
	require.Equal(t, StoppedInterrupted, o.StoppedBy)
	runs := runStatuses(o)
	require.Equal(t, []string{"split checkpoint_ready", "make[1] checkpoint_ready", "make[2] failed", "make[3] held", "end held"}, runs)
	require.Equal(t, 3, runOf(o, "make[3]").Item)
	require.Equal(t, StoppedInterrupted, runOf(o, "make[3]").HeldReason)
	require.Equal(t, 2, o.Summary.HeldSteps)
}

// A composite condition's skip reason says the condition as written: its
// leaves alone (one false, one true) hide the any and the not that made
// it false.
func TestASkipReasonOfACompositeConditionSaysIt(t *testing.T) {
	spec := `{"steps":[
		{"id":"r","task":"x","output_schema":` + verdictSchema + `},
		{"id":"c","task":"x","depends_on":["r"],"when":{"any":[{"step":"r","path":"/verdict","equals":"BLOCK"},{"not":{"step":"r","path":"/findings","contains":"y"}}]}},
		{"id":"l","task":"x","depends_on":["r"],"when":[{"step":"r","path":"/verdict","equals":"BLOCK"}]}]}`
	out, sim := runSim(t, spec, reports(map[string]string{"r": ready(`{"verdict":"ACCEPTABLE","findings":["y"]}`)}))
	require.Equal(t, `skipped: its condition (r /verdict = "BLOCK" or not r /findings contains "y") was false: r /verdict = "BLOCK" (saw "ACCEPTABLE"): false; r /findings contains "y" (saw ["y"]): true`, runOf(out, "c").SkipReason)
	require.Equal(t, `skipped: its condition was false: r /verdict = "BLOCK" (saw "ACCEPTABLE"): false`, runOf(out, "l").SkipReason, "a leaf says itself")
	rebuiltEquals(t, sim, out)
}

// Killed right after its fan_out event, before any instance was
// scheduled: the step was reached (its instances are held), so it is not
// also listed as a step the run never reached (make held beside
// make[1..3], 1/6 where the run had 5).
func TestRebuildOfAFanOutKilledBeforeItsInstancesListsTheStepOnce(t *testing.T) {
	_, sim := runSim(t, splitFanOutSpec, reports(map[string]string{"split": ready(`{"tasks":["a","b","c"]}`)}))
	var cut []WorkflowEvent
	for _, ev := range sim.events {
		cut = append(cut, ev)
		if ev.Kind == EventFanOut {
			break
		}
	}
	require.Equal(t, EventFanOut, cut[len(cut)-1].Kind)
	o := Rebuild(cut)[0]
	runs := runStatuses(o)
	require.Equal(t, []string{"split checkpoint_ready", "make[1] held", "make[2] held", "make[3] held", "end held"}, runs)
	require.Equal(t, 4, o.Summary.HeldSteps)
}

// undecided are a run's events up to the checkpoint_decided of run, as a
// process killed while run ran left them in its Log.
func undecided(events []WorkflowEvent, run string) []WorkflowEvent {
	for i, ev := range events {
		if ev.Kind == EventCheckpointDecided && ev.Run == run {
			return events[:i:i]
		}
	}
	return events
}

// runStatuses are an outcome's step runs and their checkpoint statuses,
// in order: "make[2] held".
func runStatuses(o Outcome) []string {
	var runs []string
	for _, s := range o.Steps {
		runs = append(runs, s.Run+" "+string(s.CheckpointStatus))
	}
	return runs
}
