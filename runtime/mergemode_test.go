package runtime

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

// TestAMergeDecisionRecordsTheModeThatHeldIt: a child whose parent was
// switched to read_only is held read_only, and a merge it is refused for
// that says so in its Log; the decision said mode "auto" (the child's
// own) beside "the session is in read_only mode" (review32a).
func TestAMergeDecisionRecordsTheModeThatHeldIt(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	v := f.spawn(t, "work")
	_, err := f.b.Wait(context.Background(), tools.WaitRequest{IDs: []string{v.ID}, Timeout: noHorizon})
	require.NoError(t, err)
	child := f.session(t, v.ID)
	require.NoError(t, f.parent.SetMode(ModeReadOnly))
	require.Equal(t, ModeAuto, child.Mode())
	require.Equal(t, ModeReadOnly, child.heldMode())

	f.rt.subagents.mu.Lock()
	sa := f.rt.subagents.byID[v.ID]
	f.rt.subagents.mu.Unlock()
	binding{m: f.rt.subagents, parent: child, toolCallID: "call-merge"}.recordMerge(sa, "denied", "mode", "", "the session is in read_only mode")

	events, _, err := ReadLog(child.LogPath())
	require.NoError(t, err)
	var got []PermissionDecisionData
	for _, ev := range events {
		if ev.Type == EventPermissionDecision {
			var d PermissionDecisionData
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			got = append(got, d)
		}
	}
	require.Len(t, got, 1)
	require.Equal(t, "call-merge", got[0].ToolCallID)
	require.Equal(t, ModeReadOnly, got[0].Mode)
}
