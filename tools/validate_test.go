package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// keywordTests are also checked against the oracle (oracle_test.go).
var keywordTests = []struct {
	name     string
	schema   string
	instance string
	want     []string // nil: valid
}{
	// type
	{"type string", `{"type":"string"}`, `"a"`, nil},
	{"type string, got number", `{"type":"string"}`, `1`, []string{"/: got number, want string"}},
	{"type null", `{"type":"null"}`, `false`, []string{"/: got boolean, want null"}},
	{"type integer, got 1.0", `{"type":"integer"}`, `1.0`, nil},
	{"type integer, got 1e2", `{"type":"integer"}`, `1e2`, nil},
	{"type integer, got big", `{"type":"integer"}`, `18446744073709551616`, nil},
	{"type integer, got 1.5", `{"type":"integer"}`, `1.5`, []string{"/: got number, want integer"}},
	{"type integer, got string", `{"type":"integer"}`, `"1"`, []string{"/: got string, want integer"}},
	{"type number, got integer", `{"type":"number"}`, `7`, nil},
	{"type array in canonical order", `{"type":["string","null","integer"]}`, `[]`, []string{"/: got array, want null or integer or string"}},
	{"type array, match", `{"type":["string","null"]}`, `null`, nil},
	{"wrong type is the only problem", `{"type":"string","required":["a"],"minLength":3}`, `{}`, []string{"/: got object, want string"}},

	// const and enum
	{"const", `{"const":"a"}`, `"a"`, nil},
	{"const string", `{"const":"it's"}`, `"b"`, []string{`/: value must be 'it\'s'`}},
	{"const number by value", `{"const":1}`, `1.0`, nil},
	{"const number shown as written", `{"const":1.50}`, `2`, []string{"/: value must be 1.50"}},
	{"const null", `{"const":null}`, `0`, []string{"/: value must be <nil>"}},
	{"const bool", `{"const":true}`, `1`, []string{"/: value must be true"}},
	{"const object", `{"const":{"a":[1]}}`, `{"a":[1.0]}`, nil},
	{"const object, failed", `{"const":{"a":[1]}}`, `{"a":[1],"b":1}`, []string{"/: 'const' failed"}},
	{"const first", `{"const":"a","enum":["b"]}`, `"c"`, []string{"/: value must be 'a'"}},
	{"enum", `{"enum":["a","b"]}`, `"b"`, nil},
	{"enum, failed", `{"enum":["a","b"]}`, `"c"`, []string{"/: value must be one of 'a', 'b'"}},
	{"enum of one", `{"enum":["a"]}`, `"c"`, []string{"/: value must be 'a'"}},
	{"enum mixed", `{"enum":[1,null,false,"x"]}`, `true`, []string{"/: value must be one of 1, <nil>, false, 'x'"}},
	{"enum structured", `{"enum":[[1],"x"]}`, `[2]`, []string{"/: 'enum' failed"}},
	{"enum number by value", `{"type":"integer","enum":[1,2]}`, `2.0`, nil},
	{"enum stops the rest", `{"enum":["a"],"minLength":5}`, `"b"`, []string{"/: value must be 'a'"}},

	// objects
	{"properties", `{"properties":{"a":{"type":"string"}}}`, `{"a":"x","b":1}`, nil},
	{"property invalid", `{"properties":{"a":{"type":"string"}}}`, `{"a":1}`, []string{"/a: got number, want string"}},
	{"required one", `{"required":["a","b"]}`, `{"b":1}`, []string{"/: missing property 'a'"}},
	{"required several, in schema order", `{"required":["b","a","c"]}`, `{"c":1}`, []string{"/: missing properties 'b', 'a'"}},
	{"required only checks objects", `{"required":["a"]}`, `[]`, nil},
	{"additional false", `{"properties":{"a":true},"additionalProperties":false}`, `{"a":1,"z":1,"y":2}`, []string{"/: additional properties 'y', 'z' not allowed"}},
	{"additional true", `{"additionalProperties":true}`, `{"a":1}`, nil},
	{"additional schema", `{"properties":{"a":true},"additionalProperties":{"type":"integer"}}`, `{"a":"x","b":"y","c":1}`, []string{"/b: got string, want integer"}},
	{"false property", `{"properties":{"a":false}}`, `{"a":1}`, []string{"/a: false schema"}},
	{"minProperties", `{"minProperties":2}`, `{"a":1}`, []string{"/: minProperties: got 1, want 2"}},
	{"maxProperties", `{"maxProperties":1}`, `{"a":1,"b":2}`, []string{"/: maxProperties: got 2, want 1"}},
	{"pointer escaping", `{"additionalProperties":{"type":"null"}}`, `{"a/b~c":1,"":2}`, []string{"/: got number, want null", "/a~1b~0c: got number, want null"}},

	// arrays
	{"items", `{"items":{"type":"integer"}}`, `[1,2.0]`, nil},
	{"items invalid", `{"items":{"type":"integer"}}`, `[1,"x",2.5]`, []string{"/1: got string, want integer", "/2: got number, want integer"}},
	{"items false", `{"items":false}`, `[1]`, []string{"/0: false schema"}},
	{"minItems", `{"minItems":2}`, `[1]`, []string{"/: minItems: got 1, want 2"}},
	{"maxItems", `{"maxItems":1}`, `[1,2]`, []string{"/: maxItems: got 2, want 1"}},
	{"uniqueItems", `{"uniqueItems":true}`, `[1,"1",[1],{"a":1}]`, nil},
	{"uniqueItems, numbers by value", `{"uniqueItems":true}`, `[0,1,2,1.0,2]`, []string{"/: items at 1 and 3 are equal"}},
	{"uniqueItems, objects by content", `{"uniqueItems":true}`, `[{"a":1,"b":[2]},{"b":[2.0],"a":1}]`, []string{"/: items at 0 and 1 are equal"}},
	{"uniqueItems false", `{"uniqueItems":false}`, `[1,1]`, nil},

	// strings
	{"minLength in code points", `{"minLength":3}`, `"日本"`, []string{"/: minLength: got 2, want 3"}},
	{"maxLength in code points", `{"maxLength":2}`, `"日本"`, nil},
	{"maxLength", `{"maxLength":2}`, `"😀😀😀"`, []string{"/: maxLength: got 3, want 2"}},
	{"pattern unanchored", `{"pattern":"b+"}`, `"abc"`, nil},
	{"pattern", `{"pattern":"^x"}`, `"abc"`, []string{"/: 'abc' does not match pattern '^x'"}},
	{"pattern quoting", `{"pattern":"^'"}`, `"a\"b\n"`, []string{`/: 'a"b\n' does not match pattern '^\''`}},
	{"pattern only checks strings", `{"pattern":"^x"}`, `1`, nil},

	// numbers
	{"minimum", `{"minimum":1}`, `0`, []string{"/: minimum: got 0, want 1"}},
	{"minimum, equal", `{"minimum":1}`, `1.0`, nil},
	{"maximum, no grouping", `{"maximum":600000}`, `1000000`, []string{"/: maximum: got 1000000, want 600000"}},
	{"maximum, big", `{"maximum":18446744073709551615}`, `18446744073709551616`, []string{"/: maximum: got 18446744073709551616, want 18446744073709551615"}},
	{"maximum, 1e30", `{"maximum":1e29}`, `1e30`, []string{"/: maximum: got 1000000000000000000000000000000, want 100000000000000000000000000000"}},
	{"maximum, fraction", `{"maximum":1.5}`, `2.25`, []string{"/: maximum: got 2.25, want 1.5"}},
	{"exclusiveMinimum", `{"exclusiveMinimum":0}`, `0`, []string{"/: exclusiveMinimum: got 0, want 0"}},
	{"exclusiveMaximum", `{"exclusiveMaximum":1}`, `1`, []string{"/: exclusiveMaximum: got 1, want 1"}},
	{"multipleOf exact", `{"multipleOf":0.1}`, `0.3`, nil},
	{"multipleOf", `{"multipleOf":0.1}`, `0.35`, []string{"/: multipleOf: got 0.35, want 0.1"}},
	{"several bounds", `{"maximum":1,"exclusiveMaximum":1,"multipleOf":2}`, `3`, []string{
		"/: exclusiveMaximum: got 3, want 1", "/: maximum: got 3, want 1", "/: multipleOf: got 3, want 2"}},
	{"number too large to check", `{"minimum":1}`, `1e1000001`, []string{"/: number 1e1000001 is too large or too precise to check; send it in plain decimal notation"}},
	{"number too large, no bound", `{"type":"number"}`, `1e1000001`, nil},
	{"number too large for integer", `{"type":"integer"}`, `1e1000001`, []string{"/: got number, want integer"}},

	// boolean schemas, annotations
	{"true", `true`, `{"a":1}`, nil},
	{"false", `false`, `{}`, []string{"/: false schema"}},
	{"empty", `{}`, `[1]`, nil},
	{"annotations assert nothing", `{"format":"email","contentEncoding":"base64","contentMediaType":"application/json","title":"t","description":"d","default":1,"examples":[1],"$comment":"c","deprecated":true,"readOnly":true,"writeOnly":true}`, `"not an email"`, nil},

	// everything at once, sorted and de-duplicated
	{"several at once", `{"type":"object","required":["a"],"additionalProperties":false,"properties":{"b":{"type":"array","items":{"type":"string","maxLength":1}}}}`,
		`{"b":["xx",1,"yy"],"c":1}`, []string{
			"/: additional properties 'c' not allowed",
			"/: missing property 'a'",
			"/b/0: maxLength: got 2, want 1",
			"/b/1: got number, want string",
			"/b/2: maxLength: got 2, want 1",
		}},
	{"identical lines once", `{"properties":{"a":{"items":{"properties":{"x":{"type":"string"}}}}}}`, `{"a":[{"x":1},{"x":1}]}`, []string{
		"/a/0/x: got number, want string", "/a/1/x: got number, want string"}},
}

func TestValidatorKeywords(t *testing.T) {
	for _, tt := range keywordTests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := compileSchema("t", []byte(tt.schema))
			require.NoError(t, err)
			instance, err := parseJSON([]byte(tt.instance))
			require.NoError(t, err)
			require.Equal(t, tt.want, v.validate(instance))
		})
	}
}

func TestValidatorRejectsUnsupportedKeywords(t *testing.T) {
	for _, kw := range []string{
		"$ref", "$defs", "$id", "$schema", "$anchor", "$dynamicRef", "oneOf", "anyOf", "allOf", "not", "if", "then", "else",
		"patternProperties", "propertyNames", "dependentRequired", "dependentSchemas", "prefixItems", "contains",
		"unevaluatedProperties", "unevaluatedItems", "definitions", "x-custom",
	} {
		t.Run(kw, func(t *testing.T) {
			_, err := compileSchema("mytool", []byte(`{"type":"object","properties":{"a":{"`+kw+`":{}}}}`))
			require.EqualError(t, err, `the schema of tool mytool does not compile: at /properties/a, keyword "`+kw+`" `+
				`is not supported by Pixir's schema validator (tools/validate.go); it knows only `+strings.Join(assertions, ", ")+
				`, and the annotations `+strings.Join(annotations, ", "))
		})
	}
}

func TestValidatorRejectsMalformedSchemas(t *testing.T) {
	tests := []struct{ schema, want string }{
		{`{"type":"text"}`, "at /type, type must be a type name or an array of distinct type names"},
		{`{"type":["string","string"]}`, "at /type, type must be a type name or an array of distinct type names"},
		{`{"type":[]}`, "at /type, type must name at least one type"},
		{`{"properties":[]}`, "at /properties, properties must be an object"},
		{`{"properties":{"a":1}}`, "at /properties/a, a schema must be an object or a boolean, not number"},
		{`{"required":"a"}`, "at /required, required must be an array of strings"},
		{`{"required":["a","a"]}`, "at /required, required must be an array of distinct strings"},
		{`{"items":[{}]}`, "at /items, a schema must be an object or a boolean, not array"},
		{`{"enum":"a"}`, "at /enum, enum must be an array"},
		{`{"uniqueItems":1}`, "at /uniqueItems, uniqueItems must be a boolean"},
		{`{"pattern":"("}`, "at /pattern, pattern '(' is not a valid regular expression: error parsing regexp: missing closing ): `(`"},
		{`{"minimum":"1"}`, "at /minimum, minimum must be a number of sensible size"},
		{`{"maximum":1e1000001}`, "at /maximum, maximum must be a number of sensible size"},
		{`{"multipleOf":0}`, "at /multipleOf, multipleOf must be greater than 0"},
		{`{"minLength":-1}`, "at /minLength, minLength must be a non-negative integer"},
		{`{"maxItems":1.5}`, "at /maxItems, maxItems must be a non-negative integer"},
		{`{"maxProperties":1e10}`, "at /maxProperties, maxProperties must be a non-negative integer"},
		{`"object"`, "at /, a schema must be an object or a boolean, not string"},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			_, err := compileSchema("x", []byte(tt.schema))
			require.EqualError(t, err, "the schema of tool x does not compile: "+tt.want)
		})
	}
	_, err := compileSchema("x", []byte(`{`))
	require.EqualError(t, err, "the schema of tool x is not JSON: unexpected EOF")
}

func TestBuiltinSchemasCompile(t *testing.T) {
	for _, tool := range append(Builtins(), echoTool(), sinkTool()) {
		_, err := compileSchema(tool.Name(), tool.Schema())
		require.NoError(t, err, tool.Name())
	}
}

// A tool whose Go type needs a keyword the validator lacks fails loudly on
// its first call, naming the keyword, instead of validating wrongly.
func TestUnsupportedSchemaFailsTheCall(t *testing.T) {
	type nullableArgs struct {
		Name string `json:"name" jsonschema:"nullable"`
	}
	tool := Define(Spec[nullableArgs]{
		Schema: reflectedSchema[nullableArgs](),
		Name:   "nullable",
		Run:    func(context.Context, Env, nullableArgs, bool) Result { return OK(nil) },
	})
	res := tool.Run(t.Context(), Env{}, json.RawMessage(`{"name":"a"}`))
	require.False(t, res.OK)
	require.Equal(t, ErrInternal, res.Error.Kind)
	require.Contains(t, res.Error.Message, `the schema of tool nullable does not compile: at /properties/name, keyword "oneOf" is not supported`)
}

func TestCompileSchemaForTypedOutputs(t *testing.T) {
	s, err := CompileSchema("output_schema", []byte(`{"type":"object","required":["files"],"properties":{"files":{"type":"array","items":{"type":"string","pattern":"^src/"}},"n":{"type":"integer","minimum":1}},"additionalProperties":false}`))
	require.NoError(t, err)
	require.Empty(t, s.Validate([]byte(`{"files":["src/a.go"],"n":2}`)))
	require.Equal(t, []string{
		"/: additional properties 'x' not allowed",
		"/files/0: 'a.go' does not match pattern '^src/'",
		"/n: minimum: got 0, want 1",
	}, s.Validate([]byte(`{"files":["a.go"],"n":0,"x":true}`)))
	require.Equal(t, []string{"/: not valid JSON: unexpected EOF"}, s.Validate([]byte(`{`)))

	_, err = CompileSchema(`steps[0] "a" output_schema`, []byte(`{"if":{"type":"string"}}`))
	require.ErrorContains(t, err, `steps[0] "a" output_schema does not compile: at /, keyword "if" is not supported`)
	require.ErrorContains(t, err, "$ref, $defs, definitions, $schema, $id, allOf, anyOf, oneOf, not")
}

// The keywords users write in payload schemas and template parameters:
// each line as the oracle says it (oracle_test.go fuzzes the rest).
func TestUserSchemasTakeRefsAndCombinators(t *testing.T) {
	s, err := CompileSchema("payload", []byte(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object", "required": ["verdict"],
		"properties": {
			"verdict": {"$ref": "#/$defs/verdict"},
			"findings": {"type": "array", "items": {"$ref": "#/$defs/finding"}},
			"owner": {"oneOf": [{"type": "string", "format": "email"}, {"type": "integer"}, {"type": "number", "minimum": 100}]},
			"note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
			"tags": {"allOf": [{"type": "array"}, {"maxItems": 2}], "not": {"const": []}}
		},
		"$defs": {
			"verdict": {"enum": ["ACCEPTABLE", "NEEDS WORK", "BLOCK"]},
			"finding": {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "code"}, "more": {"$ref": "#/$defs/finding"}}}
		}}`))
	require.NoError(t, err)
	require.Empty(t, s.Validate([]byte(`{"verdict":"BLOCK","findings":[{"kind":"code","more":{"kind":"code"}}],"owner":"a@b","note":null,"tags":["x"]}`)))
	require.Equal(t, []string{
		"/findings/0/more/kind: value must be 'code'",
		"/note: got number, want null",
		"/note: got number, want string",
		"/owner: 'oneOf' failed, subschemas 1, 2 matched",
		"/tags: 'not' failed",
		"/verdict: value must be one of 'ACCEPTABLE', 'NEEDS WORK', 'BLOCK'",
	}, s.Validate([]byte(`{"verdict":"OK","findings":[{"kind":"code","more":{"kind":"test"}}],"owner":200,"note":1,"tags":[]}`)))

	for _, tt := range []struct{ schema, want string }{
		{`{"$ref":"https://example.com/s.json"}`, `at /$ref, $ref 'https://example.com/s.json' is not supported: only references inside the schema are`},
		{`{"$ref":"#anchor"}`, "is not a JSON Pointer into the schema"},
		{`{"$ref":"#/$defs/nope"}`, `at /, $ref "#/$defs/nope" points at nothing in the schema`},
		{`{"$ref":"#"}`, "its $refs refer to each other in a loop"},
		{`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}}}`, "its $refs refer to each other in a loop"},
		{`{"$schema":"http://json-schema.org/draft-07/schema#"}`, "Pixir reads a schema as JSON Schema 2020-12"},
		{`{"properties":{"a":{"$id":"x"}}}`, "at /properties/a/$id, $id is supported only at the root"},
		{`{"oneOf":[]}`, "at /oneOf, oneOf must be a non-empty array of schemas"},
		{`{"$defs":{"a":{"if":true}}}`, `at /$defs/a, keyword "if" is not supported`},
	} {
		_, err := CompileSchema("payload", []byte(tt.schema))
		require.ErrorContains(t, err, tt.want, tt.schema)
	}
	// A recursive schema that descends is fine.
	_, err = CompileSchema("tree", []byte(`{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#"}}}}`))
	require.NoError(t, err)
}
