// Package inspect folds a Session's Log into the tree `pixir inspect`
// shows: the turns, each tool call with its result and permission
// decision, the Subagents a call spawned and the Workflows it ran, each
// with its status. It reads the Log alone; nothing has to be live.
package inspect

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// Turn statuses, as far as the Log tells them.
const (
	// TurnCompleted: the model's last reply asked for no tool.
	TurnCompleted = "completed"
	// TurnFailed: the turn ended on a provider failure (turn_failed).
	TurnFailed = "failed"
	// TurnCancelled: a reply was cut off, or the last calls were
	// cancelled (a workflow among them stopped by the cancel).
	TurnCancelled = "cancelled"
	// TurnPartial: the turn stopped at a limit (StopReason says which:
	// max_turn_requests, max_tokens); the work so far stands.
	TurnPartial = "partial"
	// TurnIncomplete: no final reply is in the Log, and no stop: the turn
	// is still running or its process ended (or, in a Log written before
	// 2026-11-25, which kept no stop, it was cancelled between model calls
	// or stopped at the model-call limit).
	TurnIncomplete = "incomplete"
)

// Tool call statuses.
const (
	ToolOK     = "ok"
	ToolFailed = "failed"
	// ToolUnfinished: no tool_result is in the Log (still running, or the
	// process ended).
	ToolUnfinished = "unfinished"
)

// Item kinds.
const (
	KindAssistantMessage   = "assistant_message"
	KindToolCall           = "tool_call"
	KindTurnFailed         = "turn_failed"
	KindPermissionDecision = "permission_decision"
	KindNotice             = "notice"
	// KindSummaries: the ends of children the model did not wait for,
	// told to it before a model call.
	KindSummaries = "subagent_summaries"
	// KindCompaction: older messages replaced by a summary.
	KindCompaction = "compaction"
)

// Session is the whole tree of one Session's Log.
type Session struct {
	SessionID string `json:"session_id"`
	Workspace string `json:"workspace,omitempty"`
	// Log is the path of the Session's Log.
	Log       string     `json:"log,omitempty"`
	Title     string     `json:"title,omitempty"`
	Mode      string     `json:"mode,omitempty"`
	Model     string     `json:"model,omitempty"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	// Load says what reading the Log found besides the events: a torn last
	// line (a crash mid-write) or lines that did not decode.
	Load LoadInfo `json:"load"`
	// Usage is what the session spent: its own model calls, and its
	// Subagents' as their last events say.
	Usage budget.Usage `json:"usage"`
	Turns []*Turn      `json:"turns"`
	// Subagents and Workflows that no tool call of a turn started (a
	// `pixir run --workflow` session, or a call the Log lost).
	Subagents []*Subagent `json:"subagents"`
	Workflows []*Workflow `json:"workflows"`
}

// LoadInfo is runtime.LoadReport as shown.
type LoadInfo struct {
	Events       int `json:"events"`
	TornBytes    int `json:"torn_bytes"`
	SkippedLines int `json:"skipped_lines"`
	// UndecodedEvents counts events whose data did not decode as their type
	// says; they are left out of the tree.
	UndecodedEvents int `json:"undecoded_events"`
}

// Turn is a user_message and what follows it until the next one.
type Turn struct {
	// Index counts from 1; 0 is the events before any user_message.
	Index  int       `json:"index"`
	Seq    int64     `json:"seq"`
	TS     time.Time `json:"ts"`
	Prompt string    `json:"prompt"`
	// Status is completed, failed, cancelled, partial or incomplete.
	Status string `json:"status"`
	// StopReason is why the turn stopped, as ACP names it, when the Log
	// says so: a turn that did not end end_turn records it (Logs before
	// 2026-11-25 do not).
	StopReason string `json:"stop_reason,omitempty"`
	// Error is the provider failure of a failed turn.
	Error *Failure `json:"error,omitempty"`
	// Usage is what the turn's own model calls spent (its Subagents' are
	// under each of them).
	Usage *budget.Usage `json:"usage,omitempty"`
	Items []*Item       `json:"items"`
}

// Item is one thing that happened in a turn, in Log order. Kind says
// which of the other fields is set.
type Item struct {
	Kind string `json:"kind"`
	Seq  int64  `json:"seq"`
	// assistant_message
	Message *Message `json:"message,omitempty"`
	// tool_call
	ToolCall *ToolCall `json:"tool_call,omitempty"`
	// turn_failed
	Error *Failure `json:"error,omitempty"`
	// permission_decision about no tool call of the turn
	Permission *Permission `json:"permission,omitempty"`
	// notice: an MCP server that did not start, or stopped
	Notice *runtime.NoticeData `json:"notice,omitempty"`
	// subagent_summaries: the children whose ends were told.
	SubagentIDs []string `json:"subagent_ids,omitempty"`
	// compaction: what replaced the older messages, and why.
	Compaction *runtime.CompactionData `json:"compaction,omitempty"`
}

// Message is an assistant message.
type Message struct {
	Text string `json:"text"`
	// Partial: the turn was cancelled while it streamed.
	Partial bool `json:"partial,omitempty"`
	// ToolCalls counts the tools the reply asked for.
	ToolCalls int `json:"tool_calls,omitempty"`
}

// Failure is a structured error without its details.
type Failure struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// ToolCall is a tool call with what became of it.
type ToolCall struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Title      string `json:"title,omitempty"`
	Posture    string `json:"posture,omitempty"`
	// Status is ok, failed or unfinished.
	Status    string   `json:"status"`
	Error     *Failure `json:"error,omitempty"`
	ElapsedMS int64    `json:"elapsed_ms"`
	// Permission is the decision about the call, for a mutation.
	Permission *Permission `json:"permission,omitempty"`
	// Subagents the call spawned and Workflows it ran.
	Subagents []*Subagent `json:"subagents,omitempty"`
	Workflows []*Workflow `json:"workflows,omitempty"`
}

// Permission is a permission_decision.
type Permission struct {
	ToolCallID string `json:"tool_call_id,omitempty"`
	Tool       string `json:"tool,omitempty"`
	Mode       string `json:"mode"`
	Decision   string `json:"decision"`
	Source     string `json:"source"`
	Option     string `json:"option,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// Subagent is a child as its last subagent_event tells it.
type Subagent struct {
	SubagentID string `json:"subagent_id"`
	Agent      string `json:"agent"`
	// Name is a workflow step's label.
	Name string `json:"name,omitempty"`
	Task string `json:"task"`
	// Status is the last status; Event the last event (queued, started,
	// input, finished, failed, cancelled, closed, timed_out).
	Status           tools.SubagentStatus `json:"status"`
	Event            tools.SubagentEvent  `json:"event"`
	ElapsedMS        int64                `json:"elapsed_ms"`
	Summary          string               `json:"summary,omitempty"`
	Error            *Failure             `json:"error,omitempty"`
	Inputs           int                  `json:"inputs,omitempty"`
	Depth            int                  `json:"depth,omitempty"`
	Workspace        string               `json:"workspace,omitempty"`
	WorkspaceMode    string               `json:"workspace_mode,omitempty"`
	ChildSessionID   string               `json:"child_session_id,omitempty"`
	ChildLog         string               `json:"child_log,omitempty"`
	ParentToolCallID string               `json:"parent_tool_call_id,omitempty"`
	Usage            *budget.Usage        `json:"usage,omitempty"`
}

// Ended reports whether the Log records the child's end.
func (s *Subagent) Ended() bool {
	return s.Status.Ended()
}

// Workflow is one run of a workflow, as workflows.Rebuild makes it.
type Workflow struct {
	WorkflowID string `json:"workflow_id"`
	Name       string `json:"name,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Status is completed, partial or failed; "" when the run's start
	// could not be read.
	Status workflows.Status `json:"status"`
	// StoppedBy is interrupted when the Log holds no end of the run.
	StoppedBy string           `json:"stopped_by,omitempty"`
	ElapsedMS int64            `json:"elapsed_ms"`
	Summary   workflows.Counts `json:"summary"`
	Usage     budget.Usage     `json:"usage"`
	Steps     []*Step          `json:"steps"`
	// Loops are its loop runs: iterations, state, blockers.
	Loops []workflows.LoopOutcome `json:"loops,omitempty"`
	// Commit and Commits are what became of the commit (or commits) of
	// the run's work its spec asked for, as its outcome says.
	Commit  *workflows.CommitReport  `json:"commit,omitempty"`
	Commits []workflows.CommitReport `json:"commits,omitempty"`
	// Uncommitted are the files the run left in the workspace when a
	// commit it asked for was not made (workflows.Uncommitted).
	Uncommitted []string `json:"uncommitted,omitempty"`
}

// Step is one step run with its outcome and its child: a step, one
// iteration of a step in a loop, or one instance of a fan-out.
type Step struct {
	StepID string `json:"step_id"`
	// Run is the run's label (check-plan#2, make[3]); Superseded says a
	// later iteration of its loop ran.
	Run              string                     `json:"run,omitempty"`
	Superseded       bool                       `json:"superseded,omitempty"`
	SkipReason       string                     `json:"skip_reason,omitempty"`
	Agent            string                     `json:"agent"`
	Wave             int                        `json:"wave,omitempty"`
	DependsOn        []string                   `json:"depends_on,omitempty"`
	CheckpointStatus workflows.CheckpointStatus `json:"checkpoint_status"`
	SubagentStatus   tools.SubagentStatus       `json:"subagent_status"`
	Summary          string                     `json:"summary,omitempty"`
	ElapsedMS        int64                      `json:"elapsed_ms"`
	Error            *Failure                   `json:"error,omitempty"`
	Reason           string                     `json:"reason,omitempty"`
	HeldReason       string                     `json:"held_reason,omitempty"`
	BlockedBy        []string                   `json:"blocked_by,omitempty"`
	ReusedFrom       string                     `json:"reused_from,omitempty"`
	SubagentID       string                     `json:"subagent_id,omitempty"`
	ChildSessionID   string                     `json:"child_session_id,omitempty"`
	ChildLog         string                     `json:"child_log,omitempty"`
	// WorkspaceMode and Workspace are where the step's child worked: an
	// isolated one's snapshot holds whatever of its work was not merged.
	WorkspaceMode string `json:"workspace_mode,omitempty"`
	Workspace     string `json:"workspace,omitempty"`
	// SnapshotDeleted: the child was closed later (close_agent, or its
	// session closed), which deletes an isolated child's snapshot with
	// whatever of its work was not merged.
	SnapshotDeleted bool `json:"snapshot_deleted,omitempty"`
	// MergedLater is the last merge_agent of the step's child after the
	// run (not a dry run): where its unmerged work went since.
	MergedLater *LaterMerge `json:"merged_later,omitempty"`
	// SnapshotRemoved: the snapshot is no longer on disk though its child
	// was not closed (pixir gc removed it, or someone by hand); set by
	// Load, which looks.
	SnapshotRemoved bool          `json:"snapshot_removed,omitempty"`
	Usage           *budget.Usage `json:"usage,omitempty"`
	// Merge is what became of an isolated writer's changes (merge-back).
	Merge *workflows.StepMerge `json:"merge,omitempty"`
}

// LaterMerge is a merge_agent of a step's child made after its run.
type LaterMerge struct {
	ToolCallID string            `json:"tool_call_id"`
	TS         time.Time         `json:"ts"`
	Status     tools.MergeStatus `json:"status"`
	Files      int               `json:"files"`
	Conflicts  int               `json:"conflicts,omitempty"`
}

// Fold builds the tree of a Log's events, in order. Events whose data does
// not decode, or of a type this Pixir does not know, are counted in
// Load.UndecodedEvents and left out.
func Fold(events []runtime.Event) *Session {
	f := &folder{
		s:     &Session{Turns: []*Turn{}, Subagents: []*Subagent{}, Workflows: []*Workflow{}},
		calls: map[string]*ToolCall{}, subagents: map[string]*Subagent{}, runs: map[string]*Workflow{},
		steps: stepChildren(events), mergeCalls: map[string]string{}, merges: map[string]*LaterMerge{},
	}
	f.s.Load.Events = len(events)
	for i := range events {
		ev := &events[i]
		if f.s.SessionID == "" {
			f.s.SessionID = ev.SessionID
		}
		if !f.event(ev) {
			f.s.Load.UndecodedEvents++
		}
	}
	f.endTurn()
	f.rebuildWorkflows()
	for _, sa := range f.subagents {
		if sa.Usage != nil {
			f.s.Usage = f.s.Usage.Add(*sa.Usage)
		}
	}
	if f.s.Title == "" {
		for _, t := range f.s.Turns {
			if t.Index > 0 {
				f.s.Title = oneLine(t.Prompt, 80)
				break
			}
		}
	}
	return f.s
}

// folder is the state of one Fold.
type folder struct {
	s    *Session
	turn *Turn
	// turnCalls are the current turn's tool calls by id; calls the latest
	// call of each id in the whole Log (scripted ids repeat across turns),
	// which is the one a child or a run names when it starts.
	turnCalls map[string]*ToolCall
	calls     map[string]*ToolCall
	// last is the turn's latest assistant message and the calls it made.
	last      *Message
	lastCalls []string
	failed    bool

	subagents map[string]*Subagent
	// steps are the ids of the children that are workflow steps: they
	// are shown under their step, not as Subagents of the call.
	steps  map[string]*Subagent
	runs   map[string]*Workflow
	wfEvts []workflows.WorkflowEvent
	// mergeCalls are the merge_agent calls waiting for their result (the
	// child each merges), merges the last merge made of each child.
	mergeCalls map[string]string
	merges     map[string]*LaterMerge
	// cancelledRuns are the tool calls whose workflow a cancel stopped:
	// the call's result is the partial outcome, not a cancelled error.
	cancelledRuns map[string]bool
}

// stepChildren finds the children that ran workflow steps. A step's
// child is queued before its step_scheduled event, so this is a pass of
// its own.
func stepChildren(events []runtime.Event) map[string]*Subagent {
	out := map[string]*Subagent{}
	for i := range events {
		if events[i].Type != runtime.EventWorkflow {
			continue
		}
		var we workflows.WorkflowEvent
		if json.Unmarshal(events[i].Data, &we) != nil {
			continue
		}
		switch {
		case we.SubagentID != "":
			out[we.SubagentID] = nil
		case we.Outcome != nil && we.Outcome.AgentID != "":
			out[we.Outcome.AgentID] = nil
		}
	}
	return out
}

func decode[T any](ev *runtime.Event) (T, bool) {
	var d T
	if data := bytes.TrimSpace(ev.Data); len(data) == 0 || data[0] != '{' {
		return d, false // null, or not an object: no event's data
	}
	err := json.Unmarshal(ev.Data, &d)
	return d, err == nil
}

// event folds one event; false when its data did not decode.
func (f *folder) event(ev *runtime.Event) bool {
	switch ev.Type {
	case runtime.EventUserMessage:
		d, ok := decode[runtime.UserMessageData](ev)
		if !ok {
			return false
		}
		f.endTurn()
		f.startTurn(ev, d.Text)
	case runtime.EventAssistantMessage:
		d, ok := decode[runtime.AssistantMessageData](ev)
		if !ok {
			return false
		}
		if d.StopReason != "" && f.turn != nil {
			f.turn.StopReason = string(d.StopReason)
		}
		if d.StopReason != "" && d.Text == "" && len(d.ToolCalls) == 0 && !d.Partial {
			return true // only why the turn stopped
		}
		m := &Message{Text: d.Text, Partial: d.Partial, ToolCalls: len(d.ToolCalls)}
		f.last, f.lastCalls = m, nil
		for _, tc := range d.ToolCalls {
			f.lastCalls = append(f.lastCalls, tc.ID)
		}
		f.add(&Item{Kind: KindAssistantMessage, Seq: ev.Seq, Message: m}, ev)
	case runtime.EventToolCall:
		d, ok := decode[runtime.ToolCallData](ev)
		if !ok {
			return false
		}
		tc := &ToolCall{ToolCallID: d.ToolCallID, Name: d.Name, Title: d.Title, Posture: string(d.Posture), Status: ToolUnfinished}
		f.add(&Item{Kind: KindToolCall, Seq: ev.Seq, ToolCall: tc}, ev)
		f.turnCalls[d.ToolCallID] = tc
		f.calls[d.ToolCallID] = tc
		if d.Name == "merge_agent" {
			var a tools.MergeAgentArgs
			if json.Unmarshal(d.Arguments, &a) == nil && a.ID != "" && !a.DryRun {
				f.mergeCalls[d.ToolCallID] = a.ID
			}
		}
	case runtime.EventToolResult:
		d, ok := decode[runtime.ToolResultData](ev)
		if !ok {
			return false
		}
		f.result(ev, d)
	case runtime.EventPermissionDecision:
		d, ok := decode[runtime.PermissionDecisionData](ev)
		if !ok {
			return false
		}
		p := &Permission{ToolCallID: d.ToolCallID, Tool: d.Tool, Mode: string(d.Mode), Decision: d.Decision, Source: d.Source, Option: d.Option, Reason: d.Reason}
		if tc := f.turnCall(d.ToolCallID); tc != nil {
			tc.Permission = p
		} else {
			f.add(&Item{Kind: KindPermissionDecision, Seq: ev.Seq, Permission: p}, ev)
		}
	case runtime.EventTurnFailed:
		d, ok := decode[runtime.TurnFailedData](ev)
		if !ok {
			return false
		}
		fail := &Failure{Kind: string(d.Kind), Message: d.Message}
		f.failed = true
		f.add(&Item{Kind: KindTurnFailed, Seq: ev.Seq, Error: fail}, ev)
		f.turn.Error = fail
	case runtime.EventSubagent:
		d, ok := decode[runtime.SubagentEventData](ev)
		if !ok || d.SubagentID == "" {
			return false
		}
		f.subagent(d)
	case runtime.EventWorkflow:
		d, ok := decode[workflows.WorkflowEvent](ev)
		if !ok {
			return false
		}
		f.workflow(d)
	case runtime.EventNotice:
		d, ok := decode[runtime.NoticeData](ev)
		if !ok {
			return false
		}
		f.add(&Item{Kind: KindNotice, Seq: ev.Seq, Notice: &d}, ev)
	case runtime.EventSubagentSummaries:
		d, ok := decode[runtime.SubagentSummariesData](ev)
		if !ok {
			return false
		}
		f.add(&Item{Kind: KindSummaries, Seq: ev.Seq, SubagentIDs: d.SubagentIDs}, ev)
	case runtime.EventCompaction:
		d, ok := decode[runtime.CompactionData](ev)
		if !ok {
			return false
		}
		f.add(&Item{Kind: KindCompaction, Seq: ev.Seq, Compaction: &d}, ev)
	case runtime.EventProviderUsage:
		d, ok := decode[runtime.ProviderUsageData](ev)
		if !ok {
			return false
		}
		u := budget.Usage{InputTokens: int64(d.InputTokens), OutputTokens: int64(d.OutputTokens), ModelCalls: 1, Cost: d.Cost, Currency: d.Currency}
		f.s.Usage = f.s.Usage.Add(u)
		if f.turn != nil {
			t := f.turn.Usage
			if t == nil {
				t = &budget.Usage{}
			}
			*t = t.Add(u)
			f.turn.Usage = t
		}
	case runtime.EventReasoning:
		// not part of the tree; --events shows it
	default:
		return false // a type this Pixir does not know (a newer Pixir's Log?)
	}
	return true
}

func (f *folder) startTurn(ev *runtime.Event, prompt string) {
	f.turn = &Turn{Index: len(f.s.Turns) + 1, Seq: ev.Seq, TS: ev.TS, Prompt: prompt, Items: []*Item{}}
	if len(f.s.Turns) > 0 && f.s.Turns[0].Index == 0 {
		f.turn.Index--
	}
	f.s.Turns = append(f.s.Turns, f.turn)
	f.turnCalls = map[string]*ToolCall{}
	f.last, f.lastCalls, f.failed = nil, nil, false
}

// add appends an item to the current turn, opening turn 0 for events
// before any user_message.
func (f *folder) add(it *Item, ev *runtime.Event) {
	if f.turn == nil {
		f.startTurn(ev, "")
		f.turn.Index = 0
	}
	f.turn.Items = append(f.turn.Items, it)
}

func (f *folder) turnCall(id string) *ToolCall {
	if f.turn == nil {
		return nil
	}
	return f.turnCalls[id]
}

func (f *folder) result(ev *runtime.Event, d runtime.ToolResultData) {
	tc := f.turnCall(d.ToolCallID)
	if tc == nil || tc.Status != ToolUnfinished {
		// A call cancelled before it started has a result and no
		// tool_call.
		tc = &ToolCall{ToolCallID: d.ToolCallID, Name: d.Name}
		f.add(&Item{Kind: KindToolCall, Seq: ev.Seq, ToolCall: tc}, ev)
		f.turnCalls[d.ToolCallID] = tc
		f.calls[d.ToolCallID] = tc
	}
	if id, ok := f.mergeCalls[d.ToolCallID]; ok && d.Name == "merge_agent" {
		delete(f.mergeCalls, d.ToolCallID)
		var rep tools.MergeReport
		if b, err := json.Marshal(d.Result.Output); err == nil && json.Unmarshal(b, &rep) == nil && rep.Status != "" && !rep.DryRun {
			f.merges[id] = &LaterMerge{ToolCallID: d.ToolCallID, TS: ev.TS, Status: rep.Status, Files: rep.Applied.Count(), Conflicts: len(rep.Conflicts)}
		}
	}
	tc.ElapsedMS = d.ElapsedMS
	tc.Status = ToolOK
	if !d.Result.OK {
		tc.Status = ToolFailed
	}
	if e := d.Result.Error; e != nil {
		tc.Error = &Failure{Kind: string(e.Kind), Message: e.Message}
	}
}

// endTurn settles the current turn's status.
func (f *folder) endTurn() {
	t := f.turn
	if t == nil {
		return
	}
	switch {
	case f.failed:
		t.Status = TurnFailed
	case t.StopReason == string(runtime.StopCancelled):
		t.Status = TurnCancelled
	case t.StopReason == string(runtime.StopMaxTurnRequests) || t.StopReason == string(runtime.StopMaxTokens):
		t.Status = TurnPartial
	case f.last == nil:
		t.Status = TurnIncomplete
	case f.last.Partial:
		t.Status = TurnCancelled
	case len(f.lastCalls) == 0:
		t.Status = TurnCompleted
	default:
		t.Status = TurnIncomplete
		for _, id := range f.lastCalls {
			if tc := f.turnCalls[id]; tc != nil && tc.Error != nil && tc.Error.Kind == string(tools.ErrCancelled) {
				t.Status = TurnCancelled
			}
			if f.cancelledRuns[id] && f.turnCalls[id] != nil && f.turnCalls[id].Status != ToolUnfinished {
				t.Status = TurnCancelled // a workflow the cancel stopped
			}
		}
	}
	f.turn, f.cancelledRuns = nil, nil
}

func (f *folder) subagent(d runtime.SubagentEventData) {
	sa := f.subagents[d.SubagentID]
	if sa == nil {
		sa = &Subagent{SubagentID: d.SubagentID}
		f.subagents[d.SubagentID] = sa
		switch _, isStep := f.steps[d.SubagentID]; {
		case isStep:
			f.steps[d.SubagentID] = sa
		case d.ParentToolCallID != "" && f.calls[d.ParentToolCallID] != nil:
			tc := f.calls[d.ParentToolCallID]
			tc.Subagents = append(tc.Subagents, sa)
		default:
			f.s.Subagents = append(f.s.Subagents, sa)
		}
	}
	sa.Agent, sa.Name, sa.Depth = d.Agent, d.Name, d.Depth
	if d.Task != "" { // on the spawn's queued event (on every event in Logs before 2026-11-24)
		sa.Task = d.Task
	}
	sa.Status, sa.Event, sa.ElapsedMS = d.Status, d.Event, d.ElapsedMS
	sa.Workspace, sa.WorkspaceMode, sa.ParentToolCallID = d.Workspace, d.WorkspaceMode, d.ParentToolCallID
	// The inputs the child ran: each later run (its input event), and a
	// first run that send_input gave its prompt (a child cancelled while
	// queued and then sent input starts with that input, which its started
	// event carries). A started event of a Log before 2026-11-24 carries
	// the task as its input: the task, not an input.
	if d.Event == tools.SubagentEventInput || (d.Event == tools.SubagentEventStarted && d.Input != "" && d.Input != sa.Task) {
		sa.Inputs++
	}
	if d.ChildSessionID != "" {
		sa.ChildSessionID, sa.ChildLog = d.ChildSessionID, d.ChildLog
	}
	if d.Usage != nil {
		sa.Usage = d.Usage
	}
	if sa.Ended() {
		sa.Summary, sa.Error = d.Summary, nil
		if d.Error != nil {
			sa.Error = &Failure{Kind: string(d.Error.Kind), Message: d.Error.Message}
		}
	}
}

func (f *folder) workflow(d workflows.WorkflowEvent) {
	f.wfEvts = append(f.wfEvts, d)
	if d.Kind == workflows.EventWorkflowFinished && d.StoppedBy == workflows.StoppedCancelled && d.ToolCallID != "" {
		if f.cancelledRuns == nil {
			f.cancelledRuns = map[string]bool{}
		}
		f.cancelledRuns[d.ToolCallID] = true
	}
	if d.Kind != workflows.EventWorkflowStarted || f.runs[d.WorkflowID] != nil {
		return
	}
	w := &Workflow{WorkflowID: d.WorkflowID, ToolCallID: d.ToolCallID, Steps: []*Step{}}
	if d.Workflow != nil {
		w.Name = d.Workflow.Name
	}
	f.runs[d.WorkflowID] = w
	if tc := f.calls[d.ToolCallID]; d.ToolCallID != "" && tc != nil {
		tc.Workflows = append(tc.Workflows, w)
	} else {
		f.s.Workflows = append(f.s.Workflows, w)
	}
}

// rebuildWorkflows fills each run with the Outcome workflows.Rebuild
// makes of the Log's workflow events, an interrupted run included.
func (f *folder) rebuildWorkflows() {
	for _, o := range workflows.Rebuild(f.wfEvts) {
		w := f.runs[o.WorkflowID]
		if w == nil {
			continue
		}
		w.Status, w.StoppedBy, w.ElapsedMS, w.Summary, w.Usage = o.Status, o.StoppedBy, o.ElapsedMS, o.Summary, o.Usage
		if len(o.Loops) > 0 {
			w.Loops = o.Loops
		}
		w.Commit, w.Commits, w.Uncommitted = o.Commit, o.Commits, workflows.Uncommitted(&o)
		if o.Name != "" {
			w.Name = o.Name
		}
		for i := range o.Steps {
			so := &o.Steps[i]
			st := &Step{
				StepID: so.StepID, Run: so.Run, Superseded: so.Superseded, SkipReason: so.SkipReason,
				Agent: so.Agent, Wave: so.Wave, DependsOn: so.DependsOn,
				CheckpointStatus: so.CheckpointStatus, SubagentStatus: so.SubagentStatus,
				Summary: so.Summary, ElapsedMS: so.ElapsedMS, Reason: so.Reason, HeldReason: so.HeldReason,
				BlockedBy: so.BlockedBy, ReusedFrom: so.ReusedFrom, SubagentID: so.AgentID, ChildSessionID: so.ChildSessionID,
				WorkspaceMode: string(so.WorkspaceMode), Workspace: so.Workspace, Usage: so.Usage, Merge: so.Merge,
			}
			if len(st.DependsOn) == 0 {
				st.DependsOn = nil
			}
			if so.Error != nil {
				st.Error = &Failure{Kind: string(so.Error.Kind), Message: so.Error.Message}
			}
			if sa := f.steps[so.AgentID]; so.AgentID != "" && sa != nil {
				st.ChildLog = sa.ChildLog
				if st.Workspace == "" && sa.Workspace != "" { // a run interrupted before its step was decided
					st.WorkspaceMode, st.Workspace = sa.WorkspaceMode, sa.Workspace
				}
				if st.ChildSessionID == "" {
					st.ChildSessionID = sa.ChildSessionID
				}
				st.SnapshotDeleted = st.WorkspaceMode == string(workflows.Isolated) && sa.Status == tools.SubagentClosed
			}
			if m := f.merges[so.AgentID]; so.AgentID != "" && m != nil {
				st.MergedLater = m
			}
			w.Steps = append(w.Steps, st)
		}
	}
}
