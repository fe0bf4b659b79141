package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func openDir(t *testing.T) (*Dir, string) {
	t.Helper()
	root := t.TempDir()
	d, err := OpenDir(root)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d, root
}

func TestDirRefusesSymlinksOnTheWay(t *testing.T) {
	d, root := openDir(t)
	outside := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, ".pixir", "sessions"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, ".pixir", "sessions", "s.ndjson"), []byte("secret"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "o"), []byte("outside"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(root, ".pixir", "sessions"), filepath.Join(root, "a")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "b")))
	require.NoError(t, os.Symlink("s.ndjson", filepath.Join(root, ".pixir", "sessions", "l")))

	for _, rel := range []string{"a/s.ndjson", "b/o", ".pixir/sessions/l", "../x"} {
		_, err := d.OpenFile(rel, os.O_RDONLY)
		require.Error(t, err, rel)
		if rel != "../x" {
			require.ErrorIs(t, err, ErrSymlink, rel)
		}
		require.Error(t, d.WriteFile(rel, []byte("x"), 0o644), rel)
	}
	b, err := os.ReadFile(filepath.Join(outside, "o"))
	require.NoError(t, err)
	require.Equal(t, "outside", string(b))
}

func TestDirRefusesHardLinks(t *testing.T) {
	d, root := openDir(t)
	outside := filepath.Join(t.TempDir(), "log.ndjson")
	require.NoError(t, os.WriteFile(outside, []byte("the log\n"), 0o600))
	if err := os.Link(outside, filepath.Join(root, "linked")); err != nil {
		t.Skip("no hard links across these directories:", err)
	}
	_, err := d.OpenFile("linked", os.O_RDONLY)
	require.ErrorIs(t, err, ErrHardLink)

	// Writing replaces the name in the directory; the other name keeps
	// its content.
	require.NoError(t, d.WriteFile("linked", []byte("new\n"), 0o644))
	b, err := os.ReadFile(outside)
	require.NoError(t, err)
	require.Equal(t, "the log\n", string(b))
	f, err := d.OpenFile("linked", os.O_RDONLY)
	require.NoError(t, err, "the rewritten file has one name")
	got, _ := io.ReadAll(f)
	f.Close()
	require.Equal(t, "new\n", string(got))
	info, err := os.Stat(filepath.Join(root, "linked"))
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "the old file's mode is kept")
}

func TestDirWriteFileMakesParents(t *testing.T) {
	d, root := openDir(t)
	require.NoError(t, d.WriteFile("a/b/c.txt", []byte("c"), 0o644))
	b, err := os.ReadFile(filepath.Join(root, "a", "b", "c.txt"))
	require.NoError(t, err)
	require.Equal(t, "c", string(b))
	entries, err := os.ReadDir(filepath.Join(root, "a", "b"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
	require.Error(t, d.WriteFile("a", []byte("x"), 0o644), "a directory is not replaced")
	info, err := d.Stat("a/b/c.txt")
	require.NoError(t, err)
	require.EqualValues(t, 1, info.Size())
	_, err = d.Stat("nope")
	require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
}

// ReplaceFile replaces only the file that was read: one saved since (the
// same name, other content), or replaced by another file, or removed, is
// left as it is, with ErrChanged, and no temporary file stays behind.
func TestDirReplaceFileLeavesAFileChangedSinceItWasRead(t *testing.T) {
	d, root := openDir(t)
	path := filepath.Join(root, "a.txt")
	read := func() fs.FileInfo {
		t.Helper()
		require.NoError(t, os.WriteFile(path, []byte("as read\n"), 0o644))
		f, err := d.OpenFile("a.txt", os.O_RDONLY)
		require.NoError(t, err)
		defer f.Close()
		info, err := f.Stat()
		require.NoError(t, err)
		return info
	}
	saves := map[string]func(){
		"saved in place": func() {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.WriteString("the user's line\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		},
		"replaced by another file": func() {
			require.NoError(t, os.WriteFile(path+".new", []byte("as read\n"), 0o644))
			require.NoError(t, os.Rename(path+".new", path))
		},
		"removed": func() { require.NoError(t, os.Remove(path)) },
	}
	for name, save := range saves {
		t.Run(name, func(t *testing.T) {
			was := read()
			save()
			before, _ := os.ReadFile(path)
			err := d.ReplaceFile("a.txt", []byte("the edit\n"), was)
			require.ErrorIs(t, err, ErrChanged)
			after, _ := os.ReadFile(path)
			require.Equal(t, string(before), string(after), "left as it is")
			entries, err := os.ReadDir(root)
			require.NoError(t, err)
			for _, e := range entries {
				require.NotContains(t, e.Name(), ".pixir-", "no temporary file is left")
			}
		})
	}
	was := read()
	require.NoError(t, d.ReplaceFile("a.txt", []byte("the edit\n"), was))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "the edit\n", string(b), "unchanged since it was read: replaced")
}
