package runtime

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/workflows"
)

// gitRepo makes a repository with one commit, its workspace a subfolder.
func gitRepo(t *testing.T) (repo, ws string, git func(args ...string) string) {
	t.Helper()
	// The committer under test runs git in this process's environment.
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"} {
		t.Setenv(k, v)
	}
	repo = t.TempDir()
	ws = filepath.Join(repo, "ws")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	git = func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main", repo)
	for _, f := range []string{"kept.txt", "gone.txt", "other.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(ws, f), []byte("v1\n"), 0o644))
	}
	git("add", "-A")
	git("commit", "-q", "-m", "init")
	return repo, ws, git
}

func TestGitCommitterCommitsOnlyItsPaths(t *testing.T) {
	_, ws, git := gitRepo(t)
	// The run's work: a new file (with a glob character in its name), a
	// change, a deletion. Beside it, the user's own change, staged, and an
	// untracked file: neither is the run's.
	require.NoError(t, os.WriteFile(filepath.Join(ws, "new[1].txt"), []byte("new\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("v2\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(ws, "gone.txt")))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "other.txt"), []byte("mine\n"), 0o644))
	git("add", "other.txt")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine\n"), 0o644))

	mode := ModeAuto
	c := gitCommitter{root: ws, mode: func() Mode { return mode }}
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "feat: the run's work", Paths: []string{"gone.txt", "kept.txt", "new[1].txt"}})
	require.NoError(t, err)
	require.Equal(t, workflows.Committed, rep.Status, rep.Reason)
	require.Equal(t, git("rev-parse", "HEAD"), rep.Commit)
	require.Equal(t, "feat: the run's work", git("log", "-1", "--format=%s"))
	require.Equal(t, []string{"D\tws/gone.txt", "M\tws/kept.txt", "A\tws/new[1].txt"}, strings.Split(git("show", "--name-status", "--format=", "HEAD"), "\n"))
	require.Equal(t, "M  ws/other.txt\n?? ws/notes.txt", git("status", "--porcelain", "--", "."), "the user's change stays staged, the untracked file untracked")

	// Committed already (a resumed run names its reused runs' work): only
	// what differs from HEAD is committed and reported; nothing, when
	// nothing does.
	require.NoError(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("v3\n"), 0o644))
	rep, err = c.Commit(context.Background(), workflows.CommitRequest{Message: "again", Paths: []string{"gone.txt", "kept.txt", "new[1].txt"}})
	require.NoError(t, err)
	require.Equal(t, workflows.Committed, rep.Status, rep.Reason)
	require.Equal(t, []string{"kept.txt"}, rep.Files)
	require.Equal(t, "M\tws/kept.txt", git("show", "--name-status", "--format=", "HEAD"))
	rep, err = c.Commit(context.Background(), workflows.CommitRequest{Message: "once more", Paths: []string{"kept.txt", "new[1].txt"}})
	require.NoError(t, err)
	require.Equal(t, workflows.NotCommitted, rep.Status)
	require.Equal(t, "the run's files are as the repository's HEAD has them (committed already): nothing to commit", rep.Reason)
	require.True(t, rep.Unchanged, "committed already: a list of commits goes on to the next")
	require.Equal(t, "again", git("log", "-1", "--format=%s"))

	// A path that begins with a space is a path like any other.
	require.NoError(t, os.WriteFile(filepath.Join(ws, " lead.txt"), []byte("x\n"), 0o644))
	rep, err = c.Commit(context.Background(), workflows.CommitRequest{Message: "spaced", Paths: []string{" lead.txt"}})
	require.NoError(t, err)
	require.Equal(t, workflows.Committed, rep.Status, rep.Reason)
	require.Equal(t, []string{" lead.txt"}, rep.Files)

	mode = ModeReadOnly
	rep, err = c.Commit(context.Background(), workflows.CommitRequest{Message: "x", Paths: []string{"notes.txt"}})
	require.NoError(t, err)
	require.Equal(t, workflows.NotCommitted, rep.Status)
	require.Equal(t, "the session is read_only: nothing is committed", rep.Reason)
	require.False(t, rep.Unchanged, "not made: a list of commits stops here")

	mode = ModeAuto
	c.root = t.TempDir()
	rep, err = c.Commit(context.Background(), workflows.CommitRequest{Message: "x", Paths: []string{"a"}})
	require.NoError(t, err)
	require.Equal(t, workflows.NotCommitted, rep.Status)
	require.Contains(t, rep.Reason, "the workspace is not in a git repository")
}

// A commit git made is committed, even when its hash cannot be read
// after it: the report says the hash is unknown and why, so the workflow
// counts it made (the commits after it go on, the run is not partial).
// Real git makes the commit; its post-commit hook points HEAD at a branch
// with no commit, so that "git rev-parse HEAD" fails after it, as it does
// when anything moves HEAD between the commit and the read.
func TestGitCommitterReportsACommitWhoseHashIsUnreadableAsMade(t *testing.T) {
	repo, ws, git := gitRepo(t)
	hook := filepath.Join(repo, ".git", "hooks", "post-commit")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\ngit symbolic-ref HEAD refs/heads/elsewhere\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("v2\n"), 0o644))

	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "feat: the run's work", Paths: []string{"kept.txt"}})
	require.NoError(t, err)
	require.Equal(t, workflows.Committed, rep.Status, rep.Reason)
	require.Empty(t, rep.Commit)
	require.False(t, rep.Missed)
	require.Equal(t, []string{"kept.txt"}, rep.Files)
	require.Contains(t, rep.Reason, "the commit was made, but its hash could not be read (exit status ")
	require.Equal(t, "feat: the run's work", git("log", "-1", "--format=%s", "main"), "the commit is in the repository")
	require.Equal(t, "M\tws/kept.txt", git("show", "--name-status", "--format=", "main"))
}

// The practice's sanity checks (phase 1), one case each: the repository
// and the files a workflow's commit asks for, checked before any step.
func TestGitCommitterPreflightNamesEachProblem(t *testing.T) {
	check := func(root string, req workflows.PreflightRequest) []string {
		return gitCommitter{root: root, mode: func() Mode { return ModeAuto }}.Preflight(context.Background(), req)
	}
	_, ws, git := gitRepo(t)
	req := workflows.PreflightRequest{Base: "main", Files: []string{"kept.txt"}}

	t.Run("branch == base", func(t *testing.T) {
		require.Equal(t, []string{"the workspace is on main, the base branch; the work needs a branch of its own (git switch -c <branch>)"}, check(ws, req))
	})
	t.Run("sound: a branch of its own, the file there", func(t *testing.T) {
		git("switch", "-q", "-c", "GAL-1")
		t.Cleanup(func() { git("switch", "-q", "main") })
		require.Empty(t, check(ws, req))
	})
	t.Run("missing TODO file", func(t *testing.T) {
		git("switch", "-q", "-c", "GAL-2")
		t.Cleanup(func() { git("switch", "-q", "main") })
		got := check(ws, workflows.PreflightRequest{Base: "main", Files: []string{"TODO/GAL-2.md"}})
		require.Len(t, got, 1)
		require.Contains(t, got[0], "TODO/GAL-2.md does not exist in the workspace")
	})
	t.Run("detached HEAD", func(t *testing.T) {
		git("switch", "-q", "--detach")
		t.Cleanup(func() { git("switch", "-q", "main") })
		got := check(ws, req)
		require.Len(t, got, 1)
		require.Regexp(t, `^HEAD is detached \(at [0-9a-f]+\); switch to a branch of its own`, got[0])
	})
	t.Run("bare repository", func(t *testing.T) {
		bare := filepath.Join(t.TempDir(), "bare.git")
		git("clone", "-q", "--bare", filepath.Dir(ws), bare)
		require.Equal(t, []string{"the workspace is a bare repository; run in a work tree of it (git worktree add <path> -b <branch>)"}, check(bare, workflows.PreflightRequest{Base: "main"}))
	})
	t.Run("no repository", func(t *testing.T) {
		got := check(t.TempDir(), workflows.PreflightRequest{Base: "main"})
		require.Len(t, got, 1)
		require.Contains(t, got[0], "the workspace is not in a git repository")
	})
	t.Run("a required file that links out of the workspace", func(t *testing.T) {
		root := t.TempDir()
		outside := filepath.Join(t.TempDir(), "GAL-3.md")
		require.NoError(t, os.WriteFile(outside, []byte("# GAL-3\n"), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(root, "TODO"), 0o755))
		require.NoError(t, os.Symlink(outside, filepath.Join(root, "TODO", "GAL-3.md")))
		require.NoError(t, os.WriteFile(filepath.Join(root, "TODO", "GAL-4.md"), []byte("# GAL-4\n"), 0o644))
		got := check(root, workflows.PreflightRequest{Files: []string{"TODO/GAL-3.md", "TODO/GAL-4.md"}})
		require.Len(t, got, 1)
		require.Contains(t, got[0], "TODO/GAL-3.md does not exist in the workspace")
	})
	t.Run("files alone need no repository", func(t *testing.T) {
		require.Empty(t, check(t.TempDir(), workflows.PreflightRequest{}))
	})
}
