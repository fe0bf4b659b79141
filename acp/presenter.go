package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pixir-go/pixir/acp/rpc"
	"github.com/pixir-go/pixir/internal/jsonraw"
	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
)

// presenter turns one session's runtime Events into session/update
// notifications: live during a turn, and from the Log on session/load. Both
// paths render a tool call's end the same way, so a replay shows what the
// user saw.
type presenter struct {
	s   *Server
	ctx context.Context
	// sess is nil while a session/load replays the Log as it is read,
	// before the session is open; sessionID and root are known before.
	sess      *runtime.Session
	sessionID string
	root      string
	// batch, while a session/load replays, carries the updates in writes
	// of many lines.
	batch *rpc.Batch
	// replaying is set while presenting the Log on session/load: terminals
	// of past calls are gone by then, so their output is shown as text.
	replaying bool
	// native is set when the client shows Subagents as sessions of their
	// own, plans when it keeps plans by id (children.go); child when this
	// presents a Subagent's own session.
	native, plans, child bool
	// retold are the children a replay has announced (subagentNative).
	retold map[string]bool

	// ends holds workflow steps' Subagent ends until their checkpoints
	// are decided (see holdStepEnd); a session's presenters share it (a
	// workflow's events reach the session's observer, the end of its
	// run_workflow call the turn's).
	ends *stepEnds
	// runs, while a session/load replays, are the workflow runs whose
	// plans are still to show (see replayPlan).
	runs replayedRuns
	// planCalls, while a session/load replays, are the arguments of the
	// update_plan calls whose end is still to come (keepPlanCall).
	planCalls map[string]json.RawMessage
}

// replayedRuns are the workflow_events of each workflow run a replay has
// not seen end, by workflow id, the runs in the order they started, and
// the run_workflow call of each run that has one. Plans are live only
// (not in the Log): a replay shows each run's plan, rebuilt from its
// events, where its run ended (its workflow_finished or, when its runner
// did not live to write one, its call's end), and those of the runs the
// Log cut off at its end.
type replayedRuns struct {
	order  []string
	events map[string][]runtime.Event
	calls  map[string]string
}

// stepEnds are workflow steps' Subagent ends waiting for the workflow to
// decide their checkpoints, by Subagent id: awaiting are the step runs
// scheduled and not yet decided (a step's child sent input after its
// workflow ended runs again, and that end is not the step's), held their
// ends in the order they came, decided the decisions that came before
// their ends. Each is kept with its workflow run (runKey), so that one
// run's end releases its own steps only. Events outside a turn reach the
// presenter from the children's goroutines: mu guards them.
type stepEnds struct {
	mu       sync.Mutex
	awaiting map[string]string
	held     []heldEnd
	decided  map[string]decidedStep
}

// heldEnd is a step's Subagent end, held, and its workflow run: its
// tool call's end (a ToolCall) or, for a client that shows children as
// sessions, its child session's idle state (a SubagentUpdate).
type heldEnd struct {
	subagent, run string
	update        any
}

// decidedStep is a step's checkpoint decided before its end came.
type decidedStep struct {
	run        string
	checkpoint stepCheckpoint
}

// runKey names a workflow run for stepEnds: its run_workflow call, which
// ends however the run ended (a panic in the runner, a Log that cannot be
// written), or, run without a call, its id.
func runKey(toolCallID, workflowID string) string {
	if toolCallID != "" {
		return toolCallID
	}
	return "workflow " + workflowID
}

// stepCheckpoint is what a checkpoint_decided workflow_event says of a
// step run: the fields its ToolCall shows.
type stepCheckpoint struct {
	Kind    string `json:"kind"`
	Outcome *struct {
		Run              string `json:"run"`
		AgentID          string `json:"agent_id"`
		CheckpointStatus string `json:"checkpoint_status"`
		Summary          string `json:"summary"`
	} `json:"outcome"`
}

func (s *Server) presenter(ctx context.Context, sess *runtime.Session) *presenter {
	return &presenter{s: s, ctx: ctx, sess: sess, sessionID: sess.ID(), root: sess.Workspace().Root(),
		native: s.nativeChildren(), plans: s.plansByID(), ends: s.stepEndsOf(sess.ID())}
}

// stepEndsOf is the step ends held for session id, shared by its
// presenters.
func (s *Server) stepEndsOf(id string) *stepEnds {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.stepEnds[id]
	if e == nil {
		if s.stepEnds == nil {
			s.stepEnds = map[string]*stepEnds{}
		}
		e = &stepEnds{}
		s.stepEnds[id] = e
	}
	return e
}

func (p *presenter) send(update any) {
	if p.batch == nil {
		p.s.notify(p.ctx, p.sessionID, update)
		return
	}
	if err := p.batch.Notify(MethodSessionUpdate, SessionNotification{SessionID: p.sessionID, Update: update}); err != nil {
		p.s.log.Debug("session/update not sent", "err", err)
	}
}

// live presents an event as it happens. Whole messages were already
// streamed as deltas, and the client knows its own prompt, so those are not
// sent again.
func (p *presenter) live(ev runtime.Event) {
	switch ev.Type {
	case runtime.EventTextDelta:
		p.sendChunk("agent_message_chunk", ev)
	case runtime.EventReasoningDelta:
		p.sendChunk("agent_thought_chunk", ev)
	case runtime.EventStatus:
		var d struct {
			runtime.StatusData
			runtime.SubagentProgressData
		}
		switch {
		case !p.decode(ev, &d):
		case d.ToolCallID != "" && d.Activity != "": // a tool's progress
			block := textBlock(d.Activity)
			p.send(ToolCall{SessionUpdate: "tool_call_update", ToolCallID: d.ToolCallID, Status: d.Status,
				Content: []ToolCallContent{{Type: "content", Content: &block}}})
		case d.ToolCallID != "":
			p.send(ToolCall{SessionUpdate: "tool_call_update", ToolCallID: d.ToolCallID, Status: d.Status})
		case d.SubagentID != "" && p.native:
			// The child's own updates show what it does.
		case d.SubagentID != "":
			block := textBlock(d.Activity)
			p.send(ToolCall{SessionUpdate: "tool_call_update", ToolCallID: subagentCallID(d.SubagentID),
				Content: []ToolCallContent{{Type: "content", Content: &block}}})
		}
	case runtime.EventPlan:
		var d runtime.PlanData
		if p.decode(ev, &d) {
			p.sendPlan(d)
		}
	case runtime.EventUsage:
		var d runtime.UsageData
		if p.decode(ev, &d) && d.Window > 0 {
			u := UsageUpdate{SessionUpdate: "usage_update", Used: d.Used, Size: d.Window}
			if d.Total.Currency != "" {
				u.Cost = &Cost{Amount: d.Total.Cost, Currency: d.Total.Currency}
			}
			p.send(u)
		}
	case runtime.EventNotice:
		var d runtime.NoticeData
		if p.decode(ev, &d) {
			p.s.notice(p.sessionID, d)
		}
	case runtime.EventCompactionProgress, runtime.EventCompactionDelta:
		p.compaction(ev)
	case runtime.EventToolCall, runtime.EventToolResult, runtime.EventTurnFailed, runtime.EventSubagent, runtime.EventCompaction, runtime.EventWorkflow:
		p.common(ev)
	}
}

// replay presents a canonical event from the Log.
func (p *presenter) replay(ev runtime.Event) {
	switch ev.Type {
	case runtime.EventUserMessage:
		var d runtime.UserMessageData
		if !p.decode(ev, &d) {
			return
		}
		var blocks []ContentBlock
		if len(d.Content) == 0 || json.Unmarshal(d.Content, &blocks) != nil || len(blocks) == 0 {
			blocks = []ContentBlock{textBlock(d.Text)}
		}
		for _, b := range blocks {
			p.send(ContentChunk{SessionUpdate: "user_message_chunk", Content: b})
		}
	case runtime.EventReasoning:
		p.replayText("agent_thought_chunk", ev)
	case runtime.EventAssistantMessage:
		p.replayText("agent_message_chunk", ev)
	case runtime.EventWorkflow:
		p.common(ev)
		p.replayPlan(ev)
	case runtime.EventToolResult:
		p.replayCallEnd(ev) // before the call's end, as the live session showed it
		p.common(ev)
		p.replayModelPlan(ev)
	case runtime.EventToolCall:
		p.common(ev)
		p.keepPlanCall(ev)
	case runtime.EventTurnFailed, runtime.EventSubagent, runtime.EventCompaction:
		p.common(ev)
	}
}

// keepPlanCall keeps the arguments of a replayed update_plan call until
// its end: the plan it showed is not in the Log (plans are live only), and
// they make it again.
func (p *presenter) keepPlanCall(ev runtime.Event) {
	if name, _ := jsonraw.Lookup(ev.Data, "name"); string(name) != `"update_plan"` {
		return
	}
	var d runtime.ToolCallData
	if !p.decode(ev, &d) {
		return
	}
	if p.planCalls == nil {
		p.planCalls = map[string]json.RawMessage{}
	}
	p.planCalls[d.ToolCallID] = d.Arguments
}

// replayModelPlan shows, after a replayed update_plan call's end, the plan
// the call showed the live session when it succeeded: a session/load
// showed the model's plan never, the client's plan was empty while the
// model went on from it.
func (p *presenter) replayModelPlan(ev runtime.Event) {
	if len(p.planCalls) == 0 {
		return
	}
	var call string
	if raw, ok := jsonraw.Lookup(ev.Data, "tool_call_id"); !ok || json.Unmarshal(raw, &call) != nil {
		return
	}
	args, ok := p.planCalls[call]
	if !ok {
		return
	}
	delete(p.planCalls, call)
	result, _ := jsonraw.Lookup(ev.Data, "result")
	var a tools.UpdatePlanArgs
	if okRaw, _ := jsonraw.Lookup(result, "ok"); string(okRaw) != "true" || json.Unmarshal(args, &a) != nil {
		return
	}
	p.sendPlan(runtime.PlanData{PlanID: runtime.AgentPlanID, Entries: a.Plan()})
}

// replayPlan keeps a replayed workflow_event with its run's, and at the
// run's end shows the plan the run showed last, as the live session did
// (after the run's last event, before its tool call's end).
func (p *presenter) replayPlan(ev runtime.Event) {
	raw, ok := jsonraw.Lookup(ev.Data, "workflow_id")
	var id string
	if !ok || json.Unmarshal(raw, &id) != nil || id == "" {
		return
	}
	r := &p.runs
	if r.events == nil {
		r.events = map[string][]runtime.Event{}
	}
	if _, seen := r.events[id]; !seen {
		r.order = append(r.order, id)
	}
	r.events[id] = append(r.events[id], ev)
	if _, known := r.calls[id]; !known {
		var call string
		if raw, ok := jsonraw.Lookup(ev.Data, "tool_call_id"); ok && json.Unmarshal(raw, &call) == nil && call != "" {
			if r.calls == nil {
				r.calls = map[string]string{}
			}
			r.calls[id] = call
		}
	}
	if kind, _ := jsonraw.Lookup(ev.Data, "kind"); string(kind) == `"workflow_finished"` {
		p.showReplayedPlan(id)
	}
}

// replayCallEnd shows, at a replayed tool call's end, the plans of the
// runs that call ran and whose end the Log does not hold (the runner did
// not live to write workflow_finished: a panic, or a process that ended
// before its next turn answered the call as interrupted): where the live
// session's run ended, not after the runs that came after it (a client
// without plan ids shows the last plan sent).
func (p *presenter) replayCallEnd(ev runtime.Event) {
	if len(p.runs.calls) == 0 {
		return
	}
	var call string
	if raw, ok := jsonraw.Lookup(ev.Data, "tool_call_id"); !ok || json.Unmarshal(raw, &call) != nil || call == "" {
		return
	}
	for _, id := range p.runs.order {
		if _, open := p.runs.events[id]; open && p.runs.calls[id] == call {
			p.showReplayedPlan(id)
		}
	}
}

// flushPlans shows the plans of the runs the replayed Log cut off (their
// process ended before they did, and neither their workflow_finished nor
// their call's end is in it; the others were shown there): what Rebuild
// makes of them, runs that were running detached.
func (p *presenter) flushPlans() {
	for _, id := range p.runs.order {
		if _, open := p.runs.events[id]; open {
			p.showReplayedPlan(id)
		}
	}
	p.runs = replayedRuns{}
}

// showReplayedPlan shows the plan of run id from its events, and forgets
// them.
func (p *presenter) showReplayedPlan(id string) {
	events := p.runs.events[id]
	delete(p.runs.events, id)
	delete(p.runs.calls, id)
	d, ok, err := runtime.WorkflowPlan(events)
	switch {
	case err != nil:
		p.s.log.Warn("workflow plan not shown", "workflow", id, "err", err)
	case ok:
		p.sendPlan(d)
	}
}

// common presents the events that look the same live and replayed.
func (p *presenter) common(ev runtime.Event) {
	switch ev.Type {
	case runtime.EventCompaction:
		p.compaction(ev)
	case runtime.EventToolCall:
		var d runtime.ToolCallData
		if p.decode(ev, &d) {
			p.send(ToolCall{
				SessionUpdate: "tool_call", ToolCallID: d.ToolCallID, Title: d.Title, Kind: string(d.Kind),
				Status: "pending", RawInput: rawInput(d.Arguments), Locations: locations(p.root, d.Locations),
			})
		}
	case runtime.EventToolResult:
		if p.holdsStepEnds() {
			// Maybe a run_workflow call's end: its run is over, however it
			// ended.
			var call string
			if id, ok := jsonraw.Lookup(ev.Data, "tool_call_id"); ok && json.Unmarshal(id, &call) == nil && call != "" {
				p.releaseStepEnds(call)
			}
		}
		if p.replaying {
			if line, ok := p.replayedTextResult(ev); ok {
				p.sendRaw(line)
				return
			}
		}
		var d runtime.ToolResultData
		if !p.decode(ev, &d) {
			return
		}
		u := p.toolEnd(d)
		// In a replay, the result as the Log holds it is the rawOutput:
		// spliced in as it is, not encoded again (a long session replays
		// thousands).
		raw, ok := jsonraw.Lookup(ev.Data, "result")
		if !ok || !p.replaying {
			p.send(u)
			return
		}
		u.RawOutput = nil
		line, err := json.Marshal(u)
		if err != nil {
			p.send(u)
			return
		}
		line = append(line[:len(line)-1], `,"rawOutput":`...)
		line = append(append(line, raw...), '}')
		p.sendRaw(line)
	case runtime.EventTurnFailed:
		var d runtime.TurnFailedData
		if p.decode(ev, &d) {
			p.send(ContentChunk{SessionUpdate: "agent_message_chunk", Content: textBlock(turnFailedText(d))})
		}
	case runtime.EventSubagent:
		var d runtime.SubagentEventData
		switch {
		case !p.decode(ev, &d):
		case p.native:
			p.subagentNative(d, ev.Seq)
		default:
			if u, ok := subagentUpdate(d); ok {
				var shown any = u
				if d.Event == tools.SubagentEventFinished && d.Name != "" {
					shown, ok = p.holdStepEnd(d.SubagentID, u)
				}
				if ok {
					p.send(shown)
				}
			}
		}
	case runtime.EventWorkflow:
		p.workflowEvent(ev)
	}
}

// holdStepEnd keeps a workflow step's Subagent end until the workflow has
// decided the step's checkpoint: the child ended well, but its step may
// not have (a partial or failed checkpoint), and a call shown completed
// for a step that failed would call partial work success. A decision that
// came first is applied at once, and an end no workflow waits for is not
// held (ok: send it).
func (p *presenter) holdStepEnd(subagent string, u any) (any, bool) {
	if p.ends == nil { // a child's own session (native): it holds none
		return u, true
	}
	p.ends.mu.Lock()
	defer p.ends.mu.Unlock()
	if c, ok := p.ends.decided[subagent]; ok {
		delete(p.ends.decided, subagent)
		return withCheckpoint(u, c.checkpoint), true
	}
	run, waited := p.ends.awaiting[subagent]
	if !waited {
		return u, true
	}
	p.ends.held = append(p.ends.held, heldEnd{subagent: subagent, run: run, update: u})
	return u, false
}

// workflowEvent follows the step runs a workflow waits for, ends a held
// step's call with its checkpoint, and at the workflow's end sends what
// is still held as it is. Only the kinds it uses are decoded (the kind is
// found by a scan that decodes nothing).
func (p *presenter) workflowEvent(ev runtime.Event) {
	if p.ends == nil {
		return
	}
	raw, ok := jsonraw.Lookup(ev.Data, "kind")
	if !ok {
		return
	}
	switch string(raw) {
	case `"step_scheduled"`:
		var d struct {
			WorkflowID string `json:"workflow_id"`
			ToolCallID string `json:"tool_call_id"`
			SubagentID string `json:"subagent_id"`
		}
		if p.decode(ev, &d) && d.SubagentID != "" {
			p.ends.mu.Lock()
			if p.ends.awaiting == nil {
				p.ends.awaiting = map[string]string{}
			}
			p.ends.awaiting[d.SubagentID] = runKey(d.ToolCallID, d.WorkflowID)
			p.ends.mu.Unlock()
		}
	case `"checkpoint_decided"`:
		var d stepCheckpoint
		if !p.decode(ev, &d) || d.Outcome == nil || d.Outcome.AgentID == "" {
			return
		}
		id := d.Outcome.AgentID
		p.ends.mu.Lock()
		run, waited := p.ends.awaiting[id]
		delete(p.ends.awaiting, id)
		i := slices.IndexFunc(p.ends.held, func(h heldEnd) bool { return h.subagent == id })
		var u any
		if i >= 0 {
			u = p.ends.held[i].update
			p.ends.held = slices.Delete(p.ends.held, i, i+1)
		} else if waited {
			if p.ends.decided == nil {
				p.ends.decided = map[string]decidedStep{}
			}
			p.ends.decided[id] = decidedStep{run: run, checkpoint: d}
		}
		p.ends.mu.Unlock()
		if i >= 0 {
			p.send(withCheckpoint(u, d))
		}
	case `"workflow_finished"`:
		var d struct {
			WorkflowID string `json:"workflow_id"`
			ToolCallID string `json:"tool_call_id"`
		}
		if p.decode(ev, &d) {
			p.releaseStepEnds(runKey(d.ToolCallID, d.WorkflowID))
		}
	}
}

// holdsStepEnds reports whether any step run is waited for or any end
// held: whether a tool call's end may release some.
func (p *presenter) holdsStepEnds() bool {
	if p.ends == nil {
		return false
	}
	p.ends.mu.Lock()
	defer p.ends.mu.Unlock()
	return len(p.ends.held)+len(p.ends.awaiting)+len(p.ends.decided) > 0
}

// releaseStepEnds sends the step ends of workflow run key still held, in
// the order they came, as they are, and forgets what it waited for: the
// run has ended, by its workflow_finished or, when the runner did not
// live to write one, by its run_workflow call's end (anything else would
// leave its steps' calls running for good in the editor).
func (p *presenter) releaseStepEnds(key string) {
	if p.ends == nil { // a child's own session (native): it holds none
		return
	}
	p.ends.mu.Lock()
	var held []heldEnd
	p.ends.held = slices.DeleteFunc(p.ends.held, func(h heldEnd) bool {
		if h.run == key {
			held = append(held, h)
			return true
		}
		return false
	})
	maps.DeleteFunc(p.ends.awaiting, func(_, run string) bool { return run == key })
	maps.DeleteFunc(p.ends.decided, func(_ string, d decidedStep) bool { return d.run == key })
	p.ends.mu.Unlock()
	for _, h := range held {
		p.send(h.update)
	}
}

// flushStepEnds sends every step end still held, in the order they came,
// as they are, and forgets what it waited for: the replay of a Log cut off
// before its workflows ended.
func (p *presenter) flushStepEnds() {
	p.ends.mu.Lock()
	held := p.ends.held
	p.ends.held, p.ends.decided, p.ends.awaiting = nil, nil, nil
	p.ends.mu.Unlock()
	for _, h := range held {
		p.send(h.update)
	}
}

// withCheckpoint is a step's Subagent end as its checkpoint decided it: a
// step that did not end checkpoint_ready is a failed call, saying why; to a
// client that shows children as sessions, its child's idle state ends with
// stopReason error ("the work ended because something failed": the step's
// work did, though its child completed), the error saying why and _meta
// the checkpoint status, so the child's own end says what the plan says.
func withCheckpoint(u any, c stepCheckpoint) any {
	if c.Outcome.CheckpointStatus == "checkpoint_ready" {
		return u
	}
	text := "Step " + c.Outcome.Run + " ended " + c.Outcome.CheckpointStatus
	if c.Outcome.Summary != "" {
		text += ": " + c.Outcome.Summary
	}
	text = tools.Truncate(text, displayLimit)
	switch u := u.(type) {
	case ToolCall:
		u.Status = "failed"
		block := textBlock(text)
		u.Content = append([]ToolCallContent{{Type: "content", Content: &block}}, u.Content...)
		return u
	case SubagentUpdate:
		if u.State == nil {
			return u
		}
		st := *u.State
		st.StopReason = "error"
		st.Error = &ErrorObject{Code: -32603, Message: text}
		meta := map[string]any{"checkpointStatus": c.Outcome.CheckpointStatus}
		if pixir, ok := u.Meta["pixir"].(map[string]any); ok {
			meta["status"] = pixir["status"] // the child's own: it completed
		}
		st.Meta = map[string]any{"pixir": meta}
		u.State = &st
		return u
	}
	return u
}

// compaction shows a compaction, to a client that advertised
// session.compaction only: its start, its summary as the model streams it,
// and its end with the whole summary (live and replayed alike).
func (p *presenter) compaction(ev runtime.Event) {
	if !p.s.showsCompaction() {
		return
	}
	switch ev.Type {
	case runtime.EventCompactionProgress:
		var d runtime.CompactionProgressData
		if p.decode(ev, &d) {
			p.send(CompactionUpdate{SessionUpdate: "compaction_update", CompactionID: d.CompactionID, Status: "in_progress"})
		}
	case runtime.EventCompactionDelta:
		var d runtime.CompactionProgressData
		if p.decode(ev, &d) {
			p.send(CompactionSummaryChunk{SessionUpdate: "compaction_summary_chunk", CompactionID: d.CompactionID, Content: textBlock(d.Text)})
		}
	case runtime.EventCompaction:
		var d runtime.CompactionData
		if p.decode(ev, &d) {
			meta := map[string]any{"pixir": map[string]any{"method": d.Method, "reason": d.Reason, "replaced": d.Replaced, "kept": d.Kept,
				"tokensBefore": d.TokensBefore, "tokensAfter": d.TokensAfter, "window": d.Window}}
			p.send(CompactionUpdate{SessionUpdate: "compaction_update", CompactionID: d.CompactionID, Status: "completed",
				Summary: []ContentBlock{textBlock(d.Summary)}, Meta: meta})
		}
	}
}

// subagentCallID is the tool call that shows a Subagent.
func subagentCallID(id string) string { return "subagent-" + id }

// subagentUpdate shows a Subagent as its own tool call (kind think), linked
// to the call that spawned it through _meta.pixir.parentToolCallId.
func subagentUpdate(d runtime.SubagentEventData) (ToolCall, bool) {
	u := ToolCall{SessionUpdate: "tool_call_update", ToolCallID: subagentCallID(d.SubagentID)}
	text := func(s string) []ToolCallContent {
		b := textBlock(s)
		return []ToolCallContent{{Type: "content", Content: &b}}
	}
	switch d.Event {
	case tools.SubagentEventQueued:
		if d.Input != "" {
			u.Status, u.Content = "pending", text(tools.Truncate("New input: "+d.Input, displayLimit))
			return u, true
		}
		raw, _ := json.Marshal(map[string]any{"agent": d.Agent, "task": d.Task, "workspace_mode": d.WorkspaceMode, "depth": d.Depth})
		meta := map[string]any{"subagentId": d.SubagentID}
		if d.ParentToolCallID != "" {
			meta["parentToolCallId"] = d.ParentToolCallID
		}
		title := d.Agent + ": " + titleOf(d.Task)
		if d.Name != "" { // a workflow step
			title = d.Name + " (" + d.Agent + "): " + titleOf(d.Task)
			meta["stepId"] = d.Name
		}
		return ToolCall{
			SessionUpdate: "tool_call", ToolCallID: u.ToolCallID, Title: title,
			Kind: "think", Status: "pending", RawInput: capRaw(raw), Meta: map[string]any{"pixir": meta},
		}, true
	case tools.SubagentEventStarted, tools.SubagentEventInput:
		u.Status, u.Content = "in_progress", text(fmt.Sprintf("Running in the %s workspace %s", d.WorkspaceMode, d.Workspace))
	case tools.SubagentEventFinished:
		u.Status, u.Content = "completed", text(subagentReport(d))
	case tools.SubagentEventFailed, tools.SubagentEventTimedOut, tools.SubagentEventCancelled:
		u.Status, u.Content = "failed", text(subagentReport(d))
	default:
		return u, false
	}
	if raw, err := json.Marshal(d); err == nil && (u.Status == "completed" || u.Status == "failed") {
		u.RawOutput = capRaw(raw)
	}
	return u, true
}

// subagentReport is a Subagent's end as a person reads it.
func subagentReport(d runtime.SubagentEventData) string {
	var b strings.Builder
	if d.Error != nil {
		fmt.Fprintf(&b, "%s: %s\n\n", d.Status, d.Error.Message)
	}
	b.WriteString(d.Summary)
	if c := d.Changes; c != nil && len(c.Added)+len(c.Changed)+len(c.Deleted) > 0 {
		fmt.Fprintf(&b, "\n\nFiles: %d added, %d changed, %d deleted", len(c.Added), len(c.Changed), len(c.Deleted))
	}
	return strings.TrimSpace(b.String())
}

// titleOf shortens a task to a title line.
func titleOf(task string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(task), "\n")
	if r := []rune(line); len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	return line
}

func turnFailedText(d runtime.TurnFailedData) string {
	if d.Kind == tools.ErrBudgetExhausted {
		return fmt.Sprintf("\n\n**The turn stopped: a budget is spent** (%s): %s", d.Kind, d.Message)
	}
	if d.Kind == tools.ErrInternal {
		// Pixir's own fault (its Log could not be written): the message
		// says what to do.
		return fmt.Sprintf("\n\n**The turn stopped** (%s): %s", d.Kind, d.Message)
	}
	return fmt.Sprintf("\n\n**The turn stopped: the model provider failed** (%s): %s\n\nThe session is still usable: send another prompt to retry.", d.Kind, d.Message)
}

// displayLimit bounds the text shown in a tool call's content; the model
// and rawOutput keep more (up to maxRawBytes), the Log all of it.
const displayLimit = 16 << 10

func (p *presenter) toolEnd(d runtime.ToolResultData) ToolCall {
	u := ToolCall{SessionUpdate: "tool_call_update", ToolCallID: d.ToolCallID, Status: "completed"}
	if raw, err := json.Marshal(d.Result); err == nil {
		u.RawOutput = capRaw(raw)
	}
	if len(d.Blocks) > 0 {
		// What an MCP tool returned, as it returned it.
		if !d.Result.OK {
			u.Status = "failed"
		}
		for _, b := range d.Blocks {
			block := contentOf(b)
			u.Content = append(u.Content, ToolCallContent{Type: "content", Content: &block})
		}
		return u
	}
	if !d.Result.OK && d.Result.Error == nil && d.Result.Output != nil {
		// Work that ran but did not succeed (a partial workflow): failed,
		// never completed, with its outcome for a person to read.
		u.Status = "failed"
		if text := displayOutput(d.Result.Output); text != "" {
			block := textBlock(text)
			u.Content = []ToolCallContent{{Type: "content", Content: &block}}
		}
		return u
	}
	if !d.Result.OK {
		u.Status = "failed"
		msg := "failed"
		if d.Result.Error != nil {
			msg = fmt.Sprintf("%s: %s", d.Result.Error.Kind, d.Result.Error.Message)
		}
		block := textBlock(msg)
		u.Content = []ToolCallContent{{Type: "content", Content: &block}}
		if d.TerminalID != "" && !p.replaying {
			// A command that timed out or was cancelled in the editor's
			// terminal: content replaces, so the terminal stays, with
			// what it printed, above why it failed.
			u.Content = append([]ToolCallContent{{Type: "terminal", TerminalID: d.TerminalID}}, u.Content...)
		}
		return u
	}
	if d.TerminalID != "" && !p.replaying {
		u.Content = []ToolCallContent{{Type: "terminal", TerminalID: d.TerminalID}}
		u.Locations = locations(p.root, d.Locations)
		return u
	}
	if len(d.Diffs) > 0 {
		inputs := make([]diffInput, len(d.Diffs))
		for i, diff := range d.Diffs {
			inputs[i] = diffInput(diff)
		}
		u.Content = diffContents(p.root, inputs)
	}
	if len(d.Diffs) == 0 {
		if text := displayOutput(d.Result.Output); text != "" {
			block := textBlock(text)
			u.Content = []ToolCallContent{{Type: "content", Content: &block}}
		}
	}
	u.Locations = locations(p.root, d.Locations)
	return u
}

// replayedTextResult is the replayed end of the commonest call: it
// succeeded, and its output is a text (or an object with a content, output
// or text field) short enough to show whole. Its update is made from the
// Log's JSON as it is, the text and the result spliced in, where toolEnd
// would decode both and encode them again; it is what toolEnd makes of
// such a result. Any other result reports false, for toolEnd.
func (p *presenter) replayedTextResult(ev runtime.Event) ([]byte, bool) {
	_, members, err := jsonraw.Scan(ev.Data)
	if err != nil || members == nil {
		return nil, false
	}
	var id string
	var result, locs []byte
	for _, m := range members {
		switch m.Key {
		case "tool_call_id":
			if json.Unmarshal(m.Value, &id) != nil {
				return nil, false
			}
		case "result":
			result = m.Value
		case "locations":
			locs = m.Value
		case "diffs", "blocks":
			if string(m.Value) != "null" {
				return nil, false
			}
		}
	}
	_, fields, err := jsonraw.Scan(result)
	if err != nil || fields == nil {
		return nil, false
	}
	var ok bool
	var output []byte
	for _, f := range fields {
		switch f.Key {
		case "ok":
			ok = string(f.Value) == "true"
		case "output":
			output = f.Value
		case "error":
			return nil, false
		}
	}
	text := displayText(output)
	if !ok || len(text) < 3 || len(text) > displayLimit { // "" is not shown whole, nor a text that may need cutting
		return nil, false
	}
	b := make([]byte, 0, len(text)+len(result)+256)
	b = append(b, `{"sessionUpdate":"tool_call_update","toolCallId":`...)
	b = jsonraw.AppendString(b, id)
	b = append(b, `,"status":"completed","content":[{"type":"content","content":{"type":"text","text":`...)
	b = append(b, text...)
	b = append(b, `}}]`...)
	if len(locs) > 0 && string(locs) != "null" {
		var l []tools.Location
		if json.Unmarshal(locs, &l) != nil {
			return nil, false
		}
		if shown := locations(p.root, l); len(shown) > 0 {
			raw, err := json.Marshal(shown)
			if err != nil {
				return nil, false
			}
			b = append(append(b, `,"locations":`...), raw...)
		}
	}
	b = append(append(b, `,"rawOutput":`...), result...)
	return append(b, '}'), true
}

// displayText is the text displayOutput shows of an output that is a
// string or an object with a string content, output or text field, as JSON
// (a quoted string); nil when the output is anything else.
func displayText(output []byte) []byte {
	if len(output) > 0 && output[0] == '"' {
		return output
	}
	_, fields, err := jsonraw.Scan(output)
	if err != nil || fields == nil {
		return nil
	}
	for _, key := range []string{"content", "output", "text"} {
		for i := len(fields) - 1; i >= 0; i-- { // the last of a repeated key, as encoding/json keeps
			if fields[i].Key == key {
				if v := fields[i].Value; v[0] == '"' {
					return v
				}
				break
			}
		}
	}
	return nil
}

// displayOutput renders a tool's output for a person: the main text field
// when there is one, JSON otherwise.
func displayOutput(out any) string {
	var text string
	switch v := out.(type) {
	case nil:
		return ""
	case string:
		text = v
	case map[string]any:
		for _, key := range []string{"content", "output", "text"} {
			if s, ok := v[key].(string); ok {
				text = s
				break
			}
		}
	}
	if text == "" {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return ""
		}
		text = string(b)
	}
	if len(text) > displayLimit {
		text = tools.Truncate(text, displayLimit)
	}
	return text
}

// sendPlan shows a plan: by its id to a client that keeps plans by id
// (an empty plan removes it), as the session's one plan otherwise.
func (p *presenter) sendPlan(d runtime.PlanData) {
	u := planUpdate(d.Entries)
	if !p.plans {
		p.send(u)
		return
	}
	id := d.PlanID
	if id == "" {
		id = runtime.AgentPlanID
	}
	if len(d.Entries) == 0 {
		p.send(PlanRemoved{SessionUpdate: "plan_removed", PlanID: id})
		return
	}
	p.send(PlanUpdate{SessionUpdate: "plan_update", Plan: PlanItemsUpdate{Type: "items", PlanID: id, Entries: u.Entries}})
}

// planUpdate is the ACP plan update: the whole plan each time, bounded
// (maxPlanEntries, each entry's text to maxPlanEntryBytes) whoever made it.
func planUpdate(entries []tools.PlanEntry) Plan {
	u := Plan{SessionUpdate: "plan", Entries: []PlanEntry{}}
	for i, e := range entries {
		if i == maxPlanEntries-1 && len(entries) > maxPlanEntries {
			u.Entries = append(u.Entries, PlanEntry{Content: "… and " + plural.Of(len(entries)-i, "more entry", "more entries"),
				Priority: tools.PlanPriorityMedium, Status: tools.PlanPending})
			break
		}
		if len(e.Content) > maxPlanEntryBytes {
			e.Content = tools.Truncate(e.Content, maxPlanEntryBytes)
		}
		u.Entries = append(u.Entries, PlanEntry(e))
	}
	return u
}

// Bounds of one message (issue 18): whatever a tool, a model or a
// workflow produces, an update stays within a few hundred KiB. The Log
// keeps the whole of what is cut here.
const (
	// maxRawBytes bounds a tool call's rawInput and rawOutput.
	maxRawBytes = 256 << 10
	// maxPlanEntries bounds a plan (a workflow shows at most 100).
	maxPlanEntries    = 200
	maxPlanEntryBytes = 1 << 10
)

// capRaw passes raw JSON through when it is within maxRawBytes and
// replaces it with a marker that says so otherwise: a cut JSON text would
// not be JSON.
func capRaw(raw json.RawMessage) json.RawMessage {
	if len(raw) <= maxRawBytes {
		return raw
	}
	marker, _ := json.Marshal(map[string]any{"truncated": map[string]any{
		"bytes": len(raw), "limit": maxRawBytes,
		"note": "too large to send whole; the session's Log holds it (pixir inspect)",
	}})
	return marker
}

// sessionInfo tells the client the session's title and update time after a
// turn that changed the title (the first one names the session); the same
// update after every turn would only repeat it.
func (p *presenter) sessionInfo() {
	m := p.sess.Meta()
	if !p.s.titleChanged(p.sessionID, m.Title) {
		return
	}
	p.send(SessionInfoUpdate{SessionUpdate: "session_info_update", Title: m.Title, UpdatedAt: m.UpdatedAt.UTC().Format(time.RFC3339)})
}

// sendChunk sends a streamed fragment of text as a ContentChunk with a
// text block. The text is spliced in as the event carries it, already
// JSON: a model's answer can be megabytes, and decoding it only to encode
// it again would cost two passes over it.
func (p *presenter) sendChunk(kind string, ev runtime.Event) {
	text, ok := jsonraw.Lookup(ev.Data, "text")
	if !ok || text[0] != '"' {
		p.s.log.Warn("undecodable event", "type", ev.Type, "err", "no text")
		return
	}
	p.sendRaw(chunkUpdate(kind, text))
}

// replayText replays a whole message or reasoning as one chunk, its text
// spliced in as the Log holds it; an empty text shows nothing.
func (p *presenter) replayText(kind string, ev runtime.Event) {
	text, ok := jsonraw.Lookup(ev.Data, "text")
	switch {
	case !ok || text[0] != '"':
		p.s.log.Warn("undecodable event", "type", ev.Type, "seq", ev.Seq, "err", "no text")
	case string(text) != `""`:
		p.sendRaw(chunkUpdate(kind, text))
	}
}

// chunkUpdate is a ContentChunk with a text block, text being a JSON
// string.
func chunkUpdate(kind string, text []byte) []byte {
	b := make([]byte, 0, len(text)+80)
	b = append(b, `{"sessionUpdate":`...)
	b = jsonraw.AppendString(b, kind)
	b = append(b, `,"content":{"type":"text","text":`...) // required, empty or not
	b = append(b, text...)
	return append(b, `}}`...)
}

// sendRaw sends an update that is already JSON.
func (p *presenter) sendRaw(update []byte) {
	b := make([]byte, 0, len(update)+len(p.sessionID)+32)
	b = append(b, `{"sessionId":`...)
	b = jsonraw.AppendString(b, p.sessionID)
	b = append(b, `,"update":`...)
	b = append(append(b, update...), '}')
	var err error
	if p.batch != nil {
		err = p.batch.Notify(MethodSessionUpdate, json.RawMessage(b))
	} else {
		err = p.s.conn.Notify(p.ctx, MethodSessionUpdate, json.RawMessage(b))
	}
	if err != nil {
		p.s.log.Debug("session/update not sent", "err", err)
	}
}

func (p *presenter) decode(ev runtime.Event, v any) bool {
	if err := json.Unmarshal(ev.Data, v); err != nil {
		p.s.log.Warn("undecodable event", "type", ev.Type, "seq", ev.Seq, "err", err)
		return false
	}
	return true
}

// rawInput passes arguments through when they are JSON (a model may send
// broken JSON, which the schema would reject as rawInput).
func rawInput(args json.RawMessage) json.RawMessage {
	if len(args) == 0 || !json.Valid(args) {
		return nil
	}
	return capRaw(args)
}

func absPath(root, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

func locations(root string, locs []tools.Location) []Location {
	var out []Location
	for _, l := range locs {
		loc := Location{Path: absPath(root, l.Path)}
		if l.Line > 0 {
			line := l.Line
			loc.Line = &line
		}
		out = append(out, loc)
	}
	return out
}

// contentOf is a tool's block as an ACP content block; text is bounded
// like any tool output shown.
func contentOf(b tools.Block) ContentBlock {
	switch b.Type {
	case "image", "audio":
		return ContentBlock{Type: b.Type, Data: b.Data, MimeType: b.MimeType}
	case "resource_link":
		return ContentBlock{Type: b.Type, URI: b.URI, Name: b.Name, Title: b.Title, Description: b.Description, MimeType: b.MimeType, Size: b.Size}
	case "resource":
		r := &EmbeddedResource{URI: b.URI, MimeType: b.MimeType}
		if b.Blob != "" {
			r.Blob = &b.Blob
		} else {
			text := tools.Truncate(b.Text, displayLimit)
			r.Text = &text
		}
		return ContentBlock{Type: b.Type, Resource: r}
	}
	return textBlock(tools.Truncate(b.Text, displayLimit))
}

// replayer presents a session/load's events on a goroutine of its own, in
// the order the Log is read, while the runtime goes on reading and folding
// it. Events pass in slices, so the two sides meet once per slice, not per
// event.
type replayer struct {
	pr    *presenter
	slice []runtime.Event
	ch    chan []runtime.Event
	done  chan struct{}
}

// replaySlice is how many events pass to the presenting goroutine at once.
const replaySlice = 256

func startReplayer(pr *presenter) *replayer {
	rp := &replayer{pr: pr, ch: make(chan []runtime.Event, 8), done: make(chan struct{})}
	go func() {
		defer close(rp.done)
		for events := range rp.ch {
			for _, ev := range events {
				pr.replay(ev)
			}
		}
	}()
	return rp
}

// add hands an event over; it is the visit of runtime.OpenSession.
func (rp *replayer) add(ev runtime.Event) {
	rp.slice = append(rp.slice, ev)
	if len(rp.slice) == replaySlice {
		rp.ch <- rp.slice
		rp.slice = make([]runtime.Event, 0, replaySlice)
	}
}

// finish hands over the last events and waits until all are presented.
func (rp *replayer) finish() {
	if len(rp.slice) > 0 {
		rp.ch <- rp.slice
	}
	close(rp.ch)
	<-rp.done
}
