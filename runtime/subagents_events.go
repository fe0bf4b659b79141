// The evidence of children: subagent_events in the parent's Log, the
// throttled progress of a running child, and the children rebuilt from
// the Log when a session is reopened.

package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/tools"
)

// SubagentEventData is the Data of a subagent_event in the parent's Log:
// enough to rebuild every child's view from the Log alone.
type SubagentEventData struct {
	Event            tools.SubagentEvent `json:"event"`
	ParentID         string              `json:"parent_id"`
	SubagentID       string              `json:"subagent_id"`
	ChildSessionID   string              `json:"child_session_id,omitempty"`
	ChildLog         string              `json:"child_log,omitempty"`
	ParentToolCallID string              `json:"parent_tool_call_id,omitempty"`
	Agent            string              `json:"agent"`
	Name             string              `json:"name,omitempty"` // a workflow step's label (its id)
	// Task is written once, on the queued event of the child's spawn (the
	// one without an input): a reader keeps it from there. Logs written
	// before 2026-11-24 have it on every event.
	Task          string               `json:"task,omitempty"`
	Depth         int                  `json:"depth"`
	Status        tools.SubagentStatus `json:"status"`
	Workspace     string               `json:"workspace"`
	WorkspaceMode string               `json:"workspace_mode"`
	// Input is the prompt of a run that send_input queued (its queued and
	// input events). A first run's prompt is the task, which its started
	// event does not repeat (before 2026-11-24 it did, as input), unless
	// send_input gave it another one (a child cancelled while queued):
	// then the started event carries that input.
	Input     string             `json:"input,omitempty"`
	Summary   string             `json:"summary,omitempty"`
	Error     *tools.Failure     `json:"error,omitempty"`
	Changes   *tools.FileChanges `json:"changes,omitempty"`
	ElapsedMS int64              `json:"elapsed_ms"`
	// Usage is what the child spent so far, all its runs together (on the
	// events of its ends and its close).
	Usage *budget.Usage `json:"usage,omitempty"`
}

// SubagentProgressData is the ephemeral status event of a running child.
type SubagentProgressData struct {
	SubagentID string `json:"subagent_id"`
	Activity   string `json:"activity"`
}

// record writes a subagent_event for sa's current state to its parent's
// Log and shows it to whoever watches the parent.
func (m *Manager) record(sa *subagent, event tools.SubagentEvent, input string) {
	m.mu.Lock()
	d := m.eventLocked(sa, event, input, sa.status)
	m.mu.Unlock()
	m.emit(sa, d)
}

// eventLocked is the subagent_event of sa as it is, with status. The task
// goes only on the queued event of its spawn (event queued, no input): a
// workflow step's task is its whole prompt, and its started, finished and
// queued events repeated it, a started event twice (task and input).
func (m *Manager) eventLocked(sa *subagent, event tools.SubagentEvent, input string, status tools.SubagentStatus) SubagentEventData {
	d := SubagentEventData{
		Event: event, ParentID: sa.parent.ID(), SubagentID: sa.id, ParentToolCallID: sa.parentToolCallID,
		Agent: sa.agent, Name: sa.name, Depth: sa.depth, Status: status, Workspace: sa.workspace,
		WorkspaceMode: sa.mode, Input: input, ElapsedMS: m.elapsedLocked(sa),
	}
	if event == tools.SubagentEventQueued && input == "" {
		d.Task = sa.task
	}
	d.ChildSessionID = sa.childSession
	if sa.child != nil || sa.dormant != nil { // its session was made
		d.ChildLog = sa.childLog
	}
	if status.Ended() {
		d.Summary, d.Error, d.Changes = sa.summary, sa.failure, sa.changes
		d.Usage = usageOf(sa.account)
	}
	return d
}

func (m *Manager) emit(sa *subagent, d SubagentEventData) {
	if err := sa.parent.emitBackground(EventSubagent, d); err != nil {
		m.rt.log.Error("recording a subagent event", "subagent", sa.id, "err", err)
	}
}

// restore rebuilds the children of a session reopened from its Log. A
// child that was not over when its process ended is detached: no process
// runs it, and nothing says it finished. It returns the events that say
// so, for the parent's Log (Session.recordDetached): a child whose
// detached end is in the Log already is not returned again, but its end
// is still news to the parent's model until the Log shows the model was
// told (see untoldDetached).
func (m *Manager) restore(parent *Session, events []Event) []SubagentEventData {
	last := map[string]SubagentEventData{}
	var order []string
	untold := untoldDetached{}
	for _, ev := range events {
		untold.see(ev)
		if ev.Type != EventSubagent {
			continue
		}
		var d SubagentEventData
		if json.Unmarshal(ev.Data, &d) != nil || d.SubagentID == "" {
			continue
		}
		untold.end(d)
		prev, seen := last[d.SubagentID]
		if !seen {
			order = append(order, d.SubagentID)
		}
		if d.Task == "" { // written once, at the spawn
			d.Task = prev.Task
		}
		last[d.SubagentID] = d
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var detached []SubagentEventData
	for _, id := range order {
		if _, live := m.byID[id]; live {
			continue
		}
		d := last[id]
		sa := &subagent{
			id: id, agent: d.Agent, name: d.Name, task: d.Task, parent: parent, parentToolCallID: d.ParentToolCallID,
			depth: d.Depth, mode: d.WorkspaceMode, workspace: d.Workspace, status: d.Status,
			summary: d.Summary, failure: d.Error, changes: d.Changes, childSession: d.ChildSessionID,
			done: make(chan struct{}), restored: true, seen: true,
			account: m.rt.subagentAccount(id),
		}
		if d.Usage != nil {
			sa.account.Start(*d.Usage)
		}
		if sa.status.Ended() && sa.name == "" && untold[id] {
			// It ended (or was recorded detached by an earlier opening)
			// while the parent's model was not waiting, and the process
			// ended before a model call told it: the model never heard.
			sa.seen = false
		}
		if !sa.status.Ended() {
			sa.status = tools.SubagentDetached
			sa.failure = &tools.Failure{Kind: tools.ErrDetached, Message: "the process that ran this subagent ended before it did; its work is not known to be complete"}
			// Its end is news to the parent's model too (a workflow's
			// step is reported by its workflow).
			sa.seen = sa.name != ""
			e := d
			// Its task is kept for who shows it (an editor told of it
			// anew); the Log has it at the spawn (Session.recordDetached).
			e.Event, e.Status, e.Error, e.Input = tools.SubagentEventFailed, sa.status, sa.failure, ""
			detached = append(detached, e)
		}
		close(sa.done)
		m.byID[id] = sa
		m.children[parent.ID()] = append(m.children[parent.ID()], sa)
		m.spawned[parent.root().ID()]++
	}
	return detached
}

// untoldDetached are the children whose last event in a Log is an end (a
// run's, or a detached one recorded when a session was opened after a
// crash) that the parent's model was not shown after it: no
// subagent_summaries names it, and no result of wait_agent, list_agents or
// close_agent does. A closed child is not news (close_agent's result, or
// its parent's close, said so), nor is a workflow's step (its workflow's
// outcome reports it). Fed the Log's events in order.
type untoldDetached map[string]bool

// end notes a child's event.
func (u untoldDetached) end(d SubagentEventData) {
	if d.Status.Ended() && d.Status != tools.SubagentClosed && d.Name == "" {
		u[d.SubagentID] = true
	} else {
		delete(u, d.SubagentID)
	}
}

// see notes what the parent's model was told.
func (u untoldDetached) see(ev Event) {
	if len(u) == 0 {
		return
	}
	switch ev.Type {
	case EventSubagentSummaries:
		var d SubagentSummariesData
		if json.Unmarshal(ev.Data, &d) == nil {
			for _, id := range d.SubagentIDs {
				delete(u, id)
			}
		}
	case EventToolResult:
		// Only those of wait_agent, list_agents and close_agent are
		// given (see historyFold.subagents).
		for id := range u {
			if bytes.Contains(ev.Data, []byte(id)) {
				delete(u, id)
			}
		}
	}
}

// childTracker watches a child's turn: it remembers the final answer and a
// provider failure, and reports throttled progress to the parent.
type childTracker struct {
	m    *Manager
	sa   *subagent
	mu   sync.Mutex
	last string
	// failed is set when the child's turn ended on a provider failure.
	failed *tools.Failure
	// progress passes the child's activity on to the parent, throttled.
	progress *progressThrottle
	// denied counts the mutations the user refused when asked (those
	// that could have changed something: couldChange).
	denied int
}

func (t *childTracker) observe(ev Event) {
	var activity string
	switch ev.Type {
	case EventAssistantMessage:
		// The data the event was emitted with, when its text reads as its
		// JSON does (invalid UTF-8 is written as U+FFFD): a workflow's
		// every step ends with one, and decoding it again cost more than
		// the rest of this.
		d, ok := ev.Value().(AssistantMessageData)
		if !ok || !utf8.ValidString(d.Text) {
			d = AssistantMessageData{}
			ok = json.Unmarshal(ev.Data, &d) == nil
		}
		if ok && d.Text != "" {
			t.mu.Lock()
			t.last = d.Text
			t.mu.Unlock()
			activity = titleFrom(d.Text)
		}
	case EventToolCall:
		var d ToolCallData
		if json.Unmarshal(ev.Data, &d) == nil {
			activity = d.Title
		}
	case EventPermissionDecision:
		d, ok := ev.Value().(PermissionDecisionData)
		if !ok {
			ok = json.Unmarshal(ev.Data, &d) == nil
		}
		// A change the user refused, or one no one could be asked about
		// (ask mode, no terminal): either way the child asked to make it,
		// if it could have changed anything (couldChange).
		if ok && d.Decision == "denied" && (d.Source == "user" || d.Mode == ModeAsk) && t.couldChange(d.Tool) {
			t.mu.Lock()
			t.denied++
			t.mu.Unlock()
		}
	case EventTurnFailed:
		var d TurnFailedData
		if json.Unmarshal(ev.Data, &d) == nil {
			t.mu.Lock()
			t.failed = &tools.Failure{Kind: d.Kind, Message: d.Message}
			t.mu.Unlock()
		}
	}
	if activity == "" {
		return
	}
	t.progress.offer(activity)
}

func newChildTracker(m *Manager, sa *subagent) *childTracker {
	t := &childTracker{m: m, sa: sa}
	t.progress = &progressThrottle{every: progressEvery, emit: func(activity string) {
		_ = sa.parent.emitBackground(EventStatus, SubagentProgressData{SubagentID: sa.id, Activity: activity})
	}}
	return t
}

// couldChange says whether a call of tool could have changed anything:
// not the commands of a child whose agent's shell is read-only (they see
// a read-only workspace), which ask mode asks about all the same.
func (t *childTracker) couldChange(tool string) bool {
	return tool != "bash" || t.sa == nil || t.sa.spec.Profile.Shell != ShellReadOnly
}

// deniedByUser is how many of the child's mutations the user refused.
func (t *childTracker) deniedByUser() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.denied
}

func (t *childTracker) summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.last) > summaryLimit {
		return keepEnds(t.last, summaryLimit)
	}
	return t.last
}

// keepEnds shortens a child's final answer to about limit bytes, keeping
// its start and its end: a report's conclusion (and a workflow step's
// "checkpoint_status:" line) is at the end.
func keepEnds(s string, limit int) string {
	tail := limit / 4
	head := strings.ToValidUTF8(s[:limit-tail], "")
	end := s[len(s)-tail:]
	for len(end) > 0 && !utf8.RuneStart(end[0]) {
		end = end[1:]
	}
	return fmt.Sprintf("%s\n[… %d bytes omitted; the whole answer is in the subagent's log]\n%s", head, len(s)-len(head)-len(end), end)
}

// SubagentSummariesData is the Data of a subagent_summaries event: what
// the parent's model is told, as one message before its next call, of the
// children that ended while it was not waiting for them (ADR 0011: replay
// folds only compact terminal summaries into the parent's input).
type SubagentSummariesData struct {
	SubagentIDs []string `json:"subagent_ids"`
	Text        string   `json:"text"`
}

// foldedSummaryLimit bounds each child's summary in the folded message.
const foldedSummaryLimit = 2 << 10

// unseenEnds marks as seen, and returns, the children of a session whose
// end its model was not shown: not by wait_agent, list_agents or
// close_agent, nor by a workflow (whose steps are reported by its
// outcome).
func (m *Manager) unseenEnds(parentID string) []tools.SubagentView {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []tools.SubagentView
	for _, sa := range m.children[parentID] {
		if sa.status.Ended() && !sa.seen {
			sa.seen = true
			out = append(out, m.viewLocked(sa))
		}
	}
	return out
}

// summariesOf is the message that tells a parent's model how children it
// did not wait for ended.
func summariesOf(views []tools.SubagentView) SubagentSummariesData {
	var b strings.Builder
	b.WriteString("[Pixir, not the user] These subagents of yours ended while you were not waiting for them; their whole work is in their own logs (list_agents shows them):\n")
	d := SubagentSummariesData{SubagentIDs: []string{}}
	for _, v := range views {
		d.SubagentIDs = append(d.SubagentIDs, v.ID)
		fmt.Fprintf(&b, "\n- %s (%s) %s, task: %s", v.ID, v.Agent, v.Status, titleFrom(v.Task))
		if v.Error != nil {
			fmt.Fprintf(&b, "\n  error: %s: %s", v.Error.Kind, v.Error.Message)
		}
		if s := strings.TrimSpace(v.Summary); s != "" {
			if len(s) > foldedSummaryLimit {
				s = keepEnds(s, foldedSummaryLimit)
			}
			b.WriteString("\n  summary: " + strings.ReplaceAll(s, "\n", "\n  "))
		}
		if c := v.Changes; c != nil && len(c.Added)+len(c.Changed)+len(c.Deleted) > 0 {
			fmt.Fprintf(&b, "\n  files: %d added, %d changed, %d deleted in its workspace %s", len(c.Added), len(c.Changed), len(c.Deleted), v.Workspace)
		}
		if v.Usage != nil {
			b.WriteString("\n  usage: " + v.Usage.String())
		}
	}
	d.Text = b.String()
	return d
}
