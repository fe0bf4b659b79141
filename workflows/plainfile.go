package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"sync"
)

// A plain workflow file (no params, no description, no ${…}) is decoded
// once, straight into its Workflow, instead of to a tree, encoded again
// and decoded from that (ParseTemplate's way, which a template needs for
// its checks and substitution). Both ways give the same Workflow when the
// file's objects have no duplicate keys (the tree keeps the last; a
// struct merges them in the order written) and its RawMessage members
// (output_schema, a condition's values) are written as the tree's
// encoding writes them (canonicalRawMembers). Anything in doubt, and every
// error, takes the tree's way: its messages are the ones the tests pin.
// FuzzPlainFileDecodedOnceAsThroughTheTree holds the two ways together.

// decodePlainFile is raw's Workflow decoded once, or false when raw is not
// plainly a workflow without parameters: then ParseTemplate's general way
// decides, errors included.
func decodePlainFile(raw json.RawMessage) (*Workflow, bool) {
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false // not an object (null decodes into a Workflow without a word)
	}
	for _, marker := range [][]byte{
		[]byte("${"),            // a reference to check
		[]byte(`\u`),            // an escape that could spell one, or a key
		[]byte(`"description"`), // the template's members, which the tree's way removes or refuses
		[]byte(`"params"`),
		[]byte(`"template"`),
		[]byte(`"args"`),
	} {
		if bytes.Contains(raw, marker) {
			return nil, false
		}
	}
	if !distinctPlainKeys(raw) {
		return nil, false
	}
	// Decode's work without its outer layer (a decoder whose one value
	// is handed whole to UnmarshalJSON, which decodes it again): the same
	// Workflow from one decoder fewer, for a file of thousands of steps.
	// Its steps are decoded by the same decoder too, not each by a
	// decoder of its own (Step.UnmarshalJSON): the outer decoder's
	// DisallowUnknownFields holds for them as well, and only the errors'
	// wording differs, which this way never reports.
	w := new(Workflow)
	type plainStep Step // Step without UnmarshalJSON
	var steps struct {
		*workflowFields
		Steps []plainStep `json:"steps,omitempty"` // shadows the Workflow's
	}
	steps.workflowFields = (*workflowFields)(w)
	// The decoder appends the steps to this slice, which grew as it went:
	// a copy of every step decoded so far at each doubling, twice the
	// steps' size again for a file of thousands (13 of its 23 MB at
	// 10,000 steps). A step has an "id" key, so there is room for every
	// one that has; an "id" anywhere else only leaves room unused. That
	// room is made before the file is decoded or checked, so it is
	// bounded: by the steps the file's bytes could hold, and by
	// maxPlainStepRoom (a step is ~36 times the size of the smallest
	// "id" object in the file; a 9 MB file of {"id":1} outside the steps
	// reserved 344 MB before it was refused). Past it the decoder's
	// append grows the slice as before.
	if n := bytes.Count(raw, []byte(`"id"`)); n > 0 {
		steps.Steps = make([]plainStep, 0, min(n, len(raw)/len(smallestStep), maxPlainStepRoom))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := w.decodeStrictlyInto(dec, &steps); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	if len(steps.Steps) == 0 && cap(steps.Steps) > 0 {
		// The room made above, untouched: the file has no steps (an
		// empty array is decoded as a new slice without room).
		steps.Steps = nil
	}
	if steps.Steps != nil {
		w.Steps = make([]Step, len(steps.Steps))
		for i := range steps.Steps {
			w.Steps[i] = Step(steps.Steps[i])
		}
	}
	if !canonicalRawMembers(reflect.ValueOf(w).Elem()) {
		return nil, false
	}
	return w, true
}

// smallestStep is the fewest bytes a step with an "id" key takes in a
// steps array, its comma included.
const smallestStep = `{"id":""},`

// maxPlainStepRoom bounds the steps decodePlainFile makes room for ahead
// of decoding them (~21 MB of steps; a file of 10,000 steps, the largest
// measured, fits in it).
const maxPlainStepRoom = 1 << 16

// maxPlainKeys bounds the keys of one object that distinctPlainKeys
// compares pairwise; an object with more takes the tree's way.
const maxPlainKeys = 64

// distinctPlainKeys says whether every object in raw has keys of printable
// ASCII without escapes that differ from each other even with case folded
// (encoding/json matches members to fields without case). raw need not be
// valid JSON: Decode judges that.
func distinctPlainKeys(raw []byte) bool {
	type open struct {
		object bool
		first  int // its first key in keys
	}
	var stack []open
	var keys [][]byte
	expectKey := false
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{':
			stack = append(stack, open{object: true, first: len(keys)})
			expectKey = true
		case '[':
			stack = append(stack, open{first: len(keys)})
			expectKey = false
		case '}', ']':
			if len(stack) == 0 {
				return false
			}
			keys = keys[:stack[len(stack)-1].first]
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
		case '"':
			j := i + 1
			for j < len(raw) && raw[j] != '"' {
				if raw[j] == '\\' {
					if expectKey {
						return false
					}
					j++
				}
				j++
			}
			if j >= len(raw) {
				return false
			}
			if expectKey {
				key := raw[i+1 : j]
				for _, c := range key {
					if c < 0x20 || c > 0x7e {
						return false
					}
				}
				mine := keys[stack[len(stack)-1].first:]
				if len(mine) >= maxPlainKeys {
					return false
				}
				for _, k := range mine {
					if bytes.EqualFold(k, key) {
						return false
					}
				}
				keys = append(keys, key)
				expectKey = false
			}
			i = j
		}
	}
	return true
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// canonicalRawMembers rewrites every json.RawMessage in v (a decoded spec)
// as the tree's way leaves it: decoded with exact numbers and encoded by
// json.Marshal (keys sorted, compact, HTML escaped). It says false when v
// holds a value it cannot walk (a map, an interface): the tree's way then.
func canonicalRawMembers(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer:
		return v.IsNil() || canonicalRawMembers(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() && mayHoldRaw(f.Type()) && !canonicalRawMembers(f) {
				return false
			}
		}
	case reflect.Slice:
		if v.Type() == rawMessageType {
			if !v.IsNil() {
				tree, err := decodeValue(v.Bytes())
				if err != nil {
					return false
				}
				v.SetBytes(mustJSON(tree))
			}
			return true
		}
		for i := range v.Len() {
			if !canonicalRawMembers(v.Index(i)) {
				return false
			}
		}
	case reflect.Map, reflect.Interface, reflect.Array:
		return v.IsZero()
	}
	return true
}

// rawHolders caches mayHoldRaw by type.
var rawHolders sync.Map // reflect.Type → bool

// mayHoldRaw says whether a value of type t may hold a json.RawMessage, or
// something canonicalRawMembers must look at (a map, an interface): true
// when in doubt.
func mayHoldRaw(t reflect.Type) bool {
	if held, ok := rawHolders.Load(t); ok {
		return held.(bool)
	}
	held := mayHoldRawSeen(t, map[reflect.Type]bool{})
	rawHolders.Store(t, held)
	return held
}

func mayHoldRawSeen(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true // a cycle: in doubt
	}
	seen[t] = true
	defer delete(seen, t)
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		return t == rawMessageType || mayHoldRawSeen(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && mayHoldRawSeen(f.Type, seen) {
				return true
			}
		}
		return false
	case reflect.Map, reflect.Interface, reflect.Array:
		return true
	}
	return false
}
