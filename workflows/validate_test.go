package workflows

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

// parseFailure parses spec and returns its invalid_args Failure.
func parseFailure(t *testing.T, spec string) *tools.Failure {
	t.Helper()
	w, err := Parse(json.RawMessage(spec))
	require.Nil(t, w)
	require.Error(t, err)
	f, ok := errors.AsType[*tools.Failure](err)
	require.True(t, ok, "want a *tools.Failure, got %T", err)
	require.Equal(t, tools.ErrInvalidArgs, f.Kind)
	return f
}

func TestValidateProblems(t *testing.T) {
	cases := []struct {
		name, spec string
		lines      []string
		codes      []string
	}{
		{"empty workflow", `{"steps":[]}`,
			[]string{`steps: the workflow has no steps; give at least one {"id": ..., "task": ...}`},
			[]string{"empty_workflow"}},
		{"no steps key", `{}`,
			[]string{`steps: the workflow has no steps; give at least one {"id": ..., "task": ...}`},
			[]string{"empty_workflow"}},
		{"duplicate id", `{"steps":[{"id":"a","task":"x"},{"id":"a","task":"y"}]}`,
			[]string{`steps[1] "a": id duplicates steps[0]; ids must be unique`},
			[]string{"duplicate_id"}},
		{"unsafe id", `{"steps":[{"id":"../etc","task":"x"},{"id":"Build","task":"y"}]}`,
			[]string{
				`steps[0] "../etc": id is unsafe; it must match ^[a-z][a-z0-9_-]{0,63}$ (a lowercase letter, then lowercase letters, digits, _ or -, at most 64)`,
				`steps[1] "Build": id is unsafe; it must match ^[a-z][a-z0-9_-]{0,63}$ (a lowercase letter, then lowercase letters, digits, _ or -, at most 64)`,
			},
			[]string{"unsafe_id", "unsafe_id"}},
		{"missing id and task", `{"steps":[{"task":""}]}`,
			[]string{
				`steps[0]: id is missing; give a unique id matching ^[a-z][a-z0-9_-]{0,63}$`,
				`steps[0]: task is empty; say what the step must do (prompt is accepted as an alias)`,
			},
			[]string{"missing_id", "missing_task"}},
		{"task and prompt differ", `{"steps":[{"id":"a","task":"x","prompt":"y"}]}`,
			[]string{`steps[0] "a": task and prompt differ; prompt is an alias of task, give only one`},
			[]string{"task_prompt_mismatch"}},
		{"unknown dependency", `{"steps":[{"id":"a","task":"x"},{"id":"b","task":"y","depends_on":["a","c"]}]}`,
			[]string{`steps[1] "b": depends_on "c" is not a step id; known ids: a, b`},
			[]string{"unknown_dependency"}},
		{"self dependency", `{"steps":[{"id":"a","task":"x","depends_on":["a"]}]}`,
			[]string{`steps[0] "a": depends_on names the step itself; remove "a"`},
			[]string{"self_dependency"}},
		{"cycle", `{"steps":[{"id":"a","task":"x","depends_on":["b"]},{"id":"b","task":"y","depends_on":["c"]},{"id":"c","task":"z","depends_on":["a"]}]}`,
			[]string{`cycle: a -> b -> c -> a (each step depends on the next); remove one of these depends_on edges`},
			[]string{"cycle"}},
		{"cycle found from its middle", `{"steps":[{"id":"x","task":"x","depends_on":["b"]},{"id":"a","task":"x","depends_on":["b"]},{"id":"b","task":"y","depends_on":["a"]}]}`,
			[]string{`cycle: a -> b -> a (each step depends on the next); remove one of these depends_on edges`},
			[]string{"cycle"}},
		{"invalid pattern", `{"steps":[{"id":"a","task":"x","permission_mode":"writer","write_set":["src/[a"],"read_set":["../up"]}]}`,
			[]string{
				`steps[0] "a": read_set pattern "../up" is invalid: it climbs out of the workspace with ..; paths stay inside the workspace`,
				`steps[0] "a": write_set pattern "src/[a" is invalid: it is not a valid doublestar pattern (an unclosed [ or {, or a trailing \)`,
			},
			[]string{"invalid_pattern", "invalid_pattern"}},
		{"read_only with write set", `{"steps":[{"id":"a","task":"x","permission_mode":"read_only","write_set":["src/**"]}]}`,
			[]string{`steps[0] "a": permission_mode is read_only but write_set is ["src/**"]; drop write_set or make the step a writer`},
			[]string{"read_only_write_set"}},
		{"output_schema not an object", `{"steps":[{"id":"a","task":"x","output_schema":["type"]},{"id":"b","task":"x","output_schema":"object"}]}`,
			[]string{
				`steps[0] "a": output_schema must be a JSON object (a JSON Schema), got array`,
				`steps[1] "b": output_schema must be a JSON object (a JSON Schema), got string`,
			},
			[]string{"invalid_output_schema", "invalid_output_schema"}},
		{"bad enums", `{"failure_policy":"stop","steps":[{"id":"a","task":"x","permission_mode":"admin","workspace_mode":"cloud"}]}`,
			[]string{
				`failure_policy: "stop" is not one of keep_going, fail_fast`,
				`steps[0] "a": permission_mode "admin" is not one of read_only, writer`,
				`steps[0] "a": workspace_mode "cloud" is not one of isolated, shared`,
			},
			[]string{"invalid_enum", "invalid_enum", "invalid_enum"}},
		{"bad numbers", `{"max_concurrency":0,"timeout_ms":-1,"steps":[{"id":"a","task":"x","timeout_ms":-5}]}`,
			[]string{
				`max_concurrency: 0 must be at least 1 (omit it for 6)`,
				`timeout_ms: -1 must be at least 1 (omit it for no workflow-wide limit)`,
				`steps[0] "a": timeout_ms -5 must be at least 1 (omit it for 120000)`,
			},
			[]string{"invalid_number", "invalid_number", "invalid_number"}},
		{"unknown step field", `{"steps":[{"id":"a","task":"x","depends":["b"]}]}`,
			[]string{`the workflow spec is not valid JSON of the expected shape: a step has unknown field "depends"`},
			[]string{"malformed_spec"}},
		{"unknown workflow field", `{"stepz":[]}`,
			[]string{`the workflow spec is not valid JSON of the expected shape: unknown field "stepz"`},
			[]string{"malformed_spec"}},
		{"wrong type", `{"steps":"a"}`,
			[]string{`the workflow spec is not valid JSON of the expected shape: steps: got JSON string, want array`},
			[]string{"malformed_spec"}},
		{"wrong step field type", `{"steps":[{"id":"a","task":5}]}`,
			[]string{`the workflow spec is not valid JSON of the expected shape: steps[].task: got JSON number, want string`},
			[]string{"malformed_spec"}},
		{"not an object", `[1]`,
			[]string{`the workflow spec is not valid JSON of the expected shape: the workflow: got JSON array, want object`},
			[]string{"malformed_spec"}},
		{"trailing data", `{"steps":[{"id":"a","task":"x"}]} {}`,
			[]string{`the workflow spec is not valid JSON of the expected shape: there is more after the spec object; send one JSON object`},
			[]string{"malformed_spec"}},
		{"every problem at once", `{"steps":[{"id":"a","task":"x","depends_on":["a","zz"]},{"id":"a","task":""}]}`,
			[]string{
				`steps[1] "a": id duplicates steps[0]; ids must be unique`,
				`steps[0] "a": depends_on names the step itself; remove "a"`,
				`steps[0] "a": depends_on "zz" is not a step id; known ids: a`,
				`steps[1] "a": task is empty; say what the step must do (prompt is accepted as an alias)`,
			},
			[]string{"duplicate_id", "self_dependency", "unknown_dependency", "missing_task"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := parseFailure(t, c.spec)
			require.Equal(t, strings.Join(c.lines, "\n"), f.Message)
			d, ok := f.Details.(ValidationDetails)
			require.True(t, ok)
			var codes []string
			for i, p := range d.Problems {
				codes = append(codes, p.Code)
				require.Equal(t, c.lines[i], p.Message)
			}
			require.Equal(t, c.codes, codes)
		})
	}
}

func TestValidateDetailsAreActionable(t *testing.T) {
	f := parseFailure(t, `{"steps":[{"id":"a","task":"x","depends_on":["b"]},{"id":"b","task":"y","depends_on":["a","nope"]}]}`)
	d := f.Details.(ValidationDetails)
	require.Len(t, d.Problems, 2)
	unknown, cycle := d.Problems[0], d.Problems[1]
	require.Equal(t, "unknown_dependency", unknown.Code)
	require.Equal(t, "b", unknown.Step)
	require.Equal(t, 1, *unknown.Index)
	require.Equal(t, "depends_on", unknown.Field)
	require.Equal(t, "nope", unknown.Value)
	require.Equal(t, []string{"a", "b", "a"}, cycle.Cycle)
	require.Nil(t, cycle.Index)

	// The details survive JSON, as the model will read them.
	b, err := json.Marshal(f)
	require.NoError(t, err)
	require.Contains(t, string(b), `"code":"unknown_dependency","index":1,"step":"b","field":"depends_on","value":"nope"`)
	require.Contains(t, string(b), `"cycle":["a","b","a"]`)
}

func TestParseDefaults(t *testing.T) {
	w, err := Parse(json.RawMessage(`{"validate_only":true,"steps":[
		{"id":"look","prompt":"read the code"},
		{"id":"fix","task":"fix it","write_set":["./src/"],"depends_on":["look","look"]},
		{"id":"all","task":"rewrite","permission_mode":"writer","output_schema":{"type":"object"}}]}`))
	require.NoError(t, err)
	require.True(t, w.DryRun)
	require.Equal(t, DefaultMaxConcurrency, w.MaxConcurrency)
	require.Equal(t, KeepGoing, w.FailurePolicy)

	look, fix, all := w.Steps[0], w.Steps[1], w.Steps[2]
	require.Equal(t, "read the code", look.Task, "prompt is an alias of task")
	require.Equal(t, ReadOnly, look.PermissionMode, "no write set: read_only")
	require.Equal(t, Shared, look.WorkspaceMode)
	require.Equal(t, []string{WholeWorkspace}, look.ReadSet)
	require.Empty(t, look.WriteSet)
	require.Equal(t, int64(DefaultStepTimeoutMS), look.TimeoutMS)

	require.Equal(t, Writer, fix.PermissionMode, "a write set makes a writer")
	require.Equal(t, Isolated, fix.WorkspaceMode)
	require.Equal(t, []string{"src/**"}, fix.WriteSet, "./ stripped, trailing / means the contents")
	require.Equal(t, []string{"look"}, fix.DependsOn)

	require.Equal(t, []string{WholeWorkspace}, all.WriteSet, "a writer without a write set claims the whole workspace")
	require.JSONEq(t, `{"type":"object"}`, string(all.OutputSchema))
}

func TestValidateOutputSchemas(t *testing.T) {
	for _, tt := range []struct{ schema, want string }{
		{`[1]`, "output_schema must be a JSON object (a JSON Schema), got array"},
		{`{"type":"array","items":{"type":"string"}}`, "output_schema must describe an object"},
		{`{"type":"object","properties":{"a":{"if":{"type":"string"}}}}`, `output_schema does not compile: at /properties/a, keyword "if" is not supported`},
		{`{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`, `$ref 'https://example.com/a.json' is not supported: only references inside the schema are`},
		{`{"type":"object","properties":{"a":{"pattern":"("}}}`, "output_schema does not compile: at /properties/a/pattern"},
	} {
		f := parseFailure(t, `{"steps":[{"id":"a","task":"x","output_schema":`+tt.schema+`}]}`)
		require.Contains(t, f.Message, tt.want)
		require.Equal(t, "invalid_output_schema", f.Details.(ValidationDetails).Problems[0].Code)
	}
	_, err := Parse([]byte(`{"steps":[{"id":"a","task":"x","output_schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}}]}`))
	require.NoError(t, err)
	// What users write: $defs and $ref, oneOf, const, format.
	_, err = Parse([]byte(`{"steps":[{"id":"a","task":"x","output_schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
		"properties":{"verdict":{"$ref":"#/$defs/verdict"},"by":{"oneOf":[{"type":"string","format":"email"},{"const":"bot"}]}},
		"$defs":{"verdict":{"enum":["ACCEPTABLE","NEEDS WORK","BLOCK"]}}}}]}`))
	require.NoError(t, err)
}
