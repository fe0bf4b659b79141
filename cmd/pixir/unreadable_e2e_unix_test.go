//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// grep and glob say which folders and files they could not read: they
// skipped them without a word, and a grep of a workspace where another
// user's folder and file held the only other matches answered one match,
// complete, as if there were no more. As root, the binary runs as nobody,
// to whom root's private files are closed; a workspace this user cannot
// read is skipped in a folder nobody may read either.
func TestGrepAndGlobSayWhatTheyCouldNotRead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to make files the binary (run as nobody) cannot read")
	}
	base, err := os.MkdirTemp("", "pixir-unreadable-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	put := func(rel, content string) {
		p := filepath.Join(ws, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	put("src/a.txt", "TODO here\n")
	put("src/secret.txt", "TODO there\n")
	put("src/closed/c.txt", "TODO inside\n")
	script := filepath.Join(base, "script.toml")
	require.NoError(t, os.WriteFile(script, []byte(`
[[rule]]
match = 'grepit'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "grep"
  arguments = { pattern = "TODO" }
  [[rule.reply]]
  text = 'matches {{field "output.total_matches" .ToolResult}}; {{field "output.unreadable" .ToolResult}}'
[[rule]]
match = 'globit'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "glob"
  arguments = { pattern = "src/**" }
  [[rule.reply]]
  text = 'files {{field "output.total" .ToolResult}}; {{field "output.unreadable" .ToolResult}}'
`), 0o644))
	require.NoError(t, os.MkdirAll(home, 0o777))
	require.NoError(t, filepath.Walk(base, func(p string, _ os.FileInfo, err error) error {
		require.NoError(t, err)
		return os.Lchown(p, 65534, 65534)
	}))
	// Root's own, closed to nobody.
	for _, p := range []string{"src/secret.txt", "src/closed"} {
		require.NoError(t, os.Lchown(filepath.Join(ws, p), 0, 0))
	}
	require.NoError(t, os.Chmod(filepath.Join(ws, "src", "secret.txt"), 0o600))
	require.NoError(t, os.Chmod(filepath.Join(ws, "src", "closed"), 0o700))
	bin := filepath.Join(base, "pixir")
	copyFile(t, pixirBin, bin)

	run := func(prompt string) string {
		cmd := exec.Command(bin, "run", "--script", script, prompt)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "PIXIR_HOME="+home, "HOME="+home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			if exitErr := (*exec.ExitError)(nil); !errors.As(err, &exitErr) {
				t.Skipf("cannot start the binary as nobody: %v", err)
			}
			t.Fatalf("pixir run %s: %v\n%s%s", prompt, err, stdout.String(), stderr.String())
		}
		return strings.TrimSpace(stdout.String())
	}
	require.Equal(t, "matches 1; [2 paths could not be read (permission denied), so they were not searched: src/closed/, src/secret.txt]", run("grepit"))
	require.Equal(t, "files 2; [1 path could not be read (permission denied), so it was not searched: src/closed/]", run("globit"))
}
