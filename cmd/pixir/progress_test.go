package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
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

// A run's row goes below its step's last row: a step's placeholder
// becomes its first run's, and rows stay in the steps' order whatever
// order their runs show up in.
func TestViewRowsStayGroupedByStep(t *testing.T) {
	w := &workflows.Workflow{Steps: []workflows.Step{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	v := newWorkflowView(io.Discard, false, w)
	for _, run := range []string{"b[1]", "a", "a#2", "b[2]", "a#3", "b[3]"} {
		r := v.row(run, "")
		require.NotNil(t, r)
		r.state = rowReady // decided: the next run gets a row of its own
	}
	require.Nil(t, v.row("nope#2", ""), "a run of no step has no row")
	var ids []string
	v.eachRow(func(r *stepRow) { ids = append(ids, r.id) })
	require.Equal(t, []string{"a", "a#2", "a#3", "b[1]", "b[2]", "b[3]", "c"}, ids)
	require.Same(t, v.row("b[2]", ""), v.byID["b[2]"])
}

// TestAQuestionIsNotDrawnOver: while a question is on the terminal (a
// Subagent asks while the parent waits for its model) the waiting line is
// off it and stays off; it comes back once the question is answered.
func TestAQuestionIsNotDrawnOver(t *testing.T) {
	var stderr strings.Builder
	v := &turnView{out: newRunOutput(io.Discard, &stderr, false), titles: map[string]string{}}
	v.waiting, v.waitingSince = true, time.Now()
	v.drawWaiting()
	require.Contains(t, stderr.String(), "waiting for the model")

	stderr.Reset()
	resume := v.pause()
	require.Equal(t, "\r\033[K", stderr.String(), "the waiting line is taken off before the question")
	stderr.Reset()
	v.drawWaiting() // a tick while the question waits
	require.Empty(t, stderr.String(), "drawn over the question")

	resume()
	v.drawWaiting()
	require.Contains(t, stderr.String(), "waiting for the model")
}
