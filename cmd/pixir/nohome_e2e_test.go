package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// withoutHome is the test's environment without $HOME and $PIXIR_HOME, as a
// service or a container started with env -i has it.
func withoutHome(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "HOME", "PIXIR_HOME", "PIXIR_PROVIDER", "PIXIR_SCRIPT", "PIXIR_MODEL", "PIXIR_PROFILE":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// With no home folder, every command does what agents and workflows did:
// it says on stderr what is not read and goes on. pixir run exited 64, so a
// CI job without $HOME could list agents but not run one.
func TestWithoutAHomeFolderEveryCommandWarnsAndGoesOn(t *testing.T) {
	ws := t.TempDir()
	pixir := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(pixirBin, args...)
		cmd.Dir = ws
		cmd.Env = withoutHome()
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if exit, ok := errors.AsType[*exec.ExitError](err); ok {
			return out.String(), errOut.String(), exit.ExitCode()
		}
		require.NoError(t, err)
		return out.String(), errOut.String(), 0
	}
	for _, args := range [][]string{{"agents"}, {"workflows"}, {"prompt"}} {
		_, stderr, code := pixir(args...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "not read", "%v says what is not read", args)
	}

	stdout, stderr, code := pixir("run", "create a file please")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "Written.")
	require.Contains(t, stderr, "cannot find a home directory")
	require.Contains(t, stderr, "config.toml", "says what is not read")
	require.FileExists(t, filepath.Join(ws, "hello.txt"))
	// Nothing of a home was made relative to the workspace.
	require.NoDirExists(t, filepath.Join(ws, "cache"))
	require.NoFileExists(t, filepath.Join(ws, "config.toml"))
}
