package acp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/acp/rpc"
	"github.com/pixir-go/pixir/tools/mcp"
)

func TestMCPServersDecode(t *testing.T) {
	raw := func(s ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(s))
		for i, x := range s {
			out[i] = json.RawMessage(x)
		}
		return out
	}
	got, err := mcpServers(raw(
		`{"name":"files","command":"/usr/bin/fs","args":["/srv"],"env":[{"name":"A","value":"1"}]}`,
		`{"type":"http","name":"docs","url":"https://docs.example/mcp","headers":[{"name":"Authorization","value":"Bearer x"}]}`,
	))
	require.NoError(t, err)
	require.Equal(t, []mcp.ServerConfig{
		{Name: "files", Command: "/usr/bin/fs", Args: []string{"/srv"}, Env: []mcp.EnvVar{{Name: "A", Value: "1"}}},
		{Name: "docs", URL: "https://docs.example/mcp", Headers: []mcp.Header{{Name: "Authorization", Value: "Bearer x"}}},
	}, got)

	none, err := mcpServers(raw())
	require.NoError(t, err)
	require.Empty(t, none)

	for _, tt := range []struct{ in, want string }{
		{`{"command":"x","args":[],"env":[]}`, `missing required field "mcpServers[0].name"`},
		{`{"name":"x","args":[],"env":[]}`, `missing required field "mcpServers[0].command"`},
		{`{"type":"http","name":"x","headers":[]}`, `missing required field "mcpServers[0].url"`},
		{`{"type":"sse","name":"x","url":"http://h/sse","headers":[]}`, `"mcpServers[0].type" sse is not supported`},
		{`{"type":"ws","name":"x"}`, `"mcpServers[0].type" "ws" is not an MCP transport`},
		{`{"name":7}`, `"mcpServers[0]" is not an MCP server`},
		{`{"type":"http","name":"x","url":"ftp://h","headers":[]}`, `url "ftp://h" is not an http(s) URL`},
	} {
		_, err := mcpServers(raw(tt.in))
		var re *rpc.Error
		require.ErrorAs(t, err, &re, tt.in)
		require.EqualValues(t, rpc.CodeInvalidParams, re.Code, tt.in)
		require.Contains(t, re.Message, tt.want, tt.in)
	}
}
