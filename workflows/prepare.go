package workflows

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/pixir-go/pixir/tools"
)

// The workflow use case. Whichever way a workflow comes in (the
// run_workflow tool, pixir run and pixir resume --workflow, the smoke
// surfaces), it goes through the same three moves:
//
//	Prepare   check the spec once, resolve every step's agent, find what
//	          resume_from reuses;
//	DryRun    plan it, starting nothing; or
//	Run       run it through the runtime's ports.

// Prepared is a workflow the use case accepted: checked, its agents
// resolved, its reuse (resume_from) found. Only a Prepared workflow dry-runs
// or runs.
type Prepared struct {
	w     *Workflow
	ports Ports
	reuse *Reuse
}

// Prepare checks w (Check: once, whoever checked it before) and resolves
// every step's agent through ports.Agents before anything starts, every
// problem of both reported at once, and, when w
// resumes an earlier run, finds in ports.Evidence the checkpoints it
// reuses. A problem of the spec is an invalid_args *tools.Failure; ports
// without Agents is a wiring bug, reported as internal.
func Prepare(w *Workflow, ports Ports) (*Prepared, error) {
	if ports.Agents == nil {
		return nil, &tools.Failure{Kind: tools.ErrInternal, Message: "this session cannot run workflows; this is a bug in Pixir"}
	}
	// Every problem at once: the spec's and its agents'.
	if err := checkedProblems(w, ports.Agents, nil, nil); err != nil {
		return nil, err
	}
	p := &Prepared{w: w, ports: ports}
	if ws, ok := ports.Agents.(AgentWriteSets); ok {
		// What a writer may change is narrowed by its agent's write set
		// too: the dry run shows it, and both it and the run schedule by
		// it (conflictIndex).
		for i := range w.Steps {
			if st := &w.Steps[i]; st.PermissionMode == Writer {
				st.agentWrite = ws.AgentWriteSet(tools.SpawnRequest{Agent: st.Agent, Task: st.Task, WorkspaceMode: string(st.WorkspaceMode)})
			}
		}
	}
	if w.ResumeFrom != "" {
		if ports.Evidence == nil {
			return nil, &tools.Failure{Kind: tools.ErrInvalidArgs, Message: "resume_from names a run of an earlier session, and only that session's Log can say what it reuses: " +
				"pixir resume SESSION_ID --workflow FILE --resume-from WORKFLOW_ID"}
		}
		events, err := ports.Evidence.WorkflowEvents()
		if err != nil {
			return nil, &tools.Failure{Kind: tools.ErrInternal, Message: fmt.Sprintf("reading this session's Log for resume_from: %v", err)}
		}
		if p.reuse, err = Reusable(events, w); err != nil {
			return nil, err
		}
		if ce, ok := ports.Evidence.(ChildEnds); ok {
			ends, err := ce.ChildEnds()
			if err != nil {
				return nil, &tools.Failure{Kind: tools.ErrInternal, Message: fmt.Sprintf("reading this session's Log for resume_from: %v", err)}
			}
			if err := p.reuse.undecidedWriters(w, ends); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// Workflow is the checked workflow, defaults filled.
func (p *Prepared) Workflow() *Workflow { return p.w }

// DryRunOutcome is what a dry run returns.
type DryRunOutcome struct {
	Output string `json:"output"`
	Mode   string `json:"mode"` // dry_run
	DryRun
	// Budget weighs the run's worst case against its budget.
	Budget BudgetEstimate `json:"budget"`
}

// DryRun plans the workflow, starting nothing and writing nothing: the
// waves (dependency levels, as a run numbers them), the steps held back, its
// lists bounded (DryRun), and its worst case against its budget. It stops
// when ctx ends, with a cancelled *tools.Failure.
func (p *Prepared) DryRun(ctx context.Context) (DryRunOutcome, error) {
	plan, err := waves(ctx, p.w)
	if err != nil {
		return DryRunOutcome{}, &tools.Failure{Kind: tools.ErrCancelled, Message: "the dry run was cancelled before its plan was complete: " + err.Error()}
	}
	// What a writer may change is narrowed by its agent's write set too
	// (Prepare).
	for i := range plan.Steps {
		if ps := &plan.Steps[i]; ps.Posture == Writer {
			ps.AgentWriteSet = p.w.Steps[i].agentWrite
		}
	}
	// The text is bounded by its own limits; rendered from the whole plan,
	// it counts what a wave cut short leaves out.
	text := RenderPlan(&plan)
	plan = plan.bounded()
	est := p.estimateBudget(plan.MaxRuns)
	return DryRunOutcome{Output: text + renderBudget(est), Mode: "dry_run", DryRun: plan, Budget: est}, nil
}

// Run runs the workflow through ports.Children and ports.Evidence (both
// needed) to its end and returns its Outcome. It never fails: a step that
// cannot start is a failed step, and an expected agentic failure (a
// timeout, a failed child) is part of the Outcome, not an error. It returns
// when every child it started has ended. Cancelling ctx stops the children
// and returns the partial outcome.
func (p *Prepared) Run(ctx context.Context, opt RunOptions) Outcome {
	if p.ports.Children == nil || p.ports.Evidence == nil {
		panic("workflows: Run needs the Children and Evidence ports")
	}
	return run(ctx, p, opt)
}

// writeSetOutsideAgent is the problem of writer step st (steps[i]) whose
// write set meets none of its agent's: a path must match both, so its
// child could change no file, and the run would go on with every write
// refused. A fan-out's binding counts as any path.
func writeSetOutsideAgent(agents Agents, i int, st *Step) (Problem, bool) {
	ws, ok := agents.(AgentWriteSets)
	write := effectiveWrite(st)
	if !ok || len(write) == 0 {
		return Problem{}, false
	}
	agent := ws.AgentWriteSet(tools.SpawnRequest{Agent: st.Agent, Task: st.Task, WorkspaceMode: string(st.WorkspaceMode)})
	if agent == nil {
		return Problem{}, false
	}
	if _, meet := firstOverlap(Overlap, write, agent); meet {
		return Problem{}, false
	}
	name := st.Agent
	if name == "" {
		name = "default"
	}
	idx := i
	field := "write_set"
	if len(st.WriteSet) == 0 {
		field = "agent"
	}
	return Problem{Code: "write_set_outside_agent", Index: &idx, Step: st.ID, Field: field, Value: strings.Join(write, ", "),
		Message: fmt.Sprintf("steps[%d] %q: write_set %s meets none of agent %q's write_set %s: a file must match both, so the step could change nothing; "+
			"widen one of them, or give the step another agent", i, st.ID, quotedList(write), name, quotedList(agent))}, true
}

// quotedList is patterns as a list of quoted strings: ["a/**", "b"].
func quotedList(patterns []string) string {
	q := make([]string, len(patterns))
	for k, p := range patterns {
		q[k] = strconv.Quote(p)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// checkAgents resolves every step's agent before anything starts, so a
// misspelt agent is an invalid spec instead of a failed step, and a spawn
// the Manager would refuse (depth) is refused before the first step runs.
func checkAgents(agents Agents, w *Workflow) *tools.Failure {
	var problems []Problem
	seen := map[string]*tools.Failure{}
	for i := range w.Steps {
		st := &w.Steps[i]
		f, done := seen[st.Agent]
		if !done {
			if err := agents.CheckSpawn(tools.SpawnRequest{Agent: st.Agent, Task: st.Task, WorkspaceMode: string(st.WorkspaceMode)}); err != nil {
				f = tools.AsFailure(err)
			}
			seen[st.Agent] = f
		}
		if f == nil && st.MCPServers != nil {
			// The servers are the session's: only the runtime knows them.
			if err := agents.CheckSpawn(tools.SpawnRequest{Agent: st.Agent, Task: st.Task, WorkspaceMode: string(st.WorkspaceMode), MCPServers: st.MCPServers}); err != nil {
				idx := i
				problems = append(problems, Problem{Code: "unknown_mcp_server", Index: &idx, Step: st.ID, Field: "allowed_mcp_servers",
					Value: strings.Join(st.MCPServers, ", "), Message: fmt.Sprintf("steps[%d] %q: %s", i, st.ID, tools.AsFailure(err).Message)})
			}
		}
		if f == nil {
			if p, ok := writeSetOutsideAgent(agents, i, st); ok {
				problems = append(problems, p)
			}
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
	return problemsFailure(problems)
}
