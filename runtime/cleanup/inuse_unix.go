//go:build unix

package cleanup

import (
	"errors"
	"os"
	"syscall"
)

// lockIdle takes the lock under which a session's Log is written
// (runtime's lockLog: an exclusive flock held from the Log's opening to
// its close) and returns its release, or false when a process holds it:
// that session is open, however long it has been idle. Held while the Log
// is removed, it keeps a process from opening the session meanwhile. The
// kernel drops a lock when its process ends, so a crash leaves nothing
// that would keep an old Log forever.
func lockIdle(path string) (release func(), ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return func() {}, true // gone, or unreadable: removing says which
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		_ = f.Close()
		return nil, false
	}
	return func() { _ = f.Close() }, true
}
