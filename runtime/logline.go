package runtime

import (
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/pixir-go/pixir/internal/jsonraw"
)

// largeEvent is the size of data from which an event's line is written from
// its pieces rather than copied into one buffer first.
const largeEvent = 1 << 20

// writeEventLine appends ev to f as one NDJSON line, in one write. ev.Data
// is written as it is, so it must be valid JSON (emit makes it): encoding
// the whole event with json.Marshal would check and copy a prompt of
// megabytes once more, and a large event is written from its pieces (see
// writePieces) so it is not copied at all.
//
// It returns the length of the line; on a failure, part of it may have
// been written (the Log cuts it back).
func writeEventLine(f *os.File, ev *Event) (int, error) {
	data := ev.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	if ev.pieces != nil {
		head := appendEventHead(make([]byte, 0, eventHeadSize), ev)
		all := make([][]byte, 0, len(ev.pieces)+2)
		all = append(append(append(all, head), ev.pieces...), []byte("}\n"))
		return piecesLen(all), writePieces(f, all...)
	}
	if len(data) >= largeEvent {
		head := appendEventHead(make([]byte, 0, eventHeadSize), ev)
		return len(head) + len(data) + 2, writePieces(f, head, data, []byte("}\n"))
	}
	// The line is built in a buffer of the pool: a workflow writes several
	// lines a step, each one a buffer the collector had to clear and sweep
	// (a fifth of what a run allocated). The write does not keep it.
	buf := lineBuffers.Get().(*[]byte)
	line := appendEventHead((*buf)[:0], ev)
	line = append(append(line, data...), '}', '\n')
	_, err := f.Write(line)
	n := len(line)
	if cap(line) <= maxPooledLine {
		*buf = line
		lineBuffers.Put(buf)
	}
	return n, err
}

// eventHeadSize is room for a line's head: two ids, seq, ts and type are
// up to about 190 bytes (a smaller guess grew the buffer, a copy of the
// whole line, on every event).
const eventHeadSize = 256

// maxPooledLine is the largest buffer kept for the next line: one that a
// long answer grew is left to the collector rather than held.
const maxPooledLine = 64 << 10

// lineBuffers are the buffers Log lines are built in.
var lineBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 1024)
	return &b
}}

// appendEventLine appends ev as one NDJSON line.
func appendEventLine(b []byte, ev *Event) []byte {
	b = appendEventHead(b, ev)
	switch {
	case ev.pieces != nil:
		for _, p := range ev.pieces {
			b = append(b, p...)
		}
	case len(ev.Data) == 0:
		b = append(b, "null"...)
	default:
		b = append(b, ev.Data...)
	}
	return append(b, '}', '\n')
}

// appendEventHead appends ev's line up to its data, the fields in the order
// of Event's.
func appendEventHead(b []byte, ev *Event) []byte {
	b = append(b, `{"id":`...)
	b = jsonraw.AppendString(b, ev.ID)
	b = append(b, `,"session_id":`...)
	b = jsonraw.AppendString(b, ev.SessionID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, ev.Seq, 10)
	b = append(b, `,"ts":"`...)
	b = ev.TS.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","type":`...)
	b = jsonraw.AppendString(b, string(ev.Type))
	return append(b, `,"data":`...)
}
