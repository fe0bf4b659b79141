package scripted

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"github.com/pixir-go/pixir/internal/plural"
)

// data is what the text and reasoning templates of a reply see.
type data struct {
	User       string // text of the turn's latest user message
	ToolResult string // text of the latest tool result in the turn, "" if none
	ToolName   string // name of the tool that produced ToolResult
	Call       int    // 1 for the first model call of the turn, 2 for the next …
	Model      string // the model name of the request
	Tools      string // the names of the tools the request offers, space-separated
}

// isDataField reports whether name is a field of the data a template sees.
func isDataField(name string) bool {
	switch name {
	case "User", "ToolResult", "ToolName", "Call", "Model", "Tools":
		return true
	}
	return false
}

// funcs are the template functions a script may use besides the built-in
// ones of text/template. The string argument comes last so they read well in
// pipelines: {{.ToolResult | output | lines 5}}. Made on first use: a start
// of pixir parses no template.
var funcs = sync.OnceValue(func() template.FuncMap {
	return template.FuncMap{
		"truncate": truncate,
		"lines":    firstLines,
		"oneline":  oneline,
		"trim":     strings.TrimSpace,
		"ok":       resultOK,
		"output":   resultOutput,
		"field":    field,
	}
})

// truncate keeps the first n characters of s, marking a cut with "…".
func truncate(n int, s string) string {
	if n < 0 {
		n = 0
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// firstLines keeps the first n lines of s and says how many were left out.
func firstLines(n int, s string) string {
	body := strings.TrimRight(s, "\n")
	ls := strings.Split(body, "\n")
	if n < 0 {
		n = 0
	}
	if len(ls) <= n {
		return s
	}
	return strings.Join(ls[:n], "\n") + "\n… (" + plural.Of(len(ls)-n, "more line", "more lines") + ")"
}

// oneline collapses all runs of white space in s into single spaces.
func oneline(s string) string { return strings.Join(strings.Fields(s), " ") }

// resultOK reports whether s is a tool result envelope with "ok": true.
func resultOK(s string) bool {
	var env struct {
		OK bool `json:"ok"`
	}
	return json.Unmarshal([]byte(s), &env) == nil && env.OK
}

// resultOutput renders the part of a tool result envelope a person wants to
// read: for a failure "<kind>: <message>"; for a success the output when it
// is a string, else its first string field among output, content, text,
// stdout, else the output as compact JSON. Text that is not an envelope is
// returned unchanged.
func resultOutput(s string) string {
	var env struct {
		OK     *bool           `json:"ok"`
		Output json.RawMessage `json:"output"`
		Error  *struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(s), &env) != nil || env.OK == nil {
		return s
	}
	if !*env.OK {
		switch {
		case env.Error != nil && env.Error.Kind == "":
			return env.Error.Message
		case env.Error != nil:
			return env.Error.Kind + ": " + env.Error.Message
		case len(env.Output) == 0:
			return "failed"
		}
		// Work that ran and did not succeed: its output says how.
	}
	var str string
	if json.Unmarshal(env.Output, &str) == nil {
		return str
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(env.Output, &obj) == nil {
		for _, k := range []string{"output", "content", "text", "stdout"} {
			if json.Unmarshal(obj[k], &str) == nil {
				return str
			}
		}
	}
	return string(env.Output)
}

// field returns the value at a dotted path ("output.exit_code", with
// numbers indexing arrays: "output.agents.0.summary") of the JSON text s: a
// string as is, anything else as compact JSON, "" when missing.
func field(path, s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return ""
	}
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[part]; !ok {
				return ""
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return ""
			}
			v = x[i]
		default:
			return ""
		}
	}
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// checkFields reports a reference to a field the template data does not
// have ({{.Usr}}), so that a typo is a load error rather than a failure in
// the middle of a demo. Bodies of range and with, where dot changes, are
// not checked; $.Field is checked everywhere.
func checkFields(t *template.Template) error {
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if err := checkNode(tt.Root, true); err != nil {
			return err
		}
	}
	return nil
}

func checkNode(n parse.Node, dotIsData bool) error {
	switch n := n.(type) {
	case nil:
		return nil
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := checkNode(c, dotIsData); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return checkNode(n.Pipe, dotIsData)
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Cmds {
			if err := checkNode(c, dotIsData); err != nil {
				return err
			}
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			if err := checkNode(a, dotIsData); err != nil {
				return err
			}
		}
	case *parse.IfNode:
		return checkBranch(&n.BranchNode, dotIsData, dotIsData)
	case *parse.RangeNode:
		return checkBranch(&n.BranchNode, dotIsData, false)
	case *parse.WithNode:
		return checkBranch(&n.BranchNode, dotIsData, false)
	case *parse.TemplateNode:
		return checkNode(n.Pipe, dotIsData)
	case *parse.FieldNode:
		if dotIsData && !isDataField(n.Ident[0]) {
			return unknownField(n.Ident[0])
		}
	case *parse.VariableNode:
		if n.Ident[0] == "$" && len(n.Ident) > 1 && !isDataField(n.Ident[1]) {
			return unknownField(n.Ident[1])
		}
	case *parse.ChainNode:
		return checkNode(n.Node, dotIsData)
	}
	return nil
}

func checkBranch(b *parse.BranchNode, dotIsData, bodyDotIsData bool) error {
	if err := checkNode(b.Pipe, dotIsData); err != nil {
		return err
	}
	if err := checkNode(b.List, bodyDotIsData); err != nil {
		return err
	}
	return checkNode(b.ElseList, dotIsData)
}

func unknownField(name string) error {
	return fmt.Errorf("unknown field .%s; the fields are .User, .ToolResult, .ToolName, .Call, .Model and .Tools", name)
}
