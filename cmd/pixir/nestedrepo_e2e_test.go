package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// nestedRepoScript: a step whose task starts "[g]" makes src/.git with a
// hook, by a command, and reports its work ready.
const nestedRepoScript = `
[[rule]]
match = '\A\[g\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "mkdir -p src/.git/hooks && printf '#!/bin/sh\\necho hook\\n' > src/.git/hooks/pre-commit && echo done > src/work.txt" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"did it"}'
  [[rule.reply]]
  text = "ok"
`

// A writer that makes a git repository inside the workspace (src/.git,
// whose hooks the user's git would run in src/) fails its step, which says
// so, whatever its write set and workspace: it was seen only for a shared
// writer with a write set, among its changes, and nowhere for one without
// (the step was checkpoint_ready), or for an isolated one (left out of the
// merge without a word).
func TestAWriterThatMakesANestedRepositoryFailsItsStep(t *testing.T) {
	for _, tc := range []struct{ name, step, where string }{
		{"shared, no write set", `{"id":"g","task":"[g] make","workspace_mode":"shared","permission_mode":"writer"}`, "in the shared workspace"},
		{"shared, write set", `{"id":"g","task":"[g] make","workspace_mode":"shared","write_set":["src/**"]}`, "in the shared workspace"},
		{"isolated", `{"id":"g","task":"[g] make","write_set":["src/**"]}`, "not work to merge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRunEnv(t)
			// A folder the user has: a shared writer's commands cannot make
			// one at the top of the workspace.
			require.NoError(t, os.MkdirAll(filepath.Join(e.ws, "src"), 0o755))
			script := e.file("s.toml", nestedRepoScript)
			wf := e.file("wf.json", `{"steps":[`+tc.step+`]}`)
			stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
			require.Equal(t, exitError, code, stderr)
			env := validEnvelope(t, stdout, "run_workflow_output.json")
			step := env["output"].(map[string]any)["steps"].([]any)[0].(map[string]any)
			require.NotEqual(t, "checkpoint_ready", step["checkpoint_status"], stdout)
			require.Equal(t, "failed", step["subagent_status"], stdout)
			text := mustJSONString(t, step)
			require.Contains(t, text, "nested_repository", stdout)
			require.Contains(t, text, "src/.git", stdout)
			require.Contains(t, text, tc.where, stdout)
			if strings.HasPrefix(tc.name, "isolated") {
				require.NoFileExists(t, filepath.Join(e.ws, "src", "work.txt"), "nothing of the step merged")
				require.NoDirExists(t, filepath.Join(e.ws, "src", ".git"))
			}
		})
	}
}

func mustJSONString(t *testing.T, v any) string {
	t.Helper()
	return string(mustJSON(t, v))
}
