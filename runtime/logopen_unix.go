//go:build unix

package runtime

import (
	"errors"
	"os"
	"syscall"
)

// openLogFile opens a Log file as os.OpenFile(path, flag, perm) does, in
// fewer system calls: os.OpenFile tries to register every file with the
// network poller (four fcntl calls and an epoll_ctl that a regular file
// always fails), where os.NewFile asks only its flags (one fcntl). A
// workflow of thousands of steps opens a Log for every one of them; the
// file works the same either way, since a regular file is never polled.
func openLogFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(path, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

// syncDir makes the entries of a folder durable (fsync of the folder).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
