package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pixir-go/pixir/workflows"
)

// A run's part of a file the user had changed too (uncommitted) when the
// run started: the commit takes HEAD's version with the run's change
// applied (git merge-file of HEAD's version, the version before the run,
// and the workspace's), staged in an index of the commit's own, so the
// user's working file, their staged changes and their edits to that file
// stay as they are, out of the commit. A change that does not apply to
// HEAD's version cleanly leaves the file out, and says so.

// Before records the workspace's uncommitted work when a run starts (see
// workflows.BeforeRecorder): each tracked file that differs from HEAD
// (its content then, written to the repository's objects, or deleted),
// and each untracked file (unknown: nothing of it is in HEAD).
// Without a repository there is no record. On a branch with no commit
// yet, each file the user has is BeforeUnknown. When git cannot tell (it fails, or
// says what it is not expected to), the record says so
// (workflows.BeforeFailed), and a commit given it commits nothing: no
// record there meant "commit whole", the user's edits with the run's. Only the
// paths reach allows are recorded (nil: all): a file no commit of the run
// can take is neither read nor copied. Of those, only the files copy
// allows (nil: all) are copied; the others are BeforeUnread.
//
// A read_only session writes nothing into the repository: its record
// says which files the user had changed without copying them (each
// BeforeUnread), so that a commit made after its mode was changed during
// the run still leaves the user's edits out. git reads the index without refreshing
// it (--no-optional-locks): a refresh rewrites the user's .git/index
// under its lock, and a git the user runs meanwhile (their editor's)
// fails. A binary file, or one over beforeMaxSize, is not copied into
// the repository's objects (a 100 MB file took seconds, and its size
// again on disk): it is recorded BeforeUnread, and a run that changes it
// leaves it out of the commit (merge-file refuses a binary one anyway).
func (c gitCommitter) Before(ctx context.Context, reach, copy func(path string) bool) workflows.BeforeRun {
	readOnly := c.mode() == ModeReadOnly
	unborn := false
	if _, err := c.git(ctx, nil, "rev-parse", "--verify", "--quiet", "HEAD"); err != nil {
		if _, err := c.git(ctx, nil, "rev-parse", "--git-dir"); err != nil {
			return nil // no repository: nothing to commit to (the commit says so)
		}
		// A branch with no commit yet: no file is in HEAD, and every one
		// the user has is theirs alone (a commit leaves it out).
		unborn = true
	}
	// git status, not git diff: git diff refreshes the index and writes
	// it whatever --no-optional-locks says. Untracked files, not
	// folders: a file the run makes in a folder the user had made (or
	// left empty) is the run's own. (A repository nested in the work tree
	// is listed as its folder, "sub/".)
	prefix, err := c.git(ctx, nil, "rev-parse", "--show-prefix")
	if err != nil {
		return workflows.BeforeFailed(fmt.Sprintf("git rev-parse --show-prefix: %v: %s", err, firstLineOf(prefix)))
	}
	prefix = strings.TrimSpace(prefix)
	status, err := c.git(ctx, nil, "--no-optional-locks", "status", "--porcelain=v2", "-z", "--no-renames", "--untracked-files=all", "--no-ahead-behind", "--", ".")
	if err != nil {
		return workflows.BeforeFailed(fmt.Sprintf("git status: %v: %s", err, firstLineOf(status)))
	}
	rec := workflows.BeforeRun{}
	var changed []string
	for _, e := range splitZ(status) {
		// "1 XY sub mH mI mW hH hI path", "u XY sub m1 m2 m3 mW h1 h2 h3
		// path", "? path"; paths from the top of the work tree.
		var p string
		switch f := strings.SplitN(e, " ", 11); {
		case f[0] == "#":
			// A header the user's git config asks for (status.showStash
			// gives "# stash N"): not a file. Taken for an unknown line,
			// it left no record, and the user's edits were committed.
			continue
		case f[0] == "1" && len(f) >= 9:
			p = strings.SplitN(e, " ", 9)[8]
		case f[0] == "u" && len(f) == 11:
			p = f[10]
		case f[0] == "?" && len(f) >= 2:
			p = e[2:]
		default:
			return workflows.BeforeFailed(fmt.Sprintf("git status gave a line this Pixir cannot read: %q", e))
		}
		if !strings.HasPrefix(p, prefix) {
			return workflows.BeforeFailed(fmt.Sprintf("git status named %q, outside the workspace (%s)", p, prefix))
		}
		p = p[len(prefix):]
		if reach != nil && !strings.HasSuffix(p, "/") && !reach(p) {
			continue // no commit of the run takes it
		}
		if e[0] == '?' || unborn {
			rec[p] = workflows.BeforeUnknown
		} else {
			changed = append(changed, p)
		}
	}
	var hash []string
	for _, p := range changed {
		fi, err := os.Lstat(filepath.Join(c.root, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			rec[p] = workflows.BeforeAbsent
		case err == nil && fi.Mode().IsRegular() && !strings.ContainsAny(c.root+p, "\n\r"):
			if readOnly || (copy != nil && !copy(p)) || fi.Size() > beforeMaxSize || binaryFile(filepath.Join(c.root, filepath.FromSlash(p))) {
				rec[p] = workflows.BeforeUnread
				continue
			}
			hash = append(hash, p)
		default:
			rec[p] = workflows.BeforeUnknown
		}
	}
	if len(hash) > 0 {
		// --stdin-paths reads paths from the top of the work tree, not
		// from the current folder: absolute ones are the same anywhere.
		var in strings.Builder
		for _, p := range hash {
			in.WriteString(filepath.Join(c.root, filepath.FromSlash(p)) + "\n")
		}
		out, err := c.gitIn(ctx, nil, strings.NewReader(in.String()), "hash-object", "-w", "--stdin-paths")
		blobs := strings.Fields(out)
		if err != nil || len(blobs) != len(hash) {
			for _, p := range hash {
				rec[p] = workflows.BeforeUnknown
			}
		} else {
			for i, p := range hash {
				rec[p] = blobs[i]
			}
		}
	}
	if len(rec) == 0 {
		return nil
	}
	return rec
}

// beforeMaxSize is the size of the largest file the record of the user's
// work keeps a copy of.
const beforeMaxSize = 8 << 20

// binaryFile says whether the file at path is binary as git tells it (a
// NUL in its first 8000 bytes), or cannot be read.
func binaryFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	head := make([]byte, 8000)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return true
	}
	return bytes.IndexByte(head[:n], 0) >= 0
}

// splitZ splits git's -z output.
func splitZ(out string) []string {
	out = strings.TrimRight(out, "\x00")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\x00")
}

// beforeOf is what the record says of a path: its own entry, or that of
// an untracked folder holding it.
func beforeOf(rec workflows.BeforeRun, p string) (string, bool) {
	if b, ok := rec[p]; ok {
		return b, true
	}
	for dir := p; ; {
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			return "", false
		}
		dir = dir[:i]
		if b, ok := rec[dir+"/"]; ok {
			return b, true
		}
	}
}

// touchesBefore says whether a path of the commit was changed by the
// user before the run.
func touchesBefore(rec workflows.BeforeRun, paths []string) bool {
	for _, p := range paths {
		if _, ok := beforeOf(rec, p); ok {
			return true
		}
	}
	return false
}

// part is the run's part of one file, to stage: its blob and mode, or its
// removal.
type part struct {
	path, mode, blob string
	remove           bool
	// What the user's index is to hold of path once the commit is made
	// (stageMode, stage), in place of the entry it held (seen): the
	// committed version where it held HEAD's, else what the user had
	// staged with the run's part merged in.
	seen, stageMode, stage string
}

// userStage sets what the user's index is to hold of pt's path once the
// commit is made, or says why it cannot (the file is then left out of
// the commit): staged as it was, the user's next commit would take back
// the run's change.
func (c gitCommitter) userStage(ctx context.Context, head string, pt *part) string {
	const staged = "you had staged a change to it before the run, "
	cur, err := c.git(ctx, nil, "ls-files", "-s", "-z", "--", pt.path)
	if err != nil {
		return fmt.Sprintf("its entry in your index could not be read (%v: %s)", err, firstLineOf(cur))
	}
	f := strings.Fields(strings.TrimRight(cur, "\x00"))
	old, err := c.git(ctx, nil, "rev-parse", "--verify", "--quiet", head+":./"+pt.path)
	old = strings.TrimSpace(old)
	switch {
	case len(f) < 4 || f[2] != "0":
		return staged + "its removal (or it is unmerged): commit it yourself"
	case err == nil && f[1] == old:
		// Its content as HEAD's: a mode the user staged alone (a chmod
		// +x) stays staged.
		pt.seen, pt.stageMode, pt.stage = f[1], f[0], pt.blob
		return ""
	case pt.remove:
		return staged + "and the run deleted it: commit it yourself"
	}
	var blobs [3][]byte
	for i, b := range []string{f[1], old, pt.blob} {
		out, err := c.git(ctx, nil, "cat-file", "blob", b)
		if err != nil {
			return fmt.Sprintf("its versions could not be read (git cat-file: %v: %s)", err, firstLineOf(out))
		}
		blobs[i] = []byte(out)
	}
	merged, clean, err := c.mergeFile(ctx, blobs[0], blobs[1], blobs[2])
	if err != nil || !clean {
		return staged + "and the run's change to it does not merge with what you staged cleanly: commit it yourself"
	}
	// The three were as git stores them: the merge is too, and is not
	// cleaned again (a filter that is not idempotent would change it).
	blob, err := c.gitIn(ctx, nil, bytes.NewReader(merged), "hash-object", "-w", "--stdin", "--no-filters")
	if err != nil {
		return fmt.Sprintf("its run's part could not be staged (git hash-object: %v: %s)", err, firstLineOf(blob))
	}
	pt.seen, pt.stageMode, pt.stage = f[1], f[0], strings.TrimSpace(blob)
	return ""
}

// runsPart is the run's part of path, which the user had changed before
// the run (b: what it was then): nil when the run's part is nothing,
// or why it cannot be told apart from the user's.
func (c gitCommitter) runsPart(ctx context.Context, head, path, b string) (*part, string, error) {
	const yours = "you had changed it before the run, not committed, "
	if b == workflows.BeforeUnread {
		return nil, yours + "and no copy of it was kept (it is binary or over 8 MiB, no step's write set names it, or the run started read_only): the run's part cannot be told apart from yours; commit it yourself", nil
	}
	if b == workflows.BeforeUnknown {
		return nil, yours + "and it is not in HEAD (or not a file): the run's part cannot be told apart from yours; commit it yourself", nil
	}
	tree, err := c.git(ctx, nil, "ls-tree", "-z", head, "--", path)
	if err != nil {
		return nil, "", fmt.Errorf("git ls-tree: %w: %s", err, firstLineOf(tree))
	}
	var headMode, headBlob string
	if f := strings.Fields(strings.TrimRight(tree, "\x00")); len(f) >= 3 && f[1] == "blob" {
		headMode, headBlob = f[0], f[2]
	}
	theirs, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(path)))
	fi, lerr := os.Lstat(filepath.Join(c.root, filepath.FromSlash(path)))
	switch {
	case errors.Is(lerr, fs.ErrNotExist):
		if b == workflows.BeforeAbsent || headBlob == "" {
			return nil, "", nil // absent before the run and after it
		}
		return &part{path: path, remove: true}, "", nil // the run deleted it
	case lerr != nil || err != nil:
		return nil, "", errors.Join(lerr, err)
	case !fi.Mode().IsRegular():
		return nil, yours + "and the run made it something other than a file: commit it yourself", nil
	case b == workflows.BeforeAbsent:
		return nil, yours + "by deleting it, and the run wrote it anew: commit it yourself", nil
	case headBlob == "" || headMode == "160000" || headMode == "120000":
		return nil, yours + "and it is not a file in HEAD: the run's part cannot be told apart from yours; commit it yourself", nil
	}
	// The working file as git stores it (its clean filters: autocrlf,
	// eol, LFS), as the record's copy was made: the raw one, on a CRLF
	// checkout, differed from that copy on every line.
	id, err := c.gitIn(ctx, nil, bytes.NewReader(theirs), "hash-object", "-w", "--stdin", "--path", path)
	if err != nil {
		return nil, "", fmt.Errorf("git hash-object: %w: %s", err, firstLineOf(id))
	}
	if id = strings.TrimSpace(id); id == b {
		return nil, "", nil // the run left it as it was
	}
	stored, err := c.git(ctx, nil, "cat-file", "blob", id)
	if err != nil {
		return nil, "", fmt.Errorf("git cat-file: %w: %s", err, firstLineOf(stored))
	}
	theirs = []byte(stored)
	base, err := c.git(ctx, nil, "cat-file", "blob", b)
	if err != nil {
		return nil, "", fmt.Errorf("git cat-file: %w: %s", err, firstLineOf(base))
	}
	ours, err := c.git(ctx, nil, "cat-file", "blob", headBlob)
	if err != nil {
		return nil, "", fmt.Errorf("git cat-file: %w: %s", err, firstLineOf(ours))
	}
	merged, clean, err := c.mergeFile(ctx, []byte(ours), []byte(base), theirs)
	if err != nil {
		return nil, "", err
	}
	if !clean {
		return nil, yours + "and the run's change to it does not apply to HEAD's version cleanly (it overlaps your changes, or the file is not text): commit it yourself", nil
	}
	if bytes.Equal(merged, []byte(ours)) {
		return nil, "", nil // HEAD has the run's change already
	}
	// Merged from versions as git stores them (the working file's
	// cleaned above): stored as it is, not cleaned a second time.
	blob, err := c.gitIn(ctx, nil, bytes.NewReader(merged), "hash-object", "-w", "--stdin", "--no-filters")
	if err != nil {
		return nil, "", fmt.Errorf("git hash-object: %w: %s", err, firstLineOf(blob))
	}
	return &part{path: path, mode: headMode, blob: strings.TrimSpace(blob)}, "", nil
}

// mergeFile is git merge-file's merge of theirs' change since base into
// ours; clean is false when it conflicts or is refused (a binary file).
func (c gitCommitter) mergeFile(ctx context.Context, ours, base, theirs []byte) ([]byte, bool, error) {
	dir, err := os.MkdirTemp("", "pixir-commit-merge-*")
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(dir)
	names := []string{"ours", "base", "theirs"}
	for i, data := range [][]byte{ours, base, theirs} {
		if err := os.WriteFile(filepath.Join(dir, names[i]), data, 0o600); err != nil {
			return nil, false, err
		}
	}
	cmd := exec.CommandContext(ctx, "git", "merge-file", "-p", "-q", "ours", "base", "theirs")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.Bytes(), true, nil
	case errors.As(err, &exit):
		return nil, false, nil // conflicts (exit > 0), or refused
	}
	return nil, false, fmt.Errorf("git merge-file: %w", err)
}

// commitPart commits paths (each in the workspace or tracked) when some
// of them the user had changed before the run: those by their run's part,
// the others whole, in an index of the commit's own built from HEAD; then
// the user's index takes the commit's version of each path whose entry
// was HEAD's (what they had staged stays).
func (c gitCommitter) commitPart(ctx context.Context, req workflows.CommitRequest, rep workflows.CommitReport, paths []string, locked func(string) (string, bool)) (workflows.CommitReport, error) {
	git := func(env []string, args ...string) (string, error) { return c.git(ctx, env, args...) }
	head, err := git(nil, "rev-parse", "--verify", "--quiet", "HEAD")
	if err != nil {
		rep.Reason = fmt.Sprintf("git rev-parse HEAD refused (%v): %s", err, firstLineOf(head))
		return rep, nil
	}
	head = strings.TrimSpace(head)
	prefix, err := git(nil, "rev-parse", "--show-prefix")
	if err != nil {
		rep.Reason = fmt.Sprintf("git rev-parse refused (%v): %s", err, firstLineOf(prefix))
		return rep, nil
	}
	prefix = strings.TrimSpace(prefix)
	index, err := os.CreateTemp("", "pixir-commit-index-*")
	if err != nil {
		return rep, err
	}
	index.Close()
	os.Remove(index.Name()) // git writes a new index there
	defer os.Remove(index.Name())
	env := []string{"GIT_INDEX_FILE=" + index.Name()}
	if out, err := git(env, "read-tree", head); err != nil {
		rep.Reason = fmt.Sprintf("git read-tree refused (%v): %s", err, firstLineOf(out))
		return rep, nil
	}
	var whole []string
	var parts []part
	rep.LeftOut = nil
	for _, p := range paths {
		b, ok := beforeOf(req.Before, p)
		if !ok {
			whole = append(whole, p)
			continue
		}
		pt, why, err := c.runsPart(ctx, head, p, b)
		if err != nil {
			why = "its run's part could not be made (" + err.Error() + ")"
		}
		if why == "" && pt != nil {
			why = c.userStage(ctx, head, pt)
		}
		switch {
		case why != "":
			rep.LeftOut = append(rep.LeftOut, workflows.LeftOut{Path: p, Reason: why})
		case pt != nil:
			parts = append(parts, *pt)
		}
	}
	if len(whole) > 0 {
		if out, err := git(env, append([]string{"add", "--all", "--"}, whole...)...); err != nil {
			rep.Reason = fmt.Sprintf("git add refused (%v): %s", err, out)
			return rep, nil
		}
	}
	for _, pt := range parts {
		args := []string{"update-index", "--add", "--cacheinfo", pt.mode + "," + pt.blob + "," + prefix + pt.path}
		if pt.remove {
			args = []string{"update-index", "--force-remove", "--", pt.path}
		}
		if out, err := git(env, args...); err != nil {
			rep.Reason = fmt.Sprintf("git update-index refused (%v): %s", err, out)
			return rep, nil
		}
	}
	out, err := git(env, append([]string{"diff", "--cached", "--name-only", "--relative", "--no-renames", "-z", head, "--"}, paths...)...)
	if err != nil {
		rep.Reason = fmt.Sprintf("git diff refused (%v): %s", err, out)
		return rep, nil
	}
	kept := splitZ(out)
	if len(kept) == 0 {
		rep.Files = req.Paths
		if len(rep.LeftOut) > 0 {
			rep.Reason = "every file of the run that differs from HEAD is left out (see left_out): nothing to commit"
			return rep, nil
		}
		rep.Reason, rep.Unchanged = nothingNew, true
		return rep, nil
	}
	rep.Files = kept
	tree, err := git(env, "write-tree")
	if err != nil {
		rep.Reason = fmt.Sprintf("git write-tree refused (%v): %s", err, firstLineOf(tree))
		return rep, nil
	}
	tree = strings.TrimSpace(tree)
	if out, err := git(env, "commit", "--quiet", "-m", req.Message); err != nil {
		// Made all the same (stopped in its post-commit hook)? HEAD says.
		if hash, made := c.madeAfterAll(ctx, head, tree); made {
			rep.Status, rep.Commit = workflows.Committed, hash
			rep.Reason = fmt.Sprintf("git was stopped (%v) after it made the commit: HEAD holds it", err)
			c.syncIndex(context.WithoutCancel(ctx), prefix, whole, parts)
			return rep, nil
		}
		rep.Reason = commitRefused(ctx, err, out, locked)
		return rep, nil
	}
	rep.Status = workflows.Committed
	if why := c.syncIndex(context.WithoutCancel(ctx), prefix, whole, parts); why != "" {
		rep.Reason = why
	}
	hash, err := c.git(context.WithoutCancel(ctx), nil, "rev-parse", "--verify", "HEAD")
	if err != nil {
		rep.Reason = strings.TrimSpace(rep.Reason + fmt.Sprintf(" The commit was made, but its hash could not be read (%v: %s); git log shows it", err, firstLineOf(hash)))
		return rep, nil
	}
	rep.Commit = strings.TrimSpace(hash)
	return rep, nil
}

// syncIndex brings the user's index to the commit made for its paths:
// the files committed whole are staged as they are (as git commit --only
// does), and each run's part as userStage said: the committed version
// where the index had HEAD's, else merged into what the user had staged
// (which stays staged). It returns what could not be done, for the report.
func (c gitCommitter) syncIndex(ctx context.Context, prefix string, whole []string, parts []part) string {
	var failed []string
	if len(whole) > 0 {
		if out, err := c.git(ctx, nil, append([]string{"add", "--all", "--"}, whole...)...); err != nil {
			failed = append(failed, fmt.Sprintf("git add: %v: %s", err, firstLineOf(out)))
		}
	}
	for _, pt := range parts {
		cur, err := c.git(ctx, nil, "ls-files", "-s", "-z", "--", pt.path)
		if f := strings.Fields(strings.TrimRight(cur, "\x00")); err != nil || len(f) < 2 || f[1] != pt.seen {
			continue // staged anew by the user meanwhile: theirs
		}
		args := []string{"update-index", "--cacheinfo", pt.stageMode + "," + pt.stage + "," + prefix + pt.path}
		if pt.remove {
			args = []string{"update-index", "--force-remove", "--", pt.path}
		}
		if out, err := c.git(ctx, nil, args...); err != nil {
			failed = append(failed, fmt.Sprintf("git update-index: %v: %s", err, firstLineOf(out)))
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return "the commit was made, but the index could not be brought to it (" + strings.Join(failed, "; ") + "): git status shows the committed files as changed; git reset -- <file> fixes it"
}
