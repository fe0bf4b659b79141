package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The child's index, staged in process: what `git add -A` did for the
// child's repository (git.go), done by Take itself while it copies.
//
//   - A file the parent's index vouches for (same size, modification and
//     status-change times and inode, and not racily clean: modified before
//     that index was written) keeps the blob id the index has: it is not
//     hashed. Any other file is hashed as it is copied (the copy reads
//     every byte anyway) and, after the copy, written into the child's
//     store unless a store has it already.
//   - Whether a file the parent does not track is ignored is git's own
//     answer: one `git check-ignore --stdin` process, started at the first
//     such file the walk meets and fed while the copy goes on (a tree
//     without untracked files runs no git process at all). Tracked files
//     stay tracked, ignored or not, as with git add -A.
//   - A submodule (gitlink) keeps the commit its checkout is at; the files
//     under it are copied but are not the child's index entries.
//   - The index (version 2) gets the stat data of the copy (size, and the
//     modification time the copy keeps; the child's repository compares
//     only those, core.checkStat=minimal), so a git status in the child
//     reads no file; its trees are written as in gitindex.go, those of
//     folders that did not change since the parent's last write-tree taken
//     from the parent's cache of trees.
//
// What this does not reproduce, git add -A does, after the copy: a parent
// index this does not read (version 4, split, sparse, assume-unchanged or
// skip-worktree entries, conflicts), a repository inside the tree that the
// parent does not know as a submodule, and a file to hash when content
// filters may apply (a .gitattributes in the tree, or a user configuration
// that names autocrlf, eol, attributes, filters or includes).

// errStageByGit says the in-process stage does not cover this tree: git
// add -A makes the child's index instead (git.go).
var errStageByGit = errors.New("the child's index needs git add")

// gitStage is one Take's in-process stage of a child's repository.
type gitStage struct {
	src, child string // the source's top and the child's .git
	gitBin     string
	gitDir     string // the parent's
	format     string
	hashLen    int
	head       string
	parent     []indexEntry   // the parent's index (empty without one)
	byPath     map[string]int // into parent
	trees      map[string]string
	indexSec   uint32          // when the parent's index was written (s)
	gitlinks   map[string]bool // the parent's submodules

	// Walker only (the walk ends before finish reads them).
	nested []string // folders below the top with a .git of their own
	attrs  bool     // a .gitattributes was copied
	ignore *ignoreCheck

	mu   sync.Mutex
	oids map[string]blobID // by slash-separated path
}

// blobID is a copied file's blob id (nil: not known, the copy is hashed
// after), hashed when it was computed rather than taken from the parent's
// index (its blob may then be missing from every store).
type blobID struct {
	id     []byte
	hashed bool
}

// prepareStage starts the stage for a Take of src into dst (which exists
// and is empty): the child's .git is made. Neither a stage nor byGit when
// src is not the top of a work tree (or git is missing): no repository;
// byGit when git add must make the index.
func prepareStage(src, dst string) (g *gitStage, byGit bool) {
	gitDir, common, ok := findGitDir(src)
	if !ok {
		return nil, false
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, false
	}
	head, format, err := parentHead(gitDir, common)
	if err != nil {
		return nil, false
	}
	g = &gitStage{src: src, child: filepath.Join(dst, ".git"), gitBin: gitBin, gitDir: gitDir, format: format,
		head: head, byPath: map[string]int{}, gitlinks: map[string]bool{}, oids: map[string]blobID{}}
	g.hashLen = map[string]int{"sha1": 20, "sha256": 32}[format]
	if g.hashLen == 0 {
		return nil, true
	}
	if head != "" {
		b, err := os.ReadFile(filepath.Join(gitDir, "index"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, true
		default:
			fi, err := os.Stat(filepath.Join(gitDir, "index"))
			if err != nil {
				return nil, true
			}
			if g.parent, g.trees, err = readIndex(b, g.hashLen); err != nil {
				return nil, true
			}
			g.indexSec = uint32(fi.ModTime().Unix())
		}
	}
	for i, e := range g.parent {
		if e.kept {
			return nil, true
		}
		g.byPath[e.path] = i
		if e.mode&0o170000 == 0o160000 {
			g.gitlinks[e.path] = true
		}
	}
	if err := newChildRepo(g.child, gitDir, common, format, false); err != nil {
		_ = os.RemoveAll(g.child)
		return nil, false
	}
	return g, false
}

// underGitlink says whether p lies inside one of the parent's submodules.
func (g *gitStage) underGitlink(p string) bool {
	if len(g.gitlinks) == 0 {
		return false
	}
	for i := strings.IndexByte(p, '/'); i >= 0; i = nextSlash(p, i) {
		if g.gitlinks[p[:i]] {
			return true
		}
	}
	return false
}

func nextSlash(p string, i int) int {
	j := strings.IndexByte(p[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// seen is the walker telling of a file or link it will copy (rel is
// OS-separated): a file the parent does not track goes to the ignore check.
func (g *gitStage) seen(ctx context.Context, rel, name string) {
	if name == ".gitattributes" {
		g.attrs = true
	}
	p := filepath.ToSlash(rel)
	if _, tracked := g.byPath[p]; tracked || g.underGitlink(p) {
		return
	}
	if g.ignore == nil {
		g.ignore = startIgnoreCheck(ctx, g)
	}
	g.ignore.add(p)
}

// vouches says whether the parent's index entry e still describes the file
// with this stat data, by git's rules: same size, times, inode, and not
// racily clean (modified in the second its index was written, or later).
func (g *gitStage) vouches(e *indexEntry, size, mtime, ctime int64, ino uint64) bool {
	s := &e.stat
	same := func(sec, nsec uint32, t int64) bool {
		return sec == uint32(t/1e9) && (nsec == 0 || nsec == uint32(t%1e9))
	}
	return e.mode&0o170000 == 0o100000 && s[statSize] == uint32(size) && s[statIno] == uint32(ino) &&
		same(s[statMtimeS], s[statMtimeN], mtime) && same(s[statCtimeS], s[statCtimeN], ctime) &&
		s[statMtimeS] < g.indexSec
}

// blobHasher is a copy worker's git blob id of the file it copies.
type blobHasher struct {
	g       *gitStage
	rel     string // slash-separated
	h       hash.Hash
	on      bool
	size, n int64
	ctime   int64 // the vouched source's status-change time
	id      []byte
	hashed  bool
}

func (g *gitStage) newHasher() *blobHasher {
	return &blobHasher{g: g, h: newHash(g.format)}
}

// newHash is the object format's hash (sha1 or sha256).
func newHash(format string) hash.Hash {
	if format == "sha256" {
		return sha256.New()
	}
	return sha1.New()
}

// begin starts a file.
func (b *blobHasher) begin(rel string) {
	b.rel, b.on, b.id, b.hashed, b.n = filepath.ToSlash(rel), false, nil, false, 0
}

// start takes the source's stat data, before its bytes: the id the
// parent's index vouches for, or a hash to compute.
func (b *blobHasher) start(size, mtime, ctime int64, ino uint64) {
	if i, ok := b.g.byPath[b.rel]; ok && b.g.vouches(&b.g.parent[i], size, mtime, ctime, ino) {
		b.id, b.ctime = b.g.parent[i].oid, ctime
		return
	}
	b.h.Reset()
	b.h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	b.on, b.size = true, size
}

// vouched says whether the file's id is the parent index's, not hashed.
func (b *blobHasher) vouched() bool { return !b.on && b.id != nil }

// copied takes the source's status-change time once its bytes are
// copied: a file written while it was copied is no longer what the
// parent's index vouched for (its copy keeps the old modification time, so
// the child's git would call it clean), and is hashed after instead.
func (b *blobHasher) copied(ctime int64) {
	if b.vouched() && ctime != b.ctime {
		b.id = nil
	}
}

func (b *blobHasher) write(p []byte) {
	if b.on {
		b.h.Write(p)
		b.n += int64(len(p))
	}
}

// done records the file's id: unknown when its size changed under the
// copy (the copy is hashed after).
func (b *blobHasher) done() {
	if b.on && b.n == b.size {
		b.id, b.hashed = b.h.Sum(nil), true
	}
	b.on = false
	b.g.mu.Lock()
	b.g.oids[b.rel] = blobID{id: b.id, hashed: b.hashed || b.id == nil}
	b.g.mu.Unlock()
}

// link records a symbolic link's blob: its target.
func (g *gitStage) link(rel, target string) {
	id, _ := objectID(g.format, "blob", []byte(target))
	raw, _ := hex.DecodeString(id)
	g.mu.Lock()
	g.oids[filepath.ToSlash(rel)] = blobID{id: raw, hashed: true}
	g.mu.Unlock()
}

// close ends the ignore check if finish did not (a failed Take).
func (g *gitStage) close() {
	if g.ignore != nil {
		_, _ = g.ignore.wait()
	}
}

// finish makes the child's index, trees and base commit from what the
// copy found (entries: the manifest's, sorted by path).
func (g *gitStage) finish(ctx context.Context, entries []Entry) (*GitView, error) {
	var ignored map[string]bool
	if g.ignore != nil {
		var err error
		if ignored, err = g.ignore.wait(); err != nil {
			return nil, err
		}
	}
	for _, n := range g.nested {
		if !g.gitlinks[n] {
			return nil, errStageByGit // git add -A makes it a gitlink, or refuses
		}
	}
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	out := make([]indexEntry, 0, len(entries)+len(g.gitlinks))
	for _, e := range entries {
		p := e.Path
		if g.gitlinks[p] || invalidForGit(p) {
			return nil, errStageByGit
		}
		if g.underGitlink(p) {
			continue
		}
		if _, tracked := g.byPath[p]; !tracked && ignored[p] {
			continue
		}
		ie := indexEntry{path: p, mode: 0o100644, oid: g.oids[p].id}
		switch {
		case e.Mode&fs.ModeSymlink != 0:
			ie.mode = 0o120000
		case e.Mode&0o100 != 0:
			ie.mode = 0o100755
		}
		sec, nsec := uint32(e.MTime.Unix()), uint32(e.MTime.Nanosecond())
		ie.stat = [10]uint32{sec, nsec, sec, nsec, 0, 0, ie.mode, uid, gid, uint32(e.Size)}
		out = append(out, ie)
	}
	for gl := range g.gitlinks {
		dir := filepath.Join(g.src, filepath.FromSlash(gl))
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue // git add -A removes it
		}
		if err != nil || !fi.IsDir() {
			return nil, errStageByGit
		}
		id := g.parent[g.byPath[gl]].oid
		if sub, common, ok := findGitDir(dir); ok {
			head, _, err := parentHead(sub, common)
			raw, herr := hex.DecodeString(head)
			if err != nil || herr != nil || len(raw) != g.hashLen {
				return nil, errStageByGit
			}
			id = raw
		}
		out = append(out, indexEntry{path: gl, mode: 0o160000, oid: id, stat: [10]uint32{statMode: 0o160000}})
	}
	if len(g.gitlinks) > 0 {
		slices.SortFunc(out, func(a, b indexEntry) int { return strings.Compare(a.path, b.path) })
	}

	// The blobs to write: those hashed here (a file hashed only because
	// the parent's index found it racily clean, and unchanged, is the
	// parent's). Content filters would make git's blobs differ.
	var pending []int
	filters := false
	for i, e := range out {
		b, ok := g.oids[e.path]
		if !ok || !b.hashed {
			continue
		}
		if j, tracked := g.byPath[e.path]; tracked && bytes.Equal(b.id, g.parent[j].oid) {
			continue
		}
		pending = append(pending, i)
		filters = filters || e.mode != 0o120000
	}
	if filters && (g.attrs || userFilters()) {
		return nil, errStageByGit
	}

	have, err := openStores(g.child, g.hashLen)
	if err != nil {
		return nil, err
	}
	defer have.close()
	if err := g.writeBlobs(ctx, out, pending, have); err != nil {
		return nil, err
	}
	if err := writeIndexFile(filepath.Join(g.child, "index"), g.format, out); err != nil {
		return nil, err
	}
	w := treeWriter{gitDir: g.child, format: g.format, cached: g.validTrees(out), have: have}
	tree, rest, err := w.tree(out, "")
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("index entry %q out of order", rest[0].path)
	}
	if err != nil {
		return nil, err
	}
	return commitBase(g.child, g.format, tree, g.head)
}

// invalidForGit says whether git refuses the path (a component .git in
// another case: the exact name is never copied).
func invalidForGit(p string) bool {
	if !strings.Contains(strings.ToLower(p), ".git") {
		return false
	}
	for c := range strings.SplitSeq(p, "/") {
		if strings.EqualFold(c, ".git") {
			return true
		}
	}
	return false
}

// userFilters says whether the user's git configuration may filter what
// is staged (line endings, attributes, filters; an include may hold any
// of them): the files hashed here would then differ from git's blobs.
func userFilters() bool {
	home, _ := os.UserHomeDir()
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	var files []string
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	if xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
		if b, err := os.ReadFile(filepath.Join(xdg, "git", "attributes")); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return true
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		low := bytes.ToLower(b)
		for _, k := range []string{"autocrlf", "eol", "attributesfile", "[filter", "[include"} {
			if bytes.Contains(low, []byte(k)) {
				return true
			}
		}
	}
	return false
}

// writeBlobs writes the blobs of out[pending] that no store has, on a few
// workers (a tree without commits has every file to write).
func (g *gitStage) writeBlobs(ctx context.Context, out []indexEntry, pending []int, have *stores) error {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range min(len(pending), max(2, runtime.GOMAXPROCS(0))) {
		wg.Go(func() {
			for i := range jobs {
				if err := g.writeBlob(&out[i], have); err != nil {
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, i := range pending {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// writeBlob writes one entry's blob unless a store has it, and sets its
// id when the copy's hash was not known.
func (g *gitStage) writeBlob(e *indexEntry, have *stores) error {
	if e.oid != nil && have.has(hex.EncodeToString(e.oid)) {
		return nil
	}
	path := filepath.Join(filepath.Dir(g.child), filepath.FromSlash(e.path))
	if e.mode == 0o120000 {
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		_, err = writeObject(g.child, g.format, "blob", []byte(target))
		return err
	}
	id, err := writeBlobFile(g.child, g.format, path)
	if err != nil {
		return err
	}
	if e.oid != nil && !bytes.Equal(id, e.oid) {
		return fmt.Errorf("%s changed in the copy while it was staged", e.path)
	}
	e.oid = id
	return nil
}

// writeBlobFile stores the file at path as a loose blob, hashing and
// compressing it in one read, and returns its id.
func writeBlobFile(gitDir, format, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	h := newHash(format)
	tmp, err := os.CreateTemp(filepath.Join(gitDir, "objects"), "tmp_obj_")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	bw := bufio.NewWriterSize(tmp, 64<<10)
	zw := getZlib(bw)
	defer zlibs.Put(zw)
	header := []byte("blob " + strconv.FormatInt(fi.Size(), 10) + "\x00")
	h.Write(header)
	_, _ = zw.Write(header)
	n, err := io.Copy(io.MultiWriter(h, zw), f)
	if err == nil && n != fi.Size() {
		err = fmt.Errorf("%s changed size while it was staged", path)
	}
	for _, step := range []func() error{zw.Close, bw.Flush, tmp.Close} {
		if err == nil {
			err = step()
		} else {
			_ = step()
		}
	}
	if err != nil {
		return nil, err
	}
	id := h.Sum(nil)
	name := hex.EncodeToString(id)
	dir := filepath.Join(gitDir, "objects", name[:2])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name[2:])); err != nil {
		return nil, err
	}
	return id, nil
}

// validTrees is the parent's cache of trees less the folders whose
// entries differ from the parent's index (and their parents).
func (g *gitStage) validTrees(out []indexEntry) map[string]string {
	if len(g.trees) == 0 {
		return nil
	}
	dirty := map[string]bool{}
	mark := func(p string) {
		dirty[""] = true
		for i := strings.IndexByte(p, '/'); i >= 0; i = nextSlash(p, i) {
			dirty[p[:i+1]] = true
		}
	}
	present := make(map[string]bool, len(out))
	for _, e := range out {
		present[e.path] = true
		i, ok := g.byPath[e.path]
		if !ok || g.parent[i].mode != e.mode || !bytes.Equal(g.parent[i].oid, e.oid) {
			mark(e.path)
		}
	}
	for _, e := range g.parent {
		if !present[e.path] {
			mark(e.path)
		}
	}
	valid := make(map[string]string, len(g.trees))
	for dir, id := range g.trees {
		if !dirty[dir] {
			valid[dir] = id
		}
	}
	return valid
}

// writeIndexFile writes an index (version 2) of entries, sorted by path.
func writeIndexFile(path, format string, entries []indexEntry) error {
	var b bytes.Buffer
	b.WriteString("DIRC")
	b.Write(binary.BigEndian.AppendUint32(nil, 2))
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(entries))))
	var st [40]byte
	for _, e := range entries {
		start := b.Len()
		for i, v := range e.stat {
			binary.BigEndian.PutUint32(st[4*i:], v)
		}
		binary.BigEndian.PutUint32(st[4*statMode:], e.mode)
		b.Write(st[:])
		b.Write(e.oid)
		b.Write(binary.BigEndian.AppendUint16(nil, uint16(min(len(e.path), 0xFFF))))
		b.WriteString(e.path)
		b.Write(make([]byte, 8-(b.Len()-start)%8))
	}
	h := newHash(format)
	h.Write(b.Bytes())
	b.Write(h.Sum(nil))
	tmp := path + ".lock"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ignoreCheck is a `git check-ignore --stdin` fed the untracked files as
// the walk meets them; wait gives the ignored ones.
type ignoreCheck struct {
	cmd  *exec.Cmd
	pipe io.WriteCloser
	in   *bufio.Writer
	out  bytes.Buffer
	errb bytes.Buffer
	err  error
	done bool
}

func startIgnoreCheck(ctx context.Context, g *gitStage) *ignoreCheck {
	c := &ignoreCheck{}
	cmd := exec.CommandContext(ctx, g.gitBin, "check-ignore", "--no-index", "-z", "--stdin")
	// The source's own .gitignore files, the child's info/exclude (the
	// parent's and Take's rules) and the user's excludes file: what git
	// add -A would read. Paths go as "./path", so that a name beginning
	// with ":" is not taken for pathspec magic (check-ignore refuses
	// literal pathspecs).
	cmd.Dir = g.src
	cmd.Env = gitEnv("GIT_DIR="+g.child, "GIT_WORK_TREE="+g.src, "GIT_CONFIG_NOSYSTEM=1")
	cmd.Stdout, cmd.Stderr = &c.out, &c.errb
	c.cmd = cmd
	if c.pipe, c.err = cmd.StdinPipe(); c.err == nil {
		c.err = cmd.Start()
	}
	if c.err != nil {
		c.done = true
		return c
	}
	c.in = bufio.NewWriterSize(c.pipe, 32<<10)
	return c
}

func (c *ignoreCheck) add(p string) {
	if c.err != nil {
		return
	}
	if _, err := c.in.WriteString("./" + p + "\x00"); err != nil {
		c.err = err
	}
}

// wait ends the input and reads git's answer (exit status 1: nothing is
// ignored).
func (c *ignoreCheck) wait() (map[string]bool, error) {
	if c.done {
		return nil, c.err
	}
	c.done = true
	ferr := c.in.Flush()
	cerr := c.pipe.Close()
	werr := c.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(werr, &exit) && exit.ExitCode() == 1 && c.errb.Len() == 0 {
		werr = nil
	}
	if c.err == nil {
		c.err = cmpOr(werr, cmpOr(ferr, cerr))
	}
	if c.err != nil {
		c.err = fmt.Errorf("git check-ignore: %w: %s", c.err, strings.TrimSpace(c.errb.String()))
		return nil, c.err
	}
	ignored := map[string]bool{}
	for p := range strings.SplitSeq(c.out.String(), "\x00") {
		if p != "" {
			ignored[strings.TrimPrefix(p, "./")] = true
		}
	}
	return ignored, nil
}
