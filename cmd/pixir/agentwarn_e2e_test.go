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

// TestABrokenAgentFileNamedLikeABuiltinIsNotReplacedByIt: the user's
// .pixir/agents/explorer.toml is what they meant by "explorer"; when it
// does not load, a spawn of explorer is refused naming the file and its
// problem, and the built-in explorer does not run in its place.
func TestABrokenAgentFileNamedLikeABuiltinIsNotReplacedByIt(t *testing.T) {
	e := newRunEnv(t)
	require.NoError(t, os.MkdirAll(filepath.Join(e.ws, ".pixir", "agents"), 0o755))
	file := filepath.Join(e.ws, ".pixir", "agents", "explorer.toml")
	e.file(".pixir/agents/explorer.toml", "name = \"explorer\"\ndescription = \"d\"\ndeveloper_instructions = \"i\"\nsandbox_mode = \"read_only\"\n")
	e.copyExample("survey-and-summarize.yaml")
	stdout, stderr, code := e.pixir("run", "--workflow", "survey-and-summarize.yaml", "--json")
	require.NotEqual(t, exitOK, code, stderr)
	require.Contains(t, stdout, `agent \"explorer\" is defined by `+file+`, which does not load: `+file+`:4:16: sandbox_mode \"read_only\"`)
	require.NotContains(t, stdout, `"status":"checkpoint_ready"`)

	// pixir agents says the built-in is not used in its place.
	_, stderr, code = e.pixir("agents")
	require.Equal(t, exitError, code)
	require.Contains(t, stderr, file+`: agent "explorer" does not load, and the built-in "explorer" is not used in its place`)

	// A file broken before its name can be read means the agent its file
	// is named after.
	e.file(".pixir/agents/explorer.toml", "name = \"explorer\n")
	stdout, _, _ = e.pixir("run", "--workflow", "survey-and-summarize.yaml", "--json")
	require.Contains(t, stdout, `agent \"explorer\" is defined by `+file+`, which does not load`)
}
