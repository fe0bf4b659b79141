package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Dir opens files beneath one directory, checking each path at the moment
// of use: openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS, so that a
// symbolic link swapped into the path after it was resolved (toward
// .pixir/, or out of the tree) fails the open instead of being followed;
// and an fstat of what was opened, so that a regular file with more than
// one name (a hard link, perhaps to a file outside) is refused.
type Dir struct {
	fd   int
	path string
}

// OpenDir opens the directory at path.
func OpenDir(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{fd: fd, path: path}, nil
}

// Close releases the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openat opens rel beneath dirfd with no symbolic link on the way.
func openat(dirfd int, rel string, flags int, mode uint32) (int, error) {
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: beneath})
	if errors.Is(err, unix.ENOSYS) {
		// Linux before 5.6: one component at a time, none followed.
		return openatNoFollow(dirfd, rel, flags, mode)
	}
	return fd, linkError(err)
}

// openatNoFollow is openat for kernels without openat2.
func openatNoFollow(dirfd int, rel string, flags int, mode uint32) (int, error) {
	parts := strings.Split(rel, string(filepath.Separator))
	cur := dirfd
	for i, p := range parts {
		last := i == len(parts)-1
		f, m := unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(0)
		if last {
			f, m = flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode
		}
		if p == ".." {
			return -1, unix.EXDEV
		}
		next, err := unix.Openat(cur, p, f, m)
		if cur != dirfd {
			unix.Close(cur)
		}
		if err != nil {
			return -1, linkError(err)
		}
		cur = next
	}
	return cur, nil
}

// linkError names the refusals of a path that crosses a link.
func linkError(err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return ErrSymlink
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("path escapes from parent: %w", ErrSymlink)
	}
	return err
}

// OpenFile opens rel (relative to the directory) with flags. A regular
// file with more than one name is refused with ErrHardLink.
func (d *Dir) OpenFile(rel string, flags int) (*os.File, error) {
	clean, err := checkRel(rel)
	if err != nil {
		return nil, err
	}
	fd, err := openat(d.fd, clean, flags, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: rel, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: rel, Err: fmt.Errorf("%w (%d names)", ErrHardLink, st.Nlink)}
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.path, clean)), nil
}

// Stat describes rel without following a symbolic link anywhere on its
// way.
func (d *Dir) Stat(rel string) (fs.FileInfo, error) {
	f, err := d.OpenFile(rel, unix.O_PATH)
	if err != nil && !errors.Is(err, ErrHardLink) {
		return nil, err
	}
	if err != nil {
		// A hard-linked file is still described; opening it is refused.
		return os.Lstat(filepath.Join(d.path, rel))
	}
	defer f.Close()
	return f.Stat()
}

// WriteFile gives the file at rel the content data: it writes a new file
// beside it and renames it over the old one, so the old file's other
// names, if it has any, keep their content, and a reader never sees half
// a file. The old file's permissions are kept; a new file gets perm less
// the umask. Missing parent directories are made (0777 less the umask).
func (d *Dir) WriteFile(rel string, data []byte, perm os.FileMode) error {
	return d.writeFile(rel, data, perm, nil)
}

// ReplaceFile is WriteFile over the file read as was (the FileInfo of what
// was opened): just before the rename it checks that the file at rel is
// still that one, the same size and modification time, and if not it
// leaves it as it is and says ErrChanged. A save between the caller's read
// and its write is not lost.
func (d *Dir) ReplaceFile(rel string, data []byte, was fs.FileInfo) error {
	return d.writeFile(rel, data, 0o644, was)
}

func (d *Dir) writeFile(rel string, data []byte, perm os.FileMode, was fs.FileInfo) error {
	clean, err := checkRel(rel)
	if err != nil {
		return err
	}
	if clean == "." {
		return &fs.PathError{Op: "write", Path: rel, Err: unix.EISDIR}
	}
	parent, err := d.mkdirAll(filepath.Dir(clean))
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: filepath.Dir(rel), Err: err}
	}
	defer unix.Close(parent)
	name := filepath.Base(clean)
	// A new file gets perm less the umask, as every program's new file
	// does: a user's umask 077 keeps it private, a team's 002 shares it.
	mode, replaced := uint32(perm.Perm()), false
	var st unix.Stat_t
	switch err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &fs.PathError{Op: "write", Path: rel, Err: ErrSymlink}
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return &fs.PathError{Op: "write", Path: rel, Err: unix.EISDIR}
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &fs.PathError{Op: "write", Path: rel, Err: fmt.Errorf("not a regular file")}
	case err == nil && st.Mode&0o222 == 0:
		return &fs.PathError{Op: "write", Path: rel, Err: ErrReadOnly}
	case err == nil && notWritable(parent, name):
		return &fs.PathError{Op: "write", Path: rel, Err: fmt.Errorf("%w (owner uid %d, mode %04o)", ErrNotWritable, st.Uid, st.Mode&0o7777)}
	case err == nil:
		mode, replaced = st.Mode&0o7777, true
	case !errors.Is(err, unix.ENOENT):
		return &fs.PathError{Op: "stat", Path: rel, Err: err}
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	tmp := "." + name + ".pixir-" + hex.EncodeToString(suffix[:])
	fd, err := unix.Openat(parent, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return &fs.PathError{Op: "create", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil && replaced {
		err = f.Chmod(os.FileMode(mode)) // the umask narrowed the old file's mode
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && was != nil {
		err = d.unchanged(parent, name, was)
	}
	if err == nil {
		err = unix.Renameat(parent, tmp, parent, name)
	}
	if err != nil {
		_ = unix.Unlinkat(parent, tmp, 0)
		return &fs.PathError{Op: "write", Path: rel, Err: err}
	}
	return nil
}

// unchanged checks that name in the directory parent is still the file
// was (ReplaceFile).
func (d *Dir) unchanged(parent int, name string, was fs.FileInfo) error {
	var st unix.Stat_t
	if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return ErrChanged
		}
		return err
	}
	ws, ok := was.Sys().(*syscall.Stat_t)
	if !ok || uint64(ws.Dev) != uint64(st.Dev) || uint64(ws.Ino) != uint64(st.Ino) || //nolint:unconvert // their types differ between architectures
		st.Size != was.Size() || !time.Unix(st.Mtim.Unix()).Equal(was.ModTime()) {
		return ErrChanged
	}
	return nil
}

// notWritable says whether this process may not write name in parent, as
// open(O_WRONLY) would decide: a shell's "> file" is refused there.
func notWritable(parent int, name string) bool {
	err := unix.Faccessat(parent, name, unix.W_OK, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW)
	return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// mkdirAll opens the directory rel, making what is missing of it, through
// no symbolic link.
func (d *Dir) mkdirAll(rel string) (int, error) {
	cur, err := unix.Dup(d.fd)
	if err != nil {
		return -1, err
	}
	if rel == "." {
		return cur, nil
	}
	for _, p := range strings.Split(rel, string(filepath.Separator)) {
		next, err := openat(cur, p, unix.O_PATH|unix.O_DIRECTORY, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(cur, p, 0o777); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openat(cur, p, unix.O_PATH|unix.O_DIRECTORY, 0)
			}
		}
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}
