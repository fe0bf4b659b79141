package smoke

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider/scripted"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// modelScript stands in for a real model: each step's child does what its
// task asks, keyed on its step id.
const modelScript = `
[[rule]]
match = 'You are step "(alpha|find)"'
  [[rule.reply]]
  delay_ms = 150
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "notes/alpha.txt" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments = { status = "checkpoint_ready", summary = "The code word is heliotrope." }
  [[rule.reply]]
  text = "Done."

[[rule]]
match = 'You are step "beta"'
  [[rule.reply]]
  delay_ms = 150
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "notes/beta.txt" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments = { status = "checkpoint_ready", summary = "The code word is marzipan." }
  [[rule.reply]]
  text = "Done."

[[rule]]
match = 'You are step "use"'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments = { status = "checkpoint_ready", summary = "HELIOTROPE" }
  [[rule.reply]]
  text = "Done."

[[rule]]
match = 'You are step "write"'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "out/result.txt", content = "smoke ok\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments = { status = "checkpoint_ready", summary = "Wrote out/result.txt.", produced = ["out/result.txt"] }
  [[rule.reply]]
  text = "Done."
`

// builtins is a catalogue of the three built-in agents.
type builtins struct{}

func (builtins) Agent(name string) (runtime.AgentSpec, bool) {
	switch name {
	case "default", "worker":
		return runtime.AgentSpec{Name: name}, true
	case "explorer":
		return runtime.AgentSpec{Name: name, ReadOnly: true}, true
	}
	return runtime.AgentSpec{}, false
}

func (builtins) Names() []string { return []string{"default", "worker", "explorer"} }

// realRuntime is a runtime whose model answers from script.
func realRuntime(t *testing.T, script string) func() (*runtime.Runtime, error) {
	t.Helper()
	s, err := scripted.Parse("model.toml", []byte(script))
	require.NoError(t, err)
	cfg := subagents()
	cfg.Agents = func(string) (runtime.AgentCatalog, error) { return builtins{}, nil }
	return func() (*runtime.Runtime, error) {
		return runtime.New(runtime.Config{
			Provider: scripted.New(s), Model: "m", Subagents: cfg,
			Tools: tools.Builtins(), Workflows: true,
		}), nil
	}
}

var localServer = Provider{Name: "openai", Model: "m", BaseURL: "http://127.0.0.1:9/v1", KeyEnv: "OPENAI_API_KEY"}

func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if p != dir {
			out = append(out, p)
		}
		return err
	}))
	return out
}

func noRuntime(t *testing.T) func() (*runtime.Runtime, error) {
	return func() (*runtime.Runtime, error) {
		t.Error("the runtime was built")
		return nil, os.ErrInvalid
	}
}

func TestRealDryRunIsOfflineAndWritesNothing(t *testing.T) {
	for _, sc := range Scenarios {
		t.Run(string(sc), func(t *testing.T) {
			dir := t.TempDir()
			r := Real(t.Context(), RealOptions{Scenario: sc, Dir: dir, DryRun: true, Provider: localServer, NewRuntime: noRuntime(t)})
			require.True(t, r.OK, "%+v", r)
			require.Equal(t, ModeDryRun, r.Mode)
			require.NotNil(t, r.Plan)
			require.Nil(t, r.Outcome)
			require.Empty(t, r.EvidenceDir)
			require.Empty(t, tree(t, dir))
			var b strings.Builder
			require.NoError(t, r.WriteText(&b))
			require.Contains(t, b.String(), "Dry run:")
			require.Contains(t, b.String(), "provider openai, model m, http://127.0.0.1:9/v1")
		})
	}
}

func TestRealKnownConfigurationFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		provider Provider
		kind     string
		fix      string
	}{
		{"scripted", Provider{Name: "scripted", Model: "scripted"}, KindNoRealProvider, "--provider"},
		{"no model", Provider{Name: "openai", BaseURL: "http://127.0.0.1:9/v1"}, KindMissingModel, "--model"},
		{"no key", Provider{Name: "anthropic", Model: "claude", BaseURL: "https://api.anthropic.com", KeyEnv: "ANTHROPIC_API_KEY", KeyRequired: true}, KindMissingAPIKey, "export ANTHROPIC_API_KEY="},
	} {
		for _, dry := range []bool{true, false} {
			t.Run(tc.name, func(t *testing.T) {
				dir := t.TempDir()
				r := Real(t.Context(), RealOptions{Scenario: MicroParallel, Dir: dir, DryRun: dry, Provider: tc.provider, NewRuntime: noRuntime(t)})
				require.False(t, r.OK)
				require.NotNil(t, r.Error)
				require.Equal(t, tc.kind, r.Error.Kind)
				require.Contains(t, r.Error.Fix, tc.fix)
				require.Empty(t, tree(t, dir), "nothing ran, nothing is written")
				if tc.kind == KindMissingAPIKey {
					require.Equal(t, "ANTHROPIC_API_KEY", r.Error.Env)
				}
			})
		}
	}
}

func TestRealScenariosKeepTheirEvidence(t *testing.T) {
	for _, sc := range Scenarios {
		t.Run(string(sc), func(t *testing.T) {
			dir := t.TempDir()
			now := func() time.Time { return time.Date(2026, 6, 3, 10, 15, 0, 0, time.UTC) }
			r := Real(t.Context(), RealOptions{Scenario: sc, Dir: dir, Provider: localServer, NewRuntime: realRuntime(t, modelScript), Now: now})
			for _, c := range r.Checks {
				require.True(t, c.Pass, "%s: %s", c.Name, c.Error)
			}
			require.True(t, r.OK, "%+v", r.Error)
			want := filepath.Join(dir, ".pixir", "smoke", "workflows-real", "20260603T101500Z-"+string(sc))
			require.Equal(t, want, r.EvidenceDir)
			require.FileExists(t, r.Log)
			require.NotEmpty(t, r.SessionID)
			require.Contains(t, r.Log, r.SessionID)
			b, err := os.ReadFile(filepath.Join(want, "report.json"))
			require.NoError(t, err)
			var saved RealReport
			require.NoError(t, json.Unmarshal(b, &saved))
			require.True(t, saved.OK)
			require.Equal(t, r.SessionID, saved.SessionID)
			require.Equal(t, workflows.StatusCompleted, saved.Outcome.Status)

			// A second run in the same second gets a folder of its own.
			again := Real(t.Context(), RealOptions{Scenario: sc, Dir: dir, Provider: localServer, NewRuntime: realRuntime(t, modelScript), Now: now})
			require.Equal(t, want+"-2", again.EvidenceDir)
		})
	}
}

func TestRealChecksCatchAModelThatDidNotDoTheWork(t *testing.T) {
	lazy := strings.ReplaceAll(modelScript, "The code word is marzipan.", "I could not find it.")
	r := Real(t.Context(), RealOptions{Scenario: MicroParallel, Dir: t.TempDir(), Provider: localServer, NewRuntime: realRuntime(t, lazy)})
	require.False(t, r.OK)
	require.Nil(t, r.Error, "no known failure: the model just did not find it")
	var failed []string
	for _, c := range r.Checks {
		if !c.Pass {
			failed = append(failed, c.Name+": "+c.Error)
		}
	}
	require.Len(t, failed, 1)
	require.Contains(t, failed[0], `code_words: beta's summary "I could not find it." does not give the code word "marzipan"`)
}

func TestRealProviderFailure(t *testing.T) {
	script := "[[rule]]\n  [[rule.reply]]\n  error = \"cannot reach the OpenAI-compatible server at http://127.0.0.1:9/v1: connection refused\"\n"
	dir := t.TempDir()
	r := Real(t.Context(), RealOptions{Scenario: Dependency, Dir: dir, Provider: localServer, NewRuntime: realRuntime(t, script)})
	require.False(t, r.OK)
	require.NotNil(t, r.Error)
	require.Equal(t, KindProviderError, r.Error.Kind)
	require.Equal(t, "http://127.0.0.1:9/v1", r.Error.BaseURL)
	require.Equal(t, []string{"find"}, r.Error.Steps)
	require.Contains(t, r.Error.Message, "connection refused")
	require.Contains(t, r.Error.Fix, "pixir doctor")
	require.FileExists(t, filepath.Join(r.EvidenceDir, "report.json"))
	require.Equal(t, []string{"use"}, r.Outcome.HeldSteps)
}

func TestRealStepTimeout(t *testing.T) {
	script := "[[rule]]\n  [[rule.reply]]\n  hang = true\n"
	r := Real(t.Context(), RealOptions{Scenario: WriterControlled, Dir: t.TempDir(), Provider: localServer, NewRuntime: realRuntime(t, script), StepTimeoutMS: 200})
	require.False(t, r.OK)
	require.NotNil(t, r.Error)
	require.Equal(t, KindTimeout, r.Error.Kind)
	require.Equal(t, []string{"write"}, r.Error.Steps)
	require.Contains(t, r.Error.Message, "200 ms")
	require.Contains(t, r.Error.Fix, "--timeout-ms 400")
	require.Equal(t, []string{"write"}, r.Outcome.TimeoutSteps)
}

func TestParseScenario(t *testing.T) {
	sc, err := ParseScenario("dependency")
	require.NoError(t, err)
	require.Equal(t, Dependency, sc)
	_, err = ParseScenario("huge")
	require.EqualError(t, err, `unknown scenario "huge": choose one of micro_parallel, dependency, writer_controlled`)
}
