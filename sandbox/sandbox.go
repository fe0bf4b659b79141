package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Sandbox runs commands under policies. A nil *Sandbox runs them with the
// default Config.
type Sandbox struct {
	cfg Config
	// deny are variables never passed (the provider's key under a custom
	// name).
	deny []string
	// base is the environment filtered; nil is os.Environ at each call.
	base []string
	// goCache is the Go build cache of confined commands that may not
	// write their own (WithGoCache); "" for none.
	goCache string
}

// New makes a Sandbox. deny names variables commands never get, whatever
// the allowlist says: the configured provider's key variable.
func New(cfg Config, deny ...string) *Sandbox {
	return &Sandbox{cfg: cfg, deny: deny}
}

// WithBaseEnv returns a copy of s that filters env instead of Pixir's own
// environment (for tests).
func (s *Sandbox) WithBaseEnv(env []string) *Sandbox {
	c := *s.orDefault()
	c.base = env
	return &c
}

func (s *Sandbox) orDefault() *Sandbox {
	if s == nil {
		return &Sandbox{}
	}
	return s
}

// TempDirError is why a confined command did not start: its private
// temporary directory could not be made in the system's temporary folder
// ($TMPDIR, or /tmp): missing, not a folder, not writable or full. It is
// the folder's problem, not the kernel's.
type TempDirError struct {
	Dir string // os.TempDir()
	Err error
}

func (e *TempDirError) Error() string {
	return fmt.Sprintf("making the command's private temporary directory in %s (the system's temporary folder: $TMPDIR, or /tmp; set TMPDIR to a folder you can write): %v", e.Dir, e.Err)
}

func (e *TempDirError) Unwrap() error { return e.Err }

// Support is what this kernel and configuration give the sandbox.
type Support struct {
	// LandlockABI is the kernel's Landlock ABI version, 0 without one.
	LandlockABI int
	// Landlock is true when confined commands are really confined: the
	// kernel has Landlock (ABI 1 or later) and the configuration did not
	// turn it off.
	Landlock bool
	// LandlockNetwork is true when TCP can be denied (ABI 4 or later).
	LandlockNetwork bool
	// LandlockProblem says why Landlock is not used, when it is not.
	LandlockProblem string
	// Contain says how commands are made to end with their owner:
	// "pid-namespace" (the kernel kills everything a command started when
	// it ends, or when Pixir dies) or "process-group" (the fallback).
	Contain string
	// ContainProblem says why PID namespaces are not used, when they are
	// not.
	ContainProblem string
	// TempProblem says why confined commands cannot start here at all
	// (their private temporary directory cannot be made), when Check
	// found that; Landlock is not the matter then.
	TempProblem string
}

// Support probes the kernel once per process and reports what commands
// will get.
func (s *Sandbox) Support() Support {
	s = s.orDefault()
	k := probeKernel()
	sup := Support{LandlockABI: k.landlockABI, Contain: "pid-namespace"}
	switch {
	case s.cfg.Landlock != nil && !*s.cfg.Landlock:
		sup.LandlockProblem = "turned off by landlock = false in the [sandbox] table of config.toml"
	case k.landlockABI == 0:
		sup.LandlockProblem = k.landlockProblem
	default:
		sup.Landlock = true
		sup.LandlockNetwork = k.landlockABI >= 4
	}
	if p := containProblem(); p != "" {
		sup.Contain, sup.ContainProblem = "process-group", p
	}
	return sup
}

// Check runs a command under the strictest policy (confined, network
// denied, in a PID namespace) and reports what commands really get: a
// kernel can refuse at run time what it seemed to offer (a container
// without the privilege for namespaces). For pixir doctor.
func (s *Sandbox) Check(ctx context.Context) Support {
	s = s.orDefault()
	o, err := s.Run(ctx, Command{Path: "/bin/sh", Args: []string{"sh", "-c", "exit 0"}, Dir: os.TempDir(), Output: io.Discard,
		Policy: Policy{Confine: true, DenyNetwork: true}})
	sup := s.Support()
	var tmpErr *TempDirError
	if errors.As(err, &tmpErr) {
		sup.TempProblem = tmpErr.Error()
		return sup
	}
	if err != nil && sup.Landlock {
		sup.Landlock, sup.LandlockNetwork = false, false
		sup.LandlockProblem = fmt.Sprintf("a sandboxed command failed to start: %v", err)
	} else if err == nil && sup.Landlock && !o.Confined {
		sup.Landlock, sup.LandlockProblem = false, o.Unconfined
	}
	return sup
}

// Describe is one line for people: what commands get here.
func (sup Support) Describe() string {
	var b strings.Builder
	if sup.Landlock {
		fmt.Fprintf(&b, "Landlock ABI %d: read-only and write-set confinement of commands", sup.LandlockABI)
		if sup.LandlockNetwork {
			b.WriteString(", network denial")
		}
	} else {
		fmt.Fprintf(&b, "no kernel sandbox for commands (%s): read-only agents cannot run commands, writers' commands are not confined and are checked only after the fact", sup.LandlockProblem)
	}
	if sup.TempProblem != "" {
		fmt.Fprintf(&b, "; but no confined command can start: %s", sup.TempProblem)
	}
	if sup.Contain == "pid-namespace" {
		b.WriteString("; every process a command starts ends with it (PID namespace)")
	} else {
		fmt.Fprintf(&b, "; commands end with their process group only (%s): a process that leaves its group can outlive its command", sup.ContainProblem)
	}
	return b.String()
}

// Command is one command to run.
type Command struct {
	// Path and Args are as in exec.Command: Args[0] is the program's name.
	Path string
	Args []string
	Dir  string
	// Output receives stdout and stderr together; stdin is /dev/null.
	Output io.Writer
	Policy Policy
	// WaitDelay bounds how long the output may stay open after the
	// command ended (exec.Cmd.WaitDelay).
	WaitDelay time.Duration
}

// Outcome is how a command ran.
type Outcome struct {
	// State is the command's exit state; nil when it did not start.
	State *os.ProcessState
	// Confined is true when the kernel held the command to its policy;
	// false for a policy that restricts nothing, or when the kernel could
	// not (then Unconfined says why).
	Confined   bool
	Unconfined string
}

// Run runs c and waits for it and for everything it started. Cancelling
// ctx kills all of them. An error means the command could not be started
// (its Outcome.State is nil) or ended abnormally, as exec.Cmd.Run says.
func (s *Sandbox) Run(ctx context.Context, c Command) (Outcome, error) {
	s = s.orDefault()
	base := s.base
	if base == nil {
		base = os.Environ()
	}
	env := FilterEnv(base, append(append([]string{}, DefaultEnv...), s.cfg.Env...), s.deny)
	env = setEnv(env, c.Policy.Env...)
	p := c.Policy
	if p.Confine {
		tmp, err := os.MkdirTemp("", "pixir-cmd-")
		if err != nil {
			return Outcome{}, &TempDirError{Dir: os.TempDir(), Err: err}
		}
		defer os.RemoveAll(tmp)
		env = setEnv(env, "TMPDIR="+tmp)
		p.Writable = append(append([]string{tmp}, p.Writable...), s.extraWritable()...)
		env, p.Writable = goCacheFor(env, p.Writable, ProjectGoCache(s.goCache, p.Project))
	}
	newCmd := func() *exec.Cmd {
		cmd := exec.CommandContext(ctx, c.Path, c.Args[1:]...)
		cmd.Args = c.Args
		cmd.Dir = c.Dir
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = c.Output, c.Output
		cmd.WaitDelay = c.WaitDelay
		return cmd
	}
	return s.run(newCmd, p)
}

func (s *Sandbox) extraWritable() []string {
	var out []string
	for _, w := range s.cfg.Writable {
		w = expandHome(w)
		if _, err := os.Stat(w); err == nil {
			out = append(out, w)
		}
	}
	return out
}

// landlockOn reports whether the configuration allows Landlock.
func (s *Sandbox) landlockOn() bool { return s.cfg.Landlock == nil || *s.cfg.Landlock }

// kernel is what the probe found, once per process.
type kernel struct {
	landlockABI     int
	landlockProblem string
}

var probeKernel = sync.OnceValue(detectKernel)
