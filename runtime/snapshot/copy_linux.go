//go:build linux

package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// copyFile copies the regular file src to dst (created, must not exist),
// cloning it when tryClone and the filesystem can (FICLONE), else through
// buf; it fingerprints the bytes into h and gives dst src's mode (with a
// chmod only when umask would take bits away) and modification time. It works on raw descriptors: a snapshot is mostly
// small files, and every system call per file counts.
func copyFile(ctx context.Context, src, dst string, buf []byte, h *sum, tryClone bool, umask uint32, k *keeper) (r copied, err error) {
	in, err := open(src, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return r, &errSource{&fs.PathError{Op: "open", Path: src, Err: err}}
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := fstat(in, &st); err != nil {
		return r, &fs.PathError{Op: "fstat", Path: src, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		r.irregular = kind(typeOf(st.Mode))
		return r, nil
	}
	if h.blob != nil {
		h.blob.start(st.Size, st.Mtim.Nano(), st.Ctim.Nano(), st.Ino)
	}
	perm := st.Mode & 0o7777
	out, err := open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, perm)
	if err != nil {
		return r, &fs.PathError{Op: "create", Path: dst, Err: err}
	}
	defer unix.Close(out)
	if err := ctx.Err(); err != nil {
		return r, err
	}
	if tryClone && st.Size > 0 {
		if unix.IoctlFileClone(out, in) == nil {
			r.cloned = true
		} else {
			r.refused = true
		}
	}
	if !k.want(st.Size) {
		k = nil
	}
	if r.size, err = copyData(ctx, out, in, st.Size, r.cloned, buf, h, k); err != nil {
		return r, &fs.PathError{Op: "copy", Path: src, Err: err}
	}
	r.basePack, r.baseOff = k.kept()
	if h.blob != nil && h.blob.vouched() {
		var after unix.Stat_t
		if fstat(in, &after) != nil {
			after.Ctim = unix.Timespec{} // unknown: not vouched
		}
		h.blob.copied(after.Ctim.Nano())
	}
	// futimens(out, {UTIME_OMIT, mtime}): utimensat with a NULL path.
	ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, st.Mtim}
	if _, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(out), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0); e != 0 {
		return r, &fs.PathError{Op: "futimens", Path: dst, Err: e}
	}
	if perm&umask != 0 || perm&^0o777 != 0 {
		if err := unix.Fchmod(out, perm); err != nil {
			return r, &fs.PathError{Op: "chmod", Path: dst, Err: err}
		}
	}
	r.mode = permOf(perm)
	r.mtime = time.Unix(st.Mtim.Unix())
	r.srcIno, r.srcCtime = st.Ino, st.Ctim.Nano()
	return r, nil
}

// copyData fingerprints in (and, unless it was cloned, copies it to out)
// through buf, and hands every byte to k (which may be nil). A copy stops
// at the size the file had when opened, or at an earlier end; a clone is
// fingerprinted to its end.
func copyData(ctx context.Context, out, in int, size int64, cloned bool, buf []byte, h *sum, kp *keeper) (int64, error) {
	var n int64
	for cloned || n < size {
		if n > 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		want := buf
		if !cloned && size-n < int64(len(buf)) {
			want = buf[:size-n]
		}
		k, err := read(in, want)
		if err != nil {
			return n, err
		}
		if k == 0 {
			break
		}
		h.write(buf[:k])
		if err := kp.write(buf[:k]); err != nil {
			return n, fmt.Errorf("keeping the base: %w", err)
		}
		if !cloned {
			for w := buf[:k]; len(w) > 0; {
				m, err := write(out, w)
				if err != nil {
					return n, err
				}
				w = w[m:]
			}
		}
		n += int64(k)
	}
	return n, nil
}

func open(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flags, perm)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func fstat(fd int, st *unix.Stat_t) error {
	for {
		err := unix.Fstat(fd, st)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func read(fd int, p []byte) (int, error) {
	for {
		n, err := unix.Read(fd, p)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

func write(fd int, p []byte) (int, error) {
	for {
		n, err := unix.Write(fd, p)
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// typeOf maps a stat mode's file type to io/fs.
func typeOf(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// permOf maps a stat mode's permission and special bits to io/fs.
func permOf(m uint32) fs.FileMode {
	p := fs.FileMode(m & 0o777)
	if m&unix.S_ISUID != 0 {
		p |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		p |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		p |= fs.ModeSticky
	}
	return p
}
