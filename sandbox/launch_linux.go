package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// containFailed records why starting a command in a PID namespace failed
// (a container without the privilege, user namespaces turned off): from
// then on commands fall back to their process group.
var containFailed struct {
	sync.Mutex
	problem string
}

func containProblem() string {
	containFailed.Lock()
	defer containFailed.Unlock()
	return containFailed.problem
}

func noteContainFailed(err error) {
	containFailed.Lock()
	defer containFailed.Unlock()
	if containFailed.problem == "" {
		containFailed.problem = fmt.Sprintf("starting a command in a PID namespace failed: %v", err)
	}
}

// privileged reports whether Pixir may make PID namespaces without a user
// namespace (CAP_SYS_ADMIN).
func privileged() bool {
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return os.Geteuid() == 0
	}
	return data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0
}

var isPrivileged = sync.OnceValue(privileged)

// containAttr is how a command is started: as the first process (the
// init) of a PID namespace of its own (in a user namespace of its own too when Pixir has
// no CAP_SYS_ADMIN), killed when the thread that started it dies. contain
// false is the fallback: its own process group only.
func containAttr(contain bool) (attr *syscall.SysProcAttr, userns bool) {
	attr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if !contain {
		return attr, false
	}
	// The command is the namespace's init itself: another process there
	// first would cost one more exec per command. The price is init's
	// signal rule: a signal sent to it from inside the namespace (a
	// script's own `kill $$`) is ignored unless it handles it.
	attr.Cloneflags = syscall.CLONE_NEWPID
	if isPrivileged() {
		return attr, false
	}
	attr.Cloneflags |= syscall.CLONE_NEWUSER
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	return attr, true
}

// namespaceRefused reports whether a start failed because namespaces are
// not available here, rather than because of the command.
func namespaceRefused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS) || errors.Is(err, syscall.EACCES)
}

// run starts the command newCmd makes under p, on a thread of its own, and
// waits for it.
func (s *Sandbox) run(newCmd func() *exec.Cmd, p Policy) (Outcome, error) {
	var out Outcome
	contain := containProblem() == ""
	attr, userns := containAttr(contain)
	ruleset := -1
	if p.Restricts() {
		k := probeKernel()
		switch {
		case !s.landlockOn():
			out.Unconfined = "the kernel sandbox is turned off (landlock = false in config.toml)"
		case k.landlockABI == 0:
			out.Unconfined = k.landlockProblem
		default:
			fd, err := buildRuleset(k.landlockABI, p, userns)
			if err != nil {
				return out, fmt.Errorf("preparing the command's sandbox: %w", err)
			}
			defer unix.Close(fd)
			ruleset, out.Confined = fd, true
		}
	}
	prepare := func(attr *syscall.SysProcAttr) *exec.Cmd {
		cmd := newCmd()
		cmd.SysProcAttr = attr
		// Killing the group kills the command's first process, and with
		// it, in a PID namespace, every process it started.
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		return cmd
	}
	cmd := prepare(attr)

	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		// Locked and never unlocked: when this goroutine returns, its
		// thread ends with it, restriction and all. Until then it runs
		// nothing but the command's start and wait, and it stays alive as
		// the command's parent thread, whose death (Pixir's death) kills
		// the command through PR_SET_PDEATHSIG.
		runtime.LockOSThread()
		if ruleset >= 0 {
			if err := restrictThread(ruleset); err != nil {
				started <- fmt.Errorf("entering the command's sandbox: %w", err)
				return
			}
		}
		err := cmd.Start()
		if err != nil && contain && namespaceRefused(err) {
			noteContainFailed(err)
			fallback, _ := containAttr(false)
			cmd = prepare(fallback)
			err = cmd.Start()
		}
		started <- err
		if err != nil {
			return
		}
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return out, err
	}
	err := <-waited
	out.State = cmd.ProcessState
	return out, err
}
