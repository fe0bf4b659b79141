package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/runtime/provider/httpstream"
)

// The response side: message_start, content_block_start/delta/stop,
// message_delta, message_stop, ping and error events.

type event struct {
	Type         string        `json:"type"`
	Message      *startMessage `json:"message"`
	Index        int           `json:"index"`
	ContentBlock *contentBlock `json:"content_block"`
	Delta        *delta        `json:"delta"`
	Usage        *usage        `json:"usage"`
	Error        *apiError     `json:"error"`
}

type startMessage struct {
	Model string `json:"model"`
	Usage *usage `json:"usage"`
}

type contentBlock struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	Text      string `json:"text"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	Data      string `json:"data"`
}

type delta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	StopReason  string `json:"stop_reason"`
}

type usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// assembler builds one response out of a stream.
type assembler struct {
	subj      httpstream.Subject
	text      strings.Builder
	reasoning strings.Builder
	tools     map[int]*toolUse // by block index
	// thoughts are the thinking and redacted_thinking blocks by index, to
	// go back with the message's tool calls.
	thoughts   map[int]*thought
	stopReason string
	usage      *usage
}

type thought struct {
	redacted        bool
	text            strings.Builder
	signature, data string
}

type toolUse struct {
	id, name string
	input    strings.Builder
}

func newAssembler(subj httpstream.Subject) *assembler {
	return &assembler{subj: subj, tools: map[int]*toolUse{}, thoughts: map[int]*thought{}}
}

// emitter streams one piece of the answer to sink, counting it against
// the answer's size.
func emitter(s *httpstream.Stream, sink func(provider.Delta)) func(provider.DeltaKind, string, *strings.Builder) error {
	return func(kind provider.DeltaKind, text string, into *strings.Builder) error {
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
}

func (a *assembler) readStream(s *httpstream.Stream, sink func(provider.Delta)) error {
	emit := emitter(s, sink)
	for {
		ev, err := s.Next()
		if a.stopReason != "" && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			// message_delta's stop_reason comes after the last block: the
			// answer is whole though message_stop never came (a server or
			// proxy that leaves it out, or a cut just before it).
			return nil
		}
		if errors.Is(err, io.EOF) {
			return httpstream.ErrStreamClosed
		}
		if err != nil {
			return err
		}
		var e event
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			return &httpstream.Error{Kind: httpstream.KindProtocol, Err: err,
				Message: fmt.Sprintf("%s sent an event Pixir cannot read (%v): %s", a.subj.Server, err, httpstream.Truncate(ev.Data, 200))}
		}
		if e.Type == "" {
			e.Type = ev.Name
		}
		switch e.Type {
		case "message_start":
			if e.Message != nil && e.Message.Usage != nil {
				u := *e.Message.Usage
				a.usage = &u
			}
		case "content_block_start":
			b := e.ContentBlock
			if b == nil {
				continue
			}
			var err error
			switch b.Type {
			case "text":
				err = emit(provider.DeltaText, b.Text, &a.text)
			case "thinking":
				th := &thought{signature: b.Signature}
				th.text.WriteString(b.Thinking)
				a.thoughts[e.Index] = th
				err = emit(provider.DeltaReasoning, b.Thinking, &a.reasoning)
			case "redacted_thinking":
				a.thoughts[e.Index] = &thought{redacted: true, data: b.Data}
				err = s.Progress(len(b.Data))
			case "tool_use":
				a.tools[e.Index] = &toolUse{id: b.ID, name: b.Name}
				err = s.Progress(len(b.ID) + len(b.Name))
				if err == nil && b.Name != "" {
					sink(provider.Delta{Kind: provider.DeltaToolCall, Text: b.Name})
				}
			}
			if err != nil {
				return err
			}
		case "content_block_delta":
			d := e.Delta
			if d == nil {
				continue
			}
			var err error
			switch d.Type {
			case "text_delta":
				err = emit(provider.DeltaText, d.Text, &a.text)
			case "thinking_delta":
				if th := a.thoughts[e.Index]; th != nil {
					th.text.WriteString(d.Thinking)
				}
				err = emit(provider.DeltaReasoning, d.Thinking, &a.reasoning)
			case "signature_delta":
				if th := a.thoughts[e.Index]; th != nil {
					th.signature += d.Signature
				}
			case "input_json_delta":
				if t := a.tools[e.Index]; t != nil {
					t.input.WriteString(d.PartialJSON)
					err = s.Progress(len(d.PartialJSON))
					if err == nil && d.PartialJSON != "" {
						sink(provider.Delta{Kind: provider.DeltaToolCall, Text: d.PartialJSON})
					}
				}
			}
			if err != nil {
				return err
			}
			// citations_delta carries nothing Pixir uses.
		case "message_delta":
			if e.Delta != nil && e.Delta.StopReason != "" {
				a.stopReason = e.Delta.StopReason
			}
			if u := e.Usage; u != nil {
				if a.usage == nil {
					a.usage = &usage{}
				}
				a.usage.OutputTokens = u.OutputTokens
				// Counts here, when present, are final.
				if u.InputTokens > 0 || u.CacheCreationInputTokens > 0 || u.CacheReadInputTokens > 0 {
					a.usage.InputTokens, a.usage.CacheCreationInputTokens, a.usage.CacheReadInputTokens =
						u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens
				}
			}
		case "message_stop":
			return nil
		case "error":
			se := &httpstream.StreamError{Type: "error", Message: ev.Data}
			if e.Error != nil {
				se.Type, se.Message = e.Error.Type, e.Error.Message
			}
			return se
		}
		// ping, content_block_stop and event types added later need nothing.
	}
}

// wholeMessage is a non-streamed answer: what a server that does not
// stream sends for a streaming request.
type wholeMessage struct {
	Type       string      `json:"type"`
	Content    []fullBlock `json:"content"`
	StopReason string      `json:"stop_reason"`
	Usage      *usage      `json:"usage"`
	Error      *apiError   `json:"error"`
}

type fullBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	Input     json.RawMessage `json:"input"`
}

// readMessage reads one whole message and hands its thinking and text to
// sink, block by block, as a stream's would arrive.
func (a *assembler) readMessage(s *httpstream.Stream, sink func(provider.Delta)) error {
	data, err := s.ReadBody()
	if err != nil {
		return err
	}
	var m wholeMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return &httpstream.Error{Kind: httpstream.KindProtocol, Err: err,
			Message: fmt.Sprintf("%s sent an answer Pixir cannot read (%v): %s", a.subj.Server, err, httpstream.Truncate(string(data), 200))}
	}
	if m.Type == "error" || m.Error != nil {
		se := &httpstream.StreamError{Type: "error", Message: string(data)}
		if m.Error != nil {
			se.Type, se.Message = m.Error.Type, m.Error.Message
		}
		return se
	}
	if m.Type != "message" {
		return &httpstream.Error{Kind: httpstream.KindProtocol, Err: errors.New("not a message"),
			Message: fmt.Sprintf("%s sent an answer that is not a message: %s", a.subj.Server, httpstream.Truncate(string(data), 200))}
	}
	emit := emitter(s, sink)
	for i, b := range m.Content {
		var err error
		switch b.Type {
		case "text":
			err = emit(provider.DeltaText, b.Text, &a.text)
		case "thinking":
			th := &thought{signature: b.Signature}
			th.text.WriteString(b.Thinking)
			a.thoughts[i] = th
			err = emit(provider.DeltaReasoning, b.Thinking, &a.reasoning)
		case "redacted_thinking":
			a.thoughts[i] = &thought{redacted: true, data: b.Data}
		case "tool_use":
			t := &toolUse{id: b.ID, name: b.Name}
			t.input.Write(b.Input)
			a.tools[i] = t
		}
		if err != nil {
			return err
		}
	}
	a.stopReason, a.usage = m.StopReason, m.Usage
	return nil
}

// response is the assembled answer. Input that is not JSON is handed
// over as it came: the turn answers such a call invalid_args.
func (a *assembler) response() (*provider.ModelResponse, error) {
	// model_context_window_exceeded: the answer met the context window
	// (Sonnet 4.5 and later), cut off as at max_tokens.
	resp := &provider.ModelResponse{Text: a.text.String(), Reasoning: a.reasoning.String(),
		Truncated: a.stopReason == "max_tokens" || a.stopReason == "model_context_window_exceeded"}
	if u := a.usage; u != nil {
		resp.Usage = &provider.Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, OutputTokens: u.OutputTokens}
	}
	if a.stopReason == "refusal" {
		// The API's safety classifiers stopped the answer: not the model's
		// end. What streamed is kept by the turn; the usage is charged;
		// nothing of it runs.
		return provider.UsageOnly(resp.Usage), &httpstream.Error{Kind: httpstream.KindFiltered, Err: errRefusal,
			Message: fmt.Sprintf("%s stopped the answer with its safety classifiers (stop_reason: refusal), so it is unfinished and none of its tool calls ran; what arrived is kept. Rephrase the request, or start a new session if it keeps happening", a.subj.Server)}
	}
	indexes := make([]int, 0, len(a.tools))
	for i := range a.tools {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	for _, i := range indexes {
		t := a.tools[i]
		input := strings.TrimSpace(t.input.String())
		if input == "" {
			input = "{}"
		}
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: t.id, Name: t.name, Arguments: json.RawMessage(input)})
	}
	if len(resp.ToolCalls) > 0 && len(a.thoughts) > 0 {
		resp.ToolCalls[0].ProviderData = a.thinkingData()
	}
	return resp, nil
}

var errRefusal = errors.New("the answer was stopped by a refusal")

// thinkingData is the message's thinking blocks, in order, as the API wants
// them back before the tool_use blocks.
func (a *assembler) thinkingData() json.RawMessage {
	indexes := make([]int, 0, len(a.thoughts))
	for i := range a.thoughts {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	var pd providerData
	for _, i := range indexes {
		th := a.thoughts[i]
		if th.redacted {
			pd.Thinking = append(pd.Thinking, block{Type: "redacted_thinking", Data: th.data})
			continue
		}
		pd.Thinking = append(pd.Thinking, block{Type: "thinking", Thinking: th.text.String(), Signature: th.signature})
	}
	b, _ := json.Marshal(pd)
	return b
}
