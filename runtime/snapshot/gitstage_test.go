//go:build unix

package snapshot

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// takeBoth snapshots ws twice, the child's index staged in process and
// made by git add -A, and checks what both give the child: the same index
// entries (mode, id, path) and base tree, a clean git status, stat data a
// git diff-files accepts without reading a file. It returns the staged
// copy.
func takeBoth(t *testing.T, ws string) string {
	t.Helper()
	out := t.TempDir()
	staged, byGit := filepath.Join(out, "staged"), filepath.Join(out, "git")
	var stageErr error
	called := false
	testStaged = func(err error) { stageErr, called = err, true }
	defer func() { testStaged = nil }()
	m, err := TakeWith(context.Background(), ws, staged, Options{Git: true})
	require.NoError(t, err)
	require.True(t, called)
	require.NoError(t, stageErr, "the stage made the index")
	require.NotNil(t, m.Git)
	testStaged, testStageOff = nil, true
	defer func() { testStageOff = false }()
	mg, err := TakeWith(context.Background(), ws, byGit, Options{Git: true})
	require.NoError(t, err)
	require.NotNil(t, mg.Git)

	require.Equal(t, gitIn(t, byGit, "ls-files", "-s"), gitIn(t, staged, "ls-files", "-s"), "the index entries are git add -A's")
	require.Equal(t, gitIn(t, byGit, "rev-parse", "HEAD^{tree}"), gitIn(t, staged, "rev-parse", "HEAD^{tree}"))
	require.Equal(t, m.Git.Parent, mg.Git.Parent)
	require.Empty(t, gitIn(t, staged, "status", "--porcelain", "--ignore-submodules=none"))
	require.Empty(t, gitIn(t, staged, "diff-files", "--name-only"), "no entry's stat data sends git to the file")
	gitIn(t, staged, "fsck", "--no-dangling", "--connectivity-only")
	return staged
}

// aged sets every file of ws (not .git) an hour back, and refreshes the
// parent's index: as in a workspace in use, files are older than the
// index, which then vouches for them (a file changed in the second an
// index is written is hashed again, by git and by the stage).
func aged(t *testing.T, ws string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	require.NoError(t, filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Name() == ".git" && d.IsDir() {
			if err == nil {
				return filepath.SkipDir
			}
			return err
		}
		if d.Type()&os.ModeSymlink != 0 {
			return lchtimes(p, old)
		}
		return os.Chtimes(p, old, old)
	}))
	time.Sleep(1100 * time.Millisecond) // the refreshed index's second is after the files' ctime
	gitIn(t, ws, "update-index", "-q", "--really-refresh")
}

// A tree with what git add -A treats with care, in both object formats.
func TestStagedIndexIsGitAddA(t *testing.T) {
	needGit(t)
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			ws := t.TempDir()
			gitIn(t, ws, "init", "-q", "-b", "main", "--object-format="+format)
			files := map[string]string{
				".gitignore":       "*.log\n!keep.log\nbuild/\n/top-only\n",
				"main.go":          "package main\n",
				"lib/lib.go":       "package lib\n",
				"lib/.gitignore":   "gen_*\n",
				"lib/tracked.log":  "tracked though ignored\n",
				"same-size.txt":    "aaaa\n",
				"gone.txt":         "deleted later\n",
				"a b/c d.txt":      "spaces\n",
				":colon":           "magic-looking name\n",
				"ünï/cödé.txt":     "unicode\n",
				"empty":            "",
				"run.sh":           "#!/bin/sh\n",
				"later-exec.sh":    "#!/bin/sh\n",
				"deep/a/b/c/d.txt": "deep\n",
			}
			for name, content := range files {
				writeFile(t, ws, name, content)
			}
			require.NoError(t, os.Chmod(filepath.Join(ws, "run.sh"), 0o755))
			require.NoError(t, os.Symlink("main.go", filepath.Join(ws, "link")))
			require.NoError(t, os.Symlink("nowhere", filepath.Join(ws, "dangling")))
			big := strings.Repeat("0123456789abcdef", 1<<17) // 2 MiB: several reads
			writeFile(t, ws, "big.bin", big)
			gitIn(t, ws, "add", "-A")
			gitIn(t, ws, "commit", "-q", "-m", "first")

			// Uncommitted work of every kind.
			writeFile(t, ws, "main.go", "package main // changed\n")
			require.NoError(t, os.Remove(filepath.Join(ws, "gone.txt")))
			writeFile(t, ws, "new.txt", "untracked\n")
			writeFile(t, ws, "new/dir/file.txt", "untracked in a new folder\n")
			writeFile(t, ws, "debug.log", "ignored\n")
			writeFile(t, ws, "keep.log", "not ignored: negated\n")
			writeFile(t, ws, "build/out.o", "ignored folder\n")
			writeFile(t, ws, "top-only", "ignored at the top\n")
			writeFile(t, ws, "sub/top-only", "not ignored below\n")
			writeFile(t, ws, "lib/gen_x.go", "ignored by a nested .gitignore\n")
			writeFile(t, ws, "big2.bin", big+"x")
			require.NoError(t, os.Chmod(filepath.Join(ws, "later-exec.sh"), 0o755))
			require.NoError(t, os.Remove(filepath.Join(ws, "link")))
			require.NoError(t, os.Symlink("lib/lib.go", filepath.Join(ws, "link")))
			require.NoError(t, os.Symlink("new.txt", filepath.Join(ws, "new-link")))
			aged(t, ws)

			staged := takeBoth(t, ws)
			require.Equal(t, "not ignored: negated", gitIn(t, staged, "show", "HEAD:keep.log"))
			require.Contains(t, gitIn(t, staged, "ls-files", "-s", "later-exec.sh"), "100755")

			// Same size and modification time, other content: only the
			// status-change time tells, and the stage hashes the file
			// (git add -A in a repository comparing only sizes and
			// modification times, as the child's does, missed it).
			p := filepath.Join(ws, "same-size.txt")
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, []byte("bbbb\n"), 0o644))
			require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
			again := filepath.Join(t.TempDir(), "again")
			_, err = TakeWith(context.Background(), ws, again, Options{Git: true})
			require.NoError(t, err)
			require.Equal(t, "bbbb", gitIn(t, again, "show", "HEAD:same-size.txt"))
			require.Empty(t, gitIn(t, again, "status", "--porcelain"))

			// The child's later changes, and only those, show.
			writeFile(t, staged, "lib/lib.go", "package lib // child\n")
			writeFile(t, staged, "child.txt", "child\n")
			require.Equal(t, "M lib/lib.go\n?? child.txt", gitIn(t, staged, "status", "--porcelain"))
		})
	}
}

// A submodule keeps the commit its checkout is at (moved since the
// parent's last commit here); its files are copied but are not entries.
func TestStagedIndexKeepsSubmodules(t *testing.T) {
	needGit(t)
	lib := t.TempDir()
	gitIn(t, lib, "init", "-q", "-b", "main")
	writeFile(t, lib, "lib.go", "package lib\n")
	gitIn(t, lib, "add", "-A")
	gitIn(t, lib, "commit", "-q", "-m", "lib")

	ws := t.TempDir()
	gitIn(t, ws, "init", "-q", "-b", "main")
	writeFile(t, ws, "main.go", "package main\n")
	gitIn(t, ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "third/lib")
	gitIn(t, ws, "commit", "-q", "-m", "with a submodule")
	writeFile(t, ws, "third/lib/more.go", "package lib // more\n")
	gitIn(t, filepath.Join(ws, "third/lib"), "add", "-A")
	gitIn(t, filepath.Join(ws, "third/lib"), "commit", "-q", "-m", "moved")
	aged(t, ws)

	staged := takeBoth(t, ws)
	require.Equal(t, gitIn(t, filepath.Join(ws, "third/lib"), "rev-parse", "HEAD"),
		strings.Fields(gitIn(t, staged, "ls-files", "-s", "third/lib"))[1])
	require.FileExists(t, filepath.Join(staged, "third/lib/more.go"))
}

// What the stage does not cover goes to git add -A, and the child gets
// the same repository: an untracked repository inside the tree, an index
// with assume-unchanged entries, files to hash under a .gitattributes.
func TestStageLeavesToGitWhatItDoesNotCover(t *testing.T) {
	needGit(t)
	cases := map[string]func(t *testing.T, ws string){
		"nested repository": func(t *testing.T, ws string) {
			gitIn(t, ws, "init", "-q", "-b", "main", "inner")
			writeFile(t, ws, "inner/x.go", "package x\n")
			gitIn(t, filepath.Join(ws, "inner"), "add", "-A")
			gitIn(t, filepath.Join(ws, "inner"), "commit", "-q", "-m", "inner")
		},
		"assume unchanged": func(t *testing.T, ws string) {
			gitIn(t, ws, "update-index", "--assume-unchanged", "main.go")
			writeFile(t, ws, "main.go", "package main // changed\n")
		},
		"attributes": func(t *testing.T, ws string) {
			writeFile(t, ws, ".gitattributes", "*.txt text eol=lf\n")
			writeFile(t, ws, "crlf.txt", "one\r\ntwo\r\n")
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			gitIn(t, ws, "init", "-q", "-b", "main")
			writeFile(t, ws, "main.go", "package main\n")
			gitIn(t, ws, "add", "-A")
			gitIn(t, ws, "commit", "-q", "-m", "first")
			setup(t, ws)
			var stageErr error
			testStaged = func(err error) { stageErr = err }
			defer func() { testStaged = nil }()
			staged := filepath.Join(t.TempDir(), "staged")
			m, err := TakeWith(context.Background(), ws, staged, Options{Git: true})
			require.NoError(t, err)
			require.ErrorIs(t, stageErr, errStageByGit)
			require.NotNil(t, m.Git)
			testStaged, testStageOff = nil, true
			defer func() { testStageOff = false }()
			byGit := filepath.Join(t.TempDir(), "git")
			_, err = TakeWith(context.Background(), ws, byGit, Options{Git: true})
			require.NoError(t, err)
			require.Equal(t, gitIn(t, byGit, "ls-files", "-s"), gitIn(t, staged, "ls-files", "-s"))
		})
	}
}

// Random trees: random files, folders, modes, links and ignore rules,
// partly committed, then changed at random; the stage's index is git add
// -A's every time.
func TestStagedIndexOnRandomTrees(t *testing.T) {
	needGit(t)
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 99))
			ws := t.TempDir()
			gitIn(t, ws, "init", "-q", "-b", "main")
			names := []string{"a", "b", "a.b", "a-b", "a0", "z", "ü", "x y", "log.log", "tmp", "bin"}
			randPath := func() string {
				parts := make([]string, 1+rng.IntN(3))
				for i := range parts {
					parts[i] = names[rng.IntN(len(names))]
				}
				return strings.Join(parts, "/")
			}
			put := func() {
				p := randPath()
				full := filepath.Join(ws, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					return // a file is where a folder would be
				}
				if fi, err := os.Lstat(full); err == nil && fi.IsDir() {
					return
				}
				_ = os.Remove(full)
				switch rng.IntN(6) {
				case 0:
					_ = os.Symlink(names[rng.IntN(len(names))], full)
				case 1:
					_ = os.WriteFile(full, []byte(fmt.Sprint("exec ", rng.Int())), 0o755)
				default:
					_ = os.WriteFile(full, []byte(strings.Repeat(fmt.Sprint(rng.Int()), rng.IntN(50))), 0o644)
				}
			}
			var ignore []string
			for range 1 + rng.IntN(3) {
				pat := []string{"*.log", "tmp/", "/z", "bin", "a/*.b", "!a.b"}[rng.IntN(6)]
				ignore = append(ignore, pat)
			}
			writeFile(t, ws, ".gitignore", strings.Join(ignore, "\n")+"\n")
			for range 20 + rng.IntN(30) {
				put()
			}
			gitIn(t, ws, "add", "-A")
			gitIn(t, ws, "commit", "-q", "--allow-empty", "-m", "first")
			for range rng.IntN(15) {
				put()
			}
			for range rng.IntN(4) {
				_ = os.RemoveAll(filepath.Join(ws, filepath.FromSlash(randPath())))
			}
			if rng.IntN(2) == 0 {
				aged(t, ws)
			}
			takeBoth(t, ws)
		})
	}
}

// A file the parent's index vouched for but that was written while it was
// copied loses the vouch (its copy is hashed after); one left alone keeps
// it, and a file being hashed is not touched.
func TestAFileWrittenWhileCopiedIsNotVouchedFor(t *testing.T) {
	vouched := func() *blobHasher { return &blobHasher{id: []byte{1, 2}, ctime: 5} }
	b := vouched()
	b.copied(5)
	require.Equal(t, []byte{1, 2}, b.id)
	b = vouched()
	b.copied(6)
	require.Nil(t, b.id)
	b = vouched()
	b.copied(0) // its status unknown after the copy
	require.Nil(t, b.id)
	hashing := &blobHasher{on: true, h: newHash("sha1")}
	hashing.copied(9)
	require.True(t, hashing.on)
}
