package smoke

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var dryRunChecks = []string{
	"validate_unknown_dependency", "validate_cycle", "validate_duplicate_id", "validate_empty_workflow",
	"validate_invalid_pattern", "validate_invalid_output_schema",
	"plan_parallel_read_only", "plan_serialized_writers", "plan_dependency_order", "plan_checkpoint_scenarios",
}

var runModeChecks = append(append([]string{}, dryRunChecks...),
	"parallel_read_only_steps", "serialized_overlapping_writers", "dependency_summary_collected", "lifecycle_evidence",
	"all_steps_ready", "timeout_is_partial", "dependents_held", "partial_and_needs_orchestrator", "typed_payload_rejected",
	"outcome_rebuilt_from_log", "validation_through_run_workflow", "run_workflow_denied_in_read_only",
	"run_workflow_dry_run_in_read_only", "run_workflow_runs_through_a_turn",
)

func names(cs []Check) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func requireAllPass(t *testing.T, r *Report) {
	t.Helper()
	for _, c := range r.Checks {
		require.True(t, c.Pass, "%s: %s\nevidence: %s", c.Name, c.Error, short(c.Evidence))
	}
	require.True(t, r.OK)
}

func TestWorkflowsRunPasses(t *testing.T) {
	tmp := t.TempDir()
	r := Workflows(t.Context(), Options{TempDir: tmp, Subagents: subagents()})
	requireAllPass(t, r)
	require.Equal(t, ModeRun, r.Mode)
	require.Equal(t, runModeChecks, names(r.Checks))
	require.Empty(t, r.Workspace)
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries, "the scratch workspace is removed")

	// The report is the documented JSON.
	var b strings.Builder
	require.NoError(t, r.WriteJSON(&b))
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(b.String()), &doc))
	require.ElementsMatch(t, []string{"ok", "mode", "checks", "elapsed_ms"}, keys(doc))
	for _, c := range doc["checks"].([]any) {
		require.ElementsMatch(t, []string{"name", "pass", "evidence"}, keys(c.(map[string]any)))
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestWorkflowsDryRunStartsAndWritesNothing(t *testing.T) {
	tmp := t.TempDir()
	r := Workflows(t.Context(), Options{DryRun: true, TempDir: tmp})
	requireAllPass(t, r)
	require.Equal(t, ModeDryRun, r.Mode)
	require.Equal(t, dryRunChecks, names(r.Checks))
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries)

	var b strings.Builder
	require.NoError(t, r.WriteText(&b))
	require.Contains(t, b.String(), "pixir smoke workflows: PASS — 10 of 10 checks pass")
	require.Contains(t, b.String(), "  ok   validate_cycle: a dependency cycle is refused, with its path")
}

func TestWorkflowsKeepKeepsTheWorkspace(t *testing.T) {
	r := Workflows(t.Context(), Options{Keep: true, TempDir: t.TempDir(), Subagents: subagents()})
	requireAllPass(t, r)
	require.DirExists(t, r.Workspace)
	require.DirExists(t, r.Workspace+"/.pixir/sessions")
	require.FileExists(t, r.Workspace+"/README.md")
	var b strings.Builder
	require.NoError(t, r.WriteText(&b))
	require.Contains(t, b.String(), "workspace kept at "+r.Workspace)
}

// With one thread the read-only steps cannot overlap: the check must say
// so, and the report must fail.
func TestWorkflowsParallelCheckFailsWithOneThread(t *testing.T) {
	cfg := subagents()
	cfg.MaxThreads = 1
	r := Workflows(t.Context(), Options{TempDir: t.TempDir(), Subagents: cfg})
	require.False(t, r.OK)
	var failed []string
	for _, c := range r.Checks {
		if !c.Pass {
			failed = append(failed, c.Name)
			if c.Name == "parallel_read_only_steps" {
				require.Contains(t, c.Error, "they did not run in parallel (is max_threads 1?)")
			}
		}
	}
	require.Equal(t, []string{"parallel_read_only_steps"}, failed)
	var b strings.Builder
	require.NoError(t, r.WriteText(&b))
	require.Contains(t, b.String(), "pixir smoke workflows: FAIL")
	require.Contains(t, b.String(), "  FAIL parallel_read_only_steps")
}

func TestFirstDiff(t *testing.T) {
	require.Empty(t, firstDiff([]byte(`{"a":[1,{"b":2}]}`), []byte(`{"a":[1,{"b":2}]}`)))
	require.Equal(t, `/a/1/b: 2 vs 3`, firstDiff([]byte(`{"a":[1,{"b":2}]}`), []byte(`{"a":[1,{"b":3}]}`)))
	require.Equal(t, `/c: null vs true`, firstDiff([]byte(`{}`), []byte(`{"c":true}`)))
}
