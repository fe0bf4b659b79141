package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// A writable folder that holds a protected path (a shared child's
// workspace, with the parent's .git and .pixir in it) cannot be allowed
// whole by Landlock, whose rules only allow and hold for all beneath them;
// opened up entry by entry instead (openUp), its commands could not make a
// new entry at its top. So where the command gets namespaces, the
// protected paths are made read-only by a mount instead: the command
// starts as Pixir's own binary, as mountInitName, in a mount namespace of
// its own (beside its PID namespace), where it binds each protected path
// read-only over itself, enters the Landlock ruleset it was handed (the
// folders allowed whole) and executes the command in its own place. A
// read-only mount holds what Landlock cannot: nothing beneath it can be
// written, made or removed, and it cannot itself be removed, renamed or
// unmounted (Landlock forbids a confined process any mount change). The
// namespace's mounts are private: nothing reaches the user's.

// mountInitName is the name (argv[0]) Pixir's binary is started under to
// set up a command's mounts; rulesetFD is where it finds the ruleset.
// What goes wrong before the command is executed is written to reportFD
// (closed by the exec): Pixir then starts it without the mounts.
const (
	mountInitName = "pixir-sandbox-init"
	rulesetFD     = 3
	reportFD      = 4
)

func init() {
	if len(os.Args) > 1 && os.Args[0] == mountInitName {
		os.Exit(mountInit(os.Args[1:]))
	}
}

// mountInit is the started binary's work: args are the protected paths,
// "--", the command's path and its argv. Package initialisation runs on
// the main thread, locked to it, so the restriction and the exec are on
// one thread. It returns only on failure: 126 when the sandbox could not
// be made (said on reportFD), 127 when the command could not be executed
// (said on its output, as a shell says it).
func mountInit(args []string) int {
	unix.CloseOnExec(reportFD)
	fail := func(what string, err error) int {
		msg := fmt.Sprintf("making a command's read-only mounts failed (%s: %v)", what, err)
		if _, werr := unix.Write(reportFD, []byte(msg)); werr != nil {
			fmt.Fprintln(os.Stderr, "pixir: "+msg)
		}
		return 126
	}
	sep := slices.Index(args, "--")
	if sep < 0 || len(args) < sep+3 {
		return fail("starting", fmt.Errorf("%s was started without a command", mountInitName))
	}
	protected, path, argv := args[:sep], args[sep+1], args[sep+2:]
	if os.Getpid() != 1 {
		// Only ever started as the first process of new PID and mount
		// namespaces: anywhere else its mounts would be someone else's.
		return fail("starting", fmt.Errorf("%s is not the first process of a namespace of its own", mountInitName))
	}
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail("making its mounts private", err)
	}
	for _, p := range protected {
		if err := bindReadOnly(p); err != nil {
			return fail("keeping "+p+" read-only", err)
		}
	}
	// The command gets no capability of ours (started in a user
	// namespace, this process holds CAP_SYS_ADMIN there as an ambient
	// one, which an exec would pass on).
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fail("dropping its capabilities", err)
	}
	if err := restrictThread(rulesetFD); err != nil {
		return fail("entering the command's sandbox", err)
	}
	_ = unix.Close(rulesetFD)
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "pixir: %s: %v\n", path, err)
	return 127
}

// bindReadOnly mounts a read-only copy of p over p, p's mounts beneath it
// included. No symbolic link is followed: p is one only if it was one
// when the policy was made (protectedByMount refuses it), and replacing it
// since took a process outside the sandbox.
func bindReadOnly(p string) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// protectedByMount are the protected paths inside p's writable folders,
// when each is a folder or a file (not a link, not missing) and so can be
// kept read-only by a mount; nil when there are none, or when one cannot
// be.
func protectedByMount(p Policy) []string {
	var out []string
	for _, pr := range p.Protected {
		pr = filepath.Clean(pr)
		if !slices.ContainsFunc(p.Writable, func(w string) bool {
			w = filepath.Clean(w)
			return pr == w || within(pr, w)
		}) {
			continue
		}
		fi, err := os.Lstat(pr)
		if err != nil || !fi.IsDir() && !fi.Mode().IsRegular() {
			// Missing: no mount can keep a command from making it (a
			// .git with hooks or a core.fsmonitor command, which the
			// user's git would run), and openUp's entries can.
			return nil
		}
		if slices.ContainsFunc(p.Writable, func(w string) bool { w = filepath.Clean(w); return w == pr || within(w, pr) }) {
			// Writable itself, or something beneath it is (a workspace
			// that is the home folder, whose .pixir holds the Go cache
			// given to commands): a read-only mount would take that away,
			// and openUp keeps it.
			return nil
		}
		out = append(out, pr)
	}
	return out
}

// within reports whether path is strictly beneath dir.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && filepath.IsLocal(rel)
}
