package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pixir-go/pixir/workflows"
)

// gitCommitter is workflows.Committer for a session's workspace: the
// runtime's own git, never a child's (children cannot write .git). It
// commits exactly the paths it is given, with literal pathspecs, so a
// file name cannot widen the commit and whatever else is staged or
// changed in the repository stays as it is.
type gitCommitter struct {
	root string
	mode func() Mode
}

// Preflight is the practice's phase 1 for any workflow that asks: the
// files it requires exist, and with a base the workspace is a git work
// tree (not a bare repository) whose HEAD is on a branch other than the
// base. Each problem says what is wrong and what to do.
func (c gitCommitter) Preflight(ctx context.Context, req workflows.PreflightRequest) []string {
	var problems []string
	root, err := filepath.EvalSymlinks(c.root)
	if err != nil {
		root = c.root
	}
	for _, p := range req.Files {
		// A link out of the workspace (or into Pixir's own folder) is not
		// the file the workflow requires, as the file tools would see it.
		real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(p)))
		if err == nil && (!within(root, real) || within(filepath.Join(root, ".pixir"), real)) {
			err = errors.New("outside the workspace")
		}
		if err == nil {
			_, err = os.Stat(real)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s does not exist in the workspace (%s); create it, or name an existing one", p, c.root))
		}
	}
	if req.Base == "" {
		return problems
	}
	git := func(args ...string) (string, error) {
		// In C's locale: gitUnusable reads git's words.
		out, err := c.git(ctx, []string{"LC_ALL=C"}, args...)
		return strings.TrimSpace(out), err
	}
	switch bare, err := git("rev-parse", "--is-bare-repository"); {
	case err != nil:
		if why := gitUnusable(err, bare); why != "" {
			return append(problems, why)
		}
		return append(problems, fmt.Sprintf("the workspace is not in a git repository (%s); run in a git work tree", firstLineOf(bare)))
	case bare == "true":
		return append(problems, "the workspace is a bare repository; run in a work tree of it (git worktree add <path> -b <branch>)")
	}
	branch, err := git("symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		at, _ := git("rev-parse", "--short", "HEAD")
		return append(problems, fmt.Sprintf("HEAD is detached (at %s); switch to a branch of its own for the work (git switch -c <branch>)", at))
	}
	if branch == req.Base {
		problems = append(problems, fmt.Sprintf("the workspace is on %s, the base branch; the work needs a branch of its own (git switch -c <branch>)", branch))
	}
	if why := c.inProgress(ctx); why != "" {
		problems = append(problems, why)
	}
	return problems
}

// inProgress says which git operation the work tree is in the middle of
// (a merge, cherry-pick, revert, rebase or am, or a sequence of
// cherry-picks or reverts paused between two), and that a commit must
// wait for it: "" when none is, or when git cannot tell (a commit then
// says what git says). A run's commit made then would take the
// operation's state as its own: a merge commit whose tree lacks the
// other branch's changes (history calling it merged), a cherry-picked
// commit's author, and the state cleared.
func (c gitCommitter) inProgress(ctx context.Context) string {
	// sequencer/: a cherry-pick or revert of several commits, paused
	// after a step the user resolved and committed (its _HEAD is gone
	// then; git cherry-pick --continue picks the rest).
	states := []struct{ path, what, finish string }{
		{"MERGE_HEAD", "merge", "merge"}, {"CHERRY_PICK_HEAD", "cherry-pick", "cherry-pick"}, {"REVERT_HEAD", "revert", "revert"},
		{"rebase-merge", "rebase", "rebase"}, {"rebase-apply", "rebase (or git am)", "rebase"},
		{"sequencer", "cherry-pick or revert of several commits", "cherry-pick or revert (git cherry-pick --continue or --abort, git revert likewise)"},
	}
	args := []string{"rev-parse"}
	for _, s := range states {
		args = append(args, "--git-path", s.path)
	}
	out, err := c.git(ctx, nil, args...)
	if err != nil {
		return ""
	}
	where := strings.Split(strings.TrimSpace(out), "\n")
	if len(where) != len(states) {
		return ""
	}
	for i, s := range states {
		p := where[i]
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.root, p)
		}
		if _, err := os.Lstat(p); err == nil {
			return fmt.Sprintf("a %s is in progress in the repository (%s exists): nothing is committed during it; finish or abort the %s first (git status says how), then run again", s.what, filepath.ToSlash(where[i]), s.finish)
		}
	}
	return ""
}

// Commit commits req's paths (commitPaths), but not a file changed after
// the run last changed it (req.Since): the user's edit made while the
// run went on, which the commit would have taken as the run's work. Such
// a file is left out, and the report says which and why.
func (c gitCommitter) Commit(ctx context.Context, req workflows.CommitRequest) (workflows.CommitReport, error) {
	kept, late := changedAfter(c.root, req.Paths, req.Since)
	if len(late) == 0 {
		return c.commitPaths(ctx, req)
	}
	if len(kept) == 0 {
		return workflows.CommitReport{Status: workflows.NotCommitted, Message: req.Message, Files: req.Paths, LeftOut: late,
			Reason: "every file of the run is left out (see left_out): nothing to commit"}, nil
	}
	sub := req
	sub.Paths = kept
	rep, err := c.commitPaths(ctx, sub)
	rep.LeftOut = append(rep.LeftOut, late...)
	if rep.Unchanged {
		// The rest is committed already; the files left out are not.
		rep.Unchanged = false
		rep.Reason = "every file of the run that differs from HEAD is left out (see left_out): nothing to commit"
	}
	return rep, err
}

// changedAfter splits paths into those not changed since the run last
// changed them (since) and, left out, those changed after: their status
// change time (which no process can set back) is later. A file made
// again after the run removed it is changed; a file that is gone is not
// looked at (the commit takes it as gone).
func changedAfter(root string, paths []string, since map[string]time.Time) (kept []string, late []workflows.LeftOut) {
	for _, p := range paths {
		t, ok := since[p]
		if !ok {
			kept = append(kept, p)
			continue
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil || !changedTime(fi).After(t) {
			kept = append(kept, p)
			continue
		}
		late = append(late, workflows.LeftOut{Path: p, Reason: fmt.Sprintf(
			"changed at %s, after the run's last change to it (%s): your edit (or another program's) made while the run went on cannot be told apart from the run's; commit it yourself",
			changedTime(fi).Format("15:04:05.000"), t.Format("15:04:05.000"))})
	}
	return kept, late
}

// commitPaths commits exactly req's paths.
func (c gitCommitter) commitPaths(ctx context.Context, req workflows.CommitRequest) (rep workflows.CommitReport, _ error) {
	rep = workflows.CommitReport{Status: workflows.NotCommitted, Message: req.Message, Files: req.Paths}
	if c.mode() == ModeReadOnly {
		rep.Reason = "the session is read_only: nothing is committed"
		return rep, nil
	}
	if err := ctx.Err(); err != nil { // a commit before it was cancelled, or the run
		rep.Reason = fmt.Sprintf("the run was cancelled (%v) before this commit: nothing is committed", err)
		return rep, nil
	}
	git := func(args ...string) (string, error) { return c.git(ctx, nil, args...) }
	where, err := c.git(ctx, []string{"LC_ALL=C"}, "rev-parse", "--show-toplevel", "--git-path", "index") // C: gitUnusable reads git's words
	if err != nil {
		rep.Reason = gitUnusable(err, where)
		if rep.Reason == "" {
			rep.Reason = fmt.Sprintf("the workspace is not in a git repository (%v: %s)", err, firstLineOf(where))
		}
		return rep, nil
	}
	top, index, _ := strings.Cut(strings.TrimSpace(where), "\n")
	if !filepath.IsAbs(index) {
		index = filepath.Join(c.root, index)
	}
	// locked says, when git refused, whether the index's lock is why: git
	// takes it to stage and to commit, and a git stopped without its
	// chance to clean up (killed, or Pixir itself killed) leaves it. It is
	// never removed here: Pixir cannot know that no git is running.
	locked := func(command string) (string, bool) {
		lock := index + ".lock"
		if _, err := os.Lstat(lock); err != nil {
			return "", false
		}
		if rel, err := filepath.Rel(top, lock); err == nil && filepath.IsLocal(rel) {
			lock = rel // .git/index.lock, as the user finds it
		}
		return fmt.Sprintf("git %s refused: %s exists (another git process is running, or one was stopped: remove it if none is)", command, filepath.ToSlash(lock)), true
	}
	if why := c.inProgress(ctx); why != "" {
		rep.Reason = why
		return rep, nil
	}
	// A path neither in the workspace nor tracked has nothing to commit
	// (a deletion committed already): git add would refuse it.
	tracked, err := git(append([]string{"ls-files", "-z", "--"}, req.Paths...)...)
	if err != nil {
		rep.Reason = fmt.Sprintf("git ls-files refused (%v): %s", err, tracked)
		return rep, nil
	}
	paths := []string{"--"}
	for _, p := range req.Paths {
		if _, err := os.Lstat(filepath.Join(c.root, filepath.FromSlash(p))); err == nil || slices.Contains(strings.Split(tracked, "\x00"), p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 1 {
		rep.Reason, rep.Unchanged = nothingNew, true
		return rep, nil
	}
	if why, failed := req.Before.Failed(); failed {
		// Which of these files the user had changed is not known: none
		// is committed, unless none differs from HEAD.
		status, err := git(append([]string{"--no-optional-locks", "status", "--porcelain=v2", "-z", "--no-renames", "--untracked-files=all", "--no-ahead-behind"}, paths...)...)
		if err == nil && !slices.ContainsFunc(splitZ(status), func(e string) bool { return !strings.HasPrefix(e, "# ") }) {
			rep.Reason, rep.Unchanged = nothingNew, true
			return rep, nil
		}
		rep.Reason = fmt.Sprintf("your uncommitted work when the run started could not be recorded (%s): nothing is committed, as your edits of the run's files could not be told apart from the run's; commit the run's files yourself", why)
		return rep, nil
	}
	if touchesBefore(req.Before, paths[1:]) {
		if _, err := git("rev-parse", "--verify", "--quiet", "HEAD"); err == nil {
			// The user had changed some of these files before the run:
			// of those, only the run's part is committed.
			return c.commitPart(ctx, req, rep, paths[1:], locked)
		}
		// A branch with no commit yet: the files the user had made are
		// left out, as one not in HEAD is on any branch; the rest are
		// committed whole (they were, the user's with them).
		kept := []string{"--"}
		for _, p := range paths[1:] {
			if _, ok := beforeOf(req.Before, p); !ok {
				kept = append(kept, p)
				continue
			}
			rep.LeftOut = append(rep.LeftOut, workflows.LeftOut{Path: p, Reason: "you had made it before the run, not committed, and the branch has no commit yet: the run's part cannot be told apart from yours; commit it yourself"})
		}
		if len(kept) == 1 {
			rep.Reason = "every file of the run that differs from HEAD is left out (see left_out): nothing to commit"
			return rep, nil
		}
		paths, rep.Files = kept, kept[1:]
	}
	// What the user's index holds of these paths before they are staged:
	// when no commit is made, it is put back, so the run's files are not
	// left staged (a commit of the user's own would take them).
	held, heldErr := git(append([]string{"ls-files", "-s", "-z", "--full-name"}, paths...)...)
	if out, err := git(append([]string{"add", "--all"}, paths...)...); err != nil {
		rep.Reason = fmt.Sprintf("git add refused (%v): %s", err, out)
		if why, ok := locked("add"); ok {
			rep.Reason = why
		}
		return rep, nil // git add writes the index whole or not at all
	}
	if heldErr == nil {
		staged := slices.Clone(paths[1:])
		defer func() {
			if rep.Status == workflows.Committed {
				return
			}
			if err := c.unstage(ctx, staged, held); err != nil {
				rep.Reason += fmt.Sprintf("; the run's files are left staged, git could not put the index back (%v): git reset -q -- <the files> unstages them (with any version of them you had staged)", err)
			}
		}()
	}
	// Only the paths whose content differs from HEAD's are committed and
	// reported: a resumed run names the work of the runs it reuses, and a
	// completed run it resumes has committed some of it already.
	before, err := git("rev-parse", "--verify", "--quiet", "HEAD")
	before = strings.TrimSpace(before)
	if err != nil {
		before = "" // an unborn branch: the commit is its first
	} else {
		out, err := git(append([]string{"diff", "--cached", "--name-only", "--relative", "--no-renames", "-z", "HEAD"}, paths...)...)
		if err != nil {
			rep.Reason = fmt.Sprintf("git diff refused (%v): %s", err, out)
			return rep, nil
		}
		changed := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
		if out == "" {
			changed = nil
		}
		kept := rep.Files[:0:0]
		for _, p := range paths[1:] {
			if slices.Contains(changed, p) {
				kept = append(kept, p)
			}
		}
		if rep.Files = kept; len(kept) == 0 {
			rep.Files = req.Paths
			rep.Reason, rep.Unchanged = nothingNew, true
			return rep, nil
		}
		paths = append([]string{"--"}, kept...)
	}
	// The tree the commit is to make, for madeAfterAll.
	tree, err := c.treeOf(ctx, before, paths[1:])
	if err != nil {
		rep.Reason = fmt.Sprintf("the commit's tree could not be made (%v)", err)
		if cancelled := ctx.Err(); cancelled != nil {
			rep.Reason = fmt.Sprintf("the run was cancelled (%v) before this commit: nothing is committed", cancelled)
		}
		return rep, nil
	}
	// --only (implied by the paths): only these paths' contents, whatever
	// else the index holds.
	if out, err := git(append([]string{"commit", "--quiet", "--only", "-m", req.Message}, paths...)...); err != nil {
		// git moves HEAD before its post-commit hook runs: stopped there
		// (the run cancelled) it has made the commit, and calling it
		// refused would have the run call it missed. The repository says.
		if hash, made := c.madeAfterAll(ctx, before, tree); made {
			rep.Status, rep.Commit = workflows.Committed, hash
			rep.Reason = fmt.Sprintf("git was stopped (%v) after it made the commit: HEAD holds it", err)
			return rep, nil
		}
		rep.Reason = commitRefused(ctx, err, out, locked)
		return rep, nil
	}
	// The commit is made: whatever becomes of reading its hash, it is
	// reported committed (a list of commits goes on; calling it missed
	// would have a resumed run commit nothing, its files in HEAD already),
	// with why its hash is unknown.
	rep.Status = workflows.Committed
	hash, err := c.git(context.WithoutCancel(ctx), nil, "rev-parse", "--verify", "HEAD") // made: read even once cancelled
	if err != nil {
		rep.Reason = fmt.Sprintf("the commit was made, but its hash could not be read (%v: %s); git log shows it", err, firstLineOf(hash))
		return rep, nil
	}
	rep.Commit = strings.TrimSpace(hash)
	return rep, nil
}

// unstage puts the user's index back as it was for paths (held: git
// ls-files -s -z --full-name of them then) after a commit that was not
// made: without it, a refused commit (a hook, a missing identity) left
// the run's files staged. It runs on when ctx is cancelled, and says
// what git said when it could not (another git holding the index).
func (c gitCommitter) unstage(ctx context.Context, paths []string, held string) error {
	ctx = context.WithoutCancel(ctx)
	if out, err := c.git(ctx, nil, append([]string{"rm", "--cached", "-q", "--ignore-unmatch", "--"}, paths...)...); err != nil {
		return fmt.Errorf("git rm --cached: %w: %s", err, firstLineOf(out))
	}
	if held != "" {
		if out, err := c.gitIn(ctx, nil, strings.NewReader(held), "update-index", "-z", "--index-info"); err != nil {
			return fmt.Errorf("git update-index: %w: %s", err, firstLineOf(out))
		}
	}
	return nil
}

// gitStopGrace is how long a git command stopped by a cancel (SIGTERM)
// has to end before it is killed, and how long its output is read after
// it ended: a hook's process that outlives git (a post-commit hook's
// background job) holds that output open, and would hold Commit until it
// ends. A variable so that tests need not wait it out.
var gitStopGrace = 5 * time.Second

// git runs git with literal pathspecs in the workspace, env added to
// Pixir's: its output as it wrote it (paths of -z output may begin or end
// with spaces); on failure, what it said, for the reason.
func (c gitCommitter) git(ctx context.Context, env []string, args ...string) (string, error) {
	return c.gitIn(ctx, env, nil, args...)
}

// gitIn is git with stdin read from in (nil: none).
func (c gitCommitter) gitIn(ctx context.Context, env []string, in io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--literal-pathspecs"}, args...)...)
	cmd.Stdin = in
	cmd.Dir = c.root
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	// Stopped, git is asked to end (SIGTERM), not killed: on a signal it
	// removes its lock files (.git/index.lock), and killed it leaves them,
	// so every git in the repository after it refuses until one removes
	// them by hand. Killed only if it has not ended within gitStopGrace.
	// git runs in a session of its own (so in a process group of its own),
	// and the signals go to the group: git passes none to its hooks, so a
	// hook (and what it started) signalled through git alone ran on after
	// the run was cancelled. A session, not only a group: a group of the
	// terminal's session that is not its foreground is stopped (SIGTTIN)
	// by a hook that reads /dev/tty, and a stopped git neither commits nor
	// removes its locks on SIGTERM. Without a terminal such a hook's read
	// fails at once (ENXIO), as it does under an editor, which starts
	// pixir acp without one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var kill atomic.Pointer[time.Timer]
	cmd.Cancel = func() error {
		group := -cmd.Process.Pid
		kill.Store(time.AfterFunc(gitStopGrace, func() { _ = syscall.Kill(group, syscall.SIGKILL) }))
		if err := syscall.Kill(group, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		return nil
	}
	cmd.WaitDelay = gitStopGrace // then exec kills git itself, and the timer its group
	var out, said bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &said
	err := cmd.Run()
	if t := kill.Load(); t != nil && errors.Is(syscall.Kill(-cmd.Process.Pid, 0), syscall.ESRCH) {
		// The group ended on SIGTERM: no process is left to kill, and its
		// number may be another group's by the time the timer fires.
		t.Stop()
	}
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		// git itself ended well; only a process it left behind held its
		// output open past gitStopGrace. What git did stands (a commit is
		// made): its output as read.
		err = nil
	}
	if err != nil {
		return strings.TrimSpace(said.String() + out.String()), err
	}
	return out.String(), nil
}

// madeAfterAll reports whether a git commit that failed made its commit
// all the same, and its hash: HEAD moved from before ("" on an unborn
// branch) to a commit whose parent is before and whose tree is tree, the
// one the commit was to make, decided before git ran (a hook may change
// the working files after git made the commit: a tree made from them
// afterwards says "not made" of a commit made). Both ways of committing
// (Commit's whole files, commitPart's run's part) decide by it. It runs
// on when ctx is cancelled: it reads what a cancelled commit left.
func (c gitCommitter) madeAfterAll(ctx context.Context, before, tree string) (string, bool) {
	head, err := c.git(context.WithoutCancel(ctx), nil, "show", "-s", "--format=%H %T %P", "HEAD")
	fields := strings.Fields(head)
	if err != nil || len(fields) < 2 || fields[0] == before || fields[1] != tree {
		return "", false // HEAD did not move, or not to the commit's tree
	}
	if parents := fields[2:]; !slices.Equal(parents, slices.DeleteFunc([]string{before}, func(s string) bool { return s == "" })) {
		return "", false // not a commit made on before
	}
	return fields[0], true
}

// treeOf is the tree a commit of paths on before ("": an unborn branch)
// makes: before's tree with paths as the workspace has them (what git
// commit --only commits), built in an index of its own.
func (c gitCommitter) treeOf(ctx context.Context, before string, paths []string) (string, error) {
	index, err := os.CreateTemp("", "pixir-commit-index-*")
	if err != nil {
		return "", err
	}
	index.Close()
	os.Remove(index.Name()) // git writes a new index there, and removes nothing
	defer os.Remove(index.Name())
	env := []string{"GIT_INDEX_FILE=" + index.Name()}
	readTree := []string{"read-tree", before}
	if before == "" {
		readTree = []string{"read-tree", "--empty"}
	}
	if out, err := c.git(ctx, env, readTree...); err != nil {
		return "", fmt.Errorf("git read-tree: %w: %s", err, firstLineOf(out))
	}
	if out, err := c.git(ctx, env, append([]string{"add", "--all", "--"}, paths...)...); err != nil {
		return "", fmt.Errorf("git add: %w: %s", err, firstLineOf(out))
	}
	tree, err := c.git(ctx, env, "write-tree")
	if err != nil {
		return "", fmt.Errorf("git write-tree: %w: %s", err, firstLineOf(tree))
	}
	return strings.TrimSpace(tree), nil
}

// nothingNew is the reason of a commit not made because the run's files
// are as HEAD has them.
const nothingNew = "the run's files are as the repository's HEAD has them (committed already): nothing to commit"

// gitUnusable says why git could not look at the workspace when the
// reason is not that it is outside a repository, with what to do: git is
// not installed (or not on PATH), or git refuses the repository because
// another user owns it (its safe.directory check: a folder shared with
// the team, a checkout made by root or in a container). "" otherwise.
func gitUnusable(err error, out string) string {
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Sprintf("git is not installed or not on PATH (%v); install git, or put it on the PATH Pixir runs with", err)
	}
	if !strings.Contains(out, "dubious ownership") {
		return ""
	}
	fix := "git config --global --add safe.directory <the repository>"
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "git config ") {
			fix = line
		}
	}
	return fmt.Sprintf("git refuses the repository: another user owns it (%s); if you trust it, tell git so (%s) and run again", firstLineOf(out), fix)
}

// firstLineOf is the first line of s.
func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// commitRefused says why git commit did not make the commit (out: what
// it printed): the run was cancelled meanwhile, another git held the
// repository's lock, or git refused.
func commitRefused(ctx context.Context, err error, out string, locked func(string) (string, bool)) string {
	if cancelled := ctx.Err(); cancelled != nil {
		return fmt.Sprintf("the run was cancelled (%v) while git made the commit, before it was made: %s", cancelled, out)
	}
	if why, ok := locked("commit"); ok {
		return why
	}
	return fmt.Sprintf("git commit refused (%v): %s", err, out)
}
