package workflows

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A step is the same step whatever order its output_schema's keys were
// written in, or how a number was written; a different schema, task or
// sets is not.
func TestSameStepComparesSchemasCanonically(t *testing.T) {
	step := func(schema string) *Step {
		return &Step{ID: "a", Task: "t", ReadSet: []string{"**/*"}, OutputSchema: json.RawMessage(schema)}
	}
	base := step(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":1}}}`)
	require.True(t, sameStep(base, step(`{"properties": {"n": {"minimum": 1.0, "type": "integer"}}, "required": ["n"], "type": "object"}`)))
	require.False(t, sameStep(base, step(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":2}}}`)))
	require.False(t, sameStep(base, step(`{"type":"object","required":[],"properties":{"n":{"type":"integer","minimum":1}}}`)))
	other := *base
	other.Task = "u"
	require.False(t, sameStep(base, &other))
	longer := *base
	longer.TimeoutMS = 5
	require.True(t, sameStep(base, &longer), "a new timeout does not matter")
}
