package merge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pixir-go/pixir/runtime/snapshot"
	"github.com/pixir-go/pixir/runtime/wslock"
	"github.com/pixir-go/pixir/tools"
)

// The journal of one merge, in .pixir/merges/<id>/ (see the package
// documentation): stage/<n> holds the new content of operation n, and
// journal.json, written last (the commit point), lists the operations.

// journalVersion is the journal's format.
const journalVersion = 1

type journal struct {
	Version int         `json:"version"`
	ID      string      `json:"id"`
	Created time.Time   `json:"created"`
	Ops     []journalOp `json:"ops"`
}

// journalOp is one operation: on Path, make it After if it is Before.
type journalOp struct {
	Path string `json:"path"`
	Op   opKind `json:"op"`
	// Stage is the staged content's name in stage/ (writes of files and
	// links).
	Stage string `json:"stage,omitempty"`
	// Mode is a write's or a chmod's permission bits.
	Mode   uint32 `json:"mode,omitempty"`
	Before string `json:"before"`
	// BeforeStat is the path's stat with Before: the same stat spares
	// reading it again.
	BeforeStat string `json:"before_stat,omitempty"`
	After      string `json:"after"`
	// Editor: written through the editor when one is there.
	Editor bool `json:"editor,omitempty"`
}

// Names in a merge's folder.
const (
	journalFile = "journal.json"
	stageDir    = "stage"
	asideDir    = "old"
	// freedPrefix names a finished merge's folder while reap removes it.
	freedPrefix = "freed-"
	// threeWayPrefix names a planner's scratch folder for git merge-file
	// (mergeText): a live merge's, planned without the workspace's lock,
	// so Recover must leave it alone.
	threeWayPrefix = "3way-"
)

// mergesDir is where a workspace's merges are journaled.
func mergesDir(workspace string) string {
	return filepath.Join(workspace, snapshot.StateDir, "merges")
}

// testHookApplied, when set by a test, runs after each operation is
// applied with how many were (to kill the process in the middle of a
// merge).
var testHookApplied func(n int)

// apply stages the operations, commits the journal and applies it; moved
// are the paths found changed since the plan (left alone).
func apply(ctx context.Context, workspace string, ops []*op, files tools.Files, waiting wslock.Waiting) (string, map[string]bool, error) {
	unlock, err := lockWorkspace(ctx, workspace, waiting)
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	id := time.Now().UTC().Format("20060102T150405") + "-" + randomHex(4)
	dir := filepath.Join(mergesDir(workspace), id)
	if err := os.MkdirAll(filepath.Join(dir, stageDir), 0o700); err != nil {
		return "", nil, fmt.Errorf("staging the merge: %w", err)
	}
	j := journal{Version: journalVersion, ID: id, Created: time.Now().UTC()}
	var staged []int // ops with content to stage
	for i, o := range ops {
		if o.kind == "" {
			continue // settled: nothing to write
		}
		jo := journalOp{Path: o.path, Op: o.kind, Mode: uint32(o.mode), Before: o.before, BeforeStat: o.beforeStat, After: o.after}
		if o.kind == opWrite {
			// Spread over folders: creating entries in one folder is
			// serialised by the kernel.
			jo.Stage = strconv.Itoa(len(staged)%stageSpread) + "/" + strconv.Itoa(i)
			jo.Editor = files != nil && !o.isLink && o.diff != nil
			staged = append(staged, i)
		}
		j.Ops = append(j.Ops, jo)
	}
	for k := range min(stageSpread, len(staged)) {
		if err := os.Mkdir(filepath.Join(dir, stageDir, strconv.Itoa(k)), 0o700); err != nil {
			_ = os.RemoveAll(dir)
			return "", nil, fmt.Errorf("staging the merge: %w", err)
		}
	}
	err = parallel(ctx, len(staged), func(k int) error {
		i := staged[k]
		if err := stage(filepath.Join(dir, stageDir, strconv.Itoa(k%stageSpread), strconv.Itoa(i)), ops[i]); err != nil {
			return fmt.Errorf("staging %s: %w", ops[i].path, err)
		}
		return nil
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	if err := writeJournal(dir, j); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	// Committed: from here on the merge is finished, now or by Recover.
	hook := testHookApplied
	if hook == nil {
		hook = hookFromEnv(ctx)
	}
	moved, err := run(ctx, workspace, dir, j, files, hook, filepath.Join(dir, asideDir))
	if err != nil {
		return id, moved, err
	}
	// Done: without its journal the folder is nothing but the old
	// versions, which are freed in the background (see reap), under
	// another name.
	if err := removeJournal(filepath.Join(dir, journalFile)); err != nil {
		return id, moved, &journalLeftError{err: err}
	}
	freed := filepath.Join(mergesDir(workspace), freedPrefix+id)
	if os.Rename(dir, freed) != nil {
		freed = dir
	}
	reap(freed)
	return id, moved, nil
}

// removeJournal removes a finished merge's journal (a variable for the
// tests).
var removeJournal = os.Remove

// journalLeftError is apply's error when every operation was applied and
// only the journal could not be removed: the merge is whole, and the next
// Recover finds every path in its after state and removes the journal.
type journalLeftError struct{ err error }

func (e *journalLeftError) Error() string { return "removing the merge's journal: " + e.err.Error() }
func (e *journalLeftError) Unwrap() error { return e.err }

// stage writes an operation's new content where the journal will find it.
func stage(path string, o *op) error {
	if o.isLink {
		return os.Symlink(o.target, path)
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, o.mode&fs.ModePerm)
	if err != nil {
		return err
	}
	switch {
	case o.data != nil || o.src == "":
		_, err = out.Write(o.data)
	case o.theirs.data != nil && int64(len(o.theirs.data)) == o.theirs.size:
		_, err = out.Write(o.theirs.data) // read already
	default:
		var in *os.File
		if in, err = os.OpenFile(o.src, os.O_RDONLY|openFlags, 0); err == nil {
			_, err = io.Copy(out, in) // copy_file_range where the kernel has it
			in.Close()
		}
	}
	if err == nil && uint32(o.mode)&umask() != 0 {
		err = out.Chmod(o.mode) // the umask took bits away
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeJournal writes journal.json whole (the commit point).
func writeJournal(dir string, j journal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, journalFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing the merge journal: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, journalFile)); err != nil {
		return fmt.Errorf("writing the merge journal: %w", err)
	}
	return nil
}

// run applies a committed journal's operations in order. Each is
// idempotent: a path already in its After state is done; one no longer
// in its Before state is left alone and reported moved. With aside, the
// version a write replaces or a deletion removes is kept there (a link to
// it, or the file moved), so that freeing its blocks is not part of the
// merge's time. Every operation is made by name in its folder, opened
// without following a link (see wsDirs): one whose way holds a link or a
// file, whenever it appeared, is left, as one whose path changed.
func run(ctx context.Context, workspace, dir string, j journal, files tools.Files, hook func(applied int), aside string) (map[string]bool, error) {
	dirs, err := openDirs(workspace)
	if err != nil {
		return nil, fmt.Errorf("merging into the workspace: %w", err)
	}
	defer dirs.close()
	var mu sync.Mutex
	moved := map[string]bool{}
	// Folders first, one at a time (those a write needs are made, before
	// any operation runs): a folder on the way that became a link (or a
	// file) since the plan leaves its operations alone. Each operation
	// then takes its folder again (still held, or opened again the same
	// way: see wsDirs).
	absent := make([]bool, len(j.Ops)) // the operation's folder is absent
	stages := map[string]int{}
	defer func() {
		for _, fd := range stages {
			_ = unix.Close(fd)
		}
	}()
	for n, jo := range j.Ops {
		folder, _ := splitRel(jo.Path)
		_, err := dirs.dir(folder, jo.Op == opWrite)
		switch {
		case err == nil:
			dirs.done(folder)
		case errors.Is(err, errOnTheWay):
			moved[jo.Path] = true
		case errors.Is(err, fs.ErrNotExist):
			absent[n] = true
		default:
			return nil, fmt.Errorf("merging %s: %w", jo.Path, err)
		}
		if jo.Op != opWrite || moved[jo.Path] {
			continue
		}
		k, _ := splitRel(jo.Stage)
		if _, ok := stages[k]; !ok {
			fd, err := unix.Open(filepath.Join(dir, stageDir, filepath.FromSlash(k)), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return nil, fmt.Errorf("merging %s: the staged content: %w", jo.Path, err)
			}
			stages[k] = fd
		}
	}
	asideFd := -1
	if aside != "" {
		if err := os.Mkdir(aside, 0o700); err == nil || errors.Is(err, fs.ErrExist) {
			if fd, err := unix.Open(aside, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
				asideFd = fd // else the old versions are freed as they are replaced
				defer unix.Close(fd)
			}
		}
	}
	var applied atomic.Int64
	err = parallel(ctx, len(j.Ops), func(n int) error {
		jo := j.Ops[n]
		mu.Lock()
		skip := moved[jo.Path]
		mu.Unlock()
		if skip {
			return nil
		}
		leave := func() error {
			mu.Lock()
			moved[jo.Path] = true
			mu.Unlock()
			return nil
		}
		folder, name := splitRel(jo.Path)
		fd := -1
		if !absent[n] {
			var err error
			fd, err = dirs.dir(folder, jo.Op == opWrite)
			switch {
			case err == nil:
				defer dirs.done(folder)
			case errors.Is(err, errOnTheWay):
				return leave()
			case errors.Is(err, fs.ErrNotExist):
				fd = -1
			default:
				return fmt.Errorf("merging %s: %w", jo.Path, err)
			}
		}
		if fd < 0 {
			// Its folder is gone: the path is absent.
			if jo.After == "" {
				return nil
			}
			return leave()
		}
		a := opAt{dir: fd, name: name, target: filepath.Join(workspace, filepath.FromSlash(jo.Path)), aside: asideFd}
		if !unchangedAt(a, jo) {
			cur, err := readSide(a.target)
			if err != nil {
				return fmt.Errorf("merging %s: %w", jo.Path, err)
			}
			switch st := cur.state(); {
			case st == jo.After:
				return nil
			case st != jo.Before:
				return leave()
			}
		}
		if asideFd >= 0 {
			a.keep = strconv.Itoa(n)
		}
		if jo.Op == opWrite {
			k, name := splitRel(jo.Stage)
			a.stage, a.staged = stages[k], name
		}
		if err := runOp(ctx, a, dir, jo, files); err != nil {
			if errors.Is(err, errOnTheWay) {
				return leave()
			}
			return fmt.Errorf("merging %s: %w", jo.Path, err)
		}
		if done := applied.Add(1); hook != nil {
			hook(int(done))
		}
		return nil
	})
	return moved, err
}

// opAt is where an operation is made: the name in its folder (held open),
// its path for what goes by path (reading, the editor), the staged
// content's folder and name (a write's), and the name its old version
// keeps in the aside folder ("" for none).
type opAt struct {
	dir    int
	name   string
	target string
	stage  int
	staged string
	aside  int
	keep   string
}

// stageSpread is how many folders the staged files are spread over, and
// workers how many operations run at once (a variable for the tests).
const stageSpread = 8

var workers = 4

// parallel runs do(0..n-1) on a few goroutines, all ended when it
// returns, and returns the first error (the rest are not started).
func parallel(ctx context.Context, n int, do func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for !stop.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				err := ctx.Err()
				if err == nil {
					err = do(i)
				}
				if err != nil {
					once.Do(func() { first = err })
					stop.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return first
}

// unchangedAt reports whether the path still has the stat it had when
// planned (then it has its Before state: nobody can set a ctime), or is
// still absent as it was.
func unchangedAt(a opAt, jo journalOp) bool {
	st, err := lstatAt(a.dir, a.name)
	if jo.Before == "" {
		return errors.Is(err, unix.ENOENT)
	}
	return err == nil && jo.BeforeStat != "" && st == jo.BeforeStat
}

// runOp applies one operation in its folder. With a.keep, the version it
// replaces or removes stays in the aside folder (see run); when that
// cannot be, it is freed at once.
func runOp(ctx context.Context, a opAt, dir string, jo journalOp, files tools.Files) error {
	switch jo.Op {
	case opDelete:
		if a.keep != "" && unix.Renameat(a.dir, a.name, a.aside, a.keep) == nil {
			return nil
		}
		err := unix.Unlinkat(a.dir, a.name, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	case opChmod:
		return chmodAt(a.dir, a.name, fs.FileMode(jo.Mode))
	}
	if jo.Editor && files != nil {
		// The editor writes by path: that path must still lead to the
		// folder held (no link made on the way since it was opened).
		if !samePlace(a.dir, filepath.Dir(a.target)) {
			return fmt.Errorf("%s: %w", jo.Path, errOnTheWay)
		}
		data, err := os.ReadFile(filepath.Join(dir, stageDir, filepath.FromSlash(jo.Stage)))
		if err != nil {
			return err
		}
		if err := files.WriteFile(ctx, a.target, data); err != nil {
			return fmt.Errorf("the editor did not write it: %w", err)
		}
		// The editor writes text; the permission bits are the merge's.
		var st unix.Stat_t
		if err := unix.Fstatat(a.dir, a.name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && fs.FileMode(st.Mode).Perm() != fs.FileMode(jo.Mode) {
			return chmodAt(a.dir, a.name, fs.FileMode(jo.Mode))
		}
		return nil
	}
	if a.keep != "" && jo.Before != "" {
		// A second name for the old file: the rename below then drops
		// one of two, and frees nothing. (A link that cannot be made
		// costs only that.)
		_ = unix.Linkat(a.dir, a.name, a.aside, a.keep, 0)
	}
	return unix.Renameat(a.stage, a.staged, a.dir, a.name)
}

// samePlace reports whether path leads to the very folder dirfd.
func samePlace(dirfd int, path string) bool {
	var held, now unix.Stat_t
	if unix.Fstat(dirfd, &held) != nil {
		return false
	}
	if unix.Stat(path, &now) != nil {
		return false
	}
	return held.Dev == now.Dev && held.Ino == now.Ino
}

// Recover finishes the merges of workspace that a process left
// half-done (a journal was written) and removes those that never got so
// far (no journal: nothing was written). Merges another process is making
// are left to it. It returns the ids of the merges it finished. It holds
// the workspace's lock to write while it does (see lockWorkspace), so no
// copy takes half of what it finishes; waiting and ctx are the lock's.
func Recover(ctx context.Context, workspace string, waiting wslock.Waiting) ([]string, error) {
	entries, err := os.ReadDir(mergesDir(workspace))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking for unfinished merges: %w", err)
	}
	var pending []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), threeWayPrefix) {
			removeStaleScratch(filepath.Join(mergesDir(workspace), e.Name()))
			continue
		}
		if e.IsDir() && !reaping(filepath.Join(mergesDir(workspace), e.Name())) {
			pending = append(pending, e.Name())
		}
	}
	if len(pending) == 0 {
		return nil, nil
	}
	unlock, err := lockWorkspace(ctx, workspace, waiting)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var done []string
	var errs []error
	for _, id := range pending {
		dir := filepath.Join(mergesDir(workspace), id)
		b, err := os.ReadFile(filepath.Join(dir, journalFile))
		if errors.Is(err, fs.ErrNotExist) {
			// Never committed (or finished by another process meanwhile).
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		var j journal
		if err == nil {
			err = json.Unmarshal(b, &j)
		}
		if err == nil && j.Version != journalVersion {
			err = fmt.Errorf("journal version %d is not %d", j.Version, journalVersion)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("the unfinished merge %s cannot be read (%w); it is left in %s", id, err, dir))
			continue
		}
		if _, err := run(context.Background(), workspace, dir, j, nil, nil, ""); err != nil {
			errs = append(errs, fmt.Errorf("finishing the merge %s: %w", id, err))
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
		done = append(done, id)
	}
	return done, errors.Join(errs...)
}

// staleScratch is how old a planner's git merge-file folder must be to be
// taken for one a killed process left: a live one lasts as long as one
// file's three-way merge.
const staleScratch = time.Hour

// removeStaleScratch removes a planner's scratch folder a killed process
// left behind; a live planner's (younger) is left alone.
func removeStaleScratch(dir string) {
	if info, err := os.Stat(dir); err == nil && time.Since(info.ModTime()) > staleScratch {
		_ = os.RemoveAll(dir)
	}
}

// umask is the process's, read once.
var umask = sync.OnceValue(snapshot.Umask)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
