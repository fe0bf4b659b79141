// Package sandbox is the kernel confinement of what tools do: the commands
// they start, and the files they open.
//
// A command runs under a Policy. On Linux with Landlock, a confined command
// may read the whole filesystem but write only beneath the Policy's
// writable paths and a private temporary directory made for it; its TCP
// connections and binds can be denied; it cannot signal processes outside
// its sandbox. Every command runs as the first process of a PID namespace
// of its own, killed by the kernel when Pixir dies: when it ends, is
// cancelled or times out, every process it started — background jobs and
// setsid children included — ends with it. Its environment is an allowlist
// of Pixir's, without provider keys or anything named like a secret. A
// Policy may also list the only programs a confined command may execute
// (Programs says what that guarantees, and what it does not).
//
// Landlock restricts the calling thread and its future children, and a Go
// program runs goroutines on threads it chooses. So the restriction is made
// on a thread locked to a goroutine that does nothing else: it restricts
// itself, starts the command, waits for it and ends; its thread ends with
// it (a goroutine that exits while locked takes its thread down), so no
// other goroutine ever runs restricted. That thread is also the command's
// parent for PR_SET_PDEATHSIG, which is why it must live as long as the
// command does.
//
// Where the kernel cannot do something (no Landlock, no PID namespaces),
// Support says so and the command still runs, as unconfined as before;
// the caller decides whether that is acceptable and tells the user.
//
// Files are opened with Dir: beneath a directory, through no symbolic link
// and refusing a hard-linked file, checked at the moment of use.
package sandbox
