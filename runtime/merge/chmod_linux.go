package merge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

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
