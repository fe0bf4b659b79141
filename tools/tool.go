// Package tools defines what a Tool is to Pixir: a name, a description the
// model reads, a JSON Schema generated from a Go argument type, a posture,
// a dry run, and a run. Arguments are validated against the schema before a
// tool sees them. Failures the model should read are Results with ok=false;
// Go errors are kept for faults of the runtime itself.
package tools

import (
	"context"
	"encoding/json"

	"github.com/pixir-go/pixir/sandbox"
)

// Posture says whether a tool changes anything. Permission modes act on it.
type Posture string

const (
	PostureRead     Posture = "read"
	PostureMutation Posture = "mutation"
)

// Kind is the ACP ToolKind an editor uses to pick an icon.
type Kind string

const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindDelete  Kind = "delete"
	KindMove    Kind = "move"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindThink   Kind = "think"
	KindFetch   Kind = "fetch"
	KindOther   Kind = "other"
)

// Workspace confines paths to the session's workspace. Resolve turns a path
// the model gave (relative to Root, or absolute) into an absolute path inside
// Root, or fails with a permission_denied *Failure.
type Workspace interface {
	Root() string
	Resolve(path string) (string, error)
}

// Env is what a tool runs against.
type Env struct {
	SessionID string
	// ToolCallID is the id of the call being run.
	ToolCallID string
	Workspace  Workspace
	// Files reads and writes; always set by the runtime.
	Files Files
	// Terminals, when set, runs commands in the editor's terminals;
	// otherwise bash runs them itself.
	Terminals Terminals
	// Subagents runs child workers for the agent tools.
	Subagents Subagents
	// Sandbox runs commands (bash); nil runs them with the default
	// configuration.
	Sandbox *sandbox.Sandbox
	// Commands is the sandbox policy of this call's commands, which the
	// runtime derives from the session's posture: read-only, the write
	// set's directories, the network.
	Commands sandbox.Policy
	// SandboxNotice, when set, is said once to the user and the model in
	// the result of a command: the policy asked the kernel for
	// confinement that it cannot give.
	SandboxNotice string
	// Seen, when set, is what the session's model has seen of each file:
	// write refuses to replace a file it has not seen as it is now.
	Seen SeenFiles
	// Progress, when set, shows the user how a long call is going (an MCP
	// server's progress notifications). It is called on the goroutine
	// that runs the tool.
	Progress func(message string)
}

// Sandboxed is implemented by mutation tools whose every effect goes
// through a command the sandbox confines (bash): in read_only mode the
// runtime may run them under a read-only Commands policy instead of
// refusing them, when the kernel can hold them to it.
type Sandboxed interface {
	Tool
	SandboxedCommands()
}

// DiffPreviewed is implemented by mutation tools whose dry run returns the
// diffs of what they would change: in ask mode the runtime shows those
// diffs in the permission question, so the user sees the change before
// allowing it (merge_agent).
type DiffPreviewed interface {
	Tool
	PreviewsDiffs()
}

// ArgumentsChecked is a tool that can check a call's arguments against its
// schema without running it: in ask mode the runtime refuses a call they
// do not fit (invalid_args) before asking the user about it.
type ArgumentsChecked interface {
	Tool
	CheckArguments(args json.RawMessage) *Failure
}

// Location is a file (and line) a tool call touches.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// Presentation is how a call is shown to a person before it runs.
type Presentation struct {
	Title     string
	Kind      Kind
	Locations []Location
	// Note is what a person asked to allow the call should also know: for
	// an MCP tool, that Pixir's workspace confinement does not bind it.
	Note string
	// Command is the shell command the call runs, whole, for a person
	// asked to allow it (the title shows only its first line).
	Command string
}

// Diff is a whole-file change an edit made, shown as a diff by editors.
type Diff struct {
	Path    string
	OldText *string // nil for a new file
	NewText string
}

// Result is the outcome of a tool call. Its JSON is the envelope the model
// reads: {"ok":true,"output":…} or {"ok":false,"error":{kind,message,details}}.
type Result struct {
	OK     bool     `json:"ok"`
	Output any      `json:"output,omitempty"`
	Error  *Failure `json:"error,omitempty"`
	// Diffs, Locations and TerminalID are for the editor, not the model.
	Diffs     []Diff     `json:"-"`
	Locations []Location `json:"-"`
	// TerminalID names the editor terminal a command ran in.
	TerminalID string `json:"-"`
	// Plan, when set, replaces the plan shown to the user.
	Plan []PlanEntry `json:"-"`
	// Seen, when set, is what the model has now seen of a file (a read,
	// or the content its write or edit left): the runtime keeps it in
	// the session's SeenFiles and records it in the Log.
	Seen *Seen `json:"-"`
	// Blocks, when set, are shown to the user instead of the output: an
	// MCP tool's text, images, audio and resources, as it returned them.
	Blocks []Block `json:"-"`
}

// Block is a piece of a tool result shown to a person as it is (an ACP
// content block): text, image, audio, resource_link or resource. Data and
// Blob are base64.
type Block struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitempty"`
	Data        string `json:"data,omitempty"`
	Blob        string `json:"blob,omitempty"`
	MimeType    string `json:"mime_type,omitempty"`
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
}

// PlanEntry is one item of the agent's plan (ACP plan entries).
type PlanEntry struct {
	Content string `json:"content"`
	// Priority is high, medium or low.
	Priority string `json:"priority"`
	// Status is pending, in_progress or completed.
	Status string `json:"status"`
}

// Tool is one capability offered to the model.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON Schema (2020-12) of the arguments object. The
	// bytes may be shared: callers read them and never modify them.
	Schema() json.RawMessage
	Posture() Posture
	// Describe presents a call. args may be invalid; Describe must cope.
	Describe(args json.RawMessage) Presentation
	// DryRun validates args and says what Run would do, changing nothing.
	DryRun(ctx context.Context, env Env, args json.RawMessage) Result
	// Run validates args and does the work.
	Run(ctx context.Context, env Env, args json.RawMessage) Result
}
