package workflows

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/tools"
)

// Merge-back in a run: the one place the runner lands an isolated
// writer's work (land), called when a step is decided, before its
// dependents can start, so they (and whatever follows the run, such as
// a commit) see the work in the workspace itself. Merges happen one at a
// time, in the order steps are decided, which respects the dependencies:
// each merges against the workspace as the previous one left it.

// land decides what becomes of a step run's changes once its outcome is
// decided, and returns the outcome with its Merge. A conflict makes a
// ready step needs_orchestrator: its dependents are held, and the parent
// decides (resolve then merge again, keep it in the snapshot, discard it).
func (r *runner) land(run *stepRun, out StepOutcome) StepOutcome {
	out, merging := r.toLand(run, out)
	if !merging {
		return out
	}
	rep, err := r.merger.Merge(r.ctx, MergeRequest{StepID: run.label, AgentID: out.AgentID})
	return r.landed(run, out, rep, err)
}

// toLand is the first half of land: it gives the outcome its Merge and
// says whether the merger is to be asked (merging); then the step's
// merging event is recorded, and landed takes what the merger answered.
// A run's loop asks the merger apart from its own work (mergeAsync), so
// a merge that waits does not keep the step's slot.
func (r *runner) toLand(run *stepRun, out StepOutcome) (_ StepOutcome, merging bool) {
	st := &r.w.Steps[run.step]
	policy := r.w.MergePolicyOf(st)
	if policy == "" || out.WorkspaceMode != Isolated || out.AgentID == "" {
		return out, false // nothing of its own to merge
	}
	m := &StepMerge{Policy: policy, MergeReport: tools.MergeReport{Status: tools.MergeNotMerged}}
	out.Merge = m
	switch {
	case out.WriteSetViolation != nil:
		m.Reason = "the step changed files outside its write set (" + tools.WriteSetViolationCode + "): its work is never merged (it stays in its snapshot)"
	case out.CheckpointStatus != CheckpointReady:
		m.Reason = fmt.Sprintf("the step is %s, not checkpoint_ready: its work is not merged (it stays in its snapshot)", out.CheckpointStatus)
	case policy == MergeManual:
		m.Reason = fmt.Sprintf("merge is manual: the changes stay in the step's snapshot; merge_agent with id %s merges them", out.AgentID)
	case policy == MergeNever:
		m.Reason = "merge is never: the changes are for the step's dependents only"
	case r.merger == nil:
		m.Reason = "this run cannot merge (no merger); the changes stay in the step's snapshot"
	default:
		m.Tried = true
		// Said before the merge writes anything: a process that ends
		// before the step is decided leaves a run that a resume merges
		// again (reuse) instead of running the step again on top of work
		// that may have landed.
		r.record(WorkflowEvent{Kind: EventStepMerging, StepID: out.StepID, Run: run.label, Outcome: &out})
		return out, true
	}
	return out, false
}

// landed is the second half of land: the outcome as the merger's answer
// (rep, or err when the merge could not be made) leaves it.
func (r *runner) landed(run *stepRun, out StepOutcome, rep tools.MergeReport, err error) StepOutcome {
	m := out.Merge
	if err != nil {
		m.Reason = "the merge could not be made: " + tools.AsFailure(err).Message
		unlanded(&out, m.Reason)
		return out
	}
	m.MergeReport = rep
	if rep.Status == tools.MergeNotMerged {
		// Declined (ask), or refused (read_only): the work is
		// ready but not where the user looks, and dependents would
		// build on a workspace without it.
		unlanded(&out, "not merged: "+rep.Reason)
		return out
	}
	for k := range m.Conflicts {
		m.Conflicts[k].Steps = r.involved(run.label, m.Conflicts[k].Path)
	}
	for _, p := range mergedPaths(rep.Applied) {
		r.mergedBy[p] = append(r.mergedBy[p], run.label)
	}
	if rep.Status == tools.MergeConflicted {
		out.CheckpointStatus = CheckpointNeedsOrchestrator
		if b := out.Checkpoint; b != nil {
			b.Status, b.DependentSafe = CheckpointNeedsOrchestrator, false
			b.KnownLimitations = append(b.KnownLimitations, conflictNote(rep.Conflicts))
		}
	}
	return out
}

// unlanded makes a ready step whose on_ready merge did not happen (the
// user declined it, the mode refused it, or it failed) needs_orchestrator:
// its work is in its snapshot, not in the workspace, so the run is not
// completed and its dependents are held until someone decides.
func unlanded(out *StepOutcome, why string) {
	out.CheckpointStatus = CheckpointNeedsOrchestrator
	if b := out.Checkpoint; b != nil {
		b.Status, b.DependentSafe = CheckpointNeedsOrchestrator, false
		b.KnownLimitations = append(b.KnownLimitations, "its changes were not merged into the workspace ("+why+"); they are in its snapshot")
	}
}

// involved are the steps a conflict on path involves: those merged
// earlier in this run that changed it, then the step being merged.
func (r *runner) involved(step, path string) []string {
	return append(slices.Clone(r.mergedBy[path]), step)
}

func mergedPaths(f tools.MergeFiles) []string {
	return slices.Concat(f.Added, f.Updated, f.Merged, f.Deleted, f.Mode)
}

// conflictNote sums up a merge's conflicts in one line.
func conflictNote(cs []tools.MergeConflict) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		p := c.Path + " (" + c.Kind
		if n := len(c.Hunks); n > 0 {
			p += fmt.Sprintf(", %d hunk", n)
			if n > 1 {
				p += "s"
			}
		}
		parts = append(parts, p+")")
	}
	return "merge conflict, not written to the workspace: " + strings.Join(parts, ", ")
}

// Brief is a step's merge in a few words, as the outcome table, the live
// view and pixir inspect show it: "merged (3 files)", "conflicted (1
// files; 2 merged)", "not merged (manual)".
func (m *StepMerge) Brief() string { return mergeCell(m) }

// mergeCell is a step's merge as the outcome table shows it.
func mergeCell(m *StepMerge) string {
	if m == nil {
		return "–"
	}
	switch m.Status {
	case tools.MergeMerged:
		return "merged (" + plural.Of(m.Applied.Count(), "file", "files") + ")"
	case tools.MergeConflicted:
		return fmt.Sprintf("conflicted (%s; %d merged)", plural.Of(len(m.Conflicts), "file", "files"), m.Applied.Count())
	}
	if m.Policy != MergeOnReady {
		return "not merged (" + string(m.Policy) + ")"
	}
	return "not merged"
}

// mergeActions are the safe moves after merge conflicts, and after
// merges that did not happen.
func mergeActions(steps []StepOutcome) []NextAction {
	var conflicted []string
	for _, s := range steps {
		if s.Merge != nil && s.Merge.Status == tools.MergeConflicted {
			conflicted = append(conflicted, s.StepID)
		}
	}
	var acts []NextAction
	if unmerged := unmergedSteps(steps); len(unmerged) > 0 {
		acts = append(acts, NextAction{Action: "merge_again", StepIDs: unmerged,
			Reason: "each step was ready but its merge did not happen (merge.reason says why: declined, refused by the mode, or failed, perhaps cut off midway); its changes are in its snapshot: merge_agent its agent_id when they should land (that also finishes a merge cut off midway), or keep_in_snapshot / discard them"})
	}
	if len(conflicted) == 0 {
		return acts
	}
	return append(acts, []NextAction{
		{Action: "resolve_then_merge", StepIDs: conflicted,
			Reason: "each step's merge.conflicts were left as they are in the workspace, and its snapshot now holds them with conflict markers against the workspace's version: have the step's child resolve them (send_input to its agent_id), then merge_agent it again"},
		{Action: "keep_in_snapshot", StepIDs: conflicted,
			Reason: "leave the unmerged files in the step's snapshot for later; what merged cleanly is already in the workspace"},
		{Action: "discard", StepIDs: conflicted,
			Reason: "close_agent the step's agent_id: its snapshot and unmerged changes are deleted; what merged cleanly stays in the workspace"},
	}...)
}

// unmergedSteps are the steps whose on_ready merge was tried and did not
// happen (see unlanded): what land did, not what the checkpoint says (a
// step its own child left needs_orchestrator was never merged, and must
// not be merged as if it had been ready).
func unmergedSteps(steps []StepOutcome) []string {
	var ids []string
	for _, s := range steps {
		if s.Merge != nil && s.Merge.Tried && s.Merge.Status == tools.MergeNotMerged && s.Merge.Policy == MergeOnReady &&
			s.CheckpointStatus == CheckpointNeedsOrchestrator && !s.Superseded {
			ids = append(ids, runName(&s))
		}
	}
	return ids
}

// writeConflicts lists the merge conflicts of a run under its table: each
// file, what kind of conflict, where, and the steps involved.
func writeConflicts(b *strings.Builder, steps []StepOutcome) {
	first := true
	for _, s := range steps {
		if s.Merge == nil || len(s.Merge.Conflicts) == 0 {
			continue
		}
		if first {
			b.WriteString("\nMerge conflicts (left as they are in the workspace):\n")
			first = false
		}
		for _, c := range s.Merge.Conflicts {
			fmt.Fprintf(b, "- %s: %s", c.Path, c.Kind)
			if n := len(c.Hunks); n > 0 {
				fmt.Fprintf(b, ", %d hunk", n)
				if n > 1 {
					b.WriteString("s")
				}
				b.WriteString(" (lines")
				for k, h := range c.Hunks {
					if k > 0 {
						b.WriteString(",")
					}
					b.WriteString(" " + lines(h.Lines))
				}
				fmt.Fprintf(b, " of the file with conflict markers in %s's snapshot)", s.StepID)
			}
			if len(c.Steps) > 1 {
				fmt.Fprintf(b, " (steps %s)", strings.Join(c.Steps, ", "))
			}
			b.WriteString("\n")
		}
	}
}

// lines shows a line range as people write it.
func lines(r tools.LineRange) string {
	if r.Count <= 1 {
		return fmt.Sprint(r.Start)
	}
	return fmt.Sprintf("%d-%d", r.Start, r.Start+r.Count-1)
}
