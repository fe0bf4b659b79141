//go:build unix

package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// workspaceLockFile is the file in a workspace's state folder whose flock
// keeps snapshot copies and merges of every process apart: a merge holds
// it exclusive, a copy shared.
const workspaceLockFile = "workspace.lock"

// lockWorkspaceFile takes the workspace's lock file at root, exclusive to
// write or shared to read, and returns what releases it. When another
// process holds it the other way, holder is told who (once) and the wait
// lasts until it lets go or ctx ends. The kernel drops the lock of a
// process however it ends, so a crash leaves none behind.
func lockWorkspaceFile(ctx context.Context, root string, write bool, waiting func(holder string)) (func(), error) {
	dir := filepath.Join(root, StateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("locking the workspace against other processes' merges: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, workspaceLockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking the workspace against other processes' merges: %w", err)
	}
	how := syscall.LOCK_SH
	if write {
		how = syscall.LOCK_EX
	}
	release := func() { f.Close() } // closing the file drops its lock
	err = flockRetry(f, how|syscall.LOCK_NB)
	if err == nil {
		return release, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("locking the workspace against other processes' merges: %w", err)
	}
	if waiting != nil {
		holder := "another process"
		if pid, cmd := lockHolder(f); pid != 0 {
			holder = fmt.Sprintf("another process (pid %d: %s)", pid, cmd)
		}
		waiting(holder)
	}
	got := make(chan error, 1)
	go func() { got <- flockRetry(f, how) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking the workspace against other processes' merges: %w", err)
		}
		return release, nil
	case <-ctx.Done():
		// The wait goes on in its goroutine, which lets the lock go as
		// soon as it has it.
		go func() {
			if <-got == nil {
				_ = flockRetry(f, syscall.LOCK_UN)
			}
			f.Close()
		}()
		return nil, ctx.Err()
	}
}

// flockRetry is flock, again when a signal interrupted it.
func flockRetry(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
