// The Manager as workflows see it: the ports of the workflow use case
// (workflows.Ports), bound to a parent session.

package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// WorkflowPorts are the ports of the workflow use case bound to this
// session, outside any turn (pixir run --workflow, the smoke surfaces):
// the same Manager, limits and evidence as run_workflow inside a turn.
// ask, when not nil, answers the children's permission requests.
func (s *Session) WorkflowPorts(ask Asker) workflows.Ports {
	return binding{m: s.rt.subagents, parent: s, ask: ask}.workflowPorts()
}

// workflowPorts are the workflow ports of this binding's session and tool
// call: what run_workflow is bound to for one call.
// Its check and its steps share one agent catalogue, read at the check: a
// run's steps run the agents it checked, and a thousand steps do not read
// the agent files a thousand times.
func (b binding) workflowPorts() workflows.Ports {
	b.agents = &catalogOnce{}
	budgets := b.m.rt.WorkflowBudgets()
	budgets.Spent = b.parent.exhausted // the session's: a run stops on it as on its own
	return workflows.Ports{
		Agents:    agentCheck{m: b.m, parent: b.spawner(), mcpServers: b.parent.MCPServers},
		Children:  stepChildren{b},
		Evidence:  sessionEvidence{s: b.parent, planID: workflowPlanID(b.toolCallID)},
		Committer: gitCommitter{root: b.parent.workspace.Root(), mode: b.parent.Mode},
		Budgets:   budgets,
		Templates: WorkspaceTemplates(b.parent.workspace.Root()),
		Merger:    stepMerger{b},
	}
}

// WorkspaceTemplates are the workflow templates run_workflow finds for a
// session in workspace: the project's, the user's (in the home folder, as
// for agents) and the built-ins.
func WorkspaceTemplates(workspace string) workflows.Templates {
	home, _ := os.UserHomeDir()
	return workflows.DirTemplates{Project: workspace, Home: home}
}

// WorkflowBudgets are the configuration's budgets of a workflow run and of
// each of its steps' children.
func (r *Runtime) WorkflowBudgets() workflows.Budgets {
	return workflows.Budgets{Run: r.cfg.Budget.Workflow, Step: r.cfg.Budget.Subagent, WarnAt: r.cfg.Budget.WarnAt}
}

// AgentChecker resolves agents as the Manager would for the children of a
// new session in workspace, without making the session: the dry run of
// pixir run --workflow, which writes nothing.
func (r *Runtime) AgentChecker(workspace string) workflows.Agents {
	return agentCheck{m: r.subagents, parent: spawnParent{workspace: workspace, mode: ModeAuto}, mcpServers: func() []string {
		var names []string
		for _, c := range r.mcpServersFor(nil) {
			names = append(names, c.Name)
		}
		return names
	}}
}

// agentCheck is workflows.Agents: the one agent lookup (Manager.resolve)
// for the children of parent.
type agentCheck struct {
	m      *Manager
	parent spawnParent
	// mcpServers names the MCP servers the children could use.
	mcpServers func() []string
}

func (a agentCheck) CheckSpawn(req tools.SpawnRequest) error {
	_, _, _, err := a.m.resolve(a.parent, req)
	if err == nil && req.MCPServers != nil {
		err = checkMCPNames(a.mcpServers(), req.MCPServers)
	}
	return err
}

// AgentWriteSet is the write set of the agent req would spawn (nil: none,
// or it does not resolve, which CheckSpawn says).
func (a agentCheck) AgentWriteSet(req tools.SpawnRequest) []string {
	spec, _, _, err := a.m.resolve(a.parent, req)
	if err != nil {
		return nil
	}
	return spec.Profile.WriteSet
}

// stepChildren is workflows.Children: a step's child is a Subagent of the
// Manager like any other, with the step's options.
type stepChildren struct{ b binding }

// stepOptions are what a workflow step adds to a spawn.
type stepOptions struct {
	name     string
	readOnly bool
	extra    []tools.Tool
	ended    chan<- tools.SubagentView
	mayWrite func(rel string) bool
	writeSet []string
	inherit  []workflows.Inherited
	run      *budget.Account
	// scheduled is the step's step_scheduled event, written with the
	// child's queued event (workflows.StepRequest.Scheduled).
	scheduled *workflows.Scheduled
}

func (c stepChildren) Start(ctx context.Context, req workflows.StepRequest) (tools.SubagentView, error) {
	if ctx.Err() != nil {
		return tools.SubagentView{}, failure(tools.ErrCancelled, "the workflow was cancelled before step %q started", req.Name)
	}
	return c.b.spawn(tools.SpawnRequest{Agent: req.Agent, Task: req.Task, WorkspaceMode: req.WorkspaceMode, Timeout: req.Timeout, MCPServers: req.MCPServers},
		stepOptions{name: req.Name, readOnly: req.ReadOnly, extra: req.Tools, ended: req.Ended, mayWrite: req.MayWrite, writeSet: req.WriteSet, inherit: req.Inherit,
			run: req.Account, scheduled: req.Scheduled})
}

// Stop waits for done even when stop had nothing to do: an end already
// under way (another stop, or the run's own end) may not have been sent
// yet.
func (c stepChildren) Stop(id string) {
	m := c.b.m
	m.mu.Lock()
	sa, err := c.b.mine(id)
	m.mu.Unlock()
	if err != nil {
		return
	}
	m.stop(sa, false)
	m.mu.Lock()
	done := sa.done
	m.mu.Unlock()
	<-done
}

// workflowPlanID is the id of the plan of the workflow run by a tool call
// (none: pixir run --workflow).
func workflowPlanID(toolCallID string) string {
	if toolCallID == "" {
		return "workflow"
	}
	return "workflow-" + toolCallID
}

// sessionEvidence is workflows.Evidence: the parent session's Log and the
// run's plan, planID ("workflow-" and the id of the call that runs it, so
// two runs of one session keep two plans).
type sessionEvidence struct {
	s      *Session
	planID string
}

// Record takes the path of subagent events, so the Log and live observers
// both see workflow events.
func (e sessionEvidence) Record(d workflows.WorkflowEvent) error {
	if err := e.s.emitBackground(EventWorkflow, d); err != nil {
		return err
	}
	if d.Kind == workflows.EventCheckpointDecided {
		// Recorded: a resume reuses the step as decided, merged.
		e.s.rt.subagents.dropMerged(d.Outcome)
	}
	return nil
}

func (e sessionEvidence) ShowPlan(entries []tools.PlanEntry) {
	if entries == nil {
		entries = []tools.PlanEntry{} // an empty plan clears the one shown
	}
	if err := e.s.emitBackground(EventPlan, PlanData{PlanID: e.planID, Entries: entries}); err != nil {
		e.s.rt.log.Warn("showing a workflow plan", "session", e.s.ID(), "err", err)
	}
}

// WorkflowEvents reads the Log itself (the truth), for resume_from.
func (e sessionEvidence) WorkflowEvents() ([]workflows.WorkflowEvent, error) {
	events, _, err := ReadLog(e.s.log.Path())
	if err != nil {
		return nil, err
	}
	var out []workflows.WorkflowEvent
	for _, ev := range events {
		if ev.Type != EventWorkflow {
			continue
		}
		var d workflows.WorkflowEvent
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return nil, fmt.Errorf("workflow event %d of the Log: %w", ev.Seq, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// ChildEnds reads the Log itself for the children whose end it records
// (their last subagent_event has an ended status), for resume_from.
func (e sessionEvidence) ChildEnds() (map[string]tools.SubagentStatus, error) {
	events, _, err := ReadLog(e.s.log.Path())
	if err != nil {
		return nil, err
	}
	last := map[string]tools.SubagentStatus{}
	for _, ev := range events {
		if ev.Type != EventSubagent {
			continue
		}
		var d SubagentEventData
		if json.Unmarshal(ev.Data, &d) == nil && d.SubagentID != "" {
			last[d.SubagentID] = d.Status
		}
	}
	out := map[string]tools.SubagentStatus{}
	for id, st := range last {
		if st.Ended() && st != tools.SubagentDetached {
			out[id] = st
		}
	}
	return out, nil
}

// writeSetFiles holds a child to its write sets (a workflow step's, its
// agent's): a write outside them is refused before it touches the disk, so
// writers the scheduler let run side by side (disjoint write sets) cannot
// collide through the file tools.
type writeSetFiles struct {
	tools.Files
	root  string
	limit writeLimit
}

func (f writeSetFiles) WriteFile(ctx context.Context, path string, data []byte) error {
	if err := f.allows(path); err != nil {
		return err
	}
	return f.Files.WriteFile(ctx, path, data)
}

// ReplaceFile implements tools.Replacer when the files it holds do.
func (f writeSetFiles) ReplaceFile(ctx context.Context, path string, data []byte, was fs.FileInfo) error {
	if err := f.allows(path); err != nil {
		return err
	}
	r, ok := f.Files.(tools.Replacer)
	if !ok {
		return errors.ErrUnsupported
	}
	return r.ReplaceFile(ctx, path, data, was)
}

// allows refuses a write outside the write sets.
func (f writeSetFiles) allows(path string) error {
	rel, err := filepath.Rel(f.root, path)
	if err == nil && !f.limit.allows(filepath.ToSlash(rel)) {
		return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: fmt.Sprintf(
			"%s is outside %s (%s); write only there, or report needs_orchestrator if the task needs more",
			filepath.ToSlash(rel), f.limit.whose(), f.limit)}
	}
	return nil
}
