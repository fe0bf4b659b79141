package merge

import (
	"context"
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
