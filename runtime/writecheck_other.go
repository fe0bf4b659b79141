//go:build !linux

package runtime

import "io/fs"

// stampOf is a file's stamp: here its type, size and modification time,
// which a write of the same size with its time set back would escape.
func stampOf(fi fs.FileInfo) stamp {
	return stamp{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}
