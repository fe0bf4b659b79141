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
	Thinking  *thinking `json:"thinking,omitempty"`
}

// thinking turns extended thinking on with a budget of tokens.
type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// ThinkingBudget is the thinking budget, in tokens, a reasoning effort
// asks for; 0 means no extended thinking ("none", or no effort given).
// The API's minimum is 1024.
func ThinkingBudget(effort string) int {
	switch effort {
	case "minimal":
		return 1024
	case "low":
		return 2048
	case "medium":
		return 8192
	case "high":
		return 16384
	case "xhigh":
		return 24576
	}
	return 0
}

// answerRoom is what max_tokens keeps for the answer beyond the thinking
// budget (max_tokens counts both, and must exceed the budget).
const answerRoom = 4096

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is a content block: text, tool_use, tool_result, or the thinking
// and redacted_thinking that go back before an assistant's tool_use.
type block struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// thinking, redacted_thinking
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
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
	if budget := ThinkingBudget(req.ReasoningEffort); budget > 0 {
		out.Thinking = &thinking{Type: "enabled", BudgetTokens: budget}
		out.MaxTokens = max(out.MaxTokens, budget+answerRoom)
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
			// The signed thinking that led to the calls goes first, as
			// the API wants it back when thinking is on.
			blocks := thinkingOf(m.ToolCalls)
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

// providerData is what this provider keeps in the ProviderData of a
// message's first tool call: the message's thinking blocks, signed.
type providerData struct {
	Thinking []block `json:"thinking,omitempty"`
}

func thinkingOf(calls []provider.ToolCall) []block {
	if len(calls) == 0 || len(calls[0].ProviderData) == 0 {
		return nil
	}
	var pd providerData
	if json.Unmarshal(calls[0].ProviderData, &pd) != nil {
		return nil
	}
	return pd.Thinking
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
