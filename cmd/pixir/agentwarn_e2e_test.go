package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBrokenAgentFileSaidOnceForPeople: a workflow run in a project with
// a broken agent file says so once, each problem on a line of its own
// with its file, line and column, not as slog's escaped text
// (time=… level=WARN … err="…\n…") before every step.
func TestBrokenAgentFileSaidOnceForPeople(t *testing.T) {
	e := newRunEnv(t)
	require.NoError(t, os.MkdirAll(filepath.Join(e.ws, ".pixir", "agents"), 0o755))
	e.file(".pixir/agents/reviewer.toml", "name = \"reviewer\"\ndescription = \"d\"\ndeveloper_instructions = \"i\"\nmodle = \"m\"\nsandbox_mode = \"read_only\"\n")
	e.copyExample("survey-and-summarize.yaml")
	_, stderr, code := e.pixir("run", "--workflow", "survey-and-summarize.yaml")
	require.Equal(t, exitOK, code, stderr)
	require.NotContains(t, stderr, "level=WARN")
	require.Equal(t, 1, strings.Count(stderr, "agent files do not load"), stderr)
	require.Contains(t, stderr, "pixir: warning: some agent files do not load")
	require.Contains(t, stderr, "\n    "+filepath.Join(e.ws, ".pixir", "agents", "reviewer.toml")+":4:1: unknown key \"modle\"")
	require.Contains(t, stderr, "\n    "+filepath.Join(e.ws, ".pixir", "agents", "reviewer.toml")+":5:16: sandbox_mode \"read_only\"")
}
