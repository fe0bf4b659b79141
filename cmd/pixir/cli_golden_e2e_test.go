package main

import (
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
	}
	cases = append(cases, moreCLICases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newRunEnv(t)
			if c.setup != nil {
				c.setup(e)
			}
			stdout, stderr, code := e.pixir(c.args...)
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
	for _, cmd := range append([][]string{{}}, [][]string{{"acp"}, {"demo"}, {"tools"}, {"agents"}, {"doctor"}, {"prompt"},
		{"run"}, {"resume"}, {"sessions"}, {"inspect"}, {"smoke"}, {"smoke", "workflows"}, {"smoke", "workflows-real"}}...) {
		for _, h := range []string{"-h", "--help"} {
			stdout, stderr, code := e.pixir(append(append([]string{}, cmd...), h)...)
			require.Equal(t, exitOK, code, "pixir %v %s: %s", cmd, h, stderr)
			require.Contains(t, stdout, "Usage:", "pixir %v %s", cmd, h)
			require.Empty(t, stderr, "pixir %v %s", cmd, h)
		}
	}
}

// moreCLICases are the cases of the other findings, added beside them.
var moreCLICases []cliCase

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
	subIDRE   = regexp.MustCompile(`\bsa-[0-9a-f]{12}\b`)
	wfIDRE    = regexp.MustCompile(`\bwf-[0-9a-f]{12}\b`)
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
