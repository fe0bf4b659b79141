package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/pixir-go/pixir/sandbox/sandboxtest"
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

// A commit is decided by what is in the repository, not by how git
// ended: git moves HEAD before its post-commit hook runs, so a run
// cancelled while that hook runs has made its commit, and it is reported
// committed with its hash (it was "git commit refused (signal: killed)",
// so the run called it missed). Stopped in its pre-commit hook, git has
// made nothing: not committed, because the run was cancelled. Real git,
// real hooks that tell the test they run (a fifo) and block until the
// test has cancelled and git is gone (its pidfd); no clock.
func TestGitCommitterDecidesACancelledCommitByTheRepository(t *testing.T) {
	for _, tt := range []struct {
		hook string
		made bool
	}{{"post-commit", true}, {"pre-commit", false}} {
		t.Run(tt.hook, func(t *testing.T) {
			repo, ws, git := gitRepo(t)
			fifos := t.TempDir()
			started, release := filepath.Join(fifos, "started"), filepath.Join(fifos, "release")
			require.NoError(t, unix.Mkfifo(started, 0o600))
			require.NoError(t, unix.Mkfifo(release, 0o600))
			// $PPID is git: the hook is its child. The hook outlives git's
			// SIGTERM (sent to git's process group) until the test releases
			// it; the grace is one no test waits out, so that only the
			// release ends it.
			grace := gitStopGrace
			gitStopGrace = time.Hour
			t.Cleanup(func() { gitStopGrace = grace })
			script := fmt.Sprintf("#!/bin/sh\ntrap '' TERM\necho $PPID > '%s'\nread line < '%s'\n", started, release)
			require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "hooks", tt.hook), []byte(script), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("v2\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(ws, "new.txt"), []byte("new\n"), 0o644))
			before := git("rev-parse", "HEAD")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				rep workflows.CommitReport
				err error
			}
			done := make(chan result, 1)
			go func() {
				c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
				rep, err := c.Commit(ctx, workflows.CommitRequest{Message: "feat: the run's work", Paths: []string{"kept.txt", "new.txt"}})
				done <- result{rep, err}
			}()
			said, err := os.ReadFile(started) // returns once the hook runs
			require.NoError(t, err)
			gitPID, err := strconv.Atoi(strings.TrimSpace(string(said)))
			require.NoError(t, err)
			cancel()
			require.NoError(t, sandboxtest.AwaitExit([]int{gitPID}), "git is stopped while its %s hook runs", tt.hook)
			require.NoError(t, os.WriteFile(release, nil, 0), "the hook ends")
			got := <-done
			require.NoError(t, got.err)
			// git was asked to stop, not killed: it removed its locks, so
			// the repository is usable as it was.
			locks, err := filepath.Glob(filepath.Join(repo, ".git", "*.lock"))
			require.NoError(t, err)
			require.Empty(t, locks, "git's lock files after it was stopped in its %s hook", tt.hook)

			if !tt.made {
				require.Equal(t, workflows.NotCommitted, got.rep.Status)
				require.Contains(t, got.rep.Reason, "the run was cancelled (context canceled) while git made the commit, before it was made")
				require.Equal(t, before, git("rev-parse", "HEAD"), "nothing made")

				// A resumed run's commit goes through (it failed on git add
				// while git's index.lock stayed behind).
				require.NoError(t, os.Remove(filepath.Join(repo, ".git", "hooks", tt.hook)))
				c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
				rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "feat: the run's work", Paths: []string{"kept.txt", "new.txt"}})
				require.NoError(t, err)
				require.Equal(t, workflows.Committed, rep.Status, rep.Reason)
				require.Equal(t, before, git("rev-parse", "HEAD^"))
				require.Equal(t, []string{"M\tws/kept.txt", "A\tws/new.txt"}, strings.Split(git("show", "--name-status", "--format=", "HEAD"), "\n"))
				return
			}
			require.Equal(t, workflows.Committed, got.rep.Status, got.rep.Reason)
			require.Equal(t, git("rev-parse", "HEAD"), got.rep.Commit)
			require.Equal(t, before, git("rev-parse", "HEAD^"))
			require.Equal(t, []string{"kept.txt", "new.txt"}, got.rep.Files)
			require.Equal(t, "git was stopped (signal: terminated) after it made the commit: HEAD holds it", got.rep.Reason)
			require.Equal(t, []string{"M\tws/kept.txt", "A\tws/new.txt"}, strings.Split(git("show", "--name-status", "--format=", "HEAD"), "\n"))

			// Once cancelled, a commit after it is not made, and says why
			// (it said the workspace was not in a git repository).
			c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
			rep, err := c.Commit(ctx, workflows.CommitRequest{Message: "chore", Paths: []string{"other.txt"}})
			require.NoError(t, err)
			require.Equal(t, workflows.NotCommitted, rep.Status)
			require.Equal(t, "the run was cancelled (context canceled) before this commit: nothing is committed", rep.Reason)
		})
	}
}

// A cancelled commit stops git's hook and everything the hook started,
// not git alone: git 2.39 passes no signal to its hooks, so a pre-commit
// hook (and its child) signalled through git ran on after the run was
// cancelled, SIGKILL or not. git's process group is asked to stop
// (SIGTERM), and killed after gitStopGrace: a hook that ignores SIGTERM
// ends too. Real git, a real hook whose background child is a sleep; both
// tell their pids through a fifo; their pidfds say they ended; no clock.
func TestGitCommitterStopsACancelledCommitsHookAndItsChildren(t *testing.T) {
	for _, tt := range []struct {
		name  string
		trap  string
		grace time.Duration
		term  bool // git ends on SIGTERM, not killed
	}{
		// A grace no test waits out: only SIGTERM can end them.
		{"ending on SIGTERM", "", time.Hour, true},
		// The SIGKILL can reach git before it has removed its locks on
		// the SIGTERM (a grace of 1 ms, on a busy machine): as when git
		// outlives the grace, the lock stays.
		{"ignoring SIGTERM", "trap '' TERM\n", time.Millisecond, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			grace := gitStopGrace
			gitStopGrace = tt.grace
			t.Cleanup(func() { gitStopGrace = grace })

			repo, ws, git := gitRepo(t)
			started := filepath.Join(t.TempDir(), "started")
			require.NoError(t, unix.Mkfifo(started, 0o600))
			script := fmt.Sprintf("#!/bin/sh\n%ssleep 3600 &\necho $$ $! > %q\nwait\n", tt.trap, started)
			require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "hooks", "pre-commit"), []byte(script), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("v2\n"), 0o644))
			before := git("rev-parse", "HEAD")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan workflows.CommitReport, 1)
			go func() {
				c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
				rep, err := c.Commit(ctx, workflows.CommitRequest{Message: "feat: the run's work", Paths: []string{"kept.txt"}})
				assert.NoError(t, err)
				done <- rep
			}()
			said, err := os.ReadFile(started) // returns once the hook has started its child
			require.NoError(t, err)
			var pids []int
			for _, f := range strings.Fields(string(said)) {
				pid, err := strconv.Atoi(f)
				require.NoError(t, err)
				pids = append(pids, pid)
			}
			require.Len(t, pids, 2, "the hook's pid and its child's: %q", said)
			ended := false
			t.Cleanup(func() { // once they have ended, their pids may be another's
				if ended {
					return
				}
				for _, pid := range pids {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			})
			cancel()
			rep := <-done
			require.NoError(t, sandboxtest.AwaitExit(pids), "the hook and its child end with the cancelled git")
			ended = true

			require.Equal(t, workflows.NotCommitted, rep.Status)
			require.Contains(t, rep.Reason, "the run was cancelled (context canceled) while git made the commit, before it was made")
			require.Equal(t, before, git("rev-parse", "HEAD"), "nothing made")
			if tt.term {
				locks, err := filepath.Glob(filepath.Join(repo, ".git", "*.lock"))
				require.NoError(t, err)
				require.Empty(t, locks, "git's lock files after it was stopped in its hook")
			}
		})
	}
}

// git and its hooks run in a session of their own: in the terminal's
// session, as a group of their own that is not its foreground, a hook that
// reads /dev/tty (commitizen's prepare-commit-msg hook does) stopped the
// whole group (SIGTTIN), git with it: the commit hung, and a cancel then
// left git's lock files, since a stopped git never handled the SIGTERM.
// Without a terminal such a read fails at once, as under an editor. The
// hook says its session (/proc/$$/stat: after "(comm) ", state, ppid,
// pgrp, session); the test's own session is the one git ran in before.
func TestGitCommitterRunsGitInASessionOfItsOwn(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("the hook tells its session through /proc, which this system does not have")
	}
	repo, ws, git := gitRepo(t)
	said := filepath.Join(t.TempDir(), "session")
	script := fmt.Sprintf("#!/bin/sh\nset -- $(sed 's/.*) //' /proc/$$/stat)\necho \"$3 $4\" > %q\n", said)
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "hooks", "pre-commit"), []byte(script), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("v2\n"), 0o644))

	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "feat: the run's work", Paths: []string{"kept.txt"}})
	require.NoError(t, err)
	require.Equal(t, workflows.Committed, rep.Status, rep.Reason)
	out, err := os.ReadFile(said)
	require.NoError(t, err)
	ids := strings.Fields(string(out))
	require.Len(t, ids, 2, "the hook's group and session: %q", out)
	ours, err := unix.Getsid(0)
	require.NoError(t, err)
	require.NotEqual(t, strconv.Itoa(ours), ids[1], "the hook ran in this process's session")
	require.Equal(t, ids[0], ids[1], "git leads its session, and the group the cancel signals is git's")
	require.Equal(t, "feat: the run's work", git("log", "-1", "--format=%s"))
}

// A commit git made and exited 0 from is committed, with its hash and no
// "stopped" reason, when its post-commit hook leaves a background process
// that holds git's output open: Go's Wait then returns exec.ErrWaitDelay
// after gitStopGrace, which the committer took for a failed commit (a
// false "git was stopped" reason, or not_committed once that process had
// changed a committed file, so that a resumed run committed again). Real
// git, a real hook whose background child changes kept.txt, tells the
// test through a fifo, and holds the inherited stderr until the test
// releases it (another fifo); no clock.
func TestGitCommitterCommitsWhenAHookProcessHoldsGitsOutput(t *testing.T) {
	grace := gitStopGrace
	gitStopGrace = time.Millisecond // how long the held output is read: any length decides the same
	t.Cleanup(func() { gitStopGrace = grace })

	repo, ws, git := gitRepo(t)
	fifos := t.TempDir()
	changed, release, pidFile := filepath.Join(fifos, "changed"), filepath.Join(fifos, "release"), filepath.Join(fifos, "pid")
	require.NoError(t, unix.Mkfifo(changed, 0o600))
	require.NoError(t, unix.Mkfifo(release, 0o600))
	// The hook (run in the work tree's top) ends once its background child
	// has changed kept.txt, so git exits after the change; the child then
	// holds git's stderr (the hook's stdout and stderr) until released.
	script := fmt.Sprintf("#!/bin/sh\nsh -c 'echo v3 > ws/kept.txt; echo changed > %[1]q; read line < %[2]q' &\nread line < %[1]q\necho $! > %[3]q\n", changed, release, pidFile)
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "hooks", "post-commit"), []byte(script), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("v2\n"), 0o644))
	before := git("rev-parse", "HEAD")

	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "feat: the run's work", Paths: []string{"kept.txt"}})
	require.NoError(t, err)
	said, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(string(said)))
	require.NoError(t, err)
	defer func() {
		require.NoError(t, os.WriteFile(release, nil, 0), "the hook's child ends")
		require.NoError(t, sandboxtest.AwaitExit([]int{child}))
	}()

	kept, err := os.ReadFile(filepath.Join(ws, "kept.txt"))
	require.NoError(t, err)
	require.Equal(t, "v3\n", string(kept), "the hook's child changed a committed file before Commit returned")
	require.Equal(t, workflows.Committed, rep.Status, rep.Reason)
	require.Empty(t, rep.Reason)
	require.Equal(t, git("rev-parse", "HEAD"), rep.Commit)
	require.Equal(t, before, git("rev-parse", "HEAD^"))
	require.Equal(t, "v2", git("show", "HEAD:ws/kept.txt"), "the commit holds what the run wrote")
	require.Equal(t, []string{"kept.txt"}, rep.Files)
}

// An index.lock that Pixir did not take (a git running beside it, or one
// killed earlier, Pixir with it) refuses the commit with why and what to
// do, and stays: only its owner, or the user, may remove it. In a linked
// worktree the index (and its lock) is in the main repository's .git,
// named by its whole path.
func TestGitCommitterNamesAnIndexLockItFinds(t *testing.T) {
	for _, linked := range []bool{false, true} {
		t.Run(fmt.Sprintf("linked worktree %v", linked), func(t *testing.T) {
			repo, ws, git := gitRepo(t)
			lock, named := filepath.Join(repo, ".git", "index.lock"), ".git/index.lock"
			if linked {
				tree := filepath.Join(t.TempDir(), "work")
				git("worktree", "add", "-q", "-b", "work", tree)
				ws = filepath.Join(tree, "ws")
				lock = filepath.Join(repo, ".git", "worktrees", "work", "index.lock")
				named = lock
			}
			require.NoError(t, os.WriteFile(lock, []byte("someone's\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("v2\n"), 0o644))
			head := func(rev string) string { // the workspace's: a linked worktree has its own HEAD
				out, err := exec.Command("git", "-C", ws, "rev-parse", rev).Output()
				require.NoError(t, err)
				return strings.TrimSpace(string(out))
			}
			before := head("HEAD")

			c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
			rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "feat: the run's work", Paths: []string{"kept.txt"}})
			require.NoError(t, err)
			require.Equal(t, workflows.NotCommitted, rep.Status)
			require.Equal(t, "git add refused: "+named+" exists (another git process is running, or one was stopped: remove it if none is)", rep.Reason)
			require.Equal(t, before, head("HEAD"))
			kept, err := os.ReadFile(lock)
			require.NoError(t, err, "the lock is not Pixir's to remove")
			require.Equal(t, "someone's\n", string(kept))

			require.NoError(t, os.Remove(lock)) // as the reason says
			rep, err = c.Commit(context.Background(), workflows.CommitRequest{Message: "feat: the run's work", Paths: []string{"kept.txt"}})
			require.NoError(t, err)
			require.Equal(t, workflows.Committed, rep.Status, rep.Reason)
			require.Equal(t, rep.Commit, head("HEAD"))
			require.Equal(t, before, head("HEAD^"))
		})
	}
}

// A HEAD that moved is not enough: only a commit on the old HEAD with
// the tree the commit was to make counts as made after all.
func TestGitCommitterMadeAfterAllNeedsTheIntendedTree(t *testing.T) {
	_, ws, git := gitRepo(t)
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	before := git("rev-parse", "HEAD")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("v2\n"), 0o644))
	tree, err := c.treeOf(context.Background(), before, []string{"kept.txt"})
	require.NoError(t, err)
	_, made := c.madeAfterAll(context.Background(), before, tree)
	require.False(t, made, "HEAD did not move")

	git("commit", "-q", "--allow-empty", "-m", "someone else's")
	_, made = c.madeAfterAll(context.Background(), before, tree)
	require.False(t, made, "a commit without the change")

	git("commit", "-q", "-m", "the change", "--", "kept.txt")
	_, made = c.madeAfterAll(context.Background(), before, tree)
	require.False(t, made, "the change, but not on before")
	tree, err = c.treeOf(context.Background(), git("rev-parse", "HEAD^"), []string{"kept.txt"})
	require.NoError(t, err)
	hash, made := c.madeAfterAll(context.Background(), git("rev-parse", "HEAD^"), tree)
	require.True(t, made)
	require.Equal(t, git("rev-parse", "HEAD"), hash)

	require.NoError(t, os.WriteFile(filepath.Join(ws, "other.txt"), []byte("v2\n"), 0o644))
	tree, err = c.treeOf(context.Background(), git("rev-parse", "HEAD^"), []string{"kept.txt", "other.txt"})
	require.NoError(t, err)
	_, made = c.madeAfterAll(context.Background(), git("rev-parse", "HEAD^"), tree)
	require.False(t, made, "a path the commit was to hold is not as HEAD has it")
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
	// A repository another user owns (a checkout shared with the team, or
	// made by root), which git refuses: it is a repository, and the fix
	// is git's safe.directory, not "run in a git work tree".
	t.Run("a repository git refuses as another user's", func(t *testing.T) {
		git("switch", "-q", "-c", "GAL-4")
		t.Cleanup(func() { git("switch", "-q", "main") })
		t.Setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
		got := check(ws, req)
		require.Len(t, got, 1)
		require.NotContains(t, got[0], "not in a git repository")
		require.Contains(t, got[0], "git refuses the repository: another user owns it (fatal: detected dubious ownership in repository at ")
		require.Contains(t, got[0], "git config --global --add safe.directory ")
	})
	// No git on PATH: the workspace is not said to be outside a
	// repository.
	t.Run("no git on PATH", func(t *testing.T) {
		git("switch", "-q", "-c", "GAL-5")
		t.Cleanup(func() { git("switch", "-q", "main") })
		t.Setenv("PATH", t.TempDir())
		got := check(ws, req)
		require.Len(t, got, 1)
		require.NotContains(t, got[0], "not in a git repository")
		require.Contains(t, got[0], "git is not installed or not on PATH")
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

// A commit git made and was then stopped in is made whatever its
// post-commit hook did to the working files meanwhile: the commit of
// whole files decided "made after all" by the tree the working files
// would give after the fact, so a hook that changed a committed file
// (a version stamp, a formatter) before the run was cancelled had the
// made commit reported not made, and a resumed run commit again. The
// commit of a run's part decided by the tree it had built, and both
// decide so now (one check, madeAfterAll). Real git, a real hook that
// writes to the committed file, tells the test it has (a fifo) and
// waits until the test has cancelled and git is gone.
func TestGitCommitterMadeAfterAllWhateverAHookWroteAfterTheCommit(t *testing.T) {
	for _, part := range []bool{false, true} {
		t.Run(fmt.Sprintf("part=%v", part), func(t *testing.T) {
			repo, ws, git := gitRepo(t)
			write := func(name, content string) {
				require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
			}
			write("code.go", lines(40, nil))
			git("add", "-A")
			git("commit", "-q", "-m", "code")
			c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
			var rec workflows.BeforeRun
			if part {
				write("code.go", lines(40, map[int]string{2: "the user's edit"}))
				rec = c.Before(context.Background(), nil, nil)
				require.NotNil(t, rec)
			}
			write("code.go", lines(40, map[int]string{2: map[bool]string{false: "line x", true: "the user's edit"}[part], 38: "the run's change"}))
			write("kept.txt", "v2\n")

			fifos := t.TempDir()
			started, release := filepath.Join(fifos, "started"), filepath.Join(fifos, "release")
			require.NoError(t, unix.Mkfifo(started, 0o600))
			require.NoError(t, unix.Mkfifo(release, 0o600))
			grace := gitStopGrace
			gitStopGrace = time.Hour
			t.Cleanup(func() { gitStopGrace = grace })
			script := fmt.Sprintf("#!/bin/sh\ntrap '' TERM\necho stamped >> '%s'\necho $PPID > '%s'\nread line < '%s'\n", filepath.Join(ws, "kept.txt"), started, release)
			require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "hooks", "post-commit"), []byte(script), 0o755))
			before := git("rev-parse", "HEAD")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				rep workflows.CommitReport
				err error
			}
			done := make(chan result, 1)
			go func() {
				rep, err := c.Commit(ctx, workflows.CommitRequest{Message: "the run", Paths: []string{"code.go", "kept.txt"}, Before: rec})
				done <- result{rep, err}
			}()
			said, err := os.ReadFile(started)
			require.NoError(t, err)
			gitPID, err := strconv.Atoi(strings.TrimSpace(string(said)))
			require.NoError(t, err)
			cancel()
			require.NoError(t, sandboxtest.AwaitExit([]int{gitPID}))
			require.NoError(t, os.WriteFile(release, nil, 0))
			got := <-done
			require.NoError(t, got.err)
			require.Equal(t, workflows.Committed, got.rep.Status, got.rep.Reason)
			require.Equal(t, git("rev-parse", "HEAD"), got.rep.Commit)
			require.Equal(t, before, git("rev-parse", "HEAD^"))
			require.Equal(t, "v2", git("show", "HEAD:./kept.txt"))
		})
	}
}

// A commit git refuses (a pre-commit hook says no) leaves the user's
// index as it was: the run's files are not left staged, where a commit
// of the user's own would take them, and what the user had staged stays
// staged. They were left staged (git add ran before git commit).
func TestARefusedCommitLeavesTheIndexAsItWas(t *testing.T) {
	repo, ws, git := gitRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\necho no >&2\nexit 1\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("staged by the user\n"), 0o644))
	git("add", "kept.txt")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "kept.txt"), []byte("the run's\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "new.txt"), []byte("the run's\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(ws, "gone.txt")))
	before := git("status", "--porcelain", "--", ".")

	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run's work", Paths: []string{"gone.txt", "kept.txt", "new.txt"}})
	require.NoError(t, err)
	require.Equal(t, workflows.NotCommitted, rep.Status)
	require.Contains(t, rep.Reason, "git commit refused")
	require.Equal(t, before, git("status", "--porcelain", "--", "."), "the index as it was: new.txt untracked, gone.txt not staged as deleted, kept.txt's staged version")
	require.Equal(t, "staged by the user", git("show", ":ws/kept.txt"))
}
