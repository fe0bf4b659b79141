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
