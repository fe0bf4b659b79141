package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
)

// A workflow step's Subagent call ends when its checkpoint is decided, as
// the checkpoint says; ends no workflow waits for (the step's child sent
// input after the workflow ended) are sent at once, and the ends held when
// the workflow ends go out in the order they came.
func TestAStepsCallEndsWhenItsCheckpointIsDecided(t *testing.T) {
	s := NewServer(nil, Options{})
	in, input := io.Pipe()
	var out lockedBuffer
	conn := s.Serve(in, &out, in.Close)
	p := &presenter{s: s, ctx: context.Background(), sessionID: "parent"}
	seq := int64(0)
	emit := func(typ runtime.EventType, data any) {
		raw, err := json.Marshal(data)
		require.NoError(t, err)
		seq++
		p.live(runtime.Event{Seq: seq, SessionID: "parent", Type: typ, Data: raw})
	}
	child := func(id string, ev tools.SubagentEvent) {
		emit(runtime.EventSubagent, runtime.SubagentEventData{Event: ev, SubagentID: id, ChildSessionID: "c-" + id, Name: "step-" + id,
			Agent: "default", Task: "t", Status: tools.SubagentCompleted})
	}
	workflow := func(kind, subagent, status string) {
		d := map[string]any{"kind": kind, "workflow_id": "wf"}
		switch kind {
		case "step_scheduled":
			d["subagent_id"] = subagent
		case "checkpoint_decided":
			d["outcome"] = map[string]any{"run": "step-" + subagent, "agent_id": subagent, "checkpoint_status": status, "summary": "why"}
		}
		emit(runtime.EventWorkflow, d)
	}
	ends := func() []string { // each end sent so far: call id and status
		var got []string
		lines := bufio.NewScanner(bytes.NewReader(out.buf.Bytes()))
		for lines.Scan() {
			var n struct {
				Params struct {
					Update struct {
						ToolCallID string `json:"toolCallId"`
						Status     string `json:"status"`
					} `json:"update"`
				} `json:"params"`
			}
			require.NoError(t, json.Unmarshal(lines.Bytes(), &n))
			if u := n.Params.Update; u.Status == "completed" || u.Status == "failed" {
				got = append(got, u.ToolCallID+" "+u.Status)
			}
		}
		return got
	}

	for _, id := range []string{"a", "b", "c", "d"} {
		child(id, tools.SubagentEventQueued)
		workflow("step_scheduled", id, "")
	}
	child("a", tools.SubagentEventFinished) // held
	workflow("checkpoint_decided", "b", "checkpoint_ready")
	child("b", tools.SubagentEventFinished) // decided first: sent at once
	workflow("checkpoint_decided", "a", "partial")
	child("c", tools.SubagentEventFinished) // held, never decided
	child("d", tools.SubagentEventFinished) // held, never decided
	workflow("workflow_finished", "", "")
	// After the workflow: a's child sent input runs again; its end is not
	// the step's, and nothing waits for it.
	child("a", tools.SubagentEventInput)
	child("a", tools.SubagentEventFinished)

	require.NoError(t, input.Close())
	<-conn.Done()
	require.Equal(t, []string{
		"subagent-b completed", "subagent-a failed", "subagent-c completed", "subagent-d completed", "subagent-a completed",
	}, ends())
	require.Empty(t, p.ends.held)
	require.Empty(t, p.ends.awaiting)
	require.Empty(t, p.ends.decided)
}
