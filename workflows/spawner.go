package workflows

import (
	"context"
	"time"

	"github.com/pixir-go/pixir/tools"
)

// Spawner is what running a workflow needs from the runtime: the Subagents
// Manager, bound to the parent session and to the run_workflow tool call,
// plus the parent's Log and plan. Workflows never start Sessions
// themselves (ADR 0012): every step is a Subagent of the Manager, under its
// max_threads, depth, time limits and lifecycle events.
//
// The runtime's tools.Subagents binding implements it; run_workflow finds
// it by asserting env.Subagents to Spawner.
type Spawner interface {
	// Preview resolves a step's agent and checks the limits a spawn must
	// respect (depth), changing nothing; Validate-time errors for agents.
	Preview(req tools.SpawnRequest) (tools.SubagentView, error)
	// StartStep asks the Manager for the child of one step and returns as
	// soon as it is queued. ended is called exactly once, when the run
	// StartStep started is over, whatever ended it (completed, failed,
	// timed out, cancelled), after the end is in the parent's Log; the
	// view it gets is the child's final state. It is called from the
	// Manager's goroutine, or from StopStep's caller for a child stopped
	// before it started; it must not block for long, nor call StopStep.
	StartStep(ctx context.Context, req StepRequest, ended func(tools.SubagentView)) (tools.SubagentView, error)
	// StopStep cancels a queued or running child and returns once it has
	// ended (and its ended callback has returned). Stopping an ended or
	// unknown child does nothing.
	StopStep(id string)
	// RecordWorkflowEvent appends a workflow_event with this data to the
	// parent's Log (canonical) and shows it to whoever watches the parent.
	RecordWorkflowEvent(data WorkflowEvent) error
	// ShowPlan replaces the plan the user sees (ephemeral).
	ShowPlan(entries []tools.PlanEntry)
	// WorkflowEvents returns the data of every workflow_event in the
	// parent's Log, in order (for resume_from).
	WorkflowEvents() ([]WorkflowEvent, error)
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
}

// Inherited is one ancestor's work a step's snapshot starts with.
type Inherited struct {
	StepID string
	// Workspace is the ancestor's snapshot, Changes what it did there.
	Workspace string
	Changes   tools.FileChanges
}
