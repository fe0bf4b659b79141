// Package agents is the agent registry: the kinds of child worker a
// Subagent can run as. It knows three general built-in agents (default,
// worker, explorer), the five roles of the multi-agent practice (check,
// simplify, test, make, pm: agent files of this package, roles/*.toml,
// read by the same strict loader as a user's), and loads custom ones from TOML files, one agent per file, in
// four folders searched in this order of precedence:
//
//	<project>/.pixir/agents
//	<project>/.codex/agents
//	<home>/.pixir/agents
//	<home>/.codex/agents
//
// and then the built-ins. In each folder every *.toml file is read, in the
// order of the file names; other files are ignored with a warning (and
// files whose name starts with a dot silently); subfolders are not
// searched. A missing folder is not an error.
//
// # File format
//
//	name = "reviewer"                  # required
//	description = "Reviews a diff."    # required: when to use it
//	developer_instructions = """       # required: the child's instructions
//	Review the change for correctness…
//	"""
//	model = "gpt-5"                    # optional: the model of its children
//	model_reasoning_effort = "high"    # optional: none minimal low medium high xhigh
//	sandbox_mode = "read-only"         # optional: read-only workspace-write danger-full-access
//	network = "deny"                   # optional: allow (the default) or deny
//	allowed_mcp_servers = ["docs"]     # optional: the session's MCP servers it may use ([] none)
//	tools = ["read", "grep", "glob"]   # optional: the only tools its children are offered
//	write_set = ["docs/**"]            # optional: the only files its children may change
//	shell = "read-only"                # optional: deny, read-only, write-set (the default),
//	                                   # or the only programs commands may run: ["go", "gofmt"]
//
// name is the name spawn_agent takes: it starts with a lowercase ASCII
// letter, continues with lowercase letters, digits, '-' or '_', and is at
// most 64 characters long (see ValidName). The file's own name does not
// matter. sandbox_mode "read-only" narrows the child to Pixir's read_only
// permission mode; the other two values, and no value, inherit the
// parent's mode: an agent never widens it. network "deny" closes TCP
// (connect and bind, loopback included) to the child's commands, where the
// kernel's sandbox can (Landlock ABI 4 or later).
//
// tools, write_set and shell are the agent's profile (see Profile): each
// narrows what its children may do, and none widens the parent's mode. A
// workflow step combines its own declarations with its agent's profile,
// and the narrower wins.
//
// Decoding is strict: an unknown key or a value of the wrong type is an
// error with the file, line and column. A few keys that Codex defines for
// its agent files but Pixir does not use (nickname_candidates, mcp_servers,
// skills, web_search) are accepted and ignored with a warning, so a Codex
// agent in .codex/agents still loads.
//
// # Precedence and warnings
//
// When two files define the same name, the one found first wins (an
// earlier folder, or in the same folder the file name that sorts first),
// and the other is reported as a Warning naming both files. A custom agent
// named like a built-in overrides it, also with a warning.
//
// # Broken files
//
// A file that cannot be read, decoded or validated is left out, and Load
// returns an error naming every broken file (a *FileError for each
// problem, joined with errors.Join) together with the registry of
// everything else, so that a listing can still show it. Callers decide
// whether a partial registry is good enough; it is never silent.
//
// A Registry is immutable and safe for concurrent use. Nothing in this
// package runs at program start.
package agents

import (
	"embed"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// SourceBuiltin is the Source of a built-in agent.
const SourceBuiltin = "built-in"

// Sandbox modes of an agent file. Only SandboxReadOnly changes anything: it
// narrows the child to the read_only permission mode.
const (
	SandboxReadOnly         = "read-only"
	SandboxWorkspaceWrite   = "workspace-write"
	SandboxDangerFullAccess = "danger-full-access"
)

// Network settings of an agent file.
const (
	NetworkAllow = "allow"
	NetworkDeny  = "deny"
)

// sandboxModes and reasoningEfforts are the values a file may use, in the
// order error messages list them.
var (
	sandboxModes     = []string{SandboxReadOnly, SandboxWorkspaceWrite, SandboxDangerFullAccess}
	networkSettings  = []string{NetworkAllow, NetworkDeny}
	reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}
)

// Agent is a kind of child worker a Subagent runs as.
type Agent struct {
	// Name is what spawn_agent's agent argument names.
	Name string
	// Description says what the agent is for; the parent model reads it
	// to choose one.
	Description string
	// DeveloperInstructions are given to the child before its task.
	DeveloperInstructions string
	// Model and ModelReasoningEffort, when set, ask for a model and a
	// reasoning effort other than the parent's.
	Model                string
	ModelReasoningEffort string
	// SandboxMode is "" (inherit), "read-only", "workspace-write" or
	// "danger-full-access". Only "read-only" has an effect (see ReadOnly).
	SandboxMode string
	// Network is "" or "allow" (commands may use the network) or "deny".
	Network string
	// AllowedMCPServers, when not nil, are the only MCP servers of the
	// parent's session its children may use (allowed_mcp_servers; [] for
	// none). A name the session does not have is passed over: the file
	// serves every session, and not all have the same servers.
	AllowedMCPServers []string
	// Profile is what its children may do: tools, write set, shell.
	Profile Profile
	// Source is SourceBuiltin or the path of the file the agent came from.
	Source string
}

// ReadOnly reports whether the agent narrows its children to the
// read_only permission mode (sandbox_mode = "read-only"). Any other sandbox
// mode inherits the parent's permission mode; an agent never widens it.
func (a Agent) ReadOnly() bool { return a.SandboxMode == SandboxReadOnly }

// DenyNetwork reports whether the agent's commands may not use the network
// (network = "deny").
func (a Agent) DenyNetwork() bool { return a.Network == NetworkDeny }

// Builtin reports whether the agent is one of Builtins.
func (a Agent) Builtin() bool { return a.Source == SourceBuiltin }

// Warning is something a user should see but that does not stop the
// agents from loading: a shadowed duplicate, an overridden built-in, an
// ignored file or key.
type Warning struct {
	// File is the file concerned: for a duplicate, the one that lost.
	File    string `json:"file"`
	Message string `json:"message"`
}

// String is "file: message".
func (w Warning) String() string {
	if w.File == "" {
		return w.Message
	}
	return w.File + ": " + w.Message
}

// FileError is one problem in an agent file. Line and Column are 1-based;
// zero when the problem has no place in the file (it cannot be read).
type FileError struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

// Error is "file:line:column: message", or "file: message" without a
// position.
func (e *FileError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
}

// Registry is the resolved set of agents of one project and user: each
// name once, the highest-precedence definition winning.
type Registry struct {
	agents   []Agent // sorted by name
	warnings []Warning
	// broken are the names whose highest-precedence file does not load:
	// no other definition (a built-in) stands in for it.
	broken map[string]*brokenAgent
}

// brokenAgent is the file of an agent that does not load, and why.
type brokenAgent struct {
	file string
	errs []error
}

// Broken returns, for an agent whose file does not load, an error naming
// the file and every problem of it; nil for any other name. Get does not
// find such an agent.
func (r *Registry) Broken(name string) error {
	b := r.broken[name]
	if b == nil {
		return nil
	}
	problems := make([]string, len(b.errs))
	for i, err := range b.errs {
		problems[i] = err.Error()
	}
	return fmt.Errorf("agent %q is defined by %s, which does not load: %s", name, b.file, strings.Join(problems, "; "))
}

// BrokenNames are the names of the agents whose file does not load (a
// file's name when what it defines cannot be read), sorted.
func (r *Registry) BrokenNames() []string {
	return slices.Sorted(maps.Keys(r.broken))
}

// Get returns the agent called name.
func (r *Registry) Get(name string) (Agent, bool) {
	i, ok := slices.BinarySearchFunc(r.agents, name, func(a Agent, n string) int {
		switch {
		case a.Name < n:
			return -1
		case a.Name > n:
			return 1
		}
		return 0
	})
	if !ok {
		return Agent{}, false
	}
	return r.agents[i], true
}

// All returns every agent, sorted by name. The slice is a copy.
func (r *Registry) All() []Agent { return slices.Clone(r.agents) }

// Names returns the name of every agent, sorted.
func (r *Registry) Names() []string {
	names := make([]string, len(r.agents))
	for i, a := range r.agents {
		names[i] = a.Name
	}
	return names
}

// Warnings returns what the user should see about the agent files, in the
// order the files were read. The slice is a copy.
func (r *Registry) Warnings() []Warning { return slices.Clone(r.warnings) }

// Builtins returns the built-in agents: default, worker and explorer, then
// the practice's roles check, simplify, test, make and pm, in that order.
// Each call returns a new slice.
func Builtins() []Agent { return slices.Clone(builtins()) }

// roleNames are the practice's roles, in the order Builtins lists them:
// each is roles/<name>.toml.
var roleNames = []string{"check", "simplify", "test", "make", "pm"}

//go:embed roles/*.toml
var roleFiles embed.FS

// builtins are read once, on first use (nothing runs at program start). A
// role file that does not load is a bug of this package, which its tests
// catch.
var builtins = sync.OnceValue(func() []Agent {
	all := generalBuiltins()
	for _, name := range roleNames {
		path := "roles/" + name + ".toml"
		data, err := roleFiles.ReadFile(path)
		if err != nil {
			panic(err)
		}
		a, _, errs := readAgent(path, data)
		if len(errs) > 0 {
			panic(fmt.Sprintf("built-in role %s: %v", name, errs))
		}
		a.Source = SourceBuiltin
		all = append(all, a)
	}
	return all
})

func generalBuiltins() []Agent {
	return []Agent{
		{
			Name:        "default",
			Description: "General-purpose child worker: takes one bounded task, does it with the tools it has, and reports back concisely. Use it when no more specific agent fits.",
			DeveloperInstructions: `You are a subagent: a child worker started by a parent agent for one bounded task.
- Do exactly the task you were given; do not widen its scope. If it is ambiguous, choose the most reasonable reading and say which one you chose.
- Work in your own workspace with the tools you have. Read before you change; keep changes minimal and consistent with the code around them.
- Check your work where you can (build, tests, re-reading the result).
- Your final message is all the parent sees: start with the outcome in one or two sentences, then the evidence (files and lines, commands and their results), then anything left undone or uncertain. Do not paste whole files or long logs.`,
			Profile: Profile{Shell: ShellWriteSet},
			Source:  SourceBuiltin,
		},
		{
			Name:        "worker",
			Description: "Execution-focused worker for implementation and fixes: makes a specified change, verifies it with builds or tests, and reports exactly what it changed.",
			DeveloperInstructions: `You are a worker subagent: you implement a change or fix a problem the parent has specified.
- Start by reading the code you will touch and the tests that cover it. Confirm the problem (reproduce a bug) before you fix it.
- Make the smallest complete change that does the task: no unrelated refactoring, no new dependencies unless the task asks for them. Follow the style of the surrounding code.
- Verify: build, run the relevant tests, and add or update a test when the change is testable. If something fails, fix it or report it; never claim success you have not seen.
- Report: what you changed (each file and why), how you verified it (commands and results), and anything left open. Keep it short; the parent can read the files.`,
			Profile: Profile{Shell: ShellWriteSet},
			Source:  SourceBuiltin,
		},
		{
			Name:        "explorer",
			Description: "Read-heavy evidence gatherer: searches and reads the workspace to answer a question and reports findings with file and line references. Changes nothing (read-only).",
			DeveloperInstructions: `You are an explorer subagent: you gather evidence to answer the parent's question. You run read-only: tools that change files are refused, and commands (tests, searches) run in a read-only sandbox where the system has one and are refused where it has none; do not try to change anything.
- Search first (grep, glob), then read the relevant parts (read with offset and limit). Follow definitions and call sites until you can answer with confidence.
- Be precise: cite every claim with a path and line numbers, and quote the few lines that matter.
- Separate what you found from what you infer, and say what you could not find or check.
- Report: a direct answer first, then the evidence as a short list of path:line references with one line each on why it matters. No speculation presented as fact; no long excerpts.`,
			SandboxMode: SandboxReadOnly,
			Profile:     Profile{Shell: ShellWriteSet},
			Source:      SourceBuiltin,
		},
	}
}

// ValidName reports whether name is a valid agent name: a lowercase ASCII
// letter, then lowercase letters, digits, '-' or '_', 64 characters at most.
func ValidName(name string) bool {
	if name == "" || len(name) > maxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z':
		case i > 0 && (c >= '0' && c <= '9' || c == '-' || c == '_'):
		default:
			return false
		}
	}
	return true
}

const maxNameLen = 64
