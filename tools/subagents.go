package tools

import (
	"context"
	"time"

	"github.com/pixir-go/pixir/budget"
)

// Subagents is what the agent tools (spawn_agent, wait_agent, send_input,
// close_agent, list_agents) drive: the runtime's Subagents Manager, bound to
// the session and tool call that use it. Its methods return a *Failure (with
// its kind) for what the model should read.
type Subagents interface {
	Spawn(ctx context.Context, req SpawnRequest) (SubagentView, error)
	Wait(ctx context.Context, req WaitRequest) (WaitOutcome, error)
	SendInput(ctx context.Context, id, message string) (SubagentView, error)
	Close(ctx context.Context, id string) (SubagentView, error)
	List(ctx context.Context) ([]SubagentView, error)
	// Preview says what Spawn would do, changing nothing (dry runs).
	Preview(req SpawnRequest) (SubagentView, error)
	// Merge brings an ended isolated child's changes into the workspace,
	// or with dryRun reports what it would do, writing nothing.
	Merge(ctx context.Context, id string, dryRun bool) (MergeReport, error)
}

// SpawnRequest asks for a child worker.
type SpawnRequest struct {
	Agent         string
	Task          string
	WorkspaceMode string // isolated or shared; "" is isolated for a child that may write, shared for a read-only one
	Timeout       time.Duration
	// MCPServers, when not nil, narrows the parent's MCP servers the child
	// may use to these names (a workflow step's allowed_mcp_servers); each
	// must be one of the parent's.
	MCPServers []string
	// ForkContext starts the child from a fork of its parent's
	// conversation so far, not from the task alone.
	ForkContext bool
}

// WaitRequest waits for children: the ids given, or every child of the
// session; until all (or, with Any, the first) reach a terminal status, or
// Timeout passes. A zero Timeout polls. With Default, the model gave no
// timeout: the wait lasts the configuration's default, and no longer than
// the children's own deadlines.
type WaitRequest struct {
	IDs     []string
	Any     bool
	Timeout time.Duration
	Default bool
}

// WaitOutcome is what a wait saw. Incomplete means the horizon came first:
// an outcome, not an error, and the children go on running.
type WaitOutcome struct {
	Incomplete bool           `json:"incomplete"`
	Agents     []SubagentView `json:"agents"`
	Finished   []string       `json:"finished"`
	Pending    []string       `json:"pending"`
}

// SubagentStatus is where a child worker is in its lifecycle: the status of
// SubagentView and of every subagent_event (ADR 0011). A workflow step's
// subagent_status is one of these too, or SubagentNotStarted. Compare
// statuses with these constants, never with string literals.
type SubagentStatus string

const (
	SubagentQueued    SubagentStatus = "queued"
	SubagentRunning   SubagentStatus = "running"
	SubagentCompleted SubagentStatus = "completed"
	SubagentFailed    SubagentStatus = "failed"
	SubagentTimedOut  SubagentStatus = "timed_out"
	SubagentCancelled SubagentStatus = "cancelled"
	// SubagentDetached: rebuilt from the Log of an earlier process that
	// ended before the child did; nothing says it finished.
	SubagentDetached SubagentStatus = "detached"
	SubagentClosed   SubagentStatus = "closed"
	// SubagentNotStarted is the status of a child that does not exist yet:
	// a spawn's dry run, or a workflow step that never got one.
	SubagentNotStarted SubagentStatus = "not_started"
)

// Ended reports whether the status is final for the current run: neither
// queued nor running.
func (s SubagentStatus) Ended() bool { return s != SubagentQueued && s != SubagentRunning }

// SubagentEvent names a subagent_event (its data.event): what just
// happened to a child, recorded in its parent's Log.
type SubagentEvent string

const (
	SubagentEventQueued    SubagentEvent = "queued"
	SubagentEventStarted   SubagentEvent = "started"
	SubagentEventInput     SubagentEvent = "input" // a later run, started by send_input
	SubagentEventFinished  SubagentEvent = "finished"
	SubagentEventFailed    SubagentEvent = "failed"
	SubagentEventTimedOut  SubagentEvent = "timed_out"
	SubagentEventCancelled SubagentEvent = "cancelled"
	SubagentEventClosed    SubagentEvent = "closed"
)

// SubagentView is a child worker as the model and the user see it.
type SubagentView struct {
	ID             string         `json:"id"`
	Agent          string         `json:"agent"`
	Task           string         `json:"task"`
	Status         SubagentStatus `json:"status"`
	Summary        string         `json:"summary,omitempty"`
	Error          *Failure       `json:"error,omitempty"`
	Depth          int            `json:"depth"`
	Workspace      string         `json:"workspace"`
	WorkspaceMode  string         `json:"workspace_mode"`
	ChildSessionID string         `json:"child_session_id"`
	ElapsedMS      int64          `json:"elapsed_ms"`
	Changes        *FileChanges   `json:"changes,omitempty"`
	// Usage is what the child's model calls spent (its own children's
	// included), all its runs together.
	Usage *budget.Usage `json:"usage,omitempty"`
	// WriteSetViolation, when set, says the child changed files outside
	// what it may write: its run failed for it, and its changes must not
	// be merged into the workspace.
	WriteSetViolation *WriteSetViolation `json:"write_set_violation,omitempty"`
	// DeniedChanges counts the child's mutating tool calls the user was
	// asked about and refused (ask mode), all its runs together.
	DeniedChanges int `json:"denied_changes,omitempty"`
}

// WriteSetViolationCode names a write-set violation in a Failure's message
// and Details.
const WriteSetViolationCode = "write_set_violation"

// WriteSetViolation is the after-the-fact check of a child's changes
// against what it may write: a workflow step's write_set and its agent's,
// each of which must allow a path.
type WriteSetViolation struct {
	// Code is WriteSetViolationCode.
	Code string `json:"code"`
	// WriteSets are the patterns the child was held to: one list per
	// source (the step's, the agent's), every list must match.
	WriteSets [][]string `json:"write_sets"`
	// Paths are the changed files (added, changed or deleted) that no
	// write set allows: workspace-relative, slash-separated, sorted.
	Paths []string `json:"paths"`
	// Workspace is isolated or shared. An isolated child's out-of-set
	// changes stay in its snapshot and are never merged; a shared child's
	// are in the workspace and are reported, not reverted.
	Workspace string `json:"workspace"`
}

// FileChanges lists what a child in an isolated workspace added, changed and
// deleted relative to its snapshot, and the files whose permission bits
// alone changed (Mode), workspace-relative.
type FileChanges struct {
	Added   []string `json:"added"`
	Changed []string `json:"changed"`
	Deleted []string `json:"deleted"`
	Mode    []string `json:"mode,omitempty"`
}

// Empty reports whether nothing changed.
func (c FileChanges) Empty() bool {
	return len(c.Added) == 0 && len(c.Changed) == 0 && len(c.Deleted) == 0 && len(c.Mode) == 0
}

// subagents is env.Subagents or a failure saying why there is none.
func subagents(env Env) (Subagents, *Failure) {
	if env.Subagents == nil {
		return nil, &Failure{Kind: ErrInternal, Message: "this session cannot run subagents; this is a bug in Pixir"}
	}
	return env.Subagents, nil
}

// subagentResult turns a Manager answer into a tool result.
func subagentResult(out any, err error) Result {
	if err != nil {
		return Failed(AsFailure(err))
	}
	return OK(out)
}
