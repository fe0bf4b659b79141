package tools

// MergeStatus is what became of a merge-back: an isolated child's changes
// brought into the workspace.
type MergeStatus string

const (
	// MergeMerged: every change the child made is in the workspace now
	// (none is a merge with nothing to bring).
	MergeMerged MergeStatus = "merged"
	// MergeConflicted: some files could not be merged and were left as
	// they are in the workspace; the others were merged.
	MergeConflicted MergeStatus = "conflicted"
	// MergeNotMerged: nothing was written, and Reason says why (the policy,
	// a refusal, a step that is not ready, a dry run).
	MergeNotMerged MergeStatus = "not_merged"
)

// MergeReport is a merge-back as the model, the user and the Log see it:
// what was (or, in a dry run, would be) written to the workspace, and what
// could not be merged.
type MergeReport struct {
	Status MergeStatus `json:"status"`
	// Reason says why nothing was merged, or anything else a reader of a
	// merged or conflicted report should know.
	Reason string `json:"reason,omitempty"`
	// DryRun is set when nothing was written: the report is the plan.
	DryRun bool `json:"dry_run,omitempty"`
	// Applied are the files written (or to be written) to the workspace.
	Applied MergeFiles `json:"applied"`
	// Conflicts are the files left as they are in the workspace.
	Conflicts []MergeConflict `json:"conflicts,omitempty"`
	// MergeID names the merge's journal under .pixir/merges.
	MergeID string `json:"merge_id,omitempty"`
	// Diffs are the workspace changes, for the editor; not for the model.
	Diffs []Diff `json:"-"`
}

// MergeFiles lists workspace-relative, slash-separated paths by what the
// merge does to them; an empty list is left out.
type MergeFiles struct {
	// Added: new files (the workspace had none).
	Added []string `json:"added,omitempty"`
	// Updated: files the workspace had not changed since the snapshot,
	// taken as the child left them (a fast-forward).
	Updated []string `json:"updated,omitempty"`
	// Merged: files both sides changed, merged three-way hunk by hunk.
	Merged []string `json:"merged,omitempty"`
	// Deleted: files the child deleted.
	Deleted []string `json:"deleted,omitempty"`
	// Mode: files whose permission bits changed (and nothing else).
	Mode []string `json:"mode,omitempty"`
}

// Count is the number of files in the lists.
func (f MergeFiles) Count() int {
	return len(f.Added) + len(f.Updated) + len(f.Merged) + len(f.Deleted) + len(f.Mode)
}

// Kinds of MergeConflict.
const (
	// ConflictContent: both sides changed the same lines (Hunks says where).
	ConflictContent = "content"
	// ConflictDeleteChange: the child deleted a file the workspace changed.
	ConflictDeleteChange = "deleted_by_child_changed_in_workspace"
	// ConflictChangeDelete: the child changed a file the workspace deleted.
	ConflictChangeDelete = "changed_by_child_deleted_in_workspace"
	// ConflictAddAdd: both sides added the file, with different contents.
	ConflictAddAdd = "added_on_both_sides"
	// ConflictBinary: both sides changed a file that is not text.
	ConflictBinary = "binary"
	// ConflictMode: both sides changed the permission bits differently.
	ConflictMode = "mode"
	// ConflictType: a file became a link (or the reverse) on one side while
	// the other changed it.
	ConflictType = "type"
	// ConflictUnresolved: the child's file still holds the conflict markers
	// of an earlier merge.
	ConflictUnresolved = "unresolved_markers"
	// ConflictNoBase: both sides changed a file whose content at the
	// snapshot was not kept (too large), so no three-way merge is possible.
	ConflictNoBase = "no_base"
	// ConflictUnavailable: a three-way merge was needed and git, which
	// does it, could not be run.
	ConflictUnavailable = "merge_unavailable"
	// ConflictOutsideWriteSet: the child changed a file its write set does
	// not cover; it is never merged.
	ConflictOutsideWriteSet = "outside_write_set"
	// ConflictLinkOutside: the child made a link that leads outside the
	// workspace (or into its .pixir); it is never merged.
	ConflictLinkOutside = "link_leads_outside"
	// ConflictMoved: the workspace's file changed between the plan and
	// the write; it was left as it is now.
	ConflictMoved = "changed_during_merge"
)

// MergeConflict is one file that could not be merged.
type MergeConflict struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	// Hunks are the conflicting regions of a content conflict.
	Hunks []ConflictHunk `json:"hunks,omitempty"`
	// Steps, in a workflow, are the steps involved: the one being merged
	// and those merged before it that changed the file.
	Steps   []string `json:"steps,omitempty"`
	Message string   `json:"message"`
}

// ConflictHunk is one conflicting region: where it is in the file with
// conflict markers (which a merge leaves in the child's snapshot for the
// child to resolve), and the region's lines in the workspace's version,
// the snapshot's base and the child's version, each shortened when long.
type ConflictHunk struct {
	// Lines are the region's lines in the file with markers, the markers
	// included (1-based).
	Lines LineRange `json:"lines"`
	// Workspace, Base and Child are the region's text on each side.
	Workspace string `json:"workspace"`
	Base      string `json:"base"`
	Child     string `json:"child"`
}

// LineRange is Count lines from Start (1-based).
type LineRange struct {
	Start int `json:"start"`
	Count int `json:"count"`
}
