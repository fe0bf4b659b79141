package httpstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the longest SSE line the Reader accepts. One line can carry a
// whole tool call (a file's content as arguments), so the 64 KiB default of
// bufio.Scanner is far too small.
const MaxLine = 32 << 20

// Event is one server-sent event.
type Event struct {
	// Name is the "event:" field; empty for the default "message" event.
	Name string
	// Data is the "data:" fields joined with "\n".
	Data string
	// ID is the "id:" field, when sent.
	ID string
	// Error is the "error:" field, which is no part of the format: older
	// llama.cpp servers report a failure as an "error: {json}" line (then
	// end the stream with "data: [DONE]"). An event with an Error is
	// dispatched even without data, so the failure is not lost.
	Error string
}

// Reader reads server-sent events (the WHATWG text/event-stream format):
// "field: value" lines, an event ending at a blank line, ":" comments
// (keep-alives), several data lines joined with "\n", and "\n" or "\r\n"
// line ends.
type Reader struct {
	sc *bufio.Scanner
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	return &Reader{sc: sc}
}

// ErrLineTooLong is returned for a line longer than MaxLine.
var ErrLineTooLong = fmt.Errorf("an event line is longer than %d MiB", MaxLine>>20)

// Next returns the next event. At the end of the stream it returns io.EOF
// when the stream ended between events and io.ErrUnexpectedEOF when it ended
// inside one (the event is dropped, as the format says); read errors are
// returned as they are.
func (r *Reader) Next() (Event, error) {
	var (
		ev      Event
		data    bytes.Buffer
		hasData bool
		pending bool // some field of an event was read
	)
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 {
			if hasData || ev.Error != "" {
				ev.Data = data.String()
				return ev, nil
			}
			// An event without data is not dispatched.
			ev, pending = Event{}, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		pending = true
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			ev.Name = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		case "id":
			ev.ID = string(value)
		case "error":
			ev.Error = string(value)
		}
		// "retry" and unknown fields are ignored.
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Event{}, ErrLineTooLong
		}
		return Event{}, err
	}
	if pending {
		if ev.Error != "" {
			// A server's last word is its failure, even unterminated.
			ev.Data = data.String()
			return ev, nil
		}
		return Event{}, io.ErrUnexpectedEOF
	}
	return Event{}, io.EOF
}
