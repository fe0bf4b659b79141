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

// stepEndsRig presents events as a session's presenters do: workflow and
// Subagent events through the session's observer (watch), tool calls'
// ends through the turn's (turn), both holding ends in the session's one
// stepEnds, and reads what the client was sent.
type stepEndsRig struct {
	t           *testing.T
	watch, turn *presenter
	out         *lockedBuffer
	input       io.Closer
	conn        interface{ Done() <-chan struct{} }
	seq         int64
}

func newStepEndsRig(t *testing.T) *stepEndsRig {
	s := NewServer(nil, Options{})
	in, input := io.Pipe()
	out := &lockedBuffer{}
	conn := s.Serve(in, out, in.Close)
	return &stepEndsRig{t: t, out: out, input: input, conn: conn,
		watch: &presenter{s: s, ctx: context.Background(), sessionID: "parent", ends: s.stepEndsOf("parent")},
		turn:  &presenter{s: s, ctx: context.Background(), sessionID: "parent", ends: s.stepEndsOf("parent")}}
}

func (r *stepEndsRig) emit(p *presenter, typ runtime.EventType, data any) {
	raw, err := json.Marshal(data)
	require.NoError(r.t, err)
	r.seq++
	p.live(runtime.Event{Seq: r.seq, SessionID: "parent", Type: typ, Data: raw})
}

// child presents an event of step id's child.
func (r *stepEndsRig) child(id string, ev tools.SubagentEvent) {
	r.emit(r.watch, runtime.EventSubagent, runtime.SubagentEventData{Event: ev, SubagentID: id, ChildSessionID: "c-" + id, Name: "step-" + id,
		Agent: "default", Task: "t", Status: tools.SubagentCompleted})
}

// workflow presents a workflow_event of run wf (run by call, if any).
func (r *stepEndsRig) workflow(wf, call, kind, subagent, status string) {
	d := map[string]any{"kind": kind, "workflow_id": wf, "tool_call_id": call}
	switch kind {
	case "step_scheduled":
		d["subagent_id"] = subagent
	case "checkpoint_decided":
		d["outcome"] = map[string]any{"run": "step-" + subagent, "agent_id": subagent, "checkpoint_status": status, "summary": "why"}
	}
	r.emit(r.watch, runtime.EventWorkflow, d)
}

// ends closes the connection and lists each end the client was sent:
// call id and status.
func (r *stepEndsRig) ends() []string {
	require.NoError(r.t, r.input.Close())
	<-r.conn.Done()
	var got []string
	lines := bufio.NewScanner(bytes.NewReader(r.out.buf.Bytes()))
	for lines.Scan() {
		var n struct {
			Params struct {
				Update struct {
					ToolCallID string `json:"toolCallId"`
					Status     string `json:"status"`
				} `json:"update"`
			} `json:"params"`
		}
		require.NoError(r.t, json.Unmarshal(lines.Bytes(), &n))
		if u := n.Params.Update; u.Status == "completed" || u.Status == "failed" {
			got = append(got, u.ToolCallID+" "+u.Status)
		}
	}
	return got
}

func (r *stepEndsRig) empty() {
	e := r.watch.ends
	require.Empty(r.t, e.held)
	require.Empty(r.t, e.awaiting)
	require.Empty(r.t, e.decided)
}

// A workflow step's Subagent call ends when its checkpoint is decided, as
// the checkpoint says; ends no workflow waits for (the step's child sent
// input after the workflow ended) are sent at once, and the ends held when
// the workflow ends go out in the order they came.
func TestAStepsCallEndsWhenItsCheckpointIsDecided(t *testing.T) {
	r := newStepEndsRig(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		r.child(id, tools.SubagentEventQueued)
		r.workflow("wf", "", "step_scheduled", id, "")
	}
	r.child("a", tools.SubagentEventFinished) // held
	r.workflow("wf", "", "checkpoint_decided", "b", "checkpoint_ready")
	r.child("b", tools.SubagentEventFinished) // decided first: sent at once
	r.workflow("wf", "", "checkpoint_decided", "a", "partial")
	r.child("c", tools.SubagentEventFinished) // held, never decided
	r.child("d", tools.SubagentEventFinished) // held, never decided
	r.workflow("wf", "", "workflow_finished", "", "")
	// After the workflow: a's child sent input runs again; its end is not
	// the step's, and nothing waits for it.
	r.child("a", tools.SubagentEventInput)
	r.child("a", tools.SubagentEventFinished)

	require.Equal(t, []string{
		"subagent-b completed", "subagent-a failed", "subagent-c completed", "subagent-d completed", "subagent-a completed",
	}, r.ends())
	r.empty()
}

// Every step call a workflow run holds ends when the run does, whatever
// ends it: its workflow_finished releases its own steps only (another run
// of the session goes on holding its own), and a run whose runner did not
// live to write one (a panic, recovered as the run_workflow call's
// internal failure) is over when its call ends, seen by the turn's
// presenter.
func TestAStepsHeldEndIsReleasedWhenItsRunEndsAnyhow(t *testing.T) {
	r := newStepEndsRig(t)
	r.child("a", tools.SubagentEventQueued)
	r.workflow("wf-1", "call-1", "step_scheduled", "a", "")
	r.child("b", tools.SubagentEventQueued)
	r.workflow("wf-2", "call-2", "step_scheduled", "b", "")
	r.child("a", tools.SubagentEventFinished) // held by wf-1
	r.child("b", tools.SubagentEventFinished) // held by wf-2
	r.workflow("wf-2", "call-2", "workflow_finished", "", "")
	r.emit(r.turn, runtime.EventToolResult, runtime.ToolResultData{ToolCallID: "call-2", Name: "run_workflow", Result: tools.OK("done")})
	// wf-1's runner panicked: no checkpoint, no workflow_finished; its
	// call ends failed.
	r.emit(r.turn, runtime.EventToolResult, runtime.ToolResultData{ToolCallID: "call-1", Name: "run_workflow",
		Result: tools.Fail(tools.ErrInternal, "tool run_workflow crashed")})

	require.Equal(t, []string{
		"subagent-b completed", "call-2 completed", "subagent-a completed", "call-1 failed",
	}, r.ends())
	r.empty()
}
