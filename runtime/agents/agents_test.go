package agents

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/stretchr/testify/require"
)

// agentTOML is a valid agent file for name.
func agentTOML(name string, extra ...string) string {
	s := fmt.Sprintf("name = %q\ndescription = \"the %s agent\"\ndeveloper_instructions = \"\"\"\nDo the %s work.\n\"\"\"\n", name, name, name)
	for _, e := range extra {
		s += e + "\n"
	}
	return s
}

// tree writes files (paths relative to dir, "/" separated) and returns dir.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if strings.HasSuffix(rel, "/") {
			require.NoError(t, os.MkdirAll(path, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return dir
}

// load runs Load on dir/p (the project) and dir/h (the home folder).
func load(t *testing.T, dir string) (*Registry, error) {
	t.Helper()
	return Load(filepath.Join(dir, "p"), filepath.Join(dir, "h"))
}

// rel makes the paths of the dir tree short, for comparisons.
func rel(dir, s string) string {
	return strings.ReplaceAll(s, dir+string(filepath.Separator), "")
}

func TestBuiltins(t *testing.T) {
	b := Builtins()
	require.Len(t, b, 8)
	names := []string{}
	for _, a := range b {
		names = append(names, a.Name)
		require.True(t, ValidName(a.Name), a.Name)
		require.NotEmpty(t, a.Description, a.Name)
		require.Greater(t, len(a.DeveloperInstructions), 200, a.Name)
		require.Equal(t, SourceBuiltin, a.Source, a.Name)
		require.True(t, a.Builtin(), a.Name)
		require.True(t, isBuiltin(a.Name), a.Name)
		require.Equal(t, slices.Contains([]string{"explorer", "check", "simplify"}, a.Name), a.ReadOnly(), a.Name)
	}
	require.Equal(t, []string{"default", "worker", "explorer", "check", "simplify", "test", "make", "pm"}, names)
	b[0].Name = "changed"
	require.Equal(t, "default", Builtins()[0].Name, "Builtins returns a fresh slice")
}

// withRoles is want with the practice's roles as built-ins, unless want
// names them otherwise.
func withRoles(want map[string]string) map[string]string {
	out := maps.Clone(want)
	for _, name := range roleNames {
		if _, ok := out[name]; !ok {
			out[name] = SourceBuiltin
		}
	}
	return out
}

func TestLoadPrecedence(t *testing.T) {
	const (
		pp = "p/.pixir/agents/"
		pc = "p/.codex/agents/"
		hp = "h/.pixir/agents/"
		hc = "h/.codex/agents/"
	)
	tests := []struct {
		name  string
		files map[string]string
		// want maps agent names to their source, relative to the test
		// folder, or "built-in".
		want     map[string]string
		warnings []string
	}{
		{
			name: "no folders: the built-ins",
			want: map[string]string{"default": SourceBuiltin, "worker": SourceBuiltin, "explorer": SourceBuiltin},
		},
		{
			name: "empty folders: the built-ins",
			files: map[string]string{
				pp: "", pc: "", hp: "", hc: "",
			},
			want: map[string]string{"default": SourceBuiltin, "worker": SourceBuiltin, "explorer": SourceBuiltin},
		},
		{
			name: "one agent in each root",
			files: map[string]string{
				pp + "a.toml": agentTOML("alpha"),
				pc + "b.toml": agentTOML("beta"),
				hp + "c.toml": agentTOML("gamma"),
				hc + "d.toml": agentTOML("delta"),
			},
			want: map[string]string{
				"alpha": pp + "a.toml", "beta": pc + "b.toml", "gamma": hp + "c.toml", "delta": hc + "d.toml",
				"default": SourceBuiltin, "worker": SourceBuiltin, "explorer": SourceBuiltin,
			},
		},
		{
			name: "the same name in the four roots: project .pixir wins",
			files: map[string]string{
				hc + "r.toml": agentTOML("reviewer"),
				hp + "r.toml": agentTOML("reviewer"),
				pc + "r.toml": agentTOML("reviewer"),
				pp + "r.toml": agentTOML("reviewer"),
			},
			want: map[string]string{"reviewer": pp + "r.toml", "default": SourceBuiltin, "worker": SourceBuiltin, "explorer": SourceBuiltin},
			warnings: []string{
				pc + `r.toml: agent "reviewer" is also defined in ` + pp + `r.toml, which takes precedence; this file is ignored`,
				hp + `r.toml: agent "reviewer" is also defined in ` + pp + `r.toml, which takes precedence; this file is ignored`,
				hc + `r.toml: agent "reviewer" is also defined in ` + pp + `r.toml, which takes precedence; this file is ignored`,
			},
		},
		{
			name: "project .codex beats user .pixir",
			files: map[string]string{
				pc + "x.toml": agentTOML("reviewer"),
				hp + "x.toml": agentTOML("reviewer"),
			},
			want: map[string]string{"reviewer": pc + "x.toml", "default": SourceBuiltin, "worker": SourceBuiltin, "explorer": SourceBuiltin},
			warnings: []string{
				hp + `x.toml: agent "reviewer" is also defined in ` + pc + `x.toml, which takes precedence; this file is ignored`,
			},
		},
		{
			name: "user .pixir beats user .codex",
			files: map[string]string{
				hp + "x.toml": agentTOML("reviewer"),
				hc + "x.toml": agentTOML("reviewer"),
			},
			want: map[string]string{"reviewer": hp + "x.toml", "default": SourceBuiltin, "worker": SourceBuiltin, "explorer": SourceBuiltin},
			warnings: []string{
				hc + `x.toml: agent "reviewer" is also defined in ` + hp + `x.toml, which takes precedence; this file is ignored`,
			},
		},
		{
			name: "duplicates in one root: the first file name wins",
			files: map[string]string{
				pc + "b.toml": agentTOML("tester"),
				pc + "a.toml": agentTOML("tester"),
				pc + "c.toml": agentTOML("tester"),
			},
			want: map[string]string{"tester": pc + "a.toml", "default": SourceBuiltin, "worker": SourceBuiltin, "explorer": SourceBuiltin},
			warnings: []string{
				pc + `b.toml: agent "tester" is also defined in ` + pc + `a.toml, which takes precedence; this file is ignored`,
				pc + `c.toml: agent "tester" is also defined in ` + pc + `a.toml, which takes precedence; this file is ignored`,
			},
		},
		{
			name: "a custom agent overrides a built-in, visibly",
			files: map[string]string{
				hc + "w.toml":        agentTOML("worker"),
				pp + "explorer.toml": agentTOML("explorer"),
			},
			want: map[string]string{"worker": hc + "w.toml", "explorer": pp + "explorer.toml", "default": SourceBuiltin},
			warnings: []string{
				pp + `explorer.toml: agent "explorer" overrides the built-in "explorer" agent`,
				hc + `w.toml: agent "worker" overrides the built-in "worker" agent`,
			},
		},
		{
			name: "the file name does not matter, only name",
			files: map[string]string{
				pp + "worker.toml": agentTOML("reviewer"),
			},
			want: map[string]string{"reviewer": pp + "worker.toml", "default": SourceBuiltin, "worker": SourceBuiltin, "explorer": SourceBuiltin},
		},
		{
			name: "non-toml files and subfolders are ignored with a warning, hidden files silently",
			files: map[string]string{
				pp + "README.md":          "# my agents",
				pp + "a.toml.bak":         agentTOML("old"),
				pp + "a.TOML":             agentTOML("upper"),
				pp + "a.toml":             agentTOML("alpha"),
				pp + ".hidden.toml":       agentTOML("hidden"),
				pp + ".DS_Store":          "x",
				pp + "nested/deep.toml":   agentTOML("deep"),
				hc + "folder.toml/x.toml": agentTOML("deeper"),
			},
			want: map[string]string{"alpha": pp + "a.toml", "default": SourceBuiltin, "worker": SourceBuiltin, "explorer": SourceBuiltin},
			warnings: []string{
				pp + "README.md: ignored: not a .toml file",
				pp + "a.TOML: ignored: not a .toml file",
				pp + "a.toml.bak: ignored: not a .toml file",
				pp + "nested: ignored: agent folders are not searched recursively; move its .toml files up",
				hc + "folder.toml: ignored: agent folders are not searched recursively; move its .toml files up",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t, tt.files)
			r, err := load(t, dir)
			require.NoError(t, err)
			got := map[string]string{}
			for _, a := range r.All() {
				got[a.Name] = rel(dir, a.Source)
			}
			require.Equal(t, withRoles(tt.want), got)
			var warnings []string
			for _, w := range r.Warnings() {
				warnings = append(warnings, rel(dir, w.String()))
			}
			require.Equal(t, tt.warnings, warnings)
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		errs    []string // after "<file>:"
	}{
		{
			name:    "unknown key",
			content: agentTOML("a") + "modle = \"gpt-5\"\n",
			errs:    []string{`6:1: unknown key "modle"; an agent file may set name, description, developer_instructions, model, model_reasoning_effort, sandbox_mode, network, allowed_mcp_servers, tools, write_set, shell`},
		},
		{
			name:    "unknown keys, each reported",
			content: "nme = \"a\"\n" + agentTOML("a") + "[extra]\nx = 1\n",
			errs: []string{
				`1:1: unknown key "nme"; an agent file may set name, description, developer_instructions, model, model_reasoning_effort, sandbox_mode, network, allowed_mcp_servers, tools, write_set, shell`,
				`7:2: unknown key "extra"; an agent file may set name, description, developer_instructions, model, model_reasoning_effort, sandbox_mode, network, allowed_mcp_servers, tools, write_set, shell`,
			},
		},
		{
			// The README's reviewer with three mistakes: every one is said
			// at once, the unknown key first.
			name:    "an unknown key beside bad values: every problem",
			content: "name = \"Code Reviewer\"\ndescription = \"d\"\ndeveloper_instructions = \"i\"\nmodle = \"gpt-5\"\nsandbox_mode = \"read_only\"\n",
			errs: []string{
				`4:1: unknown key "modle"; an agent file may set name, description, developer_instructions, model, model_reasoning_effort, sandbox_mode, network, allowed_mcp_servers, tools, write_set, shell`,
				`1:8: name "Code Reviewer" is not a valid agent name: start with a lowercase letter and use only lowercase letters, digits, '-' and '_', at most 64 characters (e.g. "code-reviewer")`,
				`5:16: sandbox_mode "read_only" is not one of read-only, workspace-write, danger-full-access; did you mean "read-only"?`,
			},
		},
		{
			name:    "wrong type",
			content: "name = 3\ndescription = \"d\"\ndeveloper_instructions = \"i\"\n",
			errs:    []string{`1:8: name: got a TOML integer, want string`},
		},
		{
			name:    "wrong type: an array",
			content: agentTOML("a") + "model = [\"a\", \"b\"]\n",
			errs:    []string{`6:9: model: got a TOML array, want string`},
		},
		{
			name:    "not TOML",
			content: "name = \"a\"\ndescription \"d\"\n",
			errs:    []string{`2:13: expected '=' after key`},
		},
		{
			name:    "missing required keys",
			content: "name = \"a\"\n",
			errs: []string{
				`1:1: missing required key description; add description = "…" (what the agent is for; the parent reads it to choose)`,
				`1:1: missing required key developer_instructions; add developer_instructions = """…""" (what the child is told before its task)`,
			},
		},
		{
			name:    "empty file",
			content: "",
			errs: []string{
				`1:1: missing required key name; add name = "my-agent" (the name spawn_agent takes)`,
				`1:1: missing required key description; add description = "…" (what the agent is for; the parent reads it to choose)`,
				`1:1: missing required key developer_instructions; add developer_instructions = """…""" (what the child is told before its task)`,
			},
		},
		{
			name:    "blank required value",
			content: "name = \"a\"\ndescription = \"  \"\ndeveloper_instructions = \"i\"\n",
			errs:    []string{`2:15: description is empty; it is required: description = "…" (what the agent is for; the parent reads it to choose)`},
		},
		{
			name:    "bad name",
			content: agentTOML("Code Reviewer"),
			errs:    []string{`1:8: name "Code Reviewer" is not a valid agent name: start with a lowercase letter and use only lowercase letters, digits, '-' and '_', at most 64 characters (e.g. "code-reviewer")`},
		},
		{
			name:    "bad name: a leading digit",
			content: agentTOML("2nd"),
			errs:    []string{`1:8: name "2nd" is not a valid agent name: start with a lowercase letter and use only lowercase letters, digits, '-' and '_', at most 64 characters (e.g. "agent-2nd")`},
		},
		{
			name:    "bad sandbox_mode, close to a good one",
			content: agentTOML("a", `sandbox_mode = "read_only"`),
			errs:    []string{`6:16: sandbox_mode "read_only" is not one of read-only, workspace-write, danger-full-access; did you mean "read-only"?`},
		},
		{
			name:    "bad sandbox_mode",
			content: agentTOML("a", `sandbox_mode = "none"`),
			errs:    []string{`6:16: sandbox_mode "none" is not one of read-only, workspace-write, danger-full-access; remove the key to inherit the parent's`},
		},
		{
			name:    "empty sandbox_mode",
			content: agentTOML("a", `sandbox_mode = ""`),
			errs:    []string{`6:16: sandbox_mode "" is not one of read-only, workspace-write, danger-full-access; remove the key to inherit the parent's`},
		},
		{
			name:    "bad model_reasoning_effort",
			content: agentTOML("a", `model_reasoning_effort = "extreme"`),
			errs:    []string{`6:26: model_reasoning_effort "extreme" is not one of none, minimal, low, medium, high, xhigh; remove the key to inherit the parent's`},
		},
		{
			name:    "empty model",
			content: agentTOML("a", `model = ""`),
			errs:    []string{`6:9: model is empty: name a model, or remove the key to use the parent's`},
		},
		{
			name:    "every problem of a file",
			content: "name = \"A\"\nsandbox_mode = \"rw\"\n",
			errs: []string{
				`1:1: missing required key description; add description = "…" (what the agent is for; the parent reads it to choose)`,
				`1:1: missing required key developer_instructions; add developer_instructions = """…""" (what the child is told before its task)`,
				`1:8: name "A" is not a valid agent name: start with a lowercase letter and use only lowercase letters, digits, '-' and '_', at most 64 characters (e.g. "a")`,
				`2:16: sandbox_mode "rw" is not one of read-only, workspace-write, danger-full-access; remove the key to inherit the parent's`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t, map[string]string{
				"p/.pixir/agents/bad.toml": tt.content,
				"p/.pixir/agents/ok.toml":  agentTOML("fine"),
			})
			r, err := load(t, dir)
			require.Error(t, err)
			file := filepath.Join(dir, "p", ".pixir", "agents", "bad.toml")
			var want []string
			for _, e := range tt.errs {
				want = append(want, file+":"+e)
			}
			require.Equal(t, want, strings.Split(err.Error(), "\n"))
			var fe *FileError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, file, fe.File)
			require.Positive(t, fe.Line)
			require.Positive(t, fe.Column)
			// The rest still loads.
			a, ok := r.Get("fine")
			require.True(t, ok)
			require.Equal(t, "Do the fine work.", a.DeveloperInstructions)
			require.Equal(t, []string{"check", "default", "explorer", "fine", "make", "pm", "simplify", "test", "worker"}, r.Names())
		})
	}
}

func TestLoadErrorNamesEveryBrokenFile(t *testing.T) {
	dir := tree(t, map[string]string{
		"p/.pixir/agents/a.toml": "name = 1\n",
		"p/.codex/agents/b.toml": agentTOML("b", "colour = \"red\""),
		"h/.codex/agents/c.toml": agentTOML("c"),
	})
	r, err := load(t, dir)
	require.Error(t, err)
	msg := rel(dir, err.Error())
	require.Contains(t, msg, "p/.pixir/agents/a.toml:1:8: name: got a TOML integer, want string")
	require.Contains(t, msg, `p/.codex/agents/b.toml:6:1: unknown key "colour"`)
	var files []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FileError
		require.True(t, errors.As(e, &fe))
		files = append(files, rel(dir, fe.File))
	}
	require.Equal(t, []string{"p/.pixir/agents/a.toml", "p/.codex/agents/b.toml"}, files)
	_, ok := r.Get("c")
	require.True(t, ok, "the good files still load")
}

func TestLoadFolderErrors(t *testing.T) {
	dir := tree(t, map[string]string{
		"p/.pixir/agents":        "a file where the folder should be",
		"h/.codex/agents/c.toml": agentTOML("c"),
	})
	r, err := load(t, dir)
	require.Error(t, err)
	require.Contains(t, rel(dir, err.Error()), "p/.pixir/agents: cannot list the agent folder: ")
	_, ok := r.Get("c")
	require.True(t, ok)

	if os.Geteuid() != 0 { // root reads anything
		dir := tree(t, map[string]string{"p/.pixir/agents/a.toml": agentTOML("a")})
		path := filepath.Join(dir, "p", ".pixir", "agents", "a.toml")
		require.NoError(t, os.Chmod(path, 0))
		_, err := load(t, dir)
		require.EqualError(t, err, path+": cannot read the agent file: permission denied")
	}
}

func TestLoadCodexKeys(t *testing.T) {
	content := agentTOML("a") + `nickname_candidates = ["Ada", "Grace"]
web_search = "cached"
skills.config = [{ path = "x" }]

[mcp_servers.docs]
command = "docs-server"
`
	dir := tree(t, map[string]string{"p/.codex/agents/a.toml": content})
	r, err := load(t, dir)
	require.NoError(t, err)
	_, ok := r.Get("a")
	require.True(t, ok)
	var warnings []string
	for _, w := range r.Warnings() {
		warnings = append(warnings, rel(dir, w.String()))
	}
	require.Equal(t, []string{
		"p/.codex/agents/a.toml: 6:1: nickname_candidates is a Codex setting Pixir does not use; ignored",
		"p/.codex/agents/a.toml: 10:2: mcp_servers is a Codex setting Pixir does not use; ignored",
		"p/.codex/agents/a.toml: 8:1: skills is a Codex setting Pixir does not use; ignored",
		"p/.codex/agents/a.toml: 7:1: web_search is a Codex setting Pixir does not use; ignored",
	}, warnings)
}

func TestLoadFields(t *testing.T) {
	dir := tree(t, map[string]string{"p/.pixir/agents/r.toml": `# A reviewer.
name = "code_reviewer-2"
description = "  Reviews a diff.  "
developer_instructions = '''
Review the change.
Report problems with path:line.
'''
model = "gpt-5"
model_reasoning_effort = "high"
sandbox_mode = "read-only"
`})
	r, err := load(t, dir)
	require.NoError(t, err)
	a, ok := r.Get("code_reviewer-2")
	require.True(t, ok)
	require.Equal(t, Agent{
		Name:                  "code_reviewer-2",
		Description:           "Reviews a diff.",
		DeveloperInstructions: "Review the change.\nReport problems with path:line.",
		Model:                 "gpt-5",
		ModelReasoningEffort:  "high",
		SandboxMode:           "read-only",
		Profile:               Profile{Shell: ShellWriteSet},
		Source:                filepath.Join(dir, "p", ".pixir", "agents", "r.toml"),
	}, a)
	require.False(t, a.Builtin())
	_, ok = r.Get("nobody")
	require.False(t, ok)
}

func TestReadOnly(t *testing.T) {
	tests := []struct {
		sandbox string
		want    bool
	}{
		{"", false},
		{"read-only", true},
		{"workspace-write", false},
		{"danger-full-access", false},
	}
	for _, tt := range tests {
		t.Run("declared "+tt.sandbox, func(t *testing.T) {
			require.Equal(t, tt.want, Agent{SandboxMode: tt.sandbox}.ReadOnly())
			extra := ""
			if tt.sandbox != "" {
				extra = fmt.Sprintf("sandbox_mode = %q", tt.sandbox)
			}
			dir := tree(t, map[string]string{"h/.pixir/agents/a.toml": agentTOML("a", extra)})
			r, err := load(t, dir)
			require.NoError(t, err)
			a, ok := r.Get("a")
			require.True(t, ok)
			require.Equal(t, tt.want, a.ReadOnly())
			require.Equal(t, tt.sandbox, a.SandboxMode)
		})
	}
	t.Run("overriding explorer without sandbox_mode drops its read-only", func(t *testing.T) {
		dir := tree(t, map[string]string{"p/.pixir/agents/e.toml": agentTOML("explorer")})
		r, err := load(t, dir)
		require.NoError(t, err)
		a, _ := r.Get("explorer")
		require.False(t, a.ReadOnly())
		b, _ := Load("", "")
		a, _ = b.Get("explorer")
		require.True(t, a.ReadOnly())
	})
}

func TestRoots(t *testing.T) {
	j := filepath.Join
	tests := []struct {
		name, project, home string
		want                []string
	}{
		{"both", "/w", "/u", []string{j("/w", ".pixir", "agents"), j("/w", ".codex", "agents"), j("/u", ".pixir", "agents"), j("/u", ".codex", "agents")}},
		{"project is home", "/u", "/u", []string{j("/u", ".pixir", "agents"), j("/u", ".codex", "agents")}},
		{"project is home, spelled differently", "/u/", "/u", []string{j("/u", ".pixir", "agents"), j("/u", ".codex", "agents")}},
		{"no home", "/w", "", []string{j("/w", ".pixir", "agents"), j("/w", ".codex", "agents")}},
		{"nothing", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Roots(tt.project, tt.home))
		})
	}
	t.Run("a project in the home folder reads its files once", func(t *testing.T) {
		dir := tree(t, map[string]string{"h/.pixir/agents/a.toml": agentTOML("a")})
		r, err := Load(filepath.Join(dir, "h"), filepath.Join(dir, "h"))
		require.NoError(t, err)
		require.Empty(t, r.Warnings())
		_, ok := r.Get("a")
		require.True(t, ok)
	})
}

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"a", true},
		{"worker", true},
		{"code-reviewer", true},
		{"code_reviewer2", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"Worker", false},
		{"2nd", false},
		{"-x", false},
		{"_x", false},
		{"a b", false},
		{"a.b", false},
		{"a/b", false},
		{"é", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, ValidName(tt.name), "%q", tt.name)
		if !tt.want && tt.name != "" {
			require.True(t, ValidName(suggestName(tt.name)), "suggestion %q for %q", suggestName(tt.name), tt.name)
		}
	}
}

func TestRegistryIsACopy(t *testing.T) {
	r, err := Load("", "")
	require.NoError(t, err)
	all := r.All()
	all[0].Name = "changed"
	require.Equal(t, []string{"check", "default", "explorer", "make", "pm", "simplify", "test", "worker"}, r.Names())
	_, ok := r.Get("changed")
	require.False(t, ok)
}

func BenchmarkLoad(b *testing.B) {
	b.Run("no files", func(b *testing.B) {
		dir := b.TempDir()
		for b.Loop() {
			if _, err := Load(filepath.Join(dir, "p"), filepath.Join(dir, "h")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("20 files", func(b *testing.B) {
		dir := b.TempDir()
		root := filepath.Join(dir, "p", ".pixir", "agents")
		if err := os.MkdirAll(root, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := range 20 {
			name := fmt.Sprintf("agent-%02d", i)
			if err := os.WriteFile(filepath.Join(root, name+".toml"), []byte(agentTOML(name, `sandbox_mode = "read-only"`)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			if _, err := Load(filepath.Join(dir, "p"), filepath.Join(dir, "h")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The practice's roles (spec/multi-agent-workflow-design.txt §2) are held
// to their boundaries by their profiles.
func TestTheRolesOfThePractice(t *testing.T) {
	r, err := Load("", "")
	require.NoError(t, err)
	tests := []struct {
		name     string
		readOnly bool
		tools    []string
		writeSet []string
		shell    string
		mayWrite []string
		mayNot   []string
	}{
		{name: "check", readOnly: true, tools: []string{"read", "grep", "glob"}, shell: ShellDeny},
		{name: "simplify", readOnly: true, tools: []string{"read", "grep", "glob"}, shell: ShellDeny},
		{name: "test", tools: []string{"read", "write", "edit", "grep", "glob", "bash"}, shell: ShellWriteSet,
			writeSet: []string{"tests/**", "test/**", "**/testdata/**", "**/*_test.go", "**/*_test.*", "**/test_*.*", "**/*.test.*", "**/*.spec.*"},
			mayWrite: []string{"calc_test.go", "pkg/x/y_test.go", "tests/run.sh", "src/calc.test.ts", "py/test_calc.py"},
			mayNot:   []string{"calc.go", "src/calc.ts", "TODO/GAL-1.md", "README.md"}},
		{name: "make", tools: []string{"read", "write", "edit", "grep", "glob", "bash"}, shell: ShellWriteSet},
		{name: "pm", tools: []string{"read", "write", "edit", "grep", "glob"}, writeSet: []string{"TODO/**"}, shell: ShellDeny,
			mayWrite: []string{"TODO/GAL-1.md", "TODO/README.md"}, mayNot: []string{"calc.go", "README.md", "calc_test.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, ok := r.Get(tt.name)
			require.True(t, ok)
			require.True(t, a.Builtin())
			require.Equal(t, tt.readOnly, a.ReadOnly())
			require.True(t, a.DenyNetwork(), "no role has the network")
			require.Equal(t, tt.tools, a.Profile.Tools)
			require.Equal(t, tt.writeSet, a.Profile.WriteSet)
			require.Equal(t, tt.shell, a.Profile.Shell)
			require.Equal(t, tt.shell != ShellDeny, a.Profile.AllowsTool("bash"))
			require.False(t, a.Profile.AllowsTool("spawn_agent"), "roles do not delegate")
			require.Contains(t, a.DeveloperInstructions, "@"+tt.name)
			for _, p := range tt.mayWrite {
				require.True(t, matchesAny(a.Profile.WriteSet, p), p)
			}
			for _, p := range tt.mayNot {
				require.False(t, matchesAny(a.Profile.WriteSet, p), p)
			}
		})
	}
}

func matchesAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if ok, _ := doublestar.Match(p, path); ok {
			return true
		}
	}
	return false
}

// TestAnAgentFileWithAByteOrderMark loads, its problems placed as an
// editor shows them (the mark takes no column).
func TestAnAgentFileWithAByteOrderMark(t *testing.T) {
	a, _, errs := readAgent("a.toml", []byte("\ufeff"+agentTOML("bom")))
	require.Empty(t, errs)
	require.Equal(t, "bom", a.Name)
	_, _, errs = readAgent("a.toml", []byte("\ufeffname = 3\n"))
	require.Len(t, errs, 1)
	require.Equal(t, "a.toml:1:8: name: got a TOML integer, want string", errs[0].Error())
}
