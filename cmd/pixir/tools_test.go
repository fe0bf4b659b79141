package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pixirTools runs the built binary's tools command.
func pixirTools(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(pixirBin, append([]string{"tools"}, args...)...)
	// The catalogue needs no configuration: a broken one must not matter.
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte("nonsense = ["), 0o644))
	cmd.Env = append(os.Environ(), "PIXIR_HOME="+home)
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

var builtinTools = []string{
	"read", "write", "edit", "bash", "grep", "glob", "update_plan",
	"spawn_agent", "wait_agent", "send_input", "close_agent", "list_agents", "merge_agent",
	"run_workflow", "report_checkpoint",
}

func TestToolsJSON(t *testing.T) {
	stdout, stderr, code := pixirTools(t, "--json")
	require.Equal(t, exitOK, code, stderr)
	require.Empty(t, stderr)
	var catalogue []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Posture     string          `json:"posture"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&catalogue))

	var names []string
	for _, tool := range catalogue {
		names = append(names, tool.Name)
	}
	require.Equal(t, builtinTools, names)
	postures := map[string]string{
		"read": "read", "write": "mutation", "edit": "mutation", "bash": "mutation",
		"grep": "read", "glob": "read", "update_plan": "read",
		"spawn_agent": "mutation", "wait_agent": "read", "send_input": "mutation",
		"close_agent": "mutation", "list_agents": "read", "merge_agent": "mutation",
		"run_workflow": "mutation", "report_checkpoint": "read",
	}
	for _, tool := range catalogue {
		require.Equal(t, postures[tool.Name], tool.Posture, tool.Name)
		require.NotEmpty(t, tool.Description, tool.Name)
		committed, err := os.ReadFile(filepath.Join("..", "..", "schemas", "tools", tool.Name+".json"))
		require.NoError(t, err, "schemas/tools/%s.json: run make schemas", tool.Name)
		require.JSONEq(t, string(committed), string(tool.Parameters), "%s: the parameters differ from schemas/tools/%s.json; run make schemas", tool.Name, tool.Name)
	}
}

func TestToolsTable(t *testing.T) {
	stdout, stderr, code := pixirTools(t)
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Len(t, lines, 1+len(builtinTools), stdout)
	require.Equal(t, []string{"NAME", "POSTURE", "DESCRIPTION"}, strings.Fields(lines[0]))
	for i, name := range builtinTools {
		fields := strings.Fields(lines[1+i])
		require.Equal(t, name, fields[0], lines[1+i])
		require.Contains(t, []string{"read", "mutation"}, fields[1], lines[1+i])
		require.Greater(t, len(fields), 2, "%s has no description", name)
	}
	require.Contains(t, stdout, "grep               read      Search the contents of the workspace's files with a regular expression.\n")
}

func TestToolsUsage(t *testing.T) {
	_, stderr, code := pixirTools(t, "extra")
	require.Equal(t, exitUsage, code)
	require.Equal(t, "pixir tools: unexpected argument \"extra\"; usage: pixir tools [--json] [--mcp]\n", stderr)

	_, stderr, code = pixirTools(t, "--yaml")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "unknown flag --yaml")
}

func TestSummary(t *testing.T) {
	require.Equal(t, "First line.", summary("\n First line. \nSecond line.\n"))
	require.Equal(t, strings.Repeat("é", summaryRunes-1)+"…", summary(strings.Repeat("é", summaryRunes+1)))
	require.Equal(t, strings.Repeat("é", summaryRunes), summary(strings.Repeat("é", summaryRunes)))
}
