package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/sandbox/sandboxtest"
)

// needLandlock skips a test on a kernel without Landlock: what it checks
// cannot hold there, and Support says so.
func needLandlock(t testing.TB) {
	t.Helper()
	if sup := (*Sandbox)(nil).Support(); !sup.Landlock {
		t.Skip("no Landlock here:", sup.LandlockProblem)
	}
}

// sh runs a shell script under p and returns its output and exit code.
func sh(t *testing.T, s *Sandbox, p Policy, dir, script string) (string, int, Outcome) {
	t.Helper()
	return shCtx(t.Context(), t, s, p, dir, script)
}

func shCtx(ctx context.Context, t *testing.T, s *Sandbox, p Policy, dir, script string) (string, int, Outcome) {
	t.Helper()
	var out bytes.Buffer
	o, err := s.Run(ctx, Command{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Dir: dir, Output: &out, Policy: p})
	require.NotNil(t, o.State, "not started: %v", err)
	return out.String(), o.State.ExitCode(), o
}

func TestConfinedWritesOnlyWhereAllowed(t *testing.T) {
	needLandlock(t)
	ws := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "docs"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "src", "a.go"), []byte("package a\n"), 0o644))
	outside := t.TempDir()

	tests := []struct {
		name   string
		policy Policy
		script string
		ok     bool
	}{
		{"read-only reads", Policy{Confine: true}, "cat src/a.go", true},
		{"read-only cannot create", Policy{Confine: true}, "echo x > new.txt", false},
		{"read-only cannot change", Policy{Confine: true}, "echo x >> src/a.go", false},
		{"read-only cannot remove", Policy{Confine: true}, "rm src/a.go", false},
		{"read-only writes its TMPDIR", Policy{Confine: true}, `echo x > "$TMPDIR/t" && cat "$TMPDIR/t"`, true},
		{"read-only writes /dev/null", Policy{Confine: true}, "echo x > /dev/null", true},
		{"writer writes its root", Policy{Confine: true, Writable: []string{filepath.Join(ws, "docs")}}, "echo x > docs/new.md", true},
		{"writer not elsewhere", Policy{Confine: true, Writable: []string{filepath.Join(ws, "docs")}}, "echo x > src/new.go", false},
		{"writer not outside", Policy{Confine: true, Writable: []string{filepath.Join(ws, "docs")}}, "echo x > " + outside + "/o", false},
		{"writer cannot move a file out", Policy{Confine: true, Writable: []string{filepath.Join(ws, "docs")}}, "mv src/a.go docs/a.go", false},
		{"unconfined writes anywhere", Policy{}, "echo x > " + outside + "/o", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code, o := sh(t, nil, tt.policy, ws, tt.script)
			require.Equal(t, tt.ok, code == 0, out)
			require.Equal(t, tt.policy.Confine, o.Confined)
		})
	}
	_, err := os.Stat(filepath.Join(ws, "new.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)
	b, err := os.ReadFile(filepath.Join(ws, "src", "a.go"))
	require.NoError(t, err)
	require.Equal(t, "package a\n", string(b))
}

// A writable path inside Workspace is opened only as reached from it with
// no symbolic link on the way: one a command made a link since (to a
// folder outside) is not opened, whether it is the root itself, a folder
// on the way to it, or an entry of a folder opened up around a protected
// path; outside Workspace (a TMPDIR reached through a link) a link is
// followed as before.
func TestWritablePathsInTheWorkspaceAreNeverOpenedThroughALink(t *testing.T) {
	needLandlock(t)
	ws, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{".git", "a", "real/b"} {
		require.NoError(t, os.MkdirAll(filepath.Join(ws, d), 0o755))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "b"), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "docs")))  // a root that is a link
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "via")))   // a folder on the way to a root
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "entry"))) // an entry of an opened-up root
	for _, tc := range []struct {
		name     string
		writable []string
		script   string
		ok       bool
	}{
		{"a root that is a link", []string{filepath.Join(ws, "docs")}, "echo x > docs/o", false},
		{"a link on the way", []string{filepath.Join(ws, "via", "b")}, "echo x > via/b/o", false},
		{"an entry that is a link", []string{ws}, "echo x > entry/o", false},
		{"the real folders still", []string{ws, filepath.Join(ws, "real", "b")}, "echo x > a/o && echo x > real/b/o", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Confine: true, Writable: tc.writable, Protected: []string{filepath.Join(ws, ".git")}, Workspace: ws}
			out, code, _ := sh(t, nil, p, ws, tc.script)
			require.Equal(t, tc.ok, code == 0, out)
		})
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was written outside the workspace (its b/ only)")
	// Without Workspace the same root is opened through its link: the
	// policy says which links are the workspace's own.
	out, code, _ := sh(t, nil, Policy{Confine: true, Writable: []string{filepath.Join(ws, "docs")}}, ws, "echo x > docs/o")
	require.Equal(t, 0, code, out)
}

func TestProtectedPathsStayReadOnly(t *testing.T) {
	needLandlock(t)
	ws := t.TempDir()
	for _, d := range []string{".git", ".pixir/sessions", "src"} {
		require.NoError(t, os.MkdirAll(filepath.Join(ws, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".pixir", "sessions", "s.ndjson"), []byte("{}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README"), []byte("r\n"), 0o644))
	p := Policy{Confine: true, Writable: []string{ws}, Protected: []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".pixir")}}

	for script, ok := range map[string]bool{
		"echo x > src/new.go":                 true,
		"echo x >> README":                    true,
		"mkdir src/sub && touch src/sub/f":    true,
		"echo x >> .pixir/sessions/s.ndjson":  false,
		"touch .git/HEAD":                     false,
		"rm -rf .pixir":                       false,
		"mv .git gone":                        false,
		"echo x > NEWTOP":                     false, // a new entry at the top: documented limit
		"ln -s .pixir/sessions src/l && true": true,
	} {
		out, got, _ := sh(t, nil, p, ws, script)
		require.Equal(t, ok, got == 0, "%s: %s", script, out)
	}
	b, err := os.ReadFile(filepath.Join(ws, ".pixir", "sessions", "s.ndjson"))
	require.NoError(t, err)
	require.Equal(t, "{}\n", string(b))
}

func TestDenyNetworkRefusesLoopback(t *testing.T) {
	needLandlock(t)
	if !(*Sandbox)(nil).Support().LandlockNetwork {
		t.Skip("this Landlock ABI cannot deny TCP")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	bash := "/bin/bash"
	if _, err := os.Stat(bash); err != nil {
		t.Skip("needs bash for /dev/tcp")
	}
	connect := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port)
	run := func(p Policy) int {
		var out bytes.Buffer
		o, err := (*Sandbox)(nil).Run(t.Context(), Command{Path: bash, Args: []string{"bash", "-c", connect}, Dir: t.TempDir(), Output: &out, Policy: p})
		require.NotNil(t, o.State, "%v", err)
		return o.State.ExitCode()
	}
	require.Equal(t, 0, run(Policy{}), "the listener is reachable without the sandbox")
	require.NotEqual(t, 0, run(Policy{DenyNetwork: true}))
	require.NotEqual(t, 0, run(Policy{Confine: true, DenyNetwork: true}))
}

func TestEverythingEndsWithTheCommand(t *testing.T) {
	if sup := (*Sandbox)(nil).Support(); sup.Contain != "pid-namespace" {
		t.Skip("no PID namespaces here:", sup.ContainProblem)
	}
	marker := sandboxtest.Marker(1)
	script := fmt.Sprintf("setsid sleep %s </dev/null >/dev/null 2>&1 & (sleep %s </dev/null >/dev/null 2>&1 &) ; sleep 0.1; echo started", marker, marker)
	out, code, _ := sh(t, nil, Policy{}, t.TempDir(), script)
	require.Equal(t, 0, code, out)
	require.Empty(t, sandboxtest.Running("sleep "+marker), "a background or setsid child outlived its command")
}

func TestCancelEndsEverything(t *testing.T) {
	marker := sandboxtest.Marker(2)
	ctx, cancel := context.WithCancel(t.Context())
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	require.NoError(t, syscall.Mkfifo(ready, 0o600))
	done := make(chan struct{})
	go func() {
		defer close(done)
		shCtx(ctx, t, nil, Policy{}, dir, fmt.Sprintf("setsid sleep %s </dev/null >/dev/null 2>&1 & echo up > %s; sleep %s", marker, ready, marker))
	}()
	waitForFile(t, ready)
	require.NotEmpty(t, sandboxtest.Running("sleep "+marker))
	cancel()
	<-done
	if (*Sandbox)(nil).Support().Contain == "pid-namespace" {
		require.Empty(t, sandboxtest.Running("sleep "+marker))
	}
}

func TestEnvironmentIsAnAllowlist(t *testing.T) {
	base := []string{"PATH=/usr/bin:/bin", "HOME=/h", "OPENAI_API_KEY=sk-1", "ANTHROPIC_API_KEY=sk-2", "GITHUB_TOKEN=t",
		"GOFLAGS=-p=1", "GOOGLE_API_KEY=g", "MY_PROVIDER=k", "AWS_SECRET_ACCESS_KEY=a", "LC_ALL=C", "RANDOM_THING=x", "DB_PASSWORD=p"}
	s := New(Config{Env: []string{"GITHUB_TOKEN", "RANDOM_*"}}, "MY_PROVIDER").WithBaseEnv(base)
	out, code, _ := sh(t, s, Policy{Env: []string{"GIT_CEILING_DIRECTORIES=/x"}}, t.TempDir(), "env | sort")
	require.Equal(t, 0, code)
	got := strings.Fields(out)
	for _, want := range []string{"PATH=/usr/bin:/bin", "HOME=/h", "GOFLAGS=-p=1", "LC_ALL=C", "GITHUB_TOKEN=t", "RANDOM_THING=x", "GIT_CEILING_DIRECTORIES=/x"} {
		require.Contains(t, got, want)
	}
	for _, leaked := range []string{"sk-1", "sk-2", "=g", "MY_PROVIDER", "AWS_SECRET", "DB_PASSWORD"} {
		require.NotContains(t, out, leaked)
	}
}

func TestFilterEnv(t *testing.T) {
	tests := []struct {
		allow, deny []string
		in, want    []string
	}{
		{[]string{"PATH"}, nil, []string{"PATH=/b", "X=1"}, []string{"PATH=/b"}},
		{[]string{"GO*"}, nil, []string{"GOPATH=/g", "GOOGLE_API_KEY=k", "GOTOKEN=t"}, []string{"GOPATH=/g"}},
		{[]string{"SERVICE_TOKEN"}, nil, []string{"SERVICE_TOKEN=t"}, []string{"SERVICE_TOKEN=t"}},
		{[]string{"KEY_*"}, []string{"KEY_A"}, []string{"KEY_A=1", "KEY_B=2"}, []string{"KEY_B=2"}},
		{[]string{"*"}, nil, []string{"A=1", "B_SECRET=2", "=x", "broken"}, []string{"A=1"}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, FilterEnv(tt.in, tt.allow, tt.deny), "%v", tt)
	}
}

// waitForFile waits until the command writes a line into the FIFO at
// path: an event to await, not a time to guess.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path) // blocks until the command opens it to write
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Read(make([]byte, 1))
	require.NoError(t, err)
}

func TestExecuteAllowlist(t *testing.T) {
	needLandlock(t)
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644))
	allowed, missing := Programs(os.Getenv("PATH"), []string{"sh", "cat", "cp", "chmod", "no-such-program-here"})
	require.Equal(t, []string{"no-such-program-here"}, missing)
	p := Policy{Confine: true, Writable: []string{ws}, Execute: allowed}

	tests := []struct {
		name, script string
		ok           bool
	}{
		{"a listed program runs", "cat a.txt", true},
		{"an unlisted one does not", "id", false},
		{"nor by its full path", "$(command -v id)", false},
		{"a copy of an unlisted program in the write set does not run", `cp "$(command -v id)" ./myid && chmod +x ./myid && ./myid`, false},
		{"nor one in the private temporary folder", `cp "$(command -v id)" "$TMPDIR/id" && chmod +x "$TMPDIR/id" && "$TMPDIR/id"`, false},
		{"a script run by a listed shell runs listed programs", `printf 'cat a.txt\n' > s.sh && sh s.sh`, true},
		{"and only those", `printf 'id\n' > t.sh && sh t.sh`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code, o := sh(t, nil, p, ws, tt.script)
			require.True(t, o.Confined)
			require.Equal(t, tt.ok, code == 0, out)
			if !tt.ok {
				require.Contains(t, out, "ermission denied")
			}
		})
	}
	// Without a list, everything runs as before.
	out, code, _ := sh(t, nil, Policy{Confine: true, Writable: []string{ws}}, ws, "id")
	require.Equal(t, 0, code, out)
}

func TestPrograms(t *testing.T) {
	sh, err := filepath.EvalSymlinks("/bin/sh")
	require.NoError(t, err)
	files, missing := Programs("relative:"+filepath.Dir(sh), []string{filepath.Base(sh), "/no/such/file", "a/b"})
	require.Equal(t, []string{"/no/such/file", "a/b"}, missing)
	require.Equal(t, sh, files[0])
	if interp := interpreterOf(sh); interp != "" {
		require.Contains(t, files, interp, "the loader of a dynamically linked program")
	}

	dir := t.TempDir()
	script := filepath.Join(dir, "tool")
	require.NoError(t, os.WriteFile(script, []byte("#!"+sh+" -e\necho hi\n"), 0o755))
	files, missing = Programs(dir, []string{"tool"})
	require.Empty(t, missing)
	require.Equal(t, script, files[0])
	require.Contains(t, files, sh, "a script's interpreter")
	require.Empty(t, interpreterOf(filepath.Join(dir, "missing")))
}

// A confined command that may not write its Go build cache gets Pixir's,
// writable; one that may (listed in [sandbox] writable) keeps its own; an
// unconfined command and a sandbox without a cache of Pixir's change
// nothing.
func TestGoBuildCacheOfConfinedCommands(t *testing.T) {
	needLandlock(t)
	home, own := t.TempDir(), filepath.Join(t.TempDir(), "cache", "go-build")
	users := filepath.Join(home, ".cache", "go-build")
	require.NoError(t, os.MkdirAll(users, 0o755))
	base := []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	const script = `echo "$GOCACHE"; mktemp -p "${GOCACHE:-$HOME/.cache/go-build}" >/dev/null 2>&1 && echo writable || true`
	for _, tt := range []struct {
		name string
		s    *Sandbox
		p    Policy
		want string
	}{
		{"read-only gets Pixir's", New(Config{}).WithGoCache(own), Policy{Confine: true}, own + "\nwritable\n"},
		{"a writer beyond its cache too", New(Config{}).WithGoCache(own), Policy{Confine: true, Writable: []string{t.TempDir()}}, own + "\nwritable\n"},
		{"its own cache, when allowed", New(Config{Writable: []string{users}}).WithGoCache(own), Policy{Confine: true}, "\nwritable\n"},
		{"GOCACHE beneath a writable path", New(Config{}).WithGoCache(own), Policy{Confine: true, Writable: []string{home}, Env: []string{"GOCACHE=" + users}}, users + "\nwritable\n"},
		{"unconfined: as it was", New(Config{}).WithGoCache(own), Policy{}, "\nwritable\n"},
		{"no cache of Pixir's: as it was", New(Config{}), Policy{Confine: true}, "\n"},
		{"a project's own", New(Config{}).WithGoCache(own), Policy{Confine: true, Project: "/work/a"}, ProjectGoCache(own, "/work/a") + "\nwritable\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, code, _ := sh(t, tt.s.WithBaseEnv(base), tt.p, home, script)
			require.Equal(t, 0, code, out)
			require.Equal(t, tt.want, out)
		})
	}
}

func TestEachProjectHasItsOwnGoBuildCache(t *testing.T) {
	own := "/h/.pixir/cache/go-build"
	a, b := ProjectGoCache(own, "/work/a"), ProjectGoCache(own, "/work/b")
	require.NotEqual(t, a, b)
	require.Equal(t, own, filepath.Dir(a))
	require.Equal(t, a, ProjectGoCache(own, "/work/a/"), "one project, however its path is written")
	require.Equal(t, own, ProjectGoCache(own, ""))
	require.Empty(t, ProjectGoCache("", "/work/a"))
}

func TestGoBuildCacheFromTheEnvironment(t *testing.T) {
	for env, want := range map[string]string{
		"GOCACHE=/c/go HOME=/h":         "/c/go",
		"GOCACHE=off HOME=/h":           "",
		"GOCACHE=rel HOME=/h":           "",
		"XDG_CACHE_HOME=/x HOME=/h":     "/x/go-build",
		"HOME=/h":                       "/h/.cache/go-build",
		"HOME=/h GOCACHE=/a GOCACHE=/b": "/b",
		"PATH=/bin":                     "",
	} {
		require.Equal(t, want, goBuildCache(strings.Fields(env)), env)
	}
}
