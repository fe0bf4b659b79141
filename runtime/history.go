package runtime

import (
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/internal/jsonraw"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
)

// openCall is a tool call the model made that has no result yet.
type openCall struct {
	call provider.ToolCall
	// announced is set once its tool_call event is in the Log (the editor
	// has seen it).
	announced bool
	// inHistory is set when History already holds an interrupted result
	// for it, which the Log does not hold yet.
	inHistory bool
}

// historyFold rebuilds a session's model conversation from its canonical
// events, one event at a time, as the Log is read. Real model APIs refuse a
// conversation in which a tool call has no result, so the fold answers
// every call a crash left without one with an interrupted result: in
// History at once, and in the list the session then records in its Log
// (once: a later load finds those results).
type historyFold struct {
	log     *slog.Logger
	history []provider.Message
	// pending are the calls of the last model response still without a
	// result.
	pending []openCall
	// interrupted are calls History answered with an interrupted result
	// that the Log does not hold (the process ended, or the Log could not
	// be written, before their results).
	interrupted []openCall
	title       string
	// subagents are the subagent events, for the Subagents Manager, with
	// what showed the model children's ends (subagent_summaries, results
	// of wait_agent, list_agents and close_agent: see untoldDetached).
	subagents []Event
	// usage is what the session's own model calls spent; children what
	// each Subagent spent, as its last event says.
	usage    budget.Usage
	children map[string]budget.Usage
	// callIDs are the ids of every tool call the model made.
	callIDs map[string]bool
	// undecoded counts the events left out because their data does not
	// decode or their type is unknown; undecodedFirst lists the first.
	undecoded      int
	undecodedFirst []UndecodedEvent
	// allowAlways are the tools (and merges) the user allowed for the rest
	// of the session (allow_always): a session opened again remembers them.
	allowAlways map[string]bool
	// calib is the correction of the estimate of tokens its last model
	// call made (Session.calib), 0 when the Log holds none.
	calib float64
	// seen is what the model last saw of each file (Session.seen).
	seen map[string]tools.Seen
}

// leaveOut notes an event the fold cannot read: it is left out of
// History and reported with the load (noteIn), never silently.
func (f *historyFold) leaveOut(ev Event, reason string) {
	f.log.Debug("event left out of the session's history", "seq", ev.Seq, "type", ev.Type, "reason", reason)
	f.undecoded++
	if len(f.undecodedFirst) < maxReportedDamage {
		f.undecodedFirst = append(f.undecodedFirst, UndecodedEvent{Seq: ev.Seq, Type: ev.Type, Reason: reason})
	}
}

// noteIn adds the events the fold left out to a load's report.
func (f *historyFold) noteIn(r *LoadReport) {
	r.Undecoded, r.UndecodedEvents = f.undecoded, f.undecodedFirst
}

// spent is what the session spent, its Subagents included.
func (f *historyFold) spent() budget.Usage {
	u := f.usage
	for _, c := range f.children {
		u = u.Add(c)
	}
	return u
}

// add folds one event in. The data of the events History is made of are
// read without reflection (jsonraw splits them in one pass; strings are
// copied as they are when they hold no escape): a session of 100,000
// events folds in about the time it takes to read it.
func (f *historyFold) add(ev Event) {
	switch ev.Type {
	case EventUserMessage:
		var text string
		if !f.read(ev, map[string]any{"text": &text}) {
			return
		}
		f.closePending()
		f.history = append(f.history, provider.Message{Role: provider.RoleUser, Text: text})
		if f.title == "" {
			f.title = titleFrom(text)
		}
	case EventAssistantMessage:
		var text string
		var calls []provider.ToolCall
		var stop string
		if !f.read(ev, map[string]any{"text": &text, "tool_calls": &calls, "stop_reason": &stop}) {
			return
		}
		if stop != "" && text == "" && len(calls) == 0 {
			return // why the turn stopped: no message of the model's
		}
		f.closePending()
		f.history = append(f.history, provider.Message{Role: provider.RoleAssistant, Text: text, ToolCalls: calls})
		for _, tc := range calls {
			f.pending = append(f.pending, openCall{call: tc})
			if f.callIDs == nil {
				f.callIDs = map[string]bool{}
			}
			f.callIDs[tc.ID] = true
		}
	case EventSubagentSummaries:
		var text string
		if !f.read(ev, map[string]any{"text": &text}) {
			return
		}
		f.closePending()
		f.history = append(f.history, provider.Message{Role: provider.RoleUser, Text: text, FromPixir: true})
		f.subagents = append(f.subagents, ev)
	case EventCompaction:
		var d CompactionData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			f.leaveOut(ev, "its data does not decode ("+err.Error()+")")
			return
		}
		f.closePending()
		f.history = compacted(f.history, d)
	case EventToolCall:
		var id string
		if f.read(ev, map[string]any{"tool_call_id": &id}) {
			if i := f.find(f.pending, id); i >= 0 {
				f.pending[i].announced = true
			}
		}
	case EventToolResult:
		// Only what History needs: the result stays the JSON it is in the
		// Log (modelTextRaw reads it as modelText would the live result).
		var id, name string
		var result json.RawMessage
		var seen *tools.Seen
		if !f.read(ev, map[string]any{"tool_call_id": &id, "name": &name, "result": &result, "seen": &seen}) {
			return
		}
		if seen != nil && seen.Path != "" {
			if f.seen == nil {
				f.seen = map[string]tools.Seen{}
			}
			f.seen[seen.Path] = *seen
		}
		if name == "wait_agent" || name == "list_agents" || name == "close_agent" {
			f.subagents = append(f.subagents, ev)
		}
		if i := f.find(f.pending, id); i >= 0 {
			f.pending = slices.Delete(f.pending, i, i+1)
			f.history = append(f.history, provider.Message{Role: provider.RoleTool, Text: modelTextRaw(result), ToolCallID: id, ToolName: name})
			return
		}
		// The recorded answer of a call History already answered (a
		// repair recorded after later messages): nothing to add.
		if i := f.find(f.interrupted, id); i >= 0 {
			f.interrupted = slices.Delete(f.interrupted, i, i+1)
		}
	case EventSubagent:
		f.subagents = append(f.subagents, ev)
		// A child's ends carry what it spent so far: its last one counts.
		var id string
		var usage json.RawMessage
		if f.read(ev, map[string]any{"subagent_id": &id, "usage": &usage}) && usage != nil {
			var u budget.Usage
			if err := json.Unmarshal(usage, &u); err == nil {
				if f.children == nil {
					f.children = map[string]budget.Usage{}
				}
				f.children[id] = u
			}
		}
	case EventPermissionDecision:
		var tool, decision, source, option string
		if f.read(ev, map[string]any{"tool": &tool, "decision": &decision, "source": &source, "option": &option}) &&
			decision == "allowed" && source == "user" && option == string(AllowAlways) && tool != "" {
			if f.allowAlways == nil {
				f.allowAlways = map[string]bool{}
			}
			f.allowAlways[tool] = true
		}
	case EventProviderUsage:
		u := budget.Usage{ModelCalls: 1}
		var est int64
		if f.read(ev, map[string]any{"input_tokens": &u.InputTokens, "output_tokens": &u.OutputTokens, "cost": &u.Cost, "currency": &u.Currency, "request_bytes": &est}) {
			f.usage = f.usage.Add(u)
			// A turn's call records what its request weighed: the
			// session's estimate of tokens is corrected as it was live.
			if c := calibration(int(est), int(u.InputTokens)); c > 0 {
				f.calib = c
			}
		}
	case EventNotice:
		// A session forked (session/fork) or started from a fork: the
		// grants before it were the source's.
		var source string
		var calib float64
		if f.read(ev, map[string]any{"source": &source, "token_correction": &calib}) && source == "fork" {
			f.allowAlways = nil
			if calib > 0 {
				f.calib = calib
			}
		}
	case EventReasoning, EventWorkflow, EventTurnFailed:
		// Not part of History; their readers check them.
	default:
		f.leaveOut(ev, "its type is not one this Pixir knows (a Log a newer Pixir wrote?)")
	}
}

// read sets the members of ev's data named in into (a *string, a
// *json.RawMessage, or anything encoding/json decodes); a member that is
// missing or null leaves its value as it was. It reports, and says false
// for, data that does not decode.
func (f *historyFold) read(ev Event, into map[string]any) bool {
	_, members, err := jsonraw.Scan(ev.Data)
	if err == nil && members == nil {
		err = errors.New("the data is not an object")
	}
	for _, m := range members {
		v, ok := into[m.Key]
		if !ok || err != nil || string(m.Value) == "null" {
			continue
		}
		switch v := v.(type) {
		case *string:
			err = unquote(m.Value, v)
		case *json.RawMessage:
			*v = m.Value
		case *int64:
			*v, err = strconv.ParseInt(string(m.Value), 10, 64)
		case *float64:
			*v, err = strconv.ParseFloat(string(m.Value), 64)
		default:
			err = json.Unmarshal(m.Value, v)
		}
	}
	if err != nil {
		f.leaveOut(ev, "its data does not decode ("+err.Error()+")")
		return false
	}
	return true
}

func (f *historyFold) find(calls []openCall, id string) int {
	return slices.IndexFunc(calls, func(c openCall) bool { return c.call.ID == id })
}

// closePending answers, in History, calls that a new message follows
// without their results: they were interrupted.
func (f *historyFold) closePending() {
	for _, c := range f.pending {
		f.history = append(f.history, interruptedMessage(c.call))
		c.inHistory = true
		f.interrupted = append(f.interrupted, c)
	}
	f.pending = f.pending[:0]
}

// unanswered is every call the Log holds no result for, in order.
func (f *historyFold) unanswered() []openCall {
	return append(slices.Clone(f.interrupted), f.pending...)
}

// interruptedResult is the answer recorded for a call a crash (or a Log
// that could not be written) left without one.
func interruptedResult() tools.Result {
	return tools.Fail(tools.ErrDetached, "interrupted: Pixir stopped (the process ended, or its Log could not be written) before this call "+
		"finished; whether it changed anything is unknown, so check before running it again")
}

func interruptedMessage(tc provider.ToolCall) provider.Message {
	return provider.Message{Role: provider.RoleTool, Text: modelText(interruptedResult()), ToolCallID: tc.ID, ToolName: tc.Name}
}

// foldHistory rebuilds the model conversation from canonical events.
func foldHistory(events []Event, log *slog.Logger) []provider.Message {
	f := &historyFold{log: log}
	for _, ev := range events {
		f.add(ev)
	}
	return f.history
}

// recordInterrupted answers in the Log, durably, every call the session
// knows to be without a result, and in History those it does not answer
// yet. A call the editor never saw is announced first, so that it too is
// shown ended. It runs when a session opens and before each turn; what it
// could not record (the Log cannot be written) stays for the next time.
func (s *Session) recordInterrupted(obs Observer) error {
	s.mu.Lock()
	calls := slices.Clone(s.interrupted)
	s.mu.Unlock()
	if len(calls) == 0 {
		return nil
	}
	for _, c := range calls {
		tc := c.call
		if !c.announced {
			pres := tools.Presentation{Title: tc.Name, Kind: tools.KindOther}
			if tool, ok := s.registry().Get(tc.Name); ok && tc.Unparsed == "" {
				pres = tool.Describe(tc.Arguments)
			}
			if err := s.emit(obs, EventToolCall, ToolCallData{ToolCallID: tc.ID, Name: tc.Name, Arguments: shownArguments(tc),
				Title: pres.Title, Kind: pres.Kind, Locations: pres.Locations}); err != nil {
				return err
			}
		}
		if err := s.emit(obs, EventToolResult, ToolResultData{ToolCallID: tc.ID, Name: tc.Name, Result: interruptedResult(), Interrupted: true}); err != nil {
			return err
		}
		s.mu.Lock()
		if !c.inHistory {
			m := interruptedMessage(tc)
			s.history = append(s.history, m)
			s.histBytes += messageBytes(m)
		}
		s.interrupted = slices.DeleteFunc(s.interrupted, func(o openCall) bool { return o.call.ID == tc.ID })
		s.mu.Unlock()
	}
	return s.log.Sync()
}
