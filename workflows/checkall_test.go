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
