package inspect

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

var t0 = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// ev is one event to put in a constructed Log: its data as a Go value, or
// raw JSON when it is a string.
type ev struct {
	typ  runtime.EventType
	data any
}

// logOf stamps events as the Log would: seq from 1, a second apart.
func logOf(t *testing.T, evs ...ev) []runtime.Event {
	t.Helper()
	out := make([]runtime.Event, len(evs))
	for i, e := range evs {
		raw, ok := e.data.(string)
		if !ok {
			b, err := json.Marshal(e.data)
			require.NoError(t, err)
			raw = string(b)
		}
		out[i] = runtime.Event{
			ID: "ev" + string(rune('a'+i%26)), SessionID: "s1", Seq: int64(i + 1),
			TS: t0.Add(time.Duration(i) * time.Second), Type: e.typ, Data: json.RawMessage(raw),
		}
	}
	return out
}

func user(text string) ev {
	return ev{runtime.EventUserMessage, runtime.UserMessageData{Text: text}}
}

func say(text string, callIDs ...string) ev {
	d := runtime.AssistantMessageData{Text: text}
	for _, id := range callIDs {
		d.ToolCalls = append(d.ToolCalls, provider.ToolCall{ID: id, Name: "tool"})
	}
	return ev{runtime.EventAssistantMessage, d}
}

func call(id, name string) ev {
	return ev{runtime.EventToolCall, runtime.ToolCallData{ToolCallID: id, Name: name, Title: "Title of " + name, Posture: tools.PostureMutation}}
}

func result(id, name string, res tools.Result, ms int64) ev {
	return ev{runtime.EventToolResult, runtime.ToolResultData{ToolCallID: id, Name: name, Result: res, ElapsedMS: ms}}
}

func allowed(id, tool string) ev {
	return ev{runtime.EventPermissionDecision, runtime.PermissionDecisionData{ToolCallID: id, Tool: tool, Mode: runtime.ModeAuto, Decision: "allowed", Source: "mode"}}
}

// child is a subagent_event as the runtime writes it: the task only on
// the queued event of the spawn (withTask: on every event, as Logs before
// 2026-11-24 have it).
func child(event tools.SubagentEvent, id, callID string, status tools.SubagentStatus, more ...func(*runtime.SubagentEventData)) ev {
	d := runtime.SubagentEventData{
		Event: event, ParentID: "s1", SubagentID: id, ParentToolCallID: callID, Agent: "default",
		Depth: 1, Status: status, WorkspaceMode: "isolated", ElapsedMS: 42,
	}
	if event == "queued" {
		d.Task = "look around\nand list"
	} else {
		d.ChildSessionID, d.ChildLog = "c-"+id, "/ws/.pixir/subagents/"+id+"/c-"+id+".ndjson"
	}
	for _, f := range more {
		f(&d)
	}
	return ev{runtime.EventSubagent, d}
}

func withTask(d *runtime.SubagentEventData) { d.Task = "look around\nand list" }

func wf(d workflows.WorkflowEvent) ev { return ev{runtime.EventWorkflow, d} }

var twoSteps = &workflows.Workflow{Name: "pair", Steps: []workflows.Step{
	{ID: "a", Task: "do a", Agent: "explorer"},
	{ID: "b", Task: "do b", DependsOn: []string{"a"}},
}}

func ready(step, agentID string, wave int) *workflows.StepOutcome {
	return &workflows.StepOutcome{
		StepID: step, Agent: "explorer", AgentID: agentID, Wave: wave, DependsOn: []string{},
		SubagentStatus: "completed", CheckpointStatus: workflows.CheckpointReady, Summary: "did " + step + "\nin detail", ElapsedMS: 7,
	}
}

// toolCalls lists the tool calls of a turn, in order.
func toolCalls(t *Turn) []*ToolCall {
	var out []*ToolCall
	for _, it := range t.Items {
		if it.Kind == KindToolCall {
			out = append(out, it.ToolCall)
		}
	}
	return out
}

func TestInspectFoldTurns(t *testing.T) {
	cases := []struct {
		name   string
		events []ev
		check  func(t *testing.T, s *Session)
	}{
		{
			name: "a completed turn with a permission decision on its call",
			events: []ev{
				user("create a file"), say("writing", "call_1_1"), call("call_1_1", "write"), allowed("call_1_1", "write"),
				result("call_1_1", "write", tools.OK("done"), 3), say("Done."),
			},
			check: func(t *testing.T, s *Session) {
				require.Equal(t, "s1", s.SessionID)
				require.Equal(t, "create a file", s.Title)
				require.Len(t, s.Turns, 1)
				tn := s.Turns[0]
				require.Equal(t, 1, tn.Index)
				require.Equal(t, TurnCompleted, tn.Status)
				require.Equal(t, t0, tn.TS)
				require.Equal(t, []string{KindAssistantMessage, KindToolCall, KindAssistantMessage}, kinds(tn))
				tc := toolCalls(tn)[0]
				require.Equal(t, ToolCall{ToolCallID: "call_1_1", Name: "write", Title: "Title of write", Posture: "mutation", Status: ToolOK, ElapsedMS: 3,
					Permission: &Permission{ToolCallID: "call_1_1", Tool: "write", Mode: "auto", Decision: "allowed", Source: "mode"}}, *tc)
				require.Equal(t, 1, tn.Items[0].Message.ToolCalls)
			},
		},
		{
			name: "a failed tool call keeps its error kind; a provider failure fails the turn",
			events: []ev{
				user("read it"), say("", "call_1_1"), call("call_1_1", "read"),
				result("call_1_1", "read", tools.Fail(tools.ErrInvalidArgs, "/path: got number, want string"), 0),
				{runtime.EventTurnFailed, runtime.TurnFailedData{Kind: tools.ErrProviderError, Message: "upstream exploded"}},
			},
			check: func(t *testing.T, s *Session) {
				tn := s.Turns[0]
				require.Equal(t, TurnFailed, tn.Status)
				require.Equal(t, &Failure{Kind: "provider_error", Message: "upstream exploded"}, tn.Error)
				tc := toolCalls(tn)[0]
				require.Equal(t, ToolFailed, tc.Status)
				require.Equal(t, &Failure{Kind: "invalid_args", Message: "/path: got number, want string"}, tc.Error)
				require.Equal(t, KindTurnFailed, tn.Items[len(tn.Items)-1].Kind)
			},
		},
		{
			name: "an MCP server that stopped is a notice in the turn it happened in",
			events: []ev{
				user("ask the tracker"), say("", "call_1_1"), call("call_1_1", "mcp__tracker__find"),
				{runtime.EventNotice, runtime.NoticeData{Source: "mcp", Server: "tracker", Severity: "error",
					Title: `MCP server "tracker" stopped (it exited: exit status 3); its 4 tools are withdrawn`}},
				result("call_1_1", "mcp__tracker__find", tools.Fail(tools.ErrInternal, "the MCP server \"tracker\" stopped during the call"), 9),
				say("The tracker is gone."),
			},
			check: func(t *testing.T, s *Session) {
				tn := s.Turns[0]
				require.Equal(t, []string{KindToolCall, KindNotice, KindAssistantMessage}, kinds(tn)[1:])
				require.Equal(t, "tracker", tn.Items[2].Notice.Server)
				var b strings.Builder
				require.NoError(t, Render(&b, s, RenderOptions{}))
				require.Contains(t, b.String(), `notice (error): MCP server "tracker" stopped (it exited: exit status 3); its 4 tools are withdrawn`)
			},
		},
		{
			name:   "a reply cut off by a cancel",
			events: []ev{user("slow"), {runtime.EventAssistantMessage, runtime.AssistantMessageData{Text: "Here is a deliberately", Partial: true}}},
			check: func(t *testing.T, s *Session) {
				require.Equal(t, TurnCancelled, s.Turns[0].Status)
				require.True(t, s.Turns[0].Items[0].Message.Partial)
			},
		},
		{
			name: "calls skipped by a cancel have a result and no tool_call",
			events: []ev{
				user("two things"), say("", "call_1_1", "call_1_2"), call("call_1_1", "bash"),
				result("call_1_1", "bash", tools.Fail(tools.ErrCancelled, "the call was cancelled"), 5),
				result("call_1_2", "read", tools.Fail(tools.ErrCancelled, "not run: the turn was cancelled before this call started"), 0),
			},
			check: func(t *testing.T, s *Session) {
				tn := s.Turns[0]
				require.Equal(t, TurnCancelled, tn.Status)
				calls := toolCalls(tn)
				require.Len(t, calls, 2)
				require.Equal(t, "read", calls[1].Name)
				require.Equal(t, ToolFailed, calls[1].Status)
				require.Equal(t, "cancelled", calls[1].Error.Kind)
			},
		},
		{
			name: "a call without a result, in a turn without an answer",
			events: []ev{
				user("hang"), say("Starting", "call_1_1"), call("call_1_1", "bash"),
			},
			check: func(t *testing.T, s *Session) {
				require.Equal(t, TurnIncomplete, s.Turns[0].Status)
				require.Equal(t, ToolUnfinished, toolCalls(s.Turns[0])[0].Status)
			},
		},
		{
			name: "a denied permission about no call of the turn is an item of its own",
			events: []ev{
				user("x"), {runtime.EventPermissionDecision, runtime.PermissionDecisionData{ToolCallID: "gone", Tool: "bash", Mode: runtime.ModeReadOnly, Decision: "denied", Source: "mode", Reason: "read_only"}},
				say("ok"),
			},
			check: func(t *testing.T, s *Session) {
				tn := s.Turns[0]
				require.Equal(t, []string{KindPermissionDecision, KindAssistantMessage}, kinds(tn))
				require.Equal(t, "denied", tn.Items[0].Permission.Decision)
			},
		},
		{
			name: "turns split at each user_message; events before the first are turn 0",
			events: []ev{
				call("early", "read"), result("early", "read", tools.OK("x"), 1),
				user("one"), say("1"), user("two"), say("2"), user("three"),
			},
			check: func(t *testing.T, s *Session) {
				require.Len(t, s.Turns, 4)
				var idx []int
				var st []string
				for _, tn := range s.Turns {
					idx, st = append(idx, tn.Index), append(st, tn.Status)
				}
				require.Equal(t, []int{0, 1, 2, 3}, idx)
				require.Equal(t, []string{TurnIncomplete, TurnCompleted, TurnCompleted, TurnIncomplete}, st)
				require.Equal(t, "one", s.Title)
				require.Equal(t, "two", s.Turns[2].Prompt)
			},
		},
		{
			name: "data that does not decode is counted and left out",
			events: []ev{
				user("x"), {runtime.EventToolCall, `"not an object"`}, {runtime.EventSubagent, `{}`}, say("y"),
				{runtime.EventProviderUsage, `{"provider":"scripted"}`}, {runtime.EventReasoning, `{"text":"hm"}`},
			},
			check: func(t *testing.T, s *Session) {
				require.Equal(t, 6, s.Load.Events)
				require.Equal(t, 2, s.Load.UndecodedEvents)
				require.Equal(t, []string{KindAssistantMessage}, kinds(s.Turns[0]))
			},
		},
		{
			// Null data decoded as an empty result: the tree showed a
			// call with no name, failed; a type it does not know was
			// left out and not said.
			name: "null data and a type this Pixir does not know are counted and left out",
			events: []ev{
				user("x"), {runtime.EventToolResult, `null`}, {runtime.EventType("mode_changed"), `{"mode":"ask"}`}, say("y"),
			},
			check: func(t *testing.T, s *Session) {
				require.Equal(t, 2, s.Load.UndecodedEvents)
				require.Equal(t, []string{KindAssistantMessage}, kinds(s.Turns[0]))
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, Fold(logOf(t, c.events...)))
		})
	}
}

func kinds(t *Turn) []string {
	var out []string
	for _, it := range t.Items {
		out = append(out, it.Kind)
	}
	return out
}

func TestInspectFoldSubagents(t *testing.T) {
	cases := []struct {
		name   string
		events []ev
		check  func(t *testing.T, s *Session)
	}{
		{
			name: "a child nests under the spawn_agent of its turn, though ids repeat across turns, and ends after the turn",
			events: []ev{
				user("one"), say("", "call_1_1"), call("call_1_1", "read"), result("call_1_1", "read", tools.OK("x"), 0), say("ok"),
				user("delegate"), say("", "call_1_1"), call("call_1_1", "spawn_agent"),
				child("queued", "sa-1", "call_1_1", "queued"), result("call_1_1", "spawn_agent", tools.OK("queued"), 1),
				child("started", "sa-1", "call_1_1", "running"), say("spawned"),
				user("later"),
				child("input", "sa-1", "call_1_1", "running"),
				child("finished", "sa-1", "call_1_1", "completed", func(d *runtime.SubagentEventData) { d.Summary = "Here is what ls shows:\n\nhello.txt" }),
				say("fine"),
			},
			check: func(t *testing.T, s *Session) {
				require.Empty(t, toolCalls(s.Turns[0])[0].Subagents)
				spawn := toolCalls(s.Turns[1])[0]
				require.Len(t, spawn.Subagents, 1)
				require.Equal(t, &Subagent{
					SubagentID: "sa-1", Agent: "default", Task: "look around\nand list", Status: "completed", Event: "finished", ElapsedMS: 42,
					Summary: "Here is what ls shows:\n\nhello.txt", Inputs: 1, Depth: 1, WorkspaceMode: "isolated",
					ChildSessionID: "c-sa-1", ChildLog: "/ws/.pixir/subagents/sa-1/c-sa-1.ndjson", ParentToolCallID: "call_1_1",
				}, spawn.Subagents[0])
				require.True(t, spawn.Subagents[0].Ended())
				require.Empty(t, s.Subagents)
				require.Equal(t, TurnCompleted, s.Turns[2].Status, "background events do not change a turn's status")
			},
		},
		{
			name: "a child still running keeps its last status; a failed one its error",
			events: []ev{
				user("spawn two"), say("", "call_1_1", "call_1_2"), call("call_1_1", "spawn_agent"), call("call_1_2", "spawn_agent"),
				child("queued", "sa-1", "call_1_1", "queued"), child("started", "sa-1", "call_1_1", "running"),
				child("queued", "sa-2", "call_1_2", "queued"),
				child("failed", "sa-2", "call_1_2", "failed", func(d *runtime.SubagentEventData) {
					d.ChildSessionID, d.ChildLog = "", ""
					d.Error = &tools.Failure{Kind: tools.ErrProviderError, Message: "boom"}
				}),
			},
			check: func(t *testing.T, s *Session) {
				calls := toolCalls(s.Turns[0])
				a, b := calls[0].Subagents[0], calls[1].Subagents[0]
				require.Equal(t, tools.SubagentRunning, a.Status)
				require.False(t, a.Ended())
				require.Equal(t, tools.SubagentFailed, b.Status)
				require.Equal(t, &Failure{Kind: "provider_error", Message: "boom"}, b.Error)
				require.Empty(t, b.ChildLog, "never started: no child Log")
			},
		},
		{
			name: "a Log from before 2026-11-24 repeats the task on every event: the same child",
			events: []ev{
				user("delegate"), say("", "call_1_1"), call("call_1_1", "spawn_agent"),
				child("queued", "sa-1", "call_1_1", "queued"), result("call_1_1", "spawn_agent", tools.OK("queued"), 1),
				child("started", "sa-1", "call_1_1", "running", withTask, func(d *runtime.SubagentEventData) { d.Input = d.Task }),
				child("finished", "sa-1", "call_1_1", "completed", withTask),
			},
			check: func(t *testing.T, s *Session) {
				sa := toolCalls(s.Turns[0])[0].Subagents[0]
				require.Equal(t, "look around\nand list", sa.Task)
				require.Zero(t, sa.Inputs)
			},
		},
		{
			name:   "a child whose call is not in the Log is listed at the top",
			events: []ev{child("queued", "sa-9", "call_7_1", "queued"), user("x"), say("y")},
			check: func(t *testing.T, s *Session) {
				require.Len(t, s.Subagents, 1)
				require.Equal(t, "sa-9", s.Subagents[0].SubagentID)
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, Fold(logOf(t, c.events...)))
		})
	}
}

func TestInspectFoldWorkflows(t *testing.T) {
	started := wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-1", ToolCallID: "call_1_1", Workflow: twoSteps})
	cases := []struct {
		name   string
		events []ev
		check  func(t *testing.T, s *Session)
	}{
		{
			name: "a finished run under its run_workflow call, with its steps and their children",
			events: []ev{
				user("run a workflow"), say("", "call_1_1"), call("call_1_1", "run_workflow"), allowed("call_1_1", "run_workflow"),
				started,
				child("queued", "sa-a", "call_1_1", "queued", func(d *runtime.SubagentEventData) { d.Name = "a" }),
				wf(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", ToolCallID: "call_1_1", StepID: "a", Wave: 1, SubagentID: "sa-a"}),
				child("started", "sa-a", "call_1_1", "running", func(d *runtime.SubagentEventData) { d.Name = "a" }),
				child("finished", "sa-a", "call_1_1", "completed", func(d *runtime.SubagentEventData) { d.Name = "a" }),
				wf(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-1", ToolCallID: "call_1_1", StepID: "a", Outcome: ready("a", "sa-a", 1)}),
				child("queued", "sa-b", "call_1_1", "queued", func(d *runtime.SubagentEventData) { d.Name = "b" }),
				wf(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", ToolCallID: "call_1_1", StepID: "b", Wave: 2, SubagentID: "sa-b"}),
				wf(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-1", ToolCallID: "call_1_1", StepID: "b", Outcome: ready("b", "sa-b", 2)}),
				wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowFinished, WorkflowID: "wf-1", ToolCallID: "call_1_1", Status: "completed", ElapsedMS: 99}),
				result("call_1_1", "run_workflow", tools.OK("table"), 100), say("done"),
			},
			check: func(t *testing.T, s *Session) {
				rw := toolCalls(s.Turns[0])[0]
				require.Empty(t, rw.Subagents, "a step's child shows under its step")
				require.Empty(t, s.Subagents)
				require.Len(t, rw.Workflows, 1)
				w := rw.Workflows[0]
				require.Equal(t, "wf-1", w.WorkflowID)
				require.Equal(t, "pair", w.Name)
				require.Equal(t, "call_1_1", w.ToolCallID)
				require.Equal(t, workflows.StatusCompleted, w.Status)
				require.Empty(t, w.StoppedBy)
				require.Equal(t, int64(99), w.ElapsedMS)
				require.Equal(t, 2, w.Summary.CheckpointReadySteps)
				require.Len(t, w.Steps, 2)
				require.Equal(t, &Step{
					StepID: "a", Agent: "explorer", Wave: 1, CheckpointStatus: "checkpoint_ready", SubagentStatus: "completed",
					Summary: "did a\nin detail", ElapsedMS: 7, SubagentID: "sa-a", ChildSessionID: "c-sa-a",
					ChildLog: "/ws/.pixir/subagents/sa-a/c-sa-a.ndjson",
				}, w.Steps[0])
				require.Empty(t, w.Steps[1].ChildLog, "sa-b never started")
			},
		},
		{
			name: "an interrupted run shows as Rebuild makes it: running steps detached, the rest held",
			events: []ev{
				user("run a workflow"), say("", "call_1_1"), call("call_1_1", "run_workflow"), started,
				wf(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", ToolCallID: "call_1_1", StepID: "a", Wave: 1, SubagentID: "sa-a"}),
				child("started", "sa-a", "call_1_1", "running"),
			},
			check: func(t *testing.T, s *Session) {
				rw := toolCalls(s.Turns[0])[0]
				require.Equal(t, ToolUnfinished, rw.Status)
				w := rw.Workflows[0]
				require.Equal(t, workflows.StoppedInterrupted, w.StoppedBy)
				require.Equal(t, workflows.StatusFailed, w.Status)
				a, b := w.Steps[0], w.Steps[1]
				require.Equal(t, tools.SubagentDetached, a.SubagentStatus)
				require.Equal(t, workflows.CheckpointFailed, a.CheckpointStatus)
				require.Equal(t, "detached", a.Error.Kind)
				require.Equal(t, "/ws/.pixir/subagents/sa-a/c-sa-a.ndjson", a.ChildLog)
				require.Equal(t, workflows.CheckpointHeld, b.CheckpointStatus)
				require.Equal(t, tools.SubagentNotStarted, b.SubagentStatus)
				require.Equal(t, workflows.StoppedInterrupted, b.HeldReason)
				require.Equal(t, TurnIncomplete, s.Turns[0].Status)
			},
		},
		{
			// session/cancel in the middle of a workflow: run_workflow's
			// result is the partial outcome (not a cancelled error), and
			// the turn was cancelled, not left incomplete.
			name: "a turn whose workflow a cancel stopped is cancelled; another turn's call of the same id is not",
			events: []ev{
				user("run a workflow"), say("", "call_1_1"), call("call_1_1", "run_workflow"), started,
				wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowFinished, WorkflowID: "wf-1", ToolCallID: "call_1_1", Status: "partial", StoppedBy: workflows.StoppedCancelled, ElapsedMS: 5}),
				result("call_1_1", "run_workflow", tools.Result{OK: false, Output: "partial"}, 6),
				user("again"), say("", "call_1_1"), call("call_1_1", "run_workflow"),
				result("call_1_1", "run_workflow", tools.Result{OK: false, Output: "partial"}, 6),
			},
			check: func(t *testing.T, s *Session) {
				require.Equal(t, TurnCancelled, s.Turns[0].Status)
				require.Equal(t, TurnIncomplete, s.Turns[1].Status, "no cancel in the second turn")
			},
		},
		{
			name: "a held step says why",
			events: []ev{
				wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-2", Workflow: twoSteps}),
				wf(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-2", StepID: "a", Outcome: &workflows.StepOutcome{
					StepID: "a", Agent: "explorer", AgentID: "sa-a", Wave: 1, SubagentStatus: "failed", CheckpointStatus: workflows.CheckpointFailed,
					Error: &tools.Failure{Kind: tools.ErrProviderError, Message: "boom"},
				}}),
				wf(workflows.WorkflowEvent{Kind: workflows.EventStepHeld, WorkflowID: "wf-2", StepID: "b", HeldReason: workflows.HeldDependency, BlockedBy: []string{"a"}}),
				wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowFinished, WorkflowID: "wf-2", Status: "failed", ElapsedMS: 5}),
			},
			check: func(t *testing.T, s *Session) {
				require.Empty(t, s.Turns, "a run outside any turn opens no turn")
				require.Len(t, s.Workflows, 1, "a run outside any turn is at the top")
				w := s.Workflows[0]
				require.Equal(t, workflows.StatusFailed, w.Status)
				require.Equal(t, &Failure{Kind: "provider_error", Message: "boom"}, w.Steps[0].Error)
				require.Equal(t, workflows.HeldDependency, w.Steps[1].HeldReason)
				require.Equal(t, []string{"a"}, w.Steps[1].BlockedBy)
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, Fold(logOf(t, c.events...)))
		})
	}
}

func TestInspectFoldJSONIsTheTree(t *testing.T) {
	s := Fold(logOf(t, user("hi"), say("hello")))
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, []any{}, back["subagents"], "empty lists are [] for scripts")
	require.Equal(t, []any{}, back["workflows"])
	turn := back["turns"].([]any)[0].(map[string]any)
	require.Equal(t, "completed", turn["status"])
	require.Equal(t, "hello", turn["items"].([]any)[0].(map[string]any)["message"].(map[string]any)["text"])
}
