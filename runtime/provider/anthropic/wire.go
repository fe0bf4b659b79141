package anthropic

import (
	"encoding/json"

	"github.com/pixir-go/pixir/runtime/provider"
)

// The request side of the Messages API.

type messagesRequest struct {
	Model     string    `json:"model"`
	MaxTokens int       `json:"max_tokens"`
	System    string    `json:"system,omitempty"`
	Messages  []message `json:"messages"`
	Tools     []tool    `json:"tools,omitempty"`
	Stream    bool      `json:"stream"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is a content block: text, tool_use or tool_result.
type block struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func (p *Provider) request(req provider.ModelRequest) messagesRequest {
	out := messagesRequest{
		Model:     req.Model,
		MaxTokens: p.cfg.MaxTokens,
		System:    req.System,
		Messages:  mapMessages(req.Messages),
		Stream:    true,
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = emptySchema
		}
		out.Tools = append(out.Tools, tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out
}

// mapMessages maps the conversation onto the API's alternating user and
// assistant turns: tool results are tool_result blocks of a user turn, the
// assistant's calls tool_use blocks, and neighbours with the same role
// merge into one turn (so several results, and a prompt after them, make
// one user turn). Empty text blocks, which the API rejects, are left out.
func mapMessages(msgs []provider.Message) []message {
	var out []message
	add := func(role string, blocks ...block) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, message{Role: role, Content: blocks})
	}
	for _, m := range msgs {
		switch m.Role {
		case provider.RoleUser:
			if m.Text != "" {
				add("user", block{Type: "text", Text: m.Text})
			}
		case provider.RoleAssistant:
			var blocks []block
			if m.Text != "" {
				blocks = append(blocks, block{Type: "text", Text: m.Text})
			}
			for _, tc := range m.ToolCalls {
				input := tc.Arguments
				if !isObject(input) {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, block{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
			}
			add("assistant", blocks...)
		case provider.RoleTool:
			text := m.Text
			if text == "" {
				text = "(no output)"
			}
			add("user", block{Type: "tool_result", ToolUseID: m.ToolCallID, Content: text, IsError: isFailure(m.Text)})
		}
	}
	return out
}

// isObject reports a JSON object: the API takes nothing else as input.
func isObject(raw json.RawMessage) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(raw, &v) == nil && v != nil
}

// isFailure reads the result envelope's "ok".
func isFailure(envelope string) bool {
	var e struct {
		OK *bool `json:"ok"`
	}
	return json.Unmarshal([]byte(envelope), &e) == nil && e.OK != nil && !*e.OK
}
