package agents

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/workflows"
)

func TestLoadProfile(t *testing.T) {
	tests := []struct {
		name  string
		extra []string
		want  Profile
	}{
		{"none: every tool, commands confined to the write set", nil, Profile{Shell: ShellWriteSet}},
		{"pm: TODO only, no shell",
			[]string{`tools = ["read", "grep", "glob", "write", "edit"]`, `write_set = ["TODO/"]`, `shell = "deny"`},
			Profile{Tools: []string{"read", "grep", "glob", "write", "edit"}, WriteSet: []string{"TODO/**"}, Shell: ShellDeny}},
		{"test: test files, commands confined",
			[]string{`write_set = ["./**/*_test.go", "testdata/**"]`, `shell = "write-set"`},
			Profile{WriteSet: []string{"**/*_test.go", "testdata/**"}, Shell: ShellWriteSet}},
		{"a reviewer whose commands see a read-only workspace",
			[]string{`shell = "read-only"`}, Profile{Shell: ShellReadOnly}},
		{"a command allowlist",
			[]string{`shell = ["go", "gofmt", "/usr/bin/make"]`},
			Profile{Shell: ShellWriteSet, Commands: []string{"go", "gofmt", "/usr/bin/make"}}},
		{"no tools at all", []string{`tools = []`}, Profile{Tools: []string{}, Shell: ShellWriteSet}},
		{"MCP tools", []string{`tools = ["read", "mcp__docs__search", "mcp__github__*"]`},
			Profile{Tools: []string{"read", "mcp__docs__search", "mcp__github__*"}, Shell: ShellWriteSet}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t, map[string]string{"p/.pixir/agents/a.toml": agentTOML("a", tt.extra...)})
			r, err := load(t, dir)
			require.NoError(t, err)
			a, ok := r.Get("a")
			require.True(t, ok)
			require.Equal(t, tt.want, a.Profile)
		})
	}
}

func TestLoadProfileErrors(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		errs  []string // after "<file>:"
	}{
		{"unknown tool", `tools = ["read", "grpe"]`,
			[]string{`6:18: unknown tool "grpe"; tools are read, write, edit, bash, grep, glob, update_plan, spawn_agent, wait_agent, send_input, close_agent, list_agents, merge_agent, run_workflow, or an MCP server's tools as mcp__<server>__<tool> or mcp__<server>__*`}},
		{"report_checkpoint", `tools = ["report_checkpoint"]`,
			[]string{`6:10: report_checkpoint need not be listed: a workflow step's child is always offered it; remove it`}},
		{"tools not an array", `tools = "read"`,
			[]string{`6:9: tools: got a TOML string, want an array of strings: the names of the tools its children are offered, e.g. tools = ["read", "grep", "glob"]`}},
		{"a tool that is not a string", "tools = [\n  \"read\",\n  3,\n]",
			[]string{`8:3: tools[1]: got a TOML integer, want string`}},
		{"write_set outside the workspace", `write_set = ["docs/**", "../x/**", "/etc/*"]`,
			[]string{
				`6:25: write_set pattern "../x/**" is invalid: it climbs out of the workspace with ..; paths stay inside the workspace (as in a workflow step: workspace paths such as "docs/**")`,
				`6:36: write_set pattern "/etc/*" is invalid: it is absolute; write it relative to the workspace root (as in a workflow step: workspace paths such as "docs/**")`,
			}},
		{"write_set in a home folder", `write_set = ["~/notes/**"]`,
			[]string{`6:14: write_set pattern "~/notes/**" is invalid: it begins with ~, a home folder to a shell; write it relative to the workspace root (as in a workflow step: workspace paths such as "docs/**")`}},
		{"write_set not a pattern", `write_set = ["src/[a-"]`,
			[]string{`6:14: write_set pattern "src/[a-" is invalid: it is not a valid doublestar pattern (an unclosed [ or {, or a trailing \) (as in a workflow step: workspace paths such as "docs/**")`}},
		{"write_set of a read-only agent", "sandbox_mode = \"read-only\"\nwrite_set = [\"docs/**\"]",
			[]string{`7:1: write_set has no effect with sandbox_mode = "read-only": a read-only agent writes nothing; remove one of them`}},
		{"shell mode misspelt", `shell = "read_only"`,
			[]string{`6:9: shell "read_only" is not one of deny, read-only, write-set, or a list of programs; did you mean "read-only"?`}},
		{"shell mode unknown", `shell = "yes"`,
			[]string{`6:9: shell "yes" is not one of deny, read-only, write-set, or a list of programs`}},
		{"shell a number", `shell = 1`,
			[]string{`6:9: shell: got a TOML integer, want an array of strings: deny, read-only, write-set, or the programs its commands may run, e.g. shell = ["go", "gofmt"]`}},
		{"shell a command line", `shell = ["go", "go test ./..."]`,
			[]string{`6:16: "go test ./..." is not a program: list programs, not command lines (e.g. "go", not "go test")`}},
		{"shell a relative path", `shell = ["bin/tool"]`,
			[]string{`6:10: "bin/tool": name a program found in PATH ("go") or give its absolute path`}},
		{"shell an empty list", `shell = []`,
			[]string{`6:1: shell = [] allows no program at all: write shell = "deny" to take bash away`}},
		{"shell denied and bash listed", "tools = [\"bash\"]\nshell = \"deny\"",
			[]string{`7:9: shell = "deny" takes bash away, and tools lists it: remove one of them`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t, map[string]string{"p/.pixir/agents/bad.toml": agentTOML("bad", tt.extra)})
			_, err := load(t, dir)
			require.Error(t, err)
			file := filepath.Join(dir, "p", ".pixir", "agents", "bad.toml")
			var want []string
			for _, e := range tt.errs {
				want = append(want, file+":"+e)
			}
			require.Equal(t, want, strings.Split(err.Error(), "\n"))
		})
	}
}

func TestAllowsTool(t *testing.T) {
	every := Profile{Shell: ShellWriteSet}
	require.True(t, every.AllowsTool("write"))
	require.True(t, every.AllowsTool("bash"))
	require.False(t, Profile{Shell: ShellDeny}.AllowsTool("bash"))
	require.True(t, Profile{Shell: ShellDeny}.AllowsTool("write"))
	list := Profile{Tools: []string{"read", "mcp__gh__*"}, Shell: ShellWriteSet}
	require.True(t, list.AllowsTool("read"))
	require.True(t, list.AllowsTool("mcp__gh__issues"))
	require.False(t, list.AllowsTool("mcp__docs__search"))
	require.False(t, list.AllowsTool("bash"))
	require.False(t, Profile{Tools: []string{}}.AllowsTool("read"))
}

func TestSummary(t *testing.T) {
	b, err := Load("", "")
	require.NoError(t, err)
	explorer, _ := b.Get("explorer")
	require.Equal(t, "read-only", explorer.Summary())
	worker, _ := b.Get("worker")
	require.Equal(t, "inherit", worker.Summary())
	pm := Agent{Network: NetworkDeny, Profile: Profile{Tools: []string{"read", "write"}, WriteSet: []string{"TODO/**"}, Shell: ShellDeny}}
	require.Equal(t, "tools read, write; writes TODO/**; shell deny; no network", pm.Summary())
	mk := Agent{Profile: Profile{Shell: ShellWriteSet, Commands: []string{"go", "gofmt"}}}
	require.Equal(t, "shell go, gofmt", mk.Summary())
	require.Equal(t, "tools none", Agent{Profile: Profile{Tools: []string{}}}.Summary())
}

// An agent's write_set and a workflow step's write_set are read by one
// rule (workflows.CheckPattern): the same pattern is refused by both or
// taken by both as the same pattern. The profile kept a copy of the rule
// that drifted: it took "a/./b", "." and "{..,a}/x" (refused in a step)
// and refused "~/x" (taken in a step).
func TestWritePatternsReadAsAWorkflowStepReadsThem(t *testing.T) {
	for _, p := range []string{
		"docs/**", "docs/", "./docs/", "././docs/**", " docs/** ", "TODO/", "a/**/", "**", "**/*_test.go", "x/~/y",
		"", " ", ".", "./", "a/./b", "a//b", "../x", "a/../b", "{..,a}/x", "/etc/*", "~/x", "~", "~user/x", "{~,a}/x",
		"src/[a-", strings.Repeat("{a,b}", 9),
	} {
		t.Run(p, func(t *testing.T) {
			dir := tree(t, map[string]string{"p/.pixir/agents/a.toml": agentTOML("a", fmt.Sprintf("write_set = [%q]", p))})
			r, agentErr := load(t, dir)
			spec, _ := json.Marshal(map[string]any{"steps": []any{map[string]any{"id": "a", "task": "t", "write_set": []string{p}}}})
			w, stepErr := workflows.Parse(spec)
			require.Equal(t, stepErr == nil, agentErr == nil, "pattern %q: agent: %v; step: %v", p, agentErr, stepErr)
			if stepErr != nil {
				require.Contains(t, agentErr.Error(), "write_set", "pattern %q", p)
				return
			}
			a, _ := r.Get("a")
			require.Equal(t, w.Steps[0].WriteSet, a.Profile.WriteSet, "pattern %q", p)
		})
	}
}
