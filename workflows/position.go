package workflows

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v4"
)

// SyntaxError is a workflow file that is not valid YAML (or JSON), at a
// line when the parser knows it.
type SyntaxError struct {
	Line int
	Msg  string
	JSON bool // a .json file (or one that starts with {): not valid JSON
}

// what is what the file is not valid as.
func (e *SyntaxError) what() string {
	if e.JSON {
		return "JSON"
	}
	return "YAML"
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: not valid %s: %s", e.Line, e.what(), e.Msg)
	}
	return "neither JSON nor valid YAML: " + e.Msg
}

// yamlSyntaxError is the parser's error in the file's terms.
func yamlSyntaxError(err error) error {
	if pe, ok := errors.AsType[*yaml.ParserError](err); ok {
		line := pe.Line
		// The parser's own errors ("did not find expected …", as opposed to
		// the scanner's) carry a 0-based line: that of the block or flow
		// collection being parsed, or of the token it stopped at. One more
		// names that line as an editor numbers it.
		if strings.HasPrefix(pe.Message, "did not find expected") {
			line++
		}
		return &SyntaxError{Line: line, Msg: pe.Message}
	}
	return &SyntaxError{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
}

// ProblemPosition is where in a workflow file (YAML or JSON, as b holds
// it) a validation problem is: the value of a key of the wrong type, the
// key it names, or else its step or loop. ok is false when the file does
// not parse or the problem names no place in it.
func ProblemPosition(b []byte, p Problem) (line, col int, ok bool) {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return 0, 0, false
	}
	at := doc.Content[0]
	switch {
	case p.Index != nil:
		at = item(at, "steps", func(i int, _ *yaml.Node) bool { return i == *p.Index })
	case p.Loop != "":
		at = item(at, "loops", func(_ int, n *yaml.Node) bool {
			_, id := mappingKey(n, "id")
			return id != nil && id.Value == p.Loop
		})
	}
	if at == nil {
		return 0, 0, false
	}
	key := p.Field
	if key == "" && p.Code == "unknown_agent" {
		key = "agent"
	}
	if key == "" {
		if m := leadingKeyRE().FindStringSubmatch(p.Message); m != nil {
			key = m[1]
		}
	}
	if k, v := fieldNode(at, key); k != nil {
		if strings.Contains(p.Message, ": got ") {
			return v.Line, v.Column, true // a wrong type: the value is what to fix
		}
		return k.Line, k.Column, true
	}
	if at == doc.Content[0] {
		return 0, 0, false // a problem of the whole file: no one place
	}
	return at.Line, at.Column, true
}

// leadingKeyRE reads the key a problem's message names after its step
// or loop: `steps[1] "b": depends_on "zz" is not …`, `task: got …`.
var leadingKeyRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:(?:steps|loops)\[\d+\](?: "[^"]*")?: )?([a-z_]+)[: ]`)
})

// item is the element of the sequence under key of mapping m that match
// picks.
func item(m *yaml.Node, key string, match func(int, *yaml.Node) bool) *yaml.Node {
	_, seq := mappingKey(m, key)
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	for i, n := range seq.Content {
		if match(i, n) {
			return n
		}
	}
	return nil
}

// fieldNode is the key node of a problem's field in mapping m, and its
// value, followed through its parts as far as the file has them:
// `when[1].path` is the key path of the second condition, `until[0].step`
// the key step of an until written as one condition, not a list.
func fieldNode(m *yaml.Node, field string) (k, v *yaml.Node) {
	cur := m
	for part := range strings.SplitSeq(field, ".") {
		name, index := part, -1
		if i := strings.IndexByte(part, '['); i > 0 && strings.HasSuffix(part, "]") {
			n, err := strconv.Atoi(part[i+1 : len(part)-1])
			if err != nil {
				break
			}
			name, index = part[:i], n
		}
		nk, nv := mappingKey(cur, name)
		if nk == nil {
			break
		}
		k, v, cur = nk, nv, nv
		if index < 0 {
			continue
		}
		switch {
		case nv.Kind == yaml.SequenceNode && index < len(nv.Content):
			k, v, cur = nv.Content[index], nv.Content[index], nv.Content[index]
		case nv.Kind == yaml.MappingNode && index == 0:
			// One condition written without a list.
		default:
			return k, v
		}
	}
	return k, v
}

// mappingKey is the key node named key of mapping m, and its value.
func mappingKey(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode || key == "" {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}
