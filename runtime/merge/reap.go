package merge

import (
	"os"
	"sync"
)

// Freeing a file's blocks is most of what replacing it costs on some
// disks (ext4 mounted with discard frees them synchronously, ~1 ms a
// file here), and nobody needs to wait for it: a finished merge keeps the
// versions it replaced in its folder (see run), and that folder is removed
// here, after Merge has returned. A process that ends first leaves the
// folder (it has no journal), and the next Recover removes it.
var reaper struct {
	mu   sync.Mutex
	dirs map[string]chan struct{} // closed once removed
}

// testHookReap, when set by a test, runs in the background before a
// finished merge's folder is removed: the test sees what Merge left.
var testHookReap func()

// reap removes a finished merge's folder in the background.
func reap(dir string) {
	hook := testHookReap
	done := make(chan struct{})
	reaper.mu.Lock()
	if reaper.dirs == nil {
		reaper.dirs = map[string]chan struct{}{}
	}
	reaper.dirs[dir] = done
	reaper.mu.Unlock()
	go func() {
		defer close(done)
		if hook != nil {
			hook()
		}
		_ = os.RemoveAll(dir) // what is left, the next Recover removes
		reaper.mu.Lock()
		delete(reaper.dirs, dir)
		reaper.mu.Unlock()
	}()
}

// reaping says whether dir is being removed by reap (Recover leaves it).
func reaping(dir string) bool {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	_, ok := reaper.dirs[dir]
	return ok
}

// Wait returns once the folders of the merges this process finished are
// removed: a process calls it before it ends (Runtime.Close does), so
// that no merge leaves anything behind.
func Wait() {
	reaper.mu.Lock()
	pending := make([]chan struct{}, 0, len(reaper.dirs))
	for _, done := range reaper.dirs {
		pending = append(pending, done)
	}
	reaper.mu.Unlock()
	for _, done := range pending {
		<-done
	}
}
