//go:build unix

package snapshot

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gitIn runs git in dir with no user or system configuration, as a test
// user would with a fresh account.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v in %s: %s", args, dir, out)
	return strings.TrimSpace(string(out))
}

func needGit(t testing.TB) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
}

// repo is a git work tree with history, a committed and an uncommitted
// change, an untracked file and an ignored one.
func repo(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	gitIn(t, ws, "init", "-q", "-b", "main")
	writeFile(t, ws, ".gitignore", "build/\n")
	writeFile(t, ws, "main.go", "package main\n")
	writeFile(t, ws, "lib/lib.go", "package lib\n")
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "commit", "-q", "-m", "first")
	writeFile(t, ws, "lib/lib.go", "package lib\n\nfunc F() {}\n")
	gitIn(t, ws, "commit", "-q", "-am", "second")
	writeFile(t, ws, "main.go", "package main // uncommitted\n")
	writeFile(t, ws, "notes.txt", "untracked\n")
	writeFile(t, ws, "build/out", "ignored\n")
	return ws
}

func TestGitViewIsTheChildsOwnRepository(t *testing.T) {
	needGit(t)
	ws := repo(t)
	writeFile(t, ws, ".pixir/.gitignore", "*\n") // as the runtime writes it
	parentHead := gitIn(t, ws, "rev-parse", "HEAD")
	parentStatus := gitIn(t, ws, "status", "--porcelain")
	dst := filepath.Join(ws, ".pixir", "subagents", "sa-1", "workspace")
	m, err := TakeWith(context.Background(), ws, dst, Options{Git: true})
	require.NoError(t, err)
	require.NotNil(t, m.Git)
	require.Equal(t, parentHead, m.Git.Parent)
	require.NotEqual(t, parentHead, m.Git.Base, "the uncommitted and untracked files make a base commit")

	// The child's repository starts clean, on the parent's history.
	require.Empty(t, gitIn(t, dst, "status", "--porcelain"))
	require.Equal(t, filepath.Join(dst, ".git"), gitIn(t, dst, "rev-parse", "--absolute-git-dir"))
	require.Equal(t, "pixir/snapshot", gitIn(t, dst, "rev-parse", "--abbrev-ref", "HEAD"))
	require.Equal(t, parentHead, gitIn(t, dst, "rev-parse", "HEAD~1"))
	require.Contains(t, gitIn(t, dst, "log", "--format=%s"), "second\nfirst")
	require.Equal(t, "package main // uncommitted", gitIn(t, dst, "show", "HEAD:main.go"))
	require.Equal(t, "untracked", gitIn(t, dst, "show", "HEAD:notes.txt"))
	require.Equal(t, "build/out", gitIn(t, dst, "check-ignore", "build/out"), "ignored files stay ignored")
	// The parent's objects are shared, not copied.
	var objects int
	require.NoError(t, filepath.WalkDir(filepath.Join(dst, ".git", "objects"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() != "alternates" {
			objects++
		}
		return err
	}))
	require.LessOrEqual(t, objects, 4, "only the base's new blobs, trees and commit are the child's own")

	// Its changes show against the base, and nothing else.
	writeFile(t, dst, "lib/lib.go", "package lib\n\nfunc G() {}\n")
	writeFile(t, dst, "new.go", "package main\n")
	require.Equal(t, "M lib/lib.go\n?? new.go", gitIn(t, dst, "status", "--porcelain"))
	require.Contains(t, gitIn(t, dst, "diff"), "+func G() {}")

	// A reset, a stash and a commit stay in the copy.
	gitIn(t, dst, "stash", "-u")
	require.Empty(t, gitIn(t, dst, "status", "--porcelain"))
	gitIn(t, dst, "stash", "pop")
	gitIn(t, dst, "add", "-A")
	gitIn(t, dst, "commit", "-q", "-m", "child work")
	writeFile(t, dst, "main.go", "scratch\n")
	gitIn(t, dst, "reset", "-q", "--hard", "HEAD~1")
	require.Equal(t, parentHead, gitIn(t, ws, "rev-parse", "HEAD"))
	require.Equal(t, parentStatus, gitIn(t, ws, "status", "--porcelain"), "the parent's work tree and index are as they were")
	require.Empty(t, gitIn(t, ws, "stash", "list"))
	require.Equal(t, "main", gitIn(t, ws, "rev-parse", "--abbrev-ref", "HEAD"))
	b, err := os.ReadFile(filepath.Join(ws, "main.go"))
	require.NoError(t, err)
	require.Equal(t, "package main // uncommitted\n", string(b))
	_, err = exec.Command("git", "-C", ws, "rev-parse", "--verify", "-q", "refs/heads/pixir/snapshot").Output()
	require.Error(t, err, "no branch of the child's reaches the parent")

	// Change lists never see the repository.
	ch, err := m.Changes(context.Background(), dst)
	require.NoError(t, err)
	require.Equal(t, Changes{}, normal(ch))
}

func TestGitViewOfACleanTree(t *testing.T) {
	needGit(t)
	ws := t.TempDir()
	gitIn(t, ws, "init", "-q")
	writeFile(t, ws, "a.txt", "a\n")
	gitIn(t, ws, "add", "-A")
	gitIn(t, ws, "commit", "-q", "-m", "only")
	m, err := TakeWith(context.Background(), ws, filepath.Join(t.TempDir(), "ws"), Options{Git: true})
	require.NoError(t, err)
	require.NotNil(t, m.Git)
	require.Equal(t, m.Git.Parent, gitIn(t, m.Root, "rev-parse", "HEAD~1"))
	require.Equal(t, gitIn(t, ws, "rev-parse", "HEAD^{tree}"), gitIn(t, m.Root, "rev-parse", "HEAD^{tree}"), "the same tree")
	require.Empty(t, gitIn(t, m.Root, "status", "--porcelain"))
}

func TestGitViewWithoutCommitsOrWithoutARepository(t *testing.T) {
	needGit(t)
	ws := t.TempDir()
	gitIn(t, ws, "init", "-q")
	writeFile(t, ws, "a.txt", "a\n")
	m, err := TakeWith(context.Background(), ws, filepath.Join(t.TempDir(), "ws"), Options{Git: true})
	require.NoError(t, err)
	require.NotNil(t, m.Git)
	require.Empty(t, m.Git.Parent)
	require.Empty(t, gitIn(t, m.Root, "status", "--porcelain"))
	require.Equal(t, "a", gitIn(t, m.Root, "show", "HEAD:a.txt"))

	plain := t.TempDir()
	writeFile(t, plain, "a.txt", "a\n")
	m, err = TakeWith(context.Background(), plain, filepath.Join(t.TempDir(), "ws"), Options{Git: true})
	require.NoError(t, err)
	require.Nil(t, m.Git, "no repository to share")
	require.NoDirExists(t, filepath.Join(m.Root, ".git"))
}

func TestGitViewOfALinkedWorktree(t *testing.T) {
	needGit(t)
	main := repo(t)
	gitIn(t, main, "add", "-A")
	gitIn(t, main, "commit", "-q", "-m", "third")
	wt := filepath.Join(t.TempDir(), "wt")
	gitIn(t, main, "worktree", "add", "-q", "-b", "side", wt)
	writeFile(t, wt, "side.txt", "side\n")
	m, err := TakeWith(context.Background(), wt, filepath.Join(t.TempDir(), "ws"), Options{Git: true})
	require.NoError(t, err)
	require.NotNil(t, m.Git)
	require.Equal(t, gitIn(t, wt, "rev-parse", "HEAD"), m.Git.Parent)
	require.Empty(t, gitIn(t, m.Root, "status", "--porcelain"))
	require.Equal(t, "side", gitIn(t, m.Root, "show", "HEAD:side.txt"))
}

// The base commit Take writes itself is the object git commit-tree makes
// of the same tree, parent, people, time and message, in both object
// formats, and git reads it back whole.
func TestWriteCommitIsWhatGitCommitTreeWrites(t *testing.T) {
	needGit(t)
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			ws := t.TempDir()
			gitIn(t, ws, "init", "-q", "--object-format="+format)
			writeFile(t, ws, "a.txt", "a\n")
			gitIn(t, ws, "add", "-A")
			gitIn(t, ws, "commit", "-q", "-m", "first")
			head := gitIn(t, ws, "rev-parse", "HEAD")
			tree := gitIn(t, ws, "rev-parse", "HEAD^{tree}")
			when := time.Unix(1_790_000_000, 0)
			msg := "Pixir snapshot: a message"
			for _, parent := range []string{head, ""} {
				got, err := writeCommit(filepath.Join(ws, ".git"), format, tree, parent, when, msg)
				require.NoError(t, err)
				args := []string{"commit-tree", tree, "-m", msg}
				if parent != "" {
					args = append(args, "-p", parent)
				}
				cmd := exec.Command("git", args...)
				cmd.Dir = ws
				cmd.Env = append(gitEnv(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
					"GIT_AUTHOR_NAME=Pixir", "GIT_AUTHOR_EMAIL=pixir@localhost", "GIT_AUTHOR_DATE=1790000000 +0000",
					"GIT_COMMITTER_NAME=Pixir", "GIT_COMMITTER_EMAIL=pixir@localhost", "GIT_COMMITTER_DATE=1790000000 +0000")
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s", out)
				require.Equal(t, strings.TrimSpace(string(out)), got)
				require.Equal(t, "commit", gitIn(t, ws, "cat-file", "-t", got))
			}
			gitIn(t, ws, "fsck", "--strict", "--no-dangling")
		})
	}
}
