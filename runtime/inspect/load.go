package inspect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pixir-go/pixir/runtime"
)

// ErrAmbiguous is returned by Locate when a prefix names several
// sessions. An unknown session is runtime.ErrSessionNotFound.
var ErrAmbiguous = errors.New("ambiguous session id")

// Found is where a session's Log is.
type Found struct {
	ID string
	// Workspace is the workspace's root (symbolic links resolved, as the
	// runtime keeps it).
	Workspace string
	Log       string
	// Child is set when the id is a Subagent's session, whose Log lives
	// beside its snapshot.
	Child bool
}

// Workspace resolves dir as the runtime does for a session's workspace.
func Workspace(dir string) (string, error) {
	ws, err := runtime.NewWorkspace(dir)
	if err != nil {
		return "", err
	}
	root := ws.Root()
	ws.Close()
	return root, nil
}

// Locate finds the Log of session id in workspace dir: a session of the
// workspace by its id or a unique prefix of it, or a Subagent's session
// (under .pixir/subagents/) by its whole session id, or by its Subagent id
// (sa-…, as pixir inspect and the agent tools show it) or a unique prefix
// of that.
func Locate(dir, id string) (Found, error) {
	root, err := Workspace(dir)
	if err != nil {
		return Found{}, err
	}
	sessions := runtime.SessionsDir(root)
	notFound := func(why string) error {
		return fmt.Errorf("%w: %s in %s; `pixir sessions --cwd %s` lists the sessions there", runtime.ErrSessionNotFound, why, sessions, root)
	}
	if !runtime.ValidSessionID(id) {
		return Found{}, notFound(fmt.Sprintf("%q is not a session id", id))
	}
	path := filepath.Join(sessions, id+".ndjson")
	if isFile(path) {
		return Found{ID: id, Workspace: root, Log: path}, nil
	}
	subagents := filepath.Join(root, runtime.StateDir, "subagents")
	if matches, _ := filepath.Glob(filepath.Join(subagents, "*", id+".ndjson")); len(matches) > 0 {
		return Found{ID: id, Workspace: root, Log: matches[0], Child: true}, nil
	}
	if strings.HasPrefix(id, "sa-") {
		return locateSubagent(root, subagents, id, notFound)
	}
	ids, err := SessionIDs(root)
	if err != nil {
		return Found{}, err
	}
	ids = slices.DeleteFunc(ids, func(name string) bool { return !strings.HasPrefix(name, id) })
	switch len(ids) {
	case 0:
		return Found{}, notFound("no session " + id)
	case 1:
		return Found{ID: ids[0], Workspace: root, Log: filepath.Join(sessions, ids[0]+".ndjson")}, nil
	}
	return Found{}, fmt.Errorf("%w: %s is the start of %d sessions in %s (%s); give more of it", ErrAmbiguous, id, len(ids), sessions, strings.Join(ids, ", "))
}

// locateSubagent finds a Subagent's session by its sa-… id or a unique
// prefix of it: its Log is the one beside its snapshot.
func locateSubagent(root, subagents, id string, notFound func(string) error) (Found, error) {
	entries, err := os.ReadDir(subagents)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Found{}, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), id) {
			names = append(names, e.Name())
		}
	}
	switch len(names) {
	case 0:
		return Found{}, notFound("no Subagent " + id)
	case 1:
	default:
		return Found{}, fmt.Errorf("%w: %s is the start of %d Subagents in %s (%s); give more of it", ErrAmbiguous, id, len(names), subagents, strings.Join(names, ", "))
	}
	logs, _ := filepath.Glob(filepath.Join(subagents, names[0], "*.ndjson"))
	if len(logs) == 0 {
		return Found{}, notFound(fmt.Sprintf("Subagent %s has no Log", names[0]))
	}
	slices.Sort(logs)
	child := strings.TrimSuffix(filepath.Base(logs[0]), ".ndjson")
	return Found{ID: child, Workspace: root, Log: logs[0], Child: true}, nil
}

// SessionIDs are the ids of the sessions stored in workspace root (not
// the Subagents'), sorted.
func SessionIDs(root string) ([]string, error) {
	entries, err := os.ReadDir(runtime.SessionsDir(root))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".ndjson"); ok && !e.IsDir() {
			ids = append(ids, name)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// MinShortID is the fewest characters a shortened session id has.
const MinShortID = 8

// ShortIDs maps each of ids to its shortest start, at least MinShortID
// long, that no other of ids shares: what a person types to name it.
func ShortIDs(ids []string) map[string]string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	short := make(map[string]string, len(sorted))
	for i, id := range sorted {
		n := MinShortID
		for _, other := range []int{i - 1, i + 1} { // only neighbours share the longest starts
			if other >= 0 && other < len(sorted) {
				n = max(n, commonPrefix(id, sorted[other])+1)
			}
		}
		short[id] = id[:min(n, len(id))]
	}
	return short
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// ShortID is the shortened form of session id among the sessions of
// workspace dir (the id itself when they cannot be read).
func ShortID(dir, id string) string {
	root, err := Workspace(dir)
	if err != nil {
		return id
	}
	ids, err := SessionIDs(root)
	if err != nil {
		return id
	}
	return ShortIDs(append(ids, id))[id]
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// Load reads a located session's Log (tolerating a torn last line) and
// its metadata, and folds them into the tree. It returns the events too,
// for --events.
func Load(found Found) (*Session, []runtime.Event, error) {
	events, report, err := runtime.ReadLog(found.Log)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the session's log: %w", err)
	}
	s := Fold(events)
	s.SessionID, s.Workspace, s.Log = found.ID, found.Workspace, found.Log
	lookForSnapshots(s)
	s.Load.TornBytes, s.Load.SkippedLines = report.TornBytes, report.Skipped
	if m, ok := readMeta(strings.TrimSuffix(found.Log, ".ndjson") + ".json"); ok {
		if m.Title != "" {
			s.Title = m.Title
		}
		s.Mode, s.Model = string(m.Mode), m.Model
		s.CreatedAt, s.UpdatedAt = timePtr(m.CreatedAt), timePtr(m.UpdatedAt)
	}
	return s, events, nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// readMeta reads a Meta sidecar; a missing or broken one is no error:
// the Log is the truth.
func readMeta(path string) (runtime.Meta, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return runtime.Meta{}, false
	}
	var m runtime.Meta
	if json.Unmarshal(b, &m) != nil {
		return runtime.Meta{}, false
	}
	return m, true
}

// Listed is one session in `pixir sessions --json`: its metadata, how
// many turns its Log holds and where it is.
type Listed struct {
	runtime.Meta
	Turns int    `json:"turns"`
	Log   string `json:"log"`
	// LastStopReason is why the last turn stopped, when it stopped other
	// than end_turn (cancelled, max_turn_requests, max_tokens), as the
	// Log records it.
	LastStopReason string `json:"last_stop_reason,omitempty"`
}

// List lists the sessions of workspace dir, newest first.
func List(dir string) ([]Listed, error) {
	root, err := Workspace(dir)
	if err != nil {
		return nil, err
	}
	rt := runtime.New(runtime.Config{})
	defer rt.Close()
	metas, err := rt.ListSessions(root)
	if err != nil {
		return nil, err
	}
	out := make([]Listed, 0, len(metas))
	for _, m := range metas {
		// The Log is where it was found, even if the metadata names a
		// workspace that has moved since.
		l := Listed{Meta: m, Log: filepath.Join(runtime.SessionsDir(root), m.ID+".ndjson")}
		if l.Turns, err = countTurnsSince(l.Log, m.Count); err != nil {
			l.Turns = -1
		}
		l.Count = nil // how it was counted, not what is listed
		if l.Title == "" {
			l.Title = firstPrompt(l.Log)
		}
		l.LastStopReason = lastStopReason(l.Log)
		out = append(out, l)
	}
	return out, nil
}

// stopTail is how much of a Log's end lastStopReason reads: a turn's stop
// reason is on its last event, a short line. pixir sessions reads this
// much of every Log.
const stopTail = 16 << 10

// lastStopReason is the stop reason of the Log's last turn when it
// stopped other than end_turn, read from the Log's end alone: the last
// assistant_message with a stop_reason, when no user_message (a later
// turn) follows it. "" when there is none, or the end does not read.
func lastStopReason(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-stopTail, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	if off > 0 { // the first line is cut: skip it
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		if bytes.Contains(line, userMessage) {
			var ev struct {
				Type runtime.EventType `json:"type"`
			}
			if json.Unmarshal(line, &ev) == nil && ev.Type == runtime.EventUserMessage {
				return "" // a later turn; it ended end_turn, or still runs
			}
		}
		if !bytes.Contains(line, []byte(`"stop_reason"`)) {
			continue
		}
		var ev struct {
			Type runtime.EventType            `json:"type"`
			Data runtime.AssistantMessageData `json:"data"`
		}
		if json.Unmarshal(line, &ev) == nil && ev.Type == runtime.EventAssistantMessage && ev.Data.StopReason != "" {
			return string(ev.Data.StopReason)
		}
	}
	return ""
}

// userMessage is how a user_message's type appears in a Log line. A
// quote is escaped inside a JSON string, so only a key or a raw tool
// argument can hold it; those lines are decoded to be sure.
var userMessage = []byte(`"type":"user_message"`)

// CountTurns counts the user_messages of a Log without decoding every
// line.
func CountTurns(path string) (int, error) {
	n := 0
	err := scanUserMessages(path, func(runtime.UserMessageData) bool { n++; return true })
	return n, err
}

// countTurnsSince counts the user_messages of a Log whose first
// c.Bytes bytes hold c.UserMessages (the session's metadata says so):
// only the lines after them are read. A Log whose metadata has no count
// (older versions), or that is shorter than it or does not end a line
// there (not the Log that was counted), is counted whole.
func countTurnsSince(path string, c *runtime.LogCount) (int, error) {
	if c == nil || c.Bytes < 0 || c.UserMessages < 0 {
		return CountTurns(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if c.Bytes > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], c.Bytes-1); err != nil || last[0] != '\n' {
			return CountTurns(path)
		}
		if _, err := f.Seek(c.Bytes, io.SeekStart); err != nil {
			return 0, err
		}
	}
	n := c.UserMessages
	err = scanUserMessagesIn(f, func(runtime.UserMessageData) bool { n++; return true })
	return n, err
}

// firstPrompt is the title the runtime gives a session without one.
func firstPrompt(path string) string {
	var title string
	_ = scanUserMessages(path, func(d runtime.UserMessageData) bool { title = oneLine(d.Text, 80); return false })
	return title
}

// scanUserMessages calls fn with each user_message of the Log at path
// until it returns false.
func scanUserMessages(path string, fn func(runtime.UserMessageData) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return scanUserMessagesIn(f, fn)
}

// scanUserMessagesIn is scanUserMessages of what is left to read in f.
func scanUserMessagesIn(f io.Reader, fn func(runtime.UserMessageData) bool) error {
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: keep the start (the next read overwrites the
			// buffer) and read the rest.
			start := slices.Clone(line)
			rest, err2 := r.ReadBytes('\n')
			line, err = append(start, rest...), err2
		}
		if bytes.Contains(line, userMessage) {
			var ev struct {
				Type runtime.EventType       `json:"type"`
				Data runtime.UserMessageData `json:"data"`
			}
			if json.Unmarshal(line, &ev) == nil && ev.Type == runtime.EventUserMessage && !fn(ev.Data) {
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// lookForSnapshots marks the isolated steps whose snapshot, which the Log
// names, is no longer on disk though their child was not closed: pixir gc
// removed it (it writes nothing to the session's Log), or someone did by
// hand. inspect must not send anyone to a folder that is gone.
func lookForSnapshots(s *Session) {
	var runs []*Workflow
	runs = append(runs, s.Workflows...)
	for _, t := range s.Turns {
		for _, it := range t.Items {
			if it.ToolCall != nil {
				runs = append(runs, it.ToolCall.Workflows...)
			}
		}
	}
	for _, w := range runs {
		for _, st := range w.Steps {
			if st.WorkspaceMode != "isolated" || st.Workspace == "" || st.SnapshotDeleted {
				continue
			}
			if _, err := os.Lstat(st.Workspace); errors.Is(err, fs.ErrNotExist) {
				st.SnapshotRemoved = true
			}
		}
	}
}
