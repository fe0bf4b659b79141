package merge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// wsDirs are the workspace's folders an apply writes in, each opened once
// and held: a folder is opened one name at a time from the workspace's
// own, with O_NOFOLLOW, so a link (or a file) met on the way, whenever it
// appeared, is an error (errOnTheWay) and never followed; and every write,
// deletion, rename and chmod of the apply is then made by name in a held
// folder (renameat, unlinkat, linkat, fchmodat), which stays that folder
// whatever is renamed, removed or linked on the way to it meanwhile. So no
// operation of a merge leaves the workspace, or enters a folder through a
// link, even one made between a check and the write (by a shared child
// running meanwhile, or by the user). The apply is the only user of one:
// no lock.
type wsDirs struct {
	root int
	fds  map[string]int // slash-separated folder ("." the workspace) -> fd
}

// errOnTheWay is the walk's error for a link or a file where a folder of
// the way is.
var errOnTheWay = errors.New("a link or a file on the way")

// openDirs opens the workspace's folder.
func openDirs(workspace string) (*wsDirs, error) {
	fd, err := unix.Open(workspace, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: workspace, Err: err}
	}
	return &wsDirs{root: fd, fds: map[string]int{".": fd}}, nil
}

// close closes every folder held.
func (d *wsDirs) close() {
	for _, fd := range d.fds {
		_ = unix.Close(fd)
	}
	d.fds = nil
}

// dir returns the held folder of a slash-separated path inside the
// workspace ("." for the workspace), opening it and every folder on the
// way to it, and with create making those absent. A link or a file on the
// way is errOnTheWay; an absent folder (without create) is fs.ErrNotExist.
func (d *wsDirs) dir(rel string, create bool) (int, error) {
	if fd, ok := d.fds[rel]; ok {
		return fd, nil
	}
	parent, name := ".", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parent, name = rel[:i], rel[i+1:]
	}
	pfd, err := d.dir(parent, create)
	if err != nil {
		return -1, err
	}
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
	d.fds[rel] = fd
	return fd, nil
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
	return statString(st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec), nil
}

// chmodAt sets name's permission bits in dirfd, never through a link: a
// link there is errOnTheWay. fchmodat2 does it in one call; a kernel
// without it (or a seccomp profile refusing it) gets it done on the file
// opened with O_PATH|O_NOFOLLOW, through its /proc/self/fd name, as the C
// library does.
func chmodAt(dirfd int, name string, mode fs.FileMode) error {
	err := unix.Fchmodat(dirfd, name, uint32(mode.Perm()), unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM):
		return err
	}
	return chmodOpened(dirfd, name, mode)
}

// chmodOpened is chmodAt without fchmodat2.
func chmodOpened(dirfd int, name string, mode fs.FileMode) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fmt.Errorf("%s: %w", name, errOnTheWay)
	}
	return os.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode.Perm())
}
