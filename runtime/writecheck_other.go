//go:build !linux

package runtime

import (
	"io/fs"
	"os"
)

// stampOf is a file's stamp: here its type, size and modification time,
// which a write of the same size with its time set back would escape.
func stampOf(fi fs.FileInfo) stamp {
	return stamp{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// openDirIn opens the folder path (name in the open folder dir).
func openDirIn(_ *os.File, path, _ string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrInvalid}
	}
	return os.Open(path)
}

// stampIn is the stamp of path (name in the open folder dir), a link's
// own.
func stampIn(_ *os.File, path, _ string) (stamp, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return stamp{}, err
	}
	return stampOf(fi), nil
}
