package runtime

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

// confinedWorkspace is a workspace with a secret file and a directory outside it, so
// every attack has something to reach for.
type confinedWorkspace struct {
	ws      *Workspace
	root    string
	outside string
}

func newConfinedWorkspace(t *testing.T) *confinedWorkspace {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "src"), filepath.Join(root, StateDir, "sessions")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "src", "main.go"), []byte("package main\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link-to-secret")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "link-to-outside")))
	require.NoError(t, os.Symlink(filepath.Join(root, "src"), filepath.Join(root, "link-to-src")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "nothing-yet"), filepath.Join(root, "dangling")))
	ws, err := NewWorkspace(root)
	require.NoError(t, err)
	t.Cleanup(func() { ws.Close() })
	real, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	outReal, err := filepath.EvalSymlinks(outside)
	require.NoError(t, err)
	return &confinedWorkspace{ws: ws, root: real, outside: outReal}
}

// untouched asserts nothing outside the workspace changed.
func (s *confinedWorkspace) untouched(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(s.outside)
	require.NoError(t, err)
	require.Len(t, entries, 1, "a file appeared outside the workspace")
	data, err := os.ReadFile(filepath.Join(s.outside, "secret.txt"))
	require.NoError(t, err)
	require.Equal(t, "secret", string(data))
}

func TestResolveRefusesEveryWayOut(t *testing.T) {
	s := newConfinedWorkspace(t)
	denied := []struct{ name, path, msg string }{
		{"dot-dot", "../outside/secret.txt", "is outside the workspace"},
		{"dot-dot deep", "src/../../outside/secret.txt", "is outside the workspace"},
		{"absolute outside", "/etc/passwd", "is outside the workspace"},
		{"absolute to the outside dir", filepath.Join(s.outside, "secret.txt"), "is outside the workspace"},
		{"symlink to an outside file", "link-to-secret", "through a symbolic link"},
		{"symlink to an outside dir", "link-to-outside/secret.txt", "through a symbolic link"},
		{"new file under a symlinked outside dir", "link-to-outside/new.txt", "through a symbolic link"},
		{"dangling symlink", "dangling", "cannot be resolved"},
		{"NUL byte", "src/main.go\x00.txt", "contains a NUL byte"},
		{"state folder", ".pixir/sessions/x.ndjson", "Pixir's state folder"},
		{"state folder itself", ".pixir", "Pixir's state folder"},
		{"state folder by a detour", "src/../.pixir/sessions", "Pixir's state folder"},
	}
	for _, tt := range denied {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.ws.Resolve(tt.path)
			var f *tools.Failure
			require.ErrorAs(t, err, &f)
			require.Equal(t, tools.ErrPermissionDenied, f.Kind)
			require.Contains(t, f.Message, tt.msg)
		})
	}
	allowed := []struct{ name, path, want string }{
		{"relative", "src/main.go", "src/main.go"},
		{"absolute inside", filepath.Join(s.root, "src", "main.go"), "src/main.go"},
		{"symlink that stays inside", "link-to-src/main.go", "src/main.go"},
		{"a file not created yet", "src/new/deep.go", "src/new/deep.go"},
		{"dot-dot that stays inside", "src/../src/main.go", "src/main.go"},
		{"odd unicode stays a name", "src/\u202etxt.og", "src/\u202etxt.og"},
		{"fullwidth solidus is not a separator", "..\uff0fsecret", "..\uff0fsecret"},
		{"combining characters", "src/e\u0301.go", "src/e\u0301.go"},
		{"the root itself", ".", ""},
	}
	for _, tt := range allowed {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ws.Resolve(tt.path)
			require.NoError(t, err)
			require.Equal(t, filepath.Join(s.root, tt.want), got)
		})
	}
	_, err := s.ws.Resolve("")
	require.Error(t, err)
	s.untouched(t)
}

func TestFilesStayInsideEvenWhenALinkIsSwappedInAfterTheCheck(t *testing.T) {
	s := newConfinedWorkspace(t)
	files := s.ws.Files()
	ctx := context.Background()

	// The check passes while "box" is a real directory…
	require.NoError(t, os.Mkdir(filepath.Join(s.root, "box"), 0o755))
	target, err := s.ws.Resolve("box/out.txt")
	require.NoError(t, err)
	readTarget, err := s.ws.Resolve("box/secret.txt")
	require.NoError(t, err)
	// …then it is swapped for a link to the outside before the write.
	require.NoError(t, os.Remove(filepath.Join(s.root, "box")))
	require.NoError(t, os.Symlink(s.outside, filepath.Join(s.root, "box")))

	err = files.WriteFile(ctx, target, []byte("pwned"))
	var f *tools.Failure
	require.ErrorAs(t, err, &f)
	require.Equal(t, tools.ErrPermissionDenied, f.Kind)
	_, err = files.Open(ctx, readTarget)
	require.ErrorAs(t, err, &f)
	require.Equal(t, tools.ErrPermissionDenied, f.Kind)
	s.untouched(t)

	// A file swapped for a link to the outside is refused as well.
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "plain.txt"), []byte("x"), 0o644))
	plain, err := s.ws.Resolve("plain.txt")
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(s.root, "plain.txt")))
	require.NoError(t, os.Symlink(filepath.Join(s.outside, "secret.txt"), filepath.Join(s.root, "plain.txt")))
	_, err = files.Open(ctx, plain)
	require.Error(t, err)
	require.Error(t, files.WriteFile(ctx, plain, []byte("pwned")))
	s.untouched(t)
}

func TestFilesReadWriteInside(t *testing.T) {
	s := newConfinedWorkspace(t)
	files := s.ws.Files()
	ctx := context.Background()
	p, err := s.ws.Resolve("a/b/c.txt")
	require.NoError(t, err)
	require.NoError(t, files.WriteFile(ctx, p, []byte("hi")))
	r, err := files.Open(ctx, p)
	require.NoError(t, err)
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Equal(t, "hi", string(data))

	missing, err := s.ws.Resolve("nope.txt")
	require.NoError(t, err)
	_, err = files.Open(ctx, missing)
	require.True(t, errors.Is(err, fs.ErrNotExist), "missing files match fs.ErrNotExist: %v", err)

	dir, err := s.ws.Resolve("src")
	require.NoError(t, err)
	_, err = files.Open(ctx, dir)
	require.ErrorIs(t, err, tools.ErrIsDir)
	var f *tools.Failure

	// Pixir's own state is refused even with a path that skipped Resolve.
	err = files.WriteFile(ctx, filepath.Join(s.root, StateDir, "sessions", "x.ndjson"), []byte("x"))
	require.ErrorAs(t, err, &f)
	require.Equal(t, tools.ErrPermissionDenied, f.Kind)
	err = files.WriteFile(ctx, filepath.Join(s.outside, "x"), []byte("x"))
	require.ErrorAs(t, err, &f)
	s.untouched(t)
}

// FuzzResolve: whatever the path, Resolve either refuses it or returns a
// path inside the workspace and outside its state folder, and using that
// path never touches anything outside.
func FuzzResolve(f *testing.F) {
	for _, seed := range []string{
		"a.txt", "../x", "/etc/passwd", "link-to-outside/secret.txt", "link-to-src/../../outside",
		"src/./../src//main.go", ".pixir/x", "dangling/x", "a\x00b", "\u202e", "..\\..\\x", "~/x", "src/..",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, path string) {
		s := newConfinedWorkspace(t)
		got, err := s.ws.Resolve(path)
		if err != nil {
			return
		}
		require.True(t, within(s.root, got), "%q resolved to %q, outside %q", path, got, s.root)
		rel, _ := filepath.Rel(s.root, got)
		require.False(t, rel == StateDir || strings.HasPrefix(rel, StateDir+"/"), "%q reached the state folder", path)
		_ = s.ws.Files().WriteFile(context.Background(), got, []byte("x"))
		s.untouched(t)
	})
}

// logSecret is what a session Log holds in the attacks below: a tool must
// never show it.
const logSecret = "LOG-SECRET"

func TestFilesRefuseAHardLinkToALog(t *testing.T) {
	s := newConfinedWorkspace(t)
	logFile := filepath.Join(s.root, StateDir, "sessions", "s.ndjson")
	require.NoError(t, os.WriteFile(logFile, []byte(logSecret+"\n"), 0o644))
	require.NoError(t, os.Link(logFile, filepath.Join(s.root, "src", "copy.ndjson")))
	abs, err := s.ws.Resolve("src/copy.ndjson")
	require.NoError(t, err, "the path itself is inside the workspace")

	_, err = s.ws.Files().Open(t.Context(), abs)
	var f *tools.Failure
	require.ErrorAs(t, err, &f)
	require.Equal(t, tools.ErrPermissionDenied, f.Kind)
	require.Contains(t, f.Message, "hard link")

	// A write replaces the workspace's name; the Log keeps its content.
	require.NoError(t, s.ws.Files().WriteFile(t.Context(), abs, []byte("rewritten\n")))
	b, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Equal(t, logSecret+"\n", string(b))
	r, err := s.ws.Files().Open(t.Context(), abs)
	require.NoError(t, err)
	got, _ := io.ReadAll(r)
	r.Close()
	require.Equal(t, "rewritten\n", string(got))
}

// A path through a file (src/main.go/x) is a wrong path, said as not_found
// with what is wrong: it was permission_denied "cannot be resolved: not a
// directory", as if the workspace had refused it.
func TestResolveSaysAPathThroughAFileIsWrong(t *testing.T) {
	s := newConfinedWorkspace(t)
	for _, p := range []string{"src/main.go/x", "src/main.go/x/y.go"} {
		_, err := s.ws.Resolve(p)
		var f *tools.Failure
		require.ErrorAs(t, err, &f, p)
		require.Equal(t, tools.ErrNotFound, f.Kind, p)
		require.Equal(t, "a parent of "+p+" is a file, not a directory; check the path, or find the file with glob", f.Message)
	}
}

// A name written in one Unicode form finds the file named in the other
// (macOS writes names decomposed, NFD; a model writes them composed, NFC):
// "there is no file at café.txt" beside café.txt left the model no way on,
// and a write made a second café.txt. Only one such name is taken, and a
// link it is still leads nowhere outside.
func TestResolveFindsANameInTheOtherUnicodeForm(t *testing.T) {
	s := newConfinedWorkspace(t)
	const nfc, nfd = "caf\u00e9", "cafe\u0301"
	require.NoError(t, os.MkdirAll(filepath.Join(s.root, "r\u00e9sum\u00e9s"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "r\u00e9sum\u00e9s", nfd+".txt"), []byte("x\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(s.root, "re\u0301sume\u0301s-nfd"), 0o755))
	require.NoError(t, os.Symlink(s.outside, filepath.Join(s.root, "dehors-"+nfd)))

	tests := []struct{ path, want string }{
		{"r\u00e9sum\u00e9s/" + nfc + ".txt", "r\u00e9sum\u00e9s/" + nfd + ".txt"},
		{"re\u0301sume\u0301s/" + nfc + ".txt", "r\u00e9sum\u00e9s/" + nfd + ".txt"},
		{"r\u00e9sum\u00e9s-nfd/new.txt", "re\u0301sume\u0301s-nfd/new.txt"},
		{"r\u00e9sum\u00e9s/" + nfc + "-new.txt", "r\u00e9sum\u00e9s/" + nfc + "-new.txt"},
		{"src/main.go", "src/main.go"},
	}
	for _, tt := range tests {
		got, err := s.ws.Resolve(tt.path)
		require.NoError(t, err, tt.path)
		require.Equal(t, filepath.Join(s.root, tt.want), got, tt.path)
	}
	_, err := s.ws.Resolve("dehors-" + nfc + "/secret.txt")
	require.ErrorContains(t, err, "leads outside the workspace")

	// Two names of the same text (the accents in either order): neither
	// is taken for the third form.
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "a\u0323\u0301.txt"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(s.root, "a\u0301\u0323.txt"), nil, 0o644))
	got, err := s.ws.Resolve("\u1ea1\u0301.txt")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(s.root, "\u1ea1\u0301.txt"), got)
}

// A file its owner made read-only is not replaced by write or edit: the
// rename that replaces a file needs no write permission on it, so it was
// overwritten (keeping its 0444 mode) where the user's own shell would
// have been refused. A file with any write bit is replaced, keeping its
// mode.
func TestFilesLeaveAReadOnlyFileAsItIs(t *testing.T) {
	s := newConfinedWorkspace(t)
	ro, rw := filepath.Join(s.root, "src", "generated.go"), filepath.Join(s.root, "src", "owner-only.go")
	require.NoError(t, os.WriteFile(ro, []byte("keep\n"), 0o444))
	require.NoError(t, os.Chmod(ro, 0o444))
	require.NoError(t, os.WriteFile(rw, []byte("old\n"), 0o600))

	err := s.ws.Files().WriteFile(t.Context(), ro, []byte("clobbered\n"))
	var f *tools.Failure
	require.ErrorAs(t, err, &f)
	require.Equal(t, tools.ErrPermissionDenied, f.Kind)
	require.Equal(t, ro+" is read-only (no write permission for anyone), so it was left as it is; if it is meant to change, make it writable first with bash (chmod u+w)", f.Message)
	b, err := os.ReadFile(ro)
	require.NoError(t, err)
	require.Equal(t, "keep\n", string(b))

	require.NoError(t, s.ws.Files().WriteFile(t.Context(), rw, []byte("new\n")))
	info, err := os.Stat(rw)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// TestFilesRefuseALinkIntoStateSwappedInAfterTheCheck is the race made
// certain: the check passes while "a" is a directory; "a" becomes a link
// to .pixir/sessions before the use.
func TestFilesRefuseALinkIntoStateSwappedInAfterTheCheck(t *testing.T) {
	s := newConfinedWorkspace(t)
	sessions := filepath.Join(s.root, StateDir, "sessions")
	require.NoError(t, os.WriteFile(filepath.Join(sessions, "s.ndjson"), []byte(logSecret+"\n"), 0o644))
	dir := filepath.Join(s.root, "a")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	abs, err := s.ws.Resolve("a/s.ndjson")
	require.NoError(t, err)
	require.NoError(t, os.Remove(dir))
	// Relative, so that it stays inside the workspace: os.Root follows it.
	require.NoError(t, os.Symlink(filepath.Join(StateDir, "sessions"), dir))

	_, err = s.ws.Files().Open(t.Context(), abs)
	var f *tools.Failure
	require.ErrorAs(t, err, &f)
	require.Equal(t, tools.ErrPermissionDenied, f.Kind)
	require.Contains(t, f.Message, "symbolic link")
	require.Error(t, s.ws.Files().WriteFile(t.Context(), abs, []byte("pwned")))
	b, err := os.ReadFile(filepath.Join(sessions, "s.ndjson"))
	require.NoError(t, err)
	require.Equal(t, logSecret+"\n", string(b))
}

// TestSymlinkRaceNeverReachesTheLogs swaps a directory of the workspace
// with a symbolic link to .pixir/sessions while read and grep calls use a
// file in it: between the check (Resolve) and the use (the open), the
// link is there about half the time, and no call may read the Log.
func TestSymlinkRaceNeverReachesTheLogs(t *testing.T) {
	s := newConfinedWorkspace(t)
	sessions := filepath.Join(s.root, StateDir, "sessions")
	require.NoError(t, os.WriteFile(filepath.Join(sessions, "s.ndjson"), []byte(logSecret+"\n"), 0o644))
	dir := filepath.Join(s.root, "a")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s.ndjson"), []byte("plain\n"), 0o644))

	stop := make(chan struct{})
	swapped := make(chan int)
	go func() {
		n := 0
		defer func() { swapped <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if os.Rename(dir, dir+".real") == nil && os.Symlink(filepath.Join(StateDir, "sessions"), dir) == nil {
				n++
				_ = os.Remove(dir)
				_ = os.Rename(dir+".real", dir)
			}
		}
	}()
	env := tools.Env{SessionID: "s", Workspace: s.ws, Files: s.ws.Files()}
	read, grep := tools.ReadTool(), tools.GrepTool()
	leaks := 0
	for i := range 2000 {
		res := read.Run(t.Context(), env, []byte(`{"path":"a/s.ndjson"}`))
		if strings.Contains(modelText(res), logSecret) {
			leaks++
		}
		if i%4 == 0 {
			res = grep.Run(t.Context(), env, []byte(`{"pattern":"SECRET","path":"a"}`))
			if strings.Contains(modelText(res), logSecret) {
				leaks++
			}
		}
	}
	close(stop)
	require.Positive(t, <-swapped, "the race never ran")
	require.Zero(t, leaks, "a call read the Log through a swapped-in link")
	b, err := os.ReadFile(filepath.Join(sessions, "s.ndjson"))
	require.NoError(t, err)
	require.Equal(t, logSecret+"\n", string(b))
}

func TestStateDirIsIgnoredByGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return string(out)
	}
	git("init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644))
	rt := New(Config{Home: t.TempDir(), Provider: childProvider{}, Model: "m"})
	defer rt.Close()
	s, err := rt.NewSession(ws)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(ws, StateDir, "subagents", "sa-1", "workspace"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, StateDir, "subagents", "sa-1", "workspace", "x"), []byte("x"), 0o644))
	// A project agent file is the user's: git still sees it.
	require.NoError(t, os.MkdirAll(filepath.Join(ws, StateDir, "agents"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, StateDir, "agents", "reviewer.toml"), []byte("name = 'r'\n"), 0o644))
	require.FileExists(t, filepath.Join(ws, StateDir, "sessions", s.ID()+".ndjson"))
	git("add", "-A")
	staged := strings.Fields(git("diff", "--cached", "--name-only"))
	require.ElementsMatch(t, []string{"main.go", ".pixir/agents/reviewer.toml"}, staged)

	// A .gitignore of the user's own is kept as it is.
	own := []byte("sessions/\n")
	require.NoError(t, os.WriteFile(filepath.Join(ws, StateDir, ".gitignore"), own, 0o644))
	require.NoError(t, EnsureStateDir(ws))
	got, err := os.ReadFile(filepath.Join(ws, StateDir, ".gitignore"))
	require.NoError(t, err)
	require.Equal(t, own, got)
}
