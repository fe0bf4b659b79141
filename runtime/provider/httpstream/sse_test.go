package httpstream

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

func readAll(t *testing.T, r io.Reader) ([]Event, error) {
	t.Helper()
	sr := NewReader(r)
	var out []Event
	for {
		ev, err := sr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestReaderParsesTheEventStreamFormat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Event
		wantErr error
	}{
		{"data lines", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []Event{{Data: `{"a":1}`}, {Data: "[DONE]"}}, io.EOF},
		{"event and data pairs", "event: ping\ndata: {\"type\": \"ping\"}\n\nevent: message_stop\ndata: {}\n\n",
			[]Event{{Name: "ping", Data: `{"type": "ping"}`}, {Name: "message_stop", Data: "{}"}}, io.EOF},
		{"comments are keep-alives", ": OPENROUTER PROCESSING\n\n:\ndata: x\n\n", []Event{{Data: "x"}}, io.EOF},
		{"multi-line data joins with newlines", "data: one\ndata: two\ndata:\n\n", []Event{{Data: "one\ntwo\n"}}, io.EOF},
		{"CRLF line ends", "event: a\r\ndata: b\r\n\r\n", []Event{{Name: "a", Data: "b"}}, io.EOF},
		{"no space after the colon", "data:x\n\n", []Event{{Data: "x"}}, io.EOF},
		{"only one leading space is stripped", "data:  x \n\n", []Event{{Data: " x "}}, io.EOF},
		{"id and retry fields", "id: 7\nretry: 100\ndata: x\n\n", []Event{{ID: "7", Data: "x"}}, io.EOF},
		{"an event without data is not dispatched", "event: nothing\n\ndata: x\n\n", []Event{{Data: "x"}}, io.EOF},
		{"event name does not leak into the next event", "event: a\ndata: 1\n\ndata: 2\n\n", []Event{{Name: "a", Data: "1"}, {Data: "2"}}, io.EOF},
		{"ends inside an event", "data: {\"a\":1}\n\ndata: {\"tru", []Event{{Data: `{"a":1}`}}, io.ErrUnexpectedEOF},
		{"ends before the blank line", "data: x\n", nil, io.ErrUnexpectedEOF},
		{"empty stream", "", nil, io.EOF},
		{"an error field dispatches without data (llama.cpp)", "error: {\"code\":500}\n\ndata: [DONE]\n\n",
			[]Event{{Error: `{"code":500}`}, {Data: "[DONE]"}}, io.EOF},
		{"an unterminated error field is still read", "error: {\"code\":500}\n", []Event{{Error: `{"code":500}`}}, io.EOF},
		{"blank lines only", "\n\n\n", nil, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte at a time: events split across reads anywhere.
			got, err := readAll(t, iotest.OneByteReader(strings.NewReader(tt.in)))
			require.Equal(t, tt.want, got)
			require.ErrorIs(t, err, tt.wantErr)
		})
	}
}

func TestReaderTakesLongLinesAndRefusesHugeOnes(t *testing.T) {
	big := strings.Repeat("x", 4<<20)
	got, err := readAll(t, strings.NewReader("data: "+big+"\n\n"))
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, got, 1)
	require.Len(t, got[0].Data, len(big))

	_, err = readAll(t, strings.NewReader("data: "+strings.Repeat("x", MaxLine+1)+"\n\n"))
	require.ErrorIs(t, err, ErrLineTooLong)
}

func TestReaderReturnsReadErrors(t *testing.T) {
	boom := errors.New("boom")
	_, err := readAll(t, io.MultiReader(strings.NewReader("data: x\n\n"), iotest.ErrReader(boom)))
	require.ErrorIs(t, err, boom)
}
