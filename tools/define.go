package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	reflector "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Spec is everything a tool author writes; Define turns it into a Tool.
// A is the argument type: its JSON Schema is reflected from it (use json
// tags, `jsonschema:"..."` for constraints and `jsonschema_description`
// for text), and Run only ever sees values that passed that schema.
type Spec[A any] struct {
	Name string
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

// Define makes a Tool from s. Schema reflection and compilation happen on
// first use, not here, so that building the registry costs nothing at
// startup. It panics if s has no Name or no Run: that is a wiring bug.
func Define[A any](s Spec[A]) Tool {
	if s.Name == "" || s.Run == nil {
		panic("tools.Define: a Spec needs a Name and a Run")
	}
	return &defined[A]{spec: s}
}

type defined[A any] struct {
	spec Spec[A]

	schemaOnce sync.Once
	schema     json.RawMessage

	validatorOnce sync.Once
	validator     *jsonschema.Schema
	validatorErr  error
}

func (t *defined[A]) Name() string        { return t.spec.Name }
func (t *defined[A]) Description() string { return t.spec.Description }
func (t *defined[A]) Posture() Posture    { return t.spec.Posture }

func (t *defined[A]) Schema() json.RawMessage {
	t.schemaOnce.Do(func() {
		// Expanded, unreferenced and anonymous: the root is the arguments
		// object itself, with no $defs, $ref or $id for a provider to trip on.
		r := reflector.Reflector{ExpandedStruct: true, DoNotReference: true, Anonymous: true}
		s := r.Reflect(new(A))
		// Some providers reject $schema; the compiler below is told the
		// dialect (2020-12) instead.
		s.Version = ""
		b, err := json.Marshal(s)
		if err != nil {
			panic(fmt.Sprintf("tools: schema of %s does not marshal: %v", t.spec.Name, err))
		}
		t.schema = b
	})
	// A copy: the cached bytes must survive a caller that edits its schema.
	return slices.Clone(t.schema)
}

func (t *defined[A]) compiled() (*jsonschema.Schema, error) {
	t.validatorOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(t.Schema()))
		if err != nil {
			t.validatorErr = err
			return
		}
		url := "mem:///tools/" + t.spec.Name + ".json"
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		if err := c.AddResource(url, doc); err != nil {
			t.validatorErr = err
			return
		}
		t.validator, t.validatorErr = c.Compile(url)
	})
	return t.validator, t.validatorErr
}

func (t *defined[A]) Describe(args json.RawMessage) (p Presentation) {
	fallback := Presentation{Title: t.spec.Name, Kind: t.spec.Kind}
	if t.spec.Describe == nil {
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
	p = t.spec.Describe(a)
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
				Message: fmt.Sprintf("tool %s crashed (%v); this is a bug in Pixir, not in your arguments, so retrying the same call will not help", t.spec.Name, r),
				Details: map[string]any{"stack": Truncate(string(debug.Stack()), 8<<10)},
			})
		}
	}()
	a, f := t.decode(args)
	if f != nil {
		return Failed(f)
	}
	return t.spec.Run(ctx, env, a, dryRun)
}

// decode checks args against the schema, reporting every problem at once so
// the model can fix them in one go, and only then unmarshals them into A.
func (t *defined[A]) decode(args json.RawMessage) (A, *Failure) {
	var a A
	raw := bytes.TrimSpace(args)
	if len(raw) == 0 || string(raw) == "null" {
		return a, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"arguments are missing; call %s with a JSON object that matches its schema", t.spec.Name)}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return a, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"arguments are not valid JSON (%v); send one JSON object that matches the schema of %s", err, t.spec.Name)}
	}
	if _, ok := v.(map[string]any); !ok {
		return a, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"arguments must be a JSON object, got %s; send one JSON object that matches the schema of %s", jsonType(v), t.spec.Name)}
	}
	sch, err := t.compiled()
	if err != nil {
		return a, &Failure{Kind: ErrInternal, Message: fmt.Sprintf("the schema of %s does not compile: %v", t.spec.Name, err)}
	}
	if err := sch.Validate(v); err != nil {
		ve, ok := errors.AsType[*jsonschema.ValidationError](err)
		if !ok {
			return a, &Failure{Kind: ErrInternal, Message: fmt.Sprintf("validating arguments of %s: %v", t.spec.Name, err)}
		}
		lines := problems(ve)
		return a, &Failure{Kind: ErrInvalidArgs, Message: strings.Join(lines, "\n"), Details: map[string]any{"problems": lines}}
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"arguments match the schema of %s but do not decode (%v); check number sizes and string escapes", t.spec.Name, err)}
	}
	return a, nil
}

// problems flattens a validation error into one "/pointer: message" line
// per leaf cause, sorted so the same arguments always read the same way.
func problems(ve *jsonschema.ValidationError) []string {
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			lines = append(lines, pointer(e.InstanceLocation)+": "+leafMessage(e.ErrorKind))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(lines)
	return slices.Compact(lines)
}

// printer renders validation messages. POSIX English prints integers
// without grouping (600000, not 600,000): arguments are JSON, and the model
// should see numbers as it would write them.
var printer = message.NewPrinter(language.MustParse("en-US-POSIX"))

// leafMessage renders one validation problem. Numeric bounds are rendered
// here because the library prints them as floats, which the printer shows
// as 1 × 10⁺⁰⁶ from a million on.
func leafMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Minimum:
		return "minimum: got " + number(k.Got) + ", want " + number(k.Want)
	case *kind.Maximum:
		return "maximum: got " + number(k.Got) + ", want " + number(k.Want)
	case *kind.ExclusiveMinimum:
		return "exclusiveMinimum: got " + number(k.Got) + ", want " + number(k.Want)
	case *kind.ExclusiveMaximum:
		return "exclusiveMaximum: got " + number(k.Got) + ", want " + number(k.Want)
	case *kind.MultipleOf:
		return "multipleOf: got " + number(k.Got) + ", want " + number(k.Want)
	case *kind.AdditionalProperties:
		// Collected from a map: sort so the line is stable.
		slices.Sort(k.Properties)
	}
	return k.LocalizedString(printer)
}

// number renders r as a JSON number.
func number(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'f', -1, 64)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointer renders an instance location as an RFC 6901 JSON Pointer, with
// "/" standing for the arguments object itself so no line starts with ":".
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, tok := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(tok))
	}
	return b.String()
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
