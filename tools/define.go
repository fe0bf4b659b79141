package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/pixir-go/pixir/schemas"
)

// Spec is everything a tool author writes; Define turns it into a Tool.
// A is the argument type: its JSON Schema is reflected from it by the
// generator (`make schemas`; use json tags, `jsonschema:"..."` for
// constraints and `jsonschema_description` for text) and committed as
// schemas/tools/<Name>.json, which the Tool reads; Run only ever sees
// values that passed that schema.
type Spec[A any] struct {
	Name string
	// Schema is the arguments' JSON Schema of a tool that is not a
	// built-in (one defined in a test): a built-in leaves it nil and reads
	// its committed file.
	Schema json.RawMessage
	// Description is what the model reads to decide when and how to call
	// the tool; keep it in an embedded .md file beside the tool.
	Description string
	Posture     Posture
	// Kind is the ACP tool kind, used when Describe leaves it empty.
	Kind Kind
	// Describe presents a call from arguments decoded leniently: fields may
	// be zero or partly filled when the arguments are invalid, so it must
	// cope with that. An empty Title falls back to the tool name. Paths are
	// shown as the model gave them: Describe has no workspace to resolve
	// them against. Optional.
	Describe func(a A) Presentation
	// Run does the work, or with dryRun set says what it would do and
	// changes nothing.
	Run func(ctx context.Context, env Env, a A, dryRun bool) Result
}

// Define makes a Tool from s. Reading and compiling the schema happen on
// first use, not here, so that building the registry costs nothing at
// startup. It panics if s has no Name or no Run: that is a wiring bug.
func Define[A any](s Spec[A]) Tool {
	if s.Run == nil {
		panic("tools.Define: a Spec needs a Name and a Run")
	}
	return &defined[A]{definition: newDefinition(s.Name, s.Description, s.Posture, s.Kind, s.Describe, s.Schema), run: s.Run}
}

// SpecWith is a Spec whose Run needs a dependency D that Env does not
// carry: the workflow ports a run_workflow call runs with, the step a
// report_checkpoint call reports for.
type SpecWith[A, D any] struct {
	Name        string
	Description string
	Posture     Posture
	Kind        Kind
	Describe    func(a A) Presentation
	Schema      json.RawMessage
	// Run is Spec.Run with the dependency the Tool was bound to.
	Run func(ctx context.Context, env Env, dep D, a A, dryRun bool) Result
	// Refused, when set, is the tool's own account of arguments its schema
	// refused: given the schema's "/pointer: message" lines, it returns the
	// invalid_args Failure to report instead of them, which should hold
	// every problem at once (the schema's and those only the tool can see,
	// such as an unknown name), each with its location. Optional: without
	// it the schema's lines are the failure.
	Refused func(dep D, args json.RawMessage, schema []string) *Failure
}

// DefineWith makes a family of Tools that differ only in the dependency
// their Run needs, passed in explicitly: the function it returns binds one
// D. Every Tool of the family shares one definition (name, description,
// schema, validator), so binding one for each call costs an allocation,
// not a schema. It panics if s has no Name or no Run: a wiring bug.
func DefineWith[A, D any](s SpecWith[A, D]) func(dep D) Tool {
	if s.Run == nil {
		panic("tools.DefineWith: a SpecWith needs a Name and a Run")
	}
	def := newDefinition(s.Name, s.Description, s.Posture, s.Kind, s.Describe, s.Schema)
	return func(dep D) Tool {
		t := &defined[A]{definition: def, run: func(ctx context.Context, env Env, a A, dryRun bool) Result {
			return s.Run(ctx, env, dep, a, dryRun)
		}}
		if s.Refused != nil {
			t.refused = func(args json.RawMessage, schema []string) *Failure { return s.Refused(dep, args, schema) }
		}
		return t
	}
}

// definition is what the Tools of one Define or DefineWith share: the
// name, description and presentation, and the schema and its validator,
// made once on first use.
type definition[A any] struct {
	name        string
	description string
	posture     Posture
	kind        Kind
	describe    func(a A) Presentation
	// given is Spec.Schema: nil for a built-in.
	given json.RawMessage

	schemaOnce sync.Once
	schema     json.RawMessage

	validatorOnce sync.Once
	validator     *argValidator
	validatorErr  error
}

func newDefinition[A any](name, description string, posture Posture, kind Kind, describe func(A) Presentation, schema json.RawMessage) *definition[A] {
	if name == "" {
		panic("tools.Define: a Spec needs a Name and a Run")
	}
	return &definition[A]{name: name, description: description, posture: posture, kind: kind, describe: describe, given: schema}
}

// defined is a Tool: a definition and the run it is bound to.
type defined[A any] struct {
	*definition[A]
	run func(ctx context.Context, env Env, a A, dryRun bool) Result
	// refused is SpecWith.Refused bound to the Tool's dependency, or nil.
	refused func(args json.RawMessage, schema []string) *Failure
}

func (t *defined[A]) Name() string        { return t.name }
func (t *defined[A]) Description() string { return t.description }
func (t *defined[A]) Posture() Posture    { return t.posture }

// Schema is the committed schemas/tools/<name>.json (compact), or
// Spec.Schema. A built-in without a committed file is a wiring bug that
// the schemas test reports: it panics saying how to generate the file.
// The bytes are shared by every Tool of the definition and every caller
// (a workflow offers one to each step's child): read them, never modify.
func (t *defined[A]) Schema() json.RawMessage {
	t.schemaOnce.Do(func() {
		if t.given != nil {
			t.schema = slices.Clone(t.given)
			return
		}
		b, ok := schemas.Tool(t.name)
		if !ok {
			panic(fmt.Sprintf("tools: %s has no committed schema (schemas/tools/%s.json): run `make schemas`, or give a tool that is not a built-in its Spec.Schema", t.name, t.name))
		}
		t.schema = b
	})
	return t.schema
}

// Arguments is a new *A: the generator (schemas/generate) reflects the
// committed schema from its type.
func (t *defined[A]) Arguments() any { return new(A) }

func (t *defined[A]) compiled() (*argValidator, error) {
	t.validatorOnce.Do(func() {
		t.validator, t.validatorErr = compileSchema(t.name, t.Schema())
	})
	return t.validator, t.validatorErr
}

func (t *defined[A]) Describe(args json.RawMessage) (p Presentation) {
	fallback := Presentation{Title: t.name, Kind: t.kind}
	if t.describe == nil {
		return fallback
	}
	defer func() {
		if recover() != nil {
			p = fallback
		}
	}()
	var a A
	// Best effort: on a type error json.Unmarshal still fills the fields it
	// could, which is what a title needs.
	_ = json.Unmarshal(args, &a)
	p = t.describe(a)
	if p.Title == "" {
		p.Title = fallback.Title
	}
	if p.Kind == "" {
		p.Kind = fallback.Kind
	}
	return p
}

func (t *defined[A]) DryRun(ctx context.Context, env Env, args json.RawMessage) Result {
	return t.call(ctx, env, args, true)
}

func (t *defined[A]) Run(ctx context.Context, env Env, args json.RawMessage) Result {
	return t.call(ctx, env, args, false)
}

// call validates args and runs the tool, turning a panic into an internal
// failure: one broken tool must not take the process and every Session in
// it down.
func (t *defined[A]) call(ctx context.Context, env Env, args json.RawMessage, dryRun bool) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res = Failed(&Failure{
				Kind:    ErrInternal,
				Message: fmt.Sprintf("tool %s crashed (%v); this is a bug in Pixir, not in your arguments, so retrying the same call will not help", t.name, r),
				Details: map[string]any{"stack": Truncate(string(debug.Stack()), 8<<10)},
			})
		}
	}()
	a, f := t.decode(args)
	if f != nil {
		return Failed(f)
	}
	return t.run(ctx, env, a, dryRun)
}

// CheckArguments implements ArgumentsChecked: what decode finds wrong.
func (t *defined[A]) CheckArguments(args json.RawMessage) *Failure {
	_, f := t.decode(args)
	return f
}

// decode checks args against the schema, reporting every problem at once so
// the model can fix them in one go, and only then unmarshals them into A.
func (t *defined[A]) decode(args json.RawMessage) (A, *Failure) {
	var a A
	v, f := ParseArguments(t.name, args)
	if f != nil {
		return a, f
	}
	raw := bytes.TrimSpace(args)
	val, err := t.compiled()
	if err != nil {
		return a, &Failure{Kind: ErrInternal, Message: err.Error()}
	}
	if lines := val.validate(v); len(lines) > 0 {
		if t.refused != nil {
			if f := t.refused(raw, lines); f != nil {
				return a, f
			}
		}
		return a, &Failure{Kind: ErrInvalidArgs, Message: strings.Join(lines, "\n"), Details: map[string]any{"problems": lines}}
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"arguments match the schema of %s but do not decode (%v); check number sizes and string escapes", t.name, err)}
	}
	return a, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return "null"
}

// DryRunOutput is the output of a successful dry run: one sentence saying
// what Run would do. Edits also carry their Diffs on the Result, so a
// person asked for permission sees the change itself.
type DryRunOutput struct {
	DryRun  bool   `json:"dry_run"`
	Summary string `json:"summary"`
}

// Preview is the Result of a successful dry run.
func Preview(format string, args ...any) Result {
	return OK(DryRunOutput{DryRun: true, Summary: fmt.Sprintf(format, args...)})
}
