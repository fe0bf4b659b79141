// Package termtext makes text that Pixir did not write itself (a model's
// answer, a tool's output, a file name, a session title) inert on a
// terminal: a terminal obeys the control characters in what it prints, so
// a model could otherwise set the window title, clear the screen, move the
// cursor over earlier output, or write to the clipboard (OSC 52).
//
// Newlines and tabs pass; every other C0 control character, DEL and the C1
// controls (U+0080–U+009F, which some terminals obey as CSI, OSC …) are
// shown as visible stand-ins instead: ESC as ␛ and the C0 controls as their
// Unicode control pictures (␇ for BEL), DEL and C1 as their JSON escapes
// (\u007f, \u009b). A carriage return is kept before a newline (CRLF) and
// shown as ␍ elsewhere, since alone it moves the cursor back over the
// line. Bytes that are not UTF-8 become U+FFFD.
//
// JSON output passes through unchanged in meaning: an encoder never writes
// a C0 control or an invalid byte raw, and the escapes of DEL and C1 stand
// for the same characters inside a JSON string, the only place they occur.
// So one Writer serves a command's text and --json output alike.
package termtext

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Inert returns s with every control character replaced by a visible
// stand-in, as the package says.
func Inert(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	appendInert(&b, s)
	return b.String()
}

// AppendInert appends p made inert to dst, copying p as it is when nothing
// in it needs a stand-in (a line built in a reused buffer costs no string).
func AppendInert(dst, p []byte) []byte {
	if clean(p) {
		return append(dst, p...)
	}
	return append(dst, Inert(string(p))...)
}

// clean reports whether s needs no change (the common case, kept cheap).
func clean[S ~string | ~[]byte](s S) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c >= 0x80 {
			return false
		}
	}
	return true
}

func appendInert(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			b.WriteByte('\r')
		case r < 0x20:
			b.WriteRune(0x2400 + r) // the control pictures: ␛ for ESC, ␇ for BEL…
		case r == 0x7f || r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// Writer writes everything through Inert. Text may arrive in pieces (a
// model's answer streams): a piece that ends inside a UTF-8 character, or
// on a carriage return that may start a CRLF, keeps that end for the next
// write. It is safe for concurrent use: pixir run's log lines and its
// views write to one Writer on stderr from goroutines of their own, and a
// write must neither race on what the last one kept nor split another's
// piece.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	carry []byte
}

// NewWriter makes a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Unwrap is the writer underneath: a terminal check, or a live view that
// draws with control sequences of its own, needs it.
func (w *Writer) Unwrap() io.Writer { return w.w }

// Raw is w's underlying writer when w is a Writer, else w.
func Raw(w io.Writer) io.Writer {
	if tw, ok := w.(*Writer); ok {
		return tw.w
	}
	return w
}

// Write writes p made inert; it reports len(p) when the write succeeds,
// whatever the stand-ins made of it.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data := p
	if len(w.carry) > 0 {
		data = append(w.carry, p...)
		w.carry = nil
	}
	keep := incompleteTail(data)
	if keep > 0 {
		w.carry = bytes.Clone(data[len(data)-keep:])
		data = data[:len(data)-keep]
	}
	if len(data) == 0 {
		return len(p), nil
	}
	if _, err := io.WriteString(w.w, Inert(string(data))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what a last piece left incomplete.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.carry) == 0 {
		return nil
	}
	rest := w.carry
	w.carry = nil
	_, err := io.WriteString(w.w, Inert(string(rest)))
	return err
}

// incompleteTail is how many bytes at the end of p may belong to what the
// next write brings: a CR, or the start of a UTF-8 character.
func incompleteTail(p []byte) int {
	if len(p) == 0 {
		return 0
	}
	if p[len(p)-1] == '\r' {
		return 1
	}
	for n := 1; n < utf8.UTFMax && n <= len(p); n++ {
		c := p[len(p)-n]
		if c < 0x80 {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(p[len(p)-n:]) {
				return 0
			}
			return n
		}
	}
	return 0
}
