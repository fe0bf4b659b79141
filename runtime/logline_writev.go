//go:build linux || darwin

package runtime

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// iovMax is the most pieces one writev takes (IOV_MAX on Linux and macOS).
const iovMax = 1024

// writePieces writes the pieces with writev: one system call appends them
// all (up to iovMax of them), as one write of their concatenation would.
func writePieces(f *os.File, pieces ...[]byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for len(pieces) > 0 {
			n, err := unix.Writev(int(fd), pieces[:min(len(pieces), iovMax)])
			switch {
			case errors.Is(err, unix.EINTR):
				continue
			case errors.Is(err, unix.EAGAIN):
				return false // not ready: the poller calls again
			case err != nil:
				werr = &os.PathError{Op: "write", Path: f.Name(), Err: err}
				return true
			}
			for n > 0 { // a short write: go on with what is left
				if n < len(pieces[0]) {
					pieces[0], n = pieces[0][n:], 0
				} else {
					n -= len(pieces[0])
					pieces = pieces[1:]
				}
			}
			for len(pieces) > 0 && len(pieces[0]) == 0 {
				pieces = pieces[1:]
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return werr
}
