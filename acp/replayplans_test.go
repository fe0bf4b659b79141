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
	"github.com/pixir-go/pixir/workflows"
)

// A replay shows the plan of a run whose runner did not live to write its
// workflow_finished where its run_workflow call ended, as the live session
// did: a run that finished later shows its own plan after it, so a client
// without plan ids (each plan replaces the last) ends the load showing the
// last run's plan, not the plan of the run cut off before it.
func TestAReplayShowsARunCutOffsPlanWhereItsCallEnded(t *testing.T) {
	s := NewServer(nil, Options{})
	in, input := io.Pipe()
	out := &lockedBuffer{}
	conn := s.Serve(in, out, in.Close)
	p := &presenter{s: s, ctx: context.Background(), sessionID: "parent", replaying: true, ends: &stepEnds{}}
	var seq int64
	replay := func(typ runtime.EventType, data any) {
		raw, err := json.Marshal(data)
		require.NoError(t, err)
		seq++
		p.replay(runtime.Event{Seq: seq, SessionID: "parent", Type: typ, Data: raw})
	}
	run := func(wf, call, task string) {
		w := &workflows.Workflow{Steps: []workflows.Step{{ID: "only", Task: task}}}
		require.NoError(t, workflows.Check(w))
		replay(runtime.EventToolCall, runtime.ToolCallData{ToolCallID: call, Name: "run_workflow", Title: "run_workflow"})
		replay(runtime.EventWorkflow, workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: wf, ToolCallID: call, Workflow: w})
		replay(runtime.EventWorkflow, workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: wf, ToolCallID: call,
			StepID: "only", Run: "only", Wave: 1, SubagentID: "sub-" + wf})
	}
	// Run A's runner panicked: no workflow_finished; its call ended failed.
	run("wf-a", "call-a", "task of A")
	replay(runtime.EventToolResult, runtime.ToolResultData{ToolCallID: "call-a", Name: "run_workflow",
		Result: tools.Fail(tools.ErrInternal, "tool run_workflow crashed")})
	// Run B, later, finished.
	run("wf-b", "call-b", "task of B")
	replay(runtime.EventWorkflow, workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-b", ToolCallID: "call-b",
		StepID: "only", Run: "only", Outcome: &workflows.StepOutcome{StepID: "only", Agent: "default", AgentID: "sub-wf-b", Wave: 1,
			SubagentStatus: tools.SubagentCompleted, CheckpointStatus: workflows.CheckpointReady, Summary: "done"}})
	replay(runtime.EventWorkflow, workflows.WorkflowEvent{Kind: workflows.EventWorkflowFinished, WorkflowID: "wf-b", ToolCallID: "call-b",
		Status: workflows.StatusCompleted})
	replay(runtime.EventToolResult, runtime.ToolResultData{ToolCallID: "call-b", Name: "run_workflow", Result: tools.OK("done")})
	p.flushStepEnds()
	p.flushPlans()
	require.NoError(t, input.Close())
	<-conn.Done()

	// What the client was sent, in order: each plan by its one task, and
	// each call's end.
	var got []string
	lines := bufio.NewScanner(bytes.NewReader(out.buf.Bytes()))
	for lines.Scan() {
		var n struct {
			Params struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
					ToolCallID    string `json:"toolCallId"`
					Status        string `json:"status"`
					Entries       []struct {
						Content string `json:"content"`
					} `json:"entries"`
				} `json:"update"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &n))
		switch u := n.Params.Update; {
		case u.SessionUpdate == "plan":
			require.Len(t, u.Entries, 1)
			got = append(got, "plan: "+u.Entries[0].Content)
		case u.SessionUpdate == "tool_call_update" && u.ToolCallID != "" && u.Status != "":
			got = append(got, u.ToolCallID+" "+u.Status)
		}
	}
	require.Equal(t, []string{
		"plan: only: task of A — failed (detached)", "call-a failed",
		"plan: only: task of B — checkpoint_ready", "call-b completed",
	}, got)
}

// A session/load shows the model's plan again where its update_plan call
// ended, as the live session did (plans are not in the Log: the call's
// arguments make it again); a call that failed showed none.
func TestAReplayShowsTheModelsPlan(t *testing.T) {
	for _, byID := range []bool{false, true} {
		s := NewServer(nil, Options{})
		in, input := io.Pipe()
		out := &lockedBuffer{}
		conn := s.Serve(in, out, in.Close)
		p := &presenter{s: s, ctx: context.Background(), sessionID: "parent", replaying: true, plans: byID, ends: &stepEnds{}}
		var seq int64
		replay := func(typ runtime.EventType, data any) {
			raw, err := json.Marshal(data)
			require.NoError(t, err)
			seq++
			p.replay(runtime.Event{Seq: seq, SessionID: "parent", Type: typ, Data: raw})
		}
		call := func(id, args string, result tools.Result) {
			replay(runtime.EventToolCall, runtime.ToolCallData{ToolCallID: id, Name: "update_plan", Title: "Update plan", Arguments: json.RawMessage(args)})
			replay(runtime.EventToolResult, runtime.ToolResultData{ToolCallID: id, Name: "update_plan", Result: result})
		}
		call("c1", `{"entries":[{"content":"look","status":"completed"},{"content":"fix","status":"in_progress","priority":"high"}]}`, tools.OK("ok"))
		call("c2", `{"entries":[{"content":"refused","status":"pending"}]}`, tools.Fail(tools.ErrInvalidArgs, "no"))
		require.NoError(t, input.Close())
		<-conn.Done()

		var plans []string
		lines := bufio.NewScanner(bytes.NewReader(out.buf.Bytes()))
		for lines.Scan() {
			var n struct {
				Params struct {
					Update struct {
						SessionUpdate string           `json:"sessionUpdate"`
						Entries       []PlanEntry      `json:"entries"`
						Plan          *PlanItemsUpdate `json:"plan"`
					} `json:"update"`
				} `json:"params"`
			}
			require.NoError(t, json.Unmarshal(lines.Bytes(), &n))
			u := n.Params.Update
			entries := u.Entries
			switch u.SessionUpdate {
			case "plan":
			case "plan_update":
				require.Equal(t, runtime.AgentPlanID, u.Plan.PlanID)
				entries = u.Plan.Entries
			default:
				continue
			}
			line := u.SessionUpdate + ":"
			for _, e := range entries {
				line += " " + e.Content + "/" + e.Status + "/" + e.Priority
			}
			plans = append(plans, line)
		}
		kind := "plan"
		if byID {
			kind = "plan_update"
		}
		require.Equal(t, []string{kind + ": look/completed/medium fix/in_progress/high"}, plans)
	}
}
