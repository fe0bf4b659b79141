package workflows

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/pixir-go/pixir/tools"
)

// A run's work committed (issue 13, the practice's final commit): a
// workflow may ask that, when it ends completed, the files it brought into
// the workspace are committed to the workspace's git repository, and only
// those: what its isolated writers merged and its shared writers changed,
// never Pixir's own state (.pixir/) nor what the spec excludes (the
// practice's .workflow/ artifacts). Files that were already changed in the
// workspace before the run, or by someone else, stay out of the commit.
// A child's own git never reaches the workspace's repository (the
// sandbox); the runtime makes the commit, through the Committer port.

// CommitSpec is the commit a completed run makes.
type CommitSpec struct {
	Message string   `json:"message" jsonschema:"minLength=1" jsonschema_description:"The commit message."`
	Exclude []string `json:"exclude,omitempty" jsonschema_description:"Path patterns never committed (.pixir/ never is), e.g. .workflow/**."`
	// Base and Requires are the run's sanity checks (the practice's phase
	// 1), made by Pixir before any step starts: a run that cannot end in a
	// sound commit stops with an error before any agent runs.
	Base     string   `json:"base,omitempty" jsonschema_description:"The branch the work is based on, e.g. main. With it, before any step starts, Pixir checks that the workspace is a git work tree (not a bare repository) whose HEAD is on a branch (not detached) other than base; otherwise the run stops with an error."`
	Requires []string `json:"requires,omitempty" jsonschema_description:"Workspace files that must exist before any step starts, e.g. TODO/<issue>.md; a missing one stops the run with an error."`
}

// UnmarshalJSON rejects unknown keys.
func (c *CommitSpec) UnmarshalJSON(b []byte) error {
	type plain CommitSpec
	return strictDecode(b, (*plain)(c), "commit", "message, exclude, base, requires")
}

// PreflightRequest is what a run checks before any step starts.
type PreflightRequest struct {
	// Base, when set: the workspace must be a git work tree on a branch
	// other than Base.
	Base string
	// Files must exist (workspace-relative, slash-separated).
	Files []string
}

// StoppedPreflight begins the StoppedBy of a run whose preflight failed:
// "preflight_failed: " and the problems found.
const StoppedPreflight = "preflight_failed"

// preflight makes the spec's sanity checks before any step starts; it
// returns why the run must not start ("" when it may).
func (r *runner) preflight() string {
	spec := r.w.Commit
	if spec == nil || (spec.Base == "" && len(spec.Requires) == 0) {
		return ""
	}
	if r.committer == nil {
		return "" // no repository to check, none to commit to (the outcome says so)
	}
	problems := r.committer.Preflight(r.ctx, PreflightRequest{Base: spec.Base, Files: spec.Requires})
	if len(problems) == 0 {
		return ""
	}
	return StoppedPreflight + ": " + strings.Join(problems, "; ")
}

// Committer commits files of the workspace to its git repository.
type Committer interface {
	// Commit stages and commits exactly req.Paths (workspace-relative,
	// slash-separated), whatever else is staged or changed. It reports
	// not_committed with the reason when it cannot (no repository, a
	// read_only session, git refused); an error is a fault of the runtime.
	Commit(ctx context.Context, req CommitRequest) (CommitReport, error)
	// Preflight checks, before any step starts, what req asks of the
	// workspace and its repository: each problem a sentence that says
	// what is wrong and what to do; none when the run may start.
	Preflight(ctx context.Context, req PreflightRequest) []string
}

// CommitRequest is one commit.
type CommitRequest struct {
	Message string
	Paths   []string
}

// Commit statuses.
const (
	Committed    = "committed"
	NotCommitted = "not_committed"
)

// CommitReport is what became of a run's commit.
type CommitReport struct {
	// Status is committed or not_committed.
	Status string `json:"status"`
	// Commit is the new commit's hash.
	Commit  string `json:"commit,omitempty"`
	Message string `json:"message"`
	// Files are the files committed (or that would have been).
	Files []string `json:"files"`
	// Reason says why nothing was committed.
	Reason string `json:"reason,omitempty"`
}

// validateCommit reports the problems of a workflow's commit.
func (v *validator) commit(c *CommitSpec) {
	if c == nil {
		return
	}
	if strings.TrimSpace(c.Message) == "" {
		v.add(Problem{Code: "invalid_commit", Field: "commit.message", Message: "commit.message is empty; give the commit message"})
	}
	for k, p := range c.Exclude {
		if why := patternProblem(p); why != "" {
			v.add(Problem{Code: "invalid_pattern", Field: fmt.Sprintf("commit.exclude[%d]", k), Value: p,
				Message: fmt.Sprintf("commit.exclude[%d] pattern %q is invalid: %s", k, p, why)})
		}
	}
	if c.Base != "" && (strings.TrimSpace(c.Base) != c.Base || strings.ContainsAny(c.Base, " \t\n\r\x00~^:?*[\\") || strings.HasPrefix(c.Base, "-")) {
		v.add(Problem{Code: "invalid_commit", Field: "commit.base", Value: c.Base,
			Message: fmt.Sprintf("commit.base %q is not a branch name; give the branch the work is based on, e.g. main", c.Base)})
	}
	for k, p := range c.Requires {
		clean := path.Clean(p)
		if p == "" || path.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsAny(p, "*?[]{}\\\x00\n") {
			v.add(Problem{Code: "invalid_commit", Field: fmt.Sprintf("commit.requires[%d]", k), Value: p,
				Message: fmt.Sprintf("commit.requires[%d] %q is not a file path inside the workspace; give a relative path without wildcards, e.g. TODO/GAL-1.md", k, p)})
		}
	}
}

// commitWork makes the commit of a run that ended: only a completed one
// commits, and only the files it brought into the workspace.
func (r *runner) commitWork(out *Outcome) *CommitReport {
	spec := r.w.Commit
	if spec == nil {
		return nil
	}
	rep := &CommitReport{Status: NotCommitted, Message: spec.Message, Files: committable(spec, r.mergedBy, out.Steps)}
	switch {
	case out.Status != StatusCompleted:
		rep.Reason = fmt.Sprintf("the workflow is %s, not completed: nothing is committed", out.Status)
	case len(rep.Files) == 0:
		rep.Reason = "the run brought no file into the workspace: nothing to commit"
	case r.committer == nil:
		rep.Reason = "this run cannot commit (no committer)"
	default:
		got, err := r.committer.Commit(r.ctx, CommitRequest{Message: spec.Message, Paths: rep.Files})
		if err != nil {
			rep.Reason = "the commit could not be made: " + tools.AsFailure(err).Message
			break
		}
		got.Message = spec.Message
		if got.Files == nil {
			got.Files = rep.Files
		}
		rep = &got
	}
	r.record(WorkflowEvent{Kind: EventCommitted, Commit: rep})
	return rep
}

// committable are the files a run brought into the workspace, sorted:
// merged by its isolated writers, changed by its ready shared writers;
// never .pixir/, nor what spec excludes. A resumed run (resume_from)
// brings in the work of the steps it reuses too: that work is in the
// workspace, made by this workflow, and the run it was reused from did
// not commit it (only a completed run commits; what a completed run
// committed is unchanged since, and git leaves it out).
func committable(spec *CommitSpec, merged map[string][]string, steps []StepOutcome) []string {
	seen := map[string]bool{}
	for p := range merged {
		seen[p] = true
	}
	for i := range steps {
		s := &steps[i]
		if s.ReusedFrom != "" && s.Merge != nil && s.CheckpointStatus == CheckpointReady {
			for _, p := range mergedPaths(s.Merge.Applied) {
				seen[p] = true
			}
		}
		if s.WorkspaceMode != Shared || s.Posture != Writer || s.CheckpointStatus != CheckpointReady || s.Changes == nil {
			continue
		}
		for _, p := range slices.Concat(s.Changes.Added, s.Changes.Changed, s.Changes.Deleted) {
			seen[p] = true
		}
	}
	files := make([]string, 0, len(seen))
	for p := range seen {
		if p == ".pixir" || strings.HasPrefix(p, ".pixir/") || excluded(spec.Exclude, p) {
			continue
		}
		files = append(files, p)
	}
	slices.Sort(files)
	return files
}

func excluded(patterns []string, path string) bool {
	for _, p := range patterns {
		if ok, _ := doublestar.Match(p, path); ok {
			return true
		}
	}
	return false
}

// commitText is the outcome's line about its commit.
func commitText(c *CommitReport) string {
	if c.Status == Committed {
		hash := c.Commit
		if len(hash) > 12 {
			hash = hash[:12]
		}
		return fmt.Sprintf("Committed %s (%d files): %s", hash, len(c.Files), firstLine(c.Message))
	}
	return "Not committed: " + c.Reason
}
