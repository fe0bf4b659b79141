package scripted

import (
	"context"
	"fmt"
	"strings"
	"text/template"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pixir-go/pixir/runtime/provider"
)

// ProviderName is what Name returns for a scripted provider.
const ProviderName = "scripted"

// ContextWindow is the context size the scripted provider reports.
const ContextWindow = 128000

// ReplyError is the error Generate returns for a reply with `error = "…"`:
// a provider failure the script asked for.
type ReplyError struct {
	Reply   string // which reply, e.g. `rule 6 "fail" reply 1`
	Message string // the script's error text
}

func (e *ReplyError) Error() string { return e.Message }

// New returns a provider that answers from s. Each answer depends only on
// the request (it remembers what it counted of a conversation, not what it
// answered).
func New(s *Script) provider.Provider {
	return &scriptedProvider{script: func() *Script { return s }}
}

// NewDefault returns a provider that answers from the embedded default
// script, parsed at its first answer: parsing it (its templates above all)
// costs more than the rest of `pixir acp`'s start, which an editor waits
// for.
func NewDefault() provider.Provider { return &scriptedProvider{script: Default} }

type scriptedProvider struct {
	script  func() *Script
	counter conversationCounter
}

func (p *scriptedProvider) Name() string { return ProviderName }

// Generate answers one model call from the script. See the package
// documentation and the README ("Scripted provider") for how a reply is chosen.
func (p *scriptedProvider) Generate(ctx context.Context, req provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if sink == nil {
		sink = func(provider.Delta) {}
	}
	d := inspect(req)
	in := p.counter.runes(req.Messages)
	script := p.script()
	r := script.find(d.User)
	if r == nil {
		text := fmt.Sprintf("I am Pixir's offline scripted provider and no rule in %s matches %q. "+
			"Add a [[rule]] to the script (see README \"Scripted provider\").",
			script.name, truncate(60, oneline(d.User)))
		if err := stream(ctx, sink, provider.DeltaText, text, 0, nil); err != nil {
			return nil, err
		}
		return &provider.ModelResponse{Text: text, Usage: usage(in, text)}, nil
	}
	rep := &r.replies[min(d.Call, len(r.replies))-1]

	if rep.together != nil {
		if err := rep.together.wait(ctx); err != nil {
			return nil, err
		}
	}
	if err := sleep(ctx, rep.delay); err != nil {
		return nil, err
	}
	if rep.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if rep.err != "" {
		return nil, &ReplyError{Reply: rep.label, Message: rep.err}
	}
	reasoning, err := render(rep.reasoning, d)
	if err != nil {
		return nil, fmt.Errorf("scripted: %s reasoning: %w", rep.label, err)
	}
	text, err := render(rep.text, d)
	if err != nil {
		return nil, fmt.Errorf("scripted: %s text: %w", rep.label, err)
	}

	started := false
	if err := stream(ctx, sink, provider.DeltaReasoning, reasoning, rep.chunkDelay, &started); err != nil {
		return nil, err
	}
	if err := stream(ctx, sink, provider.DeltaText, text, rep.chunkDelay, &started); err != nil {
		return nil, err
	}

	resp := &provider.ModelResponse{Text: text, Reasoning: reasoning, Truncated: rep.cutOff}
	out := reasoning + text
	for i, c := range rep.calls {
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{
			ID:        fmt.Sprintf("call_%d_%d", d.Call, i+1),
			Name:      c.name,
			Arguments: append([]byte(nil), c.args...),
		})
		out += c.name + string(c.args)
	}
	resp.Usage = usage(in, out)
	return resp, nil
}

// find returns the first rule whose match matches user, or nil.
func (s *Script) find(user string) *rule {
	for i := range s.rules {
		if r := &s.rules[i]; r.match == nil || r.match.MatchString(user) {
			return r
		}
	}
	return nil
}

// inspect reads the turn out of the conversation: the latest message of the
// user (not a note Pixir added in the middle of the turn), how many model
// calls the turn has had, and its latest tool result.
func inspect(req provider.ModelRequest) data {
	d := data{Model: req.Model, Call: 1}
	names := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		names[i] = t.Name
	}
	d.Tools = strings.Join(names, " ")
	last := -1
	for i := len(req.Messages) - 1; i >= 0; i-- { // from the end: the turn, not the session
		if m := req.Messages[i]; m.Role == provider.RoleUser && !m.FromPixir {
			last = i
			break
		}
	}
	if last >= 0 {
		d.User = req.Messages[last].Text
	}
	for _, m := range req.Messages[last+1:] {
		switch m.Role {
		case provider.RoleAssistant:
			d.Call++
		case provider.RoleTool:
			d.ToolResult, d.ToolName = m.Text, m.ToolName
		}
	}
	return d
}

func render(t *template.Template, d data) (string, error) {
	if t == nil {
		return "", nil
	}
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// stream sends text to sink in word-sized chunks (each word with the white
// space after it) so that the chunks concatenate to text exactly. It pauses
// chunkDelay before every chunk but the first of the reply (*started tracks
// that across calls) and returns ctx's error as soon as ctx ends.
func stream(ctx context.Context, sink func(provider.Delta), kind provider.DeltaKind, text string, chunkDelay time.Duration, started *bool) error {
	for _, c := range chunks(text) {
		if started != nil && *started {
			if err := sleep(ctx, chunkDelay); err != nil {
				return err
			}
		} else if started != nil {
			*started = true
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		sink(provider.Delta{Kind: kind, Text: c})
	}
	return nil
}

// chunks splits s into pieces of one word and the white space that follows
// it; white space at the start goes with the first word.
func chunks(s string) []string {
	var out []string
	start := 0
	inSpace := true // leading space belongs to the first chunk
	for i, r := range s {
		space := unicode.IsSpace(r)
		if !space && inSpace && i > start && hasWord(s[start:i]) {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) }) >= 0
}

// sleep waits for d or until ctx ends, whichever is first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// usage is a rough estimate: four characters to a token of the
// conversation (in, its characters). The system prompt is left out: it
// holds the workspace's path and the date, and counting it would make
// every figure of a script differ from machine to machine and day to day.
func usage(in int, out string) *provider.Usage {
	return &provider.Usage{
		InputTokens:   max(1, in/4),
		OutputTokens:  max(1, utf8.RuneCountInString(out)/4),
		ContextWindow: ContextWindow,
	}
}
