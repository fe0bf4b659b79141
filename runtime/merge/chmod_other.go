//go:build unix && !linux

package merge

import (
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"
)

// chmodAt sets name's permission bits in dirfd, never through a link: a
// link there is errOnTheWay, as on Linux. Here fchmodat(AT_SYMLINK_NOFOLLOW)
// is the system's own call (lchmod): a link swapped in after the look has
// its own bits set, never its target's.
func chmodAt(dirfd int, name string, mode fs.FileMode) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fmt.Errorf("%s: %w", name, errOnTheWay)
	}
	for {
		err := unix.Fchmodat(dirfd, name, uint32(mode.Perm()), unix.AT_SYMLINK_NOFOLLOW)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
