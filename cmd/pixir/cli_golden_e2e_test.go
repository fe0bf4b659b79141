package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the CLI's output in testdata/cli")

// cliCase is one command line of the built binary whose whole output (stdout,
// stderr, exit code) is kept in testdata/cli/<name>.golden.
type cliCase struct {
	name  string
	setup func(e *runEnv) // files in the workspace, earlier commands
	args  []string
	// argsOf, when set, makes the command line from what setup left (a
	// session's id, say).
	argsOf func(e *runEnv) []string
	// lastLines keeps only stderr's lines that start with "pixir:": the
	// live lines of parallel steps come in no fixed order.
	lastLines bool
}

// TestCLIOutputGolden runs each case through the built binary, in a fresh
// workspace, and compares what a person sees with its golden file. After a
// deliberate change: go test ./cmd/pixir -run TestCLIOutputGolden -update.
func TestCLIOutputGolden(t *testing.T) {
	cases := []cliCase{
		{name: "sessions_help", args: []string{"sessions", "-h"}},
		{name: "unknown_command_typo", args: []string{"sesions"}},
		{name: "unknown_command_flag_first", args: []string{"--json", "run"}},
		{name: "unknown_flag_typo", args: []string{"run", "--jsn", "hello"}},
		{name: "flag_without_value", args: []string{"run", "hello", "--mode"}},
		{name: "gc_unknown_flag_typo", args: []string{"gc", "--dryrun"}},
		{name: "gc_command_typo", args: []string{"gcc"}},
		{name: "smoke_typo", args: []string{"smoke", "workflow"}},
		{name: "dry_run_cwd_missing", setup: func(e *runEnv) { e.copyExample("survey-and-summarize.yaml") },
			args: []string{"run", "--cwd", "missing", "--workflow", "survey-and-summarize.yaml", "--dry-run"}},
		{name: "doctor_unexpected_argument", args: []string{"doctor", "openai"}},
		{name: "demo_unexpected_argument", args: []string{"demo", "fast"}},
		{name: "acp_unexpected_argument", args: []string{"acp", "--verbose", "zed"}},
		{name: "version_unexpected_argument", args: []string{"version", "x"}},
		{name: "mode_typo", args: []string{"run", "--mode", "read-only", "hello"}},
	}
	cases = append(cases, moreCLICases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newRunEnv(t)
			if c.setup != nil {
				c.setup(e)
			}
			if c.argsOf != nil {
				c.args = c.argsOf(e)
			}
			stdout, stderr, code := e.pixir(c.args...)
			if c.lastLines {
				var kept []string
				for _, l := range strings.SplitAfter(stderr, "\n") {
					if strings.HasPrefix(l, "pixir:") {
						kept = append(kept, l)
					}
				}
				stderr = "[live progress lines left out]\n" + strings.Join(kept, "")
			}
			got := fmt.Sprintf("$ pixir %s\n--- stdout\n%s--- stderr\n%s--- exit %d\n",
				strings.Join(quoteArgs(c.args), " "), stdout, stderr, code)
			checkGolden(t, filepath.Join("testdata", "cli", c.name+".golden"), e.normalize(got))
		})
	}
}

// TestEveryCommandHelpExitsZero: -h and --help print the command's usage
// on stdout and exit 0, for every command.
func TestEveryCommandHelpExitsZero(t *testing.T) {
	e := newRunEnv(t)
	for _, cmd := range append([][]string{{}}, [][]string{{"acp"}, {"demo"}, {"tools"}, {"workflows"}, {"agents"}, {"doctor"}, {"prompt"},
		{"run"}, {"resume"}, {"sessions"}, {"inspect"}, {"gc"}, {"version"}, {"smoke"}, {"smoke", "workflows"}, {"smoke", "workflows-real"}}...) {
		for _, h := range []string{"-h", "--help"} {
			stdout, stderr, code := e.pixir(append(append([]string{}, cmd...), h)...)
			require.Equal(t, exitOK, code, "pixir %v %s: %s", cmd, h, stderr)
			require.Contains(t, stdout, "Usage:", "pixir %v %s", cmd, h)
			require.Empty(t, stderr, "pixir %v %s", cmd, h)
		}
	}
}

// moreCLICases are the cases of the other findings.
var moreCLICases = []cliCase{
	// A run ends with its session's short id and the commands that go on.
	{name: "run_prints_session", args: []string{"run", "hello"}},
	{name: "resume_by_prefix", setup: func(e *runEnv) { e.mustRun("run", "hello") },
		argsOf: func(e *runEnv) []string { return []string{"resume", e.sessionIDs()[0][:8], "hello again"} }},
	{name: "resume_subagent_refused", setup: func(e *runEnv) { e.mustRun("run", "delegate") },
		argsOf: func(e *runEnv) []string { return []string{"resume", e.subagentIDs()[0][:6], "more"} }},
	{name: "resume_unknown", args: []string{"resume", "0123abcd", "hi"}},
	// A provider that needs a key it does not have: which variable to set,
	// before anything is made or sent.
	{name: "run_openai_without_key", setup: noKeys,
		args: []string{"run", "--provider", "openai", "--model", "gpt-4.1-mini", "hello"}},
	{name: "run_anthropic_without_key", setup: noKeys,
		args: []string{"run", "--provider", "anthropic", "hello"}},
	// Every problem of a workflow file at once, each with its step.
	{name: "workflow_every_problem", setup: func(e *runEnv) {
		e.file("bad.yaml", "name: bad\nsteps:\n  - id: a\n    task: do a\n    agent: nosuch\n  - id: b\n    task: do b\n    depends_on: [zz]\n    dependson: [a]\n")
	}, args: []string{"run", "--workflow", "bad.yaml"}},
	{name: "workflow_wrong_type_and_unknown_key", setup: func(e *runEnv) {
		e.file("bad.yaml", "nam: bad\nsteps:\n  - id: a\n    task: 3\n  - id: b\n    task: do b\n    timeout: 5\n")
	}, args: []string{"run", "--workflow", "bad.yaml"}},
	// A folder where .pixir/ cannot be made: which folder, why, what to do.
	{name: "run_state_folder_blocked", setup: func(e *runEnv) { e.file(".pixir", "") }, args: []string{"run", "hello"}},
	// config.toml's problems: the file, line and column, the key, what it
	// must hold.
	{name: "config_syntax_error", setup: withConfig("model =\n"), args: []string{"run", "hello"}},
	{name: "config_wrong_type", setup: withConfig("[agents]\nmax_threads = \"six\"\n"), args: []string{"run", "hello"}},
	{name: "config_duration_as_number", setup: withConfig("idle_timeout = 90\n"), args: []string{"run", "hello"}},
	{name: "config_unknown_key", setup: withConfig("[profiles.local]\nmodle = \"qwen\"\nmax_token = 5\n"), args: []string{"run", "hello"}},
	{name: "config_bad_value", setup: withConfig("[compaction]\nthreshold = 0.8\n\n[budget]\nwarn_at = 80\n"), args: []string{"run", "hello"}},
	{name: "config_unknown_profile", setup: withConfig("provider = \"scripted\"\nprofile = \"locl\"\n\n[profiles.local]\nmodel = \"m\"\n"), args: []string{"run", "hello"}},
	{name: "workflow_yaml_syntax", setup: func(e *runEnv) {
		e.file("bad.yaml", "name: bad\nsteps:\n  - id: a\n    task: [unclosed\n")
	}, args: []string{"run", "--workflow", "bad.yaml"}},
	// A list item indented wrong: the line of the list it breaks.
	{name: "workflow_yaml_indent", setup: func(e *runEnv) {
		e.file("bad.yaml", "name: bad\nsteps:\n  - id: a\n   task: do a\n")
	}, args: []string{"run", "--workflow", "bad.yaml"}},
	{name: "workflow_bad_value", setup: func(e *runEnv) {
		e.file("bad.yaml", "name: bad\nsteps:\n  - id: a\n    task: do a\n    timeout_ms: -5\n")
	}, args: []string{"run", "--workflow", "bad.yaml"}},
	// A partial workflow's next actions are commands to paste.
	{name: "workflow_partial_next", setup: func(e *runEnv) { e.copyExample("partial.yaml") },
		args: []string{"run", "--workflow", "partial.yaml"}, lastLines: true},
}

// withConfig writes PIXIR_HOME/config.toml.
func withConfig(text string) func(e *runEnv) {
	return func(e *runEnv) {
		require.NoError(e.t, os.MkdirAll(e.home, 0o755))
		require.NoError(e.t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte(text), 0o644))
	}
}

// TestARefusedWorkflowMakesNoSession: an invalid file, an unknown agent
// among its problems, leaves nothing in pixir sessions.
func TestARefusedWorkflowMakesNoSession(t *testing.T) {
	e := newRunEnv(t)
	e.file("bad.yaml", "steps:\n  - id: a\n    task: do a\n    agent: nosuch\n")
	_, stderr, code := e.pixir("run", "--workflow", "bad.yaml")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `steps[0] "a": there is no agent named "nosuch"`)
	_, stderr, code = e.pixir("sessions")
	require.Equal(t, exitOK, code)
	require.Contains(t, stderr, "no sessions in")
}

// TestInspectTakesASubagentIDPrefix: the sa-… id pixir inspect shows
// under a call is accepted back, whole or as a unique start.
func TestInspectTakesASubagentIDPrefix(t *testing.T) {
	e := newRunEnv(t)
	e.mustRun("run", "delegate")
	sa := e.subagentIDs()[0]
	for _, id := range []string{sa, sa[:7]} {
		stdout, stderr, code := e.pixir("inspect", id)
		require.Equal(t, exitOK, code, stderr)
		require.Contains(t, stdout, "/.pixir/subagents/"+sa+"/")
		require.Contains(t, stdout, "turn 1 [completed]")
	}
	_, stderr, code := e.pixir("inspect", "sa-zzz")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "no Subagent sa-zzz")
}

func noKeys(e *runEnv) {
	e.env = append(e.env, "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "OPENAI_BASE_URL=", "ANTHROPIC_BASE_URL=")
}

// TestRunRefusedForAMissingKeyMakesNoSession: nothing is left behind by a
// run that could not start.
func TestRunRefusedForAMissingKeyMakesNoSession(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--provider", "anthropic", "hello"},
		{"run", "--provider", "openai", "--model", "m", "hello"},
		{"run", "--provider", "anthropic", "--workflow", "partial.yaml"},
	} {
		e := newRunEnv(t)
		noKeys(e)
		e.copyExample("partial.yaml")
		_, stderr, code := e.pixir(args...)
		require.Equal(t, exitUsage, code, stderr)
		require.Contains(t, stderr, "_API_KEY is not set; export ")
		require.NoDirExists(t, filepath.Join(e.ws, ".pixir", "sessions"), "%v", args)
	}
}

// TestDoctorAgreesWithRun: an openai setup without a model fails the doctor,
// as pixir run refuses it, whether or not its server answers.
func TestDoctorAgreesWithRun(t *testing.T) {
	e := newRunEnv(t)
	noKeys(e)
	stdout, _, code := e.pixir("doctor", "--provider", "openai", "--base-url", "http://127.0.0.1:1/v1")
	require.Equal(t, exitError, code, stdout)
	require.Contains(t, stdout, "FAIL  model      no model is configured: pixir run and pixir acp refuse to start without one")
	_, stderr, code := e.pixir("run", "--provider", "openai", "--base-url", "http://127.0.0.1:1/v1", "hello")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "the openai provider needs a model")
	stdout, _, code = e.pixir("doctor", "--provider", "openai", "--model", "m")
	require.Equal(t, exitError, code, stdout)
	require.Contains(t, stdout, "FAIL  API key    OPENAI_API_KEY is not set")
}

// mustRun runs an earlier command of a case; it must not be refused.
func (e *runEnv) mustRun(args ...string) {
	e.t.Helper()
	_, stderr, code := e.pixir(args...)
	require.Contains(e.t, []int{exitOK, exitPartial}, code, stderr)
}

// sessionIDs are the ids of the workspace's sessions, newest first.
func (e *runEnv) sessionIDs() []string {
	e.t.Helper()
	stdout, stderr, code := e.pixir("sessions", "--json")
	require.Equal(e.t, exitOK, code, stderr)
	var list []struct {
		ID string `json:"session_id"`
	}
	require.NoError(e.t, json.Unmarshal([]byte(stdout), &list))
	ids := make([]string, len(list))
	for i, l := range list {
		ids[i] = l.ID
	}
	require.NotEmpty(e.t, ids)
	return ids
}

// subagentIDs are the sa-… ids of the workspace's Subagents.
func (e *runEnv) subagentIDs() []string {
	e.t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.ws, ".pixir", "subagents"))
	require.NoError(e.t, err)
	var ids []string
	for _, d := range entries {
		if d.IsDir() {
			ids = append(ids, d.Name())
		}
	}
	require.NotEmpty(e.t, ids)
	return ids
}

func (e *runEnv) copyExample(name string) {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
	require.NoError(e.t, err)
	e.file(name, string(b))
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \"'$") {
			a = fmt.Sprintf("%q", a)
		}
		out[i] = a
	}
	return out
}

var (
	uuidRE    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	subIDRE   = regexp.MustCompile(`\bsa-[0-9a-f]{3,12}\b`)
	wfIDRE    = regexp.MustCompile(`\bwf-[0-9a-f]{12}\b`)
	shortRE   = regexp.MustCompile(`\b[0-9a-f]{6,12}\b`)
	stampRE   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	minuteRE  = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?`)
	elapsedRE = regexp.MustCompile(`\b\d+(\.\d+)? ?(ms|µs|s)\b`)
)

// normalize replaces what differs between runs (folders, ids, times) with
// stable names, so a golden file says only what the user reads.
func (e *runEnv) normalize(s string) string {
	s = strings.ReplaceAll(s, e.ws, "$WS")
	if real, err := filepath.EvalSymlinks(e.ws); err == nil {
		s = strings.ReplaceAll(s, real, "$WS")
	}
	s = strings.ReplaceAll(s, e.home, "$PIXIR_HOME")
	s = uuidRE.ReplaceAllString(s, "<uuid>")
	s = subIDRE.ReplaceAllString(s, "sa-<id>")
	s = wfIDRE.ReplaceAllString(s, "wf-<id>")
	s = shortRE.ReplaceAllString(s, "<id>") // a shortened session id
	s = stampRE.ReplaceAllString(s, "<time>")
	s = minuteRE.ReplaceAllString(s, "<time>")
	s = elapsedRE.ReplaceAllString(s, "<elapsed>")
	return s
}

// checkGolden compares got with the file at path, or rewrites it with -update.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *updateGolden {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run go test ./cmd/pixir -run %s -update", t.Name())
	require.Equal(t, string(want), got, "the output changed; if on purpose: go test ./cmd/pixir -run TestCLIOutputGolden -update, and review the diff")
}

// TestDoctorWithABrokenConfigSaysWhyNoProviderIsShown: with a config.toml
// it cannot read, the doctor's header said "provider " and nothing else;
// it says why, and each of the config's problems is its own line of the
// check's column.
func TestDoctorWithABrokenConfigSaysWhyNoProviderIsShown(t *testing.T) {
	e := newRunEnv(t)
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("modle = 1\nmax_tokens = -1\n"), 0o644))
	stdout, _, code := e.pixir("doctor")
	require.Equal(t, exitError, code, stdout)
	lines := strings.Split(stdout, "\n")
	require.Equal(t, "provider not chosen: the config check below failed", lines[0], stdout)
	at := filepath.Join(e.home, "config.toml")
	require.Contains(t, stdout, "  FAIL  config     "+at+`:1:1: unknown key "modle"; did you mean "model"?`+"\n"+
		"                   "+at+":2:1: max_tokens must be positive, got -1\n"+
		"                   fix: correct the configuration\n")

	// A provider named by a flag is that one, whatever the file says.
	stdout, _, code = e.pixir("doctor", "--provider", "openai")
	require.Equal(t, exitError, code, stdout)
	require.True(t, strings.HasPrefix(stdout, "provider openai\n"), stdout)
}
