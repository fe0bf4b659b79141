// Subagents as sessions of their own, for a client that advertised
// clientCapabilities.subagents (schema.unstable.json of the SDK 2.4.0):
// each child is announced on its parent's session with subagent_update,
// its state follows its lifecycle, and its own updates go under its own
// session id. Without the capability, a child is a synthetic tool call of
// its parent (subagentUpdate), as before.

package acp

import (
	"context"
	"fmt"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
)

// childSession is what this connection was told of a child's session.
type childSession struct {
	parentID string
	cwd      string
	// task is the child's task, from the live queued event of its spawn:
	// its started event does not repeat it, and it is the child's first
	// prompt. It is kept only until that started event (takeChildTask),
	// and never for a child replayed on session/load.
	task string
	pr   *presenter // presents the child's own events
}

// nativeChildren reports whether the client shows Subagents as sessions.
func (s *Server) nativeChildren() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return present(s.client.Subagents)
}

// plansByID reports whether the client keeps plans by id.
func (s *Server) plansByID() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return present(s.client.Plan)
}

// announce notes that the client is told of child, and reports whether
// it was new to it: "The first update for an unknown sessionId announces
// the child and MUST be sent before any live child traffic".
func (s *Server) announce(child, parent, cwd, task string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, known := s.children[child]; known {
		if task != "" {
			c.task = task
		}
		return false
	}
	if s.children == nil {
		s.children = map[string]*childSession{}
	}
	s.children[child] = &childSession{parentID: parent, cwd: cwd, task: task}
	return true
}

// takeChildTask is the task of child as its spawn's queued event told
// it, given out once: a child's task is needed only for its first run's
// prompt, and a long-lived connection must not keep every task it saw.
func (s *Server) takeChildTask(child string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.children[child]
	if c == nil {
		return ""
	}
	task := c.task
	c.task = ""
	return task
}

// descendantEvent presents an event of a Subagent's session under that
// session's id (the runtime's descendant observer of a watched session).
func (s *Server) descendantEvent(ev runtime.Event) {
	s.mu.Lock()
	c := s.children[ev.SessionID]
	if c == nil { // not announced (a client that was not told): not shown
		s.mu.Unlock()
		return
	}
	if c.pr == nil {
		c.pr = &presenter{s: s, ctx: context.Background(), sessionID: ev.SessionID, root: c.cwd, child: true,
			native: true, plans: present(s.client.Plan)}
	}
	pr := c.pr
	s.mu.Unlock()
	pr.live(ev)
}

// subagentNative presents a subagent_event of this presenter's session as
// what happened to the child session: announced, queued input, running,
// idle. seq is the event's place in the Log, for the ids of messages.
func (p *presenter) subagentNative(d runtime.SubagentEventData, seq int64) {
	if d.ChildSessionID == "" {
		return // a Log older than child ids at the spawn: its child has none yet
	}
	u := SubagentUpdate{SessionUpdate: "subagent_update", SessionID: d.ChildSessionID, Meta: map[string]any{"pixir": childMeta(d)}}
	kept := d.Task
	if p.replaying {
		kept = "" // a replay shows no prompt: nothing will ask for it
	}
	announced := p.s.announce(d.ChildSessionID, p.sessionID, d.Workspace, kept)
	if p.replaying && !p.retold[d.ChildSessionID] {
		// A replay is the whole story: the client loads the session to
		// show it from its start (an editor reopening a tab it closed, on
		// this connection), so the first update of each child in it
		// announces the child again, with its title, cwd and
		// capabilities, and links it to its spawn, even when this
		// connection was told of it before.
		if p.retold == nil {
			p.retold = map[string]bool{}
		}
		p.retold[d.ChildSessionID] = true
		announced = true
	}
	if announced {
		u.Title = childTitle(d)
		u.Description = tools.Truncate(d.Task, displayLimit)
		u.Cwd = d.Workspace
		u.Capabilities = &SubagentCapabilities{Cancel: &Marker{}}
	}
	switch d.Event {
	case tools.SubagentEventQueued:
		if d.Input != "" {
			// send_input: a message from the parent to the child.
			if announced {
				p.send(u)
			}
			p.send(SessionMessage{SessionUpdate: "session_message", MessageID: fmt.Sprintf("%s-input-%d", d.SubagentID, seq),
				SenderSessionID: p.sessionID, RecipientSessionID: d.ChildSessionID,
				Content: []ContentBlock{textBlock(tools.Truncate(d.Input, displayLimit))}})
			return
		}
		p.send(u) // queued: announced without a state
		if announced && d.ParentToolCallID != "" && d.Name == "" {
			// The spawn_agent call links to the child it started.
			p.send(ToolCall{SessionUpdate: "tool_call_update", ToolCallID: d.ParentToolCallID,
				Meta: map[string]any{"pixir": map[string]any{"subagentSessionId": d.ChildSessionID}}})
		}
		return
	case tools.SubagentEventStarted, tools.SubagentEventInput:
		u.State = &SubagentState{State: "running"}
		p.send(u)
		if p.replaying {
			return // a replay does not repeat the child's prompt
		}
		input := d.Input
		if d.Event == tools.SubagentEventStarted {
			// A first run's prompt is its task, unless send_input gave it
			// another one (a child cancelled while queued): either way the
			// task is not needed again.
			if task := p.s.takeChildTask(d.ChildSessionID); input == "" {
				input = task
			}
		}
		if input != "" {
			// The child's prompt, in its own transcript.
			p.s.notify(p.ctx, d.ChildSessionID, ContentChunk{SessionUpdate: "user_message_chunk", Content: textBlock(input)})
		}
		return
	case tools.SubagentEventFinished:
		u.State = &SubagentState{State: "idle", StopReason: "end_turn", Usage: usageOf(d.Usage)}
		if d.Name != "" {
			// A workflow step's: its end waits for its checkpoint (see
			// holdStepEnd), which may say the step did not end well.
			if held, ok := p.holdStepEnd(d.SubagentID, u); ok {
				p.send(held)
			}
			return
		}
	case tools.SubagentEventCancelled:
		u.State = &SubagentState{State: "idle", StopReason: "cancelled", Usage: usageOf(d.Usage)}
	case tools.SubagentEventFailed, tools.SubagentEventTimedOut:
		if d.Status == tools.SubagentDetached {
			// A load found it without an end (detachedNative): what it
			// did after its process ended is not known.
			u.State = &SubagentState{State: "unknown", Meta: map[string]any{"pixir": detachedMeta(d)}}
			break
		}
		// The closest stop reason; Pixir's own status is in _meta.
		u.State = &SubagentState{State: "idle", StopReason: "error", Usage: usageOf(d.Usage),
			Meta: map[string]any{"pixir": map[string]any{"status": d.Status}}}
		if d.Error != nil {
			u.State.Error = &ErrorObject{Code: -32603, Message: fmt.Sprintf("%s: %s", d.Error.Kind, d.Error.Message)}
		}
	case tools.SubagentEventClosed:
		// Its work had ended (or was just stopped): its state stays.
	default:
		return
	}
	p.send(u)
}

// detachedNative shows a child restored from the Log whose run did not
// end while its process lived: its activity is not known.
func (p *presenter) detachedNative(d runtime.SubagentEventData) {
	if d.ChildSessionID == "" {
		return // a Log older than child ids at the spawn: it has none
	}
	u := SubagentUpdate{SessionUpdate: "subagent_update", SessionID: d.ChildSessionID,
		State: &SubagentState{State: "unknown", Meta: map[string]any{"pixir": detachedMeta(d)}}}
	if p.s.announce(d.ChildSessionID, p.sessionID, d.Workspace, "") {
		// A connection that was not told of it (a session/resume in a
		// new process, which replays nothing): the update announces it,
		// as a replay would.
		u.Title, u.Description, u.Cwd = childTitle(d), tools.Truncate(d.Task, displayLimit), d.Workspace
		u.Capabilities = &SubagentCapabilities{}
		u.Meta = map[string]any{"pixir": childMeta(d)}
	}
	p.send(u)
}

// childMeta is the _meta.pixir of a subagent_update: which Subagent the
// child session is, and where it came from.
func childMeta(d runtime.SubagentEventData) map[string]any {
	meta := map[string]any{"subagentId": d.SubagentID, "agent": d.Agent, "status": d.Status, "workspaceMode": d.WorkspaceMode}
	if d.Name != "" {
		meta["stepId"] = d.Name
	}
	if d.ParentToolCallID != "" {
		meta["parentToolCallId"] = d.ParentToolCallID
	}
	return meta
}

// childTitle is the title a child session is announced with.
func childTitle(d runtime.SubagentEventData) string {
	if d.Name != "" { // a workflow step
		return d.Name + " (" + d.Agent + "): " + titleOf(d.Task)
	}
	return d.Agent + ": " + titleOf(d.Task)
}

// detachedMeta is the _meta.pixir of a detached child's state.
func detachedMeta(d runtime.SubagentEventData) map[string]any {
	meta := map[string]any{"status": d.Status}
	if d.Error != nil {
		meta["detail"] = d.Error.Message
	}
	return meta
}

// usageOf is a child's usage as ACP counts it, or nil when none is known.
func usageOf(u *budget.Usage) *Usage {
	if u == nil {
		return nil
	}
	return &Usage{TotalTokens: u.InputTokens + u.OutputTokens, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
}
