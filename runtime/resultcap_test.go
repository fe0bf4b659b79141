package runtime

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
)

func TestBoundResult(t *testing.T) {
	small := tools.OK(map[string]any{"text": "fine"})
	require.Equal(t, small, boundResult(small), "a result within the cap is left as it is")

	// Quotes double in the envelope, and a character may straddle the cut.
	big := tools.Result{OK: false, Output: map[string]any{"rows": strings.Repeat(`"é"`, MaxToolResultBytes)},
		Error: &tools.Failure{Kind: tools.ErrInternal, Message: "kept"}}
	got := boundResult(big)
	require.Equal(t, big.Error, got.Error)
	text, ok := got.Output.(string)
	require.True(t, ok)
	require.Contains(t, text, "a tool result is capped at 1024 KiB")
	require.True(t, strings.HasPrefix(text, `{"rows":"\"é\"`))
	line, err := json.Marshal(got)
	require.NoError(t, err)
	require.LessOrEqual(t, len(line), MaxToolResultBytes, "the whole envelope, escaped, fits")
	require.Greater(t, len(line), MaxToolResultBytes-4096)
}

// TestHugeToolResultIsCappedInTheLogAndForTheModel: a tool whose output is
// 3 MiB of JSON leaves a tool_result Log line within the cap, the model
// reads the same bounded text, and History folded from the Log agrees.
func TestHugeToolResultIsCappedInTheLogAndForTheModel(t *testing.T) {
	type noArgs struct{}
	huge := tools.Define(tools.Spec[noArgs]{Name: "huge", Schema: json.RawMessage(`{"additionalProperties":false,"type":"object"}`), Description: "returns a lot", Posture: tools.PostureRead,
		Run: func(context.Context, tools.Env, noArgs, bool) tools.Result {
			return tools.OK(map[string]string{"data": strings.Repeat("x", 3<<20)})
		}})
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		calls(provider.ToolCall{ID: "c1", Name: "huge", Arguments: json.RawMessage(`{}`)}),
		text("done"),
	}}
	rt := New(Config{Home: t.TempDir(), Provider: p, Model: "m", Tools: append(tools.Builtins(), huge)})
	t.Cleanup(rt.Close)
	s, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	stop, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{})
	require.NoError(t, err)
	require.Equal(t, StopEndTurn, stop)

	seen := p.reqs[1].Messages[2]
	require.Equal(t, provider.RoleTool, seen.Role)
	require.Less(t, len(seen.Text), MaxToolResultBytes+256)
	require.Contains(t, seen.Text, "[… truncated ")

	raw, err := os.ReadFile(s.log.Path())
	require.NoError(t, err)
	for line := range strings.SplitSeq(strings.TrimSpace(string(raw)), "\n") {
		require.Less(t, len(line), MaxToolResultBytes+4096, "every Log line is bounded")
	}
	events, _, err := s.Events()
	require.NoError(t, err)
	require.Equal(t, s.historyCopy(), foldHistory(events, s.rt.log))
}
