package merge

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// inProcess serialises the merges of one workspace within this process;
// the lock file serialises them between processes.
var inProcess sync.Map // workspace -> *sync.Mutex

// lockWorkspace takes the workspace's merge lock and returns its release.
// It waits for a merge another process is making (they are short: the
// plan and the question to the user are made before the lock is taken).
func lockWorkspace(workspace string) (func(), error) {
	mu, _ := inProcess.LoadOrStore(workspace, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	dir := mergesDir(workspace)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		mu.(*sync.Mutex).Unlock()
		return nil, fmt.Errorf("locking the workspace for a merge: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		mu.(*sync.Mutex).Unlock()
		return nil, fmt.Errorf("locking the workspace for a merge: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		mu.(*sync.Mutex).Unlock()
		return nil, fmt.Errorf("locking the workspace for a merge: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		mu.(*sync.Mutex).Unlock()
	}, nil
}
