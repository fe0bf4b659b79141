package merge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/snapshot"
)

// crashEnv makes the test binary a merging process that kills itself with
// SIGKILL in the middle of the apply: "<workspace>|<base dir>|<after n ops>".
const crashEnv = "PIXIR_MERGE_CRASH"

func crashChild() {
	parts := strings.Split(os.Getenv(crashEnv), "|")
	after, _ := strconv.Atoi(parts[2])
	m, err := snapshot.Load(parts[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	testHookApplied = func(n int) {
		if n == after {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
	_, err = Merge(context.Background(), Request{Workspace: parts[0], Snapshot: m, Label: "crash"})
	fmt.Fprintln(os.Stderr, "the merge ended without being killed:", err)
	os.Exit(4)
}

func TestKillDuringApplyThenRecover(t *testing.T) {
	const n = 40
	f := everyFileChanged(t, n, func(f *fixture) { f.child("added.txt", "added\n") })

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+f.ws+"|"+f.m.BaseDir+"|17")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v: %s", err, out)
	status, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, status.Signaled() && status.Signal() == syscall.SIGKILL, "killed by SIGKILL: %v: %s", err, out)

	// Killed once 17 of 41 operations were applied (the other workers may
	// have applied a few more meanwhile): each file is old or new, none
	// half-written, and the journal is there.
	var olds, news int
	for i := range n {
		switch got := read(t, f.ws, fmt.Sprintf("f%02d.txt", i)); got {
		case fmt.Sprintf("old %d\n", i):
			olds++
		case fmt.Sprintf("new %d\n", i):
			news++
		default:
			t.Fatalf("f%02d.txt is neither old nor new: %q", i, got)
		}
	}
	applied := news + boolInt(fileExists(filepath.Join(f.ws, "added.txt")))
	require.GreaterOrEqual(t, applied, 17)
	require.Less(t, applied, 17+workers)
	require.Positive(t, olds)
	journals, _ := filepath.Glob(filepath.Join(mergesDir(f.ws), "*", journalFile))
	require.Len(t, journals, 1)

	// A rerun (any later merge, or a session opening here) finishes it.
	done, err := Recover(context.Background(), f.ws, nil)
	require.NoError(t, err)
	require.Len(t, done, 1)
	for i := range n {
		require.Equal(t, fmt.Sprintf("new %d\n", i), read(t, f.ws, fmt.Sprintf("f%02d.txt", i)))
	}
	require.Equal(t, "added\n", read(t, f.ws, "added.txt"))
	journals, _ = filepath.Glob(filepath.Join(mergesDir(f.ws), "*", journalFile))
	require.Empty(t, journals)
	// Finishing again changes nothing.
	done, err = Recover(context.Background(), f.ws, nil)
	require.NoError(t, err)
	require.Empty(t, done)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// everyFileChanged is a workspace of n files f00.txt… and a child's saved
// snapshot that changed every one of them ("old i" → "new i"); extra runs
// on the fixture before the snapshot is saved.
func everyFileChanged(t *testing.T, n int, extra func(*fixture)) *fixture {
	t.Helper()
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("f%02d.txt", i)] = fmt.Sprintf("old %d\n", i)
	}
	f := newFixture(t, files)
	for i := range n {
		f.child(fmt.Sprintf("f%02d.txt", i), fmt.Sprintf("new %d\n", i))
	}
	if extra != nil {
		extra(f)
	}
	require.NoError(t, f.m.Save())
	return f
}
