package workflows

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pixir-go/pixir/tools"
)

//go:embed run_workflow.md
var runWorkflowDescription string

// StepArgs is one step as the model writes it (Step, with prompt accepted
// as an alias of task).
type StepArgs struct {
	ID             string         `json:"id" jsonschema:"pattern=^[a-z][a-z0-9_-]{0\\,63}$" jsonschema_description:"Unique step id: a lowercase letter, then lowercase letters, digits, _ or -."`
	Task           string         `json:"task,omitempty" jsonschema_description:"The child's whole assignment; it sees nothing else of this conversation. (prompt is accepted as an alias.)"`
	Prompt         string         `json:"prompt,omitempty" jsonschema_description:"Alias of task."`
	Agent          string         `json:"agent,omitempty" jsonschema_description:"default, worker, explorer or a custom agent. Default: default."`
	DependsOn      []string       `json:"depends_on,omitempty" jsonschema_description:"Ids of the steps whose checkpoint_ready results this step needs; it starts only after all of them."`
	PermissionMode string         `json:"permission_mode,omitempty" jsonschema:"enum=read_only,enum=writer" jsonschema_description:"read_only (default unless write_set is given): reads and reports; writer: may change files."`
	ReadSet        []string       `json:"read_set,omitempty" jsonschema_description:"Path patterns (doublestar) the step reads. Default: everything."`
	WriteSet       []string       `json:"write_set,omitempty" jsonschema_description:"Path patterns a writer changes. Default for a writer: **/* (the whole workspace)."`
	WorkspaceMode  string         `json:"workspace_mode,omitempty" jsonschema:"enum=isolated,enum=shared" jsonschema_description:"isolated: a snapshot of the workspace (default for writers); shared: the workspace itself (default for read_only steps)."`
	TimeoutMS      int64          `json:"timeout_ms,omitempty" jsonschema:"minimum=1" jsonschema_description:"The step's time limit in milliseconds, from its start. Default 120000."`
	OutputSchema   map[string]any `json:"output_schema,omitempty" jsonschema_description:"A JSON Schema the step's typed result (report_checkpoint payload) must match; it is checkpoint_ready only with a matching payload."`
}

// RunWorkflowArgs are the arguments of run_workflow.
type RunWorkflowArgs struct {
	Name           string     `json:"name,omitempty" jsonschema_description:"A label for people."`
	Steps          []StepArgs `json:"steps" jsonschema:"minItems=1" jsonschema_description:"The steps. Among steps ready at the same time, the one with the longest chain of dependents starts first, then the earlier declared."`
	MaxConcurrency int        `json:"max_concurrency,omitempty" jsonschema:"minimum=1" jsonschema_description:"Most steps running at once. Default 6."`
	TimeoutMS      int64      `json:"timeout_ms,omitempty" jsonschema:"minimum=1" jsonschema_description:"Time limit of the whole workflow in milliseconds; at the limit running steps are stopped and the rest held. Default: none beyond each step's."`
	FailurePolicy  string     `json:"failure_policy,omitempty" jsonschema:"enum=keep_going,enum=fail_fast" jsonschema_description:"keep_going (default): independent steps go on when one fails; fail_fast: stop everything at the first step that is not checkpoint_ready."`
	DryRun         bool       `json:"dry_run,omitempty" jsonschema_description:"Validate and plan only: return the waves, conflicts and merge risks without starting anything."`
	ValidateOnly   bool       `json:"validate_only,omitempty" jsonschema_description:"Alias of dry_run."`
	ResumeFrom     string     `json:"resume_from,omitempty" jsonschema_description:"The workflow_id of an earlier run in this session: its checkpoint_ready steps (same id, task, agent, sets and dependencies, all of them reused too) are reused, not run again; only the rest runs. This is how to retry failed steps only."`
}

// DryRunOutcome is what a dry run of run_workflow returns.
type DryRunOutcome struct {
	Output string `json:"output"`
	Mode   string `json:"mode"` // dry_run
	DryRun
}

// RunWorkflowTool is run_workflow. It is a mutation (it starts Subagents):
// denied in read_only, asked in ask; its dry run is allowed everywhere.
func RunWorkflowTool() tools.Tool { return runWorkflow }

var runWorkflow = tools.Define(tools.Spec[RunWorkflowArgs]{
	Name:        "run_workflow",
	Description: runWorkflowDescription,
	Posture:     tools.PostureMutation,
	Kind:        tools.KindThink,
	Describe: func(a RunWorkflowArgs) tools.Presentation {
		title := fmt.Sprintf("Workflow of %d steps", len(a.Steps))
		if a.Name != "" {
			title = "Workflow " + a.Name + fmt.Sprintf(" (%d steps)", len(a.Steps))
		}
		if a.DryRun || a.ValidateOnly {
			title = "Plan: " + title
		}
		return tools.Presentation{Title: title}
	},
	Run: runWorkflowTool,
})

func runWorkflowTool(ctx context.Context, env tools.Env, a RunWorkflowArgs, dryRun bool) tools.Result {
	raw, err := json.Marshal(a)
	if err != nil {
		return tools.Fail(tools.ErrInternal, "re-encoding the arguments: %v", err)
	}
	w, err := Parse(raw)
	if err != nil {
		return tools.Failed(tools.AsFailure(err))
	}
	sp, _ := env.Subagents.(Spawner)
	if sp == nil {
		return tools.Fail(tools.ErrInternal, "this session cannot run workflows; this is a bug in Pixir")
	}
	if f := CheckAgents(sp.Preview, w); f != nil {
		return tools.Failed(f)
	}
	var reuse *Reuse
	if w.ResumeFrom != "" {
		events, err := sp.WorkflowEvents()
		if err != nil {
			return tools.Fail(tools.ErrInternal, "reading this session's Log for resume_from: %v", err)
		}
		if reuse, err = Reusable(events, w); err != nil {
			return tools.Failed(tools.AsFailure(err))
		}
	}
	if dryRun || w.DryRun {
		plan, err := Waves(w)
		if err != nil {
			return tools.Failed(tools.AsFailure(err))
		}
		return tools.OK(DryRunOutcome{Output: RenderPlan(&plan), Mode: "dry_run", DryRun: plan})
	}
	out := Run(ctx, sp, w, RunOptions{WorkflowID: NewWorkflowID(), ToolCallID: env.ToolCallID, Reuse: reuse})
	if out.Status == StatusCompleted {
		return tools.OK(out)
	}
	// Partial work is not success: the call is not ok, yet it is no tool
	// error either. The outcome is the output, for the model to act on.
	return tools.Result{OK: false, Output: out}
}

// CheckAgents resolves every step's agent with preview (a Spawner's
// Preview) before anything starts, so a misspelt agent is an invalid spec
// instead of a failed step, and a spawn the Manager would refuse (depth)
// is refused before the first step runs.
func CheckAgents(preview func(tools.SpawnRequest) (tools.SubagentView, error), w *Workflow) *tools.Failure {
	var problems []Problem
	seen := map[string]*tools.Failure{}
	for i := range w.Steps {
		st := &w.Steps[i]
		f, done := seen[st.Agent]
		if !done {
			if _, err := preview(tools.SpawnRequest{Agent: st.Agent, Task: st.Task, WorkspaceMode: string(st.WorkspaceMode)}); err != nil {
				f = tools.AsFailure(err)
			}
			seen[st.Agent] = f
		}
		if f == nil {
			continue
		}
		if f.Kind != tools.ErrNotFound && f.Kind != tools.ErrInvalidArgs {
			return f // depth or shutdown: not a problem of the spec
		}
		idx := i
		problems = append(problems, Problem{Code: "unknown_agent", Index: &idx, Step: st.ID, Field: "agent", Value: st.Agent,
			Message: fmt.Sprintf("steps[%d] %q: %s", i, st.ID, f.Message)})
	}
	if len(problems) == 0 {
		return nil
	}
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = p.Message
	}
	return &tools.Failure{Kind: tools.ErrInvalidArgs, Message: strings.Join(lines, "\n"), Details: ValidationDetails{Problems: problems}}
}

// RenderPlan is a dry run as a person reads it.
func RenderPlan(p *DryRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Dry run: %d steps in %d waves (max_concurrency %d, %s); nothing was started.\n",
		len(p.Steps), len(p.Waves), p.MaxConcurrency, p.FailurePolicy)
	for i, wave := range p.Waves {
		fmt.Fprintf(&b, "\nWave %d: %s", i+1, strings.Join(wave, ", "))
	}
	b.WriteString("\n\n| step | posture | workspace | depends on | writes |\n|---|---|---|---|---|\n")
	for _, s := range p.Steps {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", s.ID, s.Posture, s.WorkspaceMode,
			orDash(s.DependsOn), orDash(s.WriteSet))
	}
	if len(p.Serialized) > 0 {
		b.WriteString("\nSerialized:\n")
		for _, s := range p.Serialized {
			fmt.Fprintf(&b, "- wave %d: %s\n", s.Wave, s.Reason)
		}
	}
	if len(p.MergeRisks) > 0 {
		b.WriteString("\nMerge risks:\n")
		for _, m := range p.MergeRisks {
			fmt.Fprintf(&b, "- %s\n", m.Reason)
		}
	}
	return b.String()
}

func orDash(xs []string) string {
	if len(xs) == 0 {
		return "–"
	}
	return strings.Join(xs, ", ")
}

// Tools are this package's tools, for catalogues and schemas:
// run_workflow, which every session offers, and report_checkpoint, which
// only a step's child is offered (bound to its step by Run; a session
// registry must not hold it, or the bound one would be shadowed).
func Tools() []tools.Tool { return []tools.Tool{runWorkflow, reportCheckpoint} }
