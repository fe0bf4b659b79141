package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every example workflow plans and runs on the offline provider with the
// outcome examples/README.md promises.
func TestExamplesRunOffline(t *testing.T) {
	want := map[string]int{
		"survey-and-summarize.yaml": exitOK,
		"practice.yaml":             exitOK,
		"writers.json":              exitOK,
		"partial.yaml":              exitPartial,
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.*"))
	require.NoError(t, err)
	seen := 0
	for _, f := range files {
		name := filepath.Base(f)
		if name == "README.md" {
			continue
		}
		seen++
		code, listed := want[name]
		require.True(t, listed, "%s is not in this test (nor, likely, in examples/README.md)", name)
		abs, err := filepath.Abs(f)
		require.NoError(t, err)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t)
			stdout, stderr, got := e.pixir("run", "--workflow", abs, "--dry-run", "--json")
			require.Equal(t, exitOK, got, stderr)
			validEnvelope(t, stdout, "run_workflow_dry_run_output.json")
			stdout, stderr, got = e.pixir("run", "--workflow", abs, "--json")
			require.Equal(t, code, got, stderr)
			validEnvelope(t, stdout, "run_workflow_output.json")
		})
	}
	require.Equal(t, len(want), seen)
	readme, err := os.ReadFile(filepath.Join("..", "..", "examples", "README.md"))
	require.NoError(t, err)
	for name := range want {
		require.Contains(t, string(readme), "`"+name+"`")
	}
}
