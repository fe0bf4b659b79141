package tools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// seenMap is a session's memory of what its model saw, as the runtime
// keeps it from the Seen of each result.
type seenMap map[string]Seen

func (m seenMap) SeenFile(path string) (Seen, bool) {
	s, ok := m[path]
	return s, ok
}

func (m seenMap) note(res Result) {
	if res.Seen != nil {
		m[res.Seen.Path] = *res.Seen
	}
}

// What a read saw is the whole file, whatever range it showed: read to
// its end locally, or served whole by the editor; a range the editor
// served says the file was read, its content unknown. A write and an edit
// leave what they wrote as seen.
func TestReadWriteAndEditSayWhatTheModelSaw(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"a.txt": "l1\nl2\nl3\n", "bin": "a\x00b"})
	abs := filepath.Join(root, "a.txt")
	whole := *seenText(abs, "l1\nl2\nl3\n")
	for _, args := range []string{`{"path":"a.txt"}`, `{"path":"a.txt","offset":2,"limit":1}`} {
		require.Equal(t, whole, *run(t, ReadTool(), env, args).Seen, args)
	}
	res := run(t, ReadTool(), env, `{"path":"bin"}`)
	require.False(t, res.OK)
	require.Equal(t, *seenText(filepath.Join(root, "bin"), "a\x00b"), *res.Seen, "a binary file was seen too: it may be replaced")

	ed := &editorLines{Files: env.Files}
	env.Files = ed
	require.Equal(t, whole, *run(t, ReadTool(), env, `{"path":"a.txt"}`).Seen, "served whole")
	for _, args := range []string{`{"path":"a.txt","offset":2,"limit":1}`, `{"path":"a.txt","limit":1}`} {
		require.Equal(t, Seen{Path: abs}, *run(t, ReadTool(), env, args).Seen, "%s: served in part, and not asked for whole (it may be more than one message can carry)", args)
	}

	require.Equal(t, *seenText(abs, "new\n"), *run(t, WriteTool(), env, `{"path":"a.txt","content":"new\n"}`).Seen)
	require.Equal(t, *seenText(abs, "newer\n"), *run(t, EditTool(), env, `{"path":"a.txt","old_text":"new","new_text":"newer"}`).Seen)
	require.Nil(t, dryRun(t, WriteTool(), env, `{"path":"a.txt","content":"x"}`).Seen, "a dry run saw nothing")
}

// With the session's memory, write replaces only a file its model has
// seen as it is now; a new file needs no read. Its dry run says the same.
func TestWriteRefusesAFileTheModelHasNotSeenAsItIsNow(t *testing.T) {
	env, root := newEnv(t)
	seen := seenMap{}
	env.Seen = seen
	path := filepath.Join(root, "a.txt")
	require.NoError(t, os.WriteFile(path, []byte("one\n"), 0o644))
	const write = `{"path":"a.txt","content":"one\ntwo\n"}`
	notRead := "a.txt already exists and you have not read it in this session; write replaces the whole file, so read it first (then write, or change part of it with edit), or choose another path"
	requireFailure(t, dryRun(t, WriteTool(), env, write), ErrConflict, notRead)
	requireFailure(t, run(t, WriteTool(), env, write), ErrConflict, notRead)

	seen.note(run(t, ReadTool(), env, `{"path":"a.txt","limit":1}`))
	require.NoError(t, os.WriteFile(path, []byte("one\nthe user's line\n"), 0o644))
	res := run(t, WriteTool(), env, write)
	requireFailure(t, res, ErrConflict, "a.txt changed since you last read or wrote it (it is 20 bytes now, was 4): someone else changed it, and writing what you had would undo that; "+
		"read it again first, then write (or change part of it with edit) so that their change is kept")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "one\nthe user's line\n", string(b))

	seen.note(run(t, ReadTool(), env, `{"path":"a.txt"}`))
	res = run(t, WriteTool(), env, write)
	requireOK[WriteOutput](t, res)
	seen.note(res)
	requireOK[WriteOutput](t, run(t, WriteTool(), env, write))
	requireOK[WriteOutput](t, run(t, WriteTool(), env, `{"path":"new/b.txt","content":"b\n"}`))
}
