package rpc

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// A request id is JSON text, and JSON text is UTF-8. An id carrying invalid
// bytes is answered on every path with each invalid byte replaced by U+FFFD
// (as encoding/json decodes it), so that every line written is JSON.
func TestInvalidUTF8IDsAreAnsweredWithJSONOnEveryPath(t *testing.T) {
	p := serveOverPipes(t, Options{})
	rawLine := func() map[string]json.RawMessage {
		t.Helper()
		line, err := p.lines.ReadString('\n')
		require.NoError(t, err)
		require.True(t, utf8.ValidString(line), "not UTF-8: %q", line)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(line), &m), "not JSON: %q", line)
		return m
	}
	tests := []struct {
		name, line string
		wantID     any
		wantError  bool
	}{
		{"success reply", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"echo\",\"params\":{}}", "\ufffd", false},
		{"error reply", "{\"jsonrpc\":\"2.0\",\"id\":\"a\xfe\xffb\",\"method\":\"nope\"}", "a\ufffd\ufffdb", true},
		{"handler error", "{\"jsonrpc\":\"2.0\",\"id\":\"\xe2\x82\",\"method\":\"fail\"}", "\ufffd\ufffd", true},
		{"invalid request", "{\"jsonrpc\":\"1.0\",\"id\":\"\xff\",\"method\":\"echo\"}", "\ufffd", true},
		{"parse error", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":", nil, true},
		{"method with invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"n\xffpe\"}", "\ufffd", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.send(tt.line)
			m := rawLine()
			var id any
			require.NoError(t, json.Unmarshal(m["id"], &id))
			require.Equal(t, tt.wantID, id)
			require.Equal(t, tt.wantError, m["error"] != nil, "%v", m)
		})
	}

	t.Run("cancel", func(t *testing.T) {
		p.send("{\"jsonrpc\":\"2.0\",\"id\":\"c\xff\",\"method\":\"block\"}")
		p.send("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":\"c\xff\"}}")
		m := rawLine()
		require.JSONEq(t, `"c\ufffd"`, string(m["id"]))
		var e Error
		require.NoError(t, json.Unmarshal(m["error"], &e))
		require.Equal(t, int64(CodeRequestCancelled), e.Code)
	})
}
