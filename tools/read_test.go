package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeFiles creates files under root, making parent directories.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func TestRead(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{
		"src/main.go":   "l1\nl2\nl3\nl4\n",
		"no-newline.go": "a\nb",
		"empty.txt":     "",
	})
	abs := filepath.Join(root, "src/main.go")
	tests := []struct {
		name string
		args string
		want ReadOutput
	}{
		{"whole file", `{"path":"src/main.go"}`, ReadOutput{"src/main.go", 1, 4, 4, "l1\nl2\nl3\nl4\n", false, ""}},
		{"range", `{"path":"src/main.go","offset":2,"limit":2}`, ReadOutput{"src/main.go", 2, 3, 4, "l2\nl3\n", false, ""}},
		{"offset only", `{"path":"src/main.go","offset":3}`, ReadOutput{"src/main.go", 3, 4, 4, "l3\nl4\n", false, ""}},
		{"limit only", `{"path":"src/main.go","limit":1}`, ReadOutput{"src/main.go", 1, 1, 4, "l1\n", false, ""}},
		{"limit past the end", `{"path":"src/main.go","offset":4,"limit":10}`, ReadOutput{"src/main.go", 4, 4, 4, "l4\n", false, ""}},
		{"absolute path shown relative", fmt.Sprintf(`{"path":%q}`, abs), ReadOutput{"src/main.go", 1, 4, 4, "l1\nl2\nl3\nl4\n", false, ""}},
		{"unclean path", `{"path":"./src/../src/main.go","limit":1}`, ReadOutput{"src/main.go", 1, 1, 4, "l1\n", false, ""}},
		{"no final newline", `{"path":"no-newline.go"}`, ReadOutput{"no-newline.go", 1, 2, 2, "a\nb", false, ""}},
		{"empty file", `{"path":"empty.txt"}`, ReadOutput{"empty.txt", 0, 0, 0, "", false, ""}},
		{"empty file from line 1", `{"path":"empty.txt","offset":1}`, ReadOutput{"empty.txt", 0, 0, 0, "", false, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, ReadTool(), env, tt.args)
			require.Equal(t, tt.want, requireOK[ReadOutput](t, res))
			require.Equal(t, filepath.Join(root, tt.want.Path), res.Locations[0].Path)
		})
	}
}

// editorLines serves a file's lines as an editor's fs/read_text_file does
// with line and limit, and counts what it was asked.
type editorLines struct {
	Files
	asked []string
}

func (e *editorLines) OpenLines(ctx context.Context, path string, line, limit int) (io.ReadCloser, error) {
	e.asked = append(e.asked, fmt.Sprintf("%d+%d", line, limit))
	r, err := e.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	from := min(line-1, len(lines))
	to := min(from+limit, len(lines))
	return io.NopCloser(strings.NewReader(strings.Join(lines[from:to], ""))), nil
}

// Through an editor that serves ranges, read asks for the lines it needs
// (one more, to know whether more follow), never the whole file.
func TestReadThroughLineRanges(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"src/main.go": "l1\nl2\nl3\nl4\n", "empty.txt": ""})
	ed := &editorLines{Files: env.Files}
	env.Files = ed
	tests := []struct {
		name  string
		args  string
		asked string
		want  ReadOutput
	}{
		{"whole file", `{"path":"src/main.go"}`, "1+10001", ReadOutput{"src/main.go", 1, 4, 4, "l1\nl2\nl3\nl4\n", false, ""}},
		{"range, more follow", `{"path":"src/main.go","offset":2,"limit":2}`, "2+3", ReadOutput{"src/main.go", 2, 3, 0, "l2\nl3\n", true, ""}},
		{"range to the end", `{"path":"src/main.go","offset":3,"limit":2}`, "3+3", ReadOutput{"src/main.go", 3, 4, 4, "l3\nl4\n", false, ""}},
		{"limit only", `{"path":"src/main.go","limit":1}`, "1+2", ReadOutput{"src/main.go", 1, 1, 0, "l1\n", true, ""}},
		{"empty file", `{"path":"empty.txt"}`, "1+10001", ReadOutput{"empty.txt", 0, 0, 0, "", false, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ed.asked = nil
			res := run(t, ReadTool(), env, tt.args)
			require.Equal(t, tt.want, requireOK[ReadOutput](t, res))
			require.Equal(t, []string{tt.asked}, ed.asked)
		})
	}
	res := run(t, ReadTool(), env, `{"path":"src/main.go","offset":9}`)
	require.False(t, res.OK)
	require.Equal(t, "offset 9 is past the end of src/main.go, which has 4 lines; read from an offset between 1 and 4", res.Error.Message,
		"the editor served no lines: the file is asked for whole to say how long it is")
}

func TestReadFailures(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{
		"src/main.go": "l1\nl2\nl3\nl4\n",
		"bin.dat":     "ELF\x00\x01\x02",
		"empty.txt":   "",
	})
	tests := []struct {
		name string
		args string
		kind ErrorKind
		msg  string
	}{
		{"missing file", `{"path":"src/nope.go"}`, ErrNotFound, "there is no file at src/nope.go; check the path, or find the file with glob"},
		{"parent is a file", `{"path":"src/main.go/x"}`, ErrNotFound, "a parent of src/main.go/x is a file, not a directory; check the path, or find the file with glob"},
		{"directory", `{"path":"src"}`, ErrInvalidArgs, "src is a directory, not a file; list it with glob or bash (ls) instead"},
		{"workspace root", `{"path":"."}`, ErrInvalidArgs, ". is a directory, not a file; list it with glob or bash (ls) instead"},
		{"outside the workspace", `{"path":"../etc/passwd"}`, ErrPermissionDenied, "../etc/passwd is outside the workspace; use a path inside it"},
		{"binary", `{"path":"bin.dat"}`, ErrInvalidArgs, "bin.dat looks binary (it contains NUL bytes), so it cannot be read as text; inspect it with bash (file, xxd | head)"},
		{"offset past the end", `{"path":"src/main.go","offset":5}`, ErrInvalidArgs, "offset 5 is past the end of src/main.go, which has 4 lines; read from an offset between 1 and 4"},
		{"offset past the end of an empty file", `{"path":"empty.txt","offset":2}`, ErrInvalidArgs, "offset 2 is past the end of empty.txt, which has 0 lines; read from an offset between 1 and 1"},
		{"zero offset", `{"path":"src/main.go","offset":0}`, ErrInvalidArgs, "/offset: minimum: got 0, want 1"},
		{"negative limit and string path", `{"path":7,"limit":-1}`, ErrInvalidArgs, "/limit: minimum: got -1, want 1\n/path: got number, want string"},
		{"no path", `{"offset":1}`, ErrInvalidArgs, "/: missing property 'path'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireFailure(t, run(t, ReadTool(), env, tt.args), tt.kind, tt.msg)
		})
	}
}

func TestReadFIFOIsRefused(t *testing.T) {
	env, root := newEnv(t)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	requireFailure(t, run(t, ReadTool(), env, `{"path":"pipe"}`), ErrInvalidArgs,
		"pipe is not a regular file; only plain files can be read or edited")
}

func TestReadNeedsWorkspace(t *testing.T) {
	requireFailure(t, run(t, ReadTool(), Env{}, `{"path":"a"}`), ErrInternal,
		"this session has no workspace, so no path can be used; this is a bug in Pixir")
}

func TestReadTruncatesLargeFiles(t *testing.T) {
	env, root := newEnv(t)
	line := strings.Repeat("x", 99) + "\n" // 100 bytes
	writeFiles(t, root, map[string]string{
		"big.txt":  strings.Repeat(line, 3000), // 300000 bytes
		"wide.txt": strings.Repeat("é", 200_000),
	})

	out := requireOK[ReadOutput](t, run(t, ReadTool(), env, `{"path":"big.txt"}`))
	require.Equal(t, 3000, out.TotalLines)
	require.Equal(t, 1, out.StartLine)
	// The cut ends on a whole line, and end_line is the last one shown
	// whole: a model that goes on from end_line+1 misses nothing. The
	// line the cap fell in was shown in part and counted as read.
	require.Equal(t, readLimit/100, out.EndLine)
	require.Equal(t, strings.Repeat(line, readLimit/100)+
		"\n[… truncated 37900 bytes of 300000; narrow the request (line range, grep) to see more]", out.Content)
	next := requireOK[ReadOutput](t, run(t, ReadTool(), env, fmt.Sprintf(`{"path":"big.txt","offset":%d}`, out.EndLine+1)))
	require.Equal(t, strings.Repeat(line, 3000-readLimit/100), next.Content, "the next range starts where the first ended")

	// A range that fits is not cut.
	out = requireOK[ReadOutput](t, run(t, ReadTool(), env, `{"path":"big.txt","offset":2900}`))
	require.Equal(t, strings.Repeat(line, 101), out.Content)

	// One line longer than the limit is cut on a rune boundary, and the
	// marker says how to see the rest of it: no line range shows it (it
	// said "narrow the request (line range, grep)").
	out = requireOK[ReadOutput](t, run(t, ReadTool(), env, `{"path":"wide.txt"}`))
	require.Equal(t, ReadOutput{Path: "wide.txt", StartLine: 1, EndLine: 1, TotalLines: 1}, ReadOutput{Path: out.Path, StartLine: out.StartLine, EndLine: out.EndLine, TotalLines: out.TotalLines})
	require.True(t, strings.HasPrefix(out.Content, strings.Repeat("é", readLimit/2)+"\n[…"))
	require.Equal(t, "\n[… line 1 is cut: it alone is longer than one read shows (256 KiB), and 137856 of its 400000 bytes are not shown; "+
		"see the rest of it with bash (sed -n 1p FILE | cut -b 262145-), or go on from offset 2]", out.Content[readLimit:])
	writeFiles(t, root, map[string]string{"mid.txt": "a\n" + strings.Repeat("x", readLimit+10) + "\r\nb\n"})
	out = requireOK[ReadOutput](t, run(t, ReadTool(), env, `{"path":"mid.txt","offset":2,"limit":2}`))
	require.Equal(t, 2, out.EndLine)
	require.Equal(t, "\n[… line 2 is cut: it alone is longer than one read shows (256 KiB), and 11 of its 262155 bytes are not shown; "+
		"see the rest of it with bash (sed -n 2p FILE | cut -b 262145-), or go on from offset 3]", out.Content[readLimit:])
}

func TestReadDryRun(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"a.txt": "hello\n"})
	require.Equal(t, DryRunOutput{DryRun: true, Summary: "would read a.txt:2-4"},
		requireOK[DryRunOutput](t, dryRun(t, ReadTool(), env, `{"path":"a.txt","offset":2,"limit":3}`)))
	requireFailure(t, dryRun(t, ReadTool(), env, `{"path":"b.txt"}`), ErrNotFound,
		"there is no file at b.txt; check the path, or find the file with glob")
}

func TestReadDescribe(t *testing.T) {
	tests := []struct {
		args string
		want Presentation
	}{
		{`{"path":"src/main.go"}`, Presentation{Title: "Read src/main.go", Kind: KindRead, Locations: []Location{{Path: "src/main.go"}}}},
		{`{"path":"./src//main.go","offset":10,"limit":31}`, Presentation{Title: "Read src/main.go:10-40", Kind: KindRead, Locations: []Location{{Path: "src/main.go", Line: 10}}}},
		{`{"path":"src/main.go","offset":10}`, Presentation{Title: "Read src/main.go:10-", Kind: KindRead, Locations: []Location{{Path: "src/main.go", Line: 10}}}},
		{`{"path":"src/main.go","limit":5}`, Presentation{Title: "Read src/main.go:1-5", Kind: KindRead, Locations: []Location{{Path: "src/main.go"}}}},
		{`{"path":"src/main.go","offset":"ten"}`, Presentation{Title: "Read src/main.go", Kind: KindRead, Locations: []Location{{Path: "src/main.go"}}}},
		{`{"offset":3}`, Presentation{Title: "read", Kind: KindRead}},
		{`nonsense`, Presentation{Title: "read", Kind: KindRead}},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			require.Equal(t, tt.want, ReadTool().Describe(json.RawMessage(tt.args)))
		})
	}
}

// A Latin-1 file's bytes that are not UTF-8 reach the model as U+FFFD (JSON
// has no other way to carry them): the result says so, and what it means
// for an edit or a write, so the model does not write the U+FFFD it read
// back over the user's text. An edit whose old_text holds one says why it
// matched nothing.
func TestReadSaysTextIsNotUTF8(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"latin1.txt": "caf\xe9 cr\xe8me\nplain\n", "utf8.txt": "café\n"})
	out := requireOK[ReadOutput](t, run(t, ReadTool(), env, `{"path":"latin1.txt"}`))
	require.Equal(t, "latin1.txt is not UTF-8 text: 2 bytes of these lines (Latin-1 or another encoding) are shown as \ufffd. "+
		"edit keeps them where old_text does not cover them, but old_text holding \ufffd matches nothing, and write would put \ufffd in their place; "+
		"change those lines with bash (sed, or iconv to convert the file)", out.Note)
	require.Empty(t, requireOK[ReadOutput](t, run(t, ReadTool(), env, `{"path":"latin1.txt","offset":2}`)).Note, "the lines read are UTF-8")
	require.Empty(t, requireOK[ReadOutput](t, run(t, ReadTool(), env, `{"path":"utf8.txt"}`)).Note)

	requireFailure(t, run(t, EditTool(), env, "{\"path\":\"latin1.txt\",\"old_text\":\"caf\ufffd\",\"new_text\":\"cafe\"}"), ErrNotFound,
		"old_text was not found in latin1.txt: it holds \ufffd, which read shows for the bytes of latin1.txt that are not UTF-8, and they are not \ufffd in the file; "+
			"choose old_text without them, or change those lines with bash (sed, or iconv to convert the file)")
	require.Equal(t, EditOutput{"latin1.txt", 1}, requireOK[EditOutput](t, run(t, EditTool(), env, `{"path":"latin1.txt","old_text":"plain","new_text":"PLAIN"}`)))
	got, err := os.ReadFile(filepath.Join(root, "latin1.txt"))
	require.NoError(t, err)
	require.Equal(t, "caf\xe9 cr\xe8me\nPLAIN\n", string(got))
}
