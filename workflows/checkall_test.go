package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

// knownAgents knows default and explorer only.
type knownAgents struct{}

func (knownAgents) CheckSpawn(r tools.SpawnRequest) error {
	if r.Agent == "" || r.Agent == "default" || r.Agent == "explorer" {
		return nil
	}
	return &tools.Failure{Kind: tools.ErrNotFound, Message: "there is no agent named " + r.Agent}
}

func TestDecodeAndCheckReportsEveryProblemInFileOrder(t *testing.T) {
	for _, c := range []struct {
		name, spec string
		want       []string
	}{
		{"unknown keys, a bad dependency, an unknown agent",
			`{"nam":"x","steps":[{"id":"a","task":"t","agent":"nosuch"},{"id":"b","task":"t","depends_on":["zz"],"dependson":["a"]}]}`,
			[]string{
				`unknown key "nam" in the workflow; did you mean "name"?`,
				`steps[0] "a": there is no agent named nosuch`,
				`steps[1] "b": unknown key "dependson"; did you mean "depends_on"?`,
				`steps[1] "b": depends_on "zz" is not a step id; known ids: a, b`,
			}},
		{"a value of the wrong type, with its step",
			`{"steps":[{"id":"a","task":"t"},{"id":"b","task":3,"timeout":1}]}`,
			[]string{
				`steps[1] "b": unknown key "timeout"; did you mean "timeout_ms"?`,
				`steps[1] "b": task: got JSON number, want string`,
			}},
		{"a key nothing is near lists the keys",
			`{"steps":[{"id":"a","task":"t","colour":"red"}]}`,
			[]string{`steps[0] "a": unknown key "colour" (a step has id, task, `}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeAndCheck(json.RawMessage(c.spec), knownAgents{})
			f := tools.AsFailure(err)
			require.Equal(t, tools.ErrInvalidArgs, f.Kind)
			lines := strings.Split(f.Message, "\n")
			require.Len(t, lines, len(c.want), f.Message)
			for i, w := range c.want {
				require.True(t, strings.HasPrefix(lines[i], w), "line %d: %q, want %q", i, lines[i], w)
			}
			require.Len(t, f.Details.(ValidationDetails).Problems, len(c.want))
		})
	}
	w, err := DecodeAndCheck(json.RawMessage(`{"steps":[{"id":"a","task":"t"}]}`), knownAgents{})
	require.NoError(t, err)
	require.Len(t, w.Steps, 1)
}

// run_workflow reports what a spec file's check reports, in the same words
// and at once (one source of the messages): schema problems and the
// spec's own, agents included. It reported only the schema's lines when
// there were any, and Prepare stopped at the graph's problems before the
// agents'.
func TestRunWorkflowReportsWhatTheFilesCheckReports(t *testing.T) {
	sim := newSim(durations(nil))
	for _, spec := range []string{
		// schema-valid: the graph's problem and the agent's together
		`{"steps":[{"id":"a","task":"x","agent":"nobody"},{"id":"b","task":"y","depends_on":["zz"]}]}`,
		// an unknown key (the nearest known one), a bad dependency, an unknown agent
		`{"steps":[{"id":"a","task":"x","agent":"nobody"},{"id":"b","task":"y","depends_on":["zz"],"dependson":["a"]}]}`,
		// values of the wrong type beside the rest, which is still checked
		`{"nam":"x","max_concurrency":"2","steps":[{"id":"a","task":3,"agent":"nobody"},{"id":"B","task":"y","depends_on":["zz"],"timeout_ms":"x"}]}`,
		`{"name":"x","steps":[],"max_concurrency":0}`,
		`{"steps":[{"id":"a","task":"x","workspace_mode":"bogus","when":{"step":"q"}}]}`,
	} {
		_, err := DecodeAndCheck(json.RawMessage(spec), sim)
		file := tools.AsFailure(err)
		require.Equal(t, tools.ErrInvalidArgs, file.Kind, spec)
		res := RunWorkflowTool(sim.ports()).DryRun(t.Context(), tools.Env{ToolCallID: "c"}, json.RawMessage(spec))
		require.False(t, res.OK)
		require.Equal(t, file.Message, res.Error.Message, spec)
		require.Equal(t, file.Details, res.Error.Details, spec)
		require.Greater(t, len(file.Details.(ValidationDetails).Problems), 1, "%s: every problem at once:\n%s", spec, file.Message)
	}
	require.Empty(t, sim.order, "nothing started")
}

// A schema line the spec's check says nothing about is kept, with its
// location; one at a field a problem is at already is not.
func TestSchemaProblemsKeepWhatTheCheckDidNotSay(t *testing.T) {
	raw := json.RawMessage(`{"steps":[{"id":"a","task":"x"},{"id":"b","task":"y","when":[{"step":"a","path":"/v","in":[]}]}],"loops":[{"id":"l","steps":["a"]}]}`)
	one := 1
	have := []Problem{
		{Code: "unknown_dependency", Index: &one, Field: "depends_on"},
		{Code: "invalid_condition", Index: &one, Field: "when[0].in"},
	}
	got := schemaProblems(raw, []string{
		"/steps/1/depends_on/0: got number, want string",
		"/steps/1/when/0/in: minItems: got 0, want 1",
		"/steps/1/read_set: got string, want array",
		"/steps/0: additional properties 'colour' not allowed",
		"/loops/0/max_iterations: maximum: got 99, want 10",
		"/max_concurrency: minimum: got 0, want 1",
	}, have)
	var lines []string
	for _, p := range got {
		lines = append(lines, p.Message)
	}
	require.Equal(t, []string{
		`steps[1] "b": read_set: got string, want array`,
		`steps[0] "a": additional properties 'colour' not allowed`,
		`loops[0] "l": max_iterations: maximum: got 99, want 10`,
		`max_concurrency: minimum: got 0, want 1`,
	}, lines)
	require.Equal(t, 1, *got[0].Index)
	require.Equal(t, "read_set", got[0].Field)
	require.Equal(t, "colour", got[1].Field)
	require.Equal(t, "l", got[2].Loop)
	require.Nil(t, got[3].Index)

	// A loop its own check found wrong says it in its words.
	have = append(have, Problem{Code: "unbounded_loop", Loop: "l", Field: "max_iterations"})
	require.Len(t, schemaProblems(raw, []string{"/loops/0/max_iterations: got string, want integer"}, have), 0)
}

// A template call whose arguments its schema refuses gets the schema's
// lines, with their locations: the template checks the rest once they are
// fixed.
func TestRunWorkflowTemplateCallRefusedByItsSchema(t *testing.T) {
	sim := newSim(durations(nil))
	res := RunWorkflowTool(sim.ports()).DryRun(t.Context(), tools.Env{ToolCallID: "c"}, json.RawMessage(`{"template":"review","args":[1]}`))
	require.False(t, res.OK)
	require.Equal(t, tools.ErrInvalidArgs, res.Error.Kind)
	require.Equal(t, "args: got array, want object", res.Error.Message)
}

// tooDeep refuses every spawn as the Manager does at its depth limit.
type tooDeep struct{}

func (tooDeep) CheckSpawn(tools.SpawnRequest) error {
	return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: "max_depth reached"}
}

// Where the agents cannot be checked at all (depth), a refused spec still
// gets its own problems, not that one failure alone, and that failure
// too, not only once the spec is fixed.
func TestRunWorkflowRefusedWhereAgentsCannotBeChecked(t *testing.T) {
	res := RunWorkflowTool(Ports{Agents: tooDeep{}}).DryRun(t.Context(), tools.Env{ToolCallID: "c"},
		json.RawMessage(`{"steps":[{"id":"a","task":"x","dependson":["b"]},{"id":"b","task":"y","depends_on":["zz"]}]}`))
	require.Equal(t, tools.ErrInvalidArgs, res.Error.Kind)
	require.Equal(t, "max_depth reached\nsteps[0] \"a\": unknown key \"dependson\"; did you mean \"depends_on\"?\nsteps[1] \"b\": depends_on \"zz\" is not a step id; known ids: a, b", res.Error.Message)
	require.Equal(t, "cannot_spawn", res.Error.Details.(ValidationDetails).Problems[0].Code)
}
