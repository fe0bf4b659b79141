package merge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

// A link in the workspace on the way to a path leads wherever it points:
// a merge never writes, deletes or chmods through it, whether the link was
// there when the child got its snapshot (the child replaced it by a folder
// in its snapshot and wrote beneath), came after it, or came while the user
// was asked. What else the child changed is merged.
func TestMergeNeverWritesThroughALinkOnTheWay(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "old.txt"), []byte("old\n"), 0o644))

	t.Run("a link the child replaced by a folder", func(t *testing.T) {
		ws := t.TempDir()
		require.NoError(t, os.Symlink(outside, filepath.Join(ws, "dir")))
		f := newFixtureIn(t, ws, map[string]string{"a.txt": "a\n"})
		require.NoError(t, os.Remove(filepath.Join(f.m.Root, "dir")))
		f.child("dir/authorized_keys", "pwned\n")
		f.child("a.txt", "a (child)\n")
		rep := f.merge()
		require.Equal(t, tools.MergeConflicted, rep.Status)
		require.Equal(t, []string{"a.txt"}, rep.Applied.Updated)
		require.Len(t, rep.Conflicts, 2, "%+v", rep.Conflicts)
		require.Equal(t, "dir", rep.Conflicts[0].Path, "the link the child made a folder")
		require.Equal(t, "dir/authorized_keys", rep.Conflicts[1].Path)
		require.Equal(t, tools.ConflictType, rep.Conflicts[1].Kind)
		require.Contains(t, rep.Conflicts[1].Message, "dir is a link")
		require.NoFileExists(t, filepath.Join(outside, "authorized_keys"))
	})

	t.Run("a folder the workspace made a link since", func(t *testing.T) {
		f := newFixture(t, map[string]string{"dir/old.txt": "old\n", "dir/keep.txt": "keep\n"})
		require.NoError(t, os.RemoveAll(filepath.Join(f.ws, "dir")))
		require.NoError(t, os.Symlink(outside, filepath.Join(f.ws, "dir")))
		require.NoError(t, os.Remove(filepath.Join(f.m.Root, "dir", "old.txt")))
		f.child("dir/new.txt", "new\n")
		rep := f.merge()
		require.Equal(t, tools.MergeConflicted, rep.Status)
		require.Empty(t, rep.Applied.Added)
		require.Empty(t, rep.Applied.Deleted)
		require.Len(t, rep.Conflicts, 2)
		require.FileExists(t, filepath.Join(outside, "old.txt"), "not deleted through the link")
		require.NoFileExists(t, filepath.Join(outside, "new.txt"))
	})

	t.Run("a link made while the user was asked", func(t *testing.T) {
		f := newFixture(t, map[string]string{"a.txt": "a\n"})
		f.child("dir/new.txt", "new\n")
		f.child("a.txt", "a (child)\n")
		rep := f.merge(func(r *Request) {
			r.Approve = func(context.Context, tools.MergeReport) (bool, string, error) {
				require.NoError(t, os.Symlink(outside, filepath.Join(f.ws, "dir")))
				return true, "", nil
			}
		})
		require.Equal(t, tools.MergeConflicted, rep.Status)
		require.Equal(t, []string{"a.txt"}, rep.Applied.Updated)
		require.Len(t, rep.Conflicts, 1)
		require.Equal(t, tools.ConflictMoved, rep.Conflicts[0].Kind)
		require.NoFileExists(t, filepath.Join(outside, "new.txt"))
	})
}

// refusingEditor writes every file but one.
type refusingEditor struct {
	editor
	refuse string
}

func (e *refusingEditor) WriteFile(ctx context.Context, path string, data []byte) error {
	if filepath.Base(path) == e.refuse {
		return errors.New("disk full in the editor")
	}
	return e.editor.WriteFile(ctx, path, data)
}

// An editor that refuses one file of a merge cuts it off after its
// journal was written: what was written stays, and the rest comes with
// the next merge. The error says so; it said only that the editor did not
// write the file, and a workflow reported the step's changes "in its
// snapshot" with two of three files in the workspace.
func TestAMergeCutOffMidwaySaysSo(t *testing.T) {
	f := newFixture(t, map[string]string{"keep.txt": "keep\n"})
	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		f.child(n, n+"\n")
	}
	_, err := Merge(context.Background(), Request{Workspace: f.ws, Snapshot: f.m, Label: "child sa-1", Files: &refusingEditor{refuse: "b.txt"}})
	require.ErrorContains(t, err, "disk full in the editor")
	require.ErrorContains(t, err, "was cut off midway: some of its files may already be in the workspace, and the next merge (merge_agent) or session in this workspace finishes it")
	require.NoFileExists(t, filepath.Join(f.ws, "b.txt"))

	rep := f.merge()
	require.Equal(t, tools.MergeMerged, rep.Status, "%+v", rep.Conflicts)
	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		require.Equal(t, n+"\n", read(t, f.ws, n), "finished by the next merge")
	}
}

// A link made on the way while the merge applies, between its last look
// at the folder and the write (a shared child running meanwhile, or the
// user), is not followed either: the apply opens each folder it writes in
// once, one name at a time without following links, and makes every
// operation by name in the folder it holds, so a folder renamed away and
// replaced by a link meanwhile still gets the operations (the folder, not
// the link), and nothing leaves the workspace. Before, the merge looked
// for links once before it applied, then wrote, deleted and chmodded by
// path: through a link made after that look.
func TestMergeNeverWritesThroughALinkMadeWhileItApplies(t *testing.T) {
	saved := workers
	workers = 1 // in journal order: the link comes after the first operation
	t.Cleanup(func() { workers = saved; testHookApplied = nil })

	outside := t.TempDir()
	f := newFixture(t, map[string]string{"a.txt": "a\n", "sub/old.txt": "old\n", "sub/run.sh": "echo\n"})
	// What the link will point at: the same names, outside.
	require.NoError(t, os.WriteFile(filepath.Join(outside, "old.txt"), []byte("old\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "run.sh"), []byte("echo\n"), 0o644))
	f.child("a.txt", "a (child)\n")
	f.child("dir/new.txt", "new\n")
	require.NoError(t, os.Remove(filepath.Join(f.m.Root, "sub", "old.txt")))
	require.NoError(t, os.Chmod(filepath.Join(f.m.Root, "sub", "run.sh"), 0o755))
	f.child("sub/added.txt", "added\n")

	testHookApplied = func(n int) {
		if n != 1 {
			return
		}
		// dir was made by this merge, sub was there: both are renamed
		// away and become links to a folder outside the workspace.
		require.NoError(t, os.Rename(filepath.Join(f.ws, "dir"), filepath.Join(f.ws, "dir.was")))
		require.NoError(t, os.Symlink(outside, filepath.Join(f.ws, "dir")))
		require.NoError(t, os.Rename(filepath.Join(f.ws, "sub"), filepath.Join(f.ws, "sub.was")))
		require.NoError(t, os.Symlink(outside, filepath.Join(f.ws, "sub")))
	}
	rep := f.merge()
	require.Empty(t, rep.Conflicts)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"old.txt", "run.sh"}, names, "nothing written or deleted outside")
	fi, err := os.Stat(filepath.Join(outside, "run.sh"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "not chmodded through the link")
	// The operations went to the folders the apply held.
	require.Equal(t, "new\n", read(t, f.ws, "dir.was/new.txt"))
	require.Equal(t, "added\n", read(t, f.ws, "sub.was/added.txt"))
	require.NoFileExists(t, filepath.Join(f.ws, "sub.was", "old.txt"))
	fi, err = os.Stat(filepath.Join(f.ws, "sub.was", "run.sh"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
}

// A link the child makes is merged when it stays inside the workspace,
// and refused, with the reason, when it leads outside (or into .pixir):
// the rest of the child's work is merged, and the merge says conflicted.
// Before, such a link was merged as a link, and the work reached, through
// it, files beyond the workspace.
func TestMergeRefusesALinkThatLeadsOutside(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "a\n", "src/lib/x.go": "package lib\n"})
	for link, target := range map[string]string{
		"src/in.go":      "lib/x.go",
		"src/up.txt":     "../a.txt",
		"abs.txt":        filepath.Join(f.ws, "a.txt"),
		"src/out":        "../../elsewhere",
		"passwd":         "/etc/passwd",
		"src/roundabout": "lib/../../a.txt",
		"state":          ".pixir/subagents",
		"absround":       f.ws + "/src/../a.txt",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(f.m.Root, filepath.FromSlash(link))))
	}
	f.child("a.txt", "a (child)\n")
	rep := f.merge()
	require.Equal(t, tools.MergeConflicted, rep.Status)
	require.Equal(t, []string{"abs.txt", "src/in.go", "src/up.txt"}, rep.Applied.Added)
	require.Equal(t, []string{"a.txt"}, rep.Applied.Updated)
	why := map[string]string{}
	for _, c := range rep.Conflicts {
		require.Equal(t, tools.ConflictLinkOutside, c.Kind, "%+v", c)
		why[c.Path] = c.Message
	}
	require.Len(t, why, 5, "%+v", rep.Conflicts)
	require.Contains(t, why["passwd"], `the child made a link to "/etc/passwd", which leads outside the workspace; a merge never brings a link that leads outside the workspace`)
	require.Contains(t, why["src/out"], "climbs above the workspace")
	require.Contains(t, why["src/roundabout"], "a .. after a name")
	require.Contains(t, why["state"], "leads into .pixir/")
	require.Contains(t, why["absround"], "a .. after a name")
	for _, l := range []string{"passwd", "src/out", "src/roundabout", "state", "absround"} {
		_, err := os.Lstat(filepath.Join(f.ws, filepath.FromSlash(l)))
		require.ErrorIs(t, err, os.ErrNotExist, l)
	}
	target, err := os.Readlink(filepath.Join(f.ws, "src", "up.txt"))
	require.NoError(t, err)
	require.Equal(t, "../a.txt", target)
}

func TestLinkLeadsOutside(t *testing.T) {
	ws := "/w/ws"
	for _, tc := range []struct{ rel, target, want string }{
		{"a", "b", ""},
		{"a", ".", ""},
		{"d/a", "..", ""},
		{"d/a", "../b/c", ""},
		{"d/e/a", "../../b", ""},
		{"a", "..", "climbs above"},
		{"d/a", "../..", "climbs above"},
		{"d/a", "../../../x", "climbs above"},
		{"a", "b/../c", "a .. after a name"},
		{"a", "/w/ws/b", ""},
		{"a", "/w/ws", ""},
		{"a", "/w/wsx/b", "leads outside"},
		{"a", "/w/ws/../x", "a .. after a name"},
		{"a", "/w/ws/lnk/../y", "a .. after a name"},
		{"d/a", "/w/ws/d/../y", "a .. after a name"},
		{"a", "/../w/ws/b", ""},
		{"a", "/w/./ws//b", ""},
		{"a", "/etc/passwd", "leads outside"},
		{"a", ".pixir", "leads into .pixir/"},
		{"d/a", "../.pixir/sessions", "leads into .pixir/"},
		{"a", "/w/ws/.pixir/x", "leads into .pixir/"},
		{"a", ".pixirx", ""},
	} {
		got := linkLeadsOutside(ws, tc.rel, tc.target)
		if tc.want == "" {
			require.Empty(t, got, "%s -> %s", tc.rel, tc.target)
		} else {
			require.Contains(t, got, tc.want, "%s -> %s", tc.rel, tc.target)
		}
	}
}

// A merge that wrote every file and could not remove its journal after
// is whole: it reports what it merged, and says that the journal is left
// for the next merge to remove. It said the merge was cut off midway,
// some of its files maybe in the workspace, the rest to come.
func TestAMergeWhoseJournalStaysSaysWhatIsTrue(t *testing.T) {
	f := newFixture(t, map[string]string{"keep.txt": "keep\n"})
	f.child("a.txt", "a\n")
	f.child("keep.txt", "keep (child)\n")
	removeJournal = func(string) error { return errors.New("read-only file system") }
	t.Cleanup(func() { removeJournal = os.Remove })

	rep := f.merge()
	require.Equal(t, tools.MergeMerged, rep.Status)
	require.Equal(t, []string{"a.txt"}, rep.Applied.Added)
	require.Equal(t, []string{"keep.txt"}, rep.Applied.Updated)
	require.Contains(t, rep.Reason, "Every file of the merge was written, but its journal (.pixir/merges/"+rep.MergeID+"/journal.json) could not be removed (read-only file system); the next merge (merge_agent) or session in this workspace removes it.")
	require.NotContains(t, rep.Reason, "cut off")
	require.FileExists(t, filepath.Join(f.ws, ".pixir", "merges", rep.MergeID, "journal.json"))

	// The next one finds every path as the journal wants it, and removes it.
	removeJournal = os.Remove
	done, err := Recover(context.Background(), f.ws, nil)
	require.NoError(t, err)
	require.Equal(t, []string{rep.MergeID}, done)
	require.NoDirExists(t, filepath.Join(f.ws, ".pixir", "merges", rep.MergeID))
	require.Equal(t, "keep (child)\n", read(t, f.ws, "keep.txt"))
}
