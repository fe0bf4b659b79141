//go:build unix && !linux

package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

func refuseHardLink(f *os.File, rel string) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && info.Mode().IsRegular() && st.Nlink > 1 {
		return &fs.PathError{Op: "open", Path: rel, Err: fmt.Errorf("%w (%d names)", ErrHardLink, st.Nlink)}
	}
	return nil
}
