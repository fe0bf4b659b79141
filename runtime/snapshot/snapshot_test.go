//go:build unix

package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExcluded(t *testing.T) {
	for _, tc := range []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{".pixir", true, true},
		{".pixir", false, true},
		{"sub/.pixir", true, true},
		{".git", true, true},
		{".git", false, true}, // worktree / submodule pointer
		{"mod/.git", false, true},
		{".hg", true, true},
		{".svn", true, true},
		{".jj", true, true},
		{".bzr", true, true},
		{"node_modules", true, true},
		{"web/app/node_modules", true, true},
		{"node_modules", false, false},
		{".venv", true, true},
		{"venv", true, true},
		{"py/__pycache__", true, true},
		{".mypy_cache", true, true},
		{".pytest_cache", true, true},
		{".ruff_cache", true, true},
		{".tox", true, true},
		{"vendor", true, false},
		{"target", true, false},
		{"build", true, false},
		{"dist", true, false},
		{"src", true, false},
		{".github", true, false},
		{".gitignore", false, false},
		{"git", true, false},
		{"main.go", false, false},
		{"node_modules.txt", false, false},
	} {
		require.Equal(t, tc.want, Excluded(tc.rel, tc.isDir), "%s dir=%v", tc.rel, tc.isDir)
	}
}

var (
	t0 = time.Date(2024, 3, 4, 5, 6, 7, 123456789, time.UTC)
	t1 = time.Date(2023, 1, 2, 3, 4, 5, 987654321, time.UTC)
)

func put(t *testing.T, root, rel string, data []byte, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, data, mode))
	require.NoError(t, os.Chmod(p, mode))
	require.NoError(t, os.Chtimes(p, t0, t0))
}

const cacheTag = cacheDirSignature + "\n# This file is a cache directory tag.\n"

// fixture builds a source tree with every kind of entry Take must handle.
func fixture(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	put(t, src, "README.md", []byte("# hello\n"), 0o644)
	put(t, src, "empty", nil, 0o600)
	put(t, src, "shared.txt", []byte("group-writable, beyond the umask"), 0o666)
	put(t, src, "bin/suid", []byte("#!/bin/sh\n"), 0o755|fs.ModeSetuid)
	put(t, src, "bin/run.sh", []byte("#!/bin/sh\necho hi\n"), 0o755)
	put(t, src, "a/b/c/d/deep.txt", []byte("deep"), 0o640)
	put(t, src, "ro/locked.txt", []byte("read only"), 0o444)
	large := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16+7) // > bufSize, odd size
	put(t, src, "large.bin", large, 0o644)
	put(t, src, "héllo wörld ✓.txt", []byte("unicode"), 0o644)
	put(t, src, "日本語/ファイル.txt", []byte("にほんご"), 0o644)
	put(t, src, "vendor/dep/dep.go", []byte("package dep\n"), 0o644)
	put(t, src, "target/notcache.txt", []byte("source named target"), 0o644)
	// Excluded.
	put(t, src, ".git/HEAD", []byte("ref: refs/heads/main\n"), 0o644)
	put(t, src, "sub/.git", []byte("gitdir: ../.git/modules/sub\n"), 0o644)
	put(t, src, "sub/lib.go", []byte("package sub\n"), 0o644)
	put(t, src, ".pixir/sessions/x.ndjson", []byte("{}\n"), 0o644)
	put(t, src, "node_modules/left-pad/index.js", []byte("x"), 0o644)
	put(t, src, "web/node_modules/react/index.js", []byte("x"), 0o644)
	put(t, src, "web/index.js", []byte("import 'react'\n"), 0o644)
	put(t, src, "py/__pycache__/m.pyc", []byte("x"), 0o644)
	put(t, src, "rust/target/CACHEDIR.TAG", []byte(cacheTag), 0o644)
	put(t, src, "rust/target/debug/app", []byte("elf"), 0o755)
	put(t, src, "rust/src/main.rs", []byte("fn main() {}\n"), 0o644)
	put(t, src, "fake/CACHEDIR.TAG", []byte("not a signature"), 0o644)
	// Links: inside, outside, absolute, dangling, to a folder.
	require.NoError(t, os.Symlink("b/c/d/deep.txt", filepath.Join(src, "a/inside")))
	require.NoError(t, os.Symlink("../../../etc/passwd", filepath.Join(src, "outside")))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(src, "absolute")))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(src, "dangling")))
	require.NoError(t, os.Symlink("a/b", filepath.Join(src, "dirlink")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(src, "a/fifo"), 0o644))
	// Folder modes and times (set last, deepest first).
	require.NoError(t, os.Chmod(filepath.Join(src, "ro"), 0o555))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(src, "ro"), 0o755) })
	for _, d := range []string{"a/b/c/d", "a/b/c", "a/b", "a", "ro"} {
		require.NoError(t, os.Chtimes(filepath.Join(src, d), t1, t1))
	}
	return src
}

func TestTakeFidelity(t *testing.T) {
	src := fixture(t)
	dst := filepath.Join(t.TempDir(), "x", ".pixir", "subagents", "id1", "workspace")
	t.Cleanup(func() { require.NoError(t, Remove(dst)) })
	m, err := Take(context.Background(), src, dst)
	require.NoError(t, err)

	// Every regular file and link of the source that is not excluded is in
	// the copy with its content, mode and time; nothing else is.
	var want, got []string
	var wantBytes int64
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		if Excluded(rel, d.IsDir()) || rel == filepath.Join("rust", "target") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeNamedPipe == 0 {
			want = append(want, filepath.ToSlash(rel))
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			require.NoError(t, err)
			wantBytes += info.Size()
		}
		return nil
	}))
	require.NoError(t, filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(dst, p)
		if rel != "." {
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	}))
	require.Equal(t, want, got)
	for _, rel := range want {
		sp, dp := filepath.Join(src, rel), filepath.Join(dst, rel)
		si, err := os.Lstat(sp)
		require.NoError(t, err)
		di, err := os.Lstat(dp)
		require.NoError(t, err)
		require.Equal(t, si.Mode(), di.Mode(), rel)
		switch {
		case si.Mode()&fs.ModeSymlink != 0:
			st, _ := os.Readlink(sp)
			dt, _ := os.Readlink(dp)
			require.Equal(t, st, dt, rel)
		case si.Mode().IsRegular():
			require.True(t, si.ModTime().Equal(di.ModTime()), rel)
			sb, _ := os.ReadFile(sp)
			db, _ := os.ReadFile(dp)
			require.True(t, bytes.Equal(sb, db), rel)
		case si.IsDir():
			require.True(t, si.ModTime().Equal(di.ModTime()), "%s: %v != %v", rel, si.ModTime(), di.ModTime())
		}
	}
	// Excluded and skipped things are absent; kept look-alikes are there.
	for _, rel := range []string{".git", "sub/.git", ".pixir", "node_modules", "web/node_modules", "py/__pycache__", "rust/target", "a/fifo"} {
		_, err := os.Lstat(filepath.Join(dst, rel))
		require.ErrorIs(t, err, fs.ErrNotExist, rel)
	}
	for _, rel := range []string{"vendor/dep/dep.go", "target/notcache.txt", "fake/CACHEDIR.TAG", "rust/src/main.rs", "sub/lib.go"} {
		require.FileExists(t, filepath.Join(dst, rel))
	}
	require.Equal(t, []Skip{{Path: "a/fifo", Reason: "fifo"}}, m.Skipped)

	// The manifest lists the regular files and links, sorted, hashed.
	var paths []string
	for _, e := range m.Entries {
		paths = append(paths, e.Path)
		if e.Mode.IsRegular() {
			b, err := os.ReadFile(filepath.Join(dst, e.Path))
			require.NoError(t, err)
			var want sum
			want.write(b)
			require.Equal(t, want.String(), e.Sum, e.Path)
			require.Equal(t, int64(len(b)), e.Size)
			require.True(t, e.MTime.Equal(t0), e.Path)
		} else {
			require.NotZero(t, e.Mode&fs.ModeSymlink, e.Path)
			require.NotEmpty(t, e.Link)
		}
	}
	require.Contains(t, paths, "large.bin")
	require.Contains(t, paths, "outside")
	require.Contains(t, paths, "empty")
	require.IsIncreasing(t, paths)
	require.Equal(t, wantBytes, m.Bytes)

	// It survives JSON.
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var back Manifest
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, m.Entries[0].MTime.UnixNano(), back.Entries[0].MTime.UnixNano())
	require.Equal(t, len(m.Entries), len(back.Entries))
}

func TestTakeRefusesExistingDestination(t *testing.T) {
	src := t.TempDir()
	put(t, src, "f", []byte("x"), 0o644)
	dst := t.TempDir()
	_, err := Take(context.Background(), src, dst)
	require.ErrorIs(t, err, fs.ErrExist)
	_, err = Take(context.Background(), filepath.Join(src, "f"), filepath.Join(dst, "new"))
	require.ErrorContains(t, err, "not a directory")
}

func TestTakeIntoItself(t *testing.T) {
	src := t.TempDir()
	put(t, src, "f", []byte("x"), 0o644)
	dst := filepath.Join(src, "out", "snap")
	m, err := Take(context.Background(), src, dst)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(dst, "f"))
	require.NoDirExists(t, filepath.Join(dst, "out", "snap"))
	require.Len(t, m.Entries, 1)
}

func TestTakeCancelMidCopy(t *testing.T) {
	src := t.TempDir()
	for i := range 200 {
		put(t, src, filepath.Join("d", strings.Repeat("x", i%7+1), "f"+string(rune('a'+i%26))+time.Duration(i).String()), bytes.Repeat([]byte{byte(i)}, 4096), 0o644)
	}
	dst := filepath.Join(t.TempDir(), "snap")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var copied atomic.Int32
	testHookFile = func(string) error {
		if copied.Add(1) == 3 {
			cancel()
		}
		return nil
	}
	defer func() { testHookFile = nil }()
	_, err := Take(ctx, src, dst)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, context.Canceled, err)
	require.Less(t, copied.Load(), int32(100), "the copy stopped at the cancel, not at the end")
	require.NoError(t, Remove(dst))
	require.NoDirExists(t, dst)
}

func TestTakeWorkerErrorStopsAll(t *testing.T) {
	src := t.TempDir()
	for i := range 50 {
		put(t, src, filepath.Join("d", time.Duration(i).String()), []byte("x"), 0o644)
	}
	boom := errors.New("boom")
	testHookFile = func(rel string) error {
		if strings.HasSuffix(rel, "7ns") {
			return boom
		}
		return nil
	}
	defer func() { testHookFile = nil }()
	dst := filepath.Join(t.TempDir(), "snap")
	_, err := Take(context.Background(), src, dst)
	require.ErrorIs(t, err, boom)
	require.NoError(t, Remove(dst))
}

func TestTakeCancelledBefore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dst := filepath.Join(t.TempDir(), "snap")
	_, err := Take(ctx, t.TempDir(), dst)
	require.Equal(t, context.Canceled, err)
	require.NoDirExists(t, dst)
}

func TestChanges(t *testing.T) {
	base := func(t *testing.T) string {
		src := t.TempDir()
		put(t, src, "keep.txt", []byte("unchanged"), 0o644)
		put(t, src, "same.txt", []byte("aaaa"), 0o644)
		put(t, src, "grow.txt", []byte("short"), 0o644)
		put(t, src, "gone.txt", []byte("bye"), 0o644)
		put(t, src, "dir/one.txt", []byte("1"), 0o644)
		put(t, src, "dir/two.txt", []byte("2"), 0o644)
		put(t, src, "mode.sh", []byte("echo\n"), 0o644)
		require.NoError(t, os.Symlink("keep.txt", filepath.Join(src, "link")))
		return src
	}
	at := func(ws, rel string) string { return filepath.Join(ws, filepath.FromSlash(rel)) }
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, ws string)
		want   Changes
	}{
		{"untouched", func(*testing.T, string) {}, Changes{}},
		{"added", func(t *testing.T, ws string) {
			put(t, ws, "new.txt", []byte("n"), 0o644)
			put(t, ws, "newdir/deep/x.go", []byte("package x"), 0o644)
			require.NoError(t, os.Symlink("gone.txt", at(ws, "newlink")))
		}, Changes{Added: []string{"new.txt", "newdir/deep/x.go", "newlink"}}},
		{"changed same size, time restored", func(t *testing.T, ws string) {
			put(t, ws, "same.txt", []byte("bbbb"), 0o644) // write sets t0 again
		}, Changes{Changed: []string{"same.txt"}}},
		{"changed size", func(t *testing.T, ws string) {
			require.NoError(t, os.WriteFile(at(ws, "grow.txt"), []byte("much longer"), 0o644))
		}, Changes{Changed: []string{"grow.txt"}}},
		{"rewritten with the same bytes", func(t *testing.T, ws string) {
			require.NoError(t, os.WriteFile(at(ws, "keep.txt"), []byte("unchanged"), 0o644))
		}, Changes{}},
		{"touched only", func(t *testing.T, ws string) {
			require.NoError(t, os.Chtimes(at(ws, "keep.txt"), time.Now(), time.Now()))
		}, Changes{}},
		{"chmodded only", func(t *testing.T, ws string) {
			require.NoError(t, os.Chmod(at(ws, "mode.sh"), 0o755))
		}, Changes{Mode: []string{"mode.sh"}}},
		{"chmodded and changed", func(t *testing.T, ws string) {
			require.NoError(t, os.WriteFile(at(ws, "mode.sh"), []byte("echo changed\n"), 0o644))
			require.NoError(t, os.Chmod(at(ws, "mode.sh"), 0o755))
		}, Changes{Changed: []string{"mode.sh"}}},
		{"deleted", func(t *testing.T, ws string) {
			require.NoError(t, os.Remove(at(ws, "gone.txt")))
			require.NoError(t, os.RemoveAll(at(ws, "dir")))
		}, Changes{Deleted: []string{"dir/one.txt", "dir/two.txt", "gone.txt"}}},
		{"link retargeted, file became a link", func(t *testing.T, ws string) {
			require.NoError(t, os.Remove(at(ws, "link")))
			require.NoError(t, os.Symlink("same.txt", at(ws, "link")))
			require.NoError(t, os.Remove(at(ws, "keep.txt")))
			require.NoError(t, os.Symlink("same.txt", at(ws, "keep.txt")))
		}, Changes{Changed: []string{"keep.txt", "link"}}},
		{"file became a folder", func(t *testing.T, ws string) {
			require.NoError(t, os.Remove(at(ws, "gone.txt")))
			put(t, ws, "gone.txt/inner", []byte("x"), 0o644)
		}, Changes{Added: []string{"gone.txt/inner"}, Deleted: []string{"gone.txt"}}},
		{"excluded folders ignored", func(t *testing.T, ws string) {
			put(t, ws, "node_modules/x/index.js", []byte("x"), 0o644)
			put(t, ws, ".git/HEAD", []byte("x"), 0o644)
			put(t, ws, ".pixir/state", []byte("x"), 0o644)
			put(t, ws, "dir/__pycache__/a.pyc", []byte("x"), 0o644)
			put(t, ws, "target/CACHEDIR.TAG", []byte(cacheTag), 0o644)
			put(t, ws, "target/debug/app", []byte("x"), 0o644)
			require.NoError(t, syscall.Mkfifo(at(ws, "fifo"), 0o644))
		}, Changes{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := base(t)
			ws := filepath.Join(t.TempDir(), "ws")
			m, err := Take(context.Background(), src, ws)
			require.NoError(t, err)
			tc.change(t, ws)
			got, err := m.Changes(context.Background(), ws)
			require.NoError(t, err)
			require.Equal(t, tc.want, normal(got))
			require.Equal(t, tc.want.Added == nil && tc.want.Changed == nil && tc.want.Deleted == nil && tc.want.Mode == nil, got.Empty())

			// The same answer from a manifest that went through JSON.
			b, err := json.Marshal(m)
			require.NoError(t, err)
			var back Manifest
			require.NoError(t, json.Unmarshal(b, &back))
			got, err = back.Changes(context.Background(), ws)
			require.NoError(t, err)
			require.Equal(t, tc.want, normal(got))
		})
	}
}

func normal(c Changes) Changes {
	for _, s := range []*[]string{&c.Added, &c.Changed, &c.Deleted, &c.Mode} {
		if len(*s) == 0 {
			*s = nil
		}
	}
	return c
}

// TestChangesAfterATick rewrites a file with the same size and restores its
// time once the clock has moved past the snapshot, where the fast path
// applies: ctime must give the rewrite away.
func TestChangesAfterATick(t *testing.T) {
	src := t.TempDir()
	put(t, src, "f.txt", []byte("aaaa"), 0o644)
	put(t, src, "g.txt", []byte("gggg"), 0o644)
	ws := filepath.Join(t.TempDir(), "ws")
	m, err := Take(context.Background(), src, ws)
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	put(t, ws, "f.txt", []byte("bbbb"), 0o644)
	got, err := m.Changes(context.Background(), ws)
	require.NoError(t, err)
	require.Equal(t, []string{"f.txt"}, got.Changed)
	require.Empty(t, got.Added)
	require.Empty(t, got.Deleted)
}

// TestChangesFastPath shows that a file of the recorded size and time whose
// ctime is before the Mark is not read (a wrong recorded sum goes
// unnoticed), and that one whose ctime is not is read.
func TestChangesFastPath(t *testing.T) {
	src := t.TempDir()
	put(t, src, "f.txt", []byte("aaaa"), 0o644)
	ws := filepath.Join(t.TempDir(), "ws")
	m, err := Take(context.Background(), src, ws)
	require.NoError(t, err)
	if m.Mark == 0 {
		t.Skip("no ctime on this platform")
	}
	m.Entries[0].Sum = strings.Repeat("0", 16)
	m.Mark = time.Now().Add(time.Hour).UnixNano()
	got, err := m.Changes(context.Background(), ws)
	require.NoError(t, err)
	require.True(t, got.Empty(), "%+v", got)
	m.Mark = 1 // as if written after the Take: read
	got, err = m.Changes(context.Background(), ws)
	require.NoError(t, err)
	require.Equal(t, []string{"f.txt"}, got.Changed)
}

func TestChangesCancelled(t *testing.T) {
	src := t.TempDir()
	put(t, src, "f", []byte("x"), 0o644)
	ws := filepath.Join(t.TempDir(), "ws")
	m, err := Take(context.Background(), src, ws)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = m.Changes(ctx, ws)
	require.ErrorIs(t, err, context.Canceled)
}

func TestRemoveAndSweep(t *testing.T) {
	root := filepath.Join(t.TempDir(), "subagents")
	for _, id := range []string{"a", "b", "c"} {
		src := t.TempDir()
		put(t, src, "ro/f", []byte(id), 0o444)
		require.NoError(t, os.Chmod(filepath.Join(src, "ro"), 0o555))
		t.Cleanup(func() { _ = os.Chmod(filepath.Join(src, "ro"), 0o755) })
		_, err := Take(context.Background(), src, filepath.Join(root, id, "workspace"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(root, id, "manifest.json"), []byte("{}"), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("x"), 0o644))
	require.NoError(t, Sweep(root, func(id string) bool { return id == "b" }))
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"b", "notes.txt"}, names)

	require.NoError(t, Remove(filepath.Join(root, "b")))
	require.NoDirExists(t, filepath.Join(root, "b"))
	require.NoError(t, Remove(filepath.Join(root, "b"))) // missing: fine
	require.NoError(t, Sweep(filepath.Join(root, "missing"), nil))
	require.Error(t, Remove(""))
	require.Error(t, Remove("/"))
	require.Error(t, Remove("."))
}

func TestSum(t *testing.T) {
	var s sum
	s.write([]byte("1234"))
	s.write([]byte("56789"))
	// The check values of CRC-32C and CRC-32 for "123456789".
	require.Equal(t, "e3069283cbf43926", s.String())
	s.reset()
	require.Equal(t, "0000000000000000", s.String())
}
