package openai

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
)

func TestMapMessages(t *testing.T) {
	call := provider.ToolCall{ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"README.md"}`)}
	tests := []struct {
		name   string
		system string
		msgs   []provider.Message
		want   string
	}{
		{"system and user", "Be brief.", []provider.Message{{Role: provider.RoleUser, Text: "hi"}},
			`[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]`},
		{"no system prompt", "", []provider.Message{{Role: provider.RoleUser, Text: "hi"}},
			`[{"role":"user","content":"hi"}]`},
		{"assistant text", "", []provider.Message{{Role: provider.RoleUser, Text: "hi"}, {Role: provider.RoleAssistant, Text: "Hello."}},
			`[{"role":"user","content":"hi"},{"role":"assistant","content":"Hello."}]`},
		{"tool calls without text: arguments as a JSON string, no content", "", []provider.Message{
			{Role: provider.RoleUser, Text: "read it"},
			{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{call, {ID: "call_2", Name: "bash"}}},
			{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "read", Text: `{"ok":true,"output":"# Pixir"}`},
			{Role: provider.RoleTool, ToolCallID: "call_2", ToolName: "bash", Text: `{"ok":false,"error":{"kind":"cancelled","message":"not run"}}`},
		}, `[{"role":"user","content":"read it"},
			{"role":"assistant","tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"README.md\"}"}},
				{"id":"call_2","type":"function","function":{"name":"bash","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"{\"ok\":true,\"output\":\"# Pixir\"}"},
			{"role":"tool","tool_call_id":"call_2","content":"{\"ok\":false,\"error\":{\"kind\":\"cancelled\",\"message\":\"not run\"}}"}]`},
		{"text with tool calls", "", []provider.Message{{Role: provider.RoleAssistant, Text: "Let me look.", ToolCalls: []provider.ToolCall{call}}},
			`[{"role":"assistant","content":"Let me look.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"README.md\"}"}}]}]`},
		{"an empty assistant answer keeps its content", "", []provider.Message{{Role: provider.RoleAssistant}},
			`[{"role":"assistant","content":""}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(mapMessages(tt.system, tt.msgs))
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestRequestShape(t *testing.T) {
	p := New(Config{MaxTokens: 4096})
	req := p.request(provider.ModelRequest{Model: "gpt-4.1-mini", Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}},
		Tools: []provider.ToolSpec{readTool, {Name: "update_plan", Description: "Plan."}}})
	got, err := json.Marshal(req)
	require.NoError(t, err)
	require.JSONEq(t, `{
		"model":"gpt-4.1-mini",
		"messages":[{"role":"user","content":"hi"}],
		"tools":[
			{"type":"function","function":{"name":"read","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},
			{"type":"function","function":{"name":"update_plan","description":"Plan.","parameters":{"type":"object","properties":{}}}}],
		"stream":true,
		"stream_options":{"include_usage":true},
		"max_tokens":4096}`, string(got))

	none, err := json.Marshal(New(Config{}).request(provider.ModelRequest{Model: "m"}))
	require.NoError(t, err)
	require.NotContains(t, string(none), `"tools"`, "no tools: no empty array, which some servers reject")
	require.NotContains(t, string(none), `"max_tokens"`)
}
