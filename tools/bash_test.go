package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/sandbox"
	"github.com/pixir-go/pixir/sandbox/sandboxtest"
)

// The commands below sleep 30 s: a call that returns well before that has
// killed them. No tighter bound: the machines running the tests are busy.
const prompt = 20 * time.Second

func TestBash(t *testing.T) {
	env, root := newEnv(t)
	tests := []struct {
		name string
		args string
		want BashOutput
	}{
		{"output", `{"command":"echo hello"}`, BashOutput{ExitCode: 0, Output: "hello\n"}},
		{"non-zero exit is a result", `{"command":"echo oops >&2; exit 3"}`, BashOutput{ExitCode: 3, Output: "oops\n"}},
		{"stdout and stderr interleaved", `{"command":"echo out; echo err >&2; echo out2"}`, BashOutput{Output: "out\nerr\nout2\n"}},
		{"runs in the workspace root", `{"command":"pwd"}`, BashOutput{Output: root + "\n"}},
		{"stdin is empty", `{"command":"cat; echo done"}`, BashOutput{Output: "done\n"}},
		{"multi-line script", `{"command":"x=1\necho $((x+1))"}`, BashOutput{Output: "2\n"}},
		{"kill $$ does not stop the shell", `{"command":"kill -9 $$; echo still here"}`, BashOutput{Output: "still here\n"}},
		{"bash features", `{"command":"[[ a == a ]] && echo yes"}`, BashOutput{Output: "yes\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, requireOK[BashOutput](t, run(t, BashTool(), env, tt.args)))
		})
	}
}

func TestBashSignalExitCode(t *testing.T) {
	env, _ := newEnv(t)
	out := requireOK[BashOutput](t, run(t, BashTool(), env, `{"command":"sh -c 'kill -9 $$'; exit $?"}`))
	require.Equal(t, 137, out.ExitCode)
	require.Contains(t, out.Output, "Killed")
}

func TestBashFailures(t *testing.T) {
	env, _ := newEnv(t)
	tests := []struct {
		name string
		args string
		kind ErrorKind
		msg  string
	}{
		{"empty command", `{"command":"  \n"}`, ErrInvalidArgs, "command is empty; give the shell command to run"},
		{"timeout too long", `{"command":"true","timeout_ms":600001}`, ErrInvalidArgs, "/timeout_ms: maximum: got 600001, want 600000"},
		{"timeout far too long", `{"command":"true","timeout_ms":1000000}`, ErrInvalidArgs, "/timeout_ms: maximum: got 1000000, want 600000"},
		{"timeout zero", `{"command":"true","timeout_ms":0}`, ErrInvalidArgs, "/timeout_ms: minimum: got 0, want 1"},
		{"command not a string", `{"command":["ls"]}`, ErrInvalidArgs, "/command: got array, want string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireFailure(t, run(t, BashTool(), env, tt.args), tt.kind, tt.msg)
		})
	}
	requireFailure(t, run(t, BashTool(), Env{}, `{"command":"true"}`), ErrInternal,
		"this session has no workspace to run commands in; this is a bug in Pixir")
}

// A timeout must kill everything the command started, a background
// grandchild and a setsid one included, and return although they held the
// output pipe.
func TestBashTimeoutKillsEverything(t *testing.T) {
	env, _ := newEnv(t)
	marker := sandboxtest.Marker(11)
	start := time.Now()
	// The time limit leaves a busy machine time to print "started".
	res := run(t, BashTool(), env, `{"command":"echo started; sleep `+marker+` & setsid sleep `+marker+` & sleep `+marker+`","timeout_ms":2000}`)
	require.Less(t, time.Since(start), prompt)

	requireFailure(t, res, ErrTimeout, "the command did not finish within 2s and was "+killedWith()+"; the output so far is in details. "+
		"Raise timeout_ms (at most 600000) if it needs longer")
	require.Equal(t, BashOutput{ExitCode: -1, Output: "started\n", TimedOut: true}, res.Error.Details)
	requireGone(t, marker)
}

func TestBashCancel(t *testing.T) {
	env, root := newEnv(t)
	marker := sandboxtest.Marker(12)
	ctx, cancel := context.WithCancel(t.Context())
	// Cancel once the command has started its background child: an event,
	// not a guess at how long starting it takes.
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(filepath.Join(root, "children-started")); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	start := time.Now()
	res := BashTool().Run(ctx, env, json.RawMessage(`{"command":"echo started; setsid sleep `+marker+` & sleep `+marker+` & touch children-started; wait"}`))
	require.Less(t, time.Since(start), prompt)

	requireFailure(t, res, ErrCancelled, "the command was cancelled and "+killedWith()+"; the output so far is in details")
	require.Equal(t, BashOutput{ExitCode: -1, Output: "started\n"}, res.Error.Details)
	requireGone(t, marker)
}

// A command that exits while a background child still holds its output
// returns at once, and the child ends with it.
func TestBashBackgroundChildEndsWithTheCommand(t *testing.T) {
	env, _ := newEnv(t)
	marker := sandboxtest.Marker(13)
	start := time.Now()
	res := run(t, BashTool(), env, `{"command":"sleep `+marker+` & nohup sleep `+marker+` >/dev/null 2>&1 & echo done"}`)
	require.Less(t, time.Since(start), prompt)
	require.Equal(t, BashOutput{Output: "done\n"}, requireOK[BashOutput](t, res))
	if (*sandbox.Sandbox)(nil).Support().Contain == "pid-namespace" {
		require.Empty(t, sandboxtest.Running("sleep "+marker), "a background child outlived its command")
	} else {
		t.Cleanup(func() { killAll(marker) })
	}
}

func TestBashEnvironmentHasNoSecrets(t *testing.T) {
	env, _ := newEnv(t)
	env.Sandbox = sandbox.New(sandbox.Config{}, "CUSTOM_PROVIDER").WithBaseEnv([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=/home/u", "OPENAI_API_KEY=sk-open", "ANTHROPIC_API_KEY=sk-ant", "CUSTOM_PROVIDER=sk-custom", "GH_TOKEN=gh"})
	out := requireOK[BashOutput](t, run(t, BashTool(), env, `{"command":"env"}`))
	require.Contains(t, out.Output, "HOME=/home/u")
	for _, secret := range []string{"sk-open", "sk-ant", "sk-custom", "gh"} {
		require.NotContains(t, strings.Fields(out.Output), secret)
		require.NotContains(t, out.Output, "="+secret)
	}
}

func TestBashReadOnlySandbox(t *testing.T) {
	if !(*sandbox.Sandbox)(nil).Support().Landlock {
		t.Skip("no Landlock here")
	}
	env, root := newEnv(t)
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644))
	env.Commands = sandbox.Policy{Confine: true}
	env.Terminals = failingTerminals{t}
	out := requireOK[BashOutput](t, run(t, BashTool(), env, `{"command":"cat a.txt; echo t > \"$TMPDIR/t\" && echo tmp-ok; echo b > a.txt; touch new.txt"}`))
	require.Equal(t, "read-only", out.Sandbox)
	require.NotEqual(t, 0, out.ExitCode)
	require.Contains(t, out.Output, "a\ntmp-ok\n")
	require.Contains(t, out.Output, "Permission denied")
	b, err := os.ReadFile(filepath.Join(root, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "a\n", string(b))
	_, err = os.Stat(filepath.Join(root, "new.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A command that may write nothing is refused where no kernel sandbox can
// hold it so, even when its call was allowed: a session switched to
// read_only between the call's permission and the command's start ran it
// unconfined.
func TestBashReadOnlyWithoutLandlockIsRefused(t *testing.T) {
	env, root := newEnv(t)
	off := false
	env.Sandbox = sandbox.New(sandbox.Config{Landlock: &off})
	env.Commands = sandbox.Policy{Confine: true}
	res := run(t, BashTool(), env, `{"command":"touch ran.txt"}`)
	require.False(t, res.OK)
	require.Equal(t, ErrPermissionDenied, res.Error.Kind)
	require.Contains(t, res.Error.Message, "no kernel sandbox can hold it to read-only here (turned off by landlock = false")
	_, err := os.Stat(filepath.Join(root, "ran.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)

	env.Commands = sandbox.Policy{Confine: true, Writable: []string{root}}
	out := requireOK[BashOutput](t, run(t, BashTool(), env, `{"command":"touch ran.txt"}`))
	require.Equal(t, 0, out.ExitCode, "a writer's command runs unconfined without Landlock, and says so")
}

func TestBashSaysTheSandboxNotice(t *testing.T) {
	env, _ := newEnv(t)
	env.SandboxNotice = "Pixir: no kernel sandbox here."
	out := requireOK[BashOutput](t, run(t, BashTool(), env, `{"command":"echo hi"}`))
	require.Equal(t, "Pixir: no kernel sandbox here.", out.SandboxNotice)
	require.Equal(t, "[Pixir: no kernel sandbox here.]\nhi\n", out.Output, "the editor shows the output: the notice is there too")
}

// failingTerminals fails a test that runs a command in the editor's
// terminal: a sandboxed command must not go there.
type failingTerminals struct{ t *testing.T }

func (f failingTerminals) Run(context.Context, TerminalRequest) (TerminalResult, error) {
	f.t.Error("a sandboxed command was sent to the editor's terminal")
	return TerminalResult{}, errors.New("no terminal")
}

func killedWith() string {
	if (*sandbox.Sandbox)(nil).Support().Contain == "pid-namespace" {
		return "killed with every process it started"
	}
	return "killed with its process group"
}

func TestBashOutputIsBounded(t *testing.T) {
	env, _ := newEnv(t)
	out := requireOK[BashOutput](t, run(t, BashTool(), env, `{"command":"head -c 200000 /dev/zero | tr '\\0' a; echo tail"}`))
	require.Equal(t, strings.Repeat("a", bashOutputLimit)+
		"\n[… truncated 134469 bytes of 200005; narrow the request (line range, grep) to see more]", out.Output)
}

// Binary output (a cat of an image, a build artefact) is not shown: its
// 64 KiB head went to the model as text, every byte that is not UTF-8 a
// U+FFFD, about 60,000 tokens of noise and 240 KB of JSON in the Log and
// to the editor. The text before it stays; text that is merely not UTF-8
// in places (Latin-1) or holds NULs (find -print0) is text.
func TestBashSaysBinaryOutputInsteadOfShowingIt(t *testing.T) {
	env, _ := newEnv(t)
	// Fixed bytes that are not UTF-8: /dev/urandom's could start with what reads as a text line (it failed once so).
	out := requireOK[BashOutput](t, run(t, BashTool(), env, `{"command":"echo start; head -c 100000 /dev/zero | tr '\\0' '\\377'; echo"}`))
	require.Equal(t, "start\n[… binary output not shown (100001 bytes): pipe it through xxd | head, strings or file - to see a part of it]", out.Output)

	// An executable is mostly NULs, which are valid UTF-8.
	out = requireOK[BashOutput](t, run(t, BashTool(), env, `{"command":"echo start; head -c 100000 \"$(command -v sh)\""}`))
	require.Regexp(t, `^start\n\[… binary output not shown \(\d+ bytes\)`, out.Output)

	out = requireOK[BashOutput](t, run(t, BashTool(), env, `{"command":"printf 'caf\\351 cr\\350me\\n'; printf 'a\\0b\\0'"}`))
	require.Equal(t, "caf\xe9 cr\xe8me\na\x00b\x00", out.Output)
}

func TestBashDryRunDoesNotRun(t *testing.T) {
	env, root := newEnv(t)
	out := requireOK[DryRunOutput](t, dryRun(t, BashTool(), env, `{"command":"touch ran","timeout_ms":5000}`))
	require.True(t, out.DryRun)
	require.Contains(t, out.Summary, `would run "touch ran" with `)
	require.True(t, strings.HasSuffix(out.Summary, " in "+root+", with a 5s time limit"), out.Summary)
	_, err := os.Stat(filepath.Join(root, "ran"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestBashDescribe(t *testing.T) {
	long := strings.Repeat("é", 100)
	tests := []struct {
		command string
		title   string
	}{
		{"go test ./...", "Run go test ./..."},
		{"  make\n  make install", "Run make …"},
		{long, "Run " + strings.Repeat("é", 79) + "…"},
		{"", "bash"},
	}
	for _, tt := range tests {
		args, err := json.Marshal(BashArgs{Command: tt.command})
		require.NoError(t, err)
		// The title shows the first line; Command, for a permission
		// question, the whole command.
		require.Equal(t, Presentation{Title: tt.title, Kind: KindExecute, Command: strings.TrimSpace(tt.command)}, BashTool().Describe(args))
	}
}

// requireGone asserts no process with marker in its arguments is alive.
// In a PID namespace the kernel has ended them all before the command's
// end is reported; in the process-group fallback only the group is
// killed, so a setsid child may linger: it is killed here and the test
// says so.
func requireGone(t *testing.T, marker string) {
	t.Helper()
	if (*sandbox.Sandbox)(nil).Support().Contain == "pid-namespace" {
		require.Empty(t, sandboxtest.Running("sleep "+marker), "a process outlived its command")
		return
	}
	t.Cleanup(func() { killAll(marker) })
}

func killAll(marker string) {
	for _, pid := range sandboxtest.Running("sleep " + marker) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
