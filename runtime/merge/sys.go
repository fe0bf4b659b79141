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
	m, c := statTimes(st)
	msec, mnsec := m.Unix()
	csec, cnsec := c.Unix()
	return statString(uint64(st.Dev), uint64(st.Ino), int64(st.Size), msec, mnsec, csec, cnsec) //nolint:unconvert // Dev and Ino differ in type between systems
}

// statString is statOf's form of a stat. Its arguments are converted by
// the callers: a stat's field types differ between systems (a Dev of
// int32 on macOS, 32-bit seconds on 32-bit Linux).
func statString(dev, ino uint64, size, msec, mnsec, csec, cnsec int64) string {
	return fmt.Sprintf("%d:%d:%d:%d.%d:%d.%d", dev, ino, size, msec, mnsec, csec, cnsec)
}
