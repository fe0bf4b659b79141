package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is the argument validator: JSON Schema 2020-12 for exactly the
// subset that invopop/jsonschema reflects from our argument structs, and
// nothing more. A general validator (santhosh-tekuri/jsonschema) compiles
// the meta-schemas of five drafts in its package init, which every start of
// the binary paid for; it stays in the tests as the oracle this validator
// must agree with, line for line (oracle_test.go).
//
// A keyword outside the subset is a compile error naming it and the tool,
// so a tool whose Go type needs more fails loudly in tests instead of
// validating wrongly.
//
// Schemas Pixir did not write (an MCP server's tool inputs) are compiled
// leniently instead (CompileLenientSchema): such a schema may use any
// keyword of any draft, and the server checks its arguments itself, so the
// check made here must never refuse arguments the schema accepts. It
// checks the subset above, and allOf, anyOf and oneOf, and ignores the
// rest; where an ignored keyword changes what a known one means (a $ref,
// patternProperties beside additionalProperties, prefixItems beside items)
// it ignores the known one too. It can let through what the server then
// refuses, never the other way round (lenient_test.go holds it to that
// against the oracle).

// assertions are the keywords the validator checks.
var assertions = []string{
	"type", "const", "enum",
	"properties", "required", "additionalProperties", "minProperties", "maxProperties",
	"items", "minItems", "maxItems", "uniqueItems",
	"minLength", "maxLength", "pattern",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
}

// annotations are keywords that never make a value invalid. format and the
// content keywords are annotations too: 2020-12 does not assert them by
// default, and neither does the oracle.
var annotations = []string{
	"title", "description", "default", "examples", "$comment",
	"deprecated", "readOnly", "writeOnly",
	"format", "contentEncoding", "contentMediaType",
}

// schemaType is a JSON Schema type name as a bit, in the order in which a
// "want" list is written.
type schemaType uint8

const (
	nullType schemaType = 1 << iota
	booleanType
	numberType
	integerType
	stringType
	arrayType
	objectType
)

var typeNames = []string{"null", "boolean", "number", "integer", "string", "array", "object"}

func (t schemaType) String() string {
	var names []string
	for i, name := range typeNames {
		if t&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return strings.Join(names, " or ")
}

func typeNamed(name string) schemaType {
	if i := slices.Index(typeNames, name); i >= 0 {
		return 1 << i
	}
	return 0
}

// typeOf is the type of a value decoded by parseJSON. A number is always a
// "number": integer-ness is a property checked against the schema.
func typeOf(v any) schemaType {
	switch v.(type) {
	case nil:
		return nullType
	case bool:
		return booleanType
	case json.Number:
		return numberType
	case string:
		return stringType
	case []any:
		return arrayType
	case map[string]any:
		return objectType
	}
	panic(fmt.Sprintf("tools: %T is not a decoded JSON value", v))
}

// schemaNode is one compiled (sub)schema.
type schemaNode struct {
	// boolean is set for the schemas true and false.
	boolean *bool

	types    schemaType
	hasConst bool
	constVal any
	enum     []any // nil: no enum keyword

	properties map[string]*schemaNode
	required   []string
	// additional is nil without additionalProperties; false rejects every
	// property that properties does not name.
	additional    *schemaNode
	minProperties int // -1: absent, as for the other counts
	maxProperties int

	items       *schemaNode
	minItems    int
	maxItems    int
	uniqueItems bool

	minLength int
	maxLength int
	pattern   *regexp.Regexp

	minimum, maximum                   *big.Rat
	exclusiveMinimum, exclusiveMaximum *big.Rat
	multipleOf                         *big.Rat

	// Only in lenient schemas: every allOf schema must hold, and for each
	// of anyOf and oneOf at least one of its schemas (oneOf is checked as
	// anyOf, which is weaker, so never wrongly refuses).
	allOf  []*schemaNode
	anyOfs [][]*schemaNode

	// Only in user schemas (CompileSchema): $ref (checked as one more
	// allOf schema, as 2020-12 does beside its siblings), anyOf and oneOf
	// reported as the oracle does (every alternative's problems), and not.
	userAnyOfs [][]*schemaNode
	oneOfs     [][]*schemaNode
	not        *schemaNode
}

func (n *schemaNode) numeric() bool {
	return n.minimum != nil || n.maximum != nil || n.exclusiveMinimum != nil || n.exclusiveMaximum != nil || n.multipleOf != nil
}

// argValidator validates the arguments of one tool.
type argValidator struct {
	root *schemaNode
}

// compileSchema compiles the JSON Schema of tool.
func compileSchema(tool string, schema []byte) (*argValidator, error) {
	return compileNamed("the schema of tool "+tool, schema)
}

// compileNamed compiles a schema; subject names it in errors.
func compileNamed(subject string, schema []byte) (*argValidator, error) {
	doc, err := parseJSON(schema)
	if err != nil {
		return nil, fmt.Errorf("%s is not JSON: %w", subject, err)
	}
	c := schemaCompiler{subject: subject}
	root, err := c.compile(doc, nil)
	if err != nil {
		return nil, err
	}
	return &argValidator{root: root}, nil
}

type schemaCompiler struct {
	subject string // "the schema of tool read", "output_schema"
	// lenient compiles any schema: what it cannot check is ignored and
	// named in ignored, never an error.
	lenient bool
	ignored map[string]bool
	// user compiles the wider set of a schema a user wrote (userKeywords):
	// root is the whole document, refs the nodes of the local $refs
	// compiled or to compile (pending), by pointer.
	user    bool
	root    any
	refs    map[string]*schemaNode
	pending []string
}

// userKeywords are what a schema a user writes (an output_schema, a
// template's parameters) may use beyond the assertions: local references
// and their definitions, the 2020-12 dialect and a root $id, and the
// boolean applicators.
var userKeywords = []string{"$ref", "$defs", "definitions", "$schema", "$id", "allOf", "anyOf", "oneOf", "not"}

func (c *schemaCompiler) ignore(kw string) {
	if c.ignored == nil {
		c.ignored = map[string]bool{}
	}
	c.ignored[kw] = true
}

// referenceKeywords replace or extend a schema with another one that a
// lenient schema does not follow; a schema holding one is not checked.
var referenceKeywords = []string{"$ref", "$dynamicRef", "$recursiveRef"}

// identifiers name schemas or hold them for references; they assert
// nothing, so a lenient schema passes over them without a word.
var identifiers = []string{"$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$vocabulary", "$defs", "definitions"}

// combinators are the applicators a lenient schema checks.
var combinators = []string{"allOf", "anyOf", "oneOf"}

func (c *schemaCompiler) errorf(loc []string, format string, args ...any) error {
	return fmt.Errorf("%s does not compile: at %s, %s", c.subject, pointer(loc), fmt.Sprintf(format, args...))
}

func (c *schemaCompiler) compile(doc any, loc []string) (*schemaNode, error) {
	n := &schemaNode{
		minProperties: -1, maxProperties: -1,
		minItems: -1, maxItems: -1,
		minLength: -1, maxLength: -1,
	}
	if b, ok := doc.(bool); ok {
		n.boolean = &b
		return n, nil
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		if c.lenient {
			c.ignore("a schema that is " + typeOf(doc).String())
			return &schemaNode{boolean: new(true)}, nil
		}
		return nil, c.errorf(loc, "a schema must be an object or a boolean, not %s", typeOf(doc))
	}
	if c.lenient {
		for _, kw := range referenceKeywords {
			if _, ok := obj[kw]; ok {
				c.ignore(kw)
				return &schemaNode{boolean: new(true)}, nil
			}
		}
	}
	// Sorted, so that the first of several problems is always the same one.
	for _, kw := range slices.Sorted(maps.Keys(obj)) {
		if slices.Contains(annotations, kw) || c.lenient && slices.Contains(identifiers, kw) {
			continue
		}
		if c.lenient && slices.Contains(combinators, kw) {
			c.combinator(n, kw, obj[kw], append(slices.Clip(loc), kw))
			continue
		}
		if c.user && slices.Contains(userKeywords, kw) {
			if err := c.userKeyword(n, kw, obj[kw], loc); err != nil {
				return nil, err
			}
			continue
		}
		if !slices.Contains(assertions, kw) {
			if c.lenient {
				c.ignore(kw)
				continue
			}
			known := strings.Join(assertions, ", ")
			if c.user {
				known += ", " + strings.Join(userKeywords, ", ")
			}
			return nil, c.errorf(loc, "keyword %q is not supported by Pixir's schema validator (tools/validate.go); "+
				"it knows only %s, and the annotations %s",
				kw, known, strings.Join(annotations, ", "))
		}
		if c.lenient && (kw == "items" || kw == "additionalProperties") && !isSchema(obj[kw]) {
			c.ignore(kw) // a draft-07 tuple of items, say
			continue
		}
		before := *n
		if err := c.keyword(n, kw, obj[kw], append(slices.Clip(loc), kw)); err != nil {
			if !c.lenient {
				return nil, err
			}
			// A keyword this validator reads otherwise (an older draft's
			// exclusiveMinimum: true, a tuple items array, a pattern RE2
			// cannot compile) is not checked at all.
			*n = before
			c.ignore(kw)
		}
	}
	if c.lenient {
		// additionalProperties leaves alone what patternProperties matches,
		// and items what prefixItems covers: without those, a lenient
		// schema must not check the keyword they qualify either.
		if _, ok := obj["patternProperties"]; ok && n.additional != nil {
			n.additional = nil
			c.ignore("additionalProperties")
		}
		if _, ok := obj["prefixItems"]; ok && n.items != nil {
			n.items = nil
			c.ignore("items")
		}
	}
	return n, nil
}

// isSchema reports whether v can be a schema: an object or a boolean.
func isSchema(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

// combinator compiles allOf, anyOf or oneOf in a lenient schema.
func (c *schemaCompiler) combinator(n *schemaNode, kw string, v any, loc []string) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		c.ignore(kw)
		return
	}
	subs := make([]*schemaNode, len(arr))
	for i, sub := range arr {
		subs[i], _ = c.compile(sub, append(slices.Clip(loc), strconv.Itoa(i))) // lenient: never fails
	}
	if kw == "allOf" {
		n.allOf = append(n.allOf, subs...)
		return
	}
	n.anyOfs = append(n.anyOfs, subs)
}

func (c *schemaCompiler) keyword(n *schemaNode, kw string, v any, loc []string) error {
	var err error
	switch kw {
	case "type":
		n.types, err = c.types(v, loc)
	case "const":
		n.hasConst, n.constVal = true, v
	case "enum":
		arr, ok := v.([]any)
		if !ok {
			return c.errorf(loc, "enum must be an array")
		}
		n.enum = slices.Clone(arr)
	case "properties":
		obj, ok := v.(map[string]any)
		if !ok {
			return c.errorf(loc, "properties must be an object")
		}
		n.properties = make(map[string]*schemaNode, len(obj))
		for name, sub := range obj {
			if n.properties[name], err = c.compile(sub, append(slices.Clip(loc), name)); err != nil {
				return err
			}
		}
	case "required":
		n.required, err = c.names(v, loc)
	case "additionalProperties":
		n.additional, err = c.compile(v, loc)
	case "items":
		n.items, err = c.compile(v, loc)
	case "uniqueItems":
		b, ok := v.(bool)
		if !ok {
			return c.errorf(loc, "uniqueItems must be a boolean")
		}
		n.uniqueItems = b
	case "pattern":
		s, ok := v.(string)
		if !ok {
			return c.errorf(loc, "pattern must be a string")
		}
		if n.pattern, err = regexp.Compile(s); err != nil {
			return c.errorf(loc, "pattern %s is not a valid regular expression: %v", quote(s), err)
		}
	case "minProperties":
		n.minProperties, err = c.count(v, loc)
	case "maxProperties":
		n.maxProperties, err = c.count(v, loc)
	case "minItems":
		n.minItems, err = c.count(v, loc)
	case "maxItems":
		n.maxItems, err = c.count(v, loc)
	case "minLength":
		n.minLength, err = c.count(v, loc)
	case "maxLength":
		n.maxLength, err = c.count(v, loc)
	case "minimum":
		n.minimum, err = c.number(v, loc)
	case "maximum":
		n.maximum, err = c.number(v, loc)
	case "exclusiveMinimum":
		n.exclusiveMinimum, err = c.number(v, loc)
	case "exclusiveMaximum":
		n.exclusiveMaximum, err = c.number(v, loc)
	case "multipleOf":
		n.multipleOf, err = c.number(v, loc)
		if err == nil && n.multipleOf.Sign() <= 0 {
			err = c.errorf(loc, "multipleOf must be greater than 0")
		}
	default:
		panic("tools: keyword " + kw + " is listed as an assertion but not compiled")
	}
	return err
}

func (c *schemaCompiler) types(v any, loc []string) (schemaType, error) {
	names := []any{v}
	if arr, ok := v.([]any); ok {
		names = arr
	}
	var types schemaType
	for _, name := range names {
		s, _ := name.(string)
		t := typeNamed(s)
		if t == 0 || types&t != 0 {
			return 0, c.errorf(loc, "type must be a type name or an array of distinct type names")
		}
		types |= t
	}
	if types == 0 {
		return 0, c.errorf(loc, "type must name at least one type")
	}
	return types, nil
}

func (c *schemaCompiler) names(v any, loc []string) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, c.errorf(loc, "required must be an array of strings")
	}
	names := make([]string, 0, len(arr))
	for _, item := range arr {
		s, ok := item.(string)
		if !ok || slices.Contains(names, s) {
			return nil, c.errorf(loc, "required must be an array of distinct strings")
		}
		names = append(names, s)
	}
	return names, nil
}

func (c *schemaCompiler) number(v any, loc []string) (*big.Rat, error) {
	if num, ok := v.(json.Number); ok {
		if r, ok := rat(num); ok {
			return r, nil
		}
	}
	return nil, c.errorf(loc, "%s must be a number of sensible size", loc[len(loc)-1])
}

func (c *schemaCompiler) count(v any, loc []string) (int, error) {
	r, err := c.number(v, loc)
	if err != nil {
		return 0, err
	}
	if !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() || r.Num().Int64() > math.MaxInt32 {
		return 0, c.errorf(loc, "%s must be a non-negative integer", loc[len(loc)-1])
	}
	return int(r.Num().Int64()), nil
}

// problem is one reason a value is invalid.
type problem struct {
	loc []string
	msg string
}

// Schema is a compiled JSON Schema for values that are not tool arguments:
// the typed outputs of workflow steps (output_schema). It accepts exactly
// the keywords the argument validator knows; any other is a compile error,
// never a keyword silently ignored.
type Schema struct{ v *argValidator }

// CompileSchema compiles schema; subject names it in errors (for example
// `steps[2] "review" output_schema`).
func CompileSchema(subject string, schema []byte) (*Schema, error) {
	doc, err := parseJSON(schema)
	if err != nil {
		return nil, fmt.Errorf("%s is not JSON: %w", subject, err)
	}
	c := schemaCompiler{subject: subject, user: true, root: doc, refs: map[string]*schemaNode{}}
	root, err := c.compile(doc, nil)
	if err != nil {
		return nil, err
	}
	if err := c.resolveRefs(); err != nil {
		return nil, err
	}
	if err := c.checkRefCycles(root); err != nil {
		return nil, err
	}
	return &Schema{v: &argValidator{root: root}}, nil
}

// CompileLenientSchema compiles a schema Pixir did not write, of any draft,
// for a check that never refuses what the schema accepts (see the top of
// this file). It fails only when schema is not JSON. Ignored lists, sorted,
// the keywords it does not check.
func CompileLenientSchema(schema []byte) (s *Schema, ignored []string, err error) {
	doc, err := parseJSON(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("the schema is not JSON: %w", err)
	}
	c := schemaCompiler{subject: "the schema", lenient: true}
	root, _ := c.compile(doc, nil)
	return &Schema{v: &argValidator{root: root}}, slices.Sorted(maps.Keys(c.ignored)), nil
}

// ValidateValue checks a value decoded by ParseArguments, as Validate does
// a document.
func (s *Schema) ValidateValue(v any) []string { return s.v.validate(v) }

// ParseArguments decodes tool arguments as the validator reads them
// (numbers kept exact) and checks that they are one JSON object. A failure
// is an invalid_args Failure naming tool, worded for the model.
func ParseArguments(tool string, args []byte) (map[string]any, *Failure) {
	raw := bytes.TrimSpace(args)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"arguments are missing; call %s with a JSON object that matches its schema", tool)}
	}
	v, err := parseJSON(raw)
	if err != nil {
		return nil, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"arguments are not valid JSON (%v); send one JSON object that matches the schema of %s", err, tool)}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"arguments must be a JSON object, got %s; send one JSON object that matches the schema of %s", jsonType(v), tool)}
	}
	return obj, nil
}

// Validate checks a JSON document and returns one "/pointer: message" line
// per problem, sorted; none when it is valid.
func (s *Schema) Validate(doc []byte) []string {
	v, err := parseJSON(doc)
	if err != nil {
		return []string{"/: not valid JSON: " + err.Error()}
	}
	return s.v.validate(v)
}

// validate checks v, a value from parseJSON, and returns one
// "/pointer: message" line per problem, sorted and without duplicates; none
// if v is valid.
func (av *argValidator) validate(v any) []string {
	var ps []problem
	av.root.validate(v, nil, &ps)
	if len(ps) == 0 {
		return nil
	}
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = pointer(p.loc) + ": " + p.msg
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

// validate appends v's problems to ps. It checks keywords in the order, and
// with the short cuts, of the oracle: a wrong type, const or enum is the
// only problem reported for a value; every other keyword reports its own.
func (n *schemaNode) validate(v any, loc []string, ps *[]problem) {
	add := func(format string, args ...any) {
		*ps = append(*ps, problem{loc: slices.Clone(loc), msg: fmt.Sprintf(format, args...)})
	}
	if n.boolean != nil {
		if !*n.boolean {
			add("false schema")
		}
		return
	}

	t := typeOf(v)
	if n.types != 0 && n.types&t == 0 && (n.types&integerType == 0 || t != numberType || !isInteger(v.(json.Number))) {
		add("got %s, want %s", t, n.types)
		return
	}
	if n.hasConst && !jsonEqual(v, n.constVal) {
		add("%s", mustBe(n.constVal))
		return
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, func(e any) bool { return jsonEqual(v, e) }) {
		add("%s", mustBeOneOf(n.enum))
		return
	}

	for _, sub := range n.allOf {
		sub.validate(v, loc, ps)
	}
	for _, alternatives := range n.anyOfs {
		n.validateAnyOf(alternatives, v, loc, ps, add)
	}
	for _, alternatives := range n.userAnyOfs {
		var all []problem
		matched := false
		for _, alt := range alternatives {
			var own []problem
			alt.validate(v, loc, &own)
			if len(own) == 0 {
				matched = true
				break
			}
			all = append(all, own...)
		}
		if !matched {
			*ps = append(*ps, all...)
		}
	}
	for _, alternatives := range n.oneOfs {
		validateOneOf(alternatives, v, loc, ps, add)
	}
	if n.not != nil {
		var own []problem
		n.not.validate(v, loc, &own)
		if len(own) == 0 {
			add("'not' failed")
		}
	}

	switch v := v.(type) {
	case map[string]any:
		n.validateObject(v, loc, ps, add)
	case []any:
		n.validateArray(v, loc, ps, add)
	case string:
		n.validateString(v, add)
	case json.Number:
		n.validateNumber(v, add)
	}
}

// validateAnyOf accepts v when one of the alternatives does. Otherwise,
// when every alternative refused only v's type, it says which types would
// do; else it reports the problems of the alternative that came closest.
func (n *schemaNode) validateAnyOf(alternatives []*schemaNode, v any, loc []string, ps *[]problem, add func(string, ...any)) {
	var closest []problem
	var want schemaType
	onlyTypes := true
	for i, alt := range alternatives {
		var own []problem
		alt.validate(v, loc, &own)
		if len(own) == 0 {
			return
		}
		if i == 0 || len(own) < len(closest) {
			closest = own
		}
		if len(own) == 1 && len(own[0].loc) == len(loc) && alt.boolean == nil && alt.types != 0 && alt.types&typeOf(v) == 0 {
			want |= alt.types
		} else {
			onlyTypes = false
		}
	}
	if onlyTypes {
		add("got %s, want %s", typeOf(v), want)
		return
	}
	*ps = append(*ps, closest...)
}

func (n *schemaNode) validateObject(obj map[string]any, loc []string, ps *[]problem, add func(string, ...any)) {
	if n.minProperties >= 0 && len(obj) < n.minProperties {
		add("minProperties: got %d, want %d", len(obj), n.minProperties)
	}
	if n.maxProperties >= 0 && len(obj) > n.maxProperties {
		add("maxProperties: got %d, want %d", len(obj), n.maxProperties)
	}
	var missing []string
	for _, name := range n.required {
		if _, ok := obj[name]; !ok {
			missing = append(missing, name)
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		add("missing property %s", quote(missing[0]))
	default:
		add("missing properties %s", joinQuoted(missing))
	}
	var additional []string
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		sub, ok := n.properties[name]
		if !ok {
			sub = n.additional
		}
		switch {
		case sub == nil:
		case !ok && sub.boolean != nil && !*sub.boolean:
			// additionalProperties: false is one problem of the object,
			// naming every property it does not allow.
			additional = append(additional, name)
		default:
			sub.validate(obj[name], append(slices.Clip(loc), name), ps)
		}
	}
	if len(additional) > 0 {
		add("additional properties %s not allowed", joinQuoted(additional))
	}
}

func (n *schemaNode) validateArray(arr []any, loc []string, ps *[]problem, add func(string, ...any)) {
	if n.minItems >= 0 && len(arr) < n.minItems {
		add("minItems: got %d, want %d", len(arr), n.minItems)
	}
	if n.maxItems >= 0 && len(arr) > n.maxItems {
		add("maxItems: got %d, want %d", len(arr), n.maxItems)
	}
	if n.uniqueItems {
		if i, j, ok := duplicate(arr); ok {
			add("items at %d and %d are equal", i, j)
		}
	}
	if n.items != nil {
		for i, item := range arr {
			n.items.validate(item, append(slices.Clip(loc), strconv.Itoa(i)), ps)
		}
	}
}

func (n *schemaNode) validateString(s string, add func(string, ...any)) {
	if n.minLength >= 0 || n.maxLength >= 0 {
		// Length is in code points, not bytes.
		length := utf8.RuneCountInString(s)
		if n.minLength >= 0 && length < n.minLength {
			add("minLength: got %d, want %d", length, n.minLength)
		}
		if n.maxLength >= 0 && length > n.maxLength {
			add("maxLength: got %d, want %d", length, n.maxLength)
		}
	}
	// Unanchored, as the specification says: "^...$" anchors explicitly.
	if n.pattern != nil && !n.pattern.MatchString(s) {
		add("%s does not match pattern %s", quote(s), quote(n.pattern.String()))
	}
}

func (n *schemaNode) validateNumber(num json.Number, add func(string, ...any)) {
	if !n.numeric() {
		return
	}
	r, ok := rat(num)
	if !ok {
		// The oracle cannot check such a number either (it crashes); the
		// model is better served by a plain answer than by a guess.
		add("number %s is too large or too precise to check; send it in plain decimal notation", string(num))
		return
	}
	bound := func(kw string, want *big.Rat) {
		add("%s: got %s, want %s", kw, number(r), number(want))
	}
	if n.minimum != nil && r.Cmp(n.minimum) < 0 {
		bound("minimum", n.minimum)
	}
	if n.maximum != nil && r.Cmp(n.maximum) > 0 {
		bound("maximum", n.maximum)
	}
	if n.exclusiveMinimum != nil && r.Cmp(n.exclusiveMinimum) <= 0 {
		bound("exclusiveMinimum", n.exclusiveMinimum)
	}
	if n.exclusiveMaximum != nil && r.Cmp(n.exclusiveMaximum) >= 0 {
		bound("exclusiveMaximum", n.exclusiveMaximum)
	}
	if n.multipleOf != nil && !new(big.Rat).Quo(r, n.multipleOf).IsInt() {
		bound("multipleOf", n.multipleOf)
	}
}

// rat is num exactly. It fails for a number whose decimal exponent is too
// large for math/big to expand (beyond a million digits).
func rat(num json.Number) (*big.Rat, bool) {
	return new(big.Rat).SetString(string(num))
}

// isInteger says whether num has no fractional part: 1.0 and 1e2 are
// integers, as JSON Schema says.
func isInteger(num json.Number) bool {
	r, ok := rat(num)
	return ok && r.IsInt()
}

// jsonEqual is JSON Schema equality: numbers compare by value (1 equals
// 1.0), objects regardless of key order.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !jsonEqual(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		ra, oka := rat(a)
		rb, okb := rat(b)
		// A number rat cannot expand equals nothing, itself included, as
		// for the oracle.
		return oka && okb && ra.Cmp(rb) == 0
	default: // nil, bool, string
		return a == b
	}
}

// duplicate finds the first item of arr equal to an earlier one: i is the
// earliest such earlier item, j the later one.
func duplicate(arr []any) (i, j int, ok bool) {
	first := make(map[string]int, len(arr))
	var b strings.Builder
	for j, item := range arr {
		b.Reset()
		if !canonical(&b, item) {
			continue
		}
		key := b.String()
		if i, seen := first[key]; seen {
			return i, j, true
		}
		first[key] = j
	}
	return 0, 0, false
}

// canonical writes a text that two values share exactly when jsonEqual says
// they are equal. It fails for a value that equals nothing (one holding a
// number rat cannot expand).
func canonical(b *strings.Builder, v any) bool {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		b.WriteString(strconv.Quote(v))
	case json.Number:
		r, ok := rat(v)
		if !ok {
			return false
		}
		b.WriteString(r.RatString())
	case []any:
		b.WriteByte('[')
		for _, item := range v {
			if !canonical(b, item) {
				return false
			}
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for _, k := range slices.Sorted(maps.Keys(v)) {
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			if !canonical(b, v[k]) {
				return false
			}
			b.WriteByte(',')
		}
		b.WriteByte('}')
	}
	return true
}

// mustBe words a failed const.
func mustBe(want any) string {
	switch want.(type) {
	case []any, map[string]any:
		return "'const' failed"
	}
	return "value must be " + display(want)
}

// mustBeOneOf words a failed enum.
func mustBeOneOf(want []any) string {
	shown := make([]string, len(want))
	for i, v := range want {
		switch v.(type) {
		case []any, map[string]any:
			return "'enum' failed"
		}
		shown[i] = display(v)
	}
	if len(shown) == 1 {
		return "value must be " + shown[0]
	}
	return "value must be one of " + strings.Join(shown, ", ")
}

// display shows a scalar from a schema as the oracle does: strings quoted,
// numbers as written in the schema, null as <nil>.
func display(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case nil:
		return "<nil>"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return string(v)
	}
	return "value"
}

// quote single-quotes s with Go escapes, leaving double quotes bare.
func quote(s string) string {
	s = strconv.Quote(s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}

func joinQuoted(names []string) string {
	quoted := make([]string, len(names))
	for i, name := range names {
		quoted[i] = quote(name)
	}
	return strings.Join(quoted, ", ")
}

// number renders r as a JSON number: integers exactly and without digit
// grouping, fractions as the shortest float64 that reads back the same.
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

// errTrailingData is what parseJSON reports for a document followed by more.
var errTrailingData = errors.New("invalid character after top-level value")

// parseJSON decodes exactly one JSON document, keeping numbers exact as
// json.Number.
func parseJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errTrailingData
	}
	return v, nil
}

// validateOneOf accepts v when exactly one alternative does. When none
// does, it reports every alternative's problems; when two do, the first
// two that matched, as the oracle words it.
func validateOneOf(alternatives []*schemaNode, v any, loc []string, ps *[]problem, add func(string, ...any)) {
	var all []problem
	matched := -1
	for i, alt := range alternatives {
		var own []problem
		alt.validate(v, loc, &own)
		switch {
		case len(own) > 0:
			if matched < 0 {
				all = append(all, own...)
			}
		case matched < 0:
			matched = i
		default:
			add("'oneOf' failed, subschemas %d, %d matched", matched, i)
			return
		}
	}
	if matched < 0 {
		*ps = append(*ps, all...)
	}
}

// dialect2020 is the $schema a user schema may name: the one it is read as.
const dialect2020 = "https://json-schema.org/draft/2020-12/schema"

// userKeyword compiles one of userKeywords into n.
func (c *schemaCompiler) userKeyword(n *schemaNode, kw string, v any, loc []string) error {
	kloc := append(slices.Clip(loc), kw)
	switch kw {
	case "$schema":
		if s, _ := v.(string); strings.TrimSuffix(s, "#") != dialect2020 {
			return c.errorf(kloc, "$schema %s is not supported: Pixir reads a schema as JSON Schema 2020-12 (%s); name that or leave $schema out", display(v), dialect2020)
		}
	case "$id":
		if len(loc) > 0 {
			return c.errorf(kloc, "$id is supported only at the root of the schema (embedded resources are not); use $defs and $ref \"#/$defs/name\" instead")
		}
		if _, ok := v.(string); !ok {
			return c.errorf(kloc, "$id must be a string")
		}
	case "$defs", "definitions":
		defs, ok := v.(map[string]any)
		if !ok {
			return c.errorf(kloc, "%s must be an object of schemas", kw)
		}
		// Each definition is compiled, used or not, so that a mistake in
		// one is found now.
		for _, name := range slices.Sorted(maps.Keys(defs)) {
			c.ref(pointer(append(slices.Clip(kloc), name)))
		}
	case "$ref":
		s, ok := v.(string)
		if !ok {
			return c.errorf(kloc, "$ref must be a string")
		}
		if !strings.HasPrefix(s, "#") {
			return c.errorf(kloc, "$ref %s is not supported: only references inside the schema are (\"#/$defs/name\", \"#\")", display(s))
		}
		target, err := url.PathUnescape(s[1:])
		if err != nil || (target != "" && !strings.HasPrefix(target, "/")) {
			return c.errorf(kloc, "$ref %s is not a JSON Pointer into the schema (\"#/$defs/name\"); anchors are not supported", display(s))
		}
		if target == "" {
			target = "/"
		}
		n.allOf = append(n.allOf, c.ref(target))
	case "allOf", "anyOf", "oneOf":
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return c.errorf(kloc, "%s must be a non-empty array of schemas", kw)
		}
		subs := make([]*schemaNode, len(arr))
		for i, sub := range arr {
			var err error
			if subs[i], err = c.compile(sub, append(slices.Clip(kloc), strconv.Itoa(i))); err != nil {
				return err
			}
		}
		switch kw {
		case "allOf":
			n.allOf = append(n.allOf, subs...)
		case "anyOf":
			n.userAnyOfs = append(n.userAnyOfs, subs)
		default:
			n.oneOfs = append(n.oneOfs, subs)
		}
	case "not":
		sub, err := c.compile(v, kloc)
		if err != nil {
			return err
		}
		n.not = sub
	}
	return nil
}

// ref is the node of the schema at pointer p ("/" for the root, else
// "/$defs/a"), compiled after the document (resolveRefs): a reference may
// come before its target, or be recursive.
func (c *schemaCompiler) ref(p string) *schemaNode {
	if n, ok := c.refs[p]; ok {
		return n
	}
	n := &schemaNode{}
	c.refs[p] = n
	c.pending = append(c.pending, p)
	return n
}

// resolveRefs compiles the targets of the references, into the nodes
// handed out for them.
func (c *schemaCompiler) resolveRefs() error {
	for len(c.pending) > 0 {
		p := c.pending[0]
		c.pending = c.pending[1:]
		var tokens []string
		if p != "/" {
			for _, t := range strings.Split(p[1:], "/") {
				tokens = append(tokens, strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
			}
		}
		doc := c.root
		for _, t := range tokens {
			switch x := doc.(type) {
			case map[string]any:
				doc = x[t]
			case []any:
				i, err := strconv.Atoi(t)
				if err != nil || i < 0 || i >= len(x) {
					doc = nil
				} else {
					doc = x[i]
				}
			default:
				doc = nil
			}
			if doc == nil {
				return c.errorf(nil, "$ref \"#%s\" points at nothing in the schema", p)
			}
		}
		compiled, err := c.compile(doc, tokens)
		if err != nil {
			return err
		}
		*c.refs[p] = *compiled
	}
	return nil
}

// checkRefCycles refuses a schema whose references loop without going
// into a property or an item ({"$ref": "#"}): checking a value against it
// would never end.
func (c *schemaCompiler) checkRefCycles(root *schemaNode) error {
	const (
		visiting = 1
		done     = 2
	)
	state := map[*schemaNode]int{}
	var visit func(n *schemaNode) bool
	visit = func(n *schemaNode) bool {
		switch state[n] {
		case visiting:
			return false
		case done:
			return true
		}
		state[n] = visiting
		inPlace := slices.Clone(n.allOf)
		for _, alts := range append(slices.Clone(n.userAnyOfs), n.oneOfs...) {
			inPlace = append(inPlace, alts...)
		}
		if n.not != nil {
			inPlace = append(inPlace, n.not)
		}
		for _, sub := range inPlace {
			if !visit(sub) {
				return false
			}
		}
		state[n] = done
		return true
	}
	nodes := append([]*schemaNode{root}, slices.Collect(maps.Values(c.refs))...)
	for _, n := range nodes {
		if !visit(n) {
			return c.errorf(nil, "its $refs refer to each other in a loop without going into a property or an item; a value could never be checked against it")
		}
	}
	return nil
}
