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
	"sync"
	"time"

	"github.com/google/uuid"
)

// Log is a Session's append-only NDJSON file of canonical Events: the truth
// from which History and the ACP replay are folded. Each event is written
// with one write call, so a crash leaves at most a torn last line, which the
// next open reports and cuts off.
type Log struct {
	mu   sync.Mutex
	f    *os.File
	path string
	seq  int64
}

// LoadReport says what opening a Log found beyond the events themselves.
type LoadReport struct {
	Events int
	// TornBytes is the length of an incomplete last line that was dropped
	// (a crash mid-write); 0 when the Log ended cleanly.
	TornBytes int
	// Skipped counts complete lines that did not decode as events.
	Skipped int
}

func (r LoadReport) String() string {
	s := fmt.Sprintf("%d events", r.Events)
	if r.TornBytes > 0 {
		s += fmt.Sprintf(", a torn last line of %d bytes dropped", r.TornBytes)
	}
	if r.Skipped > 0 {
		s += fmt.Sprintf(", %d undecodable lines skipped", r.Skipped)
	}
	return s
}

// ReadLog reads the events of the Log at path without opening it for append.
func ReadLog(path string) ([]Event, LoadReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, LoadReport{}, err
	}
	events, report, _ := parseLog(data)
	return events, report, nil
}

// parseLog decodes NDJSON and returns the length of the clean prefix.
func parseLog(data []byte) ([]Event, LoadReport, int) {
	var (
		events []Event
		report LoadReport
		clean  int
	)
	for len(data[clean:]) > 0 {
		rest := data[clean:]
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			var ev Event
			if json.Unmarshal(rest, &ev) == nil && ev.Type != "" {
				// A complete event missing only its newline.
				events = append(events, ev)
				clean = len(data)
				break
			}
			report.TornBytes = len(rest)
			break
		}
		line := bytes.TrimSpace(rest[:nl])
		clean += nl + 1
		if len(line) == 0 {
			continue
		}
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Type == "" {
			report.Skipped++
			continue
		}
		events = append(events, ev)
	}
	report.Events = len(events)
	return events, report, clean
}

// OpenLog opens (creating if needed) the Log at path for append and returns
// the events already in it. A torn last line is cut off so that appends start
// on a line of their own.
func OpenLog(path string) (*Log, []Event, LoadReport, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, LoadReport{}, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, LoadReport{}, err
	}
	data, err := io.ReadAll(bufio.NewReader(f))
	if err != nil {
		f.Close()
		return nil, nil, LoadReport{}, err
	}
	events, report, clean := parseLog(data)
	if clean < len(data) {
		if err := f.Truncate(int64(clean)); err != nil {
			f.Close()
			return nil, nil, report, fmt.Errorf("cutting torn line: %w", err)
		}
	} else if clean > 0 && data[clean-1] != '\n' {
		if _, err := f.WriteAt([]byte{'\n'}, int64(clean)); err != nil {
			f.Close()
			return nil, nil, report, err
		}
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, nil, report, err
	}
	l := &Log{f: f, path: path}
	for _, ev := range events {
		l.seq = max(l.seq, ev.Seq)
	}
	return l, events, report, nil
}

// CreateLog creates a new, empty Log at path; it fails if one exists. It
// skips the reading OpenLog does, which matters when thousands of
// Subagents each start one.
func CreateLog(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	}
	if err != nil {
		return nil, err
	}
	return &Log{f: f, path: path}, nil
}

// Path is where the Log lives.
func (l *Log) Path() string { return l.path }

// Append stamps ev with the next seq (and an id and time when missing) and
// writes it as one line.
func (l *Log) Append(ev *Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("log is closed")
	}
	l.seq++
	ev.Seq = l.seq
	if ev.ID == "" {
		ev.ID = uuid.Must(uuid.NewV7()).String()
	}
	if ev.TS.IsZero() {
		ev.TS = time.Now().UTC()
	}
	if err := writeEventLine(l.f, ev); err != nil {
		l.seq--
		return fmt.Errorf("appending to %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file; later appends fail.
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
