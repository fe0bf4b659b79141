// Package scripted is Pixir's offline, deterministic model provider. It
// answers from a TOML script of rules instead of a network model: the first
// rule whose regexp matches the turn's latest user message picks the reply,
// and the number of model calls already made in the turn picks which of the
// rule's replies is used. It holds no state between calls, so the same
// conversation always gets the same answer.
//
// An embedded default script (default.toml, see Default) lets a person try
// Pixir with no API key; tests and demos load their own scripts with Load or
// Parse. The README ("Scripted provider") documents the script format.
package scripted

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/pelletier/go-toml/v2"
)

//go:embed default.toml
var defaultTOML []byte

// DefaultName is the name the embedded default script reports in messages.
const DefaultName = "default.toml (embedded)"

var defaultScript = sync.OnceValue(func() *Script {
	s, err := Parse(DefaultName, defaultTOML)
	if err != nil {
		panic(fmt.Sprintf("scripted: the embedded default script is invalid: %v", err))
	}
	return s
})

// Default returns the embedded default script, parsed once.
func Default() *Script { return defaultScript() }

// Script is a parsed and validated script. It is immutable and safe for
// concurrent use.
type Script struct {
	name  string
	rules []rule
}

// Name is the name the script was parsed under (usually its file path).
func (s *Script) Name() string { return s.name }

type rule struct {
	label   string         // `rule 2 "greeting"`, for messages
	match   *regexp.Regexp // nil matches everything
	replies []reply
}

type reply struct {
	label      string // `rule 2 "greeting" reply 1`
	text       *template.Template
	reasoning  *template.Template
	delay      time.Duration
	chunkDelay time.Duration
	err        string
	hang       bool
	// cutOff ends the answer as the model's token limit would (OpenAI
	// finish_reason "length").
	cutOff bool
	calls  []toolCall
	// together, when set, holds this reply until that many calls of it are
	// waiting at once (see meeting).
	together *meeting
}

type toolCall struct {
	name string
	args json.RawMessage
}

// The TOML shape of a script. Field tags are the exact keys allowed.
type fileScript struct {
	Rule []fileRule `toml:"rule"`
}

type fileRule struct {
	Name  string      `toml:"name"`
	Match *string     `toml:"match"`
	Reply []fileReply `toml:"reply"`
}

type fileReply struct {
	Text         string         `toml:"text"`
	Reasoning    string         `toml:"reasoning"`
	DelayMS      int64          `toml:"delay_ms"`
	ChunkDelayMS int64          `toml:"chunk_delay_ms"`
	Error        string         `toml:"error"`
	Hang         bool           `toml:"hang"`
	Together     int            `toml:"together"`
	CutOff       bool           `toml:"cut_off"`
	ToolCalls    []fileToolCall `toml:"tool_calls"`
}

type fileToolCall struct {
	Name          string         `toml:"name"`
	Arguments     map[string]any `toml:"arguments"`
	ArgumentsJSON *string        `toml:"arguments_json"`
}

// keysByTable lists the keys each table of a script allows and what each
// holds; it feeds the hints of load errors.
// Made on first use: only a script with a mistake needs it.
var keysByTable = sync.OnceValue(func() map[string][][2]string {
	return map[string][][2]string{
		"": {{"rule", "array of tables [[rule]]"}},
		"rule": {
			{"name", "string"}, {"match", "string (Go regexp)"},
			{"reply", "array of tables [[rule.reply]]"},
		},
		"rule.reply": {
			{"text", "string (template)"}, {"reasoning", "string (template)"},
			{"delay_ms", "integer"}, {"chunk_delay_ms", "integer"},
			{"error", "string"}, {"hang", "boolean"}, {"together", "integer"},
			{"cut_off", "boolean"},
			{"tool_calls", "array of tables [[rule.reply.tool_calls]]"},
		},
		"rule.reply.tool_calls": {
			{"name", "string"}, {"arguments", "table"}, {"arguments_json", "string (raw JSON)"},
		},
	}
})

// LoadError is one problem found while loading a script. Line and Column
// are 1-based and 0 when unknown.
type LoadError struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (e *LoadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Load reads and parses the script at path.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scripted: read script: %w", err)
	}
	return Parse(path, data)
}

// Parse parses and validates a script. name is used in messages (usually the
// file path). Every problem found is reported, each as a *LoadError with the
// line and column when known; several are joined with errors.Join.
func Parse(name string, data []byte) (*Script, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a byte order mark is no key
	var f fileScript
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, decodeError(name, err)
	}
	pos := locate(data)
	v := validator{name: name, pos: pos}
	s := &Script{name: name}
	if len(f.Rule) == 0 {
		v.add(position{}, "the script has no rules: add a [[rule]] with at least one [[rule.reply]]")
	}
	for i, fr := range f.Rule {
		s.rules = append(s.rules, v.rule(i+1, fr))
	}
	if len(v.errs) > 0 {
		return nil, errors.Join(v.errs...)
	}
	return s, nil
}

// decodeError turns a go-toml error into LoadErrors with positions and
// messages in the script's own terms.
func decodeError(name string, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		errs := make([]error, 0, len(strict.Errors))
		for i := range strict.Errors {
			de := &strict.Errors[i]
			line, col := de.Position()
			errs = append(errs, &LoadError{File: name, Line: line, Column: col, Msg: unknownKey(de.Key())})
		}
		return errors.Join(errs...)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return &LoadError{File: name, Line: line, Column: col, Msg: decodeMessage(de)}
	}
	return &LoadError{File: name, Msg: err.Error()}
}

func unknownKey(key toml.Key) string {
	if len(key) == 0 {
		return "unknown key"
	}
	table := strings.Join(key[:len(key)-1], ".")
	msg := fmt.Sprintf("unknown key %q", strings.Join(key, "."))
	if allowed, ok := keysByTable()[table]; ok {
		names := make([]string, len(allowed))
		for i, k := range allowed {
			names[i] = k[0]
		}
		where := "at the top level"
		if table != "" {
			where = "in [[" + table + "]]"
		}
		msg += fmt.Sprintf("; allowed %s: %s", where, strings.Join(names, ", "))
	}
	return msg
}

// mismatchRE is compiled at its first use, not at every start of pixir.
var mismatchRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^cannot decode TOML (.+?) into (?:struct field \S+ of type )?(\S+)$`)
})

func decodeMessage(de *toml.DecodeError) string {
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	key := de.Key()
	if len(key) == 0 {
		return msg
	}
	full := strings.Join(key, ".")
	if m := mismatchRE().FindStringSubmatch(msg); m != nil {
		want := m[2]
		table := strings.Join(key[:len(key)-1], ".")
		for _, k := range keysByTable()[table] {
			if k[0] == key[len(key)-1] {
				want = k[1]
			}
		}
		return fmt.Sprintf("%s: got a TOML %s, want %s", full, m[1], want)
	}
	return fmt.Sprintf("%s: %s", full, msg)
}

type validator struct {
	name string
	pos  positions
	errs []error
}

func (v *validator) add(p position, format string, args ...any) {
	v.errs = append(v.errs, &LoadError{File: v.name, Line: p.line, Column: p.col, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) rule(i int, fr fileRule) rule {
	r := rule{label: fmt.Sprintf("rule %d", i)}
	if fr.Name != "" {
		r.label += fmt.Sprintf(" %q", fr.Name)
	}
	at := v.pos.rule(i)
	if fr.Match != nil {
		re, err := regexp.Compile(*fr.Match)
		if err != nil {
			v.add(v.pos.get(rkey(i, "match"), at), "%s: match is not a valid Go regexp: %v", r.label, err)
		}
		r.match = re
	}
	if len(fr.Reply) == 0 {
		v.add(at, "%s has no reply: add at least one [[rule.reply]] after it", r.label)
	}
	for j, fp := range fr.Reply {
		r.replies = append(r.replies, v.reply(i, j+1, r.label, fp))
	}
	return r
}

func (v *validator) reply(i, j int, ruleLabel string, fp fileReply) reply {
	p := reply{
		label:      fmt.Sprintf("%s reply %d", ruleLabel, j),
		err:        fp.Error,
		hang:       fp.Hang,
		cutOff:     fp.CutOff,
		delay:      time.Duration(fp.DelayMS) * time.Millisecond,
		chunkDelay: time.Duration(fp.ChunkDelayMS) * time.Millisecond,
	}
	at := v.pos.get(pkey(i, j, ""), v.pos.rule(i))
	keyAt := func(k string) position { return v.pos.get(pkey(i, j, k), at) }

	if fp.DelayMS < 0 {
		v.add(keyAt("delay_ms"), "%s: delay_ms must not be negative", p.label)
	}
	if fp.ChunkDelayMS < 0 {
		v.add(keyAt("chunk_delay_ms"), "%s: chunk_delay_ms must not be negative", p.label)
	}
	switch {
	case fp.Together < 0 || fp.Together == 1:
		v.add(keyAt("together"), "%s: together must be at least 2 (how many calls of this reply meet before any goes on), or left out", p.label)
	case fp.Together > 1:
		p.together = newMeeting(fp.Together)
	}
	hasContent := fp.Text != "" || len(fp.ToolCalls) > 0
	switch {
	case fp.Error != "" && fp.Hang:
		v.add(at, "%s: error and hang cannot be combined; keep one", p.label)
	case (fp.Error != "" || fp.Hang) && (hasContent || fp.Reasoning != "" || fp.CutOff):
		v.add(at, "%s: error or hang cannot be combined with text, reasoning, tool_calls or cut_off; move them to another reply", p.label)
	case fp.Error == "" && !fp.Hang && !hasContent:
		v.add(at, "%s is empty: give it text, tool_calls, error or hang", p.label)
	}

	p.text = v.template(keyAt("text"), p.label+" text", fp.Text)
	p.reasoning = v.template(keyAt("reasoning"), p.label+" reasoning", fp.Reasoning)

	for k, fc := range fp.ToolCalls {
		callAt := v.pos.get(ckey(i, j, k+1, ""), at)
		label := fmt.Sprintf("%s tool_calls[%d]", p.label, k+1)
		if fc.Name == "" {
			v.add(callAt, "%s: name is missing: say which tool to call", label)
		}
		var args json.RawMessage
		switch {
		case fc.Arguments != nil && fc.ArgumentsJSON != nil:
			v.add(callAt, "%s: arguments and arguments_json cannot both be set; keep one", label)
		case fc.ArgumentsJSON != nil:
			args = json.RawMessage(*fc.ArgumentsJSON) // verbatim, valid or not
		case fc.Arguments != nil:
			b, err := json.Marshal(fc.Arguments)
			if err != nil {
				v.add(v.pos.get(ckey(i, j, k+1, "arguments"), callAt), "%s: arguments cannot be sent as JSON: %v", label, err)
			}
			args = b
		default:
			args = json.RawMessage(`{}`)
		}
		p.calls = append(p.calls, toolCall{name: fc.Name, args: args})
	}
	return p
}

func (v *validator) template(at position, label, src string) *template.Template {
	if src == "" {
		return nil
	}
	t, err := template.New(label).Option("missingkey=error").Funcs(funcs()).Parse(src)
	if err == nil {
		err = checkFields(t)
	}
	if err != nil {
		v.add(at, "%s: bad template: %v", label, err)
		return nil
	}
	return t
}
