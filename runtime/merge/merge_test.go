package merge

import (
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/pixir-go/pixir/runtime/snapshot"
	"github.com/pixir-go/pixir/runtime/wslock"
	"github.com/pixir-go/pixir/tools"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashEnv) != "" {
		crashChild()
		return
	}
	goleak.VerifyTestMain(reapedAfter{m})
}

// reapedAfter waits for the merges' folders to be removed once the tests
// ran, before goleak looks for goroutines left.
type reapedAfter struct{ m *testing.M }

func (r reapedAfter) Run() int {
	code := r.m.Run()
	Wait()
	return code
}

// fixture is a workspace and one child's snapshot of it.
type fixture struct {
	t  *testing.T
	ws string
	m  *snapshot.Manifest
}

const text = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"

func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	return newFixtureIn(t, t.TempDir(), files)
}

// newFixtureIn is newFixture in a workspace that may hold more already.
func newFixtureIn(t *testing.T, ws string, files map[string]string) *fixture {
	t.Helper()
	for p, c := range files {
		write(t, ws, p, c)
	}
	home := filepath.Join(ws, ".pixir", "subagents", "sa-1")
	m, err := snapshot.TakeWith(context.Background(), ws, filepath.Join(home, "workspace"), snapshot.Options{BaseDir: filepath.Join(home, "base")})
	require.NoError(t, err)
	return &fixture{t: t, ws: ws, m: m}
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func read(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(b)
}

func (f *fixture) child(rel, content string) { write(f.t, f.m.Root, rel, content) }
func (f *fixture) ours(rel, content string)  { write(f.t, f.ws, rel, content) }

func (f *fixture) merge(opts ...func(*Request)) tools.MergeReport {
	f.t.Helper()
	req := Request{Workspace: f.ws, Snapshot: f.m, Label: "child sa-1"}
	for _, o := range opts {
		o(&req)
	}
	rep, err := Merge(context.Background(), req)
	require.NoError(f.t, err)
	return rep
}

func replace(s, old, new string) string { return strings.Replace(s, old, new, 1) }

func TestMergeBringsEveryKindOfChange(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": text, "gone.txt": "bye\n", "run.sh": "echo\n", "keep.txt": "keep\n", "data.bin": "\x00\x01old"})
	f.child("a.txt", replace(text, "two", "TWO"))
	f.child("new/deep.txt", "new\n")
	require.NoError(t, os.Remove(filepath.Join(f.m.Root, "gone.txt")))
	require.NoError(t, os.Chmod(filepath.Join(f.m.Root, "run.sh"), 0o755))
	f.child("data.bin", "\x00\x01new")
	require.NoError(t, os.Symlink("a.txt", filepath.Join(f.m.Root, "link")))

	rep := f.merge()
	require.Equal(t, tools.MergeMerged, rep.Status)
	require.Empty(t, rep.Conflicts)
	require.Equal(t, tools.MergeFiles{Added: []string{"link", "new/deep.txt"}, Updated: []string{"a.txt", "data.bin"},
		Deleted: []string{"gone.txt"}, Mode: []string{"run.sh"}}, rep.Applied)
	require.Equal(t, replace(text, "two", "TWO"), read(t, f.ws, "a.txt"))
	require.Equal(t, "new\n", read(t, f.ws, "new/deep.txt"))
	require.Equal(t, "\x00\x01new", read(t, f.ws, "data.bin"))
	require.NoFileExists(t, filepath.Join(f.ws, "gone.txt"))
	fi, err := os.Stat(filepath.Join(f.ws, "run.sh"))
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o755), fi.Mode().Perm())
	target, err := os.Readlink(filepath.Join(f.ws, "link"))
	require.NoError(t, err)
	require.Equal(t, "a.txt", target)
	// Diffs for the editor: the text files written or deleted.
	var paths []string
	for _, d := range rep.Diffs {
		paths = append(paths, strings.TrimPrefix(d.Path, f.ws+"/"))
	}
	require.ElementsMatch(t, []string{"a.txt", "new/deep.txt", "gone.txt"}, paths)
	require.NoDirExists(t, filepath.Join(mergesDir(f.ws), rep.MergeID), "the journal is gone once applied")

	// Merged work is the child's base now: nothing is left to merge.
	again := f.merge()
	require.Equal(t, tools.MergeMerged, again.Status)
	require.Zero(t, again.Applied.Count())
	require.Contains(t, again.Reason, "nothing to merge")
}

func TestMergeThreeWay(t *testing.T) {
	needGit(t)
	f := newFixture(t, map[string]string{"a.txt": text})
	f.child("a.txt", replace(text, "two", "two (child)"))
	f.ours("a.txt", replace(text, "nine", "nine (workspace)"))
	rep := f.merge()
	require.Equal(t, tools.MergeMerged, rep.Status)
	require.Equal(t, []string{"a.txt"}, rep.Applied.Merged)
	require.Equal(t, replace(replace(text, "two", "two (child)"), "nine", "nine (workspace)"), read(t, f.ws, "a.txt"))

	// The child goes on from what it had: its next change merges against
	// that, not against the first base (no false conflict).
	f.child("a.txt", replace(text, "two", "two (child, again)"))
	rep = f.merge()
	require.Equal(t, tools.MergeMerged, rep.Status, "%+v", rep.Conflicts)
	require.Equal(t, replace(replace(text, "two", "two (child, again)"), "nine", "nine (workspace)"), read(t, f.ws, "a.txt"))
}

// A file whose changes are not one run per side far apart (mergeApart
// declines it) is merged by git as before.
func TestMergeThreeWayOfSeveralRunsGoesToGit(t *testing.T) {
	needGit(t)
	f := newFixture(t, map[string]string{"a.txt": text})
	child := replace(text, "five", "five (child)")
	ours := replace(replace(text, "one", "one (workspace)"), "ten", "ten (workspace)")
	_, claimed := mergeApart([]byte(ours), []byte(text), []byte(child))
	require.False(t, claimed)
	f.child("a.txt", child)
	f.ours("a.txt", ours)
	rep := f.merge()
	require.Equal(t, tools.MergeMerged, rep.Status, "%+v", rep.Conflicts)
	require.Equal(t, []string{"a.txt"}, rep.Applied.Merged)
	require.Equal(t, replace(ours, "five", "five (child)"), read(t, f.ws, "a.txt"))
}

func TestMergeConflictThenResolve(t *testing.T) {
	needGit(t)
	f := newFixture(t, map[string]string{"a.txt": text, "b.txt": "b\n"})
	f.child("a.txt", replace(text, "five", "five (child)"))
	f.child("b.txt", "b (child)\n")
	ours := replace(text, "five", "five (workspace)")
	f.ours("a.txt", ours)
	rep := f.merge()
	require.Equal(t, tools.MergeConflicted, rep.Status)
	require.Equal(t, []string{"b.txt"}, rep.Applied.Updated, "what merges cleanly is merged")
	require.Len(t, rep.Conflicts, 1)
	c := rep.Conflicts[0]
	require.Equal(t, "a.txt", c.Path)
	require.Equal(t, tools.ConflictContent, c.Kind)
	require.Len(t, c.Hunks, 1)
	require.Equal(t, "five (workspace)\n", c.Hunks[0].Workspace)
	require.Equal(t, "five\n", c.Hunks[0].Base)
	require.Equal(t, "five (child)\n", c.Hunks[0].Child)
	require.Equal(t, ours, read(t, f.ws, "a.txt"), "a conflicting file is not written")
	marked := read(t, f.m.Root, "a.txt")
	require.Equal(t, 5, c.Hunks[0].Lines.Start)
	require.Equal(t, 7, c.Hunks[0].Lines.Count)
	lines := strings.Split(marked, "\n")
	require.Equal(t, "<<<<<<< workspace", lines[4])
	require.Equal(t, ">>>>>>> child sa-1", lines[10])

	// Unresolved, it is refused.
	rep = f.merge()
	require.Equal(t, tools.ConflictUnresolved, rep.Conflicts[0].Kind)
	require.Equal(t, ours, read(t, f.ws, "a.txt"))
	// Half resolved too.
	f.child("a.txt", strings.Replace(marked, "five (child)", "five (both)", 1))
	rep = f.merge()
	require.Equal(t, tools.ConflictUnresolved, rep.Conflicts[0].Kind)

	// Resolved in the child's snapshot, it lands as a fast-forward.
	resolved := replace(text, "five", "five (workspace and child)")
	f.child("a.txt", resolved)
	rep = f.merge()
	require.Equal(t, tools.MergeMerged, rep.Status, "%+v", rep.Conflicts)
	require.Equal(t, []string{"a.txt"}, rep.Applied.Updated)
	require.Equal(t, resolved, read(t, f.ws, "a.txt"))
}

func TestMergeConflictKinds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture)
		kind  string
		path  string
	}{
		{"deleted by the child, changed in the workspace", func(f *fixture) {
			require.NoError(t, os.Remove(filepath.Join(f.m.Root, "a.txt")))
			f.ours("a.txt", "changed\n")
		}, tools.ConflictDeleteChange, "a.txt"},
		{"changed by the child, deleted in the workspace", func(f *fixture) {
			f.child("a.txt", "changed\n")
			require.NoError(t, os.Remove(filepath.Join(f.ws, "a.txt")))
		}, tools.ConflictChangeDelete, "a.txt"},
		{"binary on both sides", func(f *fixture) {
			f.child("bin", "\x00child")
			f.ours("bin", "\x00workspace")
		}, tools.ConflictBinary, "bin"},
		{"text made binary on one side", func(f *fixture) {
			f.child("a.txt", "\x00child")
			f.ours("a.txt", "workspace\n")
		}, tools.ConflictBinary, "a.txt"},
		{"added on both sides", func(f *fixture) {
			f.child("new.txt", "child\n")
			f.ours("new.txt", "workspace\n")
		}, tools.ConflictAddAdd, "new.txt"},
		{"a file became a folder in the workspace", func(f *fixture) {
			f.child("a.txt", "changed\n")
			require.NoError(t, os.Remove(filepath.Join(f.ws, "a.txt")))
			write(t, f.ws, "a.txt/inner", "x")
		}, tools.ConflictType, "a.txt"},
		{"permission bits on both sides", func(f *fixture) {
			require.NoError(t, os.Chmod(filepath.Join(f.m.Root, "a.txt"), 0o755))
			require.NoError(t, os.Chmod(filepath.Join(f.ws, "a.txt"), 0o600))
		}, tools.ConflictMode, "a.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"a.txt": text, "bin": "\x00base"})
			tc.setup(f)
			before := snapshotOf(t, f.ws)
			rep := f.merge()
			require.Equal(t, tools.MergeConflicted, rep.Status)
			require.Len(t, rep.Conflicts, 1, "%+v", rep.Conflicts)
			require.Equal(t, tc.path, rep.Conflicts[0].Path)
			require.Equal(t, tc.kind, rep.Conflicts[0].Kind)
			require.NotEmpty(t, rep.Conflicts[0].Message)
			require.Equal(t, before, snapshotOf(t, f.ws), "the workspace is untouched")
		})
	}
}

func TestMergeSameChangeOnBothSidesAndBinaryFastForward(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": text, "bin": "\x00base"})
	f.child("a.txt", "same\n")
	f.ours("a.txt", "same\n")
	f.child("bin", "\x00child")
	f.child("both.txt", "added alike\n")
	f.ours("both.txt", "added alike\n")
	rep := f.merge()
	require.Equal(t, tools.MergeMerged, rep.Status)
	require.Equal(t, tools.MergeFiles{Updated: []string{"bin"}}, rep.Applied)
	require.Equal(t, "\x00child", read(t, f.ws, "bin"))
}

func TestMergeDryRunWritesNothing(t *testing.T) {
	needGit(t)
	f := newFixture(t, map[string]string{"a.txt": text, "b.txt": "b\n"})
	f.child("a.txt", replace(text, "one", "ONE"))
	f.ours("a.txt", replace(text, "one", "uno"))
	f.child("b.txt", "b2\n")
	ws, child := snapshotOf(t, f.ws), snapshotOf(t, f.m.Root)
	rep := f.merge(func(r *Request) { r.DryRun = true })
	require.True(t, rep.DryRun)
	require.Equal(t, tools.MergeConflicted, rep.Status, "the status it would have")
	require.Equal(t, []string{"b.txt"}, rep.Applied.Updated)
	require.Len(t, rep.Diffs, 1)
	require.Equal(t, ws, snapshotOf(t, f.ws))
	require.Equal(t, child, snapshotOf(t, f.m.Root))
}

func TestMergeAskedOnceAndDeclined(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": text, "b.txt": "b\n"})
	f.child("a.txt", replace(text, "one", "ONE"))
	f.child("b.txt", "b2\n")
	before := snapshotOf(t, f.ws)
	asked := 0
	rep := f.merge(func(r *Request) {
		r.Approve = func(_ context.Context, plan tools.MergeReport) (bool, string, error) {
			asked++
			require.Len(t, plan.Diffs, 2, "the question shows every file's diff")
			return false, "the user declined the merge", nil
		}
	})
	require.Equal(t, 1, asked)
	require.Equal(t, tools.MergeNotMerged, rep.Status)
	require.Equal(t, "the user declined the merge", rep.Reason)
	require.Equal(t, before, snapshotOf(t, f.ws))
	// Accepted, it is written.
	rep = f.merge(func(r *Request) {
		r.Approve = func(context.Context, tools.MergeReport) (bool, string, error) { return true, "", nil }
	})
	require.Equal(t, tools.MergeMerged, rep.Status)
	require.Equal(t, "b2\n", read(t, f.ws, "b.txt"))
}

func TestMergeHoldsTheWriteSet(t *testing.T) {
	f := newFixture(t, map[string]string{"docs/a.md": "a\n", "src/x.go": "x\n"})
	f.child("docs/a.md", "a2\n")
	f.child("src/x.go", "x2\n")
	rep := f.merge(func(r *Request) { r.Allow = func(p string) bool { return strings.HasPrefix(p, "docs/") } })
	require.Equal(t, tools.MergeConflicted, rep.Status)
	require.Equal(t, []string{"docs/a.md"}, rep.Applied.Updated)
	require.Equal(t, tools.ConflictOutsideWriteSet, rep.Conflicts[0].Kind)
	require.Equal(t, "x\n", read(t, f.ws, "src/x.go"))
}

// editor is a tools.Files that records what it is asked to write, and
// writes it.
type editor struct {
	mu     sync.Mutex
	writes []string
}

func (e *editor) Open(context.Context, string) (io.ReadCloser, error) { panic("not read") }
func (e *editor) WriteFile(_ context.Context, path string, data []byte) error {
	e.mu.Lock()
	e.writes = append(e.writes, path)
	e.mu.Unlock()
	return os.WriteFile(path, data, 0o644)
}

func TestMergeWritesTextThroughTheEditor(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": text, "gone.txt": "x\n", "bin": "\x00"})
	f.child("a.txt", "changed\n")
	f.child("new.txt", "new\n")
	f.child("bin", "\x00changed")
	require.NoError(t, os.Remove(filepath.Join(f.m.Root, "gone.txt")))
	ed := &editor{}
	rep := f.merge(func(r *Request) { r.Files = ed })
	require.Equal(t, tools.MergeMerged, rep.Status)
	require.ElementsMatch(t, []string{filepath.Join(f.ws, "a.txt"), filepath.Join(f.ws, "new.txt")}, ed.writes,
		"text files through the editor; the binary and the deletion locally")
	require.Equal(t, "\x00changed", read(t, f.ws, "bin"))
	require.NoFileExists(t, filepath.Join(f.ws, "gone.txt"))
}

func TestMergeLeavesWhatChangedDuringIt(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": text, "b.txt": "b\n"})
	f.child("a.txt", "a (child)\n")
	f.child("b.txt", "b (child)\n")
	rep := f.merge(func(r *Request) {
		r.Approve = func(context.Context, tools.MergeReport) (bool, string, error) {
			f.ours("b.txt", "b (edited while the user was asked)\n")
			return true, "", nil
		}
	})
	require.Equal(t, tools.MergeConflicted, rep.Status)
	require.Equal(t, []string{"a.txt"}, rep.Applied.Updated)
	require.Equal(t, tools.ConflictMoved, rep.Conflicts[0].Kind)
	require.Equal(t, "b (edited while the user was asked)\n", read(t, f.ws, "b.txt"))
}

// The versions a merge replaced or deleted are kept until it is done, and
// freed after Merge returns; a process that ended before they were leaves
// a folder without a journal, which the next Recover removes.
func TestMergeFreesWhatItReplacedAfterwards(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "a\n", "gone.txt": "gone\n"})
	f.child("a.txt", "a (child)\n")
	require.NoError(t, os.Remove(filepath.Join(f.m.Root, "gone.txt")))
	oldA, err := os.Stat(filepath.Join(f.ws, "a.txt"))
	require.NoError(t, err)
	oldGone, err := os.Stat(filepath.Join(f.ws, "gone.txt"))
	require.NoError(t, err)
	held := make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	testHookReap = func() { <-held }
	t.Cleanup(func() { testHookReap = nil; release() }) // a failed check must not hold the reap for ever

	rep := f.merge()
	require.Equal(t, []string{"a.txt"}, rep.Applied.Updated)
	require.Equal(t, []string{"gone.txt"}, rep.Applied.Deleted)
	require.Equal(t, "a (child)\n", read(t, f.ws, "a.txt"))
	require.NoFileExists(t, filepath.Join(f.ws, "gone.txt"))

	// Merge has returned and the freeing has not begun: the replaced and
	// the deleted versions (the very files, not copies) wait in the
	// finished merge's folder, which has no journal.
	entries, err := os.ReadDir(mergesDir(f.ws))
	require.NoError(t, err)
	var folders []string
	for _, e := range entries {
		if e.IsDir() {
			folders = append(folders, e.Name())
		}
	}
	require.Len(t, folders, 1)
	require.True(t, strings.HasPrefix(folders[0], freedPrefix), folders[0])
	aside := filepath.Join(mergesDir(f.ws), folders[0], asideDir)
	kept, err := os.ReadDir(aside)
	require.NoError(t, err)
	var same int
	for _, k := range kept {
		info, err := os.Stat(filepath.Join(aside, k.Name()))
		require.NoError(t, err)
		if os.SameFile(info, oldA) || os.SameFile(info, oldGone) {
			same++
		}
	}
	require.Equal(t, 2, same, "the replaced a.txt and the deleted gone.txt are kept aside until freed")
	require.NoFileExists(t, filepath.Join(mergesDir(f.ws), folders[0], journalFile))

	release()
	Wait()
	entries, err = os.ReadDir(mergesDir(f.ws))
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, e.IsDir(), "%s left behind", e.Name())
	}

	// What a process killed before the old versions were freed leaves.
	left := filepath.Join(mergesDir(f.ws), freedPrefix+"20260101T000000-dead", asideDir)
	require.NoError(t, os.MkdirAll(left, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(left, "0"), []byte("a\n"), 0o600))
	done, err := Recover(context.Background(), f.ws, nil)
	require.NoError(t, err)
	require.Empty(t, done)
	require.NoDirExists(t, filepath.Dir(left))
}

// A planner's git merge-file folder sits among the merges while the merge
// that made it is planned, which holds no lock: another session's (or
// process's) Recover removed it under the running git (review33a #2).
func TestRecoverLeavesAPlannersScratchAlone(t *testing.T) {
	ws := t.TempDir()
	scratch := filepath.Join(mergesDir(ws), threeWayPrefix+"123", "workspace")
	require.NoError(t, os.MkdirAll(filepath.Dir(scratch), 0o700))
	write(t, filepath.Dir(scratch), "workspace", "ours\n")
	done, err := Recover(context.Background(), ws, nil)
	require.NoError(t, err)
	require.Empty(t, done)
	require.FileExists(t, scratch)

	// One a killed process left, long ago, goes.
	old := filepath.Join(mergesDir(ws), threeWayPrefix+"456")
	require.NoError(t, os.MkdirAll(old, 0o700))
	write(t, old, "workspace", "ours\n")
	long := time.Now().Add(-2 * staleScratch)
	require.NoError(t, os.Chtimes(old, long, long))
	_, err = Recover(context.Background(), ws, nil)
	require.NoError(t, err)
	require.NoDirExists(t, old)
	require.FileExists(t, scratch)
}

func TestRecoverRemovesAnUncommittedMerge(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "a.txt", "a\n")
	stage := filepath.Join(mergesDir(ws), "20260101T000000-dead", stageDir)
	require.NoError(t, os.MkdirAll(stage, 0o700))
	write(t, stage, "0", "never applied\n")
	done, err := Recover(context.Background(), ws, nil)
	require.NoError(t, err)
	require.Empty(t, done)
	require.NoDirExists(t, filepath.Join(mergesDir(ws), "20260101T000000-dead"))
	require.Equal(t, "a\n", read(t, ws, "a.txt"))
}

// snapshotOf is every file under root (but .pixir) with its content.
func snapshotOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (d.Name() == ".pixir" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			info, _ := d.Info()
			out[filepath.ToSlash(rel)] = string(b) + "|" + info.Mode().String()
		}
		return nil
	}))
	return out
}

func needGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
}

// The question is asked without the workspace's lock (a snapshot's copy,
// here or in another process, does not wait for the user's answer), and
// the merge writes holding it to write. A file the user changed while the
// question waited is not written blind: it is left as the user made it, a
// conflict that says to merge again; the rest is written.
func TestTheQuestionIsAskedWithoutTheWorkspaceLock(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": text, "b.txt": "b\n"})
	f.child("a.txt", replace(text, "one", "ONE"))
	f.child("b.txt", "b2\n")
	var heldWhileWriting atomic.Bool
	old := testHookApplied
	testHookApplied = func(int) {
		if wslock.Held(f.ws, true) {
			heldWhileWriting.Store(true)
		}
	}
	t.Cleanup(func() { testHookApplied = old })
	rep := f.merge(func(r *Request) {
		r.Approve = func(context.Context, tools.MergeReport) (bool, string, error) {
			require.False(t, wslock.Held(f.ws, false), "the workspace's lock is held while the user is asked")
			f.ours("b.txt", "the user's b\n") // meanwhile
			return true, "", nil
		}
	})
	require.True(t, heldWhileWriting.Load(), "the merge wrote without the workspace's lock")
	require.Equal(t, tools.MergeConflicted, rep.Status)
	require.Equal(t, []string{"a.txt"}, rep.Applied.Updated)
	require.Len(t, rep.Conflicts, 1)
	require.Equal(t, "b.txt", rep.Conflicts[0].Path)
	require.Equal(t, tools.ConflictMoved, rep.Conflicts[0].Kind)
	require.Equal(t, "the user's b\n", read(t, f.ws, "b.txt"))
	require.Equal(t, replace(text, "one", "ONE"), read(t, f.ws, "a.txt"))
	require.False(t, wslock.Held(f.ws, false), "released")
}
