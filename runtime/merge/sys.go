package merge

import (
	"fmt"
	"io"
	"io/fs"
	"syscall"

	"github.com/pixir-go/pixir/runtime/snapshot"
)

// openFlags open a file without following a link swapped in for it, and
// without blocking on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// errNotDir is what a path through a file (not a folder) fails with.
var errNotDir = syscall.ENOTDIR

func streamSum(r io.Reader) (string, int64, bool, error) { return snapshot.FingerprintReader(r) }

// statOf is a file's device, inode, size, modification and status-change
// times: they all stay the same only while nobody touches the file.
func statOf(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d:%d.%d:%d.%d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
}
