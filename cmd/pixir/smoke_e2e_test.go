package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests run `pixir smoke` as a user does, through the built binary.

// smokeEnv is a runEnv whose processes also get a HOME and a TMPDIR of
// their own, so the tests can see that nothing is left behind there.
type smokeEnv struct {
	*runEnv
	tmp, userHome string
	env           []string
}

func newSmokeEnv(t *testing.T, env ...string) *smokeEnv {
	t.Helper()
	e := &smokeEnv{runEnv: newRunEnv(t), tmp: t.TempDir(), userHome: t.TempDir()}
	e.env = append([]string{"TMPDIR=" + e.tmp, "HOME=" + e.userHome,
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL=", "PIXIR_PROFILE="}, env...)
	return e
}

// smoke runs `pixir smoke ARGS`: stdout, stderr, exit code.
func (e *smokeEnv) smoke(args ...string) (string, string, int) {
	e.t.Helper()
	cmd := e.command(append([]string{"smoke"}, args...)...)
	cmd.Env = append(cmd.Env, e.env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		code = cmd.ProcessState.ExitCode()
		require.NotEqual(e.t, -1, code, "pixir did not exit: %v", err)
	}
	return out.String(), errOut.String(), code
}

// smokeReport is the part of a smoke report the tests read.
type smokeReport struct {
	OK     bool   `json:"ok"`
	Mode   string `json:"mode"`
	Checks []struct {
		Name     string         `json:"name"`
		Pass     bool           `json:"pass"`
		Evidence map[string]any `json:"evidence"`
		Error    string         `json:"error"`
	} `json:"checks"`
	ElapsedMS int64 `json:"elapsed_ms"`
	// workflows-real
	Scenario string `json:"scenario"`
	Provider struct {
		Name, Model, BaseURL string
	} `json:"provider"`
	Plan *struct {
		Waves [][]string `json:"waves"`
	} `json:"plan"`
	Error *struct {
		Kind    string   `json:"kind"`
		Message string   `json:"message"`
		Fix     string   `json:"fix"`
		Env     string   `json:"env"`
		BaseURL string   `json:"base_url"`
		Steps   []string `json:"steps"`
	} `json:"error"`
	EvidenceDir string `json:"evidence_dir"`
	SessionID   string `json:"session_id"`
	Log         string `json:"log"`
	Outcome     *struct {
		Status string `json:"status"`
	} `json:"outcome"`
}

func decodeSmoke(t *testing.T, stdout string) smokeReport {
	t.Helper()
	var r smokeReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &r), stdout)
	return r
}

func (r smokeReport) failures() []string {
	var out []string
	for _, c := range r.Checks {
		if !c.Pass {
			out = append(out, c.Name+": "+c.Error)
		}
	}
	return out
}

// requireEmpty fails unless dir holds nothing (or does not exist).
func requireEmpty(t *testing.T, dir, what string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Empty(t, names, "%s is left with files", what)
}

func TestSmokeWorkflowsPasses(t *testing.T) {
	e := newSmokeEnv(t)
	stdout, stderr, code := e.smoke("workflows", "--json")
	require.Equal(t, exitOK, code, "stderr: %s\nstdout: %s", stderr, stdout)
	r := decodeSmoke(t, stdout)
	require.Empty(t, r.failures())
	require.True(t, r.OK)
	require.Equal(t, "run", r.Mode)
	var names []string
	for _, c := range r.Checks {
		names = append(names, c.Name)
		require.NotEmpty(t, c.Evidence, c.Name)
	}
	for _, want := range []string{"validate_cycle", "plan_serialized_writers", "parallel_read_only_steps", "serialized_overlapping_writers",
		"dependency_summary_collected", "lifecycle_evidence", "timeout_is_partial", "dependents_held", "partial_and_needs_orchestrator",
		"typed_payload_rejected", "outcome_rebuilt_from_log", "run_workflow_denied_in_read_only", "run_workflow_dry_run_in_read_only"} {
		require.Contains(t, names, want)
	}
	requireEmpty(t, e.tmp, "TMPDIR (the scratch workspace)")
	requireEmpty(t, e.ws, "the current folder")
	requireEmpty(t, e.home, "PIXIR_HOME")
}

func TestSmokeWorkflowsDryRunLeavesNothingBehind(t *testing.T) {
	e := newSmokeEnv(t)
	stdout, stderr, code := e.smoke("workflows", "--dry-run", "--json")
	require.Equal(t, exitOK, code, "stderr: %s", stderr)
	r := decodeSmoke(t, stdout)
	require.True(t, r.OK, "%v", r.failures())
	require.Equal(t, "dry_run", r.Mode)
	require.Len(t, r.Checks, 10)
	requireEmpty(t, e.tmp, "TMPDIR")
	requireEmpty(t, e.ws, "the current folder")
	requireEmpty(t, e.home, "PIXIR_HOME")

	stdout, _, code = e.smoke("workflows", "--dry-run")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "pixir smoke workflows: PASS — 10 of 10 checks pass")
	require.Contains(t, stdout, "  ok   plan_serialized_writers: ")
}

func TestSmokeWorkflowsRealDryRunIsOffline(t *testing.T) {
	// The configured provider: a local server, which nothing needs to
	// answer for a dry run.
	e := newSmokeEnv(t, "PIXIR_PROVIDER=openai", "OPENAI_BASE_URL="+closedURL(t)+"/v1", "PIXIR_MODEL=qwen-test")
	stdout, stderr, code := e.smoke("workflows-real", "--scenario", "micro_parallel", "--dry-run", "--json")
	require.Equal(t, exitOK, code, "stderr: %s\nstdout: %s", stderr, stdout)
	r := decodeSmoke(t, stdout)
	require.True(t, r.OK, "%v", r.failures())
	require.Equal(t, "dry_run", r.Mode)
	require.Equal(t, "micro_parallel", r.Scenario)
	require.Equal(t, "openai", r.Provider.Name)
	require.Equal(t, "qwen-test", r.Provider.Model)
	require.Equal(t, [][]string{{"alpha", "beta"}}, r.Plan.Waves)
	require.Nil(t, r.Outcome)
	require.Empty(t, r.EvidenceDir)
	requireEmpty(t, e.ws, "the current folder")
	requireEmpty(t, e.home, "PIXIR_HOME")
	requireEmpty(t, e.tmp, "TMPDIR")

	stdout, _, code = e.smoke("workflows-real", "--scenario", "writer_controlled", "--dry-run")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "provider openai, model qwen-test, http://127.0.0.1:")
	require.Contains(t, stdout, "| write | writer | isolated | – | out/result.txt |")
	requireEmpty(t, e.ws, "the current folder")
}

// smokeModel is a fake OpenAI-compatible model that does what the
// scenarios' steps ask: it reads the note it is told to, reports the code
// word, passes on a dependency's code word, writes the file.
func smokeModel(t *testing.T) *fakeModel {
	stepRE := regexp.MustCompile(`You are step "([a-z0-9_-]+)"`)
	fileRE := regexp.MustCompile(`Read the file (\S+) `)
	codeRE := regexp.MustCompile(`(?i)code word is:? (\w+)`)
	var n atomic.Int64
	return newFakeModel(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req chatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		last := -1
		for i, m := range req.Messages {
			if m.Role == "user" {
				last = i
			}
		}
		prompt, toolResult, call := "", "", 0
		if last >= 0 && req.Messages[last].Content != nil {
			prompt = *req.Messages[last].Content
		}
		for _, m := range req.Messages[last+1:] {
			switch {
			case m.Role == "assistant":
				call++
			case m.Role == "tool" && m.Content != nil:
				toolResult = *m.Content
			}
		}
		step := ""
		if m := stepRE.FindStringSubmatch(prompt); m != nil {
			step = m[1]
		}
		id := fmt.Sprintf("call_%s_%d", step, n.Add(1))
		toolCall := func(name string, args any) {
			b, _ := json.Marshal(args)
			sseReply(0, concat(
				[]string{oaChunk(`{"role":"assistant","content":null}`, "")},
				oaToolCall(0, id, name, string(b)),
				[]string{oaChunk(`{}`, "tool_calls"), oaUsage(100, 10), oaDone},
			)...)(w, r, body)
		}
		report := func(summary string) {
			toolCall("report_checkpoint", map[string]any{"status": "checkpoint_ready", "summary": summary})
		}
		switch {
		case call == 0 && fileRE.MatchString(prompt):
			// Slow enough that parallel steps overlap.
			select {
			case <-time.After(150 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
			toolCall("read", map[string]any{"path": fileRE.FindStringSubmatch(prompt)[1]})
		case call == 1 && fileRE.MatchString(prompt):
			code := "nothing"
			if m := codeRE.FindStringSubmatch(toolResult); m != nil {
				code = m[1]
			}
			report("The code word is " + code + ".")
		case call == 0 && step == "use":
			code := "nothing"
			if m := codeRE.FindStringSubmatch(prompt); m != nil {
				code = m[1]
			}
			report(strings.ToUpper(code))
		case call == 0 && step == "write":
			toolCall("write", map[string]any{"path": "out/result.txt", "content": "smoke ok\n"})
		case call == 1 && step == "write":
			report("Wrote out/result.txt.")
		default:
			oaAnswer("Done.", 100, 2)(w, r, body)
		}
	})
}

func TestSmokeWorkflowsRealAgainstAnOpenAICompatibleServer(t *testing.T) {
	for _, sc := range []string{"micro_parallel", "dependency", "writer_controlled"} {
		t.Run(sc, func(t *testing.T) {
			srv := smokeModel(t)
			e := newSmokeEnv(t)
			stdout, stderr, code := e.smoke("workflows-real", "--scenario", sc, "--json",
				"--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-test")
			require.Equal(t, exitOK, code, "stderr: %s\nstdout: %s", stderr, stdout)
			r := decodeSmoke(t, stdout)
			require.True(t, r.OK, "%v", r.failures())
			require.Equal(t, "completed", r.Outcome.Status)

			// The evidence: its own folder under the current one, with the
			// report, the session's Log and its children's.
			ws, err := filepath.EvalSymlinks(e.ws)
			require.NoError(t, err)
			root := filepath.Join(ws, ".pixir", "smoke", "workflows-real")
			entries, err := os.ReadDir(root)
			require.NoError(t, err)
			require.Len(t, entries, 1)
			require.Regexp(t, `^\d{8}T\d{6}Z-`+sc+`$`, entries[0].Name())
			dir := filepath.Join(root, entries[0].Name())
			require.Equal(t, dir, r.EvidenceDir)
			saved, err := os.ReadFile(filepath.Join(dir, "report.json"))
			require.NoError(t, err)
			require.JSONEq(t, stdout, string(saved))
			require.Equal(t, filepath.Join(dir, "workspace", ".pixir", "sessions", r.SessionID+".ndjson"), r.Log)
			events := readLog(t, filepath.Join(dir, "workspace"), r.SessionID)
			require.Contains(t, eventTypes(events), "workflow_event")
			require.Contains(t, eventTypes(events), "subagent_event")
			children, err := filepath.Glob(filepath.Join(dir, "workspace", ".pixir", "subagents", "*", "*.ndjson"))
			require.NoError(t, err)
			require.NotEmpty(t, children)

			// The requests carried the keyless local server's model.
			reqs := srv.received()
			require.NotEmpty(t, reqs)
			for _, q := range reqs {
				require.Equal(t, "/v1/chat/completions", q.Path)
				require.Empty(t, q.Header.Get("Authorization"))
			}
			var names []string
			for _, c := range r.Checks {
				names = append(names, c.Name)
			}
			switch sc {
			case "micro_parallel":
				require.Subset(t, names, []string{"parallel_read_only_steps", "code_words", "lifecycle_evidence"})
			case "dependency":
				require.Subset(t, names, []string{"dependency_summary_collected", "code_words"})
			case "writer_controlled":
				require.Subset(t, names, []string{"writer_isolated_in_write_set"})
				require.FileExists(t, filepath.Join(dir, "workspace", "out", "result.txt"), "merged back into the scenario's workspace")
			}

			// Text: the outcome table, the checks and where the evidence is.
			stdout, _, code = e.smoke("workflows-real", "--scenario", sc,
				"--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-test")
			require.Equal(t, exitOK, code)
			require.Contains(t, stdout, "pixir smoke workflows-real "+sc+": PASS")
			require.Contains(t, stdout, ": COMPLETED — ")
			require.Contains(t, stdout, "evidence: "+root)
		})
	}
}

func TestSmokeWorkflowsRealMissingAPIKey(t *testing.T) {
	for _, tc := range []struct{ provider, env string }{{"openai", "OPENAI_API_KEY"}, {"anthropic", "ANTHROPIC_API_KEY"}} {
		t.Run(tc.provider, func(t *testing.T) {
			e := newSmokeEnv(t)
			stdout, stderr, code := e.smoke("workflows-real", "--scenario", "dependency", "--json", "--provider", tc.provider, "--model", "some-model")
			require.Equal(t, exitError, code, "stderr: %s", stderr)
			r := decodeSmoke(t, stdout)
			require.False(t, r.OK)
			require.NotNil(t, r.Error)
			require.Equal(t, "missing_api_key", r.Error.Kind)
			require.Equal(t, tc.env, r.Error.Env)
			require.Contains(t, r.Error.Message, tc.env+" is not set")
			require.Contains(t, r.Error.Fix, "export "+tc.env+"=")
			require.Contains(t, r.Error.Fix, "pixir doctor")
			requireEmpty(t, e.ws, "the current folder")

			stdout, _, code = e.smoke("workflows-real", "--scenario", "dependency", "--provider", tc.provider, "--model", "some-model")
			require.Equal(t, exitError, code)
			require.Contains(t, stdout, "error (missing_api_key): ")
			require.Contains(t, stdout, "fix: export "+tc.env+"=")
		})
	}
}

func TestSmokeWorkflowsRealProviderUnreachable(t *testing.T) {
	e := newSmokeEnv(t)
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("max_retries = 0\n"), 0o644))
	base := closedURL(t) + "/v1"
	stdout, stderr, code := e.smoke("workflows-real", "--scenario", "micro_parallel", "--json", "--provider", "openai", "--base-url", base, "--model", "m")
	require.Equal(t, exitError, code, "stderr: %s", stderr)
	r := decodeSmoke(t, stdout)
	require.NotNil(t, r.Error)
	require.Equal(t, "provider_error", r.Error.Kind)
	require.Equal(t, base, r.Error.BaseURL)
	require.Contains(t, r.Error.Message, "cannot reach")
	require.Contains(t, r.Error.Fix, "pixir doctor")
	require.Equal(t, []string{"alpha", "beta"}, r.Error.Steps)
	require.FileExists(t, filepath.Join(r.EvidenceDir, "report.json"), "a run that happened keeps its evidence")
}

func TestSmokeUsageErrors(t *testing.T) {
	e := newSmokeEnv(t)
	for _, args := range [][]string{
		{},
		{"nope"},
		{"workflows", "--bogus"},
		{"workflows", "extra"},
		{"workflows-real"},
		{"workflows-real", "--scenario", "huge"},
		{"workflows-real", "--scenario", "dependency", "--timeout-ms", "-1"},
	} {
		_, stderr, code := e.smoke(args...)
		require.Equal(t, exitUsage, code, "%v", args)
		require.Regexp(t, `Usage:|Run "pixir smoke workflows -h" for its flags`, stderr, "%v", args)
	}
	stdout, _, code := e.smoke("workflows-real", "--scenario", "huge", "--json")
	require.Equal(t, exitUsage, code)
	r := decodeSmoke(t, stdout)
	require.Equal(t, "invalid_args", r.Error.Kind)
	require.Contains(t, r.Error.Message, `unknown scenario "huge": choose one of micro_parallel, dependency, writer_controlled`)
	require.True(t, slices.Equal([]string(nil), r.failures()))

	stdout, _, code = e.smoke("--help")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, "pixir smoke workflows-real --scenario micro_parallel|dependency|writer_controlled")
}
