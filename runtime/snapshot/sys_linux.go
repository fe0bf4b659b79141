//go:build linux

package snapshot

import (
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// openFlags open a source file without following a link that replaced it
// and without blocking on a FIFO that replaced it since it was listed.
const openFlags = unix.O_NOFOLLOW | unix.O_NONBLOCK

// ctimeOf returns the status-change time of a file, which a process cannot
// set and every change moves.
func ctimeOf(fi fs.FileInfo) (int64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Ctim.Nano(), true
}

// umask reads the process's file mode creation mask (Linux 4.7 and later
// show it in /proc/self/status), so copies need a chmod only when it would
// take bits away; unknown, it is 0o7777 and every copy gets one.
func umask() uint32 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0o7777
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return uint32(m)
			}
		}
	}
	return 0o7777
}

// lchtimes sets the modification time of a symbolic link itself.
func lchtimes(path string, mtime time.Time) error {
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(mtime.UnixNano())}
	return unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// identity is a file's inode and status-change time (ns).
func identity(fi fs.FileInfo) (uint64, int64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Ino, st.Ctim.Nano(), true
}

// Umask is the process's file mode creation mask (0o7777 when unknown:
// every permission then needs a chmod).
func Umask() uint32 { return umask() }
