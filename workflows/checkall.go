package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pixir-go/pixir/internal/suggest"
	"github.com/pixir-go/pixir/tools"
)

// DecodeAndCheck reads a spec file's JSON and reports every problem of it
// at once, each with its location: unknown keys (with the step's index
// and the nearest known key), the validation problems of Check, and the
// steps whose agent agents does not know. The run_workflow tool stops at
// the first decoding problem, as the model fixes one thing at a time; a
// person editing a file wants the whole list. Every problem of the spec is
// one invalid_args *tools.Failure; agents may be nil (no agent check).
func DecodeAndCheck(raw json.RawMessage, agents Agents) (*Workflow, error) {
	return decodeAndCheck(raw, agents, nil)
}

// decodeAndCheck is DecodeAndCheck; prepare, when set, fills a decoded
// workflow before it is checked.
func decodeAndCheck(raw json.RawMessage, agents Agents, prepare func(*Workflow)) (*Workflow, error) {
	w, problems, err := specProblems(raw, agents, prepare)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, problemsFailure(inFileOrder(problems))
	}
	return w, nil
}

// specProblems decodes raw and lists every problem of it: its unknown keys
// and values of the wrong type (each left out, so the rest is still
// checked), then Check's problems and the agents'. The error is for what
// is no problem of a spec's parts: raw is no object (the decoder's
// message), or the agents could not be checked (depth, shutdown).
func specProblems(raw json.RawMessage, agents Agents, prepare func(*Workflow)) (*Workflow, []Problem, error) {
	w, err := Decode(raw)
	var problems []Problem
	var wrong map[fieldAt]bool
	if err != nil {
		unknown, stripped := unknownKeys(raw)
		if stripped == nil {
			return nil, nil, err // not an object: the decoder's message is the one
		}
		var typed []Problem
		typed, wrong, stripped = typeProblems(stripped)
		problems = append(unknown, typed...)
		// Without the unknown keys and the wrongly typed values, the rest
		// can still be checked.
		if w, err = Decode(stripped); err != nil {
			return nil, append(problems, failureProblems(err)...), nil
		}
	}
	if prepare != nil {
		prepare(w)
	}
	problems, f := appendChecked(problems, w, agents, wrong)
	if f != nil {
		return nil, nil, f
	}
	return w, problems, nil
}

// checkedProblems is for a decoded spec what appendChecked returns, as one
// error: nil, the failure that is no problem of the spec, or the problems.
func checkedProblems(w *Workflow, agents Agents, problems []Problem, left map[fieldAt]bool) error {
	problems, f := appendChecked(problems, w, agents, left)
	switch {
	case f != nil:
		return f
	case len(problems) > 0:
		return problemsFailure(inFileOrder(problems))
	}
	return nil
}

// appendChecked appends to problems those Check and the agents' check find
// in w, but those of a field left out (a value of the wrong type: its
// absence is no second problem). The failure is one that is no problem of
// the spec (the agents could not be checked).
func appendChecked(problems []Problem, w *Workflow, agents Agents, left map[fieldAt]bool) ([]Problem, *tools.Failure) {
	var found []Problem
	if err := Check(w); err != nil {
		found = failureProblems(err)
	}
	if agents != nil {
		if f := checkAgents(agents, w); f != nil {
			if f.Kind != tools.ErrInvalidArgs {
				return nil, f
			}
			found = append(found, failureProblems(f)...)
		}
	}
	for _, p := range found {
		if !left[p.at()] {
			problems = append(problems, p)
		}
	}
	return problems, nil
}

// checkDecoded checks a decoded workflow and its agents.
func checkDecoded(w *Workflow, agents Agents) (*Workflow, error) {
	if err := checkedProblems(w, agents, nil, nil); err != nil {
		return nil, err
	}
	return w, nil
}

// fieldAt is where a problem is: a field of the workflow (step -1) or of
// one of its steps, the field named as its key (when[0].step is when).
type fieldAt struct {
	step  int
	field string
}

func (p Problem) at() fieldAt {
	field := p.Field
	if i := strings.IndexAny(field, ".["); i >= 0 {
		field = field[:i]
	}
	return fieldAt{problemIndex(p), field}
}

// inFileOrder sorts problems as a file reads: the workflow's own problems,
// then step by step.
func inFileOrder(problems []Problem) []Problem {
	slices.SortStableFunc(problems, func(a, b Problem) int { return problemIndex(a) - problemIndex(b) })
	return problems
}

func problemIndex(p Problem) int {
	if p.Index == nil {
		return -1
	}
	return *p.Index
}

// failureProblems are the problems an invalid_args failure lists.
func failureProblems(err error) []Problem {
	f := tools.AsFailure(err)
	if d, ok := f.Details.(ValidationDetails); ok {
		return d.Problems
	}
	return []Problem{{Code: "malformed_spec", Message: f.Message}}
}

// typeProblems decodes each field of the spec and of its steps alone, to
// say which hold a value of the wrong type, with their step (the decoder
// of the whole spec names the field, not the step). It returns the spec
// without those values, and where they were.
func typeProblems(raw json.RawMessage) ([]Problem, map[fieldAt]bool, json.RawMessage) {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil, nil, raw
	}
	var problems []Problem
	left := map[fieldAt]bool{}
	for _, k := range sortedKeys(top) {
		if k == "steps" {
			continue
		}
		var w Workflow
		if err := json.Unmarshal(singleKey(k, top[k]), &w); err != nil {
			problems = append(problems, Problem{Code: "malformed_spec", Field: k, Message: typeMessage(k, err)})
			left[fieldAt{-1, k}] = true
			delete(top, k)
		}
	}
	var steps []map[string]json.RawMessage
	if b, ok := top["steps"]; ok && json.Unmarshal(b, &steps) == nil {
		for i, st := range steps {
			label, id := stepLabel(i, st)
			for _, k := range sortedKeys(st) {
				var one Step
				if err := json.Unmarshal(singleKey(k, st[k]), &one); err != nil {
					idx := i
					problems = append(problems, Problem{Code: "malformed_spec", Index: &idx, Step: id, Field: k,
						Message: label + ": " + typeMessage(k, err)})
					left[fieldAt{i, k}] = true
					delete(st, k)
				}
			}
		}
		if b, err := json.Marshal(steps); err == nil {
			top["steps"] = b
		}
	}
	stripped, err := json.Marshal(top)
	if err != nil {
		return nil, nil, raw
	}
	return problems, left, stripped
}

// stepLabel is how a problem names step i of a spec: its index, and its id
// where it has one (steps[2] "build"); id is that id, or "".
func stepLabel(i int, st map[string]json.RawMessage) (label, id string) {
	label = fmt.Sprintf("steps[%d]", i)
	if json.Unmarshal(st["id"], &id) == nil && id != "" {
		label += fmt.Sprintf(" %q", id)
	}
	return label, id
}

// singleKey is the JSON object {k: v}.
func singleKey(k string, v json.RawMessage) []byte {
	b, _ := json.Marshal(map[string]json.RawMessage{k: v})
	return b
}

// typeMessage says what is wrong with the value of key k.
func typeMessage(k string, err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		field := te.Field
		if field == "" {
			field = k
		}
		return fmt.Sprintf("%s: got JSON %s, want %s", field, te.Value, jsonTypeName(te.Type))
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, k) {
		return msg
	}
	return k + ": " + msg
}

// unknownKeys finds the keys of the spec and of its steps that are not
// fields, and returns the spec without them.
func unknownKeys(raw json.RawMessage) ([]Problem, json.RawMessage) {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil, nil
	}
	var problems []Problem
	for _, k := range sortedKeys(top) {
		if known := jsonKeys(reflect.TypeFor[Workflow]()); !slices.Contains(known, k) {
			problems = append(problems, Problem{Code: "unknown_field", Field: k,
				Message: fmt.Sprintf("unknown key %q in the workflow%s", k, nearKey(k, known, "it has"))})
			delete(top, k)
		}
	}
	var steps []map[string]json.RawMessage
	if s, ok := top["steps"]; ok && json.Unmarshal(s, &steps) == nil {
		known := jsonKeys(reflect.TypeFor[Step]())
		for i, st := range steps {
			label, id := stepLabel(i, st)
			for _, k := range sortedKeys(st) {
				if !slices.Contains(known, k) {
					idx := i
					problems = append(problems, Problem{Code: "unknown_field", Index: &idx, Step: id, Field: k,
						Message: fmt.Sprintf("%s: unknown key %q%s", label, k, nearKey(k, known, "a step has"))})
					delete(st, k)
				}
			}
		}
		if b, err := json.Marshal(steps); err == nil {
			top["steps"] = b
		}
	}
	stripped, err := json.Marshal(top)
	if err != nil {
		return nil, nil
	}
	return problems, stripped
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// jsonKeys are the JSON names of t's fields, in declaration order.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && f.IsExported() {
			keys = append(keys, name)
		}
	}
	return keys
}

// nearKey is "; did you mean X?" when a known key is a likely typo of k
// (or the only key k starts), otherwise the list of known keys.
func nearKey(k string, known []string, has string) string {
	best := suggest.Nearest(k, known)
	if best == "" {
		return fmt.Sprintf(" (%s %s)", has, strings.Join(known, ", "))
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// schemaProblems are the schema's "/pointer: message" lines about raw
// that none of have is at (the same field of the workflow, of the same
// step, or of the same loop), as problems with their location.
func schemaProblems(raw json.RawMessage, lines []string, have []Problem) []Problem {
	var spec struct {
		Steps []struct {
			ID any `json:"id"`
		} `json:"steps"`
		Loops []struct {
			ID any `json:"id"`
		} `json:"loops"`
	}
	_ = json.Unmarshal(raw, &spec)
	covered := map[fieldAt]bool{}
	loops := map[string]bool{}
	for _, p := range have {
		covered[p.at()] = true
		if p.Loop != "" {
			loops[p.Loop] = true
		}
	}
	var out []Problem
	for _, line := range lines {
		ptr, msg, _ := strings.Cut(line, ": ")
		segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
		if segs[0] == "" {
			segs = nil
		}
		for i, s := range segs {
			segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
		}
		p := Problem{Code: "malformed_spec"}
		step := -1
		label, rest := "", segs
		switch {
		case len(segs) >= 2 && (segs[0] == "steps" || segs[0] == "loops"):
			n, err := strconv.Atoi(segs[1])
			if err != nil {
				break
			}
			rest = segs[2:]
			if segs[0] == "steps" {
				step = n
				p.Index = &n
				label = fmt.Sprintf("steps[%d]", n)
				if n < len(spec.Steps) {
					if id, ok := spec.Steps[n].ID.(string); ok && id != "" {
						p.Step = id
						label += fmt.Sprintf(" %q", id)
					}
				}
				break
			}
			label = fmt.Sprintf("loops[%d]", n)
			if n < len(spec.Loops) {
				if id, ok := spec.Loops[n].ID.(string); ok && id != "" {
					if loops[id] {
						continue // the loop's own check says it
					}
					p.Loop = id
					label += fmt.Sprintf(" %q", id)
				}
			}
		}
		// The fields the line is about: the first under its step (or the
		// workflow), or those its message names on the object itself.
		var fields []string
		if len(rest) > 0 {
			fields = []string{rest[0]}
		} else {
			fields = quotedNames(msg)
		}
		if len(fields) > 0 && !slices.ContainsFunc(fields, func(f string) bool { return !covered[fieldAt{step, f}] }) {
			continue
		}
		if len(fields) > 0 {
			p.Field = fields[0]
		}
		where := pathOf(rest)
		switch {
		case label != "" && where != "":
			p.Message = label + ": " + where + ": " + msg
		case label != "":
			p.Message = label + ": " + msg
		case where != "":
			p.Message = where + ": " + msg
		default:
			p.Message = "the workflow: " + msg
		}
		out = append(out, p)
	}
	return out
}

// quotedNames are the names a schema message quotes ('a', 'b').
func quotedNames(msg string) []string {
	if !strings.HasPrefix(msg, "additional propert") && !strings.HasPrefix(msg, "missing propert") {
		return nil
	}
	var names []string
	for part := range strings.SplitSeq(msg, "'") {
		names = append(names, part)
	}
	var quoted []string
	for i := 1; i < len(names); i += 2 {
		quoted = append(quoted, names[i])
	}
	return quoted
}

// pathOf writes pointer segments as a spec's messages do: when[0].step.
func pathOf(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		if _, err := strconv.Atoi(s); err == nil {
			fmt.Fprintf(&b, "[%s]", s)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// DecodeAndCheckFile is DecodeAndCheck for a workflow file without
// params: a ${…} in it written as one of Pixir's placeholders that is none
// (${itm.title}) is a problem too, with its place and what was likely
// meant. (A run_workflow call's are left as they are: its task may hold a
// shell's variables, and nothing substitutes parameters in it.)
func DecodeAndCheckFile(raw json.RawMessage, agents Agents) (*Workflow, error) {
	raw, described := withoutDescription(raw)
	w, problems, err := specProblems(raw, agents, nil)
	if err != nil {
		return nil, err
	}
	problems = append(described, problems...)
	if v, err := decodeValue(raw); err == nil {
		if obj, ok := v.(map[string]any); ok {
			problems = append(problems, (&Template{spec: obj}).checkReferences()...)
		}
	}
	if len(problems) > 0 {
		return nil, problemsFailure(inFileOrder(problems))
	}
	return w, nil
}

// TemplateDecodeProblems reports every problem of a template file's spec
// (one with params) that does not decode before it has arguments: its
// unknown keys and its values of the wrong type, and with them, in the
// same go, its undeclared or misplaced ${…} and what the check of its
// instance finds in the rest (made with args, the --set texts by name,
// and the defaults; agents may be nil), each with its location, as
// DecodeAndCheckFile reports a plain file's. A field the decoding or a
// reference faults is left out of that instance, so nothing is said of it
// twice; arguments that do not fit leave the instance's problems for
// when the template decodes. nil when it decodes (or is no template:
// ParseTemplate says why).
func TemplateDecodeProblems(raw json.RawMessage, args map[string]string, agents Agents) error {
	obj, params, ok := templateParts(raw)
	if !ok {
		return nil // ParseTemplate says why
	}
	delete(obj, "params")
	delete(obj, "description")
	t := &Template{spec: obj, Params: params}
	spec := mustJSON(placeholders(obj, t.declared()))
	if _, err := Decode(spec); err == nil {
		return nil
	}
	unknown, stripped := unknownKeys(spec)
	if stripped == nil {
		return nil
	}
	typed, _, _ := typeProblems(stripped)
	problems := append(unknown, typed...)
	if len(problems) == 0 {
		return nil
	}
	gone := map[fieldAt]bool{}
	for _, p := range problems {
		gone[p.at()] = true
	}
	for _, p := range t.checkReferences() {
		if !gone[p.at()] {
			problems = append(problems, p)
		}
	}
	for _, p := range problems {
		gone[p.at()] = true
	}
	problems = append(problems, t.instanceProblems(gone, args, agents)...)
	return problemsFailure(inFileOrder(problems))
}

// instanceProblems are the problems of t's instance without the fields
// gone (each left out; nothing is said of them), made with args (texts by
// parameter) and the defaults: none when the arguments do not fit or the
// rest does not decode.
func (t *Template) instanceProblems(gone map[fieldAt]bool, args map[string]string, agents Agents) []Problem {
	spec := maps.Clone(t.spec)
	if steps, ok := spec["steps"].([]any); ok {
		steps = slices.Clone(steps)
		for i, st := range steps {
			if m, ok := st.(map[string]any); ok {
				m = maps.Clone(m)
				maps.DeleteFunc(m, func(k string, _ any) bool { return gone[fieldAt{i, k}] })
				steps[i] = m
			}
		}
		spec["steps"] = steps
	}
	maps.DeleteFunc(spec, func(k string, _ any) bool { return gone[fieldAt{-1, k}] })
	u := &Template{Name: t.Name, spec: spec, Params: t.Params}
	var err error
	if u.schema, err = argsSchema(t.Name, t.Params); err != nil {
		return nil
	}
	values := map[string]any{}
	for name, text := range args {
		v, err := u.ParseArgValue(name, text)
		if err != nil {
			return nil
		}
		values[name] = v
	}
	raw, _, err := u.instantiateJSON(values)
	if err != nil {
		return nil
	}
	w, err := Decode(raw)
	if err != nil {
		return nil
	}
	problems, f := appendChecked(nil, w, agents, gone)
	if f != nil {
		return nil
	}
	return problems
}

// templateParts is a template file's spec (a copy, to change) and its
// parameters; ok is false when either does not read.
func templateParts(raw json.RawMessage) (map[string]any, []Param, bool) {
	v, err := decodeValue(raw)
	obj, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, nil, false
	}
	params, err := parseParams(raw)
	return maps.Clone(obj), params, err == nil
}

// withoutDescription is a file's spec without its description: a file may
// have one (its line in catalogues, never substituted), a spec may not, and
// the template reader takes it out the same way before it checks the rest.
// A description that is not a string is the one problem it has.
func withoutDescription(raw json.RawMessage) (json.RawMessage, []Problem) {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return raw, nil
	}
	d, ok := top["description"]
	if !ok {
		return raw, nil
	}
	var problems []Problem
	if v, err := decodeValue(d); err != nil || jsonTypeOf(v) != "string" {
		problems = append(problems, Problem{Code: "malformed_spec", Field: "description",
			Message: "description must be a string (one line, for catalogues)"})
	}
	delete(top, "description")
	stripped, err := json.Marshal(top)
	if err != nil {
		return raw, problems
	}
	return stripped, problems
}
