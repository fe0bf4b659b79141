// Package wslock keeps a snapshot's copy of a workspace and a merge into
// it apart, within this process and across processes (a second pixir
// run, an editor's pixir acp): a merge writes holding the workspace's
// lock exclusive, a copy reads holding it shared, so a copy never takes
// half of a merge and a merge never writes into a copy under way.
//
// The lock is held only while files are written or copied, never while a
// user is asked anything: a merge decides what it will write, asks, then
// locks and checks again each path it planned (see runtime/merge).
package wslock

import (
	"context"
	"path/filepath"
	"sync"
)

// File is the lock file's name in a workspace's state folder (.pixir).
const File = "workspace.lock"

// Path is the lock file of the workspace at root.
func Path(root string) string { return filepath.Join(root, ".pixir", File) }

// inProcess keeps this process's copies and merges of one workspace apart
// (a *sync.RWMutex by root), where the file's lock cannot (no flock).
var inProcess sync.Map

func local(root string) *sync.RWMutex {
	l, _ := inProcess.LoadOrStore(root, new(sync.RWMutex))
	return l.(*sync.RWMutex)
}

// Waiting is told that a copy or merge waits for another process (holder)
// to let the workspace's lock go, when the wait begins; the func it
// returns (nil: none) is called when the wait ends, the lock taken or not.
type Waiting func(holder string) (ended func())

// Lock takes the lock of the workspace at root, exclusive to write (a
// merge) or shared to read (a copy), and returns what releases it. When
// another process holds it the other way, waiting is told who (once) and
// the wait lasts until that process lets go or ctx ends. The kernel drops
// a process's lock however it ends, so a crash leaves none behind.
func Lock(ctx context.Context, root string, write bool, waiting Waiting) (func(), error) {
	l := local(root)
	if write {
		l.Lock()
	} else {
		l.RLock()
	}
	unlockLocal := l.RUnlock
	if write {
		unlockLocal = l.Unlock
	}
	unlockFile, err := lockFile(ctx, root, write, waiting)
	if err != nil {
		unlockLocal()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unlockFile()
			unlockLocal()
		})
	}, nil
}

// Held reports whether this process holds the lock of the workspace at
// root, to write (write) or at all: for the tests.
func Held(root string, write bool) bool {
	l := local(root)
	if write {
		if l.TryRLock() {
			l.RUnlock()
			return false
		}
		return true
	}
	if l.TryLock() {
		l.Unlock()
		return false
	}
	return true
}
