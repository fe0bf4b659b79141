//go:build unix

package runtime

import (
	"errors"
	"os"
	"syscall"

	"github.com/pixir-go/pixir/runtime/wslock"
)

// lockLog takes the exclusive lock that makes this process the Log's one
// writer. The kernel drops it when the file is closed or the process
// ends, however it ends, so a crash leaves no stale lock behind.
func lockLog(f *os.File, path string) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		e := &InUseError{Path: path}
		e.PID, e.Command = wslock.Holder(f)
		return e
	}
	return err
}
