package tools

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/pixir-go/pixir/sandbox"
	"github.com/stretchr/testify/require"
)

// dirFiles is osFiles with a Replacer on a sandbox.Dir, as the runtime's
// local files have.
type dirFiles struct {
	osFiles
	d    *sandbox.Dir
	root string
}

func (f dirFiles) ReplaceFile(_ context.Context, path string, data []byte, was fs.FileInfo) error {
	rel, err := filepath.Rel(f.root, path)
	if err != nil {
		return err
	}
	err = f.d.ReplaceFile(rel, data, was)
	if errors.Is(err, sandbox.ErrChanged) {
		return ErrChanged
	}
	return err
}

// A save by the user between edit's read of a file and its write is kept:
// the edit fails as conflict and says to run it again, whether the files
// compare and swap at the rename (local files) or the edit reads the text
// again just before it writes (an editor's).
func TestEditLeavesAFileSavedDuringTheEdit(t *testing.T) {
	env, root := newEnv(t)
	d, err := sandbox.OpenDir(root)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	path := filepath.Join(root, "a.txt")
	t.Cleanup(func() { testBeforeReplace = nil })
	for name, files := range map[string]Files{"replacer": dirFiles{d: d, root: root}, "text read again": osFiles{}} {
		t.Run(name, func(t *testing.T) {
			env.Files = files
			require.NoError(t, os.WriteFile(path, []byte("one\ntwo\n"), 0o644))
			testBeforeReplace = func(string) {
				require.NoError(t, os.WriteFile(path, []byte("one\ntwo\nthe user's line\n"), 0o644))
			}
			res := run(t, EditTool(), env, `{"path":"a.txt","old_text":"two","new_text":"2"}`)
			requireFailure(t, res, ErrConflict, "a.txt changed while the edit was being made (it was saved, or changed by someone else, after the edit read it), so it was left as it is; "+
				"run the edit again: it applies to the file as it is now")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, "one\ntwo\nthe user's line\n", string(b), "the user's save is kept")

			testBeforeReplace = nil
			requireOK[EditOutput](t, run(t, EditTool(), env, `{"path":"a.txt","old_text":"two","new_text":"2"}`))
			b, err = os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, "one\n2\nthe user's line\n", string(b))
		})
	}
}
