package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider/doctor"
)

// runDoctorBin runs the built binary's doctor command with a fresh
// PIXIR_HOME holding config (when given) and only the provider variables
// in env.
func runDoctorBin(t *testing.T, config string, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	home := t.TempDir()
	if config != "" {
		require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644))
	}
	cmd := exec.Command(pixirBin, append([]string{"doctor"}, args...)...)
	cmd.Env = append(os.Environ(), "PIXIR_HOME="+home)
	for _, k := range []string{"PIXIR_PROVIDER", "PIXIR_MODEL", "PIXIR_PROFILE", "PIXIR_SCRIPT", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"} {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
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

func decodeReport(t *testing.T, stdout string) doctor.Report {
	t.Helper()
	var r doctor.Report
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&r), stdout)
	return r
}

func checkNamed(t *testing.T, r doctor.Report, name string) doctor.Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", name, r.Checks)
	return doctor.Check{}
}

const openAIModels = `{"object":"list","data":[{"id":"gpt-test","object":"model","created":1744318173,"owned_by":"system"},{"id":"o4-mini","object":"model","created":1744225351,"owned_by":"system"}]}`

func TestDoctorJSON(t *testing.T) {
	listing := func(t *testing.T) *fakeModel { return newFakeModel(t, jsonReply(200, openAIModels)) }
	tests := []struct {
		name   string
		config string
		server func(t *testing.T) *fakeModel
		base   func(t *testing.T, srv *fakeModel) string
		env    map[string]string
		args   []string
		code   int
		check  func(t *testing.T, r doctor.Report, srv *fakeModel)
	}{
		{name: "the model is listed", server: listing, env: map[string]string{"OPENAI_API_KEY": "sk-doc"}, args: []string{"--model", "gpt-test"}, code: exitOK,
			check: func(t *testing.T, r doctor.Report, srv *fakeModel) {
				require.True(t, r.OK)
				require.Equal(t, "openai", r.Provider)
				require.Equal(t, "gpt-test", r.Model)
				require.Equal(t, srv.URL+"/v1", r.BaseURL)
				require.Equal(t, doctor.OK, checkNamed(t, r, "API key").Status)
				require.Equal(t, doctor.OK, checkNamed(t, r, "server").Status)
				require.Contains(t, checkNamed(t, r, "server").Detail, "2 model(s) listed")
				require.Equal(t, doctor.OK, checkNamed(t, r, "model").Status)
				require.Equal(t, doctor.Warn, checkNamed(t, r, "context").Status, "no context_window: a warning, not a failure")
				req := srv.received()
				require.Len(t, req, 1)
				require.Equal(t, "GET", req[0].Method)
				require.Equal(t, "/v1/models", req[0].Path)
				require.Equal(t, "Bearer sk-doc", req[0].Header.Get("Authorization"))
			}},
		{name: "the model is missing", server: listing, args: []string{"--model", "gpt-9"}, code: exitError,
			check: func(t *testing.T, r doctor.Report, _ *fakeModel) {
				require.False(t, r.OK)
				c := checkNamed(t, r, "model")
				require.Equal(t, doctor.Fail, c.Status)
				require.Equal(t, `"gpt-9" is not among the models the server lists: gpt-test, o4-mini`, c.Detail)
				require.Contains(t, c.Fix, "--model, PIXIR_MODEL or model in config.toml")
			}},
		{name: "no model configured", server: listing, code: exitError,
			check: func(t *testing.T, r doctor.Report, _ *fakeModel) {
				c := checkNamed(t, r, "model")
				require.Equal(t, doctor.Fail, c.Status)
				require.Contains(t, c.Fix, "the server lists: gpt-test, o4-mini")
			}},
		{name: "the server is unreachable", base: func(t *testing.T, _ *fakeModel) string { return closedURL(t) + "/v1" }, args: []string{"--model", "gpt-test"}, code: exitError,
			check: func(t *testing.T, r doctor.Report, _ *fakeModel) {
				require.False(t, r.OK)
				c := checkNamed(t, r, "server")
				require.Equal(t, doctor.Fail, c.Status)
				require.Contains(t, c.Detail, "connection refused")
				require.Contains(t, c.Fix, "start the server, or point --base-url")
				require.Equal(t, doctor.Warn, checkNamed(t, r, "model").Status)
			}},
		{name: "the key is wrong",
			server: func(t *testing.T) *fakeModel {
				return newFakeModel(t, jsonReply(401, `{"error":{"message":"Incorrect API key provided: sk-bad.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
			},
			env: map[string]string{"OPENAI_API_KEY": "sk-bad"}, args: []string{"--model", "gpt-test"}, code: exitError,
			check: func(t *testing.T, r doctor.Report, _ *fakeModel) {
				c := checkNamed(t, r, "server")
				require.Equal(t, doctor.Fail, c.Status)
				require.Contains(t, c.Detail, "rejected the API key")
				require.Equal(t, "set OPENAI_API_KEY to a valid key", c.Fix)
			}},
		{name: "a profile of config.toml", server: listing,
			config: "context_window = 8192\n[profiles.local]\nprovider = \"openai\"\nmodel = \"gpt-test\"\nbase_url = \"BASE\"\n",
			args:   []string{"--profile", "local"}, code: exitOK,
			check: func(t *testing.T, r doctor.Report, srv *fakeModel) {
				require.True(t, r.OK)
				require.Equal(t, "local", r.Profile)
				require.Equal(t, srv.URL+"/v1", r.BaseURL)
				require.Contains(t, checkNamed(t, r, "config").Detail, `profile "local"`)
				require.Equal(t, "context window 8192 tokens", checkNamed(t, r, "context").Detail)
			}},
		{name: "anthropic without a key makes no request", server: listing, args: []string{"--provider", "anthropic"}, code: exitError,
			check: func(t *testing.T, r doctor.Report, srv *fakeModel) {
				c := checkNamed(t, r, "API key")
				require.Equal(t, doctor.Fail, c.Status)
				require.Equal(t, "ANTHROPIC_API_KEY is not set", c.Detail)
				require.Contains(t, c.Fix, "export ANTHROPIC_API_KEY=")
				require.Empty(t, srv.received())
			}},
		{name: "the offline scripted provider", code: exitOK,
			check: func(t *testing.T, r doctor.Report, _ *fakeModel) {
				require.True(t, r.OK)
				require.Equal(t, "scripted", r.Provider)
				require.Contains(t, checkNamed(t, r, "script").Detail, "the embedded default script")
			}},
		{name: "a broken config.toml", config: "provider = \"openai\"\nmodle = \"x\"\n", code: exitError,
			check: func(t *testing.T, r doctor.Report, _ *fakeModel) {
				require.False(t, r.OK)
				c := checkNamed(t, r, "config")
				require.Equal(t, doctor.Fail, c.Status)
				require.Contains(t, c.Detail, `config.toml:2:1: unknown key "modle"`)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var srv *fakeModel
			if tt.server != nil {
				srv = tt.server(t)
			}
			args := append([]string{"--json"}, tt.args...)
			config := tt.config
			if srv != nil {
				base := srv.URL + "/v1"
				if strings.Contains(config, "BASE") {
					config = strings.ReplaceAll(config, "BASE", base)
				} else if !strings.Contains(strings.Join(tt.args, " "), "--provider") {
					args = append(args, "--provider", "openai", "--base-url", base)
				} else {
					args = append(args, "--base-url", srv.URL)
				}
			}
			if tt.base != nil {
				args = append(args, "--provider", "openai", "--base-url", tt.base(t, srv))
			}
			stdout, stderr, code := runDoctorBin(t, config, tt.env, args...)
			require.Equal(t, tt.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			tt.check(t, decodeReport(t, stdout), srv)
		})
	}
}

func TestDoctorText(t *testing.T) {
	srv := newFakeModel(t, jsonReply(200, openAIModels))
	stdout, _, code := runDoctorBin(t, "", nil, "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-test")
	require.Equal(t, exitOK, code, stdout)
	require.True(t, strings.HasPrefix(stdout, "provider openai, model gpt-test, "+srv.URL+"/v1\n"), stdout)
	require.Contains(t, stdout, "  ok    model      \"gpt-test\" is listed")
	require.True(t, strings.HasSuffix(stdout, "\nAll checks passed.\n"), stdout)

	stdout, _, code = runDoctorBin(t, "", nil, "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-9")
	require.Equal(t, exitError, code, stdout)
	require.Contains(t, stdout, "  FAIL  model      \"gpt-9\" is not among the models the server lists: gpt-test, o4-mini\n")
	require.Contains(t, stdout, "fix: choose a listed model with --model")
	require.True(t, strings.HasSuffix(stdout, "\n1 check(s) failed.\n"), stdout)
}

func TestDoctorBadUsage(t *testing.T) {
	_, stderr, code := runDoctorBin(t, "", nil, "--jsn")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "unknown flag --jsn; did you mean --json?")
}

// TestDoctorChecksTheMCPServers: each [mcp_servers] table is checked as a
// session would start it; one a session would leave out, or that does not
// start, fails the report, and a server that never answers does not hold
// doctor past its startup_timeout.
func TestDoctorChecksTheMCPServers(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	config := fmt.Sprintf(`
[mcp_servers.gadgets]
command = %q
args = ["-test.run=^$"]
env = { PIXIR_TEST_MCP_SERVER = "stdio" }

[mcp_servers.old]
command = "/nonexistent/old"
enabled = false
`, exe)
	stdout, stderr, code := runDoctorBin(t, config, nil, "--provider", "scripted", "--json")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	r := decodeReport(t, stdout)
	var mcpChecks []doctor.Check
	for _, c := range r.Checks {
		if c.Name == "mcp" {
			mcpChecks = append(mcpChecks, c)
		}
	}
	require.Equal(t, []doctor.Check{
		{Name: "mcp", Status: doctor.OK, Detail: `"gadgets" (stdio): started, 1 tool: mcp__gadgets__ping`},
		{Name: "mcp", Status: doctor.OK, Detail: `"old" is disabled (enabled = false): not started`},
	}, mcpChecks)
	require.Equal(t, "sandbox", r.Checks[len(r.Checks)-1].Name, "the sandbox stays last")

	config += `
[mcp_servers.tracker]
url = "https://tracker.example/mcp"
bearer_token_env_var = "PIXIR_TEST_UNSET_TOKEN"

[mcp_servers.missing]
command = "pixir-test-no-such-server"

[mcp_servers.silent]
command = "sleep"
args = ["600"]
startup_timeout = "1s"
`
	stdout, stderr, code = runDoctorBin(t, config, nil, "--provider", "scripted")
	require.Equal(t, exitError, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Contains(t, stdout, "  ok    mcp        \"gadgets\" (stdio): started, 1 tool: mcp__gadgets__ping\n")
	require.Contains(t, stdout, "  FAIL  mcp        \"tracker\" is left out of every session: PIXIR_TEST_UNSET_TOKEN not set in the environment\n"+
		"                   fix: set PIXIR_TEST_UNSET_TOKEN where pixir runs, or enabled = false in [mcp_servers.tracker] of ")
	require.Contains(t, stdout, "  FAIL  mcp        \"missing\" (stdio): its command is not found: ")
	require.Contains(t, stdout, "fix: install pixir-test-no-such-server, or correct command in [mcp_servers.missing] of ")
	require.Contains(t, stdout, "  FAIL  mcp        \"silent\" (stdio) did not start: it did not answer within 1s")
	require.True(t, strings.HasSuffix(stdout, "\n3 check(s) failed.\n"), stdout)
}

// A $TMPDIR that is missing (or not a folder, or not writable) stops every
// confined command from starting: doctor says so and how to fix it, and
// does not blame the kernel (it said Landlock was missing, and to reboot
// with it in lsm=).
func TestDoctorNamesATemporaryFolderConfinedCommandsCannotUse(t *testing.T) {
	sandboxCheck := func(tmpdir string) doctor.Check {
		cmd := exec.Command(pixirBin, "doctor", "--json")
		cmd.Env = append(os.Environ(), "PIXIR_HOME="+t.TempDir(), "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=", "PIXIR_PROFILE=", "TMPDIR="+tmpdir)
		out, err := cmd.Output()
		require.NoError(t, err, "a warning, not a failure: %s", out)
		r := decodeReport(t, string(out))
		c := r.Checks[len(r.Checks)-1]
		require.Equal(t, "sandbox", c.Name)
		return c
	}
	if c := sandboxCheck(t.TempDir()); !strings.HasPrefix(c.Detail, "Landlock ABI") {
		t.Skipf("no Landlock here: %s", c.Detail)
	}
	missing := filepath.Join(t.TempDir(), "gone")
	c := sandboxCheck(missing)
	require.Equal(t, doctor.Warn, c.Status, c.Detail)
	require.NotContains(t, c.Detail, "no kernel sandbox")
	require.Contains(t, c.Detail, "no confined command can start: making the command's private temporary directory in "+missing)
	require.Contains(t, c.Fix, "set TMPDIR to a folder you can write")
}
