package snapshot

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A child's git of its own. A snapshot lies inside the parent's workspace
// (.pixir/subagents/<id>/workspace) and Take leaves .git out, so git run in
// it would find the parent's repository: a child's `git stash` or
// `git reset --hard` would act on the parent's files. When the source is the
// top of a git work tree, Take gives the copy a repository of its own
// instead, made without copying the parent's history:
//
//   - a fresh .git whose objects/info/alternates names the parent's object
//     store, so every commit and blob of the parent is readable and none is
//     copied (git never writes into an alternate);
//   - an index of the copy as taken, made by Take itself while it copies
//     (gitstage.go): the files the parent's index vouches for keep their
//     blob ids unread, the others are hashed as they are copied and only
//     the blobs no store has are written; git's own rules decide what is
//     ignored (git check-ignore, one process, only when the tree has
//     untracked files). The index has the copy's sizes and modification
//     times, in a repository configured to compare only those
//     (core.checkStat=minimal, core.trustctime=false): a git status in the
//     child reads no file. What the stage does not cover (gitstage.go
//     says what) is left to `git add -A`, run on the parent's work tree
//     from a copy of the parent's index (only what differs from it is
//     hashed, into the child's own store), beside the copy when known
//     before it, after it otherwise;
//   - a base commit whose parent is the parent's HEAD and whose tree is
//     that index's: the trees (those the parent's cache of trees does not
//     name and no store has) and the commit are written in process
//     (gitindex.go). Take's exclusions are the child repository's
//     info/exclude, so what the copy leaves out is not shown as
//     untracked.
//
// The child is on the branch pixir/snapshot at that commit: git status and
// git diff show its own changes and nothing else, git log shows the
// parent's history, and a reset, a stash or a commit stays in the copy.
// Ignored files are copied but stay ignored (the parent's info/exclude is
// copied too). The parent's repository is read, never written: its HEAD,
// refs, config and index are read as files.

// GitView is the repository a snapshot got.
type GitView struct {
	// Base is the commit the child starts from: the copy as taken.
	Base string `json:"base"`
	// Parent is the parent's HEAD when the snapshot was taken ("" in a
	// repository without commits).
	Parent string `json:"parent,omitempty"`
	// Branch is the child's branch.
	Branch string `json:"branch"`
}

// snapshotBranch is the branch a child's repository is on.
const snapshotBranch = "pixir/snapshot"

// gitView makes dst's repository from src's (see above), reading src's
// files (the copy may still be under way); nil when src is not the top of
// a work tree or git is missing or fails (the copy is then without one:
// GIT_CEILING_DIRECTORIES still keeps a child's git from climbing to the
// parent's).
func gitView(ctx context.Context, src, dst string) *GitView {
	gitDir, common, ok := findGitDir(src)
	if !ok {
		return nil
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil
	}
	v, err := makeGitView(ctx, gitBin, src, dst, gitDir, common)
	if err != nil {
		// The copy is still good; only the view is missing.
		_ = os.RemoveAll(filepath.Join(dst, ".git"))
		return nil
	}
	return v
}

// findGitDir finds the repository of the work tree whose top is dir:
// dir/.git as a folder, or a .git file naming it (a linked worktree);
// common is the folder holding objects (a worktree's commondir).
func findGitDir(dir string) (gitDir, common string, ok bool) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return "", "", false
	case fi.IsDir():
		gitDir = dotgit
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(dotgit)
		if err != nil {
			return "", "", false
		}
		p, found := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !found {
			return "", "", false
		}
		gitDir = strings.TrimSpace(p)
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(dir, gitDir)
		}
	default:
		return "", "", false
	}
	common = gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	if fi, err := os.Stat(filepath.Join(common, "objects")); err != nil || !fi.IsDir() {
		return "", "", false
	}
	return gitDir, common, true
}

// gitEnv is the environment of the git commands Take runs: Pixir's own
// minus every GIT_ variable that could point them elsewhere, plus extra.
func gitEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runGit runs git with env in dir and returns its trimmed output; a
// failure says what git printed, on either stream.
func runGit(ctx context.Context, gitBin, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, gitBin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s %s", args[0], err, strings.TrimSpace(errb.String()), strings.TrimSpace(out.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

func makeGitView(ctx context.Context, gitBin, src, dst, gitDir, common string) (*GitView, error) {
	// What the parent is on, read from its files: a git process costs
	// milliseconds, and a busy machine makes it tens.
	head, format, err := parentHead(gitDir, common)
	if err != nil {
		return nil, err
	}
	child := filepath.Join(dst, ".git")
	if err := newChildRepo(child, gitDir, common, format, head != ""); err != nil {
		return nil, err
	}

	// One git process stages the work tree as it is (only what differs
	// from the parent's index is hashed); the trees of that index and the
	// base commit are written here (each git process costs tens of
	// milliseconds on a busy machine, and git commit would stat every
	// file again). An index this does not read (a split or sparse index,
	// version 4, entries to be added) has its trees written by git.
	env := gitEnv("GIT_DIR="+child, "GIT_WORK_TREE="+src, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Pixir", "GIT_AUTHOR_EMAIL=pixir@localhost",
		"GIT_COMMITTER_NAME=Pixir", "GIT_COMMITTER_EMAIL=pixir@localhost")
	if _, err := runGit(ctx, gitBin, src, env, "add", "-A"); err != nil {
		return nil, err
	}
	tree, err := writeIndexTrees(child, format)
	if errors.Is(err, errIndexNotRead) {
		tree, err = runGit(ctx, gitBin, src, env, "write-tree")
	}
	if err != nil {
		return nil, err
	}
	return commitBase(child, format, tree, head)
}

// commitBase writes the base commit of tree on head and points the
// snapshot branch at it.
func commitBase(child, format, tree, head string) (*GitView, error) {
	base, err := writeCommit(child, format, tree, head, time.Now(),
		"Pixir snapshot: the workspace as this subagent got it (uncommitted and untracked files included)")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(child, "refs", "heads", filepath.FromSlash(snapshotBranch)), []byte(base+"\n"), 0o644); err != nil {
		return nil, err
	}
	return &GitView{Parent: head, Base: base, Branch: snapshotBranch}, nil
}

// newChildRepo makes the child's repository in child (its .git): config,
// HEAD on the snapshot branch, alternates to the parent's objects and the
// exclude rules; withIndex copies the parent's index too (for git add to
// start from).
func newChildRepo(child, gitDir, common, format string, withIndex bool) error {
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads/pixir", "refs/tags", "info"} {
		if err := os.MkdirAll(filepath.Join(child, d), 0o755); err != nil {
			return err
		}
	}
	version, ext := "0", ""
	if format != "sha1" {
		version, ext = "1", "[extensions]\n\tobjectformat = "+format+"\n"
	}
	config := "[core]\n\trepositoryformatversion = " + version + "\n\tfilemode = true\n\tbare = false\n" +
		"\tlogallrefupdates = true\n\tcheckStat = minimal\n\ttrustctime = false\n\tfsmonitor = false\n" +
		"[gc]\n\tauto = 0\n" + ext
	files := map[string]string{
		"config":                  config,
		"HEAD":                    "ref: refs/heads/" + snapshotBranch + "\n",
		"description":             "A Pixir subagent's snapshot: its own repository, sharing its parent's objects.\n",
		"objects/info/alternates": filepath.Join(common, "objects") + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(child, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
			return err
		}
	}
	exclude, _ := os.ReadFile(filepath.Join(common, "info", "exclude"))
	exclude = append(exclude, excludeRules()...)
	if err := os.WriteFile(filepath.Join(child, "info", "exclude"), exclude, 0o644); err != nil {
		return err
	}
	// The parent's index, so known files are not hashed again; a split
	// index needs its shared part beside it. Without one (a fresh
	// repository), git add makes it.
	if withIndex {
		if err := copyKeepingTime(filepath.Join(gitDir, "index"), filepath.Join(child, "index")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		shared, _ := filepath.Glob(filepath.Join(gitDir, "sharedindex.*"))
		for _, s := range shared {
			if err := copyKeepingTime(s, filepath.Join(child, filepath.Base(s))); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeCommit writes the base commit into the child's object store as a
// loose object, as `git commit-tree TREE -p HEAD -m MESSAGE` would with
// Pixir as author and committer, and returns its id. format is the
// repository's object format (sha1 or sha256).
func writeCommit(gitDir, format, tree, parent string, when time.Time, message string) (string, error) {
	var body strings.Builder
	body.WriteString("tree " + tree + "\n")
	if parent != "" {
		body.WriteString("parent " + parent + "\n")
	}
	who := fmt.Sprintf("Pixir <pixir@localhost> %d +0000", when.Unix())
	body.WriteString("author " + who + "\ncommitter " + who + "\n\n" + message + "\n")
	return writeObject(gitDir, format, "commit", []byte(body.String()))
}

// objectID is an object's id: the hash of "<type> <size>\0" and the
// content.
func objectID(format, kind string, content []byte) (string, error) {
	var h hash.Hash
	switch format {
	case "sha1":
		h = sha1.New()
	case "sha256":
		h = sha256.New()
	default:
		return "", fmt.Errorf("object format %q is not known", format)
	}
	h.Write([]byte(kind + " " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeObject stores an object as git does (zlib of "<type> <size>\0"
// and the content, named by its id) and returns its id.
func writeObject(gitDir, format, kind string, content []byte) (string, error) {
	id, err := objectID(format, kind, content)
	if err != nil {
		return "", err
	}
	header := kind + " " + strconv.Itoa(len(content)) + "\x00"
	var z bytes.Buffer
	w := getZlib(&z)
	_, _ = w.Write([]byte(header))
	_, _ = w.Write(content)
	err = w.Close()
	zlibs.Put(w)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(gitDir, "objects", id[:2])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(z.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, id[2:]))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return id, nil
}

// zlibs are the compressors of objects: each holds about a megabyte of
// tables, and allocating one per object made writing a few objects cost
// tens of milliseconds on a busy machine. Objects are compressed at the
// fastest level (git reads any).
var zlibs sync.Pool

func getZlib(w io.Writer) *zlib.Writer {
	if z, ok := zlibs.Get().(*zlib.Writer); ok {
		z.Reset(w)
		return z
	}
	z, _ := zlib.NewWriterLevel(w, zlib.BestSpeed)
	return z
}

// parentHead reads the commit the parent's HEAD names ("" on a branch
// without commits) and the repository's object format, from its files:
// HEAD, the loose ref or packed-refs, and the config's objectformat. A
// repository that keeps its refs in a reftable is not read: no view.
func parentHead(gitDir, common string) (head, format string, err error) {
	format = "sha1"
	if b, err := os.ReadFile(filepath.Join(common, "config")); err == nil {
		for line := range strings.Lines(string(b)) {
			k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
			if !ok {
				continue
			}
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "objectformat":
				format = strings.ToLower(strings.TrimSpace(v))
			case "refstorage":
				if strings.TrimSpace(v) != "files" {
					return "", "", errors.New("refs in a reftable are not read")
				}
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", "", err
	}
	h := strings.TrimSpace(string(b))
	ref, symbolic := strings.CutPrefix(h, "ref:")
	if !symbolic {
		return h, format, nil // detached
	}
	ref = strings.TrimSpace(ref)
	for _, dir := range []string{gitDir, common} {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ref))); err == nil {
			return strings.TrimSpace(string(b)), format, nil
		}
	}
	if b, err := os.ReadFile(filepath.Join(common, "packed-refs")); err == nil {
		for line := range strings.Lines(string(b)) {
			if id, name, ok := strings.Cut(strings.TrimSpace(line), " "); ok && name == ref {
				return id, format, nil
			}
		}
	}
	return "", format, nil // a branch without commits yet
}

// excludeRules are Take's exclusions as git ignore rules, for the child
// repository's info/exclude: what the copy leaves out is neither hashed
// into its base nor shown as untracked. Made on first use: most starts of
// pixir take no snapshot.
var excludeRules = sync.OnceValue(func() []byte {
	b := []byte("\n# Left out of Pixir snapshots:\n/" + StateDir + "/\n")
	for _, names := range []map[string]bool{vcsNames, depDirs} {
		var sorted []string
		for n := range names {
			sorted = append(sorted, n)
		}
		slices.Sort(sorted)
		for _, n := range sorted {
			if names[n] {
				b = append(b, n+"/\n"...)
			}
		}
	}
	return b
})

// copyKeepingTime copies a small file with its modification time.
func copyKeepingTime(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return err
	}
	return os.Chtimes(dst, time.Time{}, fi.ModTime())
}
