package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The scripted provider, offline, crosses the compaction threshold when the
// configuration gives it a context window (context_window in config.toml)
// and the conversation grows past it: a resumed session compacts (its
// summary from the script's rule for the summary request), records it,
// and goes on, and the session resumed after the compaction goes on from
// it. No e2e test of the real binary covered compaction without a hosted
// model (a fake OpenAI server).
func TestTheScriptedProviderCompactsAndResumesThroughIt(t *testing.T) {
	e := newRunEnv(t)
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("provider = \"scripted\"\ncontext_window = 12000\n"), 0o644))
	script := filepath.Join(e.home, "script.toml")
	require.NoError(t, os.WriteFile(script, []byte(`
[[rule]]
match = 'Summarize the conversation above'
  [[rule.reply]]
  text = "SUMMARY: the user sent two long lines."
[[rule]]
  [[rule.reply]]
  text = "Got {{len .User}} characters."
`), 0o644))
	stdout, stderr, code := e.pixir("run", "--script", script, "--json", strings.Repeat("a ", 15000))
	require.Equal(t, exitOK, code, stderr)
	id := validEnvelope(t, stdout, "pixir_run_output.json")["output"].(map[string]any)["session_id"].(string)

	stdout, stderr, code = e.pixir("resume", "--script", script, id, strings.Repeat("b ", 15000))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Got 30000 characters.", strings.TrimSpace(stdout))
	var compactions []map[string]any
	purposes := 0
	for _, ev := range readLog(t, e.ws, id) {
		switch ev.Type {
		case "compaction":
			var d map[string]any
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			compactions = append(compactions, d)
		case "provider_usage":
			if strings.Contains(string(ev.Data), `"purpose":"compaction"`) {
				purposes++
			}
		}
	}
	require.Len(t, compactions, 1, "the second turn crossed the threshold")
	require.Equal(t, "threshold", compactions[0]["reason"])
	require.Equal(t, "model", compactions[0]["method"])
	require.Equal(t, "SUMMARY: the user sent two long lines.", compactions[0]["summary"])
	require.Equal(t, 1, purposes, "the summary's model call is charged")

	// Resumed after the compaction, the session goes on from it.
	stdout, stderr, code = e.pixir("resume", "--script", script, id, "and now?")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Got 8 characters.", strings.TrimSpace(stdout))
	stdout, stderr, code = e.pixir("inspect", id)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "compacted (threshold, by the model)")
	require.Equal(t, 3, strings.Count(stdout, "[completed]"), stdout)
}
