package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
)

func TestMapMessages(t *testing.T) {
	read := provider.ToolCall{ID: "toolu_1", Name: "read", Arguments: json.RawMessage(`{"path":"README.md"}`)}
	bash := provider.ToolCall{ID: "toolu_2", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}
	tests := []struct {
		name string
		msgs []provider.Message
		want string
	}{
		{"user text", []provider.Message{{Role: provider.RoleUser, Text: "hi"}},
			`[{"role":"user","content":[{"type":"text","text":"hi"}]}]`},
		{"tool calls and their results: consecutive results merge into one user turn", []provider.Message{
			{Role: provider.RoleUser, Text: "look"},
			{Role: provider.RoleAssistant, Text: "Looking.", ToolCalls: []provider.ToolCall{read, bash}},
			{Role: provider.RoleTool, ToolCallID: "toolu_1", ToolName: "read", Text: `{"ok":true,"output":"# Pixir"}`},
			{Role: provider.RoleTool, ToolCallID: "toolu_2", ToolName: "bash", Text: `{"ok":false,"error":{"kind":"timeout","message":"killed"}}`},
			{Role: provider.RoleAssistant, Text: "Done."},
		}, `[
			{"role":"user","content":[{"type":"text","text":"look"}]},
			{"role":"assistant","content":[
				{"type":"text","text":"Looking."},
				{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"README.md"}},
				{"type":"tool_use","id":"toolu_2","name":"bash","input":{"command":"ls"}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"toolu_1","content":"{\"ok\":true,\"output\":\"# Pixir\"}"},
				{"type":"tool_result","tool_use_id":"toolu_2","content":"{\"ok\":false,\"error\":{\"kind\":\"timeout\",\"message\":\"killed\"}}","is_error":true}]},
			{"role":"assistant","content":[{"type":"text","text":"Done."}]}]`},
		{"a prompt after tool results joins their user turn", []provider.Message{
			{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{read}},
			{Role: provider.RoleTool, ToolCallID: "toolu_1", Text: `{"ok":false,"error":{"kind":"cancelled","message":"not run"}}`},
			{Role: provider.RoleUser, Text: "never mind"},
		}, `[
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"README.md"}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"toolu_1","content":"{\"ok\":false,\"error\":{\"kind\":\"cancelled\",\"message\":\"not run\"}}","is_error":true},
				{"type":"text","text":"never mind"}]}]`},
		{"an empty assistant answer is left out, and its neighbours merge", []provider.Message{
			{Role: provider.RoleUser, Text: "one"},
			{Role: provider.RoleAssistant},
			{Role: provider.RoleUser, Text: "two"},
		}, `[{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}]`},
		{"arguments that are not an object become {}", []provider.Message{
			{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "toolu_3", Name: "read", Arguments: json.RawMessage(`"x"`)}, {ID: "toolu_4", Name: "list_agents"}}},
		}, `[{"role":"assistant","content":[
			{"type":"tool_use","id":"toolu_3","name":"read","input":{}},
			{"type":"tool_use","id":"toolu_4","name":"list_agents","input":{}}]}]`},
		{"an empty tool result says so", []provider.Message{{Role: provider.RoleTool, ToolCallID: "toolu_1"}},
			`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"(no output)"}]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(mapMessages(tt.msgs))
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestRequestShape(t *testing.T) {
	p := New(Config{MaxTokens: 1024})
	got, err := json.Marshal(p.request(provider.ModelRequest{Model: "claude-sonnet-4-5", System: "Be brief.",
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}},
		Tools:    []provider.ToolSpec{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "list_agents"}}}))
	require.NoError(t, err)
	require.JSONEq(t, `{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"Be brief.",
		"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],
		"tools":[{"name":"read","description":"Read a file.","input_schema":{"type":"object"}},
			{"name":"list_agents","input_schema":{"type":"object","properties":{}}}],
		"stream":true}`, string(got))
}
