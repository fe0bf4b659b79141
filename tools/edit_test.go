package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const editFixture = "package main\n\nfunc a() {\n\treturn\n}\n\nfunc b() {\n\treturn\n}\n"

func TestEdit(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		want    EditOutput
		line    int
		newText string
	}{
		{"one match", `{"path":"m.go","old_text":"func b() {\n\treturn","new_text":"func b() {\n\tpanic(1)"}`,
			EditOutput{"m.go", 1}, 7, "package main\n\nfunc a() {\n\treturn\n}\n\nfunc b() {\n\tpanic(1)\n}\n"},
		{"replace all", `{"path":"m.go","old_text":"\treturn\n","new_text":"","replace_all":true}`,
			EditOutput{"m.go", 2}, 4, "package main\n\nfunc a() {\n}\n\nfunc b() {\n}\n"},
		{"replace all with one match", `{"path":"m.go","old_text":"package main","new_text":"package x","replace_all":true}`,
			EditOutput{"m.go", 1}, 1, "package x\n\nfunc a() {\n\treturn\n}\n\nfunc b() {\n\treturn\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, root := newEnv(t)
			writeFiles(t, root, map[string]string{"m.go": editFixture})
			abs := filepath.Join(root, "m.go")
			res := run(t, EditTool(), env, tt.args)
			require.Equal(t, tt.want, requireOK[EditOutput](t, res))
			old := editFixture
			require.Equal(t, []Diff{{Path: abs, OldText: &old, NewText: tt.newText}}, res.Diffs)
			require.Equal(t, []Location{{Path: abs, Line: tt.line}}, res.Locations)
			got, err := os.ReadFile(abs)
			require.NoError(t, err)
			require.Equal(t, tt.newText, string(got))
		})
	}
}

func TestEditFailures(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"m.go": editFixture, "dir/x": ""})
	tests := []struct {
		name    string
		args    string
		kind    ErrorKind
		msg     string
		details any
	}{
		{"not found", `{"path":"m.go","old_text":"func c()","new_text":"x"}`, ErrNotFound,
			"old_text was not found in m.go; read the file and copy the exact text, including whitespace", nil},
		{"whitespace differs", `{"path":"m.go","old_text":"    return","new_text":"x"}`, ErrNotFound,
			"old_text was not found in m.go; read the file and copy the exact text, including whitespace", nil},
		{"ambiguous", `{"path":"m.go","old_text":"\treturn","new_text":"\tpanic(1)"}`, ErrConflict,
			"old_text matches 2 places in m.go (lines 4, 8); add surrounding lines to old_text so it matches once, or set replace_all to replace every match",
			map[string]any{"matches": 2, "lines": []int{4, 8}}},
		{"empty old_text", `{"path":"m.go","old_text":"","new_text":"x"}`, ErrInvalidArgs,
			"old_text is empty; copy the exact text to replace from the file (to create a file or replace all of it, use write)", nil},
		{"no change", `{"path":"m.go","old_text":"a","new_text":"a"}`, ErrInvalidArgs,
			"old_text and new_text are the same, so the edit would change nothing; put the changed text in new_text", nil},
		{"missing file", `{"path":"n.go","old_text":"a","new_text":"b"}`, ErrNotFound,
			"there is no file at n.go; check the path, or create the file with write", nil},
		{"directory", `{"path":"dir","old_text":"a","new_text":"b"}`, ErrInvalidArgs,
			"dir is a directory, not a file; list it with glob or bash (ls) instead", nil},
		{"outside the workspace", `{"path":"../m.go","old_text":"a","new_text":"b"}`, ErrPermissionDenied,
			"../m.go is outside the workspace; use a path inside it", nil},
		{"missing new_text", `{"path":"m.go","old_text":"a"}`, ErrInvalidArgs, "/: missing property 'new_text'",
			map[string]any{"problems": []string{"/: missing property 'new_text'"}}},
		{"replace_all not a boolean", `{"path":"m.go","old_text":"a","new_text":"b","replace_all":"yes"}`, ErrInvalidArgs,
			"/replace_all: got string, want boolean", map[string]any{"problems": []string{"/replace_all: got string, want boolean"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, EditTool(), env, tt.args)
			requireFailure(t, res, tt.kind, tt.msg)
			require.Equal(t, tt.details, res.Error.Details)
		})
	}
	got, err := os.ReadFile(filepath.Join(root, "m.go"))
	require.NoError(t, err)
	require.Equal(t, editFixture, string(got), "failed edits must not touch the file")
}

func TestEditListsAtMostTwentyLines(t *testing.T) {
	env, root := newEnv(t)
	content := ""
	for range 25 {
		content += "x\n"
	}
	writeFiles(t, root, map[string]string{"x.txt": content})
	res := run(t, EditTool(), env, `{"path":"x.txt","old_text":"x","new_text":"y"}`)
	requireFailure(t, res, ErrConflict, "old_text matches 25 places in x.txt (lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, …); "+
		"add surrounding lines to old_text so it matches once, or set replace_all to replace every match")
	require.Len(t, res.Error.Details.(map[string]any)["lines"], 20)
}

func TestEditDryRun(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"m.go": editFixture})
	res := dryRun(t, EditTool(), env, `{"path":"m.go","old_text":"\treturn","new_text":"\tpanic(1)","replace_all":true}`)
	require.Equal(t, DryRunOutput{DryRun: true, Summary: "would replace 2 match(es) of old_text in m.go, the first at line 4"}, requireOK[DryRunOutput](t, res))
	require.Len(t, res.Diffs, 1)
	require.Equal(t, "package main\n\nfunc a() {\n\tpanic(1)\n}\n\nfunc b() {\n\tpanic(1)\n}\n", res.Diffs[0].NewText)
	got, err := os.ReadFile(filepath.Join(root, "m.go"))
	require.NoError(t, err)
	require.Equal(t, editFixture, string(got))

	requireFailure(t, dryRun(t, EditTool(), env, `{"path":"m.go","old_text":"\treturn","new_text":"x"}`), ErrConflict,
		"old_text matches 2 places in m.go (lines 4, 8); add surrounding lines to old_text so it matches once, or set replace_all to replace every match")
}

func TestMatchLines(t *testing.T) {
	tests := []struct {
		s, sub string
		want   []int
	}{
		{"a\nb\na\n", "a", []int{1, 3}},
		{"aaa", "aa", []int{1}},
		{"x\ny\nx\ny\n", "x\ny", []int{1, 3}},
		{"one\ntwo", "three", nil},
		{"\n\nend", "end", []int{3}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, matchLines(tt.s, tt.sub), "%q in %q", tt.sub, tt.s)
	}
}

func TestEditDescribe(t *testing.T) {
	require.Equal(t, Presentation{Title: "Edit m.go", Kind: KindEdit, Locations: []Location{{Path: "m.go"}}},
		EditTool().Describe(json.RawMessage(`{"path":"m.go","old_text":5}`)))
}

// A model writes its lines with \n whatever the file's line ends: in a file
// that ends every line with \r\n, its old_text matches and its new_text
// keeps the file's line ends (before, a multi-line old_text was "not
// found", and a multi-line new_text left \n lines in a \r\n file).
func TestEditKeepsCRLFLineEnds(t *testing.T) {
	const crlf = "one\r\ntwo\r\nthree\r\n"
	tests := []struct {
		name, file, args, want string
	}{
		{"multi-line old_text written with \\n", crlf, `{"path":"f.txt","old_text":"one\ntwo\n","new_text":"1\n2\n"}`, "1\r\n2\r\nthree\r\n"},
		{"new_text of several lines", crlf, `{"path":"f.txt","old_text":"two","new_text":"2\n2b"}`, "one\r\n2\r\n2b\r\nthree\r\n"},
		{"old_text copied with its \\r\\n", crlf, `{"path":"f.txt","old_text":"one\r\ntwo","new_text":"1\r\n2"}`, "1\r\n2\r\nthree\r\n"},
		{"a file of \\n lines is taken as it is", "one\ntwo\n", `{"path":"f.txt","old_text":"one\ntwo","new_text":"1\r\n2"}`, "1\r\n2\n"},
		{"a file of mixed line ends is taken as it is", "one\r\ntwo\n", `{"path":"f.txt","old_text":"two\n","new_text":"2\n"}`, "one\r\n2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, root := newEnv(t)
			writeFiles(t, root, map[string]string{"f.txt": tt.file})
			res := run(t, EditTool(), env, tt.args)
			require.Equal(t, EditOutput{"f.txt", 1}, requireOK[EditOutput](t, res))
			got, err := os.ReadFile(filepath.Join(root, "f.txt"))
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
			require.Equal(t, tt.want, res.Diffs[0].NewText)
		})
	}

	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"f.txt": crlf})
	requireFailure(t, run(t, EditTool(), env, `{"path":"f.txt","old_text":"one\r\n","new_text":"one\n"}`), ErrInvalidArgs,
		`old_text and new_text differ only in line ends, and f.txt ends its lines with \r\n, as the edit would too: it would change nothing; put the changed text in new_text`)
}

// An old_text that differs from the file only in white space (spaces for
// the file's tabs, a trailing space, a different indent) is not applied,
// but the failure says which lines it matches that way and gives their
// exact text, so the model can copy it: "copy the exact text, including
// whitespace" alone sent it back to read and guess again.
func TestEditSaysWhereOldTextMatchesButForWhiteSpace(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"m.go": editFixture, "t.py": "def f():\n    x = 1  \n    return x\n"})
	res := run(t, EditTool(), env, `{"path":"m.go","old_text":"func b() {\n    return\n}","new_text":"func b() {}"}`)
	requireFailure(t, res, ErrNotFound, "old_text was not found in m.go, but lines 7-9 match it if white space is ignored (the file's tabs, spaces or line ends differ); "+
		"copy old_text again exactly from those lines: they are in details.text")
	require.Equal(t, map[string]any{"start_line": 7, "end_line": 9, "text": "func b() {\n\treturn\n}\n"}, res.Error.Details)

	res = run(t, EditTool(), env, `{"path":"t.py","old_text":"x = 1\n  return x","new_text":"return 1"}`)
	requireFailure(t, res, ErrNotFound, "old_text was not found in t.py, but lines 2-3 match it if white space is ignored (the file's tabs, spaces or line ends differ); "+
		"copy old_text again exactly from those lines: they are in details.text")
	require.Equal(t, map[string]any{"start_line": 2, "end_line": 3, "text": "    x = 1  \n    return x\n"}, res.Error.Details)

	// Matching twice that way, or not at all, says only what it said.
	for _, args := range []string{`{"path":"m.go","old_text":"  return","new_text":"x"}`, `{"path":"m.go","old_text":"func c()","new_text":"x"}`} {
		res = run(t, EditTool(), env, args)
		requireFailure(t, res, ErrNotFound, "old_text was not found in m.go; read the file and copy the exact text, including whitespace")
		require.Nil(t, res.Error.Details)
	}
}
