package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pixir-go/pixir/internal/suggest"
	"github.com/pixir-go/pixir/tools"
)

// Workflow templates (issue 13): a workflow file that declares parameters,
// found by name (templates.go) and instantiated with arguments.
//
//	description: One line, for catalogues.
//	params:
//	  issue:                       # a name: ^[a-z][a-z0-9_]{0,63}$, not item or index
//	    type: string               # the rest is a JSON Schema of the value
//	    description: The issue id.
//	    pattern: "^[A-Z]+-[0-9]+$"
//	  test_command:
//	    type: string
//	    default: go test ./...     # a parameter without a default is required
//	steps:
//	  - id: plan
//	    task: Plan ${issue}; the tests run with ${test_command}.
//
// ${name} is replaced by the argument's value in the places a value is
// data: a step's task (and prompt), its read_set and write_set, its when
// conditions and a loop's until (path, equals, in, contains), its verify
// commands (run, means: a command line the user gives; their when, as a
// step's), the commit's
// message, exclude patterns, base and required files, and the
// workflow's name. A reference anywhere else (an id, an agent, depends_on)
// is an error of the template: parameters never change the structure.
//
// Values are data, never evaluated. Substitution works on the decoded
// spec, not on the file's text, and in one pass, so a value holding
// newlines, quotes, YAML or another ${…} stays inside the string it was
// put in. In a path pattern a value is a literal path (its glob
// characters escaped) and the pattern must stay inside the workspace; in a
// JSON Pointer it is one token; where a whole condition value is one
// reference (equals: ${verdict}) it is the typed value. A value that holds
// a fan-out binding (${item…}, ${index}) is refused in a task: the fan-out
// would read it as one.

// Param is one declared parameter of a template.
type Param struct {
	Name string `json:"name"`
	// Type is the schema's type when it names one ("string"); "" otherwise.
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	// Default is used when no argument is given; a parameter without one
	// is Required.
	Default  json.RawMessage `json:"default,omitempty"`
	Required bool            `json:"required"`
	// Schema is the JSON Schema the value must match (with default and
	// description as written).
	Schema json.RawMessage `json:"schema"`
}

// Template is a workflow file by name, with its declared parameters.
type Template struct {
	// Name is how it is called: its file name without the extension.
	Name        string
	Description string
	Params      []Param
	// Source is SourceBuiltin or the path of its file.
	Source string

	spec   map[string]any // the workflow as decoded, numbers exact (tree)
	schema *tools.Schema  // the arguments object

	// raw is a plain file's JSON, decoded once into its first instance
	// (decodePlainFile): its tree (spec) is made only if it is
	// instantiated again.
	raw      json.RawMessage
	treeOnce sync.Once

	// first is, for a template without parameters (a plain workflow
	// file), its one instance as ParseTemplate's check decoded it, for the
	// first InstantiateChecked to take: a file of 10,000 steps is then
	// decoded twice (as values, then as a workflow), not three times with
	// two encodings between.
	first atomic.Pointer[Workflow]
}

// SourceBuiltin is the Source of a template built into Pixir.
const SourceBuiltin = "built-in"

// reference finds ${…} in strings: the fan-out's bindingPattern, whose
// inner text (group 1) is trimmed before it is read as a name.
func reference() *regexp.Regexp { return bindingPattern() }

// isRefName says whether the inner text of a ${…} names a parameter: a
// lowercase letter, then lowercase letters, digits or _ (64 at most for a
// declared one). Anything else (${HOME}, ${item.x}) is not a parameter's.
func isRefName(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// isReserved says whether name is a fan-out binding's (item, index).
func isReserved(name string) bool { return name == "item" || name == "index" }

// ParseTemplate reads a workflow file's JSON (DecodeFile) as the template
// name from source. The spec's structure is checked as far as it can be
// without arguments: its keys and types, its parameters (each a schema
// its default matches), and every ${…} reference (declared, and in a
// place that takes values). Check runs on each instance.
func ParseTemplate(name, source string, raw json.RawMessage) (*Template, error) {
	if w, ok := decodePlainFile(raw); ok {
		t := &Template{Name: name, Source: source, raw: raw}
		var err error
		if t.schema, err = argsSchema(name, nil); err != nil {
			return nil, err
		}
		t.first.Store(w)
		return t, nil
	}
	return parseTemplateTree(name, source, raw)
}

// parseTemplateTree is ParseTemplate by the file's tree: a template's way,
// and a plain file's when decodePlainFile is in doubt.
func parseTemplateTree(name, source string, raw json.RawMessage) (*Template, error) {
	doc, err := decodeValue(raw)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a workflow file is an object with steps, not %s", jsonTypeOf(doc))
	}
	t := &Template{Name: name, Source: source, spec: obj}
	if d, ok := obj["description"]; ok {
		s, isString := d.(string)
		if !isString {
			return nil, errors.New("description must be a string (one line, for catalogues)")
		}
		t.Description = strings.TrimSpace(s)
		delete(obj, "description")
	}
	if _, ok := obj["params"]; ok {
		if t.Params, err = parseParams(raw); err != nil {
			return nil, err
		}
		delete(obj, "params")
	}
	if t.schema, err = argsSchema(name, t.Params); err != nil {
		return nil, err
	}
	for _, k := range []string{"template", "args"} {
		if _, ok := obj[k]; ok {
			return nil, fmt.Errorf("a workflow file cannot name a %s: it is one", k)
		}
	}
	if problems := t.checkReferences(); len(problems) > 0 {
		lines := make([]string, len(problems))
		for i, p := range problems {
			lines[i] = p.Message
		}
		return nil, errors.New(strings.Join(lines, "\n"))
	}
	if len(t.Params) == 0 {
		// Without parameters, placeholders and the substitution of no
		// arguments leave the spec as it is: this is its instance.
		w, err := Decode(mustJSON(obj))
		if err != nil {
			return nil, err
		}
		t.first.Store(w)
		return t, nil
	}
	if _, err := Decode(mustJSON(placeholders(obj, t.declared()))); err != nil {
		return nil, err
	}
	return t, nil
}

// tree is the workflow as decoded, numbers exact: spec, made from raw on
// first use for a plain file.
func (t *Template) tree() map[string]any {
	t.treeOnce.Do(func() {
		if t.spec == nil {
			v, err := decodeValue(t.raw)
			if err != nil {
				panic(fmt.Sprintf("workflows: a plain file decoded once no longer decodes: %v", err))
			}
			t.spec = v.(map[string]any)
		}
	})
	return t.spec
}

// parseParams reads the params object of raw in its written order.
func parseParams(raw json.RawMessage) ([]Param, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(top["params"]))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("params must be an object: each key a parameter's name, each value its schema ({type, description, default, …})")
	}
	var params []Param
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("params: %w", err)
		}
		name := tok.(string)
		var schema json.RawMessage
		if err := dec.Decode(&schema); err != nil {
			return nil, fmt.Errorf("params.%s: %w", name, err)
		}
		p, err := parseParam(name, schema)
		if err != nil {
			return nil, err
		}
		params = append(params, p)
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("params: %w", err)
	}
	return params, nil
}

func parseParam(name string, schema json.RawMessage) (Param, error) {
	p := Param{Name: name, Schema: schema}
	if !isRefName(name, 64) || isReserved(name) {
		return p, fmt.Errorf("params: %q is not a parameter name: a lowercase letter, then lowercase letters, digits or _ (item and index are the fan-out's)", name)
	}
	v, err := decodeValue(schema)
	if err != nil {
		return p, fmt.Errorf("params.%s: %w", name, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return p, fmt.Errorf("params.%s must be an object (a JSON Schema: type, description, default, enum, pattern, …), not %s", name, jsonTypeOf(v))
	}
	if t, ok := obj["type"].(string); ok {
		p.Type = t
	}
	if d, ok := obj["description"].(string); ok {
		p.Description = strings.TrimSpace(d)
	}
	s, err := tools.CompileSchema(fmt.Sprintf("params.%s", name), schema)
	if err != nil {
		return p, err
	}
	if d, ok := obj["default"]; ok {
		p.Default = mustJSON(d)
		if lines := s.ValidateValue(d); len(lines) > 0 {
			return p, fmt.Errorf("params.%s: its default does not match its schema: %s", name, strings.Join(lines, "; "))
		}
	} else {
		p.Required = true
	}
	return p, nil
}

// argsSchema is the schema of a template's arguments: an object of its
// parameters, the required ones required, no others.
func argsSchema(name string, params []Param) (*tools.Schema, error) {
	props := map[string]json.RawMessage{}
	required := []string{}
	for _, p := range params {
		props[p.Name] = p.Schema
		if p.Required {
			required = append(required, p.Name)
		}
	}
	doc := map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
	return tools.CompileSchema("the parameters of template "+name, mustJSON(doc))
}

// ArgsSchema is the JSON Schema of the template's arguments.
func (t *Template) ArgsSchema() json.RawMessage {
	props := map[string]json.RawMessage{}
	required := []string{}
	for _, p := range t.Params {
		props[p.Name] = p.Schema
		if p.Required {
			required = append(required, p.Name)
		}
	}
	return mustJSON(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

func (t *Template) declared() map[string]bool {
	names := make(map[string]bool, len(t.Params))
	for _, p := range t.Params {
		names[p.Name] = true
	}
	return names
}

// Param returns the parameter called name.
func (t *Template) Param(name string) (Param, bool) {
	i := slices.IndexFunc(t.Params, func(p Param) bool { return p.Name == name })
	if i < 0 {
		return Param{}, false
	}
	return t.Params[i], true
}

// Signature is the template's call as a line: practice(issue, test_command?).
func (t *Template) Signature() string {
	parts := make([]string, len(t.Params))
	for i, p := range t.Params {
		parts[i] = p.Name
		if !p.Required {
			parts[i] += "?"
		}
	}
	return t.Name + "(" + strings.Join(parts, ", ") + ")"
}

// Instantiate validates args against the template's parameters (defaults
// filled) and returns the workflow with their values substituted,
// decoded strictly and not yet checked (Check). Every problem is an
// invalid_args *tools.Failure, each argument problem a line that starts
// with its JSON Pointer (/issue: …).
func (t *Template) Instantiate(args map[string]any) (*Workflow, error) {
	raw, full, err := t.instantiateJSON(args)
	if err != nil {
		return nil, err
	}
	w, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	w.Template, w.Args = t.Name, full
	w.instantiated = true
	return w, nil
}

// InstantiateChecked is Instantiate, then Check and the agents' check, with
// every problem of the result at once (DecodeAndCheck): for a person's
// file. agents may be nil.
func (t *Template) InstantiateChecked(args map[string]any, agents Agents) (*Workflow, error) {
	if len(t.Params) == 0 && len(args) == 0 {
		if w := t.first.Swap(nil); w != nil { // once: the caller owns it
			w.Template, w.Args = t.Name, json.RawMessage(`{}`)
			w.instantiated = true
			return checkDecoded(w, agents)
		}
	}
	raw, full, err := t.instantiateJSON(args)
	if err != nil {
		return nil, err
	}
	return decodeAndCheck(raw, agents, func(w *Workflow) {
		w.Template, w.Args = t.Name, full
		w.instantiated = true
	})
}

// instantiateJSON is the spec with the arguments substituted, and the
// arguments with their defaults.
func (t *Template) instantiateJSON(args map[string]any) (json.RawMessage, json.RawMessage, error) {
	full := make(map[string]any, len(t.Params))
	maps.Copy(full, args)
	for _, p := range t.Params {
		if _, ok := full[p.Name]; !ok && !p.Required {
			v, _ := decodeValue(p.Default)
			full[p.Name] = v
		}
	}
	full = normalizeNumbers(full).(map[string]any)
	if lines := t.schema.ValidateValue(full); len(lines) > 0 {
		return nil, nil, t.argFailure(lines)
	}
	s := substitution{args: full}
	out := s.object(t.tree(), nil).(map[string]any)
	if len(s.problems) > 0 {
		return nil, nil, t.argFailure(s.problems)
	}
	return mustJSON(out), mustJSON(full), nil
}

// argFailure is the invalid_args failure for argument problems.
func (t *Template) argFailure(lines []string) *tools.Failure {
	problems := make([]Problem, len(lines))
	for i, l := range lines {
		field, _, _ := strings.Cut(l, ":")
		problems[i] = Problem{Code: "invalid_argument", Field: "args" + strings.TrimSuffix(field, "/"), Message: l}
	}
	msg := fmt.Sprintf("the arguments of template %s do not match its parameters %s:\n%s", t.Name, t.Signature(), strings.Join(lines, "\n"))
	return &tools.Failure{Kind: tools.ErrInvalidArgs, Message: msg, Details: ValidationDetails{Problems: problems}}
}

// ParseArgValue reads the text of --set name=text as the parameter's
// type wants it: a string parameter (or one without a type) takes the
// text as it is; any other type reads it as JSON (--set max=3,
// --set paths='["a","b"]').
func (t *Template) ParseArgValue(name, text string) (any, error) {
	p, ok := t.Param(name)
	if !ok {
		names := make([]string, len(t.Params))
		for i, p := range t.Params {
			names[i] = p.Name
		}
		if near := suggest.Nearest(name, names); near != "" {
			return nil, fmt.Errorf("template %s has no parameter %q; did you mean %q? Its parameters: %s", t.Name, name, near, t.Signature())
		}
		return nil, fmt.Errorf("template %s has no parameter %q; its parameters: %s", t.Name, name, t.Signature())
	}
	if p.Type == "string" {
		return text, nil
	}
	if p.Type == "" {
		// Without a type, the text as it is, unless the parameter's schema
		// refuses it and takes it read as JSON: {enum: [1, 2, 3]},
		// {const: true}, {type: [integer, "null"]} could not be given at all.
		if v, err := decodeValue([]byte(text)); err == nil && !p.accepts(text) && p.accepts(v) {
			return v, nil
		}
		return text, nil
	}
	v, err := decodeValue([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("parameter %s is %s: %q is not a JSON %s (%w)", name, p.Type, text, p.Type, err)
	}
	return v, nil
}

// accepts reports whether v is a value of the parameter's schema.
func (p Param) accepts(v any) bool {
	sch, err := tools.CompileSchema("parameter "+p.Name, p.Schema)
	return err == nil && len(sch.ValidateValue(normalizeNumbers(v))) == 0
}

// checkReferences lists the template's bad ${…} references: undeclared
// lowercase names, and declared ones where values are not substituted.
func (t *Template) checkReferences() []Problem {
	declared := t.declared()
	var problems []Problem
	add := func(code string, loc []string, ref, format string, args ...any) {
		p := Problem{Code: code, Value: ref, Message: fmt.Sprintf(format, args...)}
		rest := loc
		if len(loc) >= 2 && loc[0] == "steps" {
			if i, err := strconv.Atoi(loc[1]); err == nil {
				p.Index, rest = &i, loc[2:]
			}
		}
		if len(rest) > 0 {
			p.Field = rest[0]
		}
		problems = append(problems, p)
	}
	var walk func(v any, loc []string)
	walk = func(v any, loc []string) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], append(slices.Clip(loc), k))
			}
		case []any:
			for i, e := range x {
				walk(e, append(slices.Clip(loc), strconv.Itoa(i)))
			}
		case string:
			for _, m := range reference().FindAllStringSubmatch(x, -1) {
				name := strings.TrimSpace(m[1])
				switch {
				case declared[name]:
					if placeOf(loc) == placeNone {
						add("invalid_placeholder", loc, m[0], "%s uses %s, but parameters are substituted only in name, task, read_set, write_set, when, until, verify (run, means, exists, when) and commit (message, commits' message and paths, exclude, base, requires): they never change a workflow's structure", dotted(loc), m[0])
					}
				case !isPlaceholder(name):
					// a fan-out binding (checked with the workflow) or
					// someone else's variable: it stays as it is
				default:
					add("unknown_placeholder", loc, m[0], "%s uses %s, which is not a declared parameter (declared: %s)%s", dotted(loc), m[0], paramList(t.Params), t.meant(name))
				}
			}
		}
	}
	walk(t.tree(), nil)
	return problems
}

// isPlaceholder says whether the inner text of a ${…} is written as one of
// Pixir's: a parameter's name, or such a name followed by .field parts (as
// ${item.title} is), but not a fan-out binding (checked with the
// workflow). Anything else (${HOME}, ${1:-x}) is someone else's.
func isPlaceholder(name string) bool {
	head, fields, _ := strings.Cut(name, ".")
	if isReserved(head) || !isRefName(head, len(head)) {
		return false
	}
	for f := range strings.SplitSeq(fields, ".") {
		if fields != "" && !isRefName(f, len(f)) {
			return false
		}
	}
	return true
}

// meant is what a placeholder that is no parameter was likely meant to be
// ("; did you mean ${item.title}?"), or the placeholders there are.
func (t *Template) meant(name string) string {
	head, fields, dotted := strings.Cut(name, ".")
	names := []string{"item", "index"}
	for _, p := range t.Params {
		names = append(names, p.Name)
	}
	if best := suggest.Nearest(head, names); best != "" && (!dotted || best == "item") {
		if dotted {
			best += "." + fields
		}
		return fmt.Sprintf("; did you mean ${%s}?", best)
	}
	if dotted {
		return "; the placeholders are the declared parameters, and in a step with for_each ${item}, ${item.field} (fields joined by .) and ${index}"
	}
	return "; declare it under params, or in a step with for_each use ${item}, ${item.field} or ${index}"
}

func paramList(ps []Param) string {
	if len(ps) == 0 {
		return "none"
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// dotted renders a location in the spec: steps[2].task.
func dotted(loc []string) string {
	var b strings.Builder
	for i, tok := range loc {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// place is the kind of value at a location of the spec.
type place int

const (
	placeNone    place = iota // parameters are not substituted here
	placeText                 // text: the value as text
	placePattern              // a path pattern: the value a literal path
	placePath                 // a literal path: the value a part of it
	placePointer              // a JSON Pointer: the value one token
	placeValue                // a condition's value: the typed value when whole
	placeValues               // a condition's in: an array value when whole
)

// placeOf says what the string at loc (steps/2/task) is.
func placeOf(loc []string) place {
	n := len(loc)
	switch {
	case n == 1 && loc[0] == "name":
		return placeText
	case n == 3 && loc[0] == "steps" && (loc[2] == "task" || loc[2] == "prompt"):
		return placeText
	case n == 4 && loc[0] == "steps" && (loc[2] == "read_set" || loc[2] == "write_set"):
		return placePattern
	case n == 5 && loc[0] == "steps" && loc[2] == "verify" && (loc[4] == "run" || loc[4] == "means" || loc[4] == "exists"):
		// A verify command is a command line the template's user gives
		// (--set test_command=…): the value is its text, run in the
		// child's sandbox like the child's own commands.
		return placeText
	case n == 2 && loc[0] == "commit" && loc[1] == "message":
		return placeText
	case n == 3 && loc[0] == "commit" && loc[1] == "exclude":
		return placePattern
	case n == 4 && loc[0] == "commit" && loc[1] == "commits" && loc[3] == "message":
		return placeText
	case n == 5 && loc[0] == "commit" && loc[1] == "commits" && loc[3] == "paths":
		return placePattern
	case n == 2 && loc[0] == "commit" && loc[1] == "base":
		// A branch name, as text: validation refuses what is not one.
		return placeText
	case n == 3 && loc[0] == "commit" && loc[1] == "requires":
		return placePath
	case n >= 5 && loc[0] == "steps" && loc[2] == "verify" && loc[4] == "when":
		return conditionPlace(loc[5:])
	case n >= 3 && loc[0] == "steps" && loc[2] == "when":
		return conditionPlace(loc[3:])
	case n >= 3 && loc[0] == "loops" && loc[2] == "until":
		return conditionPlace(loc[3:])
	}
	return placeNone
}

// conditionPlace is the place of rest inside a condition (or a list of
// conditions).
func conditionPlace(rest []string) place {
	for len(rest) > 0 {
		tok := rest[0]
		if _, err := strconv.Atoi(tok); err == nil { // an element of a list of conditions
			rest = rest[1:]
			continue
		}
		switch tok {
		case "all", "any":
			rest = rest[1:]
			continue
		case "not":
			rest = rest[1:]
			continue
		case "path":
			if len(rest) == 1 {
				return placePointer
			}
		case "equals", "contains":
			if len(rest) == 1 {
				return placeValue
			}
			return placeNone // inside a structured value: data as written
		case "in":
			switch len(rest) {
			case 1:
				return placeValues
			case 2:
				return placeValue
			}
		}
		return placeNone
	}
	return placeNone
}

// substitution puts arguments into a copy of a spec.
type substitution struct {
	args     map[string]any
	problems []string
}

func (s *substitution) object(v any, loc []string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out[k] = s.object(x[k], append(slices.Clip(loc), k))
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for i, e := range x {
			eloc := append(slices.Clip(loc), strconv.Itoa(i))
			if str, ok := e.(string); ok && placeOf(eloc) == placePattern {
				for _, p := range s.pattern(str, eloc) {
					out = append(out, p)
				}
				continue
			}
			out = append(out, s.object(e, eloc))
		}
		return out
	case string:
		return s.str(x, loc)
	}
	return v
}

// whole is the parameter s consists of, if it is one reference and
// nothing else.
func (s *substitution) whole(str string) (string, bool) {
	m := reference().FindStringSubmatchIndex(str)
	if m == nil || m[0] != 0 || m[1] != len(str) {
		return "", false
	}
	name := strings.TrimSpace(str[m[2]:m[3]])
	_, ok := s.args[name]
	return name, ok
}

func (s *substitution) str(str string, loc []string) any {
	switch placeOf(loc) {
	case placeText:
		return s.text(str, loc, true)
	case placePointer:
		return s.replace(str, loc, func(name string, v any) (string, bool) {
			tok, ok := scalarText(v)
			if !ok {
				s.problemf(name, "is used in the JSON Pointer %s, which needs a string or a number, not %s", dotted(loc), jsonTypeOf(v))
			}
			return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok), ok
		})
	case placePath:
		return s.path(str, loc)
	case placeValue, placeValues:
		if name, ok := s.whole(str); ok {
			v := s.args[name]
			if _, isArray := v.([]any); placeOf(loc) == placeValues && !isArray {
				s.problemf(name, "is the whole of %s, which needs an array, not %s", dotted(loc), jsonTypeOf(v))
			}
			return v
		}
		return s.text(str, loc, false)
	}
	return str
}

// text substitutes references in text, each value as text.
func (s *substitution) text(str string, loc []string, task bool) string {
	return s.replace(str, loc, func(name string, v any) (string, bool) {
		t := textOf(v)
		if task {
			for _, m := range reference().FindAllStringSubmatch(t, -1) {
				if inner := strings.TrimSpace(m[1]); itemBinding().MatchString(inner) || badBinding().MatchString(inner) {
					s.problemf(name, "holds %s, which the workflow would read as a fan-out binding in %s; a value cannot carry bindings", m[0], dotted(loc))
					return "", false
				}
			}
		}
		return t, true
	})
}

// replace replaces every reference to an argument in str, in one pass:
// what a value brings is never read again.
func (s *substitution) replace(str string, _ []string, value func(name string, v any) (string, bool)) string {
	return s.replaceBefore(str, func(name string, v any, _ string) (string, bool) { return value(name, v) })
}

// replaceBefore is replace whose value also sees the text of str after
// the reference (as written, before any replacing).
func (s *substitution) replaceBefore(str string, value func(name string, v any, rest string) (string, bool)) string {
	var b strings.Builder
	last := 0
	for _, at := range reference().FindAllStringIndex(str, -1) {
		b.WriteString(str[last:at[0]])
		last = at[1]
		ref := str[at[0]:at[1]]
		out := ref
		name := strings.TrimSpace(ref[2 : len(ref)-1])
		if v, ok := s.args[name]; ok {
			if got, ok := value(name, v, str[at[1]:]); ok {
				out = got
			}
		}
		b.WriteString(out)
	}
	b.WriteString(str[last:])
	return b.String()
}

// pattern substitutes references in a read_set or write_set pattern: a
// pattern that is one reference to an array becomes a literal path per
// element; elsewhere a value is a literal path inside the pattern. Each
// result must stay a valid pattern inside the workspace.
func (s *substitution) pattern(p string, loc []string) []string {
	var results []string
	bad := false
	if name, ok := s.whole(p); ok {
		if arr, isArray := s.args[name].([]any); isArray {
			for _, e := range arr {
				str, isString := e.(string)
				if !isString {
					s.problemf(name, "is the whole of %s, whose elements must be paths (strings), not %s", dotted(loc), jsonTypeOf(e))
					return nil
				}
				if why := pathValueProblem(str); why != "" {
					s.problemf(name, "is the whole of %s, whose element %q %s", dotted(loc), str, why)
					return nil
				}
				results = append(results, literalPath(str))
			}
			for _, r := range results {
				bad = s.checkPattern(name, r, loc) || bad
			}
			if bad {
				return nil
			}
			return results
		}
	}
	var used []string
	out := s.replaceBefore(p, func(name string, v any, rest string) (string, bool) {
		t, ok := s.pathValue(name, v, "path pattern", loc)
		if !ok {
			return "", false
		}
		used = append(used, name)
		return valueInPattern(t, rest), true
	})
	if len(used) == 0 {
		return []string{p}
	}
	if s.checkPattern(strings.Join(used, ", "), out, loc) {
		return nil
	}
	return []string{out}
}

// path substitutes references in a literal path (commit.requires) by the
// rule of a pattern (pathValueProblem, valueInPath): a folder value's
// trailing "/" before the path's own is the folder, a leading "./" is
// read as meant, a value that would make an empty or "." segment is
// refused here with where it went. What the whole path must be (inside
// the workspace, no wildcard) is validation's, after.
func (s *substitution) path(p string, loc []string) string {
	return s.replaceBefore(p, func(name string, v any, rest string) (string, bool) {
		t, ok := s.pathValue(name, v, "path", loc)
		if !ok {
			return "", false
		}
		return valueInPath(t, rest), true
	})
}

// pathValue is the text of the value v of name substituted into the
// path or path pattern (what) at loc, or false when it cannot go there
// (not a string or number, or a string pathValueProblem refuses), with
// the problem noted.
func (s *substitution) pathValue(name string, v any, what string, loc []string) (string, bool) {
	t, ok := scalarText(v)
	if !ok {
		s.problemf(name, "is used in the %s %s, which needs a string, not %s", what, dotted(loc), jsonTypeOf(v))
		return "", false
	}
	if _, isNumber := v.(json.Number); !isNumber {
		if why := pathValueProblem(t); why != "" {
			s.problemf(name, "is %q in the %s %s, which %s", t, what, dotted(loc), why)
			return "", false
		}
	}
	return t, true
}

// checkPattern reports a pattern that a value made unusable; true if it did.
func (s *substitution) checkPattern(name, p string, loc []string) bool {
	if strings.ContainsAny(p, "\n\r\x00") {
		s.problemf(name, "puts a control character into the path pattern %s", dotted(loc))
		return true
	}
	if why := patternProblem(normalizePatterns([]string{p})[0]); why != "" {
		s.problemf(name, "makes %s the path pattern %q, which is not allowed: %s", dotted(loc), p, why)
		return true
	}
	return false
}

func (s *substitution) problemf(name, format string, args ...any) {
	s.problems = append(s.problems, "/"+name+": "+fmt.Sprintf(format, args...))
}

// scalarText is a string or a number as text.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	}
	return "", false
}

// placeholders is spec with each whole-value reference in a condition
// replaced by a value of the right shape, so that the spec decodes before
// it has arguments.
func placeholders(spec map[string]any, declared map[string]bool) map[string]any {
	var walk func(v any, loc []string) any
	walk = func(v any, loc []string) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e, append(slices.Clip(loc), k))
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e, append(slices.Clip(loc), strconv.Itoa(i)))
			}
			return out
		case string:
			m := reference().FindStringSubmatchIndex(x)
			if m == nil || m[0] != 0 || m[1] != len(x) || !declared[strings.TrimSpace(x[m[2]:m[3]])] {
				return x
			}
			switch placeOf(loc) {
			case placeValue:
				return nil
			case placeValues:
				return []any{}
			}
		}
		return v
	}
	return walk(spec, nil).(map[string]any)
}

// normalizeNumbers turns float64 and other Go numbers a caller put into
// arguments into json.Number, as decodeValue makes them, so the schema
// and the substitution see one kind of number.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeNumbers(e)
		}
		return out
	case float64, float32, int, int64, int32, uint, uint64:
		return json.Number(fmt.Sprint(x))
	}
	return v
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("workflows: %v", err))
	}
	return b
}
