package termtext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInert(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text passes", "hello, wörld — ✓ 日本\n\tindented", "hello, wörld — ✓ 日本\n\tindented"},
		{"window title (OSC 0)", "\x1b]0;pwned\x07rest", "␛]0;pwned␇rest"},
		{"screen clear", "\x1b[2J\x1b[Hgone", "␛[2J␛[Hgone"},
		{"clipboard write (OSC 52)", "\x1b]52;c;cm0gLXJmIH4=\x1b\\", "␛]52;c;cm0gLXJmIH4=␛\\"},
		{"C1 CSI and OSC", "a\u009b2Jb\u009d0;x\u009c", `a\u009b2Jb\u009d0;x\u009c`},
		{"8-bit CSI that is not UTF-8", "a\x9b2J", "a\ufffd2J"},
		{"DEL and backspace", "abc\x08\x08\x7f", `abc␈␈\u007f`},
		{"CRLF stays, a lone CR does not", "one\r\ntwo\rthree\r", "one\r\ntwo␍three␍"},
		{"NUL", "a\x00b", "a␀b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Inert(tt.in)
			require.Equal(t, tt.want, got)
			require.NotContains(t, got, "\x1b")
			appended := AppendInert([]byte("head "), []byte(tt.in))
			require.Equal(t, "head "+tt.want, string(appended), "AppendInert appends what Inert returns")
		})
	}
}

func TestWriterKeepsPiecesWhole(t *testing.T) {
	in := "ok é\x1b[31mred\r\nnext\u009b"
	// Every way of cutting the text in two gives the same output.
	for cut := range len(in) + 1 {
		var out bytes.Buffer
		w := NewWriter(&out)
		n, err := w.Write([]byte(in[:cut]))
		require.NoError(t, err)
		require.Equal(t, cut, n)
		_, err = w.Write([]byte(in[cut:]))
		require.NoError(t, err)
		require.NoError(t, w.Flush())
		require.Equal(t, Inert(in), out.String(), "cut at %d", cut)
	}
	var out bytes.Buffer
	w := NewWriter(&out)
	_, _ = w.Write([]byte("a\xc3")) // a text that ends inside a character
	require.NoError(t, w.Flush())
	require.Equal(t, "a\ufffd", out.String())
}

func TestJSONThroughTheWriterMeansTheSame(t *testing.T) {
	v := map[string]string{"text": "a\u009b2J\x7f\x1b[31m é \xff"}
	var out bytes.Buffer
	enc := json.NewEncoder(NewWriter(&out))
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(v))
	require.Equal(t, "{\n  \"text\": \"a\\u009b2J\\u007f\\u001b[31m é \\ufffd\"\n}\n", out.String())
	var back map[string]string
	require.NoError(t, json.Unmarshal(out.Bytes(), &back))
	require.Equal(t, map[string]string{"text": "a\u009b2J\x7f\x1b[31m é \ufffd"}, back, "the data is unchanged (json already makes bad bytes U+FFFD)")
	require.False(t, strings.ContainsAny(out.String(), "\x1b\x7f\u009b"))
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes, so that what
// the race detector sees is the Writer's own state.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// pixir run's log lines and its views write to one Writer from goroutines
// of their own (a retry warning during a workflow's line-per-change view,
// a streamed answer whose pieces end on a CR or inside a character): under
// -race nothing races on what a write keeps for the next, and nothing
// written is lost.
func TestWriterTakesWritesFromSeveralGoroutines(t *testing.T) {
	var out lockedBuffer
	w := NewWriter(&out)
	var wg sync.WaitGroup
	const writers, lines = 4, 200
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				// Pieces as a stream cuts them: the first ends on a CR
				// and inside "é", so the Writer keeps its end.
				_, err := fmt.Fprintf(w, "writer %d line %d \xc3", g, i)
				require.NoError(t, err)
				_, err = w.Write([]byte("\xa9\r"))
				require.NoError(t, err)
				_, err = w.Write([]byte("\n"))
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
	require.NoError(t, w.Flush())
	require.Equal(t, writers*lines, strings.Count(out.b.String(), " line "), "every line written")
	for g := range writers {
		require.Equal(t, lines, strings.Count(out.b.String(), fmt.Sprintf("writer %d line ", g)), "writer %d", g)
	}
}
