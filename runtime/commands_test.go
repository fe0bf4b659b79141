package runtime

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/sandbox"
)

func TestWriteRoots(t *testing.T) {
	ws := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("r"), 0o644))
	tests := []struct {
		pattern, want string
	}{
		{"docs/**", "docs"},
		{"src/*.go", "src"},
		{"**/*_test.go", "."},
		{"*.md", "."},
		{"README.md", "README.md"},
		{"notes/new.md", "notes"},
		{"a/b/{x,y}/*.txt", "a/b"},
	}
	for _, tt := range tests {
		got := writeRoots(ws, []string{tt.pattern})
		require.Equal(t, []string{filepath.Join(ws, tt.want)}, got, tt.pattern)
	}
	info, err := os.Stat(filepath.Join(ws, "docs"))
	require.NoError(t, err, "a missing root directory is made, so the kernel has something to allow")
	require.True(t, info.IsDir())
}

// A write set's folder reached through a link in the workspace is not
// opened to commands: Landlock would allow where the link leads, outside
// the workspace (an isolated child's snapshot keeps the link, so it wrote
// the real folder outside, not a copy), and no folder is made there.
func TestWriteRootsNeverGoThroughALink(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "shared")))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "f.txt"), []byte("f"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "f.txt"), filepath.Join(ws, "link.txt")))
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "docs"), 0o755))
	for _, pattern := range []string{"shared/**", "shared/sub/**", "shared/f.txt", "shared", "link.txt"} {
		require.Equal(t, []string{}, writeRoots(ws, []string{pattern}), pattern)
	}
	require.NoDirExists(t, filepath.Join(outside, "sub"), "no folder is made through the link")
	require.Equal(t, []string{filepath.Join(ws, "docs")}, writeRoots(ws, []string{"shared/**", "docs/**"}), "the other patterns keep theirs")
	require.Equal(t, []string{}, writeLimit{agent: []string{"shared/**"}}.roots(ws), "nowhere, not the whole workspace")
}

func TestIsolatedChildsGitStopsAtItsSnapshot(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	parent := t.TempDir()
	out, err := exec.Command("git", "init", "-q", parent).CombinedOutput()
	require.NoError(t, err, string(out))
	snap := filepath.Join(parent, StateDir, "subagents", "sa-1", "workspace")
	require.NoError(t, os.MkdirAll(snap, 0o755))

	c := newChildCommands(snap, parent, writeLimit{}, AgentSpec{})
	var buf bytes.Buffer
	o, err := (*sandbox.Sandbox)(nil).Run(context.Background(), sandbox.Command{
		Path: "/bin/sh", Args: []string{"sh", "-c", "git rev-parse --git-dir"}, Dir: snap, Output: &buf,
		Policy: sandbox.Policy{Env: c.env},
	})
	require.NotNil(t, o.State, "%v", err)
	require.NotEqual(t, 0, o.State.ExitCode(), "git found a repository from the snapshot: %s", buf.String())
	require.Contains(t, buf.String(), "not a git repository")

	shared := newChildCommands(parent, parent, writeLimit{}, AgentSpec{})
	require.Empty(t, shared.env, "a shared child works in the parent's repository")
}

func TestSandboxNoticeIsSaidOncePerSession(t *testing.T) {
	off := false
	rt := New(Config{Home: t.TempDir(), Provider: childProvider{}, Model: "m", Sandbox: sandbox.New(sandbox.Config{Landlock: &off})})
	s, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(rt.Close)
	s.commands = newChildCommands(s.workspace.Root(), s.workspace.Root(), writeLimit{step: []string{"docs/**"}}, AgentSpec{})

	p := s.commandPolicy()
	require.True(t, p.Confine)
	first := s.sandboxNotice(p)
	require.Contains(t, first, "without the kernel sandbox: turned off by landlock = false")
	require.Contains(t, first, "checked only after the fact")
	require.Empty(t, s.sandboxNotice(p), "once per session")

	s2, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	require.Empty(t, s2.sandboxNotice(s2.commandPolicy()), "a user's session in auto mode asks for no confinement")
}
