// Package provider is the contract between the runtime and a model: the
// Provider interface and the request, message, tool-call, delta, response
// and usage types it speaks. It is a leaf (it imports only the standard
// library), so a provider in a subfolder (openai, anthropic, scripted)
// depends on this contract alone, not on all of the runtime.
package provider

import (
	"context"
	"encoding/json"
)

// Provider is a model behind a streaming API. Generate streams one model
// response: it calls sink for each text or reasoning fragment as it arrives
// and returns the assembled response when the model stops. It must return
// promptly with ctx's error once ctx ends, leaving nothing running. An
// answer the server completed and counted but that cannot be used (a tool
// call whose arguments are not JSON) is an error returned with a response
// holding only the call's Usage, so that what it cost is still charged.
type Provider interface {
	Name() string
	Generate(ctx context.Context, req ModelRequest, sink func(Delta)) (*ModelResponse, error)
}

// ModelRequest is everything a provider needs for one call.
type ModelRequest struct {
	Model    string
	System   string
	Messages []Message
	Tools    []ToolSpec
	// ReasoningEffort asks a reasoning model to think more or less: "none",
	// "minimal", "low", "medium", "high" or "xhigh"; empty leaves it to
	// the model. Each provider maps it onto what its API takes (OpenAI's
	// reasoning_effort, Anthropic's thinking budget) or ignores it.
	ReasoningEffort string
}

// ReasoningEfforts are the values ModelRequest.ReasoningEffort takes, from
// the least thinking to the most.
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// Role of a Message in the conversation.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation sent to a model.
type Message struct {
	Role Role `json:"role"`
	// Text is the user's prompt, the assistant's answer, or the tool result
	// as the model reads it (the JSON result envelope).
	Text string `json:"text,omitempty"`
	// ToolCalls the assistant asked for (RoleAssistant only).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and ToolName identify the call a RoleTool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	// FromPixir marks a RoleUser message the runtime wrote, not the user
	// (the summaries of children that ended unseen). Providers send it as
	// any user message; the scripted provider reads a turn from the user's
	// own message, so a note in the middle of a turn does not start its
	// script again.
	FromPixir bool `json:"from_pixir,omitempty"`
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments are JSON. A provider hands over arguments the model sent
	// that are not JSON as they came; the turn moves them to Unparsed and
	// sets Arguments to {} before anything records the call.
	Arguments json.RawMessage `json:"arguments"`
	// Unparsed is the text the model sent as the call's arguments when it
	// was not JSON: the call is not run, the model reads an invalid_args
	// result saying why, and later requests send {} in its place (every
	// API takes that).
	Unparsed string `json:"unparsed_arguments,omitempty"`
	// ProviderData is what the provider that made the call needs back with
	// it in later requests, opaque to everyone else: the OpenAI-compatible
	// endpoint of Gemini puts a thought signature on a call, Anthropic wants
	// the signed thinking that led to the calls of a message, and both
	// reject a follow-up without it. It is kept in the Log with the call, so
	// a session loaded again still sends it.
	ProviderData json.RawMessage `json:"provider_data,omitempty"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// DeltaKind says what a streamed fragment is.
type DeltaKind string

const (
	DeltaText      DeltaKind = "text"
	DeltaReasoning DeltaKind = "reasoning"
	// DeltaToolCall is a fragment of a tool call (its name, a piece of
	// its arguments), not shown: what an answer cut off had generated is
	// counted with it.
	DeltaToolCall DeltaKind = "tool_call"
)

// Delta is one streamed fragment of a model response.
type Delta struct {
	Kind DeltaKind
	Text string
}

// ModelResponse is a complete model response.
type ModelResponse struct {
	Text      string
	Reasoning string
	ToolCalls []ToolCall
	Usage     *Usage
	// Truncated: the answer stopped at the token limit of one answer
	// (max_tokens), not because the model finished it.
	Truncated bool
}

// UsageOnly is the response of an answer that cannot be used: only what
// the server counted for it (the turn charges it before it fails), or nil
// when it counted nothing.
func UsageOnly(u *Usage) *ModelResponse {
	if u == nil {
		return nil
	}
	return &ModelResponse{Usage: u}
}

// Usage is token accounting reported by a provider.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// ContextWindow is the model's context size when known.
	ContextWindow int `json:"context_window,omitempty"`
}
