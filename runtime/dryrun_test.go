package runtime

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
)

// changeArgs are those of a mutation tool that knows dry runs.
type changeArgs struct {
	Path         string `json:"path"`
	DryRun       bool   `json:"dry_run,omitempty"`
	ValidateOnly bool   `json:"validate_only,omitempty"`
}

func changeTool(runs, dryRuns *atomic.Int32) tools.Tool {
	return tools.Define(tools.Spec[changeArgs]{
		Schema: json.RawMessage(`{"properties":{"path":{"type":"string"},"dry_run":{"type":"boolean"},"validate_only":{"type":"boolean"}},"additionalProperties":false,"type":"object","required":["path"]}`),
		Name:   "change", Description: "changes a file", Posture: tools.PostureMutation,
		Run: func(_ context.Context, _ tools.Env, a changeArgs, dry bool) tools.Result {
			if dry {
				dryRuns.Add(1)
				return tools.Preview("would change %s", a.Path)
			}
			runs.Add(1)
			return tools.OK("changed")
		},
	})
}

func TestDryRunOfAMutationIsAllowedInEveryMode(t *testing.T) {
	tests := []struct {
		name     string
		mode     Mode
		args     string
		dry      bool
		decision string
		source   string
	}{
		{"read_only, dry_run", ModeReadOnly, `{"path":"a","dry_run":true}`, true, "allowed", "dry_run"},
		{"ask without a client, validate_only", ModeAsk, `{"path":"a", "validate_only" : true }`, true, "allowed", "dry_run"},
		{"auto, dry_run", ModeAuto, `{"path":"a","dry_run":true}`, true, "allowed", "dry_run"},
		{"read_only, dry_run false", ModeReadOnly, `{"path":"a","dry_run":false}`, false, "denied", "mode"},
		{"read_only, dry_run a string", ModeReadOnly, `{"path":"a","dry_run":"true"}`, false, "denied", "mode"},
		{"read_only, nested dry_run", ModeReadOnly, `{"path":"a","x":{"dry_run":true}}`, false, "denied", "mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs, dryRuns atomic.Int32
			p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
				calls(provider.ToolCall{ID: "c1", Name: "change", Arguments: json.RawMessage(tt.args)}), text("ok"),
			}}
			rt := New(Config{Home: t.TempDir(), Provider: p, Model: "m", Tools: append(tools.Builtins(), changeTool(&runs, &dryRuns))})
			t.Cleanup(rt.Close)
			s, err := rt.NewSession(t.TempDir())
			require.NoError(t, err)
			require.NoError(t, s.SetMode(tt.mode))
			var rec recorder
			_, err = s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Observe: rec.observe})
			require.NoError(t, err)
			require.Zero(t, runs.Load(), "Run never runs here")
			var decision PermissionDecisionData
			var result ToolResultData
			for _, ev := range rec.events {
				switch ev.Type {
				case EventPermissionDecision:
					require.NoError(t, json.Unmarshal(ev.Data, &decision))
				case EventToolResult:
					require.NoError(t, json.Unmarshal(ev.Data, &result))
				}
			}
			require.Equal(t, PermissionDecisionData{ToolCallID: "c1", Tool: "change", Mode: tt.mode, Decision: tt.decision, Source: tt.source, Reason: decision.Reason}, decision)
			if tt.dry {
				require.Equal(t, int32(1), dryRuns.Load())
				require.True(t, result.Result.OK)
				require.Contains(t, modelText(result.Result), `"dry_run":true`)
				require.Empty(t, decision.Reason)
				require.True(t, slices.Contains(rec.types(), EventStatus))
			} else {
				require.Zero(t, dryRuns.Load())
				require.Equal(t, tools.ErrPermissionDenied, result.Result.Error.Kind)
			}
		})
	}
}

// A read tool's dry_run is its own business: the turn runs it as usual.
func TestDryRunFlagOnAReadToolChangesNothing(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		calls(provider.ToolCall{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt","dry_run":true}`)}), text("ok"),
	}}
	s := newTestSession(t, p)
	require.NoError(t, os.WriteFile(filepath.Join(s.Workspace().Root(), "a.txt"), []byte("hi"), 0o644))
	require.NoError(t, s.SetMode(ModeReadOnly))
	var rec recorder
	_, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Observe: rec.observe})
	require.NoError(t, err)
	require.NotContains(t, rec.types(), EventPermissionDecision)
}
