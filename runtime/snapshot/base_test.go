//go:build unix

package snapshot

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTakeKeepsTheBaseOfTextFiles(t *testing.T) {
	src := t.TempDir()
	put(t, src, "a.txt", []byte("line 1\nline 2\n"), 0o644)
	put(t, src, "empty.txt", nil, 0o644)
	put(t, src, "bin.dat", []byte("ELF\x00\x01\x02"), 0o755)
	put(t, src, "big.txt", bytes.Repeat([]byte("0123456789abcde\n"), MaxBaseSize/16+1), 0o644)
	for i := range 300 { // enough files for every copy worker to keep some
		put(t, src, filepath.Join("many", string(rune('a'+i%26))+string(rune('a'+i/26))+".go"), []byte("package many // "+string(rune('a'+i%26))+"\n"), 0o644)
	}
	require.NoError(t, os.Symlink("a.txt", filepath.Join(src, "link")))
	baseDir := filepath.Join(t.TempDir(), "base")
	dst := filepath.Join(t.TempDir(), "ws")
	m, err := TakeWith(context.Background(), src, dst, Options{BaseDir: baseDir})
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(baseDir, manifestFile))

	check := func(m *Manifest) {
		t.Helper()
		b, err := m.Base("a.txt")
		require.NoError(t, err)
		require.True(t, b.Kept)
		require.Equal(t, "line 1\nline 2\n", string(b.Content))
		b, err = m.Base("empty.txt")
		require.NoError(t, err)
		require.True(t, b.Kept)
		require.Empty(t, b.Content)
		for _, p := range []string{"bin.dat", "big.txt"} {
			b, err = m.Base(p)
			require.NoError(t, err)
			require.False(t, b.Kept, "%s: not text, or too large", p)
			require.NotEmpty(t, b.Sum)
		}
		b, err = m.Base("link")
		require.NoError(t, err)
		require.Equal(t, "a.txt", b.Link)
		for i := range 300 {
			name := filepath.ToSlash(filepath.Join("many", string(rune('a'+i%26))+string(rune('a'+i/26))+".go"))
			b, err := m.Base(name)
			require.NoError(t, err)
			require.Equal(t, "package many // "+string(rune('a'+i%26))+"\n", string(b.Content), name)
		}
		b, err = m.Base("nope")
		require.NoError(t, err)
		require.Nil(t, b)
	}
	check(m)
	// The child's edits do not touch the base.
	writeFile(t, dst, "a.txt", "edited by the child\n")
	check(m)

	// A later process loads it from the base folder.
	back, err := Load(baseDir)
	require.NoError(t, err)
	check(back)
	ch, err := back.Changes(context.Background(), dst)
	require.NoError(t, err)
	require.Equal(t, []string{"a.txt"}, ch.Changed)

	// After a merge conflict the workspace's version becomes the base.
	require.NoError(t, back.SetBase("a.txt", []byte("line 1 (workspace)\nline 2\n"), 0o644))
	require.NoError(t, back.SetBase("added.txt", []byte("new\n"), 0o600))
	require.NoError(t, back.Save())
	again, err := Load(baseDir)
	require.NoError(t, err)
	b, err := again.Base("a.txt")
	require.NoError(t, err)
	require.Equal(t, "line 1 (workspace)\nline 2\n", string(b.Content))
	b, err = again.Base("added.txt")
	require.NoError(t, err)
	require.Equal(t, "new\n", string(b.Content))
	ch, err = again.Changes(context.Background(), dst)
	require.NoError(t, err)
	require.Equal(t, []string{"a.txt"}, ch.Changed, "the child's file still differs from the new base")
	require.Equal(t, []string{"added.txt"}, ch.Deleted, "a base the child's workspace lacks")

	// A damaged pack is said, not merged from.
	e, _ := again.Lookup("a.txt")
	pack := filepath.Join(baseDir, packName(e.BasePack))
	raw, err := os.ReadFile(pack)
	require.NoError(t, err)
	raw[e.BaseOff] ^= 0xff
	require.NoError(t, os.WriteFile(pack, raw, 0o600))
	_, err = again.Base("a.txt")
	require.ErrorContains(t, err, "damaged")
}

func TestOverlayKeepsTheInheritedBase(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	writeFile(t, ws, "a.go", "a v1\n")
	writeFile(t, ws, "run.sh", "echo\n")
	root := t.TempDir()
	w, err := TakeWith(ctx, ws, filepath.Join(root, "w"), Options{BaseDir: filepath.Join(root, "w.base")})
	require.NoError(t, err)
	writeFile(t, w.Root, "a.go", "a v2\n")
	require.NoError(t, os.Chmod(filepath.Join(w.Root, "run.sh"), 0o755))
	wch, err := w.Changes(ctx, w.Root)
	require.NoError(t, err)
	require.Equal(t, []string{"run.sh"}, wch.Mode)

	d, err := TakeWith(ctx, ws, filepath.Join(root, "d"), Options{BaseDir: filepath.Join(root, "d.base")})
	require.NoError(t, err)
	require.NoError(t, d.Overlay(ctx, w.Root, wch))
	fi, err := os.Stat(filepath.Join(d.Root, "run.sh"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "a mode change is inherited too")
	loaded, err := Load(filepath.Join(root, "d.base"))
	require.NoError(t, err)
	b, err := loaded.Base("a.go")
	require.NoError(t, err)
	require.Equal(t, "a v2\n", string(b.Content), "the inherited file is the dependent's base")
	dch, err := loaded.Changes(ctx, d.Root)
	require.NoError(t, err)
	require.True(t, dch.Empty(), "%+v", dch)
}
