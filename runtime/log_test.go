package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func appendTexts(t *testing.T, l *Log, texts ...string) {
	t.Helper()
	for _, text := range texts {
		data, _ := json.Marshal(UserMessageData{Text: text})
		require.NoError(t, l.Append(&Event{SessionID: "s", Type: EventUserMessage, Data: data}))
	}
}

// openLog opens a Log for append and returns the events it held.
func openLog(t *testing.T, path string) (*Log, []Event, LoadReport) {
	t.Helper()
	var events []Event
	l, report, err := OpenLog(path, func(ev Event) { events = append(events, ev) })
	require.NoError(t, err)
	return l, events, report
}

func textsOf(t *testing.T, events []Event) []string {
	t.Helper()
	var texts []string
	for _, ev := range events {
		var d UserMessageData
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		texts = append(texts, d.Text)
	}
	return texts
}

func TestLogAppendsAndReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deep", "s.ndjson")
	l, events, report := openLog(t, path)
	require.Empty(t, events)
	require.Equal(t, LoadReport{}, report)
	appendTexts(t, l, "one", "two")
	require.NoError(t, l.Close())
	require.Error(t, l.Append(&Event{Type: EventUserMessage}), "appending to a closed log fails")

	l, events, report = openLog(t, path)
	require.Equal(t, 2, report.Events)
	require.Equal(t, []int64{1, 2}, []int64{events[0].Seq, events[1].Seq})
	require.NotEqual(t, events[0].ID, events[1].ID)
	appendTexts(t, l, "three")
	require.NoError(t, l.Close())
	events, _, err := ReadLog(path)
	require.NoError(t, err)
	require.Len(t, events, 3)
	require.Equal(t, int64(3), events[2].Seq, "seq continues across opens")
}

func TestLogToleratesDamage(t *testing.T) {
	three := `{"id":"y","session_id":"s","seq":3,"type":"user_message","data":{"text":"three"}}`
	tests := []struct {
		name      string
		tail      string
		torn      int
		skipped   int
		damage    []Damage
		report    string
		wantTexts []string
	}{
		{"clean", "", 0, 0, nil, "2 events", []string{"one", "two"}},
		{"torn last line", `{"id":"x","seq":3,"ty`, 21, 0, []Damage{{Line: 3, Bytes: 21, Torn: true}},
			"2 events; the torn last line 3 (21 bytes at offset OFFSET, cut off mid-write) was left out", []string{"one", "two"}},
		{"complete last event without newline", three, 0, 0, nil, "3 events", []string{"one", "two", "three"}},
		{"garbage line in the middle", "not json\n" + three + "\n", 0, 1, []Damage{{Line: 3, Bytes: 9}},
			"3 events; line 3 (9 bytes at offset OFFSET) is not an event and was skipped", []string{"one", "two", "three"}},
		{"a torn write with the next event glued to it", `{"id":"x","seq":3,"ty` + three + "\n", 0, 1, []Damage{{Line: 3, Bytes: 103, Salvaged: true}},
			"3 events; line 3 (103 bytes at offset OFFSET) began with a torn write that was skipped; the event after it was kept", []string{"one", "two", "three"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.ndjson")
			l, _, _ := openLog(t, path)
			appendTexts(t, l, "one", "two")
			require.NoError(t, l.Close())
			info, err := os.Stat(path)
			require.NoError(t, err)
			at := func(s string) string { return strings.ReplaceAll(s, "OFFSET", strconv.FormatInt(info.Size(), 10)) }
			for i := range tt.damage {
				tt.damage[i].Offset = info.Size()
			}
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString(tt.tail)
			require.NoError(t, err)
			require.NoError(t, f.Close())

			// A read-only view reports the same as an open for append.
			_, readOnly, err := ReadLog(path)
			require.NoError(t, err)

			l, events, report := openLog(t, path)
			require.Equal(t, readOnly, report)
			require.Equal(t, tt.torn, report.TornBytes)
			require.Equal(t, tt.skipped, report.Skipped)
			require.Equal(t, tt.damage, report.Damaged)
			require.Equal(t, at(tt.report), report.String())
			require.Equal(t, tt.wantTexts, textsOf(t, events))

			// Appends after the repair land on a line of their own and the
			// whole file reads back; a skipped line stays, as evidence.
			appendTexts(t, l, "after")
			require.NoError(t, l.Close())
			events, report, err = ReadLog(path)
			require.NoError(t, err)
			require.Equal(t, 0, report.TornBytes)
			require.Equal(t, tt.skipped, report.Skipped)
			require.Equal(t, append(tt.wantTexts, "after"), textsOf(t, events))
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, strings.HasSuffix(string(data), "\n"))
		})
	}
}

func TestLogDamageListIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.ndjson")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("junk\n", 50)), 0o644))
	_, report, err := ReadLog(path)
	require.NoError(t, err)
	require.Equal(t, 50, report.Skipped)
	require.Len(t, report.Damaged, maxReportedDamage)
	require.True(t, strings.HasSuffix(report.String(), "; and 30 more damaged lines"), report.String())
}

func TestASecondWriterIsRefusedAndNamesTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.ndjson")
	first, _, _ := openLog(t, path)
	appendTexts(t, first, "one")

	_, _, err := OpenLog(path, nil)
	require.ErrorIs(t, err, ErrSessionInUse)
	var inUse *InUseError
	require.ErrorAs(t, err, &inUse)
	require.Equal(t, os.Getpid(), inUse.PID, "the holder is this process, through the first open")
	require.Contains(t, err.Error(), "pid ")
	require.Contains(t, err.Error(), "pixir inspect can read it meanwhile")

	// A read-only view is not refused, and the holder goes on.
	events, _, err := ReadLog(path)
	require.NoError(t, err)
	require.Len(t, events, 1)
	appendTexts(t, first, "two")
	require.NoError(t, first.Close())

	// Closing releases the lock.
	second, events, _ := openLog(t, path)
	require.Equal(t, []string{"one", "two"}, textsOf(t, events))
	require.NoError(t, second.Close())
}

// failAfter writes the first n bytes of an event's line and then fails as
// a full disk does: ENOSPC, with part of the line written.
func failAfter(n int) func(*os.File, *Event) (int, error) {
	return func(f *os.File, ev *Event) (int, error) {
		line := appendEventLine(nil, ev)
		w, _ := f.Write(line[:min(n, len(line))])
		return w, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
}

func TestAFailedAppendLeavesNoHalfLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.ndjson")
	l, _, _ := openLog(t, path)
	appendTexts(t, l, "one")
	l.write = failAfter(10)
	data, _ := json.Marshal(UserMessageData{Text: "lost"})
	err := l.Append(&Event{SessionID: "s", Type: EventUserMessage, Data: data})
	require.ErrorIs(t, err, ErrLogWrite)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Contains(t, err.Error(), "nothing half-written was kept")

	// The disk has room again: the Log goes on from its last whole line.
	l.write = writeEventLine
	appendTexts(t, l, "two")
	require.NoError(t, l.Close())
	events, report, err := ReadLog(path)
	require.NoError(t, err)
	require.True(t, report.Intact(), report.String())
	require.Equal(t, []string{"one", "two"}, textsOf(t, events))
	require.Equal(t, []int64{1, 2}, []int64{events[0].Seq, events[1].Seq}, "the failed event took no seq")
}

func TestALogThatCannotBeCutBackRefusesMoreAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.ndjson")
	l, _, _ := openLog(t, path)
	appendTexts(t, l, "one")
	// The partial write, then a file that cannot be truncated (closed).
	l.write = func(f *os.File, ev *Event) (int, error) {
		n, _ := f.Write(appendEventLine(nil, ev)[:5])
		f.Close()
		return n, errors.New("disk gone")
	}
	data, _ := json.Marshal(UserMessageData{Text: "lost"})
	require.ErrorIs(t, l.Append(&Event{Type: EventUserMessage, Data: data}), ErrLogWrite)
	err := l.Append(&Event{Type: EventUserMessage, Data: data})
	require.ErrorIs(t, err, ErrLogWrite)
	require.Contains(t, err.Error(), "an earlier write failed and could not be undone")
}

// groupOf is events of the given texts, with fixed ids and times so two
// Logs of them can be compared byte for byte.
func groupOf(t *testing.T, texts ...string) []*Event {
	t.Helper()
	ts := time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC)
	var evs []*Event
	for i, text := range texts {
		data, err := json.Marshal(UserMessageData{Text: text})
		require.NoError(t, err)
		evs = append(evs, &Event{ID: fmt.Sprintf("e%d", i), SessionID: "s", TS: ts, Type: EventUserMessage, Data: data})
	}
	return evs
}

// A group append leaves the Log an Append of each event would: the same
// lines, the same seqs, a large event (written from its pieces) among
// them too.
func TestAGroupAppendWritesWhatAppendingEachWould(t *testing.T) {
	dir := t.TempDir()
	large := strings.Repeat("x", largeEvent+1)
	for _, texts := range [][]string{{"one", "two", "three"}, {"one", large, "three"}} {
		grouped, each := filepath.Join(dir, "grouped.ndjson"), filepath.Join(dir, "each.ndjson")
		g, err := CreateLog(grouped)
		require.NoError(t, err)
		e, err := CreateLog(each)
		require.NoError(t, err)
		appendTexts(t, g, "before")
		appendTexts(t, e, "before")
		require.NoError(t, g.AppendGroup(groupOf(t, texts...)))
		for _, ev := range groupOf(t, texts...) {
			require.NoError(t, e.Append(ev))
		}
		appendTexts(t, g, "after")
		appendTexts(t, e, "after")
		require.NoError(t, g.Close())
		require.NoError(t, e.Close())
		gb, err := os.ReadFile(grouped)
		require.NoError(t, err)
		eb, err := os.ReadFile(each)
		require.NoError(t, err)
		// The "before" and "after" lines have ids and times of their own.
		gl, el := strings.Split(string(gb), "\n"), strings.Split(string(eb), "\n")
		require.Len(t, gl, 6)
		require.Equal(t, el[1:4], gl[1:4])
		events, report, err := ReadLog(grouped)
		require.NoError(t, err)
		require.True(t, report.Intact(), report.String())
		require.Equal(t, append(append([]string{"before"}, texts...), "after"), textsOf(t, events))
		for i, ev := range events {
			require.Equal(t, int64(i+1), ev.Seq)
		}
		require.NoError(t, os.Remove(grouped))
		require.NoError(t, os.Remove(each))
	}
}

// A group is recorded whole or not at all: a write that fails after its
// first line and half of its second (a full disk) is cut back to where
// the group began, none of it took a seq, and the Log goes on.
func TestAFailedGroupAppendLeavesNoneOfIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.ndjson")
	l, _, _ := openLog(t, path)
	appendTexts(t, l, "one")
	l.writeGroup = func(f *os.File, evs []*Event) (int, error) {
		first := appendEventLine(nil, evs[0])
		second := appendEventLine(nil, evs[1])
		n, _ := f.Write(append(first, second[:len(second)/2]...))
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	err := l.AppendGroup(groupOf(t, "lost", "lost too"))
	require.ErrorIs(t, err, ErrLogWrite)
	require.ErrorIs(t, err, syscall.ENOSPC)

	l.writeGroup = writeEventLines
	appendTexts(t, l, "two")
	require.NoError(t, l.AppendGroup(groupOf(t, "three", "four")))
	require.NoError(t, l.Close())
	events, report, err := ReadLog(path)
	require.NoError(t, err)
	require.True(t, report.Intact(), report.String())
	require.Equal(t, []string{"one", "two", "three", "four"}, textsOf(t, events))
	for i, ev := range events {
		require.Equal(t, int64(i+1), ev.Seq, "the failed group took no seq")
	}
}

// An event appended to the Log stays on its emitter's stack (every event a
// run records went to the heap while Append called its writer through a
// func field): an append of an event with its id allocates nothing.
func TestAnAppendedEventStaysOnItsEmittersStack(t *testing.T) {
	l, err := CreateLog(filepath.Join(t.TempDir(), "s.ndjson"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	data := json.RawMessage(`{"text":"x"}`)
	ts := time.Date(2026, 11, 24, 19, 0, 0, 0, time.UTC)
	var appendErr error
	allocs := testing.AllocsPerRun(100, func() {
		ev := Event{ID: "e", SessionID: "s", TS: ts, Type: EventUserMessage, Data: data}
		if err := l.Append(&ev); err != nil {
			appendErr = err
		}
	})
	require.NoError(t, appendErr)
	require.Zero(t, allocs)
}

// TestARemovedLogIsWrittenBackAndAnotherFileIsLeftAlone: Reattach writes
// back a Log whose file (and folder) was removed while it was open, locked
// again, and the next appends go to it; a file someone put in the Log's
// place is never overwritten.
func TestARemovedLogIsWrittenBackAndAnotherFileIsLeftAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	path := filepath.Join(dir, "s.ndjson")
	l, _, _ := openLog(t, path)
	defer l.Close()
	appendTexts(t, l, "one", "two")
	back, err := l.Reattach()
	require.NoError(t, err)
	require.False(t, back, "nothing to do while the file is there")

	require.NoError(t, os.RemoveAll(dir))
	back, err = l.Reattach()
	require.NoError(t, err)
	require.True(t, back)
	appendTexts(t, l, "three")
	events, report, err := ReadLog(path)
	require.NoError(t, err)
	require.True(t, report.Intact())
	require.Equal(t, []string{"one", "two", "three"}, textsOf(t, events))
	_, _, err = OpenLog(path, nil)
	require.ErrorIs(t, err, ErrSessionInUse, "the written-back Log is locked")

	require.NoError(t, os.Remove(path))
	require.NoError(t, os.WriteFile(path, []byte("someone else's\n"), 0o644))
	_, err = l.Reattach()
	require.ErrorIs(t, err, ErrLogWrite)
	require.Contains(t, err.Error(), "another file took the Log's place")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "someone else's\n", string(got))
}
