package workflows

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/pixir-go/pixir/internal/plural"
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

// CommitSpec is the commit a completed run makes: one (message), or
// several in order (commits), each taking the run's files its paths
// match — the practice commits the work, then TODO/ in a chore(todo)
// commit of its own (spec ADR-11).
type CommitSpec struct {
	Message string `json:"message,omitempty" jsonschema_description:"The commit message (one commit of every file; or give commits)."`
	// Commits, instead of Message: several commits, made in order.
	Commits []CommitPart `json:"commits,omitempty" jsonschema_description:"Instead of message: several commits made in order at the end, each {message, paths}: the run's files its path patterns match; one commit may leave out paths and takes every file the others do not. Every file goes in exactly one commit: two commits whose paths can match the same file are refused before the run starts, and a run whose file no commit takes commits nothing."`
	Exclude []string     `json:"exclude,omitempty" jsonschema_description:"Path patterns (doublestar) of the run's files never committed, whatever commit's paths match them (.pixir/ never is), e.g. .workflow/** to keep the run's artifacts out. They follow the same rule as paths and write sets: spaces at either end go, a leading ./ is dropped, a trailing / means the folder's contents (.workflow/ is .workflow/**), and an empty, . or .. segment, a leading ~ or an absolute pattern is refused before the run starts."`
	// Base and Requires are the run's sanity checks (the practice's phase
	// 1), made by Pixir before any step starts: a run that cannot end in a
	// sound commit stops with an error before any agent runs.
	Base     string   `json:"base,omitempty" jsonschema_description:"The branch the work is based on, e.g. main. With it, before any step starts, Pixir checks that the workspace is a git work tree (not a bare repository) whose HEAD is on a branch (not detached) other than base; otherwise the run stops with an error."`
	Requires []string `json:"requires,omitempty" jsonschema_description:"Workspace files that must exist before any step starts, e.g. TODO/<issue>.md; a missing one stops the run with an error. Paths without wildcards, by the rule of paths: spaces at either end go, a leading ./ is dropped, a trailing / names a folder, and an empty, . or .. segment, a leading ~ or an absolute path is refused before the run starts."`
	// requiresWritten is Requires as the spec wrote them, before Normalize
	// read them as meant: a problem quotes what the user wrote.
	requiresWritten []string
}

// UnmarshalJSON rejects unknown keys.
func (c *CommitSpec) UnmarshalJSON(b []byte) error {
	type plain CommitSpec
	return strictDecode(b, (*plain)(c), "commit", "message, commits, exclude, base, requires")
}

// CommitPart is one of several commits of a run.
type CommitPart struct {
	Message string `json:"message" jsonschema:"minLength=1" jsonschema_description:"The commit message."`
	// Paths are the patterns of the files it takes; none: every file no
	// other commit takes.
	Paths []string `json:"paths,omitempty" jsonschema_description:"Path patterns (doublestar) of the run's files this commit takes, e.g. TODO/**. Leave out in (at most) one commit: it takes the rest. Read as write sets are: spaces at either end go, a leading ./ is dropped, a trailing / means the folder's contents (TODO/ is TODO/**), and an empty, . or .. segment, a leading ~ or an absolute pattern is refused before the run starts."`
}

// UnmarshalJSON rejects unknown keys.
func (c *CommitPart) UnmarshalJSON(b []byte) error {
	type plain CommitPart
	return strictDecode(b, (*plain)(c), "a commit", "message, paths")
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

// BeforeRecorder is a Committer that records, when a run starts, what
// the workspace has then that its repository's HEAD does not: the user's
// uncommitted work. A commit given that record takes only the run's part
// of a file the user had changed too. It records only the paths reach
// says a commit of the run could take (nil: every path): what else the
// user changed is no commit's business, and a copy of it costs time. Of
// those, it copies only the files copy says a step may write (nil: all);
// the others it names BeforeUnread (a commit leaves such a file out): a
// commit takes only what the run's writers merged or changed, inside
// their write sets, and a copy of 200 MB of the user's changes took
// seconds at every run's start.
type BeforeRecorder interface {
	Before(ctx context.Context, reach, copy func(path string) bool) BeforeRun
}

// writable says whether a step of w may write path: it is in a step's
// write set. nil (every path) when a fan-out's write set depends on its
// items, known only as it runs.
func (w *Workflow) writable() func(path string) bool {
	var sets []string
	for i := range w.Steps {
		if boundWrites(&w.Steps[i]) {
			return nil
		}
		sets = append(sets, w.Steps[i].WriteSet...)
	}
	return writeSetMatcher(sets)
}

// recordBefore is the record of the user's uncommitted work for the run's
// commit, made before any step changes the workspace (and kept in the
// run's workflow_started): the commit takes only the run's part of a file
// they changed too. A resumed run takes the record of the run it resumes,
// made before that run's steps (whose work it reuses) changed anything:
// a record made now would take that work for the user's, and it was
// committed whole, the user's edits with it. When that run made none (a
// Log of an older Pixir, or a workflow without a commit then), the
// record is BeforeFailed: nothing of a file the user could have changed
// is committed. A run its preflight stopped starts nothing and records
// nothing of its own (it carries on the record of a run it resumes): a
// resume of it that finds no record makes one, as the user's edits since
// are theirs (one run's record, kept, took them for the run's). So does a
// resume of a run that made its record and then started no step (killed
// or cancelled before its first, or every step skipped): nothing of that
// run's is in the workspace, and a file the user edited since is theirs.
// nil: no commit, no recorder, or a preflight that failed.
func (r *runner) recordBefore(preflightFailed bool) *BeforeRun {
	rec, ok := r.committer.(BeforeRecorder)
	switch {
	case r.w.ResumeFrom != "" && r.prior != nil && r.prior.Before != nil && r.prior.Started:
		return r.prior.Before // carried on: a resume of this run finds it too
	case !ok || r.w.Commit == nil || preflightFailed:
		return nil
	case r.w.ResumeFrom != "" && (r.prior == nil || r.prior.Started):
		b := BeforeFailed(fmt.Sprintf("the run this one resumes (%s) kept no record of it", r.w.ResumeFrom))
		return &b
	}
	b := rec.Before(r.ctx, r.w.Commit.reaches, r.w.writable())
	if b == nil {
		b = BeforeRun{} // made, and nothing in it: an empty record, not an absent one
	}
	return &b
}

// reaches says whether a commit of spec could take path: not Pixir's own
// state (.pixir/), nor what spec excludes.
func (spec *CommitSpec) reaches(path string) bool {
	return path != ".pixir" && !strings.HasPrefix(path, ".pixir/") && !excluded(spec.Exclude, path)
}

// BeforeRun is, of each workspace file (workspace-relative,
// slash-separated) that differed from HEAD's when a run started, what it
// was then: the id of the blob of its content (written to the
// repository's objects), BeforeAbsent (deleted), BeforeUnread (binary,
// too large to keep a copy of, or recorded by a read_only run, which
// writes nothing into the repository), or BeforeUnknown (not
// in HEAD, or not a file: nothing of it can be told apart from the run's
// part). A folder's entry ends with "/" (a repository nested in the
// work tree, which git lists as its folder: every file in it); nil: no
// record (no repository, or no commit yet), a file is committed whole;
// BeforeFailed: the record could not be made.
type BeforeRun map[string]string

// beforeFailedKey is the key of a record that could not be made (git
// failed, or said what it was not expected to): its value says why. No
// path is "".
const beforeFailedKey = ""

// BeforeFailed is the record of a run's start that could not be made,
// and why. A commit given it commits nothing of a file the user could
// have changed: nothing, as it cannot tell which they had.
func BeforeFailed(why string) BeforeRun { return BeforeRun{beforeFailedKey: why} }

// Failed says whether the record could not be made, and why.
func (b BeforeRun) Failed() (string, bool) {
	why, ok := b[beforeFailedKey]
	return why, ok
}

// Values of a BeforeRun entry that are not blobs.
const (
	BeforeAbsent  = "-"
	BeforeUnknown = "?"
	BeforeUnread  = "*"
)

// CommitRequest is one commit.
type CommitRequest struct {
	Message string
	Paths   []string
	// Before is the workspace's uncommitted work when the run started:
	// of a file in it, only the run's part is committed.
	Before BeforeRun
	// Since is, of each path the run changed, when it last did (the
	// decision of the step that changed it, or merged it): a change
	// made to the file after that is not the run's but the user's (or
	// another process's), made while the run went on, and cannot be told
	// apart from the run's in the file: the file is left out of the
	// commit, with why. A path without a time is not checked.
	Since map[string]time.Time
}

// LeftOut is a file of the run not committed, and why.
type LeftOut struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
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
	// Reason says why nothing was committed; of a commit made, why its
	// hash (Commit) is unknown, or that git was stopped after making it.
	Reason string `json:"reason,omitempty"`
	// Unchanged: nothing was committed because the files are as the
	// repository's HEAD has them — committed already, as by the run a
	// resumed run resumes. The commits after it are still made.
	Unchanged bool `json:"unchanged,omitempty"`
	// Missed: the run's work this commit was to hold is not committed (git
	// or a hook refused it, the workspace cannot commit, a file no commit
	// takes, or the commit before it was not made). A completed run with a
	// missed commit is partial: the work is done, the commit asked for is
	// not.
	Missed bool `json:"missed,omitempty"`
	// LeftOut are the run's files left out of the commit: files the user
	// had changed before the run, not committed, whose run's part cannot
	// be told apart from the user's (it overlaps their changes, or the
	// file was not in HEAD).
	LeftOut []LeftOut `json:"left_out,omitempty"`
}

// commit reports the problems of a workflow's commit.
func (v *validator) commit(w *Workflow) {
	c := w.Commit
	if c == nil {
		return
	}
	switch {
	case c.Commits != nil && c.Message != "":
		v.add(Problem{Code: "invalid_commit", Field: "commit.commits", Message: "commit has both message and commits; give message for one commit, or commits (each with its message) for several"})
	case c.Commits != nil:
		v.commitParts(c.Commits)
		v.untakenWrites(w)
	case strings.TrimSpace(c.Message) == "":
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
		if why := requiredPathProblem(p); why != "" {
			// Quoted as written (" " was quoted as "", which the spec does
			// not hold), with what it read as when that differs.
			written, quoted := p, fmt.Sprintf("%q", p)
			if len(c.requiresWritten) == len(c.Requires) && c.requiresWritten[k] != p {
				written = c.requiresWritten[k]
				quoted = fmt.Sprintf("%q (read as %q)", written, p)
			}
			v.add(Problem{Code: "invalid_commit", Field: fmt.Sprintf("commit.requires[%d]", k), Value: written,
				Message: fmt.Sprintf("commit.requires[%d] %s is not a file path inside the workspace: %s; give a relative path without wildcards, e.g. TODO/GAL-1.md", k, quoted, why)})
		}
	}
}

// requiredPathProblem says why a required file's path (normalized: see
// trimPath) is not one inside the workspace, or "": a path as a pattern
// without wildcards, by the one rule of patterns (no empty, "." or ".."
// segment, not absolute); a trailing "/" names a folder.
func requiredPathProblem(p string) string {
	if strings.ContainsAny(p, "*?[]{}\\") {
		return "it has a wildcard or an escape (*?[]{}\\); a required file is one path"
	}
	if strings.ContainsAny(p, "\x00\n\r") {
		return "it has a control character"
	}
	if p == "/" {
		return "it is absolute; write it relative to the workspace root"
	}
	return patternProblem(strings.TrimSuffix(p, "/"))
}

// commitParts reports the problems of a list of commits: each needs a
// message and valid patterns, at most one takes the rest, and no two can
// take the same file.
func (v *validator) commitParts(parts []CommitPart) {
	if len(parts) == 0 {
		v.add(Problem{Code: "invalid_commit", Field: "commit.commits", Message: "commit.commits is empty; give at least one {message, paths}, or use commit.message"})
	}
	rest := -1
	for k, c := range parts {
		field := fmt.Sprintf("commit.commits[%d]", k)
		if strings.TrimSpace(c.Message) == "" {
			v.add(Problem{Code: "invalid_commit", Field: field + ".message", Message: field + ".message is empty; give the commit message"})
		}
		if c.Paths == nil {
			if rest >= 0 {
				v.add(Problem{Code: "invalid_commit", Field: field + ".paths", Message: fmt.Sprintf("%s.paths is missing, as is commit.commits[%d].paths; only one commit may take the rest: give the others their paths", field, rest)})
			}
			rest = k
			continue
		}
		if len(c.Paths) == 0 {
			v.add(Problem{Code: "invalid_commit", Field: field + ".paths", Message: field + ".paths is empty; give the patterns of the files it takes, or leave paths out to take the rest"})
		}
		for j, p := range c.Paths {
			if why := patternProblem(p); why != "" {
				v.add(Problem{Code: "invalid_pattern", Field: fmt.Sprintf("%s.paths[%d]", field, j), Value: p,
					Message: fmt.Sprintf("%s.paths[%d] pattern %q is invalid: %s", field, j, p, why)})
			}
		}
	}
	valid := func(ps []string) []string { // an invalid pattern is reported above
		return slices.DeleteFunc(slices.Clone(ps), func(p string) bool { return patternProblem(p) != "" })
	}
	for a := range parts {
		for b := a + 1; b < len(parts); b++ {
			if ps, ok := firstOverlap(Overlap, valid(parts[a].Paths), valid(parts[b].Paths)); ok {
				v.add(Problem{Code: "invalid_commit", Field: fmt.Sprintf("commit.commits[%d].paths", b), Value: ps[1],
					Message: fmt.Sprintf("commit.commits[%d].paths %q and commit.commits[%d].paths %q can match the same file; every file goes in exactly one commit: make the patterns disjoint", b, ps[1], a, ps[0])})
			}
		}
	}
}

// untakenWrites reports the writers whose write set no commit can take:
// when every commit names its paths, a write-set pattern that meets none
// of them (nor exclude, nor .pixir/) is a file in no commit for sure, and
// the run would end with nothing committed. (A pattern that meets one
// only in part is checked when the run ends, against its real files.) An
// isolated writer whose work is never merged (merge: never or manual)
// brings no file into the workspace, so no commit needs to take them.
func (v *validator) untakenWrites(w *Workflow) {
	c, steps := w.Commit, w.Steps
	if len(c.Commits) == 0 || slices.ContainsFunc(c.Commits, func(p CommitPart) bool { return p.Paths == nil }) {
		return
	}
	taking := slices.Concat([]string{".pixir/**"}, c.Exclude)
	for _, p := range c.Commits {
		taking = append(taking, p.Paths...)
	}
	taking = slices.DeleteFunc(taking, func(p string) bool { return patternProblem(p) != "" })
	for i := range steps {
		s := &steps[i]
		if s.PermissionMode != Writer {
			continue
		}
		if p := w.MergePolicyOf(s); p == MergeNever || p == MergeManual {
			continue
		}
		for k, w := range s.WriteSet {
			if strings.Contains(w, "${") || patternProblem(w) != "" {
				continue // a fan-out binding, or a pattern reported with the step
			}
			if !slices.ContainsFunc(taking, func(t string) bool { return Overlap(w, t) }) {
				v.stepProblem(i, s, "invalid_commit", fmt.Sprintf("write_set[%d]", k), w,
					"write_set %q meets no commit's paths: a file it writes would be in no commit; add it to a commit's paths, leave out the paths of one commit so it takes the rest, or add it to commit.exclude", w)
			}
		}
	}
}

// commitWork makes the commit of a run that ended: only a completed one
// commits, and only the files it brought into the workspace.
func (r *runner) commitWork(out *Outcome) *CommitReport {
	spec := r.w.Commit
	if spec == nil || spec.Commits != nil {
		return nil
	}
	rep := &CommitReport{Status: NotCommitted, Message: spec.Message, Files: committable(spec, r.mergedBy, out.Steps)}
	switch {
	case out.Status != StatusCompleted:
		rep.Reason = fmt.Sprintf("the workflow is %s, not completed: nothing is committed", out.Status)
	case len(rep.Files) == 0:
		rep.Reason = "the run brought no file into the workspace: nothing to commit"
	case r.committer == nil:
		rep.Reason, rep.Missed = "this run cannot commit (no committer)", true
	default:
		got, err := r.committer.Commit(r.ctx, CommitRequest{Message: spec.Message, Paths: rep.Files, Before: r.before, Since: r.changedSince(rep.Files)})
		if err != nil {
			rep.Reason, rep.Missed = "the commit could not be made: "+tools.AsFailure(err).Message, true
			break
		}
		got.Message = spec.Message
		if got.Files == nil {
			got.Files = rep.Files
		}
		got.Missed = got.Status != Committed && !got.Unchanged
		rep = &got
	}
	r.record(WorkflowEvent{Kind: EventCommitted, Commit: rep})
	return rep
}

// commitParts makes the commits of a run whose spec lists several: only
// a completed run commits; every file the run brought in must be taken
// by one commit, or none is made; they are made in order, each recorded,
// and once one is not made the ones after it are not either (a chore
// commit never lands without the work before it) — unless its files are
// committed already: a run resumed after a kill between two commits
// finds the first in HEAD, makes no second copy of it, and makes the
// rest.
func (r *runner) commitParts(out *Outcome) []CommitReport {
	spec := r.w.Commit
	if spec == nil || spec.Commits == nil {
		return nil
	}
	files, untaken := splitFiles(spec.Commits, committable(spec, r.mergedBy, out.Steps))
	reps := make([]CommitReport, len(spec.Commits))
	// stop is why no more commits are made; stopMisses, whether that
	// leaves the work of a completed run uncommitted.
	stop, stopMisses := "", true
	switch {
	case out.Status != StatusCompleted:
		stop, stopMisses = fmt.Sprintf("the workflow is %s, not completed: nothing is committed", out.Status), false
	case len(untaken) > 0:
		stop = fmt.Sprintf("no commit takes %s: nothing is committed; add it to a commit's paths (or leave out the paths of one commit so it takes the rest), or to exclude", strings.Join(untaken, ", "))
	case r.committer == nil:
		stop = "this run cannot commit (no committer)"
	}
	for k, part := range spec.Commits {
		rep := CommitReport{Status: NotCommitted, Message: part.Message, Files: files[k], Reason: stop}
		switch {
		case stop != "":
			// A file no commit takes is missed whichever commit is empty;
			// after a refused commit, only the ones with files.
			rep.Missed = stopMisses && (len(untaken) > 0 || len(files[k]) > 0)
		case len(files[k]) == 0:
			rep.Reason = "the run brought no file this commit takes: nothing to commit"
		default:
			got, err := r.committer.Commit(r.ctx, CommitRequest{Message: part.Message, Paths: files[k], Before: r.before, Since: r.changedSince(files[k])})
			if err != nil {
				got = CommitReport{Status: NotCommitted, Reason: "the commit could not be made: " + tools.AsFailure(err).Message}
			}
			got.Message = part.Message
			if got.Files == nil {
				got.Files = files[k]
			}
			rep = got
			if rep.Status != Committed && !rep.Unchanged {
				rep.Missed = true
				stop = fmt.Sprintf("not made: the commit before it (%s) was not made", firstLine(part.Message))
			}
		}
		reps[k] = rep
		r.record(WorkflowEvent{Kind: EventCommitted, Commit: &reps[k]})
	}
	return reps
}

// settleCommits makes a completed run whose commit was missed partial:
// its steps are done, but the commit its spec asks for is not made, and
// partial work is never reported as success. Finish and Rebuild both
// call it, so the Outcome rebuilt from the Log is the same.
func settleCommits(o *Outcome) {
	missed := o.Commit != nil && o.Commit.Missed
	for _, c := range o.Commits {
		missed = missed || c.Missed
	}
	if !missed || o.Status != StatusCompleted {
		return
	}
	o.Status = StatusPartial
	o.SafeNextActions = append([]NextAction{{Action: ActionMakeMissedCommits, Args: map[string]string{"resume_from": o.WorkflowID},
		Reason: "every step is done but the commit asked for was not made (see commit for why): settle that, then call run_workflow again with resume_from: the steps are reused and only what is not committed yet is committed"}},
		nextActions(o)...)
}

// ActionMakeMissedCommits is the next action of a run whose steps are
// done but whose commit was missed.
const ActionMakeMissedCommits = "make_missed_commits"

// splitFiles gives each commit the files its paths match, the commit
// without paths the rest; untaken are the files no commit takes.
func splitFiles(parts []CommitPart, files []string) (taken [][]string, untaken []string) {
	taken = make([][]string, len(parts))
	for k := range taken {
		taken[k] = []string{}
	}
	rest := slices.IndexFunc(parts, func(c CommitPart) bool { return c.Paths == nil })
	for _, f := range files {
		k := slices.IndexFunc(parts, func(c CommitPart) bool { return c.Paths != nil && excluded(c.Paths, f) })
		if k < 0 {
			k = rest
		}
		if k < 0 {
			untaken = append(untaken, f)
			continue
		}
		taken[k] = append(taken[k], f)
	}
	return taken, untaken
}

// noteLanded keeps, of each file the step run of a checkpoint_decided
// event changed in the workspace (a shared writer's changes, an isolated
// one's merge), the time it was decided: the run's last change to the
// file is before it, and a change after it is someone else's (the commit
// leaves that file out). A step reused from an earlier run is decided at
// the start of this one, after its work was done.
func (r *runner) noteLanded(ev WorkflowEvent) {
	o := ev.Outcome
	if ev.Kind != EventCheckpointDecided || o == nil || r.w.Commit == nil {
		return
	}
	var paths []string
	if o.Merge != nil {
		paths = mergedPaths(o.Merge.Applied)
	}
	if o.WorkspaceMode == Shared && o.Posture == Writer && o.Changes != nil {
		paths = slices.Concat(paths, o.Changes.Added, o.Changes.Changed, o.Changes.Deleted, o.Changes.Mode)
	}
	if len(paths) == 0 {
		return
	}
	// The wall clock, not the run's (opt.Now, simulated in tests): it
	// is compared with the files' change times.
	now := time.Now()
	r.changedMu.Lock()
	defer r.changedMu.Unlock()
	if r.changedAt == nil {
		r.changedAt = map[string]time.Time{}
	}
	for _, p := range paths {
		r.changedAt[p] = now
	}
}

// changedSince is, of files, when the run last changed each (noteLanded).
func (r *runner) changedSince(files []string) map[string]time.Time {
	r.changedMu.Lock()
	defer r.changedMu.Unlock()
	since := map[string]time.Time{}
	for _, p := range files {
		if t, ok := r.changedAt[p]; ok {
			since[p] = t
		}
	}
	return since
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
		if !spec.reaches(p) {
			continue
		}
		files = append(files, p)
	}
	slices.Sort(files)
	return files
}

// excluded reports whether path matches one of patterns.
func excluded(patterns []string, path string) bool {
	for _, p := range patterns {
		if ok, _ := doublestar.Match(p, path); ok {
			return true
		}
	}
	return false
}

// CommitLines are an outcome's lines about its commit (commit) or its
// commits (commits), as its table says them.
func CommitLines(commit *CommitReport, commits []CommitReport) []string {
	var lines []string
	if commit != nil {
		lines = append(lines, commitText(commit))
	}
	for k := range commits {
		c := &commits[k]
		if c.Status != Committed { // which of the commits: the reasons may be alike
			lines = append(lines, "Not committed ("+firstLine(c.Message)+"): "+c.Reason)
			continue
		}
		lines = append(lines, commitText(c))
	}
	return lines
}

// commitText is the outcome's line about its commit.
func commitText(c *CommitReport) string {
	if c.Status == Committed {
		hash := c.Commit
		if len(hash) > 12 {
			hash = hash[:12]
		}
		if hash == "" { // made, its hash not read
			return fmt.Sprintf("Committed (%s): %s; its hash is unknown: %s", plural.Of(len(c.Files), "file", "files"), firstLine(c.Message), c.Reason)
		}
		return fmt.Sprintf("Committed %s (%s): %s", hash, plural.Of(len(c.Files), "file", "files"), firstLine(c.Message)) + leftOutText(c)
	}
	if len(c.LeftOut) > 0 {
		return "Not committed: " + c.Reason + leftOutText(c)
	}
	return "Not committed: " + c.Reason
}

// leftOutText names the files a commit left out, and why.
func leftOutText(c *CommitReport) string {
	var b strings.Builder
	for _, l := range c.LeftOut {
		fmt.Fprintf(&b, "; %s left out: %s", l.Path, l.Reason)
	}
	return b.String()
}
