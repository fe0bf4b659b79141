package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type testItem struct {
	ID int `json:"id"`
}

type testArgs struct {
	Name  string         `json:"name"`
	Count int            `json:"count,omitempty" jsonschema:"minimum=1,maximum=10"`
	Items []testItem     `json:"items,omitempty"`
	Tags  map[string]int `json:"tags,omitempty"`
	Ratio float64        `json:"ratio,omitempty" jsonschema:"exclusiveMinimum=0,maximum=1.5"`
	Big   int            `json:"big,omitempty" jsonschema:"maximum=2000000"`
}

// echoTool returns its decoded arguments, so tests see exactly what Run got.
func echoTool() Tool {
	return Define(Spec[testArgs]{
		Schema:  reflectedSchema[testArgs](),
		Name:    "echo",
		Posture: PostureRead,
		Kind:    KindOther,
		Describe: func(a testArgs) Presentation {
			if a.Name == "" {
				return Presentation{}
			}
			return Presentation{Title: "Echo " + a.Name}
		},
		Run: func(_ context.Context, _ Env, a testArgs, dryRun bool) Result {
			if dryRun {
				return Preview("would echo %s", a.Name)
			}
			return OK(a)
		},
	})
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name string
		args string
		want []string
	}{
		{"wrong type", `{"name":1}`, []string{"/name: got number, want string"}},
		{"missing", `{}`, []string{"/: missing property 'name'"}},
		{"null field", `{"name":null}`, []string{"/name: got null, want string"}},
		{"additional, sorted", `{"name":"a","zeta":1,"alpha":2}`, []string{"/: additional properties 'alpha', 'zeta' not allowed"}},
		{"float for integer", `{"name":"a","count":1.5}`, []string{"/count: got number, want integer"}},
		{"bounds", `{"name":"a","count":11}`, []string{"/count: maximum: got 11, want 10"}},
		{"no digit grouping", `{"name":"a","big":12345678}`, []string{"/big: maximum: got 12345678, want 2000000"}},
		{"fractional bound", `{"name":"a","ratio":2.25}`, []string{"/ratio: maximum: got 2.25, want 1.5"}},
		{"exclusive bound", `{"name":"a","ratio":0}`, []string{"/ratio: exclusiveMinimum: got 0, want 0"}},
		{"nested, several, sorted", `{"name":2,"items":[{"id":"x"},{}]}`, []string{
			"/items/0/id: got string, want integer",
			"/items/1: missing property 'id'",
			"/name: got number, want string",
		}},
		{"pointer escaping", `{"name":"a","tags":{"a/b~c":"x"}}`, []string{"/tags/a~1b~0c: got string, want integer"}},
	}
	tool := echoTool()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tool.Run(t.Context(), Env{}, json.RawMessage(tt.args))
			requireFailure(t, res, ErrInvalidArgs, strings.Join(tt.want, "\n"))
			require.Equal(t, map[string]any{"problems": tt.want}, res.Error.Details)
			// A dry run validates the same way.
			require.Equal(t, res, tool.DryRun(t.Context(), Env{}, json.RawMessage(tt.args)))
		})
	}
}

func TestArgumentsNotAnObject(t *testing.T) {
	tests := []struct {
		args string
		want string
	}{
		{``, "arguments are missing; call echo with a JSON object that matches its schema"},
		{"  \n", "arguments are missing; call echo with a JSON object that matches its schema"},
		{`null`, "arguments are missing; call echo with a JSON object that matches its schema"},
		{`{"name":`, "arguments are not valid JSON (unexpected EOF); send one JSON object that matches the schema of echo"},
		{`{"name":"a"} {}`, "arguments are not valid JSON (invalid character after top-level value); send one JSON object that matches the schema of echo"},
		{`[{"name":"a"}]`, "arguments must be a JSON object, got an array; send one JSON object that matches the schema of echo"},
		{`"a"`, "arguments must be a JSON object, got a string; send one JSON object that matches the schema of echo"},
		{`3`, "arguments must be a JSON object, got a number; send one JSON object that matches the schema of echo"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			requireFailure(t, echoTool().Run(t.Context(), Env{}, json.RawMessage(tt.args)), ErrInvalidArgs, tt.want)
		})
	}
}

func TestValidArgumentsReachRun(t *testing.T) {
	tool := echoTool()
	got := requireOK[testArgs](t, tool.Run(t.Context(), Env{}, json.RawMessage(` {"name":"a","count":2,"items":[{"id":7}]} `)))
	require.Equal(t, testArgs{Name: "a", Count: 2, Items: []testItem{{ID: 7}}}, got)

	preview := requireOK[DryRunOutput](t, tool.DryRun(t.Context(), Env{}, json.RawMessage(`{"name":"a"}`)))
	require.Equal(t, DryRunOutput{DryRun: true, Summary: "would echo a"}, preview)
}

func TestPanicBecomesInternalFailure(t *testing.T) {
	tool := Define(Spec[testArgs]{
		Schema: reflectedSchema[testArgs](),
		Name:   "boom",
		Run: func(context.Context, Env, testArgs, bool) Result {
			panic(errors.New("kaboom"))
		},
	})
	for _, res := range []Result{
		tool.Run(t.Context(), Env{}, json.RawMessage(`{"name":"a"}`)),
		tool.DryRun(t.Context(), Env{}, json.RawMessage(`{"name":"a"}`)),
	} {
		requireFailure(t, res, ErrInternal,
			"tool boom crashed (kaboom); this is a bug in Pixir, not in your arguments, so retrying the same call will not help")
		require.Contains(t, res.Error.Details.(map[string]any)["stack"], "define_test.go")
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		name string
		args string
		want Presentation
	}{
		{"valid", `{"name":"a"}`, Presentation{Title: "Echo a", Kind: KindOther}},
		{"partly invalid", `{"name":"a","count":"many"}`, Presentation{Title: "Echo a", Kind: KindOther}},
		{"wrong type", `{"name":3}`, Presentation{Title: "echo", Kind: KindOther}},
		{"not JSON", `{"na`, Presentation{Title: "echo", Kind: KindOther}},
		{"empty", ``, Presentation{Title: "echo", Kind: KindOther}},
	}
	tool := echoTool()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tool.Describe(json.RawMessage(tt.args)))
		})
	}

	panicky := Define(Spec[testArgs]{
		Schema:   reflectedSchema[testArgs](),
		Name:     "p",
		Kind:     KindRead,
		Describe: func(testArgs) Presentation { panic("oops") },
		Run:      func(context.Context, Env, testArgs, bool) Result { return OK(nil) },
	})
	require.Equal(t, Presentation{Title: "p", Kind: KindRead}, panicky.Describe(json.RawMessage(`{}`)))
}

func TestDefineNeedsNameAndRun(t *testing.T) {
	require.Panics(t, func() { Define(Spec[testArgs]{Name: "x"}) })
	require.Panics(t, func() {
		Define(Spec[testArgs]{Run: func(context.Context, Env, testArgs, bool) Result { return OK(nil) }})
	})
}

// Providers reject root combinators and some reject $schema; the schema
// must still be a plain, closed object.
func TestSchemasAreProviderFriendly(t *testing.T) {
	for _, tool := range append(Builtins(), echoTool()) {
		t.Run(tool.Name(), func(t *testing.T) {
			raw := tool.Schema()
			require.Equal(t, raw, tool.Schema(), "schema must be computed once")
			var s map[string]any
			require.NoError(t, json.Unmarshal(raw, &s))
			require.Equal(t, "object", s["type"])
			require.Equal(t, false, s["additionalProperties"])
			for _, key := range []string{"$schema", "$id", "$ref", "$defs", "oneOf", "anyOf", "allOf"} {
				require.NotContains(t, s, key)
			}
		})
	}
}

// One Tool serves every Session at once, its lazy schema included.
func TestConcurrentFirstUse(t *testing.T) {
	tool := echoTool()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				_ = tool.Schema()
			}
			res := tool.Run(t.Context(), Env{}, json.RawMessage(`{"name":1}`))
			assert.Equal(t, "/name: got number, want string", res.Error.Message)
		})
	}
	wg.Wait()
}

// The Tools of one DefineWith run with the dependency each was bound to,
// validate their arguments like any Tool, and share one definition: the
// schema is reflected and compiled once for the whole family.
func TestDefineWithBindsEachToolToItsDependency(t *testing.T) {
	greet := DefineWith(SpecWith[testArgs, string]{
		Schema: reflectedSchema[testArgs](),
		Name:   "greet", Posture: PostureRead,
		Run: func(_ context.Context, _ Env, greeting string, a testArgs, dryRun bool) Result {
			if dryRun {
				return Preview("would say %s to %s", greeting, a.Name)
			}
			return OK(greeting + ", " + a.Name)
		},
	})
	hello, hi := greet("hello"), greet("hi")
	require.Equal(t, OK("hello, Ada"), hello.Run(context.Background(), Env{}, json.RawMessage(`{"name":"Ada"}`)))
	require.Equal(t, OK("hi, Ada"), hi.Run(context.Background(), Env{}, json.RawMessage(`{"name":"Ada"}`)))
	require.Equal(t, Preview("would say hi to Bo"), hi.DryRun(context.Background(), Env{}, json.RawMessage(`{"name":"Bo"}`)))

	bad := hello.Run(context.Background(), Env{}, json.RawMessage(`{"name":1}`))
	require.False(t, bad.OK)
	require.Equal(t, ErrInvalidArgs, bad.Error.Kind)

	require.JSONEq(t, string(hello.Schema()), string(hi.Schema()))
	a, b := hello.(*defined[testArgs]), hi.(*defined[testArgs])
	require.Same(t, a.definition, b.definition, "one definition for the family")
	va, _ := a.compiled()
	vb, _ := b.compiled()
	require.Same(t, va, vb, "the validator is compiled once")
}

// A tool with neither a committed schema nor Spec.Schema is a wiring bug:
// its first use says how to make the file.
func TestAToolWithoutASchemaSaysHowToMakeIt(t *testing.T) {
	tool := Define(Spec[testArgs]{Name: "not_a_builtin", Run: func(context.Context, Env, testArgs, bool) Result { return OK(nil) }})
	require.PanicsWithValue(t, "tools: not_a_builtin has no committed schema (schemas/tools/not_a_builtin.json): run `make schemas`, or give a tool that is not a built-in its Spec.Schema",
		func() { tool.Schema() })
}
