//go:build linux

package runtime

import (
	"io/fs"
	"syscall"
	"time"
)

// changedTime is when a file was last changed: its status change time,
// which every write, rename or chmod moves and no process can set back
// (its modification time can be set to anything).
func changedTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Unix())
	}
	return fi.ModTime()
}
