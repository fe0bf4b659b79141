//go:build !unix

package cleanup

import "io/fs"

// diskBytes is an entry's size where its blocks are not known.
func diskBytes(fi fs.FileInfo) int64 {
	if fi.Mode().IsRegular() {
		return fi.Size()
	}
	return 0
}
