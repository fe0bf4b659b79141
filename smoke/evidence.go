package smoke

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// sessionLog is a session's Log as read from disk: the evidence every
// check of a run is judged on.
type sessionLog struct {
	path   string
	events []runtime.Event
}

// logPath is where a session's Log lies.
func logPath(sess *runtime.Session) string {
	return filepath.Join(sess.Workspace().Root(), runtime.StateDir, "sessions", sess.ID()+".ndjson")
}

func readLog(path string) (*sessionLog, error) {
	events, report, err := runtime.ReadLog(path)
	if err != nil {
		return nil, fmt.Errorf("reading the Log %s: %w", path, err)
	}
	if report.TornBytes > 0 || report.Skipped > 0 {
		return nil, fmt.Errorf("the Log %s is damaged: %s", path, report)
	}
	return &sessionLog{path: path, events: events}, nil
}

// subEvent is a subagent_event with its place in the Log.
type subEvent struct {
	Seq int64
	TS  time.Time
	D   runtime.SubagentEventData
}

// wfEvent is a workflow_event with its place in the Log.
type wfEvent struct {
	Seq int64
	TS  time.Time
	D   workflows.WorkflowEvent
}

// after keeps the events whose seq is above seq.
func (l *sessionLog) after(seq int64) *sessionLog {
	out := &sessionLog{path: l.path}
	for _, ev := range l.events {
		if ev.Seq > seq {
			out.events = append(out.events, ev)
		}
	}
	return out
}

// lastSeq is the seq of the last event.
func (l *sessionLog) lastSeq() int64 {
	if len(l.events) == 0 {
		return 0
	}
	return l.events[len(l.events)-1].Seq
}

// ofType returns the events of type t with their data decoded into D.
func ofType[D any](l *sessionLog, t runtime.EventType) ([]D, []runtime.Event) {
	var data []D
	var evs []runtime.Event
	for _, ev := range l.events {
		if ev.Type != t {
			continue
		}
		var d D
		if json.Unmarshal(ev.Data, &d) != nil {
			continue
		}
		data = append(data, d)
		evs = append(evs, ev)
	}
	return data, evs
}

func (l *sessionLog) subagents() []subEvent {
	data, evs := ofType[runtime.SubagentEventData](l, runtime.EventSubagent)
	out := make([]subEvent, len(data))
	for i := range data {
		out[i] = subEvent{Seq: evs[i].Seq, TS: evs[i].TS, D: data[i]}
	}
	return out
}

func (l *sessionLog) workflowEvents() []wfEvent {
	data, evs := ofType[workflows.WorkflowEvent](l, runtime.EventWorkflow)
	out := make([]wfEvent, len(data))
	for i := range data {
		out[i] = wfEvent{Seq: evs[i].Seq, TS: evs[i].TS, D: data[i]}
	}
	return out
}

// terminalEvents are the subagent_event names that end a run.
var terminalEvents = []tools.SubagentEvent{tools.SubagentEventFinished, tools.SubagentEventFailed, tools.SubagentEventTimedOut, tools.SubagentEventCancelled}

// lifecycle is one child's subagent_events, by event name (the first of
// each).
type lifecycle struct {
	id     string
	events map[tools.SubagentEvent]subEvent
	order  []tools.SubagentEvent
}

// lifecycles groups the subagent_events of the Log by the step they ran
// (data.name), in the order the children were queued.
func (l *sessionLog) lifecycles() map[string]*lifecycle {
	out := map[string]*lifecycle{}
	for _, ev := range l.subagents() {
		lc := out[ev.D.Name]
		if lc == nil {
			lc = &lifecycle{id: ev.D.SubagentID, events: map[tools.SubagentEvent]subEvent{}}
			out[ev.D.Name] = lc
		}
		if _, seen := lc.events[ev.D.Event]; !seen {
			lc.events[ev.D.Event] = ev
		}
		lc.order = append(lc.order, ev.D.Event)
	}
	return out
}

// end is the event that ended the child's run.
func (lc *lifecycle) end() (subEvent, bool) {
	for _, name := range terminalEvents {
		if ev, ok := lc.events[name]; ok {
			return ev, true
		}
	}
	return subEvent{}, false
}

// seqTS is an event's place in the Log, as evidence.
func seqTS(ev subEvent) map[string]any {
	return map[string]any{"seq": ev.Seq, "ts": ev.TS.Format(time.RFC3339Nano)}
}

// stepOf finds a step's outcome.
func stepOf(out *workflows.Outcome, id string) *workflows.StepOutcome {
	for i := range out.Steps {
		if out.Steps[i].StepID == id {
			return &out.Steps[i]
		}
	}
	return nil
}

// firstDiff names the first place two JSON documents differ, or "".
func firstDiff(a, b []byte) string {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return "one of them is not JSON"
	}
	return diffAt("", x, y)
}

func diffAt(path string, x, y any) string {
	if reflect.DeepEqual(x, y) {
		return ""
	}
	switch xv := x.(type) {
	case map[string]any:
		yv, ok := y.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(xv)+len(yv))
		for k := range xv {
			keys = append(keys, k)
		}
		for k := range yv {
			if _, ok := xv[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if d := diffAt(path+"/"+k, xv[k], yv[k]); d != "" {
				return d
			}
		}
	case []any:
		yv, ok := y.([]any)
		if !ok || len(xv) != len(yv) {
			break
		}
		for i := range xv {
			if d := diffAt(fmt.Sprintf("%s/%d", path, i), xv[i], yv[i]); d != "" {
				return d
			}
		}
	}
	if path == "" {
		path = "/"
	}
	return fmt.Sprintf("%s: %s vs %s", path, short(x), short(y))
}

func short(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 120 {
		s = s[:119] + "…"
	}
	return s
}

// relTo shows path relative to root when it lies inside it.
func relTo(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}

// problemCodes lists the codes of a validation failure's problems, and
// the cycle path of the first cycle.
func problemCodes(details any) ([]string, []string) {
	var vd workflows.ValidationDetails
	b, err := json.Marshal(details)
	if err != nil || json.Unmarshal(b, &vd) != nil {
		return nil, nil
	}
	var codes, cycle []string
	for _, p := range vd.Problems {
		codes = append(codes, p.Code)
		if p.Code == "cycle" && cycle == nil {
			cycle = p.Cycle
		}
	}
	return codes, cycle
}

// waveOf is the 1-based wave of step id in a plan, or 0.
func waveOf(waves [][]string, id string) int {
	for i, w := range waves {
		if slices.Contains(w, id) {
			return i + 1
		}
	}
	return 0
}
