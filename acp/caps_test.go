package acp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

// TestMessagesAreBounded: raw tool input and output and plans are cut to
// their bounds, with a marker where something was left out.
func TestMessagesAreBounded(t *testing.T) {
	small := json.RawMessage(`{"a":1}`)
	require.Equal(t, small, capRaw(small))
	big, err := json.Marshal(map[string]string{"x": strings.Repeat("y", maxRawBytes)})
	require.NoError(t, err)
	var marker struct {
		Truncated struct {
			Bytes, Limit int
			Note         string
		}
	}
	require.NoError(t, json.Unmarshal(capRaw(big), &marker))
	require.Equal(t, len(big), marker.Truncated.Bytes)
	require.Equal(t, maxRawBytes, marker.Truncated.Limit)
	require.Nil(t, rawInput(json.RawMessage(`{"broken"`)))
	require.Equal(t, capRaw(big), rawInput(big))

	var entries []tools.PlanEntry
	for i := range 1000 {
		entries = append(entries, tools.PlanEntry{Content: fmt.Sprintf("step %d %s", i, strings.Repeat("z", 2000)), Status: tools.PlanPending, Priority: tools.PlanPriorityMedium})
	}
	plan := planUpdate(entries)
	require.Len(t, plan.Entries, maxPlanEntries)
	require.Equal(t, "… and 801 more entries", plan.Entries[maxPlanEntries-1].Content)
	require.LessOrEqual(t, len(plan.Entries[0].Content), maxPlanEntryBytes+200)
	require.Contains(t, plan.Entries[0].Content, "[… truncated")
	require.Len(t, planUpdate(entries[:maxPlanEntries]).Entries, maxPlanEntries, "a plan that fits is whole")
	require.Equal(t, "step 199 "+strings.Repeat("z", 10), planUpdate(entries[:maxPlanEntries]).Entries[199].Content[:19])
}
