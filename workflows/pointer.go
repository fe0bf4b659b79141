package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// JSON Pointers (RFC 6901) into typed payloads, the canonical form of JSON
// values that conditions and convergence compare, and the walk of an
// output_schema that checks a pointer before anything runs.

// parsePointer splits a JSON Pointer into its unescaped tokens. The empty
// pointer (the whole payload) is not accepted: a condition on the whole
// payload is a condition on the status.
func parsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not a JSON Pointer: it must start with / (e.g. /verdict, /findings/0/kind)", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, t := range parts {
		for k := 0; k < len(t); k++ {
			if t[k] == '~' && (k+1 == len(t) || (t[k+1] != '0' && t[k+1] != '1')) {
				return nil, fmt.Errorf("%q is not a JSON Pointer: ~ must be written ~0, and / inside a key ~1", p)
			}
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// lookup follows tokens into a decoded JSON value (decodeValue): the value
// and whether it is there.
func lookup(v any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[t]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) || (len(t) > 1 && t[0] == '0') {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// decodeValue decodes JSON keeping numbers exact (json.Number).
func decodeValue(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// canonical is v as compact JSON with object keys sorted and numbers in
// one form (1, 1.0 and 1e0 are the same), so equal values have equal
// text. With unordered, arrays are sorted too (and so compared as
// multisets): the same findings in another order are the same findings.
func canonical(v any, unordered bool) string {
	var b strings.Builder
	writeCanonical(&b, v, unordered)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any, unordered bool) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			writeCanonical(b, x[k], unordered)
		}
		b.WriteByte('}')
	case []any:
		elems := make([]string, len(x))
		for i, e := range x {
			elems[i] = canonical(e, unordered)
		}
		if unordered {
			slices.Sort(elems)
		}
		b.WriteByte('[')
		b.WriteString(strings.Join(elems, ","))
		b.WriteByte(']')
	case json.Number:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		} else {
			b.WriteString(string(x))
		}
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	default:
		out, _ := json.Marshal(x)
		b.Write(out)
	}
}

// canonicalRaw is canonical of raw JSON text; invalid text stays as it is.
func canonicalRaw(raw json.RawMessage) string {
	v, err := decodeValue(raw)
	if err != nil {
		return string(raw)
	}
	return canonical(v, false)
}

// schemaAt walks an output_schema along a pointer's tokens and returns the
// schema of the value there, or a reason why no payload that matches the
// schema can have it (a property the schema does not declare, an index
// into something that is not an array). Where the schema does not say
// (no properties, no items), the walk stops with a nil node and no
// problem: the pointer is possible.
func schemaAt(schema any, tokens []string) (map[string]any, string) {
	node, _ := schema.(map[string]any)
	for k, t := range tokens {
		if node == nil {
			return nil, ""
		}
		where := "/" + strings.Join(tokens[:k], "/")
		if props, ok := node["properties"].(map[string]any); ok {
			if sub, ok := props[t]; ok {
				node, _ = sub.(map[string]any)
				continue
			}
			if ap, ok := node["additionalProperties"].(map[string]any); ok {
				node = ap
				continue
			}
			names := make([]string, 0, len(props))
			for n := range props {
				names = append(names, n)
			}
			slices.Sort(names)
			return nil, fmt.Sprintf("the output_schema declares no property %q at %s (it declares: %s)", t, where, strings.Join(names, ", "))
		}
		if items, ok := node["items"]; ok {
			if _, err := strconv.Atoi(t); err != nil {
				return nil, fmt.Sprintf("%s is an array in the output_schema; %q is not an index", where, t)
			}
			node, _ = items.(map[string]any)
			continue
		}
		if ts := schemaTypes(node); len(ts) > 0 && !slices.Contains(ts, "object") && !slices.Contains(ts, "array") {
			return nil, fmt.Sprintf("%s is %s in the output_schema; nothing is inside it", where, strings.Join(ts, " or "))
		}
		if ap, ok := node["additionalProperties"].(map[string]any); ok {
			node = ap
			continue
		}
		return nil, ""
	}
	return node, ""
}

// notArray says why no value that matches the schema node is an array
// (its type, enum or const, or every alternative of its anyOf or oneOf
// says so, or one of its allOf does), or "" when one can be, as far as
// these keywords tell.
func notArray(node map[string]any) string {
	if ts := schemaTypes(node); len(ts) > 0 && !slices.Contains(ts, "array") {
		return "is " + strings.Join(ts, " or ")
	}
	if enum, ok := node["enum"].([]any); ok {
		values := make([]string, len(enum))
		for i, e := range enum {
			if _, isArray := e.([]any); isArray {
				return ""
			}
			values[i] = canonical(e, false)
		}
		return "can only be " + strings.Join(values, ", ") + " (its enum)"
	}
	if c, ok := node["const"]; ok {
		if _, isArray := c.([]any); !isArray {
			return "can only be " + canonical(c, false) + " (its const)"
		}
	}
	if b, ok := node["not"].(map[string]any); ok && len(b) == 0 {
		return "can be nothing (its not: {})"
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		alts, ok := node[k].([]any)
		if !ok || len(alts) == 0 {
			continue
		}
		arrays := false
		for _, a := range alts {
			if sub, _ := a.(map[string]any); a != false && (sub == nil || notArray(sub) == "") {
				arrays = true
				break
			}
		}
		if !arrays {
			return "is no array in any alternative of its " + k
		}
	}
	if all, ok := node["allOf"].([]any); ok {
		for _, a := range all {
			if sub, ok := a.(map[string]any); ok {
				if why := notArray(sub); why != "" {
					return why
				}
			}
		}
	}
	return ""
}

// schemaTypes is the type keyword of a schema node as a list.
func schemaTypes(node map[string]any) []string {
	switch t := node["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// valueAllowed says why a schema node cannot hold the value (raw JSON),
// or "" when it can as far as its enum, const and type tell.
func valueAllowed(node map[string]any, raw json.RawMessage) string {
	if node == nil {
		return ""
	}
	v, err := decodeValue(raw)
	if err != nil {
		return "it is not JSON"
	}
	want := canonical(v, false)
	if enum, ok := node["enum"].([]any); ok {
		var allowed []string
		for _, e := range enum {
			c := canonical(e, false)
			if c == want {
				return ""
			}
			allowed = append(allowed, c)
		}
		return fmt.Sprintf("it is not one of the values the output_schema allows there: %s", strings.Join(allowed, ", "))
	}
	if c, ok := node["const"]; ok {
		if canonical(c, false) != want {
			return fmt.Sprintf("the output_schema fixes the value there to %s", canonical(c, false))
		}
		return ""
	}
	if ts := schemaTypes(node); len(ts) > 0 && !slices.Contains(ts, jsonTypeOf(v)) &&
		(jsonTypeOf(v) != "integer" || !slices.Contains(ts, "number")) &&
		(jsonTypeOf(v) != "number" || !slices.Contains(ts, "integer") || !isWhole(v)) {
		return fmt.Sprintf("it is %s, and the output_schema says %s there", jsonTypeOf(v), strings.Join(ts, " or "))
	}
	return ""
}

// jsonTypeOf names the JSON Schema type of a decoded value.
func jsonTypeOf(v any) string {
	switch x := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	}
	return "number"
}

func isWhole(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	f, err := n.Float64()
	return err == nil && f == float64(int64(f))
}
