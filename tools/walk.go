package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/sandbox"
)

// skipped are never searched: git's own store (a folder, or a file in a
// worktree or submodule) and Pixir's state.
var skipped = []string{".git", ".pixir"}

// walkedFile is a file a search looks at.
type walkedFile struct {
	// rel is the path shown to the model: relative to the workspace root,
	// slash-separated, and through a symbolic link when the file was
	// reached through one.
	rel string
	// open is the path to open beneath the workspace: rel, or the link's
	// target inside the workspace.
	open string
}

// fileWalk lists the files under a path of the workspace the way git sees
// them: depth first in byte order of their paths, without .git/, .pixir/
// and whatever .gitignore files (root and nested, with negation) and
// .git/info/exclude ignore. Symbolic links to files are followed when
// Workspace.Resolve accepts their target; symbolic links to directories are
// not followed (as git and ripgrep do), so a link loop cannot make a walk
// endless. Every open goes through a sandbox.Dir on the workspace, which
// refuses, at the moment of use, a path holding a symbolic link (one
// swapped in since the walk listed it could lead into .pixir/ or out) and a
// file with more than one name (a hard link may be another file's).
type fileWalk struct {
	env    Env
	root   *sandbox.Dir
	ignore ignorer
	// start is the searched path, slash-separated and relative to the
	// workspace root ("" for the root); startIsDir says what it is.
	start      string
	startIsDir bool
	// unreadable lists (the first maxUnreadable of unreadableCount) the
	// folders and files the walk could not read for want of permission:
	// what they hold was not searched, and the result says so.
	unreadable      []string
	unreadableCount int
}

// maxUnreadable bounds the unreadable paths a search names.
const maxUnreadable = 20

// noteUnreadable records rel (a folder's ending in /) when err says it may
// not be read; a path removed meanwhile is no loss.
func (w *fileWalk) noteUnreadable(rel string, err error) {
	if !errors.Is(err, fs.ErrPermission) {
		return
	}
	w.unreadableCount++
	if len(w.unreadable) < maxUnreadable {
		w.unreadable = append(w.unreadable, rel)
	}
}

// unreadableNote says what a search could not read, or "".
func (w *fileWalk) unreadableNote() string {
	if w.unreadableCount == 0 {
		return ""
	}
	more := ""
	if n := w.unreadableCount - len(w.unreadable); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("[%d %s could not be read (permission denied), so %s not searched: %s%s]",
		w.unreadableCount, plural.Word(w.unreadableCount, "path", "paths"), plural.Word(w.unreadableCount, "it was", "they were"),
		strings.Join(w.unreadable, ", "), more)
}

// openWalk resolves path (empty for the workspace root) through the
// workspace and prepares a walk under it. The caller closes it.
func openWalk(env Env, path string) (*fileWalk, target, *Failure) {
	if path == "" {
		path = "."
	}
	t, f := resolve(env, path)
	if f != nil {
		return nil, t, f
	}
	rel, err := filepath.Rel(env.Workspace.Root(), t.abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, t, &Failure{Kind: ErrPermissionDenied, Message: fmt.Sprintf("%s is outside the workspace; search a path inside it", path)}
	}
	t.rel = rel
	root, err := sandbox.OpenDir(env.Workspace.Root())
	if err != nil {
		return nil, t, &Failure{Kind: ErrInternal, Message: fmt.Sprintf("opening the workspace: %v", err)}
	}
	w := &fileWalk{env: env, root: root, start: filepath.ToSlash(rel)}
	if w.start == "." {
		w.start = ""
	}
	info, err := root.Stat(osPath(w.start))
	if err != nil {
		root.Close()
		return nil, t, fileFailure(err, rel, "check the path, or list the directory with glob")
	}
	switch {
	case info.IsDir():
		w.startIsDir = true
	case !info.Mode().IsRegular():
		root.Close()
		return nil, t, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf("%s is not a regular file or a directory (%s); search a directory or a plain file", rel, info.Mode().Type())}
	}
	return w, t, nil
}

func (w *fileWalk) Close() { w.root.Close() }

// osPath turns a slash-separated path relative to the root into one for
// the root's sandbox.Dir.
func osPath(rel string) string {
	if rel == "" {
		return "."
	}
	return filepath.FromSlash(rel)
}

// sub is rel relative to the searched directory: what glob patterns match.
func (w *fileWalk) sub(rel string) string {
	if w.start == "" {
		return rel
	}
	return strings.TrimPrefix(rel, w.start+"/")
}

// errStopWalk ends a walk early without an error.
var errStopWalk = errors.New("stop walking")

// run calls visit for every file, in order. A searched path that is a file
// is visited whatever the ignore rules say: it was asked for by name. It
// returns ctx's error when the walk was cancelled.
func (w *fileWalk) run(ctx context.Context, visit func(walkedFile) error) error {
	if !w.startIsDir {
		return ignoreStop(visit(walkedFile{rel: w.start, open: w.start}))
	}
	w.ignore.loadIgnoresAbove(w.root, w.start)
	return ignoreStop(w.dir(ctx, w.start, visit))
}

func ignoreStop(err error) error {
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}

// entry is a directory entry with the key that orders a walk: a
// directory's name followed by a slash, so that visiting entries in key
// order, depth first, visits paths in byte order ("a.go" before "a/b.go").
type entry struct {
	name, key string
	mode      fs.FileMode
}

func (w *fileWalk) dir(ctx context.Context, dir string, visit func(walkedFile) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries := w.readDir(dir)
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if slices.Contains(skipped, e.name) {
			continue
		}
		rel := e.name
		if dir != "" {
			rel = dir + "/" + e.name
		}
		switch {
		case e.mode.IsDir():
			if w.ignore.ignored(rel, true) {
				continue
			}
			mark := w.ignore.mark()
			w.ignore.load(w.root, rel+"/.gitignore", rel)
			err := w.dir(ctx, rel, visit)
			w.ignore.release(mark)
			if err != nil {
				return err
			}
		case e.mode.IsRegular():
			if w.ignore.ignored(rel, false) {
				continue
			}
			if err := visit(walkedFile{rel: rel, open: rel}); err != nil {
				return err
			}
		case e.mode&fs.ModeSymlink != 0:
			if w.ignore.ignored(rel, false) {
				continue
			}
			if target, ok := w.linkedFile(rel); ok {
				if err := visit(walkedFile{rel: rel, open: target}); err != nil {
					return err
				}
			}
		}
		// Sockets, FIFOs and devices are not files to search.
	}
	return nil
}

// readDir lists dir in walk order. A directory that cannot be read (its
// permissions, or removed meanwhile) is searched as empty.
func (w *fileWalk) readDir(dir string) []entry {
	f, err := w.root.OpenFile(osPath(dir), dirFlags)
	if err != nil {
		name := dir + "/"
		if dir == "" {
			name = "./"
		}
		w.noteUnreadable(name, err)
		return nil
	}
	defer f.Close()
	des, _ := f.ReadDir(-1)
	entries := make([]entry, 0, len(des))
	for _, d := range des {
		e := entry{name: d.Name(), key: d.Name(), mode: d.Type()}
		if e.mode.IsDir() {
			e.key += "/"
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	return entries
}

// linkedFile checks a symbolic link found by the walk: its target must be
// accepted by Workspace.Resolve (inside the workspace, not Pixir's state)
// and be a regular file. It returns the target relative to the root.
func (w *fileWalk) linkedFile(rel string) (string, bool) {
	abs, err := w.env.Workspace.Resolve(filepath.Join(w.env.Workspace.Root(), osPath(rel)))
	if err != nil {
		return "", false
	}
	target, err := filepath.Rel(w.env.Workspace.Root(), abs)
	if err != nil {
		return "", false
	}
	// target is resolved: a link found on its way now was swapped in.
	info, err := w.root.Stat(target)
	if err != nil || !info.Mode().IsRegular() {
		return "", false
	}
	return filepath.ToSlash(target), true
}

// openFile opens a walked file for reading beneath the root, and gives
// its size. It refuses anything but a regular file, which a FIFO swapped in
// could otherwise block on.
func (w *fileWalk) openFile(f walkedFile) (*os.File, int64, error) {
	file, err := w.root.OpenFile(osPath(f.open), os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return nil, 0, err
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, 0, err
	}
	if !info.Mode().IsRegular() {
		file.Close()
		return nil, 0, fmt.Errorf("%s is not a regular file", f.rel)
	}
	return file, info.Size(), nil
}

// pathFilter is a glob that selects files by their path relative to the
// searched directory. As in .gitignore and ripgrep's --glob, a pattern
// without a slash matches a file's name at any depth (*.go is **/*.go), and
// a leading slash anchors the pattern to the searched directory (/*.go is
// only the files directly in it).
type pathFilter struct {
	glob string
}

// absolutePattern makes a glob argument written as an absolute path (a
// model that names files by absolute path writes /home/u/proj/src/*.go)
// relative to dir, the searched directory: a leading / keeps a glob to
// dir, so that one was taken for home/u/proj/src/*.go under dir and
// matched nothing, without a word. A glob that leads elsewhere in the
// workspace is refused with what to give instead; any other leading /
// keeps its meaning.
func absolutePattern(pattern, arg, dir, root string) (string, *Failure) {
	clean := filepath.Clean(pattern)
	if filepath.IsAbs(clean) && !strings.HasPrefix(clean, dir+string(filepath.Separator)) && clean != root && !strings.HasPrefix(clean, root+string(filepath.Separator)) {
		clean = throughLinks(clean)
	}
	switch {
	case !filepath.IsAbs(pattern):
	case strings.HasPrefix(clean, dir+string(filepath.Separator)):
		return "/" + strings.TrimPrefix(clean, dir+string(filepath.Separator)), nil
	case clean == root || strings.HasPrefix(clean, root+string(filepath.Separator)):
		return "", &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"%s %q is an absolute path that is not inside the searched folder %s; write it relative to that folder (e.g. **/*.go), or set path to the folder it names", arg, pattern, dir)}
	}
	return pattern, nil
}

// throughLinks is the absolute pattern clean with the symbolic links of
// its leading folders resolved, as the workspace's root is: a workspace
// opened through a link (/home/me/proj -> /data/proj) is searched at its
// real path, and the model writes the one the user sees. The folders are
// the pattern's leading names without glob syntax; clean as it was when
// none of them resolves.
func throughLinks(clean string) string {
	sep := string(filepath.Separator)
	parts := strings.Split(clean, sep)
	literal := 0
	for literal < len(parts) && !strings.ContainsAny(parts[literal], `*?[]{}\`) {
		literal++
	}
	for i := literal; i > 1; i-- {
		if real, err := filepath.EvalSymlinks(strings.Join(parts[:i], sep)); err == nil {
			return filepath.Join(append([]string{real}, parts[i:]...)...)
		}
	}
	return clean
}

// newPathFilter compiles a glob argument; the argument name goes into the
// error message.
func newPathFilter(pattern, arg string) (pathFilter, *Failure) {
	g := filepath.ToSlash(pattern)
	switch {
	case strings.HasPrefix(g, "/"):
		g = strings.TrimLeft(g, "/")
	case strings.HasPrefix(g, "./"):
		g = strings.TrimPrefix(g, "./")
	case !strings.Contains(g, "/"):
		g = "**/" + g
	}
	if g == "" || !doublestar.ValidatePattern(g) {
		return pathFilter{}, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"%s %q is not a valid glob (check its [ ] and { } pairs); use * for any name, ** for any number of directories, {a,b} for alternatives, e.g. **/*.go", arg, pattern)}
	}
	return pathFilter{glob: g}, nil
}

func (p pathFilter) match(sub string) bool {
	return p.glob == "" || doublestar.MatchUnvalidated(p.glob, sub)
}
