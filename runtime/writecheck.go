// What a child may write, and the check of what it did write.
//
// A child's writes are held three ways. Its file tools refuse a path
// outside its write sets before anything touches the disk (writeSetFiles).
// Its commands run under Landlock, which can only allow whole folders: the
// roots of the write-set patterns (commands.go). And after each run, its
// actual changes are compared with the patterns themselves, which catches
// what the kernel cannot express ("**/*_test.go" is the whole workspace to
// Landlock) and everything a command did where there is no Landlock.

package runtime

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/pixir-go/pixir/runtime/snapshot"
	"github.com/pixir-go/pixir/tools"
)

// writeLimit is what a child may write: a workflow step's write_set and
// its agent's. A path must be allowed by each one that is set; the zero
// writeLimit allows everything.
type writeLimit struct {
	// step is the step's write_set, stepMay its matcher (the workflow's
	// own, so both agree); nil without a step write set.
	step    []string
	stepMay func(rel string) bool
	// agent is the agent profile's write_set; nil without one.
	agent     []string
	agentName string
	// parent is what the child's parent may write, when the parent is a
	// Subagent itself: a child never writes more than its parent may.
	parent *writeLimit
}

// newWriteLimit is what a child may write: step (a workflow step's
// write_set, matched by stepMay) and its agent's write_set. A set that
// allows every path ("**/*", a writer step's default) limits nothing and
// is left out, so that nothing is stamped or checked for it.
func newWriteLimit(step []string, stepMay func(string) bool, agent AgentSpec) writeLimit {
	w := writeLimit{agent: agent.Profile.WriteSet, agentName: agent.Name}
	if !slices.ContainsFunc(step, allowsAll) {
		w.step, w.stepMay = step, stepMay
	}
	if slices.ContainsFunc(w.agent, allowsAll) {
		w.agent = nil
	}
	return w
}

// allowsAll reports whether a pattern matches every path.
func allowsAll(pattern string) bool { return pattern == "**" || pattern == "**/*" }

// within returns w held also to what the parent may write.
func (w writeLimit) within(parent writeLimit) writeLimit {
	if parent.limits() {
		w.parent = &parent
	}
	return w
}

// limits reports whether anything is limited.
func (w writeLimit) limits() bool {
	return w.step != nil || w.agent != nil || (w.parent != nil && w.parent.limits())
}

// allows reports whether the child may write the workspace-relative,
// slash-separated path rel.
func (w writeLimit) allows(rel string) bool {
	if w.step != nil {
		if w.stepMay != nil {
			if !w.stepMay(rel) {
				return false
			}
		} else if !matchAny(w.step, rel) {
			return false
		}
	}
	if w.agent != nil && !matchAny(w.agent, rel) {
		return false
	}
	return w.parent == nil || w.parent.allows(rel)
}

// sets lists the write sets in force, the step's first.
func (w writeLimit) sets() [][]string {
	var out [][]string
	if w.step != nil {
		out = append(out, w.step)
	}
	if w.agent != nil {
		out = append(out, w.agent)
	}
	if w.parent != nil {
		out = append(out, w.parent.sets()...)
	}
	return out
}

// String names the write sets for messages: "src/**", or
// "the step's write_set src/** and agent pm's write_set TODO/**".
func (w writeLimit) String() string {
	if w.parent == nil && (w.step == nil) != (w.agent == nil) {
		return strings.Join(slices.Concat(w.step, w.agent), ", ") // whose() names it
	}
	return w.named()
}

// named names every write set in force and whose it is.
func (w writeLimit) named() string {
	var parts []string
	if w.step != nil {
		parts = append(parts, "the step's write_set "+strings.Join(w.step, ", "))
	}
	if w.agent != nil {
		parts = append(parts, "agent "+w.agentName+"'s write_set "+strings.Join(w.agent, ", "))
	}
	if w.parent != nil && w.parent.limits() {
		parts = append(parts, "what its parent may write ("+w.parent.named()+")")
	}
	return strings.Join(parts, " and ")
}

// whose says whose write set the refusal of a write names.
func (w writeLimit) whose() string {
	switch {
	case w.parent != nil:
		return "what this child may write"
	case w.step != nil && w.agent != nil:
		return "what this workflow step may write"
	case w.step != nil:
		return "this workflow step's write_set"
	}
	return "agent " + w.agentName + "'s write_set"
}

func matchAny(patterns []string, rel string) bool {
	for _, p := range patterns {
		if ok, _ := doublestar.Match(p, rel); ok {
			return true
		}
	}
	return false
}

// roots are the folders (or files) beneath which the child's commands may
// write: each write set's roots (writeRoots), and where there are two, what
// lies beneath a root of both. nil when nothing is limited; empty when the
// write sets leave no room in common.
func (w writeLimit) roots(workspace string) []string {
	if !w.limits() {
		return nil
	}
	var out []string
	for i, set := range w.sets() {
		r := writeRoots(workspace, set)
		if i == 0 {
			out = r
			continue
		}
		out = intersectRoots(out, r)
	}
	return out
}

// intersectRoots is what lies beneath a root of a and a root of b: the
// deeper of each nested pair.
func intersectRoots(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		for _, y := range b {
			var in string
			switch {
			case within(y, x): // x is beneath y
				in = x
			case within(x, y):
				in = y
			default:
				continue
			}
			if !slices.Contains(out, in) {
				out = append(out, in)
			}
		}
	}
	return out
}

// stamp is what a file's status says of its content: a write, a rename
// over it or a change of type changes it (see stampOf).
type stamp struct {
	mode         fs.FileMode
	size         int64
	mtime        int64
	ctime, inode uint64
}

// tree maps the workspace-relative, slash-separated paths of the files and
// links beneath some roots to their stamps.
type tree map[string]stamp

// scanTree stamps every file and link beneath roots (absolute paths inside
// workspace). Nothing beneath them is left out by its name or a mark
// (node_modules, .venv, a folder with a CACHEDIR.TAG, a .git folder deep
// in the tree): a child could make such a folder to hide a write. Only
// the workspace's own .git and .pixir are not looked at: Landlock keeps a
// child's commands out of them (protected), and Pixir and the user's git
// write there while the child runs. A folder that cannot be read is
// stamped itself, so one a command made unreadable is a change. A root
// that does not exist has nothing.
func scanTree(ctx context.Context, workspace string, roots []string) (tree, error) {
	t := tree{}
	for _, root := range roots {
		rel, err := filepath.Rel(workspace, root)
		if err != nil {
			return nil, err
		}
		rel = filepath.ToSlash(rel)
		fi, err := os.Lstat(root)
		switch {
		case os.IsNotExist(err):
			continue
		case err != nil:
			return nil, err
		case !fi.IsDir():
			if fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0 {
				t[rel] = stampOf(fi)
			}
			continue
		}
		dir, err := os.Open(root)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		if rel == "." {
			rel = ""
		}
		err = t.scanDir(ctx, dir, root, rel)
		dir.Close()
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// scanDir stamps what lies beneath the open folder dir (path; rel inside
// the workspace, "" for the workspace itself).
func (t tree) scanDir(ctx context.Context, dir *os.File, path, rel string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := dir.ReadDir(-1)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if rel == "" && (name == ".git" || name == snapshot.StateDir) {
			continue
		}
		if e.Type()&^(fs.ModeDir|fs.ModeSymlink) != 0 {
			continue // a device, a pipe, a socket
		}
		erel, epath := name, path+string(filepath.Separator)+name
		if rel != "" {
			erel = rel + "/" + name
		}
		if e.IsDir() {
			sub, err := openDirIn(dir, epath, name)
			if err == nil {
				err = t.scanDir(ctx, sub, epath, erel)
				sub.Close()
				if err != nil {
					return err
				}
				continue
			}
			if os.IsNotExist(err) {
				continue // gone while we looked
			}
			// Unreadable (what is beneath cannot be told), or replaced by
			// a link or a file while we looked: its own stamp stands for
			// it.
		}
		st, err := stampIn(dir, epath, name)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return err
		}
		if st.mode.Type()&^(fs.ModeDir|fs.ModeSymlink) == 0 {
			t[erel] = st
		}
	}
	return nil
}

// changesSince lists what differs from before in after.
func changesSince(before, after tree) tools.FileChanges {
	ch := tools.FileChanges{Added: []string{}, Changed: []string{}, Deleted: []string{}}
	for p, s := range after {
		old, ok := before[p]
		switch {
		case !ok:
			ch.Added = append(ch.Added, p)
		case old != s:
			ch.Changed = append(ch.Changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			ch.Deleted = append(ch.Deleted, p)
		}
	}
	slices.Sort(ch.Added)
	slices.Sort(ch.Changed)
	slices.Sort(ch.Deleted)
	return ch
}

// sharedScan is how a shared child's changes are found: the roots its
// writes can reach, stamped before its run and again after. Its file
// tools write only within its write sets, and a child whose commands
// Landlock holds to the roots of its write sets (or to nothing) can change
// nothing elsewhere either; one whose commands are not confined (no
// Landlock here) could change anything, so the whole workspace is stamped.
// nil: nothing to check (nothing limited, or a read_only child).
func (s *Session) sharedScan(limit writeLimit) []string {
	c := s.commands
	if c == nil || !limit.limits() || s.Mode() == ModeReadOnly {
		return nil
	}
	if _, bash := s.registry().Get("bash"); !bash || c.readOnly || s.rt.sandboxSupport().Landlock {
		return c.writable
	}
	return []string{s.workspace.Root()}
}

// checkWrites compares a child's changes with what it may write and
// returns the violation, or nil. Changes of a shared child that another
// writer sharing the workspace at the same time may make are not counted:
// they cannot be told apart.
func (m *Manager) checkWrites(sa *subagent, changes *tools.FileChanges, since time.Time) *tools.WriteSetViolation {
	if changes == nil || !sa.limit.limits() {
		return nil
	}
	var others []writeLimit
	if sa.mode == WorkspaceShared {
		others = m.sharedWritersDuring(sa, since)
	}
	var paths []string
	for _, list := range [][]string{changes.Added, changes.Changed, changes.Deleted} {
		for _, p := range list {
			if sa.limit.allows(p) || slices.ContainsFunc(others, func(o writeLimit) bool { return o.allows(p) }) {
				continue
			}
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	slices.Sort(paths)
	return &tools.WriteSetViolation{Code: tools.WriteSetViolationCode, WriteSets: sa.limit.sets(), Paths: paths, Workspace: sa.mode}
}

// laterViolation is what a child's view says after a run that found now
// (nil: none). An isolated child's change list covers all its runs, so the
// last check is the whole truth (a follow-up may have undone an escape); a
// shared child's covers its last run only, and what an earlier run wrote
// outside its write sets is still in the workspace: its paths stay.
func laterViolation(before, now *tools.WriteSetViolation) *tools.WriteSetViolation {
	if before == nil || before.Workspace != WorkspaceShared {
		return now
	}
	if now == nil {
		return before
	}
	merged := *now
	merged.Paths = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(before.Paths), now.Paths...))))
	return &merged
}

// sharedWritersDuring are the write limits of the other children that
// worked in sa's workspace, shared and not read-only, while sa ran (since
// its run started).
func (m *Manager) sharedWritersDuring(sa *subagent, since time.Time) []writeLimit {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []writeLimit
	for _, o := range m.byID {
		if o == sa || o.mode != WorkspaceShared || o.workspace != sa.workspace || o.readOnly || o.spec.ReadOnly || o.started.IsZero() {
			continue
		}
		if o.status != tools.SubagentRunning && o.ended.Before(since) {
			continue
		}
		out = append(out, o.limit) // the zero limit allows everything
	}
	return out
}

// uncheckedFailure is the failure of a writer's run whose changes could
// not be found (why), so not checked against its write sets: it may have
// written outside them, and is not reported as if it had not.
func uncheckedFailure(why error, limit writeLimit) *tools.Failure {
	return &tools.Failure{Kind: tools.ErrInternal, Message: "the child's changes could not be found (" + why.Error() + "), so they could not be checked against " +
		limit.String() + ": what it changed is unknown, and it is not reported completed; review the workspace (or its snapshot) before relying on its work"}
}

// violationFailure is the failure of a run that wrote outside its write
// sets.
func violationFailure(v *tools.WriteSetViolation, limit writeLimit) *tools.Failure {
	msg := "write_set_violation: the child changed " + strings.Join(v.Paths, ", ") + ", outside " + limit.String()
	if v.Workspace == WorkspaceIsolated {
		msg += "; those changes stay in its snapshot and are never merged into the workspace"
	} else {
		msg += "; they are in the shared workspace and were not reverted (Pixir cannot tell them from the user's or another process's changes there): review them before relying on this child's work"
	}
	return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: msg, Details: v}
}

// NestedRepositoryCode names, in a run's failure, a git repository the
// child made inside its workspace.
const NestedRepositoryCode = "nested_repository"

// nestedRepos lists the folders beneath root (root-relative, slash
// separated) that hold a .git of their own, a folder or a file (a worktree's
// or submodule's pointer): where the user's git would take it for the
// repository, and run its hooks. No .git is looked into, nor .pixir, nor
// what snapshots leave out as installed dependencies (node_modules, .venv:
// nobody runs git there, and a node_modules of 10,000 files tripled the
// cost); links are not followed. Only folders are read (a file's name and
// type are in its folder's listing), by name in their open parent, as
// scanDir does.
func nestedRepos(ctx context.Context, root string) ([]string, error) {
	dir, err := os.Open(root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer dir.Close()
	var out []string
	err = findRepos(ctx, dir, root, "", &out)
	return out, err
}

func findRepos(ctx context.Context, dir *os.File, path, rel string, out *[]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := dir.ReadDir(-1)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if name == ".git" {
			if rel != "" {
				*out = append(*out, rel)
			}
			continue
		}
		if !e.IsDir() || snapshot.Excluded(name, true) {
			continue // .pixir, other systems' metadata, installed dependencies
		}
		epath, erel := path+string(filepath.Separator)+name, name
		if rel != "" {
			erel = rel + "/" + name
		}
		sub, err := openDirIn(dir, epath, name)
		if err != nil {
			// Gone, replaced by a link or a file while we looked, or made
			// unreadable: no repository git could use there.
			continue
		}
		err = findRepos(ctx, sub, epath, erel, out)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// madeRepos is what after lists that before did not.
func madeRepos(before, after []string) []string {
	var out []string
	for _, r := range after {
		if !slices.Contains(before, r) {
			out = append(out, r+"/.git")
		}
	}
	return out
}

// nestedRepoFailure is the failure of a run that made git repositories
// (their .git paths) inside its workspace: never work to merge, and in a
// shared workspace a repository the user's git would use, hooks and all.
func nestedRepoFailure(made []string, mode string) *tools.Failure {
	msg := NestedRepositoryCode + ": the child made a git repository at " + strings.Join(made, ", ")
	if mode == WorkspaceIsolated {
		msg += " in its snapshot; a repository is not work to merge, so nothing of this run is merged into the workspace"
	} else {
		msg += " in the shared workspace, where git run beneath it would use it instead of the workspace's repository, its hooks too; Pixir does not remove it (it cannot tell it from yours): check it and remove it"
	}
	return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: msg, Details: map[string]any{"code": NestedRepositoryCode, "paths": made, "workspace": mode}}
}
