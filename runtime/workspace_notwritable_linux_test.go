package runtime

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/pixir-go/pixir/tools"
)

// A file the user may not write (another user's, or one whose mode leaves
// its owner out) is left as it is by the file tools, as a shell's
// "> file" leaves it: a new file renamed over it needs only the folder's
// permission, and took another user's file for this one (its content
// replaced, its owner changed). As root the call runs with the file-system
// identity of nobody, for whom the file is another user's.
func TestFilesLeaveAFileTheUserMayNotWriteAsItIs(t *testing.T) {
	s := newConfinedWorkspace(t)
	require.NoError(t, os.Chmod(s.root, 0o777))
	require.NoError(t, os.Chmod(filepath.Join(s.root, "src"), 0o777))
	theirs := filepath.Join(s.root, "src", "theirs.go")
	require.NoError(t, os.WriteFile(theirs, []byte("keep\n"), 0o600))
	require.NoError(t, os.Chmod(theirs, 0o464)) // writable by the group only: neither its owner nor others
	before, err := os.Stat(theirs)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread whose identity changed ends with
		// this goroutine.
		goruntime.LockOSThread()
		if os.Geteuid() == 0 {
			_ = unix.Setfsuid(65534)
			_ = unix.Setfsgid(65534)
		}
		done <- s.ws.Files().WriteFile(t.Context(), theirs, []byte("clobbered\n"))
	}()
	err = <-done
	var f *tools.Failure
	require.ErrorAs(t, err, &f)
	require.Equal(t, tools.ErrPermissionDenied, f.Kind)
	require.Contains(t, f.Message, theirs+" is not writable by you (owner uid ")
	require.Contains(t, f.Message, "mode 0464), so it was left as it is")
	b, err := os.ReadFile(theirs)
	require.NoError(t, err)
	require.Equal(t, "keep\n", string(b))
	after, err := os.Stat(theirs)
	require.NoError(t, err)
	require.True(t, os.SameFile(before, after), "the same file, not one renamed over it")
}
