package runtime

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
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/pixir-go/pixir/internal/jsonraw"
	"github.com/pixir-go/pixir/internal/plural"
)

// Log is a Session's append-only NDJSON file of canonical Events: the truth
// from which History and the ACP replay are folded.
//
// One process writes a Log at a time: opening one for append takes an
// exclusive lock on it (flock), held until Close, and a second opener is
// refused with the holder's pid and command (ErrSessionInUse). Each event
// is one write of one whole line to a file opened O_APPEND. A write that
// fails (a full disk) is cut back to the end of the last whole line, so a
// failure never leaves half a line in the middle of the Log.
type Log struct {
	mu   sync.Mutex
	f    *os.File
	path string
	seq  int64
	// size is where the last whole line ends: a failed append is cut back
	// to it.
	size int64
	// users is how many user_messages (turns) the first size bytes hold:
	// the session's metadata keeps both (LogCount), so a list of sessions
	// reads only what was appended since, not every Log whole.
	users int
	// broken is set when a failed append could not be cut back: the Log
	// then refuses every later append rather than write after half a line.
	broken error
	// write writes one event as one line (nil: writeEventLine, called
	// directly so that an appended event stays on its emitter's stack), and
	// writeGroup several events produced together as their lines, in one
	// write when it can; tests set them to fail like a full disk.
	write      func(f *os.File, ev *Event) (int, error)
	writeGroup func(f *os.File, evs []*Event) (int, error)
}

// Errors a caller can tell apart.
var (
	// ErrSessionInUse: another process holds the session's Log.
	ErrSessionInUse = errors.New("the session is in use by another process")
	// ErrLogWrite: an event could not be written to the Log.
	ErrLogWrite = errors.New("the session's Log could not be written")
)

// InUseError says who holds a Log.
type InUseError struct {
	Path string
	// PID and Command name the holder, when the system says (Linux); PID
	// is 0 when it is not known.
	PID     int
	Command string
}

func (e *InUseError) Error() string {
	holder := "another process"
	switch {
	case e.PID != 0 && e.Command != "":
		holder = fmt.Sprintf("another process (pid %d: %s)", e.PID, e.Command)
	case e.PID != 0:
		holder = fmt.Sprintf("another process (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s: %s has its Log %s open; one process at a time may write a session, so close it there "+
		"(or end that process) and try again; pixir inspect can read it meanwhile", ErrSessionInUse, holder, e.Path)
}

func (e *InUseError) Is(target error) bool { return target == ErrSessionInUse }

// LogWriteError is a failed append: the turn that made it stops.
type LogWriteError struct {
	Path string
	Err  error
}

func (e *LogWriteError) Error() string {
	return fmt.Sprintf("%s (%s: %v); the turn stopped and nothing half-written was kept: free disk space (or fix the file) and send the prompt again",
		ErrLogWrite, e.Path, e.Err)
}

func (e *LogWriteError) Is(target error) bool { return target == ErrLogWrite }
func (e *LogWriteError) Unwrap() error        { return e.Err }

// Damage is one line of a Log that is not an event.
type Damage struct {
	Line   int   `json:"line"`   // 1-based
	Offset int64 `json:"offset"` // where the line starts
	Bytes  int   `json:"bytes"`
	// Torn is set for an incomplete last line (a crash mid-write).
	Torn bool `json:"torn,omitempty"`
	// Salvaged is set when an event whole at the line's end was kept: the
	// start of the line was the torn rest of an earlier write.
	Salvaged bool `json:"salvaged,omitempty"`
}

// maxReportedDamage bounds the damaged lines a LoadReport lists one by one.
const maxReportedDamage = 20

// LoadReport says what reading a Log found beyond the events themselves.
type LoadReport struct {
	Events int
	// TornBytes is the length of an incomplete last line that was left
	// out (a crash mid-write); 0 when the Log ended cleanly.
	TornBytes int
	// Skipped counts complete lines that are not events.
	Skipped int
	// Damaged lists the first damaged lines, the torn last one included.
	Damaged []Damage
	// Undecoded counts events whose data the session's fold could not
	// read, or of a type this Pixir does not know (a Log another version
	// wrote, or an edited one): left out of the conversation.
	Undecoded int
	// UndecodedEvents lists the first of them.
	UndecodedEvents []UndecodedEvent
}

// UndecodedEvent is an event a load left out though its line was whole.
type UndecodedEvent struct {
	Seq  int64     `json:"seq"`
	Type EventType `json:"type"`
	// Reason says what was wrong: its data does not decode, or its type
	// is unknown.
	Reason string `json:"reason"`
}

// Intact reports whether every line of the Log was an event, and every
// event one this Pixir reads.
func (r LoadReport) Intact() bool { return r.TornBytes == 0 && r.Skipped == 0 && r.Undecoded == 0 }

func (r LoadReport) String() string {
	s := plural.Of(r.Events, "event", "events")
	if r.Intact() {
		return s
	}
	var parts []string
	for _, d := range r.Damaged {
		switch {
		case d.Torn:
			parts = append(parts, fmt.Sprintf("the torn last line %d (%d bytes at offset %d, cut off mid-write) was left out", d.Line, d.Bytes, d.Offset))
		case d.Salvaged:
			parts = append(parts, fmt.Sprintf("line %d (%d bytes at offset %d) began with a torn write that was skipped; the event after it was kept", d.Line, d.Bytes, d.Offset))
		default:
			parts = append(parts, fmt.Sprintf("line %d (%d bytes at offset %d) is not an event and was skipped", d.Line, d.Bytes, d.Offset))
		}
	}
	if listed := len(r.Damaged); r.Skipped+btoi(r.TornBytes > 0) > listed {
		parts = append(parts, "and "+plural.Of(r.Skipped+btoi(r.TornBytes > 0)-listed, "more damaged line", "more damaged lines"))
	}
	for _, u := range r.UndecodedEvents {
		parts = append(parts, fmt.Sprintf("event %d (%s) was left out: %s", u.Seq, u.Type, u.Reason))
	}
	if listed := len(r.UndecodedEvents); r.Undecoded > listed {
		parts = append(parts, "and "+plural.Of(r.Undecoded-listed, "more event", "more events")+" this Pixir cannot read")
	}
	return s + "; " + strings.Join(parts, "; ")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scanned is what one pass over a Log found.
type scanned struct {
	report LoadReport
	// clean is the length of the prefix made of whole lines and a last
	// event missing only its newline.
	clean int64
	// needsNewline is set when that last event has no newline.
	needsNewline bool
	seq          int64
	users        int // user_messages
}

// scanLog decodes r line by line, calling visit with each event as it is
// read; a line that is not an event is skipped and reported.
func scanLog(r io.Reader, visit func(Event)) (scanned, error) {
	var (
		sc   scanned
		in   = bufio.NewReaderSize(r, 256<<10)
		buf  []byte
		line int
		off  int64
	)
	damaged := func(d Damage) {
		if len(sc.report.Damaged) < maxReportedDamage {
			sc.report.Damaged = append(sc.report.Damaged, d)
		}
	}
	emit := func(ev *Event) {
		sc.report.Events++
		sc.seq = max(sc.seq, ev.Seq)
		if ev.Type == EventUserMessage {
			sc.users++
		}
		if visit != nil {
			visit(*ev)
		}
	}
	for {
		chunk, err := in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			buf = append(buf, chunk...)
			continue
		}
		raw := chunk
		if len(buf) > 0 {
			buf = append(buf, chunk...)
			raw = buf
		}
		if len(raw) > 0 {
			line++
			complete := raw[len(raw)-1] == '\n'
			text := bytes.TrimSpace(raw)
			var ev Event
			switch {
			case len(text) == 0:
				if complete {
					sc.clean = off + int64(len(raw))
				}
			case decodeEvent(text, &ev):
				emit(&ev)
				sc.clean = off + int64(len(raw))
				sc.needsNewline = !complete
			case !complete:
				sc.report.TornBytes = len(raw)
				damaged(Damage{Line: line, Offset: off, Bytes: len(raw), Torn: true})
			default:
				sc.report.Skipped++
				salvaged := salvage(text, &ev)
				damaged(Damage{Line: line, Offset: off, Bytes: len(raw), Salvaged: salvaged})
				if salvaged {
					emit(&ev)
				}
				sc.clean = off + int64(len(raw))
			}
			off += int64(len(raw))
		}
		buf = buf[:0]
		if err == io.EOF {
			return sc, nil
		}
		if err != nil {
			return sc, err
		}
	}
}

// decodeEvent decodes one line into ev. The line is validated and split
// into its members in one pass (jsonraw.Scan, several times faster than
// encoding/json on long strings); the envelope's fields are then read
// without reflection, and the data is kept as the raw text it is, for the
// fold and the replay to decode once each.
func decodeEvent(text []byte, ev *Event) bool {
	_, members, err := jsonraw.Scan(text)
	if err != nil || members == nil {
		return false
	}
	*ev = Event{}
	for _, m := range members {
		switch m.Key {
		case "id":
			err = unquote(m.Value, &ev.ID)
		case "session_id":
			err = unquote(m.Value, &ev.SessionID)
		case "seq":
			err = json.Unmarshal(m.Value, &ev.Seq)
		case "ts":
			var ts string
			if err = unquote(m.Value, &ts); err == nil {
				ev.TS, err = time.Parse(time.RFC3339Nano, ts)
			}
		case "type":
			var typ string
			err = unquote(m.Value, &typ)
			ev.Type = EventType(typ)
		case "data":
			ev.Data = bytes.Clone(m.Value)
		}
		if err != nil {
			return false
		}
	}
	return ev.Type != ""
}

// unquote reads a JSON string, at once when it has no escapes (ids,
// times and types never do).
func unquote(raw []byte, s *string) error {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		*s = string(raw[1 : len(raw)-1])
		return nil
	}
	return json.Unmarshal(raw, s)
}

// salvage finds a whole event at the end of a damaged line: a write torn
// by a crash, with the next event appended right after it.
func salvage(text []byte, ev *Event) bool {
	i := bytes.LastIndex(text, []byte(`{"id":`))
	return i > 0 && decodeEvent(text[i:], ev)
}

// ReadLog reads the events of the Log at path without opening it for
// append (and without its lock: a read-only view).
func ReadLog(path string) ([]Event, LoadReport, error) {
	var events []Event
	report, err := ScanLog(path, func(ev Event) { events = append(events, ev) })
	return events, report, err
}

// ScanLog reads the Log at path read-only, calling visit with each event
// as it is read.
func ScanLog(path string, visit func(Event)) (LoadReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return LoadReport{}, err
	}
	defer f.Close()
	sc, err := scanLog(f, visit)
	return sc.report, err
}

// OpenLog opens (creating if needed) the Log at path for append, locked
// for this process, and calls visit, when not nil, with each event already
// in it as it is read. A torn last line is cut off so that appends start on
// a line of their own; damaged lines elsewhere are skipped and reported.
func OpenLog(path string, visit func(Event)) (*Log, LoadReport, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, LoadReport{}, err
	}
	f, err := openLogFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, LoadReport{}, err
	}
	if err := lockLog(f, path); err != nil {
		f.Close()
		return nil, LoadReport{}, err
	}
	sc, err := scanLog(f, visit)
	if err != nil {
		f.Close()
		return nil, sc.report, fmt.Errorf("reading %s: %w", path, err)
	}
	size := sc.clean
	if sc.report.TornBytes > 0 {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, sc.report, fmt.Errorf("cutting the torn last line of %s: %w", path, err)
		}
	}
	if sc.needsNewline {
		if _, err := f.Write([]byte{'\n'}); err != nil {
			f.Close()
			return nil, sc.report, fmt.Errorf("ending the last line of %s: %w", path, err)
		}
		size++
	}
	return &Log{f: f, path: path, seq: sc.seq, size: size, users: sc.users, writeGroup: writeEventLines}, sc.report, nil
}

// CreateLog creates a new, empty Log at path, locked for this process; it
// fails if one exists. It skips the reading OpenLog does, which matters
// when thousands of Subagents each start one.
func CreateLog(path string) (*Log, error) {
	f, err := openLogFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		f, err = openLogFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	}
	if err != nil {
		return nil, err
	}
	if err := lockLog(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return &Log{f: f, path: path, writeGroup: writeEventLines}, nil
}

// Path is where the Log lives.
func (l *Log) Path() string { return l.path }

// Reattach checks that the Log is still the file at its path, and when
// that file was removed while the Log was open (a git clean -fdx, an rm -r
// of .pixir), writes it back from the open file, which still holds every
// event, locks it and goes on in it: appends to the removed file would
// be lost when the process ends, the session unloadable. It reports
// whether it wrote the Log back. Another file at the path is never
// overwritten: that is an error, as is a Log that cannot be written back.
func (l *Log) Reattach() (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return false, errors.New("log is closed")
	}
	open, err := l.f.Stat()
	if err != nil {
		return false, &LogWriteError{Path: l.path, Err: err}
	}
	at, err := os.Stat(l.path)
	switch {
	case err == nil && os.SameFile(open, at):
		return false, nil
	case err == nil:
		return false, &LogWriteError{Path: l.path, Err: errors.New("another file took the Log's place while the session was open; move it away and send the prompt again")}
	case !errors.Is(err, fs.ErrNotExist):
		return false, &LogWriteError{Path: l.path, Err: err}
	}
	made, err := mkdirAllMade(filepath.Dir(l.path))
	if err != nil {
		return false, &LogWriteError{Path: l.path, Err: fmt.Errorf("writing back the removed Log: %w", err)}
	}
	f, err := openLogFile(l.path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return false, &LogWriteError{Path: l.path, Err: fmt.Errorf("writing back the removed Log: %w", err)}
	}
	if err := lockLog(f, l.path); err != nil {
		f.Close()
		return false, err
	}
	_, err = io.Copy(f, io.NewSectionReader(l.f, 0, l.size))
	if err == nil {
		// Durable as a Log opened on load is: its content, its name in
		// its folder, and the folders made for it in theirs.
		err = f.Sync()
	}
	for _, dir := range append([]string{filepath.Dir(l.path)}, made...) {
		if err == nil {
			err = syncDir(dir)
		}
	}
	if err != nil {
		f.Close()
		_ = os.Remove(l.path)
		return false, &LogWriteError{Path: l.path, Err: fmt.Errorf("writing back the removed Log: %w", err)}
	}
	l.f.Close()
	l.f = f
	return true, nil
}

// mkdirAllMade is os.MkdirAll(dir, 0o755), and returns the parents of the
// folders it made, deepest first: the folders whose entries changed.
func mkdirAllMade(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	parents := make([]string, 0, len(missing))
	for _, d := range missing {
		parents = append(parents, filepath.Dir(d))
	}
	return parents, nil
}

// Append stamps ev with the next seq (and an id and time when missing) and
// writes it as one line. When the write fails, the Log is cut back to its
// last whole line and the error is a *LogWriteError.
func (l *Log) Append(ev *Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("log is closed")
	}
	if l.broken != nil {
		return &LogWriteError{Path: l.path, Err: fmt.Errorf("an earlier write failed and could not be undone: %w", l.broken)}
	}
	seq := l.seq + 1
	ev.Seq = seq
	if ev.ID == "" {
		ev.ID = uuid.Must(uuid.NewV7()).String()
	}
	if ev.TS.IsZero() {
		ev.TS = time.Now().UTC()
	}
	var n int
	var err error
	if l.write != nil { // a test's writer: given a copy, which escapes instead of ev
		stamped := *ev
		n, err = l.write(l.f, &stamped)
	} else {
		n, err = writeEventLine(l.f, ev)
	}
	if err != nil {
		if terr := l.f.Truncate(l.size); terr != nil {
			l.broken = terr
		}
		return &LogWriteError{Path: l.path, Err: err}
	}
	l.seq = seq
	l.size += int64(n)
	if ev.Type == EventUserMessage {
		l.users++
	}
	return nil
}

// AppendGroup appends events produced together (a model's answer and its
// usage) as Append does each, in one write of their whole lines where it
// can (a large event is still written from its pieces, a write of its
// own). The group is recorded whole or not at all: when a write fails,
// the Log is cut back to where the group began, none of it took a seq,
// and the error is a *LogWriteError.
func (l *Log) AppendGroup(evs []*Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("log is closed")
	}
	if l.broken != nil {
		return &LogWriteError{Path: l.path, Err: fmt.Errorf("an earlier write failed and could not be undone: %w", l.broken)}
	}
	seq := l.seq
	now := time.Now().UTC()
	for _, ev := range evs {
		seq++
		ev.Seq = seq
		if ev.ID == "" {
			ev.ID = uuid.Must(uuid.NewV7()).String()
		}
		if ev.TS.IsZero() {
			ev.TS = now
		}
	}
	n, err := l.writeGroup(l.f, evs)
	if err != nil {
		if terr := l.f.Truncate(l.size); terr != nil {
			l.broken = terr
		}
		return &LogWriteError{Path: l.path, Err: err}
	}
	l.seq = seq
	l.size += int64(n)
	for _, ev := range evs {
		if ev.Type == EventUserMessage {
			l.users++
		}
	}
	return nil
}

// LogCount says how many user_messages (turns) the first Bytes bytes of a
// Log hold, whole lines. A Log is only appended to, so the count stays
// true of those bytes: whoever counts turns reads only the lines after
// them (pixir sessions). Kept in the session's metadata.
type LogCount struct {
	Bytes        int64 `json:"bytes"`
	UserMessages int   `json:"user_messages"`
}

// Count is the Log's LogCount now.
func (l *Log) Count() LogCount {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LogCount{Bytes: l.size, UserMessages: l.users}
}

// writeEventLines writes evs as their lines: in one write when none is
// large or written from pieces, else each in a write of its own.
func writeEventLines(f *os.File, evs []*Event) (int, error) {
	for _, ev := range evs {
		if ev.pieces != nil || len(ev.Data) >= largeEvent {
			return writeEachEventLine(f, evs)
		}
	}
	// In a buffer of the pool, as writeEventLine builds one line: a
	// workflow step writes a group to its parent's Log and one to its own.
	buf := lineBuffers.Get().(*[]byte)
	b := (*buf)[:0]
	for _, ev := range evs {
		b = appendEventLine(b, ev)
	}
	_, err := f.Write(b)
	n := len(b)
	if cap(b) <= maxPooledLine {
		*buf = b
		lineBuffers.Put(buf)
	}
	return n, err
}

// writeEachEventLine writes evs a line, and a write, each.
func writeEachEventLine(f *os.File, evs []*Event) (int, error) {
	total := 0
	for _, ev := range evs {
		n, err := writeEventLine(f, ev)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Sync makes what was appended durable (fsync).
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("log is closed")
	}
	if err := l.f.Sync(); err != nil {
		return &LogWriteError{Path: l.path, Err: err}
	}
	return nil
}

// Close closes the file and releases its lock; later appends fail.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
