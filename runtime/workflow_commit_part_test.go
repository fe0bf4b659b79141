package runtime

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/workflows"
)

// lines is a text of n numbered lines.
func lines(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		b.WriteString("line " + strings.Repeat("x", i%7) + "\n")
	}
	return b.String()
}

// A file the user had changed before the run (not committed) and the run
// changed too is committed as HEAD's version with the run's change alone:
// the user's edit stays in their working file, uncommitted, and what they
// had staged stays staged. A run's change that overlaps theirs, and a file
// not in HEAD that they had made, are left out of the commit, with why.
// The commit took the whole file, the user's edits with the run's (README,
// 2e2337a).
func TestGitCommitterCommitsOnlyTheRunsPartOfAFileTheUserChanged(t *testing.T) {
	_, ws, git := gitRepo(t)
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
	}
	write("code.go", lines(40, nil))
	write("clash.go", lines(40, nil))
	git("add", "-A")
	git("commit", "-q", "-m", "code")

	// The user's uncommitted work: an edit near the top of code.go, one
	// of clash.go, a staged change of other.txt, a new file.
	write("code.go", lines(40, map[int]string{2: "the user's edit"}))
	write("clash.go", lines(40, map[int]string{20: "the user's edit"}))
	write("other.txt", "staged by the user\n")
	git("add", "other.txt")
	write("mine.txt", "the user's new file\n")
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	before := c.Before(context.Background(), nil, nil)
	require.Len(t, before, 4, "%v", before)
	require.Equal(t, workflows.BeforeUnknown, before["mine.txt"])
	require.Len(t, before["code.go"], 40, "a blob")

	// The run: a change near the end of code.go, the same lines of
	// clash.go, mine.txt, and kept.txt, which the user had not touched.
	write("code.go", lines(40, map[int]string{2: "the user's edit", 38: "the run's change"}))
	write("clash.go", lines(40, map[int]string{20: "the run's change"}))
	write("mine.txt", "the user's new file\nand the run's line\n")
	write("kept.txt", "v2 (the run)\n")

	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"clash.go", "code.go", "kept.txt", "mine.txt"}, Before: before})
	require.NoError(t, err)
	require.Equal(t, workflows.Committed, rep.Status, rep.Reason)
	require.Equal(t, git("rev-parse", "HEAD"), rep.Commit)
	require.Equal(t, []string{"code.go", "kept.txt"}, rep.Files)
	require.Equal(t, lines(40, map[int]string{38: "the run's change"}), git("show", "HEAD:./code.go")+"\n", "HEAD's version with the run's change alone")
	require.Equal(t, "v2 (the run)", git("show", "HEAD:./kept.txt"))
	require.Len(t, rep.LeftOut, 2)
	require.Equal(t, "clash.go", rep.LeftOut[0].Path)
	require.Contains(t, rep.LeftOut[0].Reason, "does not apply to HEAD's version cleanly")
	require.Equal(t, "mine.txt", rep.LeftOut[1].Path)
	require.Contains(t, rep.LeftOut[1].Reason, "it is not in HEAD")

	// The user's work is as it was: their edit uncommitted in the working
	// file (beside the run's, now committed), their staged change staged.
	b, err := os.ReadFile(filepath.Join(ws, "code.go"))
	require.NoError(t, err)
	require.Equal(t, lines(40, map[int]string{2: "the user's edit", 38: "the run's change"}), string(b))
	require.Contains(t, git("diff", "--", "code.go"), "+the user's edit")
	require.NotContains(t, git("diff", "--", "code.go"), "the run's change")
	require.Empty(t, git("diff", "--cached", "--", "code.go", "kept.txt"), "the index has what was committed")
	require.Equal(t, "M  ws/other.txt", git("status", "--porcelain", "--", "other.txt"))
	require.Empty(t, git("diff", "--cached", "--", "clash.go"), "left out: not staged either")
	require.Contains(t, git("diff", "--", "clash.go"), "+the run's change")
	require.Equal(t, "?? ws/mine.txt", git("status", "--porcelain", "--", "mine.txt"))
}

// A run's commit while the user is in the middle of a merge, cherry-pick,
// revert or rebase is not made, and says why: the commit took the
// operation's state as its own (a merge commit whose tree lacked the
// other branch's changes, MERGE_HEAD cleared: history said merged; a
// cherry-pick's author). The preflight of a workflow with a base says so
// before any step starts. (review31b, finding 1)
func TestGitCommitterCommitsNothingDuringAMergeOrRebase(t *testing.T) {
	for _, state := range []string{"MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply"} {
		t.Run(state, func(t *testing.T) {
			_, ws, git := gitRepo(t)
			write := func(name, content string) {
				require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
			}
			write("code.go", lines(40, nil))
			git("add", "-A")
			git("commit", "-q", "-m", "code")
			git("switch", "-q", "-c", "other")
			write("theirs.txt", "from other\n")
			git("add", "-A")
			git("commit", "-q", "-m", "other")
			git("switch", "-q", "main")
			git("switch", "-q", "-c", "work")
			gitDir := git("rev-parse", "--absolute-git-dir")
			switch state {
			case "MERGE_HEAD":
				git("merge", "--no-commit", "--no-ff", "-q", "other")
			case "CHERRY_PICK_HEAD", "REVERT_HEAD":
				// As git leaves it when the operation stops on a conflict.
				require.NoError(t, os.WriteFile(filepath.Join(gitDir, state), []byte(git("rev-parse", "other")+"\n"), 0o644))
			default:
				require.NoError(t, os.Mkdir(filepath.Join(gitDir, state), 0o755))
			}
			head := git("rev-parse", "HEAD")
			c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
			problems := c.Preflight(context.Background(), workflows.PreflightRequest{Base: "main"})
			require.Len(t, problems, 1, "%v", problems)
			require.Contains(t, problems[0], "finish or abort")

			// The run changes a file the user had changed (its part), and
			// another whole.
			write("code.go", lines(40, map[int]string{2: "the user's edit"}))
			before := c.Before(context.Background(), nil, nil)
			write("code.go", lines(40, map[int]string{2: "the user's edit", 38: "the run's change"}))
			write("kept.txt", "v2 (the run)\n")
			for _, paths := range [][]string{{"code.go", "kept.txt"}, {"kept.txt"}} {
				rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: paths, Before: before})
				require.NoError(t, err)
				require.Equal(t, workflows.NotCommitted, rep.Status, "%+v", rep)
				require.Contains(t, rep.Reason, "finish or abort")
				require.Equal(t, head, git("rev-parse", "HEAD"))
				_, err = os.Lstat(filepath.Join(gitDir, state))
				require.NoError(t, err, "the operation's state stays")
			}
		})
	}
}

// A file the run makes in a folder the user had made before it (not
// committed, or empty) is the run's own, and committed; the user's files
// in that folder are theirs, left out. The record named the folder, and
// every file the run made in it was left out as one the user had changed
// (review31b, finding 3).
func TestGitCommitterCommitsTheRunsFilesInAFolderTheUserMade(t *testing.T) {
	_, ws, git := gitRepo(t)
	write := func(name, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
	}
	write("gen/old.txt", "the user's file\n")
	require.NoError(t, os.Mkdir(filepath.Join(ws, "empty"), 0o755))
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	before := c.Before(context.Background(), nil, nil)

	write("gen/old.txt", "the user's file\nand the run's line\n")
	write("gen/new.txt", "the run's\n")
	write("empty/new.txt", "the run's too\n")
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"empty/new.txt", "gen/new.txt", "gen/old.txt"}, Before: before})
	require.NoError(t, err)
	require.Equal(t, workflows.Committed, rep.Status, rep.Reason)
	require.Equal(t, []string{"empty/new.txt", "gen/new.txt"}, rep.Files)
	require.Len(t, rep.LeftOut, 1)
	require.Equal(t, "gen/old.txt", rep.LeftOut[0].Path)
	require.Equal(t, "the run's", git("show", "HEAD:./gen/new.txt"))
	require.Equal(t, "?? ws/gen/old.txt", git("status", "--porcelain", "--", "gen/old.txt"))
}

// The record of the user's work at a run's start writes nothing into the
// repository a run cannot commit to (read_only), keeps no copy of a
// binary or large file (a 100 MB file took seconds and its size again in
// .git/objects), and leaves the user's .git/index as it was (git diff
// refreshed and rewrote it under its lock: a git the user ran meanwhile
// failed). A run's change to a file not copied is left out, with why.
// (review31b, finding 4)
func TestGitCommitterRecordsTheUsersWorkWithoutWritingTheirs(t *testing.T) {
	repo, ws, git := gitRepo(t)
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
	}
	write("bin.dat", "\x00\x01v1")
	write("big.txt", "v1\n")
	git("add", "-A")
	git("commit", "-q", "-m", "files")
	write("kept.txt", "the user's edit\n")
	write("bin.dat", "\x00\x01the user's edit")
	big := strings.Repeat("a line of a large text file\n", (8<<20)/28+1)
	write("big.txt", big)
	// other.txt as committed, but its stat no longer the index's: a
	// refresh would rewrite the index.
	future := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(ws, "other.txt"), future, future))
	index := filepath.Join(repo, ".git", "index")
	was, err := os.ReadFile(index)
	require.NoError(t, err)
	objects := func() string { return git("count-objects", "-v") }

	// A file no commit of the run can take (excluded) is not recorded,
	// nor copied.
	write("gone.txt", "the user's edit of an excluded file\n")
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	rec := c.Before(context.Background(), func(p string) bool { return p != "gone.txt" }, nil)
	require.NotContains(t, rec, "gone.txt")
	require.Contains(t, rec, "kept.txt")
	require.Error(t, exec.Command("git", "-C", ws, "cat-file", "-e", git("hash-object", "gone.txt")).Run(), "no copy of gone.txt")

	// A file no step of the run may write (copy says no) is named, not
	// copied: the commit leaves it out, whatever becomes of it.
	write("kept.txt", "the user's second edit\n")
	had := objects()
	named := c.Before(context.Background(), func(p string) bool { return p != "gone.txt" }, func(p string) bool { return p != "kept.txt" })
	require.Equal(t, workflows.BeforeUnread, named["kept.txt"])
	require.Equal(t, had, objects(), "nothing copied")
	require.Error(t, exec.Command("git", "-C", ws, "cat-file", "-e", git("hash-object", "kept.txt")).Run(), "no copy of kept.txt")
	write("kept.txt", "the user's edit\nand the run's\n")
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"kept.txt"}, Before: named})
	require.NoError(t, err)
	require.Equal(t, workflows.NotCommitted, rep.Status)
	require.Contains(t, rep.LeftOut[0].Reason, "no step's write set names it")
	write("kept.txt", "the user's edit\n")

	readOnly := gitCommitter{root: ws, mode: func() Mode { return ModeReadOnly }}
	seen := readOnly.Before(context.Background(), nil, nil)
	require.Equal(t, had, objects(), "read_only: nothing written")
	require.Equal(t, workflows.BeforeUnread, seen["kept.txt"], "read_only: the user's file named, not copied")

	before := c.Before(context.Background(), nil, nil)
	require.Equal(t, workflows.BeforeUnread, before["bin.dat"])
	require.Equal(t, workflows.BeforeUnread, before["big.txt"])
	require.Len(t, before["kept.txt"], 40)
	now, err := os.ReadFile(index)
	require.NoError(t, err)
	require.Equal(t, was, now, "the user's index is as it was")
	for _, name := range []string{"big.txt", "bin.dat"} {
		require.Error(t, exec.Command("git", "-C", ws, "cat-file", "-e", git("hash-object", name)).Run(), "no copy of %s", name)
	}

	write("bin.dat", "\x00\x01the user's edit and the run's")
	rep, err = c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"bin.dat"}, Before: before})
	require.NoError(t, err)
	require.Equal(t, workflows.NotCommitted, rep.Status)
	require.Len(t, rep.LeftOut, 1)
	require.Contains(t, rep.LeftOut[0].Reason, "binary or over 8 MiB")
}

// Of a file the user had staged a change to before the run, the run's
// part is committed and merged into what they staged: their index holds
// their change on top of the commit, not the removal of the run's (their
// next git commit took the run's change back). When the two do not
// merge cleanly the file is left out, with why. (review31b, finding 2)
func TestGitCommitterKeepsTheRunsPartInWhatTheUserStaged(t *testing.T) {
	_, ws, git := gitRepo(t)
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
	}
	write("code.go", lines(40, nil))
	write("clash.go", lines(40, nil))
	git("add", "-A")
	git("commit", "-q", "-m", "code")
	// code.go: an edit staged, and another not. clash.go: an edit of
	// line 30 staged, then undone in the working file.
	write("code.go", lines(40, map[int]string{2: "the user's staged edit"}))
	git("add", "code.go")
	write("code.go", lines(40, map[int]string{2: "the user's staged edit", 10: "the user's edit"}))
	write("clash.go", lines(40, map[int]string{30: "the user's staged edit"}))
	git("add", "clash.go")
	write("clash.go", lines(40, nil))
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	before := c.Before(context.Background(), nil, nil)

	write("code.go", lines(40, map[int]string{2: "the user's staged edit", 10: "the user's edit", 38: "the run's change"}))
	write("clash.go", lines(40, map[int]string{30: "the run's change"}))
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"clash.go", "code.go"}, Before: before})
	require.NoError(t, err)
	require.Equal(t, workflows.Committed, rep.Status, rep.Reason)
	require.Equal(t, []string{"code.go"}, rep.Files)
	require.Equal(t, lines(40, map[int]string{38: "the run's change"}), git("show", "HEAD:./code.go")+"\n")
	require.Equal(t, lines(40, map[int]string{2: "the user's staged edit", 38: "the run's change"}), git("show", ":./code.go")+"\n", "what they staged, on the commit")
	require.Len(t, rep.LeftOut, 1)
	require.Equal(t, "clash.go", rep.LeftOut[0].Path)
	require.Contains(t, rep.LeftOut[0].Reason, "does not merge with what you staged cleanly")
	require.Equal(t, lines(40, map[int]string{30: "the user's staged edit"}), git("show", ":./clash.go")+"\n", "left out: their staged change as it was")
	require.Equal(t, lines(40, nil), git("show", "HEAD:./clash.go")+"\n")
}

// On a checkout whose files have CRLF line ends (eol=crlf, autocrlf), the
// run's part of a file the user changed is committed: the record's copy
// is the file as git stores it (LF), and the working file was compared
// and merged raw (CRLF), so every such file was left out. The attributes
// are those of the file's own path, in a workspace below the top of the
// work tree. (review31b, finding 5)
func TestGitCommitterCommitsTheRunsPartOfACRLFFile(t *testing.T) {
	repo, ws, git := gitRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("/ws/code.go text eol=crlf\n"), 0o644))
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
	}
	write("code.go", crlf(lines(40, nil)))
	git("add", "-A", "..")
	git("commit", "-q", "-m", "code")
	require.Equal(t, lines(40, nil), git("show", "HEAD:./code.go")+"\n", "stored LF")

	write("code.go", crlf(lines(40, map[int]string{2: "the user's edit"})))
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	before := c.Before(context.Background(), nil, nil)
	write("code.go", crlf(lines(40, map[int]string{2: "the user's edit", 38: "the run's change"})))
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"code.go"}, Before: before})
	require.NoError(t, err)
	require.Equal(t, workflows.Committed, rep.Status, "%+v", rep)
	require.Empty(t, rep.LeftOut)
	require.Equal(t, lines(40, map[int]string{38: "the run's change"}), git("show", "HEAD:./code.go")+"\n")
	b, err := os.ReadFile(filepath.Join(ws, "code.go"))
	require.NoError(t, err)
	require.Equal(t, crlf(lines(40, map[int]string{2: "the user's edit", 38: "the run's change"})), string(b), "the working file as it was")
}

// The user's git config does not change the record: status.showStash adds
// a "# stash N" line to git status, which was taken for an unknown line,
// so the record was dropped and the user's edit committed with the run's
// (review31c). A run that starts read_only and whose session is switched
// to auto before its commit leaves the user's edit out too: read_only
// recorded nothing, and the file was committed whole (review31c).
func TestGitCommitterLeavesTheUsersEditOutWhateverTheirConfigOrMode(t *testing.T) {
	for _, tc := range []struct{ name, startMode string }{{"status.showStash", "auto"}, {"read_only at the start", "read_only"}} {
		t.Run(tc.name, func(t *testing.T) {
			_, ws, git := gitRepo(t)
			write := func(name, content string) {
				require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
			}
			write("code.go", lines(40, nil))
			git("add", "-A")
			git("commit", "-q", "-m", "code")
			if tc.startMode == "auto" {
				write("kept.txt", "stashed\n")
				git("stash", "-q", "-u")
				git("config", "status.showStash", "true")
			}
			write("code.go", lines(40, map[int]string{2: "the user's edit"}))
			mode := Mode(tc.startMode)
			c := gitCommitter{root: ws, mode: func() Mode { return mode }}
			before := c.Before(context.Background(), nil, nil)
			mode = ModeAuto // session/set_mode during the run
			write("code.go", lines(40, map[int]string{2: "the user's edit", 38: "the run's change"}))
			_, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"code.go"}, Before: before})
			require.NoError(t, err)
			require.NotContains(t, git("show", "HEAD:./code.go"), "the user's edit", "the user's edit committed")
			kept, err := os.ReadFile(filepath.Join(ws, "code.go"))
			require.NoError(t, err)
			require.Contains(t, string(kept), "the user's edit", "and kept in their file")
		})
	}
}

// A mode the user staged alone (chmod +x, its content HEAD's) of a file
// the run commits its part of stays staged: the entry was staged again
// with HEAD's mode (review31c).
func TestGitCommitterKeepsAModeTheUserStaged(t *testing.T) {
	_, ws, git := gitRepo(t)
	path := filepath.Join(ws, "code.go")
	require.NoError(t, os.WriteFile(path, []byte(lines(40, nil)), 0o644))
	git("add", "-A")
	git("commit", "-q", "-m", "code")
	require.NoError(t, os.Chmod(path, 0o755))
	git("update-index", "--chmod=+x", "code.go")
	require.NoError(t, os.WriteFile(path, []byte(lines(40, map[int]string{2: "the user's edit"})), 0o755))
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	before := c.Before(context.Background(), nil, nil)
	require.NoError(t, os.WriteFile(path, []byte(lines(40, map[int]string{2: "the user's edit", 38: "the run's change"})), 0o755))
	_, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"code.go"}, Before: before})
	require.NoError(t, err)
	require.Contains(t, git("show", "HEAD:./code.go"), "the run's change")
	require.True(t, strings.HasPrefix(git("ls-files", "-s", "code.go"), "100755 "), "the staged mode kept: %s", git("ls-files", "-s", "code.go"))
}

// A record of the user's work at a run's start that git cannot give (its
// status fails: here a damaged index, mended before the commit) commits
// none of the user's edits: the commit is refused, saying why. No record
// meant "commit whole", and the user's uncommitted edit of a file the run
// changed too went into the run's commit.
func TestGitCommitterCommitsNothingOfTheUsersWhenTheRecordFailed(t *testing.T) {
	repo, ws, git := gitRepo(t)
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
	}
	write("code.go", lines(40, nil))
	git("add", "-A")
	git("commit", "-q", "-m", "code")
	write("code.go", lines(40, map[int]string{2: "the user's edit"}))
	index := filepath.Join(repo, ".git", "index")
	good, err := os.ReadFile(index)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(index, good[:20], 0o644))
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	before := c.Before(context.Background(), nil, nil)
	why, failed := before.Failed()
	require.True(t, failed, "%v", before)
	require.Contains(t, why, "index file smaller than expected")
	require.NoError(t, os.WriteFile(index, good, 0o644))

	head := git("rev-parse", "HEAD")
	write("code.go", lines(40, map[int]string{2: "the user's edit", 38: "the run's change"}))
	write("kept.txt", "v2 (the run)\n")
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"code.go", "kept.txt"}, Before: before})
	require.NoError(t, err)
	require.Equal(t, workflows.NotCommitted, rep.Status, "%+v", rep)
	require.Contains(t, rep.Reason, "your uncommitted work when the run started could not be recorded")
	require.Equal(t, head, git("rev-parse", "HEAD"))
	require.NotContains(t, git("show", "HEAD:./code.go"), "the user's edit")

	// A run whose files are all as HEAD has them has nothing to refuse.
	write("code.go", lines(40, nil))
	write("kept.txt", "v1\n")
	rep, err = c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"code.go", "kept.txt"}, Before: before})
	require.NoError(t, err)
	require.True(t, rep.Unchanged, "%+v", rep)
}

// The run's part of a file with a clean filter is committed as the
// filter stores it, once: the merge is of versions as git stores them
// (cleaned), and hashing the merge ran the clean filter on it again
// (review31c #4). The filter here reverses each line (its smudge too), so
// cleaning twice gives the working form, and HEAD held that.
func TestGitCommitterCleansTheRunsPartOnce(t *testing.T) {
	if _, err := exec.LookPath("rev"); err != nil {
		t.Skip("no rev (util-linux) for the filter")
	}
	repo, ws, git := gitRepo(t)
	git("config", "filter.rev.clean", "rev")
	git("config", "filter.rev.smudge", "rev")
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".gitattributes"), []byte("*.go filter=rev\n"), 0o644))
	rev := func(s string) string {
		ls := strings.SplitAfter(s, "\n")
		for i, l := range ls {
			r := []rune(strings.TrimSuffix(l, "\n"))
			slices.Reverse(r)
			if strings.HasSuffix(l, "\n") {
				ls[i] = string(r) + "\n"
			} else {
				ls[i] = string(r)
			}
		}
		return strings.Join(ls, "")
	}
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
	}
	write("code.go", lines(40, nil))
	write("staged.go", lines(40, nil))
	git("add", "-A", "..")
	git("commit", "-q", "-m", "code")
	require.Equal(t, rev(lines(40, nil)), git("show", "HEAD:./code.go")+"\n", "stored reversed")

	write("code.go", lines(40, map[int]string{2: "the user's edit"}))
	write("staged.go", lines(40, map[int]string{2: "the user's edit"}))
	git("add", "staged.go")
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	before := c.Before(context.Background(), nil, nil)
	write("code.go", lines(40, map[int]string{2: "the user's edit", 38: "the run's change"}))
	write("staged.go", lines(40, map[int]string{2: "the user's edit", 38: "the run's change"}))
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"code.go", "staged.go"}, Before: before})
	require.NoError(t, err)
	require.Equal(t, workflows.Committed, rep.Status, "%+v", rep)
	require.Empty(t, rep.LeftOut)
	for _, f := range []string{"code.go", "staged.go"} {
		require.Equal(t, rev(lines(40, map[int]string{38: "the run's change"})), git("show", "HEAD:./"+f)+"\n", f)
	}
	require.Equal(t, rev(lines(40, map[int]string{2: "the user's edit", 38: "the run's change"})), git("show", ":./staged.go")+"\n", "what the user staged, with the run's part")
	require.Contains(t, git("diff", "--", "code.go"), "+"+rev("the user's edit"), "the user's edit, not committed")
	require.NotContains(t, git("diff", "HEAD", "--", "code.go"), rev("the run's change"))
}

// A cherry-pick of several commits paused after a step the user resolved
// and committed (CHERRY_PICK_HEAD gone, .git/sequencer/ left for git
// cherry-pick --continue) is an operation in progress too: the run's
// commit waits for it, and a base's preflight says so. It was not seen,
// and the run's commit went between the picks.
func TestGitCommitterCommitsNothingDuringAPausedSequence(t *testing.T) {
	_, ws, git := gitRepo(t)
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
	}
	git("switch", "-q", "-c", "other")
	write("other.txt", "from other\n")
	git("commit", "-q", "-am", "o1")
	write("theirs.txt", "from other\n")
	git("add", "theirs.txt")
	git("commit", "-q", "-m", "o2")
	git("switch", "-q", "main")
	git("switch", "-q", "-c", "work")
	write("other.txt", "on work\n")
	git("commit", "-q", "-am", "w")
	cmd := exec.Command("git", "cherry-pick", "other~1", "other")
	cmd.Dir = ws
	require.Error(t, cmd.Run(), "the first pick conflicts")
	write("other.txt", "resolved\n")
	git("add", "other.txt")
	git("commit", "-q", "--no-edit")
	gitDir := git("rev-parse", "--absolute-git-dir")
	_, err := os.Lstat(filepath.Join(gitDir, "CHERRY_PICK_HEAD"))
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Lstat(filepath.Join(gitDir, "sequencer"))
	require.NoError(t, err, "the sequence is paused")

	head := git("rev-parse", "HEAD")
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	problems := c.Preflight(context.Background(), workflows.PreflightRequest{Base: "main"})
	require.Len(t, problems, 1, "%v", problems)
	require.Contains(t, problems[0], "git cherry-pick --continue")
	write("kept.txt", "v2 (the run)\n")
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"kept.txt"}})
	require.NoError(t, err)
	require.Equal(t, workflows.NotCommitted, rep.Status, "%+v", rep)
	require.Contains(t, rep.Reason, "finish or abort")
	require.Equal(t, head, git("rev-parse", "HEAD"))
}

// On a branch with no commit yet, a file the user had made before the run
// (untracked, or staged) and the run changed is left out of the run's
// commit, as one not in HEAD is on any branch: no record was made there,
// and it was committed whole, the user's content with the run's. The
// run's own files are committed.
func TestGitCommitterLeavesTheUsersFilesOutOnABranchWithNoCommit(t *testing.T) {
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"} {
		t.Setenv(k, v)
	}
	ws := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644))
	}
	git("init", "-q", "-b", "main")
	write("mine.txt", "the user's file\n")
	write("staged.txt", "the user's staged file\n")
	git("add", "staged.txt")
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	before := c.Before(context.Background(), nil, nil)
	require.Equal(t, workflows.BeforeRun{"mine.txt": workflows.BeforeUnknown, "staged.txt": workflows.BeforeUnknown}, before)

	write("mine.txt", "the user's file\nand the run's line\n")
	write("staged.txt", "the user's staged file\nand the run's line\n")
	write("run.txt", "the run's file\n")
	rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"mine.txt", "run.txt", "staged.txt"}, Before: before})
	require.NoError(t, err)
	require.Equal(t, workflows.Committed, rep.Status, "%+v", rep)
	require.Equal(t, []string{"run.txt"}, rep.Files)
	require.Equal(t, "run.txt", git("ls-tree", "--name-only", "HEAD"))
	require.Len(t, rep.LeftOut, 2)
	require.Contains(t, rep.LeftOut[0].Reason, "no commit yet")
	require.Equal(t, "the user's staged file", git("show", ":staged.txt"), "what the user staged stays staged")

	// Only the user's files: nothing is committed, and it says why.
	write("run.txt", "the run's file, again\n")
	rep, err = c.Commit(context.Background(), workflows.CommitRequest{Message: "the run", Paths: []string{"mine.txt"}, Before: before})
	require.NoError(t, err)
	require.Equal(t, workflows.NotCommitted, rep.Status, "%+v", rep)
	require.Contains(t, rep.Reason, "left out")
}
