package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// evalWorkspace confines like the runtime's Workspace: symbolic links are
// resolved, and a path whose target is outside the root or in .pixir/ is
// refused.
type evalWorkspace struct{ root string }

func (w evalWorkspace) Root() string { return w.root }

func (w evalWorkspace) Resolve(path string) (string, error) {
	abs, err := fakeWorkspace(w).Resolve(path)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", &Failure{Kind: ErrPermissionDenied, Message: path + " cannot be resolved"}
	}
	rel, err := filepath.Rel(w.root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || rel == ".pixir" || strings.HasPrefix(rel, ".pixir/") {
		return "", &Failure{Kind: ErrPermissionDenied, Message: path + " leads outside the workspace"}
	}
	return real, nil
}

// newEvalEnv is newEnv with a workspace that resolves symbolic links.
func newEvalEnv(t *testing.T) (Env, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return Env{SessionID: "s1", Workspace: evalWorkspace{root: root}}, root
}

// walked lists what a walk under path visits, as rel=>open when they differ.
func walked(t *testing.T, env Env, path string) []string {
	t.Helper()
	w, _, f := openWalk(env, path)
	require.Nil(t, f)
	defer w.Close()
	var got []string
	require.NoError(t, w.run(t.Context(), func(f walkedFile) error {
		if f.rel != f.open {
			got = append(got, f.rel+"=>"+f.open)
		} else {
			got = append(got, f.rel)
		}
		return nil
	}))
	return got
}

func TestParseIgnoreLine(t *testing.T) {
	tests := []struct {
		line string
		want ignoreRule
		ok   bool
	}{
		{"", ignoreRule{}, false},
		{"# comment", ignoreRule{}, false},
		{"   ", ignoreRule{}, false},
		{"/", ignoreRule{}, false},
		{"!", ignoreRule{}, false},
		{"*.log", ignoreRule{base: "b", glob: "**/*.log"}, true},
		{"*.log  ", ignoreRule{base: "b", glob: "**/*.log"}, true},
		{`a\ `, ignoreRule{base: "b", glob: `**/a\ `}, true},
		{`a\\ `, ignoreRule{base: "b", glob: `**/a\\`}, true},
		{"*.log\r", ignoreRule{base: "b", glob: "**/*.log"}, true},
		{"!keep.log", ignoreRule{base: "b", glob: "**/keep.log", negate: true}, true},
		{`\!bang`, ignoreRule{base: "b", glob: `**/\!bang`}, true},
		{`\#hash`, ignoreRule{base: "b", glob: `**/\#hash`}, true},
		{"tmp/", ignoreRule{base: "b", glob: "**/tmp", dirOnly: true}, true},
		{"/build", ignoreRule{base: "b", glob: "build"}, true},
		{"doc/frotz/", ignoreRule{base: "b", glob: "doc/frotz", dirOnly: true}, true},
		{"**/cache", ignoreRule{base: "b", glob: "**/cache"}, true},
		{"a/**", ignoreRule{base: "b", glob: "a/*/**"}, true},
		{"a/**/b", ignoreRule{base: "b", glob: "a/**/b"}, true},
		{"*.{x,y}", ignoreRule{base: "b", glob: `**/*.\{x,y\}`}, true},
		{`\{a}`, ignoreRule{base: "b", glob: `**/\{a\}`}, true},
		{"[abc", ignoreRule{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, ok := parseIgnoreLine(tt.line, "b")
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

// gitTree is a workspace that exercises the gitignore rules: nested files,
// negation (also from a deeper file), anchoring, directory-only patterns,
// **, escapes, braces taken literally, and .git/info/exclude.
var gitTree = map[string]string{
	".gitignore": strings.Join([]string{
		"# a comment", "*.log", "!keep.log", "/build", "tmp/", "docs/**/*.pdf", "**/cache", "a/**", "!a/keep.txt",
		`\#hash.txt`, `\!bang.txt`, "trailing.txt   ", "*.{x,y}", "[ab].md", "foo?.c", "nested/deep/", "sub/*.tmp",
		"secret-dir/", "!secret-dir/x",
	}, "\n") + "\n",
	"sub/.gitignore":       "*.gen\n!important.gen\n/local.txt\n",
	"sub/inner/.gitignore": "!*.log\n",
	"app.log":              "", "keep.log": "", "x/app.log": "", "x/keep.log": "",
	"build/out.o": "", "x/build/out.o": "",
	"tmp/t.txt": "", "x/tmp/t.txt": "", "y/tmp": "",
	"docs/a.pdf": "", "docs/z/b.pdf": "", "docs/c.md": "",
	"cache/c": "", "x/cache/c": "",
	"a/b.txt": "", "a/keep.txt": "", "a/deep/c.txt": "",
	"#hash.txt": "", "!bang.txt": "", "trailing.txt": "", "f.{x,y}": "", "f.x": "",
	"a.md": "", "c.md": "", "foo1.c": "", "foo12.c": "",
	"nested/deep/f": "", "x/nested/deep/f": "",
	"sub/x.tmp": "", "sub/y/x.tmp": "", "sub/a.gen": "", "sub/important.gen": "", "sub/local.txt": "", "sub/z/local.txt": "",
	"sub/inner/app.log": "", "sub/inner/b.gen": "",
	"secret-dir/x": "", "secret.txt": "", "x/secret.txt": "",
	"a.go": "", "a/b.go": "", "a-b.go": "", "ab.go": "", "B.go": "",
}

// gitLsOthers is git's own answer: the files it does not ignore.
func gitLsOthers(t *testing.T, root string, pathspec ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	home := t.TempDir()
	gitCmd := func(args ...string) []byte {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return out
	}
	gitCmd("init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(root, ".git/info/exclude"), []byte("secret.txt\n"), 0o644))
	out := gitCmd(append([]string{"ls-files", "-z", "--others", "--exclude-standard", "--"}, pathspec...)...)
	files := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	slices.Sort(files)
	return files
}

func TestWalkAgreesWithGit(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, gitTree)
	want := gitLsOthers(t, root)
	got := walked(t, env, "")
	require.True(t, slices.IsSorted(got), "walk order is byte order of paths: %q", got)
	require.Equal(t, want, got)
	// Spot checks, so that a git that changed its mind is noticed too.
	require.Contains(t, got, "keep.log")
	require.Contains(t, got, "sub/inner/app.log")
	require.Contains(t, got, "x/build/out.o")
	require.Contains(t, got, "a/keep.txt")
	require.NotContains(t, got, "secret-dir/x")
	require.NotContains(t, got, "x/secret.txt")

	t.Run("from a subdirectory", func(t *testing.T) {
		want := gitLsOthers(t, root, "sub")
		require.Equal(t, want, walked(t, env, "sub"))
		require.Equal(t, want, walked(t, env, "./sub/"))
	})
}

func TestWalkSkipsStateAndGitFolders(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{
		".git/config": "", ".pixir/sessions/s.ndjson": "", "x/.git": "gitdir: ../.git/worktrees/x", "x/.pixir/y": "",
		".github/workflows/ci.yml": "", ".env": "", "x/y": "",
	})
	require.Equal(t, []string{".env", ".github/workflows/ci.yml", "x/y"}, walked(t, env, ""))
}

func TestWalkSymlinks(t *testing.T) {
	for _, ws := range []struct {
		name string
		env  func(t *testing.T) (Env, string)
	}{{"lexical workspace", newEnv}, {"resolving workspace", newEvalEnv}} {
		t.Run(ws.name, func(t *testing.T) {
			env, root := ws.env(t)
			outside := t.TempDir()
			writeFiles(t, outside, map[string]string{"secret": "outside"})
			writeFiles(t, root, map[string]string{"d/f.txt": "inside", ".pixir/state": "state", "ignored.txt": ""})
			writeFiles(t, root, map[string]string{".gitignore": "ignored.txt\nlink-ignored\n"})
			links := map[string]string{
				"link-file":         "d/f.txt",
				"link-ignored":      "d/f.txt",
				"link-to-ignored":   "ignored.txt",
				"link-dir":          "d",
				"link-outside":      filepath.Join(outside, "secret"),
				"link-outside-dir":  outside,
				"link-state":        ".pixir/state",
				"loop":              ".",
				"d/up":              "..",
				"self":              "self",
				"dangling":          "nowhere",
				"d/link-file-again": "../link-file",
			}
			for name, target := range links {
				require.NoError(t, os.Symlink(target, filepath.Join(root, name)))
			}
			got := walked(t, env, "")
			want := []string{".gitignore", "d/f.txt", "d/link-file-again=>d/f.txt", "link-file=>d/f.txt", "link-to-ignored=>ignored.txt"}
			if ws.name == "lexical workspace" {
				// A lexical Resolve cannot see where a link leads, so the walk
				// opens the link as it is; the open, through no symbolic link,
				// refuses it, so nothing is reached through a link at all.
				want = []string{".gitignore", "d/f.txt"}
			}
			require.Equal(t, want, got)
		})
	}
}

func TestWalkStart(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"src/a.go": "", "src/b/c.go": "", ".gitignore": "src/\n"})
	require.NoError(t, os.Symlink("src", filepath.Join(root, "link")))
	require.Equal(t, []string{".gitignore"}, walked(t, env, ""))
	// A path given by name is searched even when ignored, as ripgrep does.
	require.Equal(t, []string{"src/a.go", "src/b/c.go"}, walked(t, env, "src"))
	require.Equal(t, []string{"src/a.go"}, walked(t, env, "src/a.go"))
	require.Equal(t, []string{"src/b/c.go"}, walked(t, env, filepath.Join(root, "src/b")))

	_, _, f := openWalk(env, "nope")
	require.Equal(t, &Failure{Kind: ErrNotFound, Message: "there is no file at nope; check the path, or list the directory with glob"}, f)
	_, _, f = openWalk(env, "..")
	require.Equal(t, ErrPermissionDenied, f.Kind)
	_, _, f = openWalk(Env{}, "")
	require.Equal(t, ErrInternal, f.Kind)
}

func TestWalkCancelled(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"a": "", "b/c": ""})
	w, _, f := openWalk(env, "")
	require.Nil(t, f)
	defer w.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, w.run(ctx, func(walkedFile) error { return nil }), context.Canceled)
}

func TestPathFilter(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"*.go", []string{"a.go", "x/y/a.go"}, []string{"a.go/x", "a.txt"}},
		{"**/*.go", []string{"a.go", "x/y/a.go"}, []string{"a.txt"}},
		{"/*.go", []string{"a.go"}, []string{"x/a.go"}},
		{"./*.go", []string{"a.go"}, []string{"x/a.go"}},
		{"x/*.go", []string{"x/a.go"}, []string{"a.go", "y/x/a.go", "x/y/a.go"}},
		{"*.{yml,yaml}", []string{"a.yml", "b/c.yaml"}, []string{"a.json"}},
		{"[ab].md", []string{"a.md", "x/b.md"}, []string{"c.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			p, f := newPathFilter(tt.pattern, "glob")
			require.Nil(t, f)
			for _, m := range tt.match {
				require.True(t, p.match(m), m)
			}
			for _, m := range tt.miss {
				require.False(t, p.match(m), m)
			}
		})
	}
	for _, bad := range []string{"[ab", "{a,b", "/", "./"} {
		_, f := newPathFilter(bad, "pattern")
		require.Equal(t, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"pattern %q is not a valid glob (check its [ ] and { } pairs); use * for any name, ** for any number of directories, {a,b} for alternatives, e.g. **/*.go", bad)}, f)
	}
}

func TestLooksBinary(t *testing.T) {
	require.False(t, looksBinary(nil))
	require.False(t, looksBinary([]byte("text\n")))
	require.True(t, looksBinary([]byte("ELF\x00")))
	require.False(t, looksBinary(append(bytes.Repeat([]byte("a"), 8000), 0)), "only the first 8000 bytes count")
}
