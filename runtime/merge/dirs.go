package merge

import (
	"container/list"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// wsDirs are the workspace's folders an apply writes in: a folder is
// opened one name at a time from the workspace's own, with O_NOFOLLOW, so
// a link (or a file) met on the way, whenever it appeared, is an error
// (errOnTheWay) and never followed; and every write, deletion, rename and
// chmod of the apply is then made by name in a folder held open
// (renameat, unlinkat, linkat, fchmodat), which stays that folder whatever
// is renamed, removed or linked on the way to it meanwhile. So no
// operation of a merge leaves the workspace, or enters a folder through a
// link, even one made between a check and the write (by a shared child
// running meanwhile, or by the user).
//
// At most maxHeld folders stay open when no operation uses them (the
// least recently used is closed first): a merge may touch more folders
// than the process may hold descriptors (a node_modules-sized tree). A
// folder closed is opened again the same way, one name at a time from the
// workspace's, when an operation needs it again.
type wsDirs struct {
	root int
	mu   sync.Mutex
	held map[string]*heldDir // slash-separated folder ("." the workspace)
	idle list.List           // of *heldDir no operation uses, the least recently used last
}

// heldDir is a folder held open, and how many operations use it now.
type heldDir struct {
	rel  string
	fd   int
	uses int
	idle *list.Element // in wsDirs.idle while uses is 0
}

// maxHeld is how many folders an apply keeps open that no operation uses
// (a variable for the tests).
var maxHeld = 128

// errOnTheWay is the walk's error for a link or a file where a folder of
// the way is.
var errOnTheWay = errors.New("a link or a file on the way")

// openDirs opens the workspace's folder.
func openDirs(workspace string) (*wsDirs, error) {
	fd, err := unix.Open(workspace, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: workspace, Err: err}
	}
	return &wsDirs{root: fd, held: map[string]*heldDir{}}, nil
}

// close closes every folder held.
func (d *wsDirs) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range d.held {
		_ = unix.Close(h.fd)
	}
	_ = unix.Close(d.root)
	d.held = nil
	d.idle.Init()
}

// dir returns the folder of a slash-separated path inside the workspace
// ("." for the workspace) held open until done(rel), opening it and every
// folder on the way to it if need be, and with create making those
// absent. A link or a file on the way is errOnTheWay; an absent folder
// (without create) is fs.ErrNotExist.
func (d *wsDirs) dir(rel string, create bool) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.use(rel, create)
}

// done says an operation no longer uses the folder dir returned for rel.
func (d *wsDirs) done(rel string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.release(rel)
}

// use is dir with d.mu held.
func (d *wsDirs) use(rel string, create bool) (int, error) {
	if rel == "." {
		return d.root, nil
	}
	if h, ok := d.held[rel]; ok {
		if h.uses++; h.idle != nil {
			d.idle.Remove(h.idle)
			h.idle = nil
		}
		return h.fd, nil
	}
	parent, name := splitRel(rel)
	pfd, err := d.use(parent, create)
	if err != nil {
		return -1, err
	}
	defer d.release(parent)
	if name == "" || name == "." || name == ".." {
		return -1, fmt.Errorf("%s: not a path inside the workspace", rel)
	}
	fd, err := openDirAt(pfd, name)
	if errors.Is(err, unix.ENOENT) && create {
		if err = unix.Mkdirat(pfd, name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
			fd, err = openDirAt(pfd, name)
		}
	}
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return -1, fmt.Errorf("%s: %w", rel, errOnTheWay)
	case errors.Is(err, unix.ENOENT):
		return -1, fmt.Errorf("%s: %w", rel, fs.ErrNotExist)
	case err != nil:
		return -1, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	d.held[rel] = &heldDir{rel: rel, fd: fd, uses: 1}
	return fd, nil
}

// release is done with d.mu held: a folder no operation uses is kept for
// the next, and the least recently used of those beyond maxHeld closed.
func (d *wsDirs) release(rel string) {
	h, ok := d.held[rel]
	if !ok {
		return // the workspace's own, always held
	}
	if h.uses--; h.uses > 0 {
		return
	}
	h.idle = d.idle.PushFront(h)
	for d.idle.Len() > maxHeld {
		old := d.idle.Remove(d.idle.Back()).(*heldDir)
		delete(d.held, old.rel)
		_ = unix.Close(old.fd)
	}
}

// openDirAt opens the folder name in the folder dirfd, never through a
// link.
func openDirAt(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// splitRel is a journal path's folder and name.
func splitRel(rel string) (string, string) {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return ".", rel
}

// lstatAt is the stat of name in dirfd, not following a link.
func lstatAt(dirfd int, name string) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", err
	}
	msec, mnsec := st.Mtim.Unix()
	csec, cnsec := st.Ctim.Unix()
	return statString(uint64(st.Dev), uint64(st.Ino), int64(st.Size), msec, mnsec, csec, cnsec), nil //nolint:unconvert // Dev and Ino differ in type between systems
}
