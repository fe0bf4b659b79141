package openai

import (
	"encoding/json"

	"github.com/pixir-go/pixir/runtime/provider"
)

// The request side of the Chat Completions API.

type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	Tools         []chatTool     `json:"tools,omitempty"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	MaxTokens     int            `json:"max_tokens,omitempty"`
	// ReasoningEffort is sent only when asked for: models that do not
	// reason reject it.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is omitted only for an assistant message that is nothing but
	// tool calls, as the API allows.
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatFunctionCall `json:"function"`
	// ExtraContent goes back as the call came (Gemini's thought signature).
	ExtraContent json.RawMessage `json:"extra_content,omitempty"`
}

// providerData is what this provider keeps in a ToolCall's ProviderData:
// the call's fields that must go back with it, under their wire names.
type providerData struct {
	ExtraContent json.RawMessage `json:"extra_content,omitempty"`
}

type chatFunctionCall struct {
	Name string `json:"name"`
	// Arguments is JSON text inside a JSON string, as the API wants it.
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptySchema is sent for a tool without parameters: several servers
// reject a function with none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// request maps a ModelRequest onto the wire. Reasoning is not sent back:
// the API has no field for it, and some servers reject one.
func (p *Provider) request(req provider.ModelRequest) chatRequest {
	out := chatRequest{
		Model:           req.Model,
		Stream:          true,
		StreamOptions:   &streamOptions{IncludeUsage: true},
		MaxTokens:       p.cfg.MaxTokens,
		Messages:        mapMessages(req.System, req.Messages),
		ReasoningEffort: req.ReasoningEffort,
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = emptySchema
		}
		out.Tools = append(out.Tools, chatTool{Type: "function", Function: chatFunction{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return out
}

func mapMessages(system string, msgs []provider.Message) []chatMessage {
	out := make([]chatMessage, 0, len(msgs)+1)
	if system != "" {
		out = append(out, chatMessage{Role: "system", Content: &system})
	}
	for _, m := range msgs {
		text := m.Text
		switch m.Role {
		case provider.RoleUser:
			out = append(out, chatMessage{Role: "user", Content: &text})
		case provider.RoleAssistant:
			cm := chatMessage{Role: "assistant"}
			if text != "" || len(m.ToolCalls) == 0 {
				cm.Content = &text
			}
			for _, tc := range m.ToolCalls {
				args := string(tc.Arguments)
				if args == "" {
					args = "{}"
				}
				call := chatToolCall{ID: tc.ID, Type: "function", Function: chatFunctionCall{Name: tc.Name, Arguments: args}}
				var pd providerData
				if len(tc.ProviderData) > 0 && json.Unmarshal(tc.ProviderData, &pd) == nil {
					call.ExtraContent = pd.ExtraContent
				}
				cm.ToolCalls = append(cm.ToolCalls, call)
			}
			out = append(out, cm)
		case provider.RoleTool:
			out = append(out, chatMessage{Role: "tool", ToolCallID: m.ToolCallID, Content: &text})
		}
	}
	return out
}
