package agents

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pixir-go/pixir/workflows"
)

// An agent's profile is what its children may do, beside its permission
// mode (sandbox_mode): the tools they are offered, the files they may
// write, how their shell commands run, and the network. Every key narrows:
// a profile never gives a child more than its parent's mode and a
// workflow step's declarations allow.

// Shell settings of an agent file (shell = "…"). A list of programs
// (shell = ["go", "gofmt"]) is ShellWriteSet with only those programs.
const (
	// ShellDeny: the child is not offered bash.
	ShellDeny = "deny"
	// ShellReadOnly: commands see a read-only workspace (they may write
	// only their private temporary folder), whatever the write set.
	ShellReadOnly = "read-only"
	// ShellWriteSet: commands may write beneath the folders of the write
	// set (the whole workspace without one). The default.
	ShellWriteSet = "write-set"
)

var shellModes = []string{ShellDeny, ShellReadOnly, ShellWriteSet}

// ToolNames are the built-in tools a profile's tools may name (MCP tools
// are named mcp__<server>__<tool>, or mcp__<server>__* for all of a
// server's). report_checkpoint is not among them: a workflow step's child
// is always offered it, since it is how the step reports.
var ToolNames = []string{
	"read", "write", "edit", "bash", "grep", "glob", "update_plan",
	"spawn_agent", "wait_agent", "send_input", "close_agent", "list_agents", "merge_agent", "run_workflow",
}

// mcpPrefix starts the name of every MCP tool (tools/mcp.ToolPrefix).
const mcpPrefix = "mcp__"

// Profile is what an agent's children may do.
type Profile struct {
	// Tools, when not nil, is the allowlist of the tools its children are
	// offered (names, or an MCP server's tools as mcp__<server>__*).
	Tools []string `json:"tools"`
	// WriteSet, when not nil, are the path patterns (doublestar, relative
	// to the workspace) beneath which its children may change files, with
	// any tool.
	WriteSet []string `json:"write_set"`
	// Shell is ShellDeny, ShellReadOnly or ShellWriteSet; never empty
	// after Load.
	Shell string `json:"shell"`
	// Commands, when not nil, are the only programs its children's
	// commands may start (shell = [...]): names looked up in PATH, or
	// absolute paths.
	Commands []string `json:"commands"`
}

// AllowsTool reports whether the profile offers the tool called name.
func (p Profile) AllowsTool(name string) bool {
	if name == "bash" && p.Shell == ShellDeny {
		return false
	}
	if p.Tools == nil {
		return true
	}
	for _, t := range p.Tools {
		if prefix, ok := strings.CutSuffix(t, "*"); ok && strings.HasPrefix(name, prefix) || t == name {
			return true
		}
	}
	return false
}

// Summary says the profile in a few words, for listings:
// "tools read, grep; writes TODO/**; shell deny; no network".
func (a Agent) Summary() string {
	var parts []string
	if a.ReadOnly() {
		parts = append(parts, "read-only")
	}
	if a.Profile.Tools != nil {
		tools := strings.Join(a.Profile.Tools, ", ")
		if tools == "" {
			tools = "none"
		}
		parts = append(parts, "tools "+tools)
	}
	if a.Profile.WriteSet != nil {
		parts = append(parts, "writes "+strings.Join(a.Profile.WriteSet, ", "))
	}
	switch {
	case a.Profile.Commands != nil:
		parts = append(parts, "shell "+strings.Join(a.Profile.Commands, ", "))
	case a.Profile.Shell != "" && a.Profile.Shell != ShellWriteSet:
		parts = append(parts, "shell "+a.Profile.Shell)
	}
	if a.DenyNetwork() {
		parts = append(parts, "no network")
	}
	if len(parts) == 0 {
		return "inherit"
	}
	return strings.Join(parts, "; ")
}

// profileFile are the profile keys of an agent file, decoded loosely and
// checked by readProfile, so that a wrong type gets a message in the file's
// own terms ("tools: got a TOML string, want an array of strings").
type profileFile struct {
	Tools    any `toml:"tools"`
	WriteSet any `toml:"write_set"`
	Shell    any `toml:"shell"`
}

// readProfile checks the profile keys of a file and returns its profile.
func (v *validator) readProfile(f profileFile, sandboxMode string) Profile {
	p := Profile{Shell: ShellWriteSet}
	if _, ok := v.pos["tools"]; ok {
		p.Tools = v.stringList("tools", f.Tools, "the names of the tools its children are offered, e.g. tools = [\"read\", \"grep\", \"glob\"]")
		if p.Tools == nil {
			p.Tools = []string{}
		}
		for i, t := range p.Tools {
			if msg := checkToolName(t); msg != "" {
				v.addItem("tools", i, "%s", msg)
			}
		}
	}
	if _, ok := v.pos["write_set"]; ok {
		p.WriteSet = v.stringList("write_set", f.WriteSet, "path patterns, e.g. write_set = [\"docs/**\", \"**/*_test.go\"]")
		if p.WriteSet == nil {
			p.WriteSet = []string{}
		}
		for i, w := range p.WriteSet {
			norm, msg := checkWritePattern(w)
			if msg != "" {
				v.addItem("write_set", i, "%s", msg)
			}
			p.WriteSet[i] = norm
		}
		if sandboxMode == SandboxReadOnly {
			v.add("write_set", "write_set has no effect with sandbox_mode = %q: a read-only agent writes nothing; remove one of them", SandboxReadOnly)
		}
	}
	if _, ok := v.pos["shell"]; ok {
		switch s := f.Shell.(type) {
		case string:
			if slices.Contains(shellModes, s) {
				p.Shell = s
				break
			}
			msg := fmt.Sprintf("shell %q is not one of %s, or a list of programs", s, strings.Join(shellModes, ", "))
			if fixed := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-"); fixed != s && slices.Contains(shellModes, fixed) {
				msg += fmt.Sprintf("; did you mean %q?", fixed)
			}
			v.add("shell", "%s", msg)
		default:
			p.Commands = v.stringList("shell", f.Shell, `deny, read-only, write-set, or the programs its commands may run, e.g. shell = ["go", "gofmt"]`)
			if p.Commands != nil && len(p.Commands) == 0 {
				v.add("shell", `shell = [] allows no program at all: write shell = "deny" to take bash away`)
			}
			for i, c := range p.Commands {
				if msg := checkProgram(c); msg != "" {
					v.addItem("shell", i, "%s", msg)
				}
			}
		}
	}
	if p.Shell == ShellDeny && slices.Contains(p.Tools, "bash") {
		v.add("shell", `shell = "deny" takes bash away, and tools lists it: remove one of them`)
	}
	return p
}

// stringList reads an array of strings, or reports what it got instead.
func (v *validator) stringList(key string, raw any, want string) []string {
	list, ok := raw.([]any)
	if !ok {
		v.add(key, "%s: got a TOML %s, want an array of strings: %s", key, tomlType(raw), want)
		return nil
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			v.addItem(key, i, "%s[%d]: got a TOML %s, want string", key, i, tomlType(item))
			continue
		}
		out = append(out, s)
	}
	return out
}

// tomlType names the TOML type of a decoded value.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "table"
	}
	return "date or time"
}

// checkToolName says what is wrong with a tool name of a profile.
func checkToolName(name string) string {
	if slices.Contains(ToolNames, name) {
		return ""
	}
	if rest, ok := strings.CutPrefix(name, mcpPrefix); ok && rest != "" && !strings.Contains(strings.TrimSuffix(rest, "*"), "*") {
		return ""
	}
	if name == "report_checkpoint" {
		return "report_checkpoint need not be listed: a workflow step's child is always offered it; remove it"
	}
	return fmt.Sprintf("unknown tool %q; tools are %s, or an MCP server's tools as mcp__<server>__<tool> or mcp__<server>__*",
		name, strings.Join(ToolNames, ", "))
}

// checkWritePattern reads a write_set pattern by the one rule of a
// workflow step's write_set (workflows.CheckPattern: a leading "./" goes,
// a trailing "/" means the folder's contents; empty, "." or ".." segments,
// absolute or home paths are refused) and says what is wrong with it.
func checkWritePattern(p string) (string, string) {
	norm, why := workflows.CheckPattern(p)
	if why != "" {
		return norm, fmt.Sprintf("write_set pattern %q is invalid: %s (as in a workflow step: workspace paths such as \"docs/**\")", p, why)
	}
	return norm, ""
}

// checkProgram says what is wrong with a program of shell = [...].
func checkProgram(c string) string {
	switch {
	case c == "":
		return "an empty program name; remove it"
	case strings.ContainsAny(c, " \t\n"):
		return fmt.Sprintf("%q is not a program: list programs, not command lines (e.g. \"go\", not \"go test\")", c)
	case strings.Contains(c, "/") && !strings.HasPrefix(c, "/"):
		return fmt.Sprintf("%q: name a program found in PATH (\"go\") or give its absolute path", c)
	}
	return ""
}
