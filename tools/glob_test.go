package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGlob(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{
		"a.go": "", "a/b.go": "", "a/b_test.go": "", "a-b.go": "", "B.go": "", "z/y/x.go": "",
		"README.md": "", "docs/guide.md": "", "web/app.ts": "", "web/app.tsx": "",
		".gitignore": "*.gen.go\nbuild/\n", "gen.gen.go": "", "build/out.go": "",
		"a/.gitignore": "!keep.gen.go\n", "a/keep.gen.go": "",
		".git/x.go": "", ".pixir/y.go": "",
	})
	tests := []struct {
		name string
		args string
		want GlobOutput
	}{
		{"recursive, in byte order", `{"pattern":"**/*.go"}`, GlobOutput{
			Files: []string{"B.go", "a-b.go", "a.go", "a/b.go", "a/b_test.go", "a/keep.gen.go", "z/y/x.go"}, Total: 7,
		}},
		{"no slash matches at any depth", `{"pattern":"*_test.go"}`, GlobOutput{Files: []string{"a/b_test.go"}, Total: 1}},
		{"leading slash keeps to the directory", `{"pattern":"/*.md"}`, GlobOutput{Files: []string{"README.md"}, Total: 1}},
		{"alternatives", `{"pattern":"web/*.{ts,tsx}"}`, GlobOutput{Files: []string{"web/app.ts", "web/app.tsx"}, Total: 2}},
		{"under a path", `{"pattern":"*.go","path":"a"}`, GlobOutput{Files: []string{"a/b.go", "a/b_test.go", "a/keep.gen.go"}, Total: 3}},
		{"pattern relative to path", `{"pattern":"y/*.go","path":"z"}`, GlobOutput{Files: []string{"z/y/x.go"}, Total: 1}},
		{"an ignored directory given by name", `{"pattern":"**","path":"build"}`, GlobOutput{Files: []string{"build/out.go"}, Total: 1}},
		{"directories are not listed", `{"pattern":"a"}`, GlobOutput{Files: []string{}}},
		{"nothing", `{"pattern":"*.rs"}`, GlobOutput{Files: []string{}}},
		{"truncated", `{"pattern":"**/*.go","max_results":2}`, GlobOutput{
			Files: []string{"B.go", "a-b.go"}, Total: 7, Omitted: 5,
			Truncated: "[… 5 of 7 matching files not listed; narrow path or pattern, or raise max_results (at most 2000)]",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, requireOK[GlobOutput](t, run(t, GlobTool(), env, tt.args)))
		})
	}
}

func TestGlobDefaultLimit(t *testing.T) {
	env, root := newEnv(t)
	files := map[string]string{}
	for i := range globDefaultResults + 5 {
		// Names whose order differs from their creation order.
		files[fmt.Sprintf("d%d/%c%d", i%7, 'z'-i%26, i)] = ""
	}
	writeFiles(t, root, files)
	out := requireOK[GlobOutput](t, run(t, GlobTool(), env, `{"pattern":"**"}`))
	require.Len(t, out.Files, globDefaultResults)
	require.Equal(t, globDefaultResults+5, out.Total)
	require.Equal(t, 5, out.Omitted)
	require.IsNonDecreasing(t, out.Files)
}

func TestGlobSymlinks(t *testing.T) {
	env, root := newEvalEnv(t)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"o.go": ""})
	writeFiles(t, root, map[string]string{"d/in.go": ""})
	for name, target := range map[string]string{
		"loop": ".", "d/up": "..", "self.go": "self.go", "out.go": filepath.Join(outside, "o.go"), "out": outside, "alias.go": "d/in.go",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(root, name)))
	}
	out := requireOK[GlobOutput](t, run(t, GlobTool(), env, `{"pattern":"**/*.go"}`))
	require.Equal(t, []string{"alias.go", "d/in.go"}, out.Files)
}

func TestGlobFailures(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"a.go": ""})
	tests := []struct {
		name string
		args string
		kind ErrorKind
		msg  string
	}{
		{"invalid glob", `{"pattern":"[a"}`, ErrInvalidArgs,
			`pattern "[a" is not a valid glob (check its [ ] and { } pairs); use * for any name, ** for any number of directories, {a,b} for alternatives, e.g. **/*.go`},
		{"a file as path", `{"pattern":"*","path":"a.go"}`, ErrInvalidArgs, "a.go is a file, not a directory; give the directory to list as path, or read the file with read"},
		{"outside the workspace", `{"pattern":"*","path":".."}`, ErrPermissionDenied, ".. is outside the workspace; use a path inside it"},
		{"missing path", `{"pattern":"*","path":"src"}`, ErrNotFound, "there is no file at src; check the path, or list the directory with glob"},
		{"empty pattern", `{"pattern":""}`, ErrInvalidArgs, "/pattern: minLength: got 0, want 1"},
		{"bounds", `{"pattern":"*","max_results":2001}`, ErrInvalidArgs, "/max_results: maximum: got 2001, want 2000"},
		{"not an object", `["*"]`, ErrInvalidArgs, "arguments must be a JSON object, got an array; send one JSON object that matches the schema of glob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireFailure(t, run(t, GlobTool(), env, tt.args), tt.kind, tt.msg)
		})
	}
}

func TestGlobDryRun(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"src/a.go": ""})
	require.Equal(t, DryRunOutput{DryRun: true, Summary: "would list the files under src that match *.go"},
		requireOK[DryRunOutput](t, dryRun(t, GlobTool(), env, `{"pattern":"*.go","path":"src"}`)))
	requireFailure(t, dryRun(t, GlobTool(), env, `{"pattern":"*","path":"nope"}`), ErrNotFound,
		"there is no file at nope; check the path, or list the directory with glob")
}

func TestDescribeGlob(t *testing.T) {
	tests := []struct {
		args string
		want Presentation
	}{
		{`{"pattern":"**/*.go"}`, Presentation{Title: "Glob **/*.go", Kind: KindSearch}},
		{`{"pattern":"*.ts","path":"web/"}`, Presentation{Title: "Glob *.ts in web", Kind: KindSearch, Locations: []Location{{Path: "web"}}}},
		{`{}`, Presentation{Title: "glob", Kind: KindSearch}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, GlobTool().Describe(json.RawMessage(tt.args)), tt.args)
	}
}

// A glob written as an absolute path inside the searched folder is taken
// relative to it: a leading / keeps a glob to path, so it was looked for
// beneath path again and matched nothing, without a word. One that names
// another folder of the workspace is refused, saying what to give.
func TestGlobTakesAnAbsolutePatternInsideThePath(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"src/a.go": "needle\n", "src/sub/b.go": "needle\n", "c.go": "needle\n"})
	out := requireOK[GlobOutput](t, run(t, GlobTool(), env, fmt.Sprintf(`{"pattern":%q}`, root+"/src/**/*.go")))
	require.Equal(t, []string{"src/a.go", "src/sub/b.go"}, out.Files)
	out = requireOK[GlobOutput](t, run(t, GlobTool(), env, fmt.Sprintf(`{"pattern":%q,"path":"src"}`, root+"/src/*.go")))
	require.Equal(t, []string{"src/a.go"}, out.Files)
	grep := requireOK[GrepOutput](t, run(t, GrepTool(), env, fmt.Sprintf(`{"pattern":"needle","glob":%q}`, root+"/*.go")))
	require.Equal(t, 1, grep.TotalMatches)
	require.Equal(t, "c.go", grep.Matches[0].Path)

	requireFailure(t, run(t, GlobTool(), env, fmt.Sprintf(`{"pattern":%q,"path":"src"}`, root+"/*.go")), ErrInvalidArgs,
		fmt.Sprintf("pattern %q is an absolute path that is not inside the searched folder %s; write it relative to that folder (e.g. **/*.go), or set path to the folder it names", root+"/*.go", filepath.Join(root, "src")))
	// A leading / that is not the workspace's keeps its meaning: files
	// directly in path.
	out = requireOK[GlobOutput](t, run(t, GlobTool(), env, `{"pattern":"/*.go"}`))
	require.Equal(t, []string{"c.go"}, out.Files)
}

// An absolute glob written through a symbolic link to the workspace (the
// path the user sees; the root is its real path) is taken as the same
// folder: it fell through as a glob relative to path and matched nothing.
func TestGlobTakesAnAbsolutePatternThroughALinkedRoot(t *testing.T) {
	real, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	env := Env{SessionID: "s1", Workspace: fakeWorkspace{root: real}, Files: osFiles{}}
	writeFiles(t, real, map[string]string{"src/a.go": "needle\n", "src/sub/b.go": "needle\n", "c.go": "needle\n"})
	link := filepath.Join(t.TempDir(), "proj")
	require.NoError(t, os.Symlink(real, link))
	out := requireOK[GlobOutput](t, run(t, GlobTool(), env, fmt.Sprintf(`{"pattern":%q}`, link+"/src/**/*.go")))
	require.Equal(t, []string{"src/a.go", "src/sub/b.go"}, out.Files)
	grep := requireOK[GrepOutput](t, run(t, GrepTool(), env, fmt.Sprintf(`{"pattern":"needle","glob":%q}`, link+"/*.go")))
	require.Equal(t, 1, grep.TotalMatches)
	requireFailure(t, run(t, GlobTool(), env, fmt.Sprintf(`{"pattern":%q,"path":"src"}`, link+"/*.go")), ErrInvalidArgs,
		fmt.Sprintf("pattern %q is an absolute path that is not inside the searched folder %s; write it relative to that folder (e.g. **/*.go), or set path to the folder it names", link+"/*.go", filepath.Join(real, "src")))
}
