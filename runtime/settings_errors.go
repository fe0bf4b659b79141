package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/pixir-go/pixir/internal/suggest"
)

// config.toml's problems in the user's terms: each names the file, the
// line and column, the key, and what is expected there.

// keyPos is a 1-based line and column in config.toml, and the kind of
// value written there (for a key = value).
type keyPos struct {
	line, col int
	value     unstable.Kind
}

// locateSettingsKeys maps each key of config.toml ("agents.max_threads",
// "profiles.local.model") and each table header ("agents") to where it is
// written. Best effort: it runs on a file that decoded, or to place an
// error.
func locateSettingsKeys(data []byte) map[string]keyPos {
	ps := map[string]keyPos{}
	walkTOML(data, func(x tomlExpr) bool {
		key := strings.Join(x.key, ".")
		if _, seen := ps[key]; !seen {
			kp := keyPos{line: x.shape.Start.Line, col: x.shape.Start.Column}
			if !x.table {
				kp.value = x.node.Value().Kind
			}
			ps[key] = kp
		}
		return true
	})
	return ps
}

// tomlExpr is a table header or a key = value of a TOML document.
type tomlExpr struct {
	node *unstable.Node
	// key is a header's key, or a key = value's under its table.
	key   []string
	table bool           // a [table] or [[array table]] header
	start int            // the offset of its first key part
	shape unstable.Shape // where its first key part is
}

// walkTOML calls visit with each table header and key = value of data in
// order, until visit returns false: the one walk of locateSettingsKeys,
// withoutSettingsKey and inlineValueKey, each of which tracked the table
// and joined it to a key itself. It stops at the first part that is not
// TOML; x.node is good only during its call.
func walkTOML(data []byte, visit func(x tomlExpr) bool) {
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		var parts []string
		var first *unstable.Node
		for it := e.Key(); it.Next(); {
			k := it.Node()
			if first == nil {
				first = k
			}
			parts = append(parts, string(k.Data))
		}
		if first == nil {
			continue
		}
		x := tomlExpr{node: e, start: int(first.Raw.Offset), shape: p.Shape(first.Raw)}
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = parts
			x.key, x.table = parts, true
		case unstable.KeyValue:
			x.key = append(slices.Clip(table), parts...)
		default:
			continue
		}
		if !visit(x) {
			return
		}
	}
}

// settingsDecodeError turns go-toml's error into one per problem, with
// the key and what it must hold. key is the key of a value that could not
// be decoded (go-toml stops at the first), for decodeSettings to leave out
// and decode the rest; nil when the problem is not one value's (the file
// is not TOML, or its unknown keys, which go-toml lists all at once).
func settingsDecodeError(path string, data []byte, err error) (key []string, problem error) {
	// Checked first: a strict-mode error also unwraps to a DecodeError.
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) && len(sm.Errors) > 0 {
		errs := make([]error, 0, len(sm.Errors))
		for i := range sm.Errors {
			de := &sm.Errors[i]
			line, col := de.Position()
			errs = append(errs, fmt.Errorf("%s:%d:%d: %s", path, line, col, unknownSettingsKey(de.Key())))
		}
		return nil, errors.Join(errs...)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		key := de.Key()
		if m := mismatchRE().FindStringSubmatch(msg); m != nil && len(key) > 0 {
			// go-toml names the inline table of a value inside one
			// (scripted = { script = 5 }): the key is the value's.
			key = inlineValueKey(data, key, line, col)
			return key, fmt.Errorf("%s:%d:%d: %s: got a TOML %s, want %s", path, line, col, TOMLKey(key...), m[1], settingsWant(key, m[2]))
		}
		if len(key) > 0 {
			return key, fmt.Errorf("%s:%d:%d: %s: %s", path, line, col, TOMLKey(key...), msg)
		}
		return nil, fmt.Errorf("%s:%d:%d: not valid TOML: %s", path, line, col, msg)
	}
	keys := locateSettingsKeys(data)
	// go-toml gives a value a text unmarshaler refused (a duration written
	// as a number) without its place: find the key of that type whose
	// value is not a string.
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		p := keys[key]
		t, ok := settingsType(strings.Split(key, "."))
		if ok && p.value != unstable.String && p.value != unstable.Invalid && (t == reflect.TypeFor[Duration]() || t == reflect.TypeFor[ByteSize]()) {
			return strings.Split(key, "."), fmt.Errorf("%s:%d:%d: %s: got a TOML %s, want %s", path, p.line, p.col, key, strings.ToLower(p.value.String()), settingsWant(strings.Split(key, "."), ""))
		}
	}
	return nil, fmt.Errorf("%s: %w", path, err)
}

// withoutSettingsKey returns data with the key = value line(s) that set
// key (or the inline table holding it) blanked: every byte but line ends
// turned into a space, so that what is left decodes on and every position
// in it stays where it was in the file. ok is false when no key = value
// sets key.
func withoutSettingsKey(data []byte, key []string) (_ []byte, ok bool) {
	type expr struct {
		key       []string
		value     bool
		start     int // the offset of its first key
		lineStart int // the offset of the line it starts on
	}
	var exprs []expr
	walkTOML(data, func(x tomlExpr) bool {
		lineStart := bytes.LastIndexByte(data[:x.start], '\n') + 1
		exprs = append(exprs, expr{key: x.key, value: !x.table, start: x.start, lineStart: lineStart})
		return true
	})
	best := -1
	for i, e := range exprs {
		if e.value && len(e.key) <= len(key) && slices.Equal(e.key, key[:len(e.key)]) && (best < 0 || len(e.key) > len(exprs[best].key)) {
			best = i
		}
	}
	if best < 0 {
		return data, false
	}
	end := len(data)
	if best+1 < len(exprs) {
		end = exprs[best+1].lineStart
	}
	out := slices.Clone(data)
	for i := exprs[best].start; i < end; i++ {
		if out[i] != '\n' && out[i] != '\r' {
			out[i] = ' '
		}
	}
	return out, true
}

// inlineValueKey is key, the key of an inline table go-toml could not
// decode, completed with the keys inside it (and inside the inline tables
// in it) that lead to the value at line and column; key itself when that
// value is not inside an inline table key sets.
func inlineValueKey(data []byte, key []string, line, col int) []string {
	offset := 0
	for l := 1; l < line; l++ {
		nl := bytes.IndexByte(data[offset:], '\n')
		if nl < 0 {
			return key
		}
		offset += nl + 1
	}
	offset += col - 1
	out := key
	walkTOML(data, func(x tomlExpr) bool {
		if x.table || !slices.Equal(x.key, key) {
			return true
		}
		out = slices.Clone(key)
		for v := x.node.Value(); v.Kind == unstable.InlineTable; {
			// The last key = value of the table that begins before the
			// value holds it.
			var in *unstable.Node
			for it := v.Children(); it.Next(); {
				kv := it.Node()
				if kv.Kind != unstable.KeyValue {
					continue
				}
				k := kv.Key()
				if !k.Next() || int(k.Node().Raw.Offset) > offset {
					break
				}
				in = kv
			}
			if in == nil {
				break
			}
			for it := in.Key(); it.Next(); {
				out = append(out, string(it.Node().Data))
			}
			v = in.Value()
		}
		return false
	})
	return out
}

// TOMLKey is a key path as TOML writes it: a part that is not a bare
// key (a server named "a.b") quoted.
func TOMLKey(parts ...string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p
		bare := func(r rune) bool {
			return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		}
		if p == "" || strings.IndexFunc(p, func(r rune) bool { return !bare(r) }) >= 0 {
			out[i] = tomlString(p)
		}
	}
	return strings.Join(out, ".")
}

// tomlString is s as a TOML basic string: Go's strconv.Quote writes \x7f,
// \a and \v, which TOML does not have. Control characters are \uXXXX,
// the rest of Unicode as it is (TOML is UTF-8).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// splitTOMLKey is the parts of a key path as TOMLKey writes it (or with
// single quotes); best effort, for keys named in Pixir's own messages.
func splitTOMLKey(s string) []string {
	var parts []string
	for {
		s = strings.TrimSpace(s)
		var part string
		switch {
		case strings.HasPrefix(s, `"`):
			if q, err := strconv.QuotedPrefix(s); err == nil {
				part, _ = strconv.Unquote(q)
				s = s[len(q):]
				break
			}
			part, s = s, ""
		case strings.HasPrefix(s, "'"):
			if end := strings.IndexByte(s[1:], '\''); end >= 0 {
				part, s = s[1:1+end], s[2+end:]
				break
			}
			part, s = s, ""
		default:
			end := strings.IndexByte(s, '.')
			if end < 0 {
				end = len(s)
			}
			part, s = strings.TrimSpace(s[:end]), s[end:]
		}
		parts = append(parts, part)
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(s, ".") {
			return parts
		}
		s = s[1:]
	}
}

// mismatchRE is compiled at its first use, not at every start of pixir.
var mismatchRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^cannot decode TOML (.+?) into (?:struct field \S+ of type )?(\S+)$`)
})

func unknownSettingsKey(key []string) string {
	if len(key) == 0 {
		return "unknown key"
	}
	msg := fmt.Sprintf("unknown key %q", strings.Join(key, "."))
	table, name := key[:len(key)-1], key[len(key)-1]
	allowed := settingsTableKeys(table)
	if len(allowed) == 0 {
		return msg
	}
	where := "at the top level"
	if len(table) > 0 {
		where = "in [" + strings.Join(table, ".") + "]"
	}
	if near := suggest.Nearest(name, allowed); near != "" {
		return fmt.Sprintf("%s; did you mean %q?", msg, near)
	}
	return fmt.Sprintf("%s; allowed %s: %s", msg, where, strings.Join(allowed, ", "))
}

// settingsType is the Go type a key path of config.toml decodes into.
func settingsType(path []string) (reflect.Type, bool) {
	t := reflect.TypeFor[Settings]()
	for _, seg := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem() // seg names an entry: a profile, a model, a server
		case reflect.Struct:
			f, ok := tomlField(t, seg)
			if !ok {
				return nil, false
			}
			t = f.Type
		default:
			return nil, false
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t, true
}

// tomlField finds the field of struct t that key decodes into, through
// embedded structs.
func tomlField(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if f.Anonymous && name == "" {
			if g, ok := tomlField(f.Type, key); ok {
				return g, true
			}
			continue
		}
		if name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// settingsTableKeys are the keys a table of config.toml allows.
func settingsTableKeys(table []string) []string {
	t, ok := settingsType(table)
	if !ok || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			switch {
			case f.Anonymous && name == "":
				walk(f.Type)
			case name != "" && name != "-" && f.IsExported():
				keys = append(keys, name)
			}
		}
	}
	walk(t)
	return keys
}

// settingsWant says what a key holds, in TOML's terms.
func settingsWant(key []string, goType string) string {
	t, ok := settingsType(key)
	if !ok {
		return goType
	}
	switch t {
	case reflect.TypeFor[Duration]():
		return `a duration such as "2m30s"`
	case reflect.TypeFor[ByteSize]():
		return `a size such as "64KiB"`
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "a table"
	}
	return goType
}

// keyOfMessageRE reads the key a validation message starts with:
// "[agents] max_threads must …", "[model_info.\"m\"] context_window …",
// "profiles.local.max_tokens must …", "max_turn_requests must …".
var keyOfMessageRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:\[([^\]]+)\]:? )?([a-z_]+(?:\.[A-Za-z0-9_-]+)*)?`)
})

// placeSettingsError prefixes a validation error with the file and the
// line and column of the key it is about (of its table when the key is not
// written, as for a missing one).
func placeSettingsError(path string, keys map[string]keyPos, err error) error {
	m := keyOfMessageRE().FindStringSubmatch(err.Error())
	var table string
	if m != nil && m[1] != "" {
		table = strings.NewReplacer(`"`, "", "'", "").Replace(m[1])
	}
	candidates := []string{}
	if m != nil && m[2] != "" {
		if table != "" {
			candidates = append(candidates, table+"."+m[2])
		} else {
			candidates = append(candidates, m[2])
		}
	}
	if table != "" {
		candidates = append(candidates, table)
	}
	for _, c := range candidates {
		if p, ok := keys[c]; ok {
			return fmt.Errorf("%s:%d:%d: %w", path, p.line, p.col, err)
		}
	}
	return fmt.Errorf("%s: %w", path, err)
}
