package sandboxtest

import (
	"errors"

	"golang.org/x/sys/unix"
)

// AwaitExit returns once every process of pids has ended: each one's
// pidfd becomes readable when it exits, an event to wait for rather than a
// time to guess. The test's own timeout bounds the wait.
func AwaitExit(pids []int) error {
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue // already gone
		}
		if err != nil {
			return err
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			_, err = unix.Poll(fds, -1)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}
