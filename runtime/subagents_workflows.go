// The Manager as workflows see it: the ports of a workflow run.

package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

var _ workflows.Spawner = binding{}

// stepOptions are what a workflow step adds to a spawn.
type stepOptions struct {
	name     string
	readOnly bool
	extra    []tools.Tool
	ended    func(tools.SubagentView)
	mayWrite func(rel string) bool
	writeSet []string
	inherit  []workflows.Inherited
}

// StartStep implements workflows.Spawner: a Spawn that also carries the
// step's name, read_only, extra tools and end callback.
func (b binding) StartStep(ctx context.Context, req workflows.StepRequest, ended func(tools.SubagentView)) (tools.SubagentView, error) {
	if ctx.Err() != nil {
		return tools.SubagentView{}, failure(tools.ErrCancelled, "the workflow was cancelled before step %q started", req.Name)
	}
	return b.spawn(tools.SpawnRequest{Agent: req.Agent, Task: req.Task, WorkspaceMode: req.WorkspaceMode, Timeout: req.Timeout},
		stepOptions{name: req.Name, readOnly: req.ReadOnly, extra: req.Tools, ended: ended, mayWrite: req.MayWrite, writeSet: req.WriteSet, inherit: req.Inherit})
}

// StopStep implements workflows.Spawner. It waits for done even when stop
// had nothing to do: an end already under way (another stop, or the run's
// own end) may still be in the step's callback. So the callback must not
// call StopStep: it would wait for itself.
func (b binding) StopStep(id string) {
	m := b.m
	m.mu.Lock()
	sa, err := b.mine(id)
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

// RecordWorkflowEvent implements workflows.Spawner: workflow events take
// the path of subagent events, so the Log and live observers both see them.
func (b binding) RecordWorkflowEvent(d workflows.WorkflowEvent) error {
	return b.parent.emitBackground(EventWorkflow, d)
}

// WorkflowEvents implements workflows.Spawner: the workflow events of
// the parent's Log, read from the Log itself (the truth), for resume_from.
func (b binding) WorkflowEvents() ([]workflows.WorkflowEvent, error) {
	events, _, err := ReadLog(b.parent.log.Path())
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

// ShowPlan implements workflows.Spawner.
func (b binding) ShowPlan(entries []tools.PlanEntry) {
	if entries == nil {
		entries = []tools.PlanEntry{} // an empty plan clears the one shown
	}
	if err := b.parent.emitBackground(EventPlan, PlanData{Entries: entries}); err != nil {
		b.m.rt.log.Warn("showing a workflow plan", "session", b.parent.ID(), "err", err)
	}
}

// Spawner runs workflow steps as Subagents of this session outside any
// turn (pixir run --workflow, the smoke checks): the same Manager, limits
// and evidence as run_workflow inside a turn. ask, when not nil, answers
// the children's permission requests.
func (s *Session) Spawner(ask Asker) workflows.Spawner {
	return binding{m: s.rt.subagents, parent: s, ask: ask}
}

// writeSetFiles holds a workflow step's child to its write set: a write
// outside it is refused before it touches the disk, so writers the
// scheduler let run side by side (disjoint write sets) cannot collide
// through the file tools.
type writeSetFiles struct {
	tools.Files
	root string
	may  func(rel string) bool
	set  []string
}

func (f writeSetFiles) WriteFile(ctx context.Context, path string, data []byte) error {
	rel, err := filepath.Rel(f.root, path)
	if err == nil && !f.may(filepath.ToSlash(rel)) {
		return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: fmt.Sprintf(
			"%s is outside this workflow step's write_set (%s); write only there, or report needs_orchestrator if the task needs more",
			filepath.ToSlash(rel), strings.Join(f.set, ", "))}
	}
	return f.Files.WriteFile(ctx, path, data)
}
