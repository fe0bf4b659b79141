package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// modeBits are the bits of a file's mode that a snapshot preserves.
const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// testWorkers, when set by a benchmark, is the number of copy workers.
var testWorkers int

// testStageOff, when set by a test, makes the child's index with git add
// -A (the way the stage is compared with); testStaged, when set, is told
// whether the stage made it (nil) or why git add did.
var (
	testStageOff bool
	testStaged   func(error)
)

// testHookFile, when set by a test, runs before each file is copied.
var testHookFile func(rel string) error

// bufSize is each copy worker's buffer.
const bufSize = 256 << 10

// Manifest is what Take copied. It is JSON-serialisable so the Manager can
// keep it beside the snapshot and compute the change list in a later process.
type Manifest struct {
	// Source and Root are the absolute paths Take copied from and to.
	Source string `json:"source"`
	Root   string `json:"root"`
	// TakenAt is when the copy finished.
	TakenAt time.Time `json:"taken_at"`
	// Entries are the copied regular files and symbolic links, sorted by Path.
	Entries []Entry `json:"entries"`
	// Skipped are the entries left out other than by the exclusion rule:
	// sockets, FIFOs, devices, and what the process may not read.
	Skipped []Skip `json:"skipped,omitempty"`
	// SumAlgorithm is the fingerprint of the entries' Sum.
	SumAlgorithm string `json:"sum_algorithm"`
	// Bytes is the total size of the copied files; Cloned how many of them
	// were cloned copy-on-write rather than copied.
	Bytes  int64 `json:"bytes"`
	Cloned int   `json:"cloned"`
	// Mark is the status-change time (ns) of the snapshot root after the
	// copy, after every file was made: Changes trusts without reading a
	// file of the recorded size and time whose ctime is before it.
	Mark int64 `json:"mark_ns,omitempty"`
	// BaseDir is where the base is kept (text contents in pack files, and
	// the manifest itself): see base.go. Empty when Take kept no base.
	BaseDir string `json:"-"`
	// Packs is how many base packs there are (base-1 … base-Packs).
	Packs int `json:"packs,omitempty"`
	// Git is the snapshot's own repository, when it has one (git.go).
	Git *GitView `json:"git,omitempty"`

	indexMu sync.Mutex
	byPath  map[string]int
	extra   *pack
}

// Entry is one copied regular file or symbolic link.
type Entry struct {
	// Path is slash-separated and relative to the snapshot root.
	Path string `json:"path"`
	// Size is the file's size (a link's: its target's length).
	Size int64 `json:"size"`
	// Mode holds the type (fs.ModeSymlink for a link) and permission bits.
	Mode  fs.FileMode `json:"mode"`
	MTime time.Time   `json:"mtime"`
	// Sum is a regular file's content fingerprint (see SumAlgorithm).
	Sum string `json:"sum,omitempty"`
	// Link is a symbolic link's target, as written.
	Link string `json:"link,omitempty"`
	// BasePack and BaseOff say where a text file's content is kept
	// (BasePack 0: not kept; see base.go).
	BasePack int   `json:"base_pack,omitempty"`
	BaseOff  int64 `json:"base_off,omitempty"`
	// Conflict is the fingerprint of the file with conflict markers that a
	// merge left in the child's workspace, until the child changes it.
	Conflict string `json:"conflict,omitempty"`
	// SrcIno and SrcCtime (ns) identify the source file the entry was
	// copied from: a workspace file with the same inode, size,
	// modification and status-change times is untouched since (a process
	// cannot set a ctime), so a merge need not read it. Zero: unknown.
	SrcIno   uint64 `json:"src_ino,omitempty"`
	SrcCtime int64  `json:"src_ctime,omitempty"`
}

// Untouched reports whether fi, the workspace file the entry was copied
// from, is still as it was copied: same inode, size, modification and
// status-change times.
func (e *Entry) Untouched(fi fs.FileInfo) bool {
	if e.SrcIno == 0 || !fi.Mode().IsRegular() || fi.Size() != e.Size || !fi.ModTime().Equal(e.MTime) {
		return false
	}
	ino, ctime, ok := identity(fi)
	return ok && ino == e.SrcIno && ctime == e.SrcCtime
}

// Skip is an entry Take left out, and why.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Changes lists the workspace-relative, slash-separated paths of the files
// and symbolic links a child added, changed (content or link target) and
// deleted relative to its snapshot, and of the files whose permission
// bits alone changed (Mode), each sorted.
type Changes struct {
	Added   []string `json:"added"`
	Changed []string `json:"changed"`
	Deleted []string `json:"deleted"`
	Mode    []string `json:"mode,omitempty"`
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return len(c.Added) == 0 && len(c.Changed) == 0 && len(c.Deleted) == 0 && len(c.Mode) == 0
}

// Options are what Take does besides the copy.
type Options struct {
	// BaseDir, when set, is a folder outside the destination (created if
	// missing) where Take keeps the snapshot's base, so the child's work
	// can be merged three-way later (base.go), and saves the manifest.
	BaseDir string
	// Git, when the source is the top of a git work tree, gives the copy
	// a repository of its own that shares the source's objects and whose
	// HEAD is the copy as taken (git.go): git in the copy never reaches
	// the source's repository, and git status there shows the child's
	// changes alone.
	Git bool
}

// Take copies the tree at src into dst (which must not exist; its parent is
// created) for a child's isolated workspace, excluding what Excluded says and
// cache folders tagged with CACHEDIR.TAG, and returns the Manifest of what it
// copied. When dst lies inside src it is not copied into itself. On error or
// cancellation (then the error is ctx.Err()) dst may hold a partial copy,
// which the caller removes with Remove.
func Take(ctx context.Context, src, dst string) (*Manifest, error) {
	return TakeWith(ctx, src, dst, Options{})
}

// TakeWith is Take with a base kept and a git view made as opt says. A
// source without git, or a git that fails, gives a copy without a view
// (the manifest's Git is nil), never a failed Take.
func TakeWith(ctx context.Context, src, dst string, opt Options) (*Manifest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	srcAbs, err := filepath.Abs(src)
	if err != nil {
		return nil, fmt.Errorf("snapshot source %s: %w", src, err)
	}
	dstAbs, err := filepath.Abs(dst)
	if err != nil {
		return nil, fmt.Errorf("snapshot destination %s: %w", dst, err)
	}
	rootInfo, err := os.Stat(srcAbs)
	if err != nil {
		return nil, fmt.Errorf("snapshot source: %w", err)
	}
	if !rootInfo.IsDir() {
		return nil, fmt.Errorf("snapshot source %s is not a directory", src)
	}
	rootEntries, err := os.ReadDir(srcAbs)
	if err != nil {
		return nil, fmt.Errorf("snapshot source: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dstAbs), 0o755); err != nil {
		return nil, fmt.Errorf("snapshot destination: %w", err)
	}
	if err := os.Mkdir(dstAbs, 0o700); err != nil {
		return nil, fmt.Errorf("snapshot destination (it must not exist yet): %w", err)
	}
	if opt.BaseDir != "" {
		if err := os.MkdirAll(opt.BaseDir, 0o700); err != nil {
			return nil, fmt.Errorf("snapshot base: %w", err)
		}
	}

	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workers := max(4, 2*runtime.GOMAXPROCS(0))
	if testWorkers > 0 {
		workers = testWorkers
	}
	c := &copier{ctx: cctx, src: srcAbs, dst: dstAbs, umask: umask(), jobs: make(chan []string, workers)}
	results := make([][]Entry, workers)
	packs := make([]*pack, workers)
	if opt.BaseDir != "" {
		for i := range packs {
			packs[i] = &pack{dir: opt.BaseDir, n: i + 1}
		}
	}
	var wg sync.WaitGroup
	var view *GitView
	if opt.Git {
		// The child's index is staged by the copy itself (gitstage.go);
		// what that does not cover, git add -A does beside the copy: it
		// reads the source, and writes only dst/.git, which the copy never
		// makes (.git is excluded).
		stage, byGit := prepareStage(srcAbs, dstAbs)
		if testStageOff && stage != nil {
			stage.close()
			_ = os.RemoveAll(stage.child)
			stage, byGit = nil, true
		}
		if testStaged != nil && byGit {
			testStaged(errStageByGit)
		}
		switch {
		case byGit:
			wg.Go(func() { view = gitView(cctx, srcAbs, dstAbs) })
		case stage != nil:
			c.git = stage
			defer stage.close()
		}
	}
	for i := range workers {
		wg.Go(func() {
			err := c.work(&results[i], packs[i])
			if packs[i] != nil {
				if cerr := packs[i].close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				cancel(err)
			}
		})
	}
	werr := c.walk("", rootEntries)
	close(c.jobs)
	if werr != nil {
		cancel(werr)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := context.Cause(cctx); err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", src, err)
	}

	// Creating entries moved the folders' times, and a read-only folder
	// could not have been filled: set both now, deepest first, root last.
	c.dirs = append([]dirAttr{{dstAbs, rootInfo.Mode(), rootInfo.ModTime()}}, c.dirs...)
	for _, d := range slices.Backward(c.dirs) {
		if err := os.Chmod(d.path, d.mode&modeBits); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		if err := os.Chtimes(d.path, time.Time{}, d.mtime); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	m := &Manifest{Source: srcAbs, Root: dstAbs, SumAlgorithm: SumAlgorithm, TakenAt: time.Now().UTC(), Skipped: c.skipped, Cloned: int(c.cloned.Load())}
	if fi, err := os.Lstat(dstAbs); err == nil {
		if ctime, ok := ctimeOf(fi); ok {
			m.Mark = ctime
		}
	}
	n := len(c.links)
	for _, r := range results {
		n += len(r)
	}
	m.Entries = append(make([]Entry, 0, n), c.links...)
	for _, r := range results {
		m.Entries = append(m.Entries, r...)
	}
	for _, e := range m.Entries {
		if e.Mode.IsRegular() {
			m.Bytes += e.Size
		}
	}
	slices.SortFunc(m.Entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(m.Skipped, func(a, b Skip) int { return strings.Compare(a.Path, b.Path) })
	if opt.BaseDir != "" {
		m.BaseDir, m.Packs = opt.BaseDir, workers
	}
	if c.git != nil {
		view, err = c.git.finish(ctx, m.Entries)
		if testStaged != nil {
			testStaged(err)
		}
		if err != nil {
			// What the stage did not cover, git add -A does.
			_ = os.RemoveAll(filepath.Join(dstAbs, ".git"))
			view = gitView(ctx, srcAbs, dstAbs)
		}
	}
	m.Git = view
	if m.BaseDir != "" {
		if err := m.Save(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

type dirAttr struct {
	path  string
	mode  fs.FileMode
	mtime time.Time
}

// copier is one Take: a walker (the caller's goroutine) that makes folders
// and links and hands regular files to a pool of workers.
type copier struct {
	ctx      context.Context
	src, dst string
	jobs     chan []string // batches of OS-separated relative paths of regular files of one folder
	dirs     []dirAttr     // made folders, parents first; walker only
	links    []Entry       // walker only
	umask    uint32        // the process's, or 0o7777 when unknown (always chmod)
	git      *gitStage     // the child's repository staged as the copy goes (nil: none)
	noClone  atomic.Bool
	cloned   atomic.Int64
	mu       sync.Mutex
	skipped  []Skip
}

func (c *copier) skip(rel, reason string) {
	c.mu.Lock()
	c.skipped = append(c.skipped, Skip{Path: filepath.ToSlash(rel), Reason: reason})
	c.mu.Unlock()
}

// kind names a file type Take does not copy.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeIrregular != 0:
		return "irregular file"
	}
	return "unsupported file type " + m.Type().String()
}

// batchSize bounds the files of one folder handed to a worker at once.
// Creating entries in one folder is serialised by the kernel (the folder's
// lock), so workers are given different folders where the tree allows.
const batchSize = 64

// walk copies the entries of the source folder rel (already read).
func (c *copier) walk(rel string, entries []os.DirEntry) error {
	var batch []string
	send := func() error {
		if len(batch) == 0 {
			return nil
		}
		select {
		case c.jobs <- batch:
			batch = nil
			return nil
		case <-c.ctx.Done():
			return context.Cause(c.ctx)
		}
	}
	for _, e := range entries {
		if err := c.ctx.Err(); err != nil {
			return context.Cause(c.ctx)
		}
		r := filepath.Join(rel, e.Name())
		sp := filepath.Join(c.src, r)
		if sp == c.dst || Excluded(r, e.IsDir()) {
			if c.git != nil && rel != "" && e.Name() == ".git" {
				c.git.nested = append(c.git.nested, filepath.ToSlash(rel))
			}
			continue
		}
		t := e.Type()
		switch {
		case t.IsDir():
			sub, err := os.ReadDir(sp)
			if err != nil {
				if gone, serr := c.unreadable(r, err); gone {
					continue
				} else if serr != nil {
					return serr
				}
			}
			if taggedCache(sp, sub) {
				continue
			}
			info, err := e.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return err
			}
			dp := filepath.Join(c.dst, r)
			if err := os.Mkdir(dp, 0o700); err != nil {
				return err
			}
			c.dirs = append(c.dirs, dirAttr{dp, info.Mode(), info.ModTime()})
			if err := c.walk(r, sub); err != nil {
				return err
			}
		case t&fs.ModeSymlink != 0:
			if c.git != nil {
				c.git.seen(c.ctx, r, e.Name())
			}
			if err := c.link(r); err != nil {
				return err
			}
		case t.IsRegular():
			if c.git != nil {
				c.git.seen(c.ctx, r, e.Name())
			}
			if batch == nil {
				batch = make([]string, 0, min(batchSize, len(entries)))
			}
			batch = append(batch, r)
			if len(batch) == batchSize {
				if err := send(); err != nil {
					return err
				}
			}
		default:
			c.skip(r, kind(t))
		}
	}
	return send()
}

// unreadable decides about a source entry that could not be read: one that
// vanished since it was listed is passed over, one the process may not read
// is recorded as skipped, anything else is an error.
func (c *copier) unreadable(rel string, err error) (skip bool, _ error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case errors.Is(err, fs.ErrPermission):
		c.skip(rel, "unreadable: permission denied")
		return true, nil
	}
	return false, err
}

// link recreates a symbolic link as a link with the same target.
func (c *copier) link(rel string) error {
	sp := filepath.Join(c.src, rel)
	target, err := os.Readlink(sp)
	if err != nil {
		if skip, serr := c.unreadable(rel, err); skip {
			return nil
		} else {
			return serr
		}
	}
	info, err := os.Lstat(sp)
	if err != nil {
		if skip, serr := c.unreadable(rel, err); skip {
			return nil
		} else {
			return serr
		}
	}
	dp := filepath.Join(c.dst, rel)
	if err := os.Symlink(target, dp); err != nil {
		return err
	}
	if c.git != nil {
		c.git.link(rel, target)
	}
	// A link's own time is cosmetic; a filesystem that cannot set it is no
	// reason to fail.
	_ = lchtimes(dp, info.ModTime())
	c.mu.Lock()
	c.links = append(c.links, Entry{Path: filepath.ToSlash(rel), Size: int64(len(target)), Mode: info.Mode(), MTime: info.ModTime(), Link: target})
	c.mu.Unlock()
	return nil
}

// work copies the files handed to it until the jobs end or the copy stops,
// keeping the base of text files in p when it is not nil.
func (c *copier) work(out *[]Entry, p *pack) error {
	buf := make([]byte, bufSize)
	h := new(sum)
	if c.git != nil {
		h.blob = c.git.newHasher()
	}
	for {
		select {
		case <-c.ctx.Done():
			return nil
		case batch, ok := <-c.jobs:
			if !ok {
				return nil
			}
			for _, rel := range batch {
				if testHookFile != nil {
					if err := testHookFile(rel); err != nil {
						return err
					}
				}
				e, err := c.file(rel, buf, h, p)
				if err != nil {
					return err
				}
				if e != nil {
					*out = append(*out, *e)
				}
			}
		}
	}
}

// copied is what copyFile did with one source file.
type copied struct {
	size  int64
	mode  fs.FileMode // of the copy
	mtime time.Time   // of the copy
	// cloned: the data was cloned copy-on-write; refused: cloning was tried
	// and the filesystem refused.
	cloned, refused bool
	// irregular, when not empty, is the kind of a source that is not a
	// regular file (any more): nothing was copied.
	irregular string
	// basePack and baseOff say where its base content was kept (0: not).
	basePack int
	baseOff  int64
	// srcIno and srcCtime identify the source file as it was copied.
	srcIno   uint64
	srcCtime int64
}

// errSource marks a failure to open the source file (as opposed to making
// the copy), which unreadable may pass over.
type errSource struct{ err error }

func (e *errSource) Error() string { return e.err.Error() }
func (e *errSource) Unwrap() error { return e.err }

// file copies one regular file: cloned if the filesystem can, else copied,
// fingerprinting the bytes either way, with its mode and modification
// time; with a pack, a text file's content is kept there as its base.
func (c *copier) file(rel string, buf []byte, h *sum, p *pack) (*Entry, error) {
	h.reset()
	if h.blob != nil {
		h.blob.begin(rel)
	}
	var k *keeper
	if p != nil {
		k = &keeper{p: p}
	}
	r, err := copyFile(c.ctx, filepath.Join(c.src, rel), filepath.Join(c.dst, rel), buf, h, !c.noClone.Load(), c.umask, k)
	if err != nil {
		if c.ctx.Err() != nil {
			return nil, context.Cause(c.ctx)
		}
		var se *errSource
		if errors.As(err, &se) {
			if skip, _ := c.unreadable(rel, se.err); skip {
				return nil, nil
			}
			// Replaced by a link since it was listed (ELOOP) and the like:
			// the tree changed under the copy.
		}
		return nil, fmt.Errorf("copy %s: %w", rel, err)
	}
	if r.irregular != "" {
		c.skip(rel, r.irregular)
		return nil, nil
	}
	if r.refused {
		// The first refusal (no reflinks here) ends the attempts.
		c.noClone.Store(true)
	}
	if r.cloned {
		c.cloned.Add(1)
	}
	if h.blob != nil {
		h.blob.done()
	}
	return &Entry{Path: filepath.ToSlash(rel), Size: r.size, Mode: r.mode, MTime: r.mtime, Sum: h.String(),
		BasePack: r.basePack, BaseOff: r.baseOff, SrcIno: r.srcIno, SrcCtime: r.srcCtime}, nil
}

// Remove deletes a snapshot directory and everything in it, read-only
// folders included (used by garbage collection). A missing dir is not an
// error.
func Remove(dir string) error {
	if dir == "" {
		return errors.New("snapshot: Remove of an empty path")
	}
	if clean := filepath.Clean(dir); clean == "." || clean == string(filepath.Separator) || clean == filepath.VolumeName(clean)+string(filepath.Separator) {
		return fmt.Errorf("snapshot: refusing to remove %s", dir)
	}
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	// Folders copied read-only keep their entries from being unlinked: make
	// every folder writable (links are not followed) and try again.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("snapshot: remove %s: %w", dir, err)
	}
	return nil
}

// Sweep removes every folder <root>/<id>/ for which keep(id) is false (a nil
// keep keeps nothing) and leaves files and the rest alone. A missing root is
// not an error; it tries every folder and joins the errors.
func Sweep(root string, keep func(id string) bool) error {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("snapshot: sweep %s: %w", root, err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || (keep != nil && keep(e.Name())) {
			continue
		}
		if err := Remove(filepath.Join(root, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
