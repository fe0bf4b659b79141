package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/sandbox"
	"github.com/pixir-go/pixir/workflows"
)

// A read-only reviewer's verify command may be `go test`: Pixir runs it
// under the reviewer's sandbox, which may write neither the workspace nor
// the user's Go build cache, so the command builds in Pixir's own cache
// ($PIXIR_HOME/cache/go-build/<project>), and reads the module cache for a
// dependency. Without it, go test fails with "permission denied" on
// ~/.cache/go-build before any test runs.
func TestAReadOnlyReviewersVerifyRunsGoTest(t *testing.T) {
	needLandlock(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH: nothing to verify with")
	}
	e := newRunEnv(t)
	goEnv := func(name string) string {
		out, err := exec.Command(goBin, "env", name).Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}
	// Pixir's cache starts cold for a new PIXIR_HOME: the first go test
	// builds the standard library into it (minutes on a busy 2-core
	// machine). The test points it at this machine's cache instead, which
	// its own go test filled: the sandbox still allows only Pixir's cache
	// path, the user's GOCACHE stays read-only to the command.
	ws, err := filepath.EvalSymlinks(e.ws) // the project as Pixir names it
	require.NoError(t, err)
	projectCache := sandbox.ProjectGoCache(filepath.Join(e.home, "cache", "go-build"), ws)
	require.NoError(t, os.MkdirAll(filepath.Dir(projectCache), 0o755))
	require.NoError(t, os.Symlink(goEnv("GOCACHE"), projectCache))
	e.env = append(e.env, "GOPROXY=off", "GOFLAGS=-mod=readonly")

	sum, err := os.ReadFile(filepath.Join("..", "..", "go.sum"))
	require.NoError(t, err)
	var depSum []string
	for _, l := range strings.Split(string(sum), "\n") {
		if strings.HasPrefix(l, "github.com/bmatcuk/doublestar/v4 v4.10.4") {
			depSum = append(depSum, l)
		}
	}
	require.Len(t, depSum, 2, "the dependency of the module below is Pixir's own, in the module cache")
	e.file("go.mod", "module example.com/tiny\n\ngo 1.22\n\nrequire github.com/bmatcuk/doublestar/v4 v4.10.4\n")
	e.file("go.sum", strings.Join(depSum, "\n")+"\n")
	e.file("tiny.go", "package tiny\n\nimport \"github.com/bmatcuk/doublestar/v4\"\n\n// Matches reports whether name matches pattern.\nfunc Matches(pattern, name string) bool {\n\tok, _ := doublestar.Match(pattern, name)\n\treturn ok\n}\n")
	e.file("tiny_test.go", "package tiny\n\nimport \"testing\"\n\nfunc TestMatches(t *testing.T) {\n\tif !Matches(\"src/**\", \"src/a/b.go\") {\n\t\tt.Fatal(\"src/** does not match src/a/b.go\")\n\t}\n}\n")
	wf := filepath.Join(filepath.Dir(e.ws), "review.yaml")
	require.NoError(t, os.WriteFile(wf, []byte(`name: review
steps:
  - id: review
    agent: check
    task: "[review] Review the module."
    timeout_ms: 600000
    verify:
      - run: go test ./...
        means: the module's tests pass
        timeout_ms: 600000
`), 0o644))
	script := filepath.Join(filepath.Dir(e.ws), "review.toml")
	require.NoError(t, os.WriteFile(script, []byte(`
[[rule]]
name = "check reviews"
match = '\A\[review\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"ACCEPTABLE","payload":{"verdict":"ACCEPTABLE","findings":[]}}'
  [[rule.reply]]
  text = "ACCEPTABLE"
`), 0o644))

	stdout, stderr, code := e.pixir("run", "--workflow", wf, "--script", script, "--json")
	require.Equal(t, exitOK, code, stderr)
	out := runOutcome(t, stdout)
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)
	review := runOf(t, out, "review")
	require.Equal(t, workflows.ReadOnly, review.Posture)
	require.Equal(t, []string{"verified by Pixir: `go test ./...` exited 0, as required (pass) (the module's tests pass)"}, review.Checkpoint.Verification)
	// The reviewer wrote nothing in the workspace.
	entries, err := os.ReadDir(e.ws)
	require.NoError(t, err)
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	require.Equal(t, []string{".pixir", "go.mod", "go.sum", "tiny.go", "tiny_test.go"}, names)
}
