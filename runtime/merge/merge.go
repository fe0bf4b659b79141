package merge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pixir-go/pixir/runtime/snapshot"
	"github.com/pixir-go/pixir/runtime/wslock"
	"github.com/pixir-go/pixir/tools"
)

// Request is one merge-back: a child's snapshot into a workspace.
type Request struct {
	// Workspace is the parent's workspace root (absolute).
	Workspace string
	// Snapshot is the child's: its Root is the child's workspace, its base
	// what the merge is three-way against.
	Snapshot *snapshot.Manifest
	// Label names the child in conflict markers ("step fix (sa-1a2b)").
	Label string
	// DryRun plans and reports, writing nothing anywhere.
	DryRun bool
	// Allow, when set, says whether the child may change a path (its write
	// set): a change elsewhere is never merged.
	Allow func(path string) bool
	// Approve, when set, is asked once, with the plan (its diffs), before
	// anything is written; false (and its reason) leaves everything as it
	// is. It is not asked when there is nothing to write.
	Approve func(ctx context.Context, plan tools.MergeReport) (bool, string, error)
	// Files, when set, writes the text files (the editor's
	// fs/write_text_file); everything else is applied locally.
	Files tools.Files
	// Waiting, when set, is told that the merge waits for another process
	// (holder) to end its copy or merge of the workspace before writing,
	// and (through what it returns) when the wait ends.
	Waiting wslock.Waiting
}

// Error kinds of Merge's errors, for the runtime to wrap.
var (
	// ErrNoSnapshot: the child's snapshot is gone.
	ErrNoSnapshot = errors.New("the child's snapshot is gone")
)

// Merge merges the child's changes into the workspace (see the package
// documentation) and reports what it did, or with DryRun would do: merged
// (everything), conflicted (the conflicting files were left as they are),
// or not_merged (declined). An error means nothing of this merge was
// written, or a journal in .pixir/merges holds what Recover finishes.
func Merge(ctx context.Context, req Request) (tools.MergeReport, error) {
	m := req.Snapshot
	if m == nil || m.Root == "" {
		return tools.MergeReport{}, ErrNoSnapshot
	}
	if fi, err := os.Stat(m.Root); err != nil || !fi.IsDir() {
		return tools.MergeReport{}, fmt.Errorf("%w: %s", ErrNoSnapshot, m.Root)
	}
	if !req.DryRun {
		// A merge that died half-way in this workspace is finished first:
		// this one plans against the workspace as that one left it.
		if _, err := Recover(ctx, req.Workspace, req.Waiting); err != nil {
			return tools.MergeReport{}, err
		}
	}
	ch, err := m.Changes(ctx, m.Root)
	if err != nil {
		return tools.MergeReport{}, fmt.Errorf("listing the child's changes: %w", err)
	}
	tmp := filepath.Join(req.Workspace, snapshot.StateDir, "merges")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return tools.MergeReport{}, err
	}
	p := &planner{req: req, m: m, tmp: tmp, bases: m.BaseReader()}
	err = p.plan(ctx, ch)
	p.bases.Close()
	if err != nil {
		return tools.MergeReport{}, err
	}
	rep := p.report()
	if req.DryRun {
		rep.DryRun = true
		return rep, nil
	}
	if len(p.ops) > 0 && req.Approve != nil {
		ok, why, err := req.Approve(ctx, rep)
		if err != nil {
			return tools.MergeReport{}, err
		}
		if !ok {
			return tools.MergeReport{Status: tools.MergeNotMerged, Reason: why, Conflicts: rep.Conflicts}, nil
		}
	}
	if len(p.ops) > 0 {
		journalNote := ""
		id, moved, err := apply(ctx, req.Workspace, p.ops, req.Files, req.Waiting)
		var left *journalLeftError
		if errors.As(err, &left) {
			// Every file was written: the merge is whole, not cut off.
			journalNote = fmt.Sprintf("Every file of the merge was written, but its journal (%s) could not be removed (%v); the next merge (merge_agent) or session in this workspace removes it.",
				filepath.ToSlash(filepath.Join(snapshot.StateDir, "merges", id, journalFile)), left.err)
			err = nil
		}
		if err != nil && id != "" {
			// Committed (its journal written), then cut off: part of it
			// may be in the workspace already, and the rest comes with the
			// next merge or session here (Recover), not never.
			return tools.MergeReport{}, fmt.Errorf("%w; the merge %s was cut off midway: some of its files may already be in the workspace, and the next merge (merge_agent) or session in this workspace finishes it", err, id)
		}
		if err != nil {
			return tools.MergeReport{}, err
		}
		rep.MergeID = id
		p.drop(moved)
		rep = p.report()
		rep.MergeID = id
		if journalNote != "" {
			rep.Reason = strings.TrimSpace(rep.Reason + " " + journalNote)
		}
	}
	if err := p.settle(); err != nil {
		// The workspace has the merge; only the child's side is stale.
		rep.Reason = strings.TrimSpace(rep.Reason + " The child's snapshot could not be updated after the merge (" + err.Error() + "); merging it again may report conflicts.")
	}
	return rep, nil
}

// planner is one merge's plan: the operations on the workspace and the
// conflicts.
type planner struct {
	req   Request
	m     *snapshot.Manifest
	tmp   string
	bases *snapshot.BaseReader
	// folders caches which workspace folders on the way to a path are
	// real folders (see linkOnTheWay).
	folders sync.Map

	ops       []*op
	conflicts []tools.MergeConflict
	// marked are content conflicts: the file with markers goes into the
	// child's snapshot and the workspace's version becomes its base.
	marked []marked
}

type marked struct {
	path    string
	markers []byte
	ours    side
}

// opKind is what an operation does to a workspace path.
type opKind string

const (
	opWrite  opKind = "write"
	opDelete opKind = "delete"
	opChmod  opKind = "chmod"
)

// bucket says which list of the report an operation goes to.
type bucket int

const (
	bAdded bucket = iota
	bUpdated
	bMerged
	bDeleted
	bMode
)

// op is one change to the workspace.
type op struct {
	path string // slash-separated, workspace-relative
	kind opKind
	// The new content: copied from src (the child's file), or data (a
	// merge's result); a link's target.
	src    string
	data   []byte
	target string
	isLink bool
	mode   fs.FileMode
	// before is the state the path had when planned, beforeStat its stat
	// then; after the state it gets.
	before, beforeStat, after string
	bucket                    bucket
	// theirs is the child's version: the path's base once merged.
	theirs side
	// diff, for text, shows the change.
	diff *tools.Diff
}

func (p *planner) conflict(path, kind, msg string, hunks ...tools.ConflictHunk) {
	p.conflicts = append(p.conflicts, tools.MergeConflict{Path: path, Kind: kind, Message: msg, Hunks: hunks})
}

// plan decides every changed path. Reading each path's three versions is
// most of a plan's time and independent per path, so a few workers read
// them; the decisions are then made one path at a time, in order.
func (p *planner) plan(ctx context.Context, ch snapshot.Changes) error {
	paths := slices.Concat(ch.Added, ch.Changed, ch.Deleted, ch.Mode)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	read := make([]versions, len(paths))
	err := parallel(ctx, len(paths), func(i int) error {
		v, err := p.read(paths[i])
		if err != nil {
			return fmt.Errorf("merging %s: %w", paths[i], err)
		}
		read[i] = v
		return nil
	})
	if err != nil {
		return err
	}
	for i, path := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.path(ctx, path, read[i]); err != nil {
			return fmt.Errorf("merging %s: %w", path, err)
		}
	}
	return nil
}

// versions are one path's three versions, as read for the plan.
type versions struct {
	// outside: the child may not change the path (nothing was read).
	outside bool
	// via: a folder on the way to the path in the workspace is a link
	// (or a file); nothing was read.
	via                string
	base, ours, theirs side
}

// read reads a path's three versions.
func (p *planner) read(path string) (versions, error) {
	rel := filepath.FromSlash(path)
	if !filepath.IsLocal(rel) {
		return versions{}, fmt.Errorf("%q is not a path inside the workspace", path)
	}
	if p.req.Allow != nil && !p.req.Allow(path) {
		return versions{outside: true}, nil
	}
	if via := linkOnTheWay(p.req.Workspace, path, &p.folders); via != "" {
		return versions{via: via}, nil
	}
	base, err := baseSide(p.bases, path)
	if err != nil {
		return versions{}, err
	}
	theirs, err := readSide(filepath.Join(p.m.Root, rel))
	if err != nil {
		return versions{}, err
	}
	ours, err := p.oursSide(filepath.Join(p.req.Workspace, rel), path, base)
	if err != nil {
		return versions{}, err
	}
	return versions{base: base, ours: ours, theirs: theirs}, nil
}

// path decides one path from its versions.
func (p *planner) path(ctx context.Context, path string, v versions) error {
	if v.outside {
		p.conflict(path, tools.ConflictOutsideWriteSet, "the child changed a file outside its write set; it is never merged")
		return nil
	}
	if v.via != "" {
		p.conflict(path, tools.ConflictType, fmt.Sprintf("%s is a link (or a file) in the workspace, on the way to this path; a merge never writes through a link, which may lead outside the write set or the workspace: make %s a folder in the workspace, or move the child's file elsewhere, then merge again", v.via, v.via))
		return nil
	}
	base, ours, theirs := v.base, v.ours, v.theirs
	target := filepath.Join(p.req.Workspace, filepath.FromSlash(path))
	if theirs.kind == file {
		if e, ok := p.m.Lookup(path); ok && e.Conflict != "" && (e.Conflict == theirs.sum || theirs.text() && hasMarkers(theirs.data)) {
			p.conflict(path, tools.ConflictUnresolved, "the child's file still holds the conflict markers of an earlier merge; resolve them in the child's snapshot, then merge again")
			return nil
		}
	}
	switch {
	case theirs.kind == other || ours.kind == other:
		p.conflict(path, tools.ConflictType, "one side has a folder (or a special file) where the other has a file")
	case theirs.kind == absent:
		switch {
		case ours.kind == absent: // deleted on both sides
		case base.kind != absent && sameContent(ours, base):
			p.addFrom(ours, &op{path: path, kind: opDelete, bucket: bDeleted, theirs: theirs, diff: deletion(target, ours)})
		default:
			p.conflict(path, tools.ConflictDeleteChange, "the child deleted the file, and the workspace changed it since the snapshot")
		}
	case base.kind == absent:
		switch {
		case ours.kind == absent:
			p.write(target, path, ours, theirs, theirs.mode, bAdded)
		case sameContent(ours, theirs): // added alike on both sides
			p.settled(path, theirs)
		default:
			p.conflict(path, tools.ConflictAddAdd, "the child and the workspace both added the file, with different contents")
		}
	case sameContent(theirs, base): // the child changed the permission bits alone
		switch {
		case ours.kind == absent:
			p.conflict(path, tools.ConflictChangeDelete, "the child changed the file's permission bits, and the workspace deleted it")
		case ours.kind != file || theirs.kind != file:
		default:
			mode, ok := mode3(base.mode, ours.mode, theirs.mode)
			switch {
			case !ok:
				p.conflict(path, tools.ConflictMode, fmt.Sprintf("the child set permission bits %o, and the workspace %o (they were %o)", theirs.mode, ours.mode, base.mode))
			case mode != ours.mode:
				after := ours
				after.mode = mode
				p.addFrom(ours, &op{path: path, kind: opChmod, mode: mode, after: after.state(), bucket: bMode, theirs: theirs})
			default:
				p.settled(path, theirs)
			}
		}
	case ours.kind == absent:
		p.conflict(path, tools.ConflictChangeDelete, "the child changed the file, and the workspace deleted it since the snapshot")
	case sameContent(ours, base): // a fast-forward
		mode, ok := mode3(base.mode, ours.mode, theirs.mode)
		if !ok {
			p.conflict(path, tools.ConflictMode, fmt.Sprintf("the child set permission bits %o, and the workspace %o (they were %o)", theirs.mode, ours.mode, base.mode))
			return nil
		}
		p.write(target, path, ours, theirs, mode, bUpdated)
	case sameContent(ours, theirs): // the same change on both sides
		p.settled(path, theirs)
	default:
		return p.both(ctx, target, path, base, ours, theirs)
	}
	return nil
}

// both decides a path both sides changed.
func (p *planner) both(ctx context.Context, target, path string, base, ours, theirs side) error {
	switch {
	case ours.kind != theirs.kind || base.kind != theirs.kind:
		p.conflict(path, tools.ConflictType, "one side made it a link and the other a file, or changed one while the other replaced it")
		return nil
	case theirs.kind == link:
		p.conflict(path, tools.ConflictContent, fmt.Sprintf("both sides changed the link: the workspace's points to %q, the child's to %q", ours.target, theirs.target))
		return nil
	case ours.binary || theirs.binary || base.binary:
		p.conflict(path, tools.ConflictBinary, "both sides changed a file that is not text; pick one version by hand")
		return nil
	case ours.data == nil || theirs.data == nil || base.data == nil:
		p.conflict(path, tools.ConflictNoBase, fmt.Sprintf("both sides changed a text file larger than %d MiB, whose content at the snapshot was not kept; merge it by hand", snapshot.MaxBaseSize>>20))
		return nil
	}
	mode, ok := mode3(base.mode, ours.mode, theirs.mode)
	if !ok {
		p.conflict(path, tools.ConflictMode, fmt.Sprintf("the child set permission bits %o, and the workspace %o (they were %o)", theirs.mode, ours.mode, base.mode))
		return nil
	}
	var res threeWay
	var err error
	if merged, ok := mergeApart(ours.data, base.data, theirs.data); ok && mergeInProcess {
		res.merged = merged // what git would write, without starting it
	} else {
		res, err = mergeText(ctx, p.tmp, ours.data, base.data, theirs.data, p.label())
	}
	if errors.Is(err, errNoGit) {
		p.conflict(path, tools.ConflictUnavailable, "both sides changed the file, and "+err.Error()+"; install git, or merge it by hand")
		return nil
	}
	if err != nil {
		return err
	}
	if len(res.conflicts) > 0 {
		n := len(res.conflicts)
		msg := fmt.Sprintf("both sides changed the same lines in %d place", n)
		if n > 1 {
			msg += "s"
		}
		p.conflict(path, tools.ConflictContent, msg, res.conflicts...)
		p.marked = append(p.marked, marked{path: path, markers: res.merged, ours: ours})
		return nil
	}
	after := side{kind: file, mode: mode, size: int64(len(res.merged)), sum: snapshot.Fingerprint(res.merged)}
	old := string(ours.data)
	p.addFrom(ours, &op{path: path, kind: opWrite, data: res.merged, mode: mode, after: after.state(),
		bucket: bMerged, theirs: theirs, diff: &tools.Diff{Path: target, OldText: &old, NewText: string(res.merged)}})
	return nil
}

// write plans taking the child's version of a file or link.
func (p *planner) write(target, path string, ours, theirs side, mode fs.FileMode, b bucket) {
	o := &op{path: path, kind: opWrite, bucket: b, theirs: theirs}
	switch theirs.kind {
	case link:
		if why := linkLeadsOutside(p.req.Workspace, path, theirs.target); why != "" {
			p.conflict(path, tools.ConflictLinkOutside, fmt.Sprintf("the child made a link to %q, which %s; a merge never brings a link that leads outside the workspace, where the work would reach files beyond it: make it a relative link to a path inside the workspace, or copy what it points to into the workspace, then merge again", theirs.target, why))
			return
		}
		o.isLink, o.target = true, theirs.target
		o.after = theirs.state()
	default:
		o.src, o.mode = filepath.Join(p.m.Root, filepath.FromSlash(path)), mode
		after := theirs
		after.mode = mode
		o.after = after.state()
		if theirs.text() && (ours.kind == absent || ours.text()) {
			d := &tools.Diff{Path: target, NewText: string(theirs.data)}
			if ours.kind != absent {
				old := string(ours.data)
				d.OldText = &old
			}
			o.diff = d
		}
	}
	p.addFrom(ours, o)
}

func (p *planner) add(o *op) { p.ops = append(p.ops, o) }

// oursSide is the workspace's version of a path. A file still exactly as
// the snapshot copied it (same inode, size and times) is the base: it is
// not read again.
func (p *planner) oursSide(target, path string, base side) (side, error) {
	if base.kind == file {
		if e, ok := p.m.Lookup(path); ok {
			if fi, err := os.Lstat(target); err == nil && e.Untouched(fi) {
				s := base
				s.mode, s.stat = fi.Mode()&fs.ModePerm, statOf(fi)
				return s, nil
			}
		}
	}
	return readSide(target)
}

// addFrom adds an operation on a path whose workspace version is ours.
func (p *planner) addFrom(ours side, o *op) {
	o.before, o.beforeStat = ours.state(), ours.stat
	p.add(o)
}

// settled records a path whose workspace already has the child's
// version: nothing to write, but the base moves on.
func (p *planner) settled(path string, theirs side) {
	p.add(&op{path: path, bucket: -1, theirs: theirs})
}

// label is the child's side in conflict markers: one line.
func (p *planner) label() string {
	l := strings.Join(strings.Fields(p.req.Label), " ")
	if l == "" {
		l = "child"
	}
	return l
}

// drop takes out the operations apply found moved (the workspace changed
// between plan and write), as conflicts.
func (p *planner) drop(moved map[string]bool) {
	if len(moved) == 0 {
		return
	}
	p.ops = slices.DeleteFunc(p.ops, func(o *op) bool {
		if moved[o.path] {
			p.conflict(o.path, tools.ConflictMoved, "the workspace's file changed while the merge was being made; it was left as it is now: merge again")
			return true
		}
		return false
	})
}

// report is the plan (or its outcome) as the report says it.
func (p *planner) report() tools.MergeReport {
	rep := tools.MergeReport{Status: tools.MergeMerged, Conflicts: slices.Clone(p.conflicts)}
	for _, o := range p.ops {
		if o.kind == "" {
			continue // settled
		}
		list := map[bucket]*[]string{bAdded: &rep.Applied.Added, bUpdated: &rep.Applied.Updated, bMerged: &rep.Applied.Merged,
			bDeleted: &rep.Applied.Deleted, bMode: &rep.Applied.Mode}[o.bucket]
		*list = append(*list, o.path)
		if o.diff != nil {
			rep.Diffs = append(rep.Diffs, *o.diff)
		}
	}
	slices.SortFunc(rep.Conflicts, func(a, b tools.MergeConflict) int { return strings.Compare(a.Path, b.Path) })
	if len(rep.Conflicts) > 0 {
		rep.Status = tools.MergeConflicted
	}
	if rep.Applied.Count() == 0 && len(rep.Conflicts) == 0 {
		rep.Reason = "nothing to merge: the workspace already has every change of the child"
	}
	return rep
}

// settle updates the child's snapshot after a merge: every merged path's
// base is the child's version now; a content conflict leaves the file with
// markers in the child's snapshot and the workspace's version as its base.
func (p *planner) settle() error {
	m := p.m
	var errs []error
	for _, o := range p.ops {
		t := o.theirs
		switch t.kind {
		case absent:
			m.DropBase(o.path)
		case link:
			m.SetBaseLink(o.path, t.target)
		case file:
			if err := m.SetBaseEntry(o.path, t.sum, t.size, t.mode, t.data); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, mk := range p.marked {
		dst := filepath.Join(m.Root, filepath.FromSlash(mk.path))
		if err := replaceFile(dst, mk.markers, mk.ours.mode); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := m.SetBaseEntry(mk.path, mk.ours.sum, mk.ours.size, mk.ours.mode, mk.ours.data); err != nil {
			errs = append(errs, err)
			continue
		}
		m.MarkConflict(mk.path, snapshot.Fingerprint(mk.markers))
	}
	if len(p.ops) > 0 || len(p.marked) > 0 {
		if err := m.Save(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// mode3 merges permission bits three-way: the side that changed them wins;
// both changing them differently is a conflict.
func mode3(base, ours, theirs fs.FileMode) (fs.FileMode, bool) {
	switch {
	case ours == base:
		return theirs, true
	case theirs == base, theirs == ours:
		return ours, true
	}
	return 0, false
}

// deletion is the diff of a deleted text file.
func deletion(target string, ours side) *tools.Diff {
	if !ours.text() {
		return nil
	}
	old := string(ours.data)
	return &tools.Diff{Path: target, OldText: &old, NewText: ""}
}

// replaceFile writes data to path whole: a new file renamed over it.
func replaceFile(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".pixir-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
