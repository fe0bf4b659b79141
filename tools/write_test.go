package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"old.txt": "before\n"})
	before := "before\n"
	tests := []struct {
		name    string
		args    string
		want    WriteOutput
		oldText *string
		content string
	}{
		{"new file in new directories", `{"path":"a/b/new.txt","content":"hello"}`, WriteOutput{"a/b/new.txt", 5, true}, nil, "hello"},
		{"overwrite", `{"path":"old.txt","content":"after\n"}`, WriteOutput{"old.txt", 6, false}, &before, "after\n"},
		{"empty content", `{"path":"empty.txt","content":""}`, WriteOutput{"empty.txt", 0, true}, nil, ""},
		{"unicode byte count", `{"path":"u.txt","content":"é"}`, WriteOutput{"u.txt", 2, true}, nil, "é"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, WriteTool(), env, tt.args)
			require.Equal(t, tt.want, requireOK[WriteOutput](t, res))
			abs := filepath.Join(root, tt.want.Path)
			got, err := os.ReadFile(abs)
			require.NoError(t, err)
			require.Equal(t, tt.content, string(got))
			require.Equal(t, []Diff{{Path: abs, OldText: tt.oldText, NewText: tt.content}}, res.Diffs)
			require.Equal(t, []Location{{Path: abs}}, res.Locations)
		})
	}
}

func TestWriteKeepsMode(t *testing.T) {
	env, root := newEnv(t)
	p := filepath.Join(root, "secret.txt")
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
	requireOK[WriteOutput](t, run(t, WriteTool(), env, `{"path":"secret.txt","content":"y"}`))
	info, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

func TestWriteFailures(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"dir/file.txt": "x"})
	tests := []struct {
		name string
		args string
		kind ErrorKind
		msg  string
	}{
		{"directory", `{"path":"dir","content":"x"}`, ErrInvalidArgs, "dir is a directory, not a file; list it with glob or bash (ls) instead"},
		{"parent is a file", `{"path":"dir/file.txt/x","content":"x"}`, ErrNotFound, "a parent of dir/file.txt/x is a file, not a directory; check the path"},
		{"outside the workspace", `{"path":"/etc/passwd","content":"x"}`, ErrPermissionDenied, "/etc/passwd is outside the workspace; use a path inside it"},
		{"no content", `{"path":"a.txt"}`, ErrInvalidArgs, "/: missing property 'content'"},
		{"content not a string", `{"path":"a.txt","content":{"text":"x"}}`, ErrInvalidArgs, "/content: got object, want string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireFailure(t, run(t, WriteTool(), env, tt.args), tt.kind, tt.msg)
		})
	}
	_, err := os.Stat(filepath.Join(root, "a.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestWriteDryRun(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"old.txt": "before\n"})
	before := "before\n"

	res := dryRun(t, WriteTool(), env, `{"path":"a/new.txt","content":"hello"}`)
	require.Equal(t, DryRunOutput{DryRun: true, Summary: "would create a/new.txt (5 bytes)"}, requireOK[DryRunOutput](t, res))
	require.Equal(t, []Diff{{Path: filepath.Join(root, "a/new.txt"), NewText: "hello"}}, res.Diffs)
	_, err := os.Stat(filepath.Join(root, "a"))
	require.ErrorIs(t, err, os.ErrNotExist, "a dry run must not create directories")

	res = dryRun(t, WriteTool(), env, `{"path":"old.txt","content":"after"}`)
	require.Equal(t, DryRunOutput{DryRun: true, Summary: "would overwrite old.txt (5 bytes, was 7)"}, requireOK[DryRunOutput](t, res))
	require.Equal(t, []Diff{{Path: filepath.Join(root, "old.txt"), OldText: &before, NewText: "after"}}, res.Diffs)
	got, err := os.ReadFile(filepath.Join(root, "old.txt"))
	require.NoError(t, err)
	require.Equal(t, before, string(got))
}

func TestWriteDescribe(t *testing.T) {
	require.Equal(t, Presentation{Title: "Write a/b.txt", Kind: KindEdit, Locations: []Location{{Path: "a/b.txt"}}},
		WriteTool().Describe(json.RawMessage(`{"path":"a//b.txt"}`)))
	require.Equal(t, Presentation{Title: "write", Kind: KindEdit}, WriteTool().Describe(json.RawMessage(`{"content":"x"}`)))
}

// unreadable is a Files whose reads fail the way an editor's can (an error
// that says nothing of a missing file), and whose writes go through.
type unreadable struct{ Files }

func (unreadable) Open(context.Context, string) (io.ReadCloser, error) {
	return nil, errors.New("the editor refused fs/read_text_file (code -32603)")
}

// A write replaces the whole file: when the text before cannot be read,
// the write goes on, without a diff.
func TestWriteWhenTheOldTextCannotBeRead(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"old.txt": "before\n"})
	env.Files = unreadable{env.Files}
	for _, name := range []string{"old.txt", "new.txt"} {
		res := run(t, WriteTool(), env, `{"path":"`+name+`","content":"after\n"}`)
		require.Equal(t, WriteOutput{name, 6, false}, requireOK[WriteOutput](t, res))
		require.Empty(t, res.Diffs)
		got, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		require.Equal(t, "after\n", string(got))
	}
}

// A path that ends with a slash names a directory: write made a file of
// that name ("notes/" wrote the file notes), and read and edit took the
// file before the slash. All three refuse it, saying what to give.
func TestFileToolsRefuseAPathThatEndsWithASlash(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"m.go": "x\n"})
	for _, call := range []struct {
		tool Tool
		args string
	}{
		{WriteTool(), `{"path":"notes/","content":"x"}`},
		{ReadTool(), `{"path":"m.go/"}`},
		{EditTool(), `{"path":"m.go/","old_text":"x","new_text":"y"}`},
	} {
		var a struct{ Path string }
		require.NoError(t, json.Unmarshal([]byte(call.args), &a))
		requireFailure(t, run(t, call.tool, env, call.args), ErrInvalidArgs,
			a.Path+" ends with a slash, so it names a directory, not a file; name a file in it ("+a.Path+"NAME), or list it with glob")
	}
	_, err := os.Lstat(filepath.Join(root, "notes"))
	require.ErrorIs(t, err, os.ErrNotExist)
	got, err := os.ReadFile(filepath.Join(root, "m.go"))
	require.NoError(t, err)
	require.Equal(t, "x\n", string(got))
}
