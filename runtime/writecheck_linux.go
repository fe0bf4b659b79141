package runtime

import (
	"io/fs"
	"syscall"
)

// stampOf is a file's stamp. Its ctime changes with every write, chmod or
// rename onto it, and no process can set it back; its inode changes when
// it is replaced by another file.
func stampOf(fi fs.FileInfo) stamp {
	s := stamp{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ctime, s.inode = uint64(st.Ctim.Nano()), st.Ino
	}
	return s
}
