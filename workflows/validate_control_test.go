package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// practiceSpec is the multi-agent practice of the spec
// (multi-agent-workflow-design.txt) as one workflow: the built-in
// template practice for issue GAL-1, with its loops, escalation branch and
// fan-outs of the routing matrix. Its verify commands are left out: the
// simulated children write no files for them to check (checkpoint_test.go
// and the practice's run through the binary check them).
func practiceSpec(t testing.TB) string {
	t.Helper()
	var practice *Template
	for _, tpl := range builtinTemplates() {
		if tpl.Name == "practice" {
			practice = tpl
		}
	}
	require.NotNil(t, practice, "the built-in template practice")
	w, err := practice.Instantiate(map[string]any{"issue": "GAL-1"})
	require.NoError(t, err)
	for i := range w.Steps {
		w.Steps[i].Verify = nil
	}
	w.Template, w.Args = "", nil
	b, err := json.Marshal(w)
	require.NoError(t, err)
	return string(b)
}

func TestThePracticeIsAValidWorkflow(t *testing.T) {
	w := mustParse(t, practiceSpec(t))
	g := w.graph()
	// revisit holds everything between the issue and the commit: the plan
	// and split reviews, and final-review, which holds escalation.
	loopOf := func(id string) string { return w.Loops[g.loopOf[g.index[id]]].ID }
	parent := func(id string) string {
		p := g.loops[g.loopIndex[id]].parent
		if p < 0 {
			return ""
		}
		return w.Loops[p].ID
	}
	require.Equal(t, "", parent("revisit"))
	require.Equal(t, "revisit", parent("plan-review"))
	require.Equal(t, "revisit", parent("final-review"))
	require.Equal(t, "final-review", parent("escalation"))
	require.Equal(t, "escalation", loopOf("make"))
	require.Equal(t, "final-review", loopOf("final-check"))
	require.Equal(t, "testability", loopOf("write-tests"))
	require.Equal(t, "testability", loopOf("seam"))
	require.Equal(t, "revisit", parent("testability"))
	require.Equal(t, -1, g.loopOf[g.index["commit"]])
	// diagnose's condition on make's failure makes it a failure branch;
	// make needs its tests ready and tolerates a skipped review and fix,
	// each its own task's: it pairs with the three fan-outs over the
	// split's tasks, not with the split.
	require.Equal(t, []bool{true}, g.tolerated[g.index["diagnose"]])
	require.Equal(t, []bool{false}, g.tolerated[g.index["redesign"]])
	require.Equal(t, []bool{false, false, true, true, true}, g.tolerated[g.index["make"]])
	require.Equal(t, []bool{false, true, true, true, true}, g.paired[g.index["make"]])
	require.True(t, g.perInstance[g.index["seam"]])
	require.True(t, g.perInstance[g.index["test-signoff"]])
	require.True(t, g.perInstance[g.index["make"]])
	require.True(t, g.perInstance[g.index["test-review"]])
	require.False(t, g.perInstance[g.index["write-tests"]], "write-tests tests check-split, which is no fan-out")
	require.NotNil(t, g.fan[g.index["make"]])
	members := func(sc int) []string {
		var names []string
		for _, m := range g.scopes[sc].members {
			if isLoop(m) {
				names = append(names, "loop "+w.Loops[loopOfMember(m)].ID)
			} else {
				names = append(names, w.Steps[m].ID)
			}
		}
		return names
	}
	require.Equal(t, []string{"issue", "loop revisit", "commit", "summary"}, members(0))
	require.Equal(t, []string{"loop plan-review", "loop split-review", "loop testability", "test-review", "test-fix", "loop final-review"},
		members(g.scopeOf(g.loopIndex["revisit"])))
}

func TestValidateControlFlowProblems(t *testing.T) {
	const verdict = `{"type":"object","required":["verdict"],"properties":{"verdict":{"enum":["ACCEPTABLE","NEEDS WORK","BLOCK"]},"findings":{"type":"array","items":{"type":"string"}}}}`
	const tasks = `{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"object","properties":{"files":{"type":"array","items":{"type":"string"}},"title":{"type":"string"}}}},"count":{"type":"integer"}}}`
	cases := []struct {
		name, spec string
		codes      []string
		lines      []string
	}{{
		name:  "an unbounded loop",
		spec:  `{"steps":[{"id":"a","task":"x"}],"loops":[{"id":"l","steps":["a"]}]}`,
		codes: []string{"unbounded_loop"},
		lines: []string{`loops[0] "l": max_iterations is missing or 0; every loop needs a bound (1 to 100) the runtime enforces`},
	}, {
		name:  "a condition on a step that is not upstream",
		spec:  `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x","when":{"step":"a"}},{"id":"c","task":"x","depends_on":["b"],"when":{"step":"c"}}]}`,
		codes: []string{"not_upstream", "not_upstream"},
		lines: []string{
			`steps[1] "b": when[0].step "a": it is not upstream of this step; add it to depends_on (directly or through another step)`,
			`steps[2] "c": when[0].step "c": it is this step itself; a condition tests what an upstream step found, never the step's own checkpoint`,
		},
	}, {
		name:  "a fan-out capped at 0 items",
		spec:  `{"steps":[{"id":"a","task":"x","output_schema":` + tasks + `},{"id":"b","task":"x","depends_on":["a"],"for_each":{"step":"a","path":"/tasks","max_items":0}}]}`,
		codes: []string{"invalid_number"},
		lines: []string{`steps[1] "b": for_each.max_items 0 must be between 1 and 1000 (omit it for 10)`},
	}, {
		name:  "a fan-out over its own payload",
		spec:  `{"steps":[{"id":"a","task":"x","for_each":{"step":"a","path":"/tasks"},"output_schema":` + tasks + `}]}`,
		codes: []string{"not_upstream"},
		lines: []string{`steps[0] "a": for_each.step "a" is this step itself; fan out over the payload of an upstream step`},
	}, {
		name:  "a pointer into a step without an output_schema",
		spec:  `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x","depends_on":["a"],"when":{"step":"a","path":"/verdict","equals":"ok"}}]}`,
		codes: []string{"no_output_schema"},
		lines: []string{`steps[1] "b": when[0].path /verdict points into the payload of "a", which has no output_schema; give "a" an output_schema that declares it`},
	}, {
		name: "a pointer the schema cannot have, and a value it cannot take",
		spec: `{"steps":[{"id":"r","task":"x","output_schema":` + verdict + `},
			{"id":"b","task":"x","depends_on":["r"],"when":[{"step":"r","path":"/verdcit","equals":"ACCEPTABLE"},{"step":"r","path":"/verdict","in":["ACCEPTED","BLOCK"]}]}]}`,
		codes: []string{"invalid_pointer", "invalid_value"},
		lines: []string{
			`steps[1] "b": when[0].path /verdcit cannot be in the payload of "r": the output_schema declares no property "verdcit" at / (it declares: findings, verdict)`,
			`steps[1] "b": when[1].in "ACCEPTED" can never match /verdict of "r": it is not one of the values the output_schema allows there: "ACCEPTABLE", "NEEDS WORK", "BLOCK"`,
		},
	}, {
		name: "malformed conditions",
		spec: `{"steps":[{"id":"r","task":"x","output_schema":` + verdict + `},{"id":"b","task":"x","depends_on":["r"],"when":[
			{"step":"r","path":"/verdict"},
			{"step":"r","equals":"x"},
			{"step":"r","all":[{"step":"r"}]},
			{"any":[]},
			{"step":"ghost"},
			{"step":"r","status":["done"]},
			{"step":"r","path":"verdict","exists":true}]}]}`,
		codes: []string{"invalid_condition", "invalid_condition", "invalid_condition", "invalid_condition", "unknown_step", "invalid_enum", "invalid_pointer"},
	}, {
		name: "loops that overlap, repeat, or name unknown steps",
		spec: `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"x","depends_on":["a"]},{"id":"c","task":"x","depends_on":["b"]}],"loops":[
			{"id":"l1","steps":["a","b"],"max_iterations":2},
			{"id":"l2","steps":["b","c"],"max_iterations":2},
			{"id":"l3","steps":["a","b"],"max_iterations":2},
			{"id":"l4","steps":["ghost"],"max_iterations":200,"on_exhausted":"retry"},
			{"id":"a","steps":[],"max_iterations":1}]}`,
		codes: []string{"unknown_step", "invalid_number", "invalid_enum", "duplicate_id", "empty_loop", "loop_overlap", "loop_overlap"},
	}, {
		name: "a loop whose body a path leaves and re-enters",
		spec: `{"steps":[{"id":"a","task":"x"},{"id":"out","task":"x","depends_on":["a"]},{"id":"b","task":"x","depends_on":["out"]}],
			"loops":[{"id":"l","steps":["a","b"],"max_iterations":2}]}`,
		codes: []string{"loop_not_contiguous"},
		lines: []string{`loops[0] "l": its body is not one group of the graph: loop l -> out -> loop l (each depends on the next); put the steps between them into the loop, or take them out of it`},
	}, {
		name: "until and converge outside the loop",
		spec: `{"steps":[{"id":"a","task":"x","output_schema":` + verdict + `},{"id":"b","task":"x","depends_on":["a"]},{"id":"z","task":"x","output_schema":` + verdict + `}],
			"loops":[{"id":"l","steps":["b"],"max_iterations":2,"until":{"step":"z"},"converge":{"step":"a","path":"/findings"}}]}`,
		codes: []string{"not_upstream", "not_in_loop"},
	}, {
		name: "a converge list: every value checked, each problem with its place",
		spec: `{"steps":[{"id":"a","task":"x","output_schema":` + verdict + `},{"id":"b","task":"x","depends_on":["a"],"output_schema":` + verdict + `},{"id":"z","task":"x"}],
			"loops":[{"id":"l","steps":["a","b"],"max_iterations":2,"converge":[
				{"step":"a","path":"/findings"},{"step":"b","path":"/findngs"},{"step":"z","path":"/findings"},{"path":"/findings"},{"step":"a","path":"/findings"}]},
			{"id":"m","steps":["z"],"max_iterations":2,"converge":[]}]}`,
		codes: []string{"invalid_pointer", "not_in_loop", "invalid_condition", "duplicate_id", "invalid_condition"},
		lines: []string{
			`loops[0] "l": converge[1].path /findngs cannot be in the payload of "b": the output_schema declares no property "findngs" at / (it declares: findings, verdict)`,
			`loops[0] "l": converge[2].step "z" is not a step of the loop`,
			`loops[0] "l": converge[3].step is missing; name the step of the loop whose payload value must repeat`,
			`loops[0] "l": converge[4] repeats converge[0] (a /findings); name each value once`,
			`loops[1] "m": converge is an empty list; name at least one {step, path} whose value must repeat, or leave converge out`,
		},
	}, {
		name: "fan-out problems",
		spec: `{"steps":[{"id":"split","task":"x","output_schema":` + tasks + `},
			{"id":"count","task":"x","depends_on":["split"],"for_each":{"step":"split","path":"/count","max_items":5000}},
			{"id":"make","task":"fix ${item.fles}","depends_on":["split"],"for_each":{"step":"split","path":"/tasks"},"write_set":["src/**"]},
			{"id":"solo","task":"do ${item.title} ${itemz} ${index.x}","depends_on":["make"]},
			{"id":"again","task":"x","depends_on":["make"],"for_each":{"step":"make","path":"/tasks"}}]}`,
		codes: []string{"invalid_number", "fan_out_not_array", "invalid_binding", "fan_out_self_conflict", "invalid_binding", "invalid_binding", "nested_fan_out"},
		lines: []string{
			`steps[1] "count": for_each.max_items 5000 must be between 1 and 1000 (omit it for 10)`,
			`steps[1] "count": for_each.path /count of "split" is integer in its output_schema; fan out over an array`,
			`steps[2] "make": task binds ${item.fles}, which an item of split /tasks cannot have: the output_schema declares no property "fles" at / (it declares: files, title)`,
			`steps[2] "make": every instance of this writer would write src/**, so its instances conflict with each other; bind each instance to its item's files, e.g. write_set: ["${item.files}"]`,
			`steps[3] "solo": task has ${index.x}; the bindings are ${item}, ${item.field} (fields joined by .) and ${index}`,
			`steps[3] "solo": task binds ${item.title}, but the step has no for_each; add for_each: {step, path} or remove the binding`,
			`steps[4] "again": for_each.step "make" is itself a fan-out (one payload per instance); fan out over the step that makes the list`,
		},
	}, {
		// Each path's schema says it cannot be an array without a type:
		// they were accepted, and failed only at run time.
		name: "fan-outs over what cannot be an array",
		spec: `{"steps":[{"id":"split","task":"x","output_schema":{"type":"object","properties":{
				"kind":{"enum":["a","b"]},"one":{"const":1},"either":{"anyOf":[{"type":"string"},{"enum":[1,2]}]},
				"list":{"enum":[["a"],"b"]},"any":{"anyOf":[{"type":"string"},{}]}}}},
			{"id":"k","task":"x","depends_on":["split"],"for_each":{"step":"split","path":"/kind"}},
			{"id":"o","task":"x","depends_on":["split"],"for_each":{"step":"split","path":"/one"}},
			{"id":"e","task":"x","depends_on":["split"],"for_each":{"step":"split","path":"/either"}},
			{"id":"l","task":"x","depends_on":["split"],"for_each":{"step":"split","path":"/list"}},
			{"id":"y","task":"x","depends_on":["split"],"for_each":{"step":"split","path":"/any"}}]}`,
		codes: []string{"fan_out_not_array", "fan_out_not_array", "fan_out_not_array"},
		lines: []string{
			`steps[1] "k": for_each.path /kind of "split" can only be "a", "b" (its enum) in its output_schema; fan out over an array`,
			`steps[2] "o": for_each.path /one of "split" can only be 1 (its const) in its output_schema; fan out over an array`,
			`steps[3] "e": for_each.path /either of "split" is no array in any alternative of its anyOf in its output_schema; fan out over an array`,
		},
	}, {
		name: "a payload test on a fan-out from a step that does not fan out over the same items",
		spec: `{"steps":[{"id":"split","task":"x","output_schema":` + tasks + `},
			{"id":"review","task":"${item.title}","depends_on":["split"],"for_each":{"step":"split","path":"/tasks"},"output_schema":` + verdict + `},
			{"id":"paired","task":"fix ${item.title}","depends_on":["review"],"for_each":{"step":"split","path":"/tasks"},"when":{"step":"review","path":"/verdict","equals":"BLOCK"}},
			{"id":"whole","task":"x","depends_on":["review"],"when":{"step":"review","path":"/verdict","equals":"BLOCK"}}],
			"loops":[{"id":"l","steps":["review","paired"],"max_iterations":2,"until":{"step":"review","path":"/verdict","equals":"ACCEPTABLE"}}]}`,
		codes: []string{"nested_fan_out", "nested_fan_out"},
		lines: []string{
			`steps[3] "whole": when[0] tests the payload of "review", a fan-out with one payload per instance; test its status, or the payload of a step after it, or fan this step out over the same items (for_each: {step: split, path: /tasks}) so that each instance tests its own`,
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := parseFailure(t, c.spec)
			problems := f.Details.(ValidationDetails).Problems
			var codes []string
			for _, p := range problems {
				codes = append(codes, p.Code)
			}
			require.ElementsMatch(t, c.codes, codes, f.Message)
			for _, line := range c.lines {
				require.Contains(t, strings.Split(f.Message, "\n"), line)
			}
		})
	}
}

func TestConditionsDecodeAsOneOrAList(t *testing.T) {
	var s Step
	require.NoError(t, json.Unmarshal([]byte(`{"id":"a","task":"x","when":{"step":"b"}}`), &s))
	require.Len(t, s.When, 1)
	require.NoError(t, json.Unmarshal([]byte(`{"id":"a","task":"x","when":[{"step":"b"},{"not":{"step":"c"}}]}`), &s))
	require.Len(t, s.When, 2)
	err := json.Unmarshal([]byte(`{"id":"a","task":"x","when":{"step":"b","equal":1}}`), &s)
	require.ErrorContains(t, err, `a condition has unknown field "equal"`)
	_, err = Parse(json.RawMessage(`{"steps":[{"id":"a","task":"x"}],"loops":[{"id":"l","steps":["a"],"max_iteration":2}]}`))
	require.ErrorContains(t, err, `a loop has unknown field "max_iteration" (allowed: id, steps, max_iterations, until, converge, on_exhausted)`)
}
