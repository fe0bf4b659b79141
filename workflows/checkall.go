package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
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
	w, err := Decode(raw)
	var problems []Problem
	if err != nil {
		unknown, stripped := unknownKeys(raw)
		if stripped == nil {
			return nil, err // not an object: the decoder's message is the one
		}
		problems = unknown
		// Without the unknown keys, the rest can still be checked.
		if w, err = Decode(stripped); err != nil {
			if typed := stepTypeProblems(stripped); len(typed) > 0 {
				return nil, problemsFailure(inFileOrder(append(problems, typed...)))
			}
			return nil, problemsFailure(inFileOrder(append(problems, failureProblems(err)...)))
		}
	}
	if prepare != nil {
		prepare(w)
	}
	return checkDecoded(w, agents, problems)
}

// checkDecoded checks a decoded workflow and its agents, problems found
// while decoding it first.
func checkDecoded(w *Workflow, agents Agents, problems []Problem) (*Workflow, error) {
	if err := Check(w); err != nil {
		problems = append(problems, failureProblems(err)...)
	}
	if agents != nil {
		if f := checkAgents(agents, w); f != nil {
			if f.Kind != tools.ErrInvalidArgs {
				return nil, f
			}
			problems = append(problems, failureProblems(f)...)
		}
	}
	if len(problems) == 0 {
		return w, nil
	}
	return nil, problemsFailure(inFileOrder(problems))
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

// stepTypeProblems decodes each step alone, to say which steps hold a
// value of the wrong type (the decoder of the whole spec names the field,
// not the step).
func stepTypeProblems(raw json.RawMessage) []Problem {
	var top struct {
		Steps []json.RawMessage `json:"steps"`
	}
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	var problems []Problem
	for i, b := range top.Steps {
		var st Step
		err := json.Unmarshal(b, &st)
		if err == nil {
			continue
		}
		var id struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(b, &id)
		label := fmt.Sprintf("steps[%d]", i)
		if id.ID != "" {
			label += fmt.Sprintf(" %q", id.ID)
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			msg = fmt.Sprintf("%s: got JSON %s, want %s", te.Field, te.Value, jsonTypeName(te.Type))
		}
		idx := i
		problems = append(problems, Problem{Code: "malformed_spec", Index: &idx, Step: id.ID, Message: label + ": " + msg})
	}
	return problems
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
			label := fmt.Sprintf("steps[%d]", i)
			var id string
			if json.Unmarshal(st["id"], &id) == nil && id != "" {
				label += fmt.Sprintf(" %q", id)
			}
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
