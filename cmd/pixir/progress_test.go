package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
)

// The view reads a subagent_event's four members as a whole decode would,
// and refuses what a whole decode refuses.
func TestReadSubagentEventAgreesWithAWholeDecode(t *testing.T) {
	whole, err := json.Marshal(runtime.SubagentEventData{Event: tools.SubagentEventStarted, SubagentID: "sa-1", Name: "s\u00e9\"1",
		WorkspaceMode: "shared", Task: "a long task\nwith \"quotes\" and \\ escapes", Summary: "done"})
	require.NoError(t, err)
	for _, tt := range []struct {
		name string
		data string
		ok   bool
	}{
		{"an event as the runtime writes it", string(whole), true},
		{"a repeated member: the last counts", `{"name":"a","event":"queued","name":"b"}`, true},
		{"members missing", `{"event":"queued"}`, true},
		{"not an object", `["queued"]`, false},
		{"a member of the wrong type", `{"name":1}`, false},
		{"not JSON", `{"name":"a"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var want runtime.SubagentEventData
			wantErr := json.Unmarshal([]byte(tt.data), &want)
			got, ok := readSubagentEvent([]byte(tt.data))
			require.Equal(t, tt.ok, ok)
			require.Equal(t, wantErr == nil, ok)
			if ok {
				require.Equal(t, subagentFields{event: string(want.Event), subagentID: want.SubagentID, name: want.Name, workspaceMode: want.WorkspaceMode}, got)
			}
		})
	}
}
