package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/agents"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// agentsWorld is a project folder and a home folder with agent files.
type agentsWorld struct {
	project, home string
}

// newAgentsWorld writes files, given relative to a fresh folder holding
// "project/" and "home/".
func newAgentsWorld(t *testing.T, files map[string]string) agentsWorld {
	t.Helper()
	dir := t.TempDir()
	w := agentsWorld{project: filepath.Join(dir, "project"), home: filepath.Join(dir, "home")}
	require.NoError(t, os.MkdirAll(w.project, 0o755))
	require.NoError(t, os.MkdirAll(w.home, 0o755))
	for rel, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return w
}

// run runs the built binary's agents command in the project folder with
// HOME set to the home folder.
func (w agentsWorld) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(pixirBin, append([]string{"agents"}, args...)...)
	cmd.Dir = w.project
	cmd.Env = append(os.Environ(), "HOME="+w.home, "PIXIR_HOME=", "PIXIR_PROVIDER=", "PIXIR_MODEL=", "PIXIR_PROFILE=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

func agentFile(name string, extra ...string) string {
	s := fmt.Sprintf("name = %q\ndescription = \"The %s agent.\"\ndeveloper_instructions = \"Be %s.\"\n", name, name, name)
	for _, e := range extra {
		s += e + "\n"
	}
	return s
}

// agentsJSON is `pixir agents --json`, decoded strictly.
type agentsJSON struct {
	Agents []struct {
		Name                  string `json:"name"`
		Description           string `json:"description"`
		DeveloperInstructions string `json:"developer_instructions"`
		Model                 string `json:"model"`
		ModelReasoningEffort  string `json:"model_reasoning_effort"`
		SandboxMode           string `json:"sandbox_mode"`
		ReadOnly              bool   `json:"read_only"`
		Network               string `json:"network"`
		Profile               struct {
			Tools    []string `json:"tools"`
			WriteSet []string `json:"write_set"`
			Shell    string   `json:"shell"`
			Commands []string `json:"commands"`
		} `json:"profile"`
		Summary string `json:"summary"`
		Source  string `json:"source"`
	} `json:"agents"`
	Warnings []struct {
		File    string `json:"file"`
		Message string `json:"message"`
	} `json:"warnings"`
	Errors []struct {
		File    string `json:"file"`
		Line    int    `json:"line"`
		Column  int    `json:"column"`
		Message string `json:"message"`
	} `json:"errors"`
}

func decodeAgentsJSON(t *testing.T, stdout string) agentsJSON {
	t.Helper()
	var got agentsJSON
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&got), stdout)
	return got
}

func TestAgentsJSON(t *testing.T) {
	w := newAgentsWorld(t, map[string]string{
		"project/.pixir/agents/reviewer.toml": agentFile("reviewer", `model = "gpt-5"`, `model_reasoning_effort = "high"`, `sandbox_mode = "read-only"`),
		"project/.codex/agents/reviewer.toml": agentFile("reviewer"),
		"project/.codex/agents/tester.toml":   agentFile("tester", `sandbox_mode = "workspace-write"`),
		"home/.pixir/agents/notes.md":         "not an agent",
		"home/.codex/agents/worker.toml":      agentFile("worker"),
		"home/.codex/agents/broken.toml":      agentFile("broken", `colour = "red"`),
	})
	stdout, stderr, code := w.run(t, "--json")
	require.Equal(t, exitError, code, "a broken file fails the command, after the listing")
	require.Empty(t, stderr)
	got := decodeAgentsJSON(t, stdout)

	type row struct {
		name, source, sandbox string
		readOnly              bool
	}
	var rows []row
	for _, a := range got.Agents {
		rows = append(rows, row{a.Name, a.Source, a.SandboxMode, a.ReadOnly})
		require.NotEmpty(t, a.Description, a.Name)
		require.NotEmpty(t, a.DeveloperInstructions, a.Name)
	}
	pj := func(rel string) string { return filepath.Join(w.project, filepath.FromSlash(rel)) }
	hm := func(rel string) string { return filepath.Join(w.home, filepath.FromSlash(rel)) }
	require.Equal(t, []row{
		{"check", "built-in", "read-only", true},
		{"default", "built-in", "", false},
		{"explorer", "built-in", "read-only", true},
		{"make", "built-in", "", false},
		{"pm", "built-in", "", false},
		{"reviewer", pj(".pixir/agents/reviewer.toml"), "read-only", true},
		{"simplify", "built-in", "read-only", true},
		{"test", "built-in", "", false},
		{"tester", pj(".codex/agents/tester.toml"), "workspace-write", false},
		{"worker", hm(".codex/agents/worker.toml"), "", false},
	}, rows)
	require.Equal(t, "gpt-5", got.Agents[5].Model)
	require.Equal(t, "high", got.Agents[5].ModelReasoningEffort)

	var warnings []string
	for _, wa := range got.Warnings {
		warnings = append(warnings, wa.File+": "+wa.Message)
	}
	require.Equal(t, []string{
		pj(".codex/agents/reviewer.toml") + `: agent "reviewer" is also defined in ` + pj(".pixir/agents/reviewer.toml") + `, which takes precedence; this file is ignored`,
		hm(".pixir/agents/notes.md") + ": ignored: not a .toml file",
		hm(".codex/agents/worker.toml") + `: agent "worker" overrides the built-in "worker" agent`,
		pj(".pixir/agents/reviewer.toml") + `: model "gpt-5" is not among the models configured for the scripted provider (scripted): ` +
			`spawning reviewer is refused until it is added to models in config.toml`,
	}, warnings)

	require.Len(t, got.Errors, 1)
	require.Equal(t, hm(".codex/agents/broken.toml"), got.Errors[0].File)
	require.Equal(t, 4, got.Errors[0].Line)
	require.Equal(t, 1, got.Errors[0].Column)
	require.Contains(t, got.Errors[0].Message, `unknown key "colour"`)
}

func TestAgentsJSONWithoutProblems(t *testing.T) {
	w := newAgentsWorld(t, nil)
	stdout, stderr, code := w.run(t, "--json")
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stderr)
	require.Contains(t, stdout, `"warnings": []`)
	require.Contains(t, stdout, `"errors": []`)
	got := decodeAgentsJSON(t, stdout)
	var names []string
	for _, a := range got.Agents {
		names = append(names, a.Name)
		require.Equal(t, "built-in", a.Source)
	}
	require.Equal(t, []string{"check", "default", "explorer", "make", "pm", "simplify", "test", "worker"}, names)
}

func TestAgentsTable(t *testing.T) {
	w := newAgentsWorld(t, map[string]string{
		"project/.pixir/agents/r.toml": agentFile("reviewer", `model = "gpt-5"`, `model_reasoning_effort = "low"`, `sandbox_mode = "read-only"`),
		"home/.codex/agents/s.toml":    agentFile("scout"),
		"home/.pixir/config.toml":      `models = ["gpt-5"]` + "\n", // the agent's model is configured: no warning
	})
	stdout, stderr, code := w.run(t)
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stderr)
	// Every line fits 80 columns; each agent is a row, its profile the
	// indented lines below it (a long write set wrapped, never cut).
	rows, profiles := agentsTableRows(t, stdout)
	require.Len(t, rows, 11, stdout)
	require.Equal(t, []string{"NAME", "SOURCE", "MODEL", "DESCRIPTION"}, strings.Fields(rows[0]))
	require.Equal(t, []string{"check", "built-in", "inherit"}, strings.Fields(rows[1])[:3])
	require.Equal(t, "profile: read-only; tools read, grep, glob; shell deny; no network", profiles["check"])
	require.Equal(t, "profile: inherit", profiles["default"])
	require.Equal(t, "profile: read-only", profiles["explorer"])
	require.Equal(t, []string{"reviewer", filepath.Join(".pixir", "agents", "r.toml"), "gpt-5", "(low)", "The", "reviewer", "agent."}, strings.Fields(rows[6]))
	require.Equal(t, "profile: read-only", profiles["reviewer"])
	require.Equal(t, []string{"scout", filepath.Join("~", ".codex", "agents", "s.toml"), "inherit", "The", "scout", "agent."}, strings.Fields(rows[7]))
	require.Equal(t, "profile: tools read, write, edit, grep, glob, bash; writes tests/**, test/**, **/testdata/**, **/*_test.go, **/*_test.*, **/test_*.*, **/*.test.*, **/*.spec.*; no network", profiles["test"], "a long profile is wrapped whole")
	require.Equal(t, "worker", strings.Fields(rows[10])[0])
}

func TestAgentsTableWithProblems(t *testing.T) {
	w := newAgentsWorld(t, map[string]string{
		"project/.codex/agents/a.toml": agentFile("Bad Name"),
		"project/.codex/agents/b.toml": agentFile("good", `sandbox_mode = "read_only"`),
		"project/.codex/agents/c.toml": agentFile("fine"),
		"project/.codex/agents/d.toml": agentFile("fine"),
	})
	stdout, stderr, code := w.run(t)
	require.Equal(t, exitError, code)
	require.Contains(t, stdout, "fine ")
	require.NotContains(t, stdout, "good")
	dir := filepath.Join(w.project, ".codex", "agents")
	require.Equal(t, strings.Join([]string{
		`pixir agents: warning: ` + filepath.Join(dir, "d.toml") + `: agent "fine" is also defined in ` + filepath.Join(dir, "c.toml") + `, which takes precedence; this file is ignored`,
		`pixir agents: error: ` + filepath.Join(dir, "a.toml") + `:1:8: name "Bad Name" is not a valid agent name: start with a lowercase letter and use only lowercase letters, digits, '-' and '_', at most 64 characters (e.g. "bad-name")`,
		`pixir agents: error: ` + filepath.Join(dir, "b.toml") + `:4:16: sandbox_mode "read_only" is not one of read-only, workspace-write, danger-full-access; did you mean "read-only"?`,
		`pixir agents: 2 broken agent files are left out until they are fixed`,
	}, "\n")+"\n", stderr)
}

func TestAgentsCwdFlag(t *testing.T) {
	w := newAgentsWorld(t, nil)
	other := newAgentsWorld(t, map[string]string{"project/.pixir/agents/x.toml": agentFile("elsewhere")})
	stdout, stderr, code := w.run(t, "--json", "--cwd", other.project)
	require.Equal(t, exitOK, code, stderr)
	got := decodeAgentsJSON(t, stdout)
	require.Len(t, got.Agents, 9)
	require.Equal(t, "elsewhere", got.Agents[2].Name)
	require.Equal(t, filepath.Join(other.project, ".pixir", "agents", "x.toml"), got.Agents[2].Source)
}

func TestAgentsUsageErrors(t *testing.T) {
	w := newAgentsWorld(t, nil)
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"extra"}, `pixir agents: unexpected argument "extra"; usage: pixir agents [--json] [--cwd DIR]`},
		{[]string{"--cwd", filepath.Join(w.project, "missing")}, "pixir agents: --cwd: stat " + filepath.Join(w.project, "missing") + ": no such file or directory"},
		{[]string{"--nope"}, "unknown flag --nope"},
	}
	for _, tt := range tests {
		stdout, stderr, code := w.run(t, tt.args...)
		require.Equal(t, exitUsage, code, tt.args)
		require.Empty(t, stdout)
		require.Contains(t, stderr, tt.stderr)
	}
}

func TestAgentsShowProfiles(t *testing.T) {
	w := newAgentsWorld(t, map[string]string{
		"project/.pixir/agents/pm.toml":    agentFile("pm", `tools = ["read", "grep", "glob", "write", "edit"]`, `write_set = ["TODO/"]`, `shell = "deny"`),
		"project/.pixir/agents/make.toml":  agentFile("make", `shell = ["go", "gofmt"]`, `network = "deny"`),
		"project/.pixir/agents/check.toml": agentFile("check", `sandbox_mode = "read-only"`, `shell = "read-only"`),
	})
	stdout, stderr, code := w.run(t, "--json")
	require.Equal(t, exitOK, code, stderr)
	got := decodeAgentsJSON(t, stdout)
	byName := map[string]int{}
	for i, a := range got.Agents {
		byName[a.Name] = i
	}
	pm := got.Agents[byName["pm"]]
	require.Equal(t, []string{"read", "grep", "glob", "write", "edit"}, pm.Profile.Tools)
	require.Equal(t, []string{"TODO/**"}, pm.Profile.WriteSet)
	require.Equal(t, "deny", pm.Profile.Shell)
	require.Nil(t, pm.Profile.Commands)
	require.Equal(t, "allow", pm.Network)
	require.Equal(t, "tools read, grep, glob, write, edit; writes TODO/**; shell deny", pm.Summary)
	mk := got.Agents[byName["make"]]
	require.Equal(t, []string{"go", "gofmt"}, mk.Profile.Commands)
	require.Equal(t, "write-set", mk.Profile.Shell)
	require.Equal(t, "deny", mk.Network)
	require.Nil(t, mk.Profile.Tools, "no tools key: every tool")
	worker := got.Agents[byName["worker"]]
	require.Equal(t, "inherit", worker.Summary)
	require.Contains(t, stdout, `"tools": null`, "null, not [], means every tool")

	stdout, stderr, code = w.run(t)
	require.Equal(t, exitOK, code, stderr)
	_, profiles := agentsTableRows(t, stdout)
	require.Equal(t, "profile: tools read, grep, glob, write, edit; writes TODO/**; shell deny", profiles["pm"])
	require.Contains(t, profiles["make"], "shell go, gofmt; no network")
	require.Contains(t, profiles["check"], "read-only; shell read-only")
	require.Equal(t, "profile: read-only", profiles["explorer"])
}

// agentsTableRows splits `pixir agents`' table into its rows (the header
// first) and each agent's profile, its indented lines joined; every line
// must fit 80 columns.
func agentsTableRows(t *testing.T, stdout string) (rows []string, profiles map[string]string) {
	t.Helper()
	profiles = map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(l), 80, "%q is wider than 80 columns", l)
		if strings.HasPrefix(l, "  ") {
			require.NotEmpty(t, rows, "a profile line before any row")
			name := strings.Fields(rows[len(rows)-1])[0]
			profiles[name] = strings.TrimSpace(profiles[name] + " " + strings.TrimSpace(l))
			continue
		}
		rows = append(rows, l)
	}
	return rows, profiles
}

func TestAgentsProfileErrorsNameLineAndColumn(t *testing.T) {
	w := newAgentsWorld(t, map[string]string{
		"project/.pixir/agents/pm.toml": agentFile("pm", `tools = ["read", "wirte"]`, `write_set = ["../src/**"]`, `shel = "deny"`),
		"project/.pixir/agents/ok.toml": agentFile("ok", `shell = "read_only"`),
	})
	stdout, stderr, code := w.run(t, "--json")
	require.Equal(t, exitError, code, stderr)
	got := decodeAgentsJSON(t, stdout)
	type pos struct {
		line, col int
		msg       string
	}
	var errs []pos
	for _, e := range got.Errors {
		errs = append(errs, pos{e.Line, e.Column, e.Message})
	}
	require.Equal(t, []pos{
		{4, 9, `shell "read_only" is not one of deny, read-only, write-set, or a list of programs; did you mean "read-only"?`},
		{6, 1, `unknown key "shel"; an agent file may set name, description, developer_instructions, model, model_reasoning_effort, sandbox_mode, network, allowed_mcp_servers, tools, write_set, shell`},
		{4, 18, `unknown tool "wirte"; tools are read, write, edit, bash, grep, glob, update_plan, spawn_agent, wait_agent, send_input, close_agent, list_agents, merge_agent, run_workflow, or an MCP server's tools as mcp__<server>__<tool> or mcp__<server>__*`},
		{5, 14, `write_set pattern "../src/**" is invalid: it climbs out of the workspace with ..; paths stay inside the workspace (as in a workflow step: workspace paths such as "docs/**")`},
	}, errs, "ok.toml, then pm.toml: its unknown key first, then the rest of it, checked too")

	w = newAgentsWorld(t, map[string]string{
		"project/.pixir/agents/pm.toml": agentFile("pm", `tools = ["read", "wirte"]`, `write_set = ["../src/**"]`),
	})
	_, stderr, code = w.run(t)
	require.Equal(t, exitError, code)
	file := filepath.Join(w.project, ".pixir", "agents", "pm.toml")
	require.Contains(t, stderr, "pixir agents: error: "+file+`:4:18: unknown tool "wirte"; tools are read, write, edit, bash,`)
	require.Contains(t, stderr, "pixir agents: error: "+file+`:5:14: write_set pattern "../src/**" is invalid: it climbs out of the workspace`)
}

// The tools an agent profile may name are the tools pixir offers.
func TestProfileToolNamesAreTheBuiltInTools(t *testing.T) {
	var names []string
	for _, tool := range tools.NewRegistry(append(tools.Builtins(), workflows.Tools()...)...).All() {
		if tool.Name() != "report_checkpoint" {
			names = append(names, tool.Name())
		}
	}
	require.ElementsMatch(t, names, agents.ToolNames)
}
