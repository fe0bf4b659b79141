package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock is used through its three system calls rather than through
// github.com/landlock-lsm/go-landlock: that library restricts every thread
// of the process (with libpsx, which under cgo also wraps pthread_create
// for the whole binary), and Pixir must restrict one thread only.

// Access rights by the ABI version that brought them.
const (
	fsRightsV1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	// fileRights are the rights that apply to a file (the others apply to
	// a directory's entries): a rule on a file may hold only these.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	readRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// noDevices: nothing a confined command writes needs to make device
	// files.
	noDevices = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	netTCP    = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	// rulesetAttrSize is the size of the ruleset attributes up to Scoped
	// (ABI 6): the kernel reads what it knows and checks the rest is zero.
	rulesetAttrSize = 3 * 8
)

// fsRights are the filesystem rights an ABI version handles.
func fsRights(abi int) uint64 {
	r := uint64(fsRightsV1)
	if abi >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

func detectKernel() kernel {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == 0 && int(v) > 0:
		return kernel{landlockABI: int(v)}
	case errno == unix.ENOSYS:
		return kernel{landlockProblem: "this kernel has no Landlock (Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK is needed)"}
	case errno == unix.EOPNOTSUPP:
		return kernel{landlockProblem: "Landlock is built into this kernel but not enabled at boot (add landlock to the lsm= boot parameter)"}
	}
	return kernel{landlockProblem: fmt.Sprintf("asking the kernel for Landlock failed: %v", errno)}
}

// devices are the device files any command may write: the sinks and
// sources programs open by name, terminals and shared memory.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm"}

// buildRuleset makes the Landlock ruleset of p for an ABI version and
// returns its descriptor; the caller closes it. userns says the command is
// started in a user namespace of its own, whose ID maps the starting
// thread writes under /proc after the fork.
func buildRuleset(abi int, p Policy, userns bool) (int, error) {
	var attr unix.LandlockRulesetAttr
	handled := uint64(0)
	if p.Confine {
		handled = fsRights(abi)
		attr.Handled_access_fs = handled
	}
	if p.DenyNetwork && abi >= 4 {
		attr.Handled_access_net = netTCP
	}
	if abi >= 6 {
		// A sandboxed command cannot signal Pixir or anything else
		// outside its sandbox.
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL
		if p.DenyNetwork {
			attr.Scoped |= unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		}
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), rulesetAttrSize, 0)
	if errno != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	rs := int(fd)
	if handled == 0 {
		return rs, nil
	}
	add := func(path string, access uint64) error {
		if err := addPath(rs, "", path, access&handled); err != nil {
			return fmt.Errorf("allowing %s: %w", path, err)
		}
		return nil
	}
	write, read := handled&^noDevices, uint64(readRights)
	if p.Execute != nil {
		// Only the listed programs run; nothing writable does.
		write &^= unix.LANDLOCK_ACCESS_FS_EXECUTE
		read &^= unix.LANDLOCK_ACCESS_FS_EXECUTE
	}
	err := add("/", read)
	for _, x := range p.Execute {
		err = errors.Join(err, add(x, readRights))
	}
	for _, d := range devices {
		err = errors.Join(err, add(d, write))
	}
	if userns {
		err = errors.Join(err, add("/proc", unix.LANDLOCK_ACCESS_FS_WRITE_FILE))
	}
	for _, w := range p.Writable {
		for _, path := range openUp(filepath.Clean(w), p.Protected) {
			if aerr := addPath(rs, p.Workspace, path, write&handled); aerr != nil {
				err = errors.Join(err, fmt.Errorf("allowing %s: %w", path, aerr))
			}
		}
	}
	if err != nil {
		unix.Close(rs)
		return -1, err
	}
	return rs, nil
}

// addPath allows access beneath path. A path that does not exist is
// skipped: there is nothing there to allow. So is a path inside workspace
// (when set) reached through a symbolic link below it (see
// Policy.Workspace).
func addPath(ruleset int, workspace, path string, access uint64) error {
	fd, err := openForRule(workspace, path)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	if access == 0 {
		return nil
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// openForRule opens path for a rule. Inside workspace (when set) it is
// walked to from workspace one name at a time, none of them a symbolic
// link (ELOOP): a link there was made by a command, and would lead the
// rule wherever it points. (A walk, not openat2's RESOLVE_NO_SYMLINKS,
// which some container seccomp profiles refuse.) Workspace itself, and a
// path outside it, are opened as they are (Pixir's own folders, the
// user's settings).
func openForRule(workspace, path string) (int, error) {
	rel, err := filepath.Rel(workspace, path)
	if workspace == "" || err != nil || rel != "." && !filepath.IsLocal(rel) {
		return unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	}
	fd, err := unix.Open(workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil || rel == "." {
		return fd, err
	}
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(next)
			return -1, unix.ELOOP
		}
		fd = next
	}
	return fd, nil
}

// openUp is writable path w with the protected paths inside it taken out.
// Landlock rules only allow, and a right on a directory holds for all of
// it; so a directory holding a protected path is replaced by its entries,
// recursively, less the protected one. Protected paths that do not exist
// take nothing out.
func openUp(w string, protected []string) []string {
	var inside []string
	for _, p := range protected {
		p = filepath.Clean(p)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		switch {
		case p == w:
			return nil
		case strings.HasPrefix(p, w+string(filepath.Separator)):
			inside = append(inside, p)
		}
	}
	if len(inside) == 0 {
		return []string{w}
	}
	entries, err := os.ReadDir(w)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		out = append(out, openUp(filepath.Join(w, e.Name()), inside)...)
	}
	return out
}

// restrictThread puts the calling thread, and every process it starts
// from now on, under the ruleset. The thread can never be lifted out: the
// caller must be locked to it and must let it end.
func restrictThread(ruleset int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}
