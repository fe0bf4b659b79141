package workflows

import (
	"context"
	"time"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/tools"
)

// The seam between workflows and the runtime: what a workflow needs from
// the runtime, declared here by its consumer and passed in explicitly
// (Ports). Workflows never start Sessions themselves (ADR 0012): every step
// is a Subagent of the runtime's Manager, under its max_threads, depth,
// time limits and lifecycle events.

// Ports are the runtime's side of one workflow: the runtime binds them to
// the parent session, the run_workflow call (if any) and whoever answers
// its children's permission questions, and hands them to Prepare. A dry
// run needs only Agents; a run needs all three.
type Ports struct {
	Agents   Agents
	Children Children
	Evidence Evidence
	// Merger brings ready isolated writers' changes into the workspace;
	// nil merges nothing (each such step says so).
	Merger Merger
	// Committer commits a completed run's work when its spec asks; nil
	// commits nothing (the outcome says so).
	Committer Committer
	// Budgets are the configuration's budgets for the run and its steps.
	Budgets Budgets
	// Templates finds the templates run_workflow {template, args} names;
	// nil: none.
	Templates Templates
}

// Agents resolves, before anything starts, the agent a step's child would
// run as: so a misspelt agent is an invalid spec instead of a failed step,
// and a spawn the Manager would refuse (depth) is refused before the first
// step runs. It exists apart from Children because a dry run resolves
// agents without a session.
type Agents interface {
	// CheckSpawn says whether the Manager would spawn this child, changing
	// nothing: nil, or the *tools.Failure the spawn would meet (not_found or
	// invalid_args for the agent or its MCP servers, permission_denied for
	// the depth).
	CheckSpawn(req tools.SpawnRequest) error
}

// AgentWriteSets is what an Agents may also say of the agent a child
// would run as: the write set of its profile, nil when it has none (the
// step's alone holds). A writer step none of whose files its agent may
// change is a mistake of the spec, found before anything starts.
type AgentWriteSets interface {
	AgentWriteSet(req tools.SpawnRequest) []string
}

// Children is the lifecycle of step children: the only way a workflow
// makes work happen.
type Children interface {
	// Start asks the Manager for the child of one step and returns as soon
	// as it is queued. The child's final view is sent on req.Ended exactly
	// once, when the run Start started is over, whatever ended it
	// (completed, failed, timed out, cancelled), after its end is in the
	// parent's Log; the view has the ID Start returned. The send does not
	// wait for a reader: Ended must have room for it.
	Start(ctx context.Context, req StepRequest) (tools.SubagentView, error)
	// Stop cancels a queued or running child and returns once its end has
	// been sent on its Ended channel. Stopping an ended or unknown child
	// does nothing.
	Stop(id string)
}

// Evidence is the parent's Log and plan: where a run's decisions become
// evidence, and where resume_from finds an earlier run's.
type Evidence interface {
	// Record appends a workflow_event with this data to the parent's Log
	// (canonical) and shows it to whoever watches the parent.
	Record(data WorkflowEvent) error
	// ShowPlan replaces the plan the user sees (ephemeral).
	ShowPlan(entries []tools.PlanEntry)
	// WorkflowEvents returns the data of every workflow_event in the
	// parent's Log, in order.
	WorkflowEvents() ([]WorkflowEvent, error)
}

// ChildEnds is what an Evidence may tell besides: the children whose end
// the parent's Log records, by subagent id. resume_from reads it to find a
// shared writer that ended before its checkpoint was decided.
type ChildEnds interface {
	ChildEnds() (map[string]tools.SubagentStatus, error)
}

// StepRequest is one step's child as the Manager is asked for it.
type StepRequest struct {
	// Agent names the agent the child runs as ("" is default).
	Agent string
	// Task is the child's whole prompt: the step's task, its dependencies'
	// checkpoint bundles, and how to report its own checkpoint.
	Task string
	// Name labels the child for people (the step id).
	Name string
	// WorkspaceMode is isolated or shared.
	WorkspaceMode string
	// ReadOnly runs the child's session in read_only mode whatever the
	// parent's mode: a read_only step must not write.
	ReadOnly bool
	// Timeout is the child's time limit, counted from its start.
	Timeout time.Duration
	// Tools are offered to the child in addition to the built-in tools
	// (report_checkpoint, bound to this step).
	Tools []tools.Tool
	// MayWrite, when set, says whether the child may write the file at a
	// workspace-relative, slash-separated path: a writer's write_set,
	// enforced on every file the child's tools write (not on what a shell
	// command does). WriteSet names it in the refusal.
	MayWrite func(rel string) bool
	WriteSet []string
	// Inherit, for an isolated step, are the changes its ancestors made in
	// their own snapshots, in the order they were decided: copied into the
	// step's snapshot before it starts, so it works on its dependencies'
	// files. The user's workspace is never touched.
	Inherit []Inherited
	// Ended receives the child's final view (see Children.Start).
	Ended chan<- tools.SubagentView
	// MCPServers, when not nil, are the only MCP servers of the parent's
	// the child may use (the step's allowed_mcp_servers).
	MCPServers []string
	// Account is the run's budget: the child's model calls are charged to
	// it (after the child's own), and refused once it is spent; so is
	// Start.
	Account *budget.Account
	// Scheduled, when set, is the run's step_scheduled event: Start sets
	// its SubagentID and writes it to the parent's Log in one append with
	// the child's queued event, before the child can start, so the Log
	// holds both or neither, in that order. The append's failure goes in
	// its Err (the child is queued all the same, as when a lone event's
	// write fails).
	Scheduled *Scheduled
}

// Scheduled is a run's step_scheduled event as Children.Start writes it
// (StepRequest.Scheduled).
type Scheduled struct {
	Event WorkflowEvent
	Err   error
}

// Inherited is one ancestor's work a step's snapshot starts with.
type Inherited struct {
	StepID string
	// Workspace is the ancestor's snapshot, Changes what it did there.
	Workspace string
	Changes   tools.FileChanges
}

// Merger brings a step child's changes from its snapshot into the
// workspace as it is now (merge-back), three-way against what the
// snapshot was taken from. The runtime asks the user first in ask mode,
// refuses in read_only, and writes through the editor when it can.
type Merger interface {
	// Merge merges the changes of the ended child req.AgentID and reports
	// what it did: merged, conflicted (the conflicting files are left as
	// they are) or not_merged. An error is a merge that could not be
	// attempted (the snapshot is gone, the disk failed); nothing was
	// written then, or a journal in .pixir/merges finishes it.
	Merge(ctx context.Context, req MergeRequest) (tools.MergeReport, error)
}

// MergeRequest is one step's merge-back.
type MergeRequest struct {
	// StepID names the step (in conflict markers and questions).
	StepID string
	// AgentID is the step's child.
	AgentID string
}
