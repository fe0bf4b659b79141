package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pixir-go/pixir/sandbox"
)

// childCommands is what a Subagent's commands are held to, beside its
// permission mode: where they may write, what stays read-only, which
// programs they may start, whether they may use the network.
type childCommands struct {
	// writable are absolute paths in the child's workspace its commands
	// may write beneath; nil is the whole workspace, empty is nowhere.
	writable []string
	// readOnly: its agent's shell is read-only, whatever it may write
	// with its file tools.
	readOnly bool
	// protected are the parent's .git and .pixir: never writable from a
	// child, whatever its write set.
	protected []string
	// execute, when not nil, are the only files its commands may execute
	// (its agent's shell = [...], resolved).
	execute []string
	// denyNetwork closes TCP to the child's commands.
	denyNetwork bool
	// env is set for the child's commands (GIT_CEILING_DIRECTORIES).
	env []string
	// workspace is the folder writable is made for (the parent's, or the
	// child's snapshot): no link below it is followed to open a root.
	workspace string
}

// newChildCommands derives a child's command policy from its spawn: its
// workspace (the parent's, or a snapshot), the parent's workspace, what it
// may write and its agent.
func newChildCommands(workspace, parentRoot string, limit writeLimit, spec AgentSpec) *childCommands {
	c := &childCommands{
		protected:   []string{filepath.Join(parentRoot, ".git"), filepath.Join(parentRoot, StateDir)},
		denyNetwork: spec.DenyNetwork,
		readOnly:    spec.Profile.Shell == ShellReadOnly,
		writable:    limit.roots(workspace),
		workspace:   workspace,
	}
	if spec.Profile.Commands != nil {
		// The shell itself must start (bash runs commands with bash, or
		// sh where there is none); a program not installed is simply not
		// allowed.
		c.execute, _ = sandbox.Programs(os.Getenv("PATH"), append(slices.Clone(spec.Profile.Commands), "bash", "sh"))
		if c.execute == nil {
			c.execute = []string{}
		}
	}
	if workspace != parentRoot {
		// A snapshot lives inside the parent's workspace: git run there
		// must not climb up to the parent's repository.
		c.env = []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(workspace)}
	}
	return c
}

// within holds c also to what its parent's commands are held to (nil for
// a user's session): a child never gets the network, a writable shell or a
// program its parent's commands did not have.
func (c *childCommands) within(parent *childCommands) *childCommands {
	if parent == nil {
		return c
	}
	c.denyNetwork = c.denyNetwork || parent.denyNetwork
	c.readOnly = c.readOnly || parent.readOnly
	switch {
	case parent.execute == nil:
	case c.execute == nil:
		c.execute = parent.execute
	default:
		c.execute = slices.DeleteFunc(c.execute, func(f string) bool { return !slices.Contains(parent.execute, f) })
	}
	return c
}

// writeRoots are the directories beneath which a write set's patterns can
// match: each pattern's leading components without a wildcard ("docs/**"
// is docs/, "src/*.go" is src/, "**/*_test.go" is the whole workspace). A
// pattern without wildcards is its file, or its directory while the file
// does not exist. Landlock works on directories: which files beneath them
// match is checked after the fact. Missing directories are made, so the
// kernel has something to allow.
//
// A root reached through a symbolic link in the workspace (the link
// itself, or a folder on the way) is left out: Landlock allows the
// directory the link leads to, which may be anywhere (a snapshot keeps
// the workspace's links as links), and the child would write there, not
// in its workspace. Its commands may not write there, as the file tools
// may not write through a link.
func writeRoots(workspace string, patterns []string) []string {
	roots := []string{}
	for _, p := range patterns {
		parts := strings.Split(filepath.ToSlash(filepath.Clean(p)), "/")
		n := 0
		for n < len(parts) && !strings.ContainsAny(parts[n], "*?[{\\") {
			n++
		}
		if linkOnTheWay(workspace, parts[:n]) {
			continue
		}
		root := filepath.Join(append([]string{workspace}, parts[:n]...)...)
		if n == len(parts) { // a literal path
			if info, err := os.Stat(root); err != nil || info.IsDir() {
				root = filepath.Dir(root)
			}
		} else if n > 0 {
			_ = os.MkdirAll(root, 0o755)
		}
		roots = append(roots, root)
	}
	return roots
}

// linkOnTheWay reports whether one of the components of rel (a pattern's
// leading ones), below workspace, is a symbolic link. The components
// that do not exist yet are made as folders, never links.
func linkOnTheWay(workspace string, rel []string) bool {
	path := workspace
	for _, c := range rel {
		if c == "." || c == "" {
			continue
		}
		path = filepath.Join(path, c)
		info, err := os.Lstat(path)
		if err != nil {
			return false
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// commandPolicy is the sandbox policy of this session's commands now. A
// read_only session's commands may write only their own temporary
// directory, and so may a Subagent's whose agent's shell is read-only; a
// Subagent's may write only beneath its write sets (or its workspace) and
// never the parent's .git or .pixir, and start only its agent's programs
// when it lists them; a user's session in
// auto or ask mode is not confined (the user trusts it with their
// machine), and its commands only get the allowlisted environment and end
// with it.
func (s *Session) commandPolicy() sandbox.Policy {
	readOnly := s.heldMode() == ModeReadOnly
	project := s.project
	if project == "" {
		project = s.workspace.Root()
	}
	c := s.commands
	if c == nil {
		return sandbox.Policy{Confine: readOnly, Project: project}
	}
	p := sandbox.Policy{Confine: true, DenyNetwork: c.denyNetwork, Env: c.env, Execute: c.execute, Project: project}
	if !readOnly && !c.readOnly {
		p.Protected = c.protected
		p.Writable = c.writable
		if p.Writable == nil {
			p.Writable = []string{s.workspace.Root()}
		}
		p.Workspace = c.workspace
	}
	return p
}

// sandboxSupport is what the kernel gives the runtime's sandbox.
func (r *Runtime) sandboxSupport() sandbox.Support { return r.cfg.Sandbox.Support() }

// sandboxNotice is said once per session, to the user and the model, when
// its commands should be confined and the kernel cannot do it; the log
// says it too. It is empty on every other call.
func (s *Session) sandboxNotice(p sandbox.Policy) string {
	if !p.Restricts() {
		return ""
	}
	sup := s.rt.sandboxSupport()
	if sup.Landlock && (!p.DenyNetwork || sup.LandlockNetwork) {
		return ""
	}
	s.mu.Lock()
	told := s.sandboxTold
	s.sandboxTold = true
	s.mu.Unlock()
	if told {
		return ""
	}
	msg := "commands of this session run without the kernel sandbox: " + sup.LandlockProblem
	if sup.Landlock {
		msg = "this kernel's Landlock cannot deny the network (ABI 4 is needed), so commands of this session keep it"
	}
	msg += "; writes are checked only after the fact (file tools and isolated snapshots)"
	s.rt.log.Warn("commands are not sandboxed", "session", s.ID(), "reason", msg)
	return "Pixir: " + msg + "."
}

// noteUnsandboxed logs, once per session, that a read-only session's
// commands are refused for want of a kernel sandbox; the refusal itself
// tells the user and the model.
func (s *Session) noteUnsandboxed(reason string) {
	s.mu.Lock()
	told := s.sandboxTold
	s.sandboxTold = true
	s.mu.Unlock()
	if !told {
		s.rt.log.Warn("commands are not sandboxed", "session", s.ID(), "reason", reason)
	}
}
