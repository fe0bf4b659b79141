package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/runtime/provider/httpstream"
)

// The response side: "chat.completion.chunk" events and, from servers that
// ignore stream:true, one "chat.completion".

type chunk struct {
	Choices []choice  `json:"choices"`
	Usage   *usage    `json:"usage"`
	Error   *chunkErr `json:"error"`
	// Object is "error" when older vLLM servers report an error in the
	// stream: its message, type and code are then at the top level.
	Object  string          `json:"object"`
	Message json.RawMessage `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// streamError is the error a chunk reports, or nil.
func (c *chunk) streamError() error {
	switch {
	case c.Error != nil:
		return &httpstream.StreamError{Type: c.Error.Type, Code: codeString(c.Error.Code), Message: c.Error.Message}
	case c.Object == "error":
		var msg string
		if json.Unmarshal(c.Message, &msg) != nil {
			msg = string(c.Message)
		}
		return &httpstream.StreamError{Type: c.Type, Code: codeString(c.Code), Message: msg}
	}
	return nil
}

type choice struct {
	Index        int       `json:"index"`
	Delta        chunkBody `json:"delta"`
	Message      chunkBody `json:"message"`
	FinishReason string    `json:"finish_reason"`
}

// chunkBody is a delta, or a whole message in a non-streamed completion.
type chunkBody struct {
	Content string `json:"content"`
	Refusal string `json:"refusal"`
	// Servers name reasoning differently: reasoning_content (DeepSeek,
	// llama.cpp, vLLM), reasoning (Ollama, OpenRouter, newer vLLM).
	ReasoningContent flexString     `json:"reasoning_content"`
	Reasoning        flexString     `json:"reasoning"`
	ToolCalls        []toolCallFrag `json:"tool_calls"`
}

type toolCallFrag struct {
	// Index says which call a fragment belongs to; a few servers omit it.
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a string to concatenate; a few servers send the
		// object itself.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type chunkErr struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// flexString reads a string and treats anything else (null, an object) as
// empty, so an odd reasoning field never breaks a stream.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*f = flexString(s)
	}
	return nil
}

// assembler builds one response out of a stream.
type assembler struct {
	subj      httpstream.Subject
	text      strings.Builder
	reasoning strings.Builder
	calls     []*callBuilder
	byIndex   map[int]int // wire index → position in calls
	finish    string
	usage     *usage
}

type callBuilder struct {
	id, name string
	args     strings.Builder
}

func newAssembler(subj httpstream.Subject) *assembler {
	return &assembler{subj: subj, byIndex: map[int]int{}}
}

func (a *assembler) protocolError(err error, data string) error {
	return &httpstream.Error{Kind: httpstream.KindProtocol, Err: err,
		Message: fmt.Sprintf("%s sent a chunk Pixir cannot read (%v): %s", a.subj.Server, err, httpstream.Truncate(data, 200))}
}

// readStream reads SSE chunks until [DONE].
func (a *assembler) readStream(s *httpstream.Stream, sink func(provider.Delta)) error {
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			// A server that forgets [DONE] still finished if it gave a
			// finish_reason.
			if a.finish != "" {
				return nil
			}
			return httpstream.ErrStreamClosed
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) && a.finish != "" {
				return nil
			}
			return err
		}
		data := strings.TrimSpace(ev.Data)
		if data == "[DONE]" {
			return nil
		}
		if data == "" {
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return a.protocolError(err, data)
		}
		if err := c.streamError(); err != nil {
			return err
		}
		if c.Usage != nil {
			a.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue // only one choice is asked for
			}
			a.add(ch.Delta, s, sink)
			if ch.FinishReason != "" {
				a.finish = ch.FinishReason
			}
		}
	}
}

// add takes one delta, streaming what the user should see.
func (a *assembler) add(d chunkBody, s *httpstream.Stream, sink func(provider.Delta)) {
	emit := func(kind provider.DeltaKind, text string, into *strings.Builder) {
		if text == "" {
			return
		}
		s.Started()
		into.WriteString(text)
		sink(provider.Delta{Kind: kind, Text: text})
	}
	// Some servers send the same reasoning under both names; take one.
	reasoning := string(d.ReasoningContent)
	if reasoning == "" {
		reasoning = string(d.Reasoning)
	}
	emit(provider.DeltaReasoning, reasoning, &a.reasoning)
	emit(provider.DeltaText, d.Content, &a.text)
	emit(provider.DeltaText, d.Refusal, &a.text)
	a.addToolCalls(d.ToolCalls)
}

// addToolCalls assembles calls by index: id and name come on a call's first
// fragment, arguments in pieces. A fragment without index counts by its
// position; one with a new id at a used index starts a new call (servers
// that send each call whole, all at index 0).
func (a *assembler) addToolCalls(frags []toolCallFrag) {
	for i, f := range frags {
		idx := i
		if f.Index != nil {
			idx = *f.Index
		}
		pos, ok := a.byIndex[idx]
		if !ok || (f.ID != "" && a.calls[pos].id != "" && a.calls[pos].id != f.ID) {
			a.calls = append(a.calls, &callBuilder{})
			pos = len(a.calls) - 1
			a.byIndex[idx] = pos
		}
		c := a.calls[pos]
		if f.ID != "" {
			c.id = f.ID
		}
		if c.name == "" {
			c.name = f.Function.Name
		}
		args := bytes.TrimSpace(f.Function.Arguments)
		switch {
		case len(args) == 0 || string(args) == "null":
		case args[0] == '"':
			var s string
			if json.Unmarshal(args, &s) == nil {
				c.args.WriteString(s)
			}
		default:
			c.args.Write(args)
		}
	}
}

// readCompletion reads a whole, non-streamed chat.completion.
func (a *assembler) readCompletion(s *httpstream.Stream) error {
	data, err := io.ReadAll(io.LimitReader(s.Body(), 64<<20))
	if err != nil {
		return fmt.Errorf("%w: %w", httpstream.ErrStreamClosed, err)
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return a.protocolError(err, string(data))
	}
	if err := c.streamError(); err != nil {
		return err
	}
	a.usage = c.Usage
	for _, ch := range c.Choices {
		if ch.Index == 0 {
			m := ch.Message
			a.text.WriteString(m.Content + m.Refusal)
			if r := string(m.ReasoningContent); r != "" {
				a.reasoning.WriteString(r)
			} else {
				a.reasoning.WriteString(string(m.Reasoning))
			}
			a.addToolCalls(m.ToolCalls)
			a.finish = ch.FinishReason
		}
	}
	return nil
}

// response is the assembled answer; a tool call whose arguments are not
// JSON fails it, readably.
func (a *assembler) response() (*provider.ModelResponse, error) {
	resp := &provider.ModelResponse{Text: a.text.String(), Reasoning: a.reasoning.String()}
	if a.usage != nil {
		resp.Usage = &provider.Usage{InputTokens: a.usage.PromptTokens, OutputTokens: a.usage.CompletionTokens}
	}
	for i, c := range a.calls {
		if c.name == "" {
			return nil, &httpstream.Error{Kind: httpstream.KindToolCall, Err: errNoName,
				Message: fmt.Sprintf("the model asked for tool call %d without naming the tool; send the prompt again, or use a model with reliable tool calling", i+1)}
		}
		args := strings.TrimSpace(c.args.String())
		if args == "" {
			args = "{}"
		}
		if err := validJSON(args); err != nil {
			msg := fmt.Sprintf("the model called %q with arguments that are not valid JSON (%v): %s; send the prompt again, or use a model with reliable tool calling",
				c.name, err, httpstream.Truncate(args, 200))
			if a.finish == "length" {
				msg += " (the answer was cut off at the token limit: raise max_tokens)"
			}
			return nil, &httpstream.Error{Kind: httpstream.KindToolCall, Message: msg, Err: err}
		}
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%016x", rand.Uint64())
		}
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: id, Name: c.name, Arguments: json.RawMessage(args)})
	}
	return resp, nil
}

// validJSON says why s is not one JSON value.
func validJSON(s string) error {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

func codeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil || len(raw) == 0 || string(raw) == "null" {
		return s
	}
	return string(raw)
}
