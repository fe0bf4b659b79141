package snapshot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOverlayBringsAnotherSnapshotsChanges(t *testing.T) {
	ctx := t.Context()
	ws := t.TempDir()
	writeFile(t, ws, "keep.txt", "keep")
	writeFile(t, ws, "src/a.go", "a v1")
	writeFile(t, ws, "old.txt", "old")
	base := filepath.Join(t.TempDir(), "ws")

	// A writer's snapshot: it changes a.go, adds b.go and a link, deletes old.txt.
	w, err := Take(ctx, ws, filepath.Join(base, "writer"))
	require.NoError(t, err)
	writeFile(t, w.Root, "src/a.go", "a v2")
	writeFile(t, w.Root, "src/b.go", "b new")
	require.NoError(t, os.Symlink("b.go", filepath.Join(w.Root, "src", "link.go")))
	require.NoError(t, os.Remove(filepath.Join(w.Root, "old.txt")))
	wch, err := w.Changes(ctx, w.Root)
	require.NoError(t, err)
	require.Equal(t, Changes{Added: []string{"src/b.go", "src/link.go"}, Changed: []string{"src/a.go"}, Deleted: []string{"old.txt"}}, wch)

	// A dependent's snapshot, taken from the workspace, gets them.
	d, err := Take(ctx, ws, filepath.Join(base, "dependent"))
	require.NoError(t, err)
	require.NoError(t, d.Overlay(ctx, w.Root, wch))
	require.Equal(t, "a v2", readFile(t, d.Root, "src/a.go"))
	require.Equal(t, "b new", readFile(t, d.Root, "src/b.go"))
	target, err := os.Readlink(filepath.Join(d.Root, "src", "link.go"))
	require.NoError(t, err)
	require.Equal(t, "b.go", target)
	require.NoFileExists(t, filepath.Join(d.Root, "old.txt"))
	require.Equal(t, "keep", readFile(t, d.Root, "keep.txt"))
	require.Equal(t, "a v1", readFile(t, ws, "src/a.go"), "the workspace is untouched")

	// The inherited files are the dependent's baseline, not its changes.
	dch, err := d.Changes(ctx, d.Root)
	require.NoError(t, err)
	require.True(t, dch.Empty(), "%+v", dch)
	writeFile(t, d.Root, "src/b.go", "b edited by the dependent")
	dch, err = d.Changes(ctx, d.Root)
	require.NoError(t, err)
	require.Equal(t, Changes{Changed: []string{"src/b.go"}}, dch)

	// Paths outside the snapshot, or excluded, are refused.
	for _, bad := range []string{"../x", "/etc/passwd", ".pixir/state", "sub/.git/config", ""} {
		require.Error(t, d.Overlay(ctx, w.Root, Changes{Added: []string{bad}}), bad)
	}
}

func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func readFile(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(b)
}
