//go:build unix

package cleanup

import (
	"io/fs"
	"syscall"
)

// diskBytes is the room an entry takes on disk (its blocks, as du counts
// them), which removing it gives back: a 10-byte file takes a block.
func diskBytes(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
