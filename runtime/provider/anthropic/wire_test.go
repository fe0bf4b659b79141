package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
)

func TestMapMessages(t *testing.T) {
	read := runtime.ToolCall{ID: "toolu_1", Name: "read", Arguments: json.RawMessage(`{"path":"README.md"}`)}
	bash := runtime.ToolCall{ID: "toolu_2", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}
	tests := []struct {
		name string
		msgs []runtime.Message
		want string
	}{
		{"user text", []runtime.Message{{Role: runtime.RoleUser, Text: "hi"}},
			`[{"role":"user","content":[{"type":"text","text":"hi"}]}]`},
		{"tool calls and their results: consecutive results merge into one user turn", []runtime.Message{
			{Role: runtime.RoleUser, Text: "look"},
			{Role: runtime.RoleAssistant, Text: "Looking.", ToolCalls: []runtime.ToolCall{read, bash}},
			{Role: runtime.RoleTool, ToolCallID: "toolu_1", ToolName: "read", Text: `{"ok":true,"output":"# Pixir"}`},
			{Role: runtime.RoleTool, ToolCallID: "toolu_2", ToolName: "bash", Text: `{"ok":false,"error":{"kind":"timeout","message":"killed"}}`},
			{Role: runtime.RoleAssistant, Text: "Done."},
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
		{"a prompt after tool results joins their user turn", []runtime.Message{
			{Role: runtime.RoleAssistant, ToolCalls: []runtime.ToolCall{read}},
			{Role: runtime.RoleTool, ToolCallID: "toolu_1", Text: `{"ok":false,"error":{"kind":"cancelled","message":"not run"}}`},
			{Role: runtime.RoleUser, Text: "never mind"},
		}, `[
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"README.md"}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"toolu_1","content":"{\"ok\":false,\"error\":{\"kind\":\"cancelled\",\"message\":\"not run\"}}","is_error":true},
				{"type":"text","text":"never mind"}]}]`},
		{"an empty assistant answer is left out, and its neighbours merge", []runtime.Message{
			{Role: runtime.RoleUser, Text: "one"},
			{Role: runtime.RoleAssistant},
			{Role: runtime.RoleUser, Text: "two"},
		}, `[{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}]`},
		{"arguments that are not an object become {}", []runtime.Message{
			{Role: runtime.RoleAssistant, ToolCalls: []runtime.ToolCall{{ID: "toolu_3", Name: "read", Arguments: json.RawMessage(`"x"`)}, {ID: "toolu_4", Name: "list_agents"}}},
		}, `[{"role":"assistant","content":[
			{"type":"tool_use","id":"toolu_3","name":"read","input":{}},
			{"type":"tool_use","id":"toolu_4","name":"list_agents","input":{}}]}]`},
		{"an empty tool result says so", []runtime.Message{{Role: runtime.RoleTool, ToolCallID: "toolu_1"}},
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
	got, err := json.Marshal(p.request(runtime.ModelRequest{Model: "claude-sonnet-4-5", System: "Be brief.",
		Messages: []runtime.Message{{Role: runtime.RoleUser, Text: "hi"}},
		Tools:    []runtime.ToolSpec{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "list_agents"}}}))
	require.NoError(t, err)
	require.JSONEq(t, `{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"Be brief.",
		"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],
		"tools":[{"name":"read","description":"Read a file.","input_schema":{"type":"object"}},
			{"name":"list_agents","input_schema":{"type":"object","properties":{}}}],
		"stream":true}`, string(got))
}
