//go:build unix

package wslock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockFile takes the flock of the workspace's lock file (see Lock).
func lockFile(ctx context.Context, root string, write bool, waiting Waiting) (func(), error) {
	path := Path(root)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("locking the workspace against other processes' merges: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
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
		if pid, cmd := Holder(f); pid != 0 {
			holder = fmt.Sprintf("another process (pid %d: %s)", pid, cmd)
		}
		if ended := waiting(holder); ended != nil {
			defer ended()
		}
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

// Holder finds the process holding a flock on f in /proc/locks (Linux),
// and its command line. It returns 0 when it cannot tell.
func Holder(f *os.File) (int, string) {
	fi, err := f.Stat()
	if err != nil {
		return 0, ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, ""
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0, ""
	}
	defer locks.Close()
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 4242 00:2f:1234 0 EOF"; a waiter's
		// line has "->" after the number.
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		if !strings.HasSuffix(fields[5], ino) {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + fields[4] + "/cmdline")
		return pid, strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return 0, ""
}
