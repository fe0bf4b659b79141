package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/pixir-go/pixir/tools"
)

// chmodAt never follows a link: a link is errOnTheWay, and its target's
// bits stay as they were.
func TestChmodNeverFollowsALink(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "run.sh"), []byte("echo\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "x"), []byte("x\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "x"), filepath.Join(ws, "link")))
	d, err := openDirs(ws)
	require.NoError(t, err)
	defer d.close()

	require.NoError(t, chmodAt(d.root, "run.sh", 0o755))
	fi, err := os.Stat(filepath.Join(ws, "run.sh"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())

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

// A merge that touches more folders than the process may hold open at
// once (a node_modules-sized tree) still merges: the apply holds a few
// folders at a time. It held every folder it touched until the end, and
// failed with EMFILE after its journal was committed, Recover failing the
// same way at every next open, the workspace left half-merged.
func TestMergeTouchingMoreFoldersThanDescriptorsMerges(t *testing.T) {
	f := newFixture(t, map[string]string{"a.txt": "a\n"})
	const folders = 600
	for i := range folders {
		f.child(fmt.Sprintf("gen/d%03d/x.txt", i), fmt.Sprintf("%d\n", i))
	}
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
	require.Greater(t, old.Max, uint64(folders), "the hard limit leaves no room to test")
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 400, Max: old.Max}))
	rep, err := Merge(context.Background(), Request{Workspace: f.ws, Snapshot: f.m})
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old))
	require.NoError(t, err)
	require.Equal(t, tools.MergeMerged, rep.Status)
	require.Len(t, rep.Applied.Added, folders)
	for _, i := range []int{0, 399, folders - 1} {
		require.Equal(t, fmt.Sprintf("%d\n", i), read(t, f.ws, fmt.Sprintf("gen/d%03d/x.txt", i)))
	}
}

// No more than maxHeld folders stay open that no operation uses, one in
// use is never closed, and a folder closed and opened again is walked
// again one name at a time: a link made on the way meanwhile is refused.
func TestWsDirsHoldAFewAndWalkAgain(t *testing.T) {
	defer func(n int) { maxHeld = n }(maxHeld)
	maxHeld = 2
	ws, outside := t.TempDir(), t.TempDir()
	for _, p := range []string{"a/b", "c", "e", "f", "g"} {
		require.NoError(t, os.MkdirAll(filepath.Join(ws, p), 0o755))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "b"), 0o755))
	d, err := openDirs(ws)
	require.NoError(t, err)
	defer d.close()

	inUse, err := d.dir("c", false)
	require.NoError(t, err)
	for _, p := range []string{"a/b", "e", "f", "g"} {
		_, err := d.dir(p, false)
		require.NoError(t, err)
		d.done(p)
	}
	require.Equal(t, 2, d.idle.Len())
	require.Len(t, d.held, 3, "the two used last and c, in use")
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(inUse, &st), "c is in use: still open")
	d.done("c")
	require.Equal(t, 2, d.idle.Len())

	// a/b was closed; a is a link now: opened again, it is refused.
	require.NotContains(t, d.held, "a/b")
	require.NoError(t, os.Rename(filepath.Join(ws, "a"), filepath.Join(ws, "a.old")))
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "a")))
	_, err = d.dir("a/b", false)
	require.ErrorIs(t, err, errOnTheWay)
}
