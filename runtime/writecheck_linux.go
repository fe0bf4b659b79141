package runtime

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// stampOf is a file's stamp. Its ctime changes with every write, chmod or
// rename onto it, and no process can set it back; its inode changes when
// it is replaced by another file.
func stampOf(fi fs.FileInfo) stamp {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return stamp{mode: fi.Mode(), size: st.Size, mtime: st.Mtim.Nano(), ctime: uint64(st.Ctim.Nano()), inode: st.Ino}
	}
	return stamp{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// openDirIn opens the folder name in the open folder dir (path is its
// full path, for errors), never through a symbolic link: by name in its
// folder, which spares the kernel the walk from the root for every entry.
func openDirIn(dir *os.File, path, name string) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// stampIn is the stamp of name in the open folder dir (a link's own, not
// what it leads to), as stampOf makes it from os.Lstat's answer.
func stampIn(dir *os.File, path, name string) (stamp, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return stamp{}, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return stamp{mode: fileMode(st.Mode), size: st.Size, mtime: st.Mtim.Nano(), ctime: uint64(st.Ctim.Nano()), inode: st.Ino}, nil
}

// fileMode is what os.Lstat makes of a status's mode bits.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
