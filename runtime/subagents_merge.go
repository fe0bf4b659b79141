// Merge-back of an isolated child: the one way a child's snapshot reaches
// its parent's workspace, for the merge_agent tool and for workflow steps
// (the workflows.Merger port). A merge is a mutation: read_only refuses
// it, ask asks once per merge with every file's diff, auto merges; the
// editor writes the text files when it offered fs/write_text_file.

package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/runtime/merge"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// MergeAgentName is the permission a merge asks for (and remembers with
// allow_always), whether merge_agent or a workflow step makes it.
const MergeAgentName = "merge_agent"

// childMerge is how one merge of a child is made.
type childMerge struct {
	dryRun bool
	// label names the child in conflict markers and in the question.
	label string
	// asked: the caller asked the user already (merge_agent's call was
	// authorized with the diffs of its dry run).
	asked bool
}

// Merge implements tools.Subagents: merge_agent.
func (b binding) Merge(ctx context.Context, id string, dryRun bool) (tools.MergeReport, error) {
	b.m.mu.Lock()
	sa, err := b.mine(id)
	b.m.mu.Unlock()
	if err != nil {
		return tools.MergeReport{}, err
	}
	// In ask mode the turn asked before the call ran, showing the diffs of
	// its dry run (merge_agent previews them): no second question.
	return b.mergeChild(ctx, sa, childMerge{dryRun: dryRun, label: sa.agent + " " + sa.id, asked: true})
}

// mergeChild merges an ended isolated child's changes into its parent's
// workspace, or with dryRun says what it would do.
func (b binding) mergeChild(ctx context.Context, sa *subagent, cm childMerge) (tools.MergeReport, error) {
	m := b.m
	m.mu.Lock()
	status, mode, limit := sa.status, sa.mode, sa.limit
	m.mu.Unlock()
	switch {
	case mode != WorkspaceIsolated:
		return tools.MergeReport{}, failure(tools.ErrInvalidArgs,
			"subagent %s worked in this workspace itself (shared mode): its changes are here already, there is nothing to merge", sa.id)
	case status == tools.SubagentClosed:
		return tools.MergeReport{}, failure(tools.ErrNotFound,
			"subagent %s is closed: its snapshot was deleted with it, so nothing is left to merge", sa.id)
	case !status.Ended():
		return tools.MergeReport{}, failure(tools.ErrPermissionDenied,
			"subagent %s is %s; wait for it with wait_agent, then merge it", sa.id, status)
	}
	// Its snapshot is read back from disk unless a use holds it, and let
	// go again when the merge is decided.
	snap, err := m.useSnapshot(sa, true)
	switch {
	case errors.Is(err, errSnapshotRemoved):
		return tools.MergeReport{}, failure(tools.ErrNotFound, removedSnapshot, sa.id)
	case err != nil:
		return tools.MergeReport{}, failure(tools.ErrNotFound, "subagent %s's snapshot cannot be read (%v); close it with close_agent", sa.id, err)
	case snap == nil:
		return tools.MergeReport{}, failure(tools.ErrNotFound, "subagent %s has no snapshot this process can merge", sa.id)
	}
	defer m.doneSnapshot(sa)
	parent := b.parent
	req := merge.Request{Workspace: parent.workspace.Root(), Label: cm.label, DryRun: cm.dryRun, Files: editorWrites(b.files)}
	if limit.limits() {
		req.Allow = limit.allows
	}
	if !cm.dryRun {
		switch parent.heldMode() {
		case ModeReadOnly:
			reason := "the session is in read_only mode, and a merge changes the workspace; ask the user to switch the mode to auto or ask, then merge again"
			b.recordMerge(sa, "denied", "mode", "", reason)
			return tools.MergeReport{Status: tools.MergeNotMerged, Reason: reason}, nil
		case ModeAsk:
			if !cm.asked {
				req.Approve = func(ctx context.Context, plan tools.MergeReport) (bool, string, error) {
					return b.approveMerge(ctx, sa, cm, plan)
				}
			}
		}
	}
	// A sibling's snapshot copied while this merge renames files into the
	// workspace would start from half of it: the merge takes the
	// workspace's lock to write while it writes (merge.Request.Waiting
	// says when it waits for another process), after its question, so a
	// copy, here or in another process, never waits for the user. A dry
	// run writes nothing and reads holding it to read. This process's
	// merges into the workspace are made one at a time, question
	// included, so each is planned against the one before.
	var rep tools.MergeReport
	if cm.dryRun {
		err = m.inWorkspace(ctx, req.Workspace, showOnCall(b.parent, b.toolCallID), func() (err error) {
			rep, err = snap.Merge(ctx, req)
			return err
		})
	} else {
		req.Waiting = m.lockWaiting(req.Workspace, "the merge", showOnCall(b.parent, b.toolCallID))
		l := m.mergeLock(req.Workspace)
		err = func() (err error) {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			select {
			case l <- struct{}{}:
			case <-ctx.Done():
				return fmt.Errorf("waiting for another merge into the workspace (its question to the user may be open): %w", context.Cause(ctx))
			}
			defer func() { <-l }()
			rep, err = snap.Merge(ctx, req)
			return err
		}()
	}
	if err != nil {
		if errors.Is(err, merge.ErrNoSnapshot) {
			return tools.MergeReport{}, failure(tools.ErrNotFound, "subagent %s's snapshot is gone: %v", sa.id, err)
		}
		if ctx.Err() != nil {
			return tools.MergeReport{}, failure(tools.ErrCancelled, "the merge of subagent %s was cancelled: %v", sa.id, err)
		}
		return tools.MergeReport{}, failure(tools.ErrInternal, "merging subagent %s: %v", sa.id, err)
	}
	return rep, nil
}

// removedSnapshot says why a child whose work a workflow merged whole can
// neither be merged nor run again.
const removedSnapshot = "subagent %s was a workflow step whose work was merged into the workspace whole, and its snapshot was removed then: nothing is left to merge or to work in; its Log stays (pixir inspect); spawn a new one with spawn_agent"

// dropMerged removes the snapshot of a workflow step's isolated child once
// the step is decided (its checkpoint_decided is in the parent's Log) with
// every change the child made merged into the workspace and no conflict:
// the workspace has the work, dependents take their snapshots of it, and
// a resume reuses the step's outcome without reading its snapshot. They
// were kept until pixir gc (7 days): 4.7 GB after a 50-step run over
// 20,000 files (qa32s). Its Log stays beside where it was. A snapshot
// something may still need is kept: work the merge left out (a
// conflict, a file declined), one in use, one whose child has children
// of its own (their snapshots and Logs lie inside it).
func (m *Manager) dropMerged(o *workflows.StepOutcome) {
	if o == nil || o.AgentID == "" || o.WorkspaceMode != workflows.Isolated || o.Merge == nil ||
		o.Merge.Status != tools.MergeMerged || len(o.Merge.Conflicts) > 0 || o.Changes == nil ||
		o.Merge.Applied.Count() != len(o.Changes.Added)+len(o.Changes.Changed)+len(o.Changes.Deleted)+len(o.Changes.Mode) {
		return
	}
	m.mu.Lock()
	sa := m.byID[o.AgentID]
	drop := sa != nil && !m.closed && sa.mode == WorkspaceIsolated && sa.status.Ended() &&
		sa.status != tools.SubagentClosed && sa.snapUsers == 0 && !sa.snapRemoved && len(m.children[sa.childSession]) == 0
	if drop {
		sa.snap, sa.snapOnDisk, sa.snapRemoved = nil, false, true
		m.wg.Add(1)
	}
	m.mu.Unlock()
	if !drop {
		return
	}
	go func() {
		defer m.wg.Done()
		m.removeSnapshot(sa)
	}()
}

// approveMerge asks whoever drives the parent whether a merge may write
// the workspace: once, with the diff of every file.
func (b binding) approveMerge(ctx context.Context, sa *subagent, cm childMerge, plan tools.MergeReport) (bool, string, error) {
	s := b.parent
	if s.allowedAlways(MergeAgentName) {
		b.recordMerge(sa, "allowed", "remembered", string(AllowAlways), "")
		return true, "", nil
	}
	if b.ask == nil {
		reason := "the session is in ask mode and there is no client to ask"
		b.recordMerge(sa, "denied", "mode", "", reason)
		return false, reason, nil
	}
	title := fmt.Sprintf("Merge %s into the workspace: %s", cm.label, plural.Of(plan.Applied.Count(), "file", "files"))
	if n := len(plan.Conflicts); n > 0 {
		title += fmt.Sprintf(" (%d conflicting left out)", n)
	}
	var locs []tools.Location
	for _, d := range plan.Diffs {
		locs = append(locs, tools.Location{Path: d.Path})
	}
	outcome, err := b.ask.AskPermission(ctx, PermissionRequest{
		SessionID: s.ID(), SubagentID: sa.id, ToolCallID: b.toolCallID, Tool: MergeAgentName,
		Title: title, Kind: tools.KindEdit, Locations: locs, Diffs: plan.Diffs,
	})
	if nobody, ok := errors.AsType[*NoOneToAsk](err); ok && ctx.Err() == nil {
		reason := nobody.Reason + "; nothing was merged: the changes stay in the snapshot"
		b.recordMerge(sa, "denied", "mode", "", reason)
		return false, reason, nil
	}
	if err != nil || ctx.Err() != nil {
		outcome = PermissionCancelled
	}
	switch outcome {
	case AllowOnce:
		b.recordMerge(sa, "allowed", "user", string(outcome), "")
		return true, "", nil
	case AllowAlways:
		s.rememberAllow(MergeAgentName)
		b.recordMerge(sa, "allowed", "user", string(outcome), "")
		return true, "", nil
	case PermissionCancelled:
		reason := "the question was withdrawn (the turn was cancelled); nothing was merged"
		b.recordMerge(sa, "cancelled", "user", "", reason)
		return false, reason, nil
	}
	reason := "the user declined the merge; the changes stay in the snapshot (merge_agent can merge them later)"
	b.recordMerge(sa, "denied", "user", string(outcome), reason)
	return false, reason, nil
}

// recordMerge writes the permission decision about a merge to the parent's
// Log, as a turn does for a tool call.
func (b binding) recordMerge(sa *subagent, decision, source, option, reason string) {
	d := PermissionDecisionData{ToolCallID: b.toolCallID, Tool: MergeAgentName, Mode: b.parent.heldMode(),
		Decision: decision, Source: source, Option: option, Reason: reason}
	if d.ToolCallID == "" {
		d.ToolCallID = "subagent-" + sa.id
	}
	if err := b.parent.emitBackground(EventPermissionDecision, d); err != nil {
		b.m.rt.log.Warn("recording a merge decision", "subagent", sa.id, "err", err)
	}
}

// stepMerger is workflows.Merger: a ready isolated step's merge, as the
// step's label says it.
type stepMerger struct{ b binding }

func (s stepMerger) Merge(ctx context.Context, req workflows.MergeRequest) (tools.MergeReport, error) {
	m := s.b.m
	m.mu.Lock()
	sa, err := s.b.mine(req.AgentID)
	m.mu.Unlock()
	if err != nil {
		return tools.MergeReport{}, err
	}
	return s.b.mergeChild(ctx, sa, childMerge{label: "step " + req.StepID + " (" + sa.id + ")"})
}

// editorWriter is a turn's Files that can say whether its writes reach an
// editor (an ACP client's fs/write_text_file) or fall back to the
// workspace's own files (a client that reads but does not write).
type editorWriter interface{ WritesThroughEditor() bool }

// editorWrites is the Files a merge writes text through: the editor's,
// so its buffers stay true, or none, so the merge writes itself. A
// fallback to the file tools' writer would refuse what the tools refuse
// (a read-only file the child made writable) and cut the merge off midway.
func editorWrites(files tools.Files) tools.Files {
	if w, ok := files.(editorWriter); ok && !w.WritesThroughEditor() {
		return nil
	}
	return files
}
