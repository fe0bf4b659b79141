package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

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
	Content content `json:"content"`
	Refusal string  `json:"refusal"`
	// Servers name reasoning differently: reasoning_content (DeepSeek,
	// llama.cpp, vLLM), reasoning (Ollama, OpenRouter, newer vLLM).
	ReasoningContent flexString     `json:"reasoning_content"`
	Reasoning        flexString     `json:"reasoning"`
	ToolCalls        []toolCallFrag `json:"tool_calls"`
}

type toolCallFrag struct {
	// Index says which call a fragment belongs to; a few servers omit it.
	Index *int   `json:"index"`
	ID    string `json:"id"`
	// ExtraContent is Gemini's: {"google":{"thought_signature":"…"}} (or
	// "vertex"), to be sent back with the call.
	ExtraContent json.RawMessage `json:"extra_content"`
	Function     struct {
		Name string `json:"name"`
		// Arguments is a string to concatenate; a few servers send the
		// object itself.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// outputTokens is what the answer cost in output tokens. OpenAI counts
// reasoning in completion_tokens; some compatible servers and gateways
// (Gemini's thinking models behind several of them) leave the thought
// tokens out of it but keep them in total_tokens, which is what they bill:
// completion_tokens 0 and total_tokens 81 for a prompt of 21.
func (u *usage) outputTokens() int {
	return max(u.CompletionTokens, u.TotalTokens-u.PromptTokens)
}

type chunkErr struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// content is a message's content: a string, or an array of typed parts.
// Mistral's Magistral models send parts even when streaming:
// {"type":"thinking","thinking":[{"type":"text","text":"…"}]} for reasoning
// and {"type":"text","text":"…"} for the answer. Parts of other types
// (images, references) carry nothing Pixir shows, and are skipped.
type content struct {
	text, thinking string
}

type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking json.RawMessage `json:"thinking"`
}

func (c *content) UnmarshalJSON(b []byte) error {
	*c = content{}
	switch {
	case len(b) == 0 || b[0] == 'n': // null
		return nil
	case b[0] == '"':
		c.text = jsonString(b)
		return nil
	case b[0] != '[':
		return fmt.Errorf("content is neither a string nor an array of parts: %s", httpstream.Truncate(string(b), 80))
	}
	var parts []contentPart
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	var text, thinking strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			text.WriteString(p.Text)
		case "thinking":
			thinking.WriteString(partsText(p.Thinking))
		}
	}
	c.text, c.thinking = text.String(), thinking.String()
	return nil
}

// partsText reads a thinking part's content: a string, or text parts.
func partsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []contentPart
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// flexString reads a string and treats anything else (null, an object) as
// empty, so an odd reasoning field never breaks a stream.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*f = flexString(jsonString(b))
	}
	return nil
}

// jsonString decodes a JSON string the decoder has already checked. Most
// deltas hold no escapes and need no second pass: this runs once per delta
// of every answer.
func jsonString(b []byte) string {
	if inner := b[1 : len(b)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(b, &s)
	return s
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
	// choices says a choice of index 0 came: an answer without any (a
	// stream of usage chunks only) is no answer.
	choices bool
}

type callBuilder struct {
	id, name string
	args     strings.Builder
	extra    json.RawMessage
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
		if ev.Error != "" {
			return eventError(ev.Error)
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
			a.choices = true
			if err := a.add(ch.Delta, s, sink); err != nil {
				return err
			}
			if ch.FinishReason != "" {
				a.finish = ch.FinishReason
			}
		}
	}
}

// eventError reads the "error:" event of older llama.cpp servers, e.g.
// {"code":400,"message":"the request exceeds the available context
// size…","type":"exceed_context_size_error"}.
func eventError(data string) error {
	typ, code, msg := httpstream.ParseErrorBody([]byte(data))
	if msg == "" {
		msg = "the server reported an error without saying which"
	}
	return &httpstream.StreamError{Type: typ, Code: code, Message: msg}
}

// add takes one delta (or a whole message), streaming what the user should
// see and counting it against the answer's size.
func (a *assembler) add(d chunkBody, s *httpstream.Stream, sink func(provider.Delta)) error {
	emit := func(kind provider.DeltaKind, text string, into *strings.Builder) error {
		if text == "" {
			return nil
		}
		if err := s.Progress(len(text)); err != nil {
			return err
		}
		s.Started()
		into.WriteString(text)
		sink(provider.Delta{Kind: kind, Text: text})
		return nil
	}
	// Some servers send the same reasoning under both names; take one.
	reasoning := string(d.ReasoningContent)
	if reasoning == "" {
		reasoning = string(d.Reasoning)
	}
	if reasoning == "" {
		reasoning = d.Content.thinking
	}
	for _, e := range []struct {
		kind provider.DeltaKind
		text string
		into *strings.Builder
	}{{provider.DeltaReasoning, reasoning, &a.reasoning}, {provider.DeltaText, d.Content.text, &a.text}, {provider.DeltaText, d.Refusal, &a.text}} {
		if err := emit(e.kind, e.text, e.into); err != nil {
			return err
		}
	}
	if n := a.addToolCalls(d.ToolCalls); n > 0 {
		if err := s.Progress(n); err != nil {
			return err
		}
		for _, f := range d.ToolCalls {
			if frag := f.Function.Name + string(f.Function.Arguments); frag != "" {
				sink(provider.Delta{Kind: provider.DeltaToolCall, Text: frag})
			}
		}
	}
	return nil
}

// addToolCalls assembles calls by index: id and name come on a call's first
// fragment, arguments in pieces. A fragment without index counts by its
// position; one with a new id at a used index starts a new call (servers
// that send each call whole, all at index 0). It returns how many bytes of
// calls the fragments carried.
func (a *assembler) addToolCalls(frags []toolCallFrag) int {
	n := 0
	for i, f := range frags {
		n += len(f.ID) + len(f.Function.Name) + len(f.Function.Arguments)
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
		if len(f.ExtraContent) > 0 && string(f.ExtraContent) != "null" {
			c.extra = f.ExtraContent
			n += len(f.ExtraContent)
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
	return n
}

// readCompletion reads a whole, non-streamed chat.completion (from a
// server that ignored stream:true) and hands its reasoning and text to sink
// as one delta each, the way a streamed answer's arrive, so the editor and
// every other view show it too.
func (a *assembler) readCompletion(s *httpstream.Stream, sink func(provider.Delta)) error {
	data, err := s.ReadBody()
	if err != nil {
		return err
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
		if ch.Index != 0 {
			continue
		}
		a.choices = true
		m := ch.Message
		if m.Content.text == "" && m.Content.thinking == "" && m.Refusal == "" && len(m.ToolCalls) == 0 {
			m = ch.Delta // a server that sent one chunk for the whole answer
		}
		if err := a.add(m, s, sink); err != nil {
			return err
		}
		a.finish = ch.FinishReason
	}
	if a.finish == "" && len(c.Choices) == 0 {
		return a.protocolError(errors.New("no choices"), string(data))
	}
	return nil
}

// response is the assembled answer. Arguments that are not JSON are
// handed over as they came (the turn answers such a call invalid_args);
// a call without a tool's name fails the answer, readably, with a
// response holding only the usage (the server counted the call).
func (a *assembler) response() (*provider.ModelResponse, error) {
	resp := &provider.ModelResponse{Text: a.text.String(), Reasoning: a.reasoning.String(), Truncated: a.finish == "length"}
	if a.usage != nil {
		resp.Usage = &provider.Usage{InputTokens: a.usage.PromptTokens, OutputTokens: a.usage.outputTokens()}
	}
	if a.finish == "content_filter" {
		// Not the model's end: the answer is cut where the filter stopped
		// it, and a call it held may be too. What streamed is kept by the
		// turn; the usage is charged; nothing of it runs.
		return provider.UsageOnly(resp.Usage), &httpstream.Error{Kind: httpstream.KindFiltered, Err: errFiltered,
			Message: fmt.Sprintf("%s stopped the answer with its content filter (finish_reason: content_filter), so it is unfinished and none of its tool calls ran; what arrived is kept. Rephrase the request, or ask for something else", a.subj.Server)}
	}
	if !a.choices && resp.Text == "" && resp.Reasoning == "" && len(a.calls) == 0 {
		// Ended as if complete, with nothing: taken as the model's
		// answer, the turn would end completed having done nothing.
		return provider.UsageOnly(resp.Usage), &httpstream.Error{Kind: httpstream.KindProtocol, Err: errNoChoices,
			Message: fmt.Sprintf("%s answered nothing: its answer ended without a single choice (no text, no tool call, no finish_reason), so the turn failed; "+
				"send the prompt again, and if it keeps happening check that the server serves the model %q", a.subj.Server, a.subj.Model)}
	}
	for i, c := range a.calls {
		if c.name == "" {
			return provider.UsageOnly(resp.Usage), &httpstream.Error{Kind: httpstream.KindToolCall, Err: errNoName,
				Message: fmt.Sprintf("the model asked for tool call %d without naming the tool; send the prompt again, or use a model with reliable tool calling", i+1)}
		}
		args := strings.TrimSpace(c.args.String())
		if args == "" {
			args = "{}"
		}
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%016x", rand.Uint64())
		}
		tc := provider.ToolCall{ID: id, Name: c.name, Arguments: json.RawMessage(args)}
		if c.extra != nil {
			tc.ProviderData, _ = json.Marshal(providerData{ExtraContent: c.extra})
		}
		resp.ToolCalls = append(resp.ToolCalls, tc)
	}
	return resp, nil
}

func codeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil || len(raw) == 0 || string(raw) == "null" {
		return s
	}
	return string(raw)
}
