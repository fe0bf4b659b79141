package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A fan-out's instances: the step with its item bound into its task and
// its read and write sets. Item values are data, never evaluated: a value
// is put into the task as text, and into a path pattern as a literal path
// (its glob characters escaped, so an item cannot widen its instance's
// write set), and a bound pattern that climbs out of the workspace or is
// otherwise invalid fails the instance before anything starts.

// instantiate is step st bound to item k.
func instantiate(st *Step, k int, item any) (*Step, error) {
	out := *st
	out.ID = st.ID + "[" + strconv.Itoa(k+1) + "]"
	var err error
	out.Task = bindText(st.Task, k, item, &err)
	bindSet := func(field string, set []string) []string {
		var res []string
		for _, p := range set {
			if err != nil {
				return nil
			}
			res = append(res, bindPattern(field, p, k, item, &err)...)
		}
		return normalizePatterns(res)
	}
	out.ReadSet = bindSet("read_set", st.ReadSet)
	out.WriteSet = bindSet("write_set", st.WriteSet)
	if err != nil {
		return nil, fmt.Errorf("item %d: %w", k+1, err)
	}
	for _, f := range []struct {
		field string
		set   []string
	}{{"read_set", out.ReadSet}, {"write_set", out.WriteSet}} {
		for _, p := range f.set {
			if why := patternProblem(p); why != "" {
				return nil, fmt.Errorf("item %d: its %s pattern %q is invalid: %s", k+1, f.field, p, why)
			}
			if strings.ContainsAny(p, "\n\r\x00") {
				return nil, fmt.Errorf("item %d: its %s pattern %q holds a control character", k+1, f.field, p)
			}
		}
	}
	if out.PermissionMode == Writer && len(out.WriteSet) == 0 {
		return nil, fmt.Errorf("item %d: it names no file to write (its write_set is empty)", k+1)
	}
	return &out, nil
}

// bindingValue is the value of one binding for item k: ${index} is the
// 1-based position, ${item} the item, ${item.a.b} a field in it.
func bindingValue(expr string, k int, item any) (any, error) {
	if expr == "index" {
		return json.Number(strconv.Itoa(k + 1)), nil
	}
	fields := strings.Split(expr, ".")[1:]
	v, ok := lookup(item, fields)
	if !ok {
		return nil, fmt.Errorf("it has no %s (the spec binds ${%s})", strings.Join(fields, "."), expr)
	}
	return v, nil
}

// bindText replaces the bindings in text: strings as they are, arrays of
// strings joined with ", ", anything else as JSON.
func bindText(text string, k int, item any, errp *error) string {
	return bindingPattern().ReplaceAllStringFunc(text, func(m string) string {
		expr := strings.TrimSpace(m[2 : len(m)-1])
		if !itemBinding().MatchString(expr) {
			return m
		}
		v, err := bindingValue(expr, k, item)
		if err != nil {
			if *errp == nil {
				*errp = err
			}
			return m
		}
		return textOf(v)
	})
}

func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = textOf(e)
		}
		return strings.Join(parts, ", ")
	}
	return canonical(v, false)
}

// bindPattern binds one pattern: a pattern that is a single binding to an
// array becomes one literal pattern per element; bindings inside a
// pattern take scalars, escaped.
func bindPattern(field, p string, k int, item any, errp *error) []string {
	locs := bindingPattern().FindAllStringSubmatchIndex(p, -1)
	if len(locs) == 0 {
		return []string{p}
	}
	if len(locs) == 1 && locs[0][0] == 0 && locs[0][1] == len(p) {
		expr := strings.TrimSpace(p[locs[0][2]:locs[0][3]])
		if itemBinding().MatchString(expr) {
			v, err := bindingValue(expr, k, item)
			if err != nil {
				*errp = err
				return nil
			}
			if arr, ok := v.([]any); ok {
				out := make([]string, 0, len(arr))
				for _, e := range arr {
					s, ok := e.(string)
					if !ok {
						*errp = fmt.Errorf("%s binds ${%s}, whose elements must be paths (strings), not %s", field, expr, jsonTypeOf(e))
						return nil
					}
					if why := pathValueProblem(s); why != "" {
						*errp = fmt.Errorf("%s binds ${%s}, whose element %q %s", field, expr, s, why)
						return nil
					}
					out = append(out, literalPath(s))
				}
				return out
			}
		}
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		b.WriteString(p[last:loc[0]])
		last = loc[1]
		expr := strings.TrimSpace(p[loc[2]:loc[3]])
		if !itemBinding().MatchString(expr) {
			b.WriteString(p[loc[0]:loc[1]])
			continue
		}
		v, err := bindingValue(expr, k, item)
		if err != nil {
			*errp = err
			return nil
		}
		switch x := v.(type) {
		case string:
			if why := pathValueProblem(x); why != "" {
				*errp = fmt.Errorf("%s pattern %q binds ${%s} to %q, which %s", field, p, expr, x, why)
				return nil
			}
			b.WriteString(valueInPattern(x, p[loc[1]:]))
		case json.Number:
			b.WriteString(x.String())
		default:
			*errp = fmt.Errorf("%s pattern %q binds ${%s} inside a path, which needs a string, not %s", field, p, expr, jsonTypeOf(v))
			return nil
		}
	}
	b.WriteString(p[last:])
	return []string{b.String()}
}

// pathValueProblem says why a value put into a path pattern would widen
// it, or "". The bound pattern is checked again as any pattern is, but
// only after its spaces are trimmed, a leading "./" dropped and a trailing
// "/" read as "/**" (normalizePatterns): "${dir}/**" with dir "." or " ."
// would become "**", the whole workspace, and "src/${name}" with name " "
// "src/**". So a value must be a path with no space at either end and,
// past a leading "./" (models write it), no empty or "." segment (a ".."
// is left to the pattern's own check, which refuses it as climbing out).
func pathValueProblem(v string) string {
	if v != strings.TrimSpace(v) {
		return "begins or ends with a space: a value in a path must name a file or folder, never widen the pattern"
	}
	v = trimDotSlash(v)
	if v == "" {
		return "is empty: a value in a path must name a file or folder"
	}
	// A leading "/" is left to the pattern's check too (absolute).
	for _, seg := range strings.Split(strings.TrimPrefix(strings.TrimSuffix(v, "/"), "/"), "/") {
		if seg == "" || seg == "." {
			return "has an empty or \".\" segment: a value in a path must name a file or folder, never widen the pattern"
		}
	}
	return ""
}

// valueInPattern is a path value (pathValueProblem found none) as it goes
// into a pattern before rest: its glob characters escaped, and its one
// trailing "/" dropped when the pattern goes on with "/" — models write a
// folder "TODO/", and "${dir}/**" is then "TODO/**", the folder, not
// "TODO//**" (an empty segment). At the end of a pattern the "/" stays:
// "src/${name}" with "x/" is src/x/, the folder (as literalPath reads it).
// A leading "./" is dropped wherever the value goes: a pattern loses its
// own only at its start, and "src/./TODO/**" would be refused.
func valueInPattern(v, rest string) string {
	return escapeGlob(valueInPath(v, rest))
}

// valueInPath is a path value (pathValueProblem found none) as it goes
// into a literal path before rest (commit.requires), by valueInPattern's
// rule but for the escaping: "${todo}/X.md" with "./TODO/" is TODO/X.md.
// A path has no wildcards (validation refuses them), so a value's glob
// character stays as it is, and is refused there.
func valueInPath(v, rest string) string {
	v = trimDotSlash(v)
	if strings.HasPrefix(rest, "/") {
		v = strings.TrimSuffix(v, "/")
	}
	return v
}

// literalPath is a path from an item as a pattern that matches just it;
// a trailing / (a directory) keeps meaning everything beneath it.
func literalPath(s string) string {
	dir := strings.HasSuffix(s, "/")
	s = escapeGlob(strings.TrimRight(s, "/"))
	if dir {
		s += "/"
	}
	return s
}

// escapeGlob escapes doublestar's special characters.
func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[]{}\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if slices.Contains([]rune(`*?[]{}\`), r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
