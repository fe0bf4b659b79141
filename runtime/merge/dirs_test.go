package merge

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The chmod of a kernel without fchmodat2 (or a seccomp profile refusing
// it) sets a file's bits through the file opened with O_PATH, and never
// follows a link.
func TestChmodWithoutFchmodat2NeverFollowsALink(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "run.sh"), []byte("echo\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "x"), []byte("x\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "x"), filepath.Join(ws, "link")))
	d, err := openDirs(ws)
	require.NoError(t, err)
	defer d.close()

	require.NoError(t, chmodOpened(d.root, "run.sh", 0o755))
	fi, err := os.Stat(filepath.Join(ws, "run.sh"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())

	require.ErrorIs(t, chmodOpened(d.root, "link", 0o777), errOnTheWay)
	require.ErrorIs(t, chmodAt(d.root, "link", 0o777), errOnTheWay)
	fi, err = os.Stat(filepath.Join(outside, "x"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
}

// A folder is opened one name at a time: a link or a file on the way is
// errOnTheWay, an absent folder is made only when asked.
func TestWsDirsNeverFollowALink(t *testing.T) {
	ws := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "a", "b"), 0o755))
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(ws, "a", "l")))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "f"), nil, 0o644))
	d, err := openDirs(ws)
	require.NoError(t, err)
	defer d.close()
	_, err = d.dir("a/b", false)
	require.NoError(t, err)
	_, err = d.dir("a/l/x", true)
	require.ErrorIs(t, err, errOnTheWay)
	_, err = d.dir("f/x", true)
	require.ErrorIs(t, err, errOnTheWay)
	_, err = d.dir("n/m", false)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = d.dir("n/m", true)
	require.NoError(t, err)
	require.DirExists(t, filepath.Join(ws, "n", "m"))
}
