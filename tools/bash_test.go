package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
		{"killed by a signal", `{"command":"kill -9 $$"}`, BashOutput{ExitCode: 137}},
		{"bash features", `{"command":"[[ a == a ]] && echo yes"}`, BashOutput{Output: "yes\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, requireOK[BashOutput](t, run(t, BashTool(), env, tt.args)))
		})
	}
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

// A timeout must kill the whole process group, a background grandchild
// included, and return although that grandchild held the output pipe.
func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	env, root := newEnv(t)
	start := time.Now()
	// The time limit leaves a busy machine time to print "started".
	res := run(t, BashTool(), env, `{"command":"echo started; sleep 30 & echo $! > bg.pid; sleep 30","timeout_ms":2000}`)
	require.Less(t, time.Since(start), prompt)

	requireFailure(t, res, ErrTimeout, "the command did not finish within 2s and was killed with every process it started; the output so far is in details. "+
		"Raise timeout_ms (at most 600000) if it needs longer, or run a server or watcher in the background with its output redirected to a file")
	require.Equal(t, BashOutput{ExitCode: -1, Output: "started\n", TimedOut: true}, res.Error.Details)
	requireGone(t, readPID(t, filepath.Join(root, "bg.pid")))
}

func TestBashCancel(t *testing.T) {
	env, root := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	// Cancel once the command has started its background child: an event,
	// not a guess at how long starting it takes.
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(filepath.Join(root, "bg.pid")); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	start := time.Now()
	res := BashTool().Run(ctx, env, json.RawMessage(`{"command":"echo started; sleep 30 & echo $! > bg.pid; wait"}`))
	require.Less(t, time.Since(start), prompt)

	requireFailure(t, res, ErrCancelled, "the command was cancelled and killed with every process it started; the output so far is in details")
	require.Equal(t, BashOutput{ExitCode: -1, Output: "started\n"}, res.Error.Details)
	requireGone(t, readPID(t, filepath.Join(root, "bg.pid")))
}

// A command that exits while a background child still holds its output
// must not hang the call until the child ends.
func TestBashReturnsWhileBackgroundChildHoldsPipe(t *testing.T) {
	env, root := newEnv(t)
	start := time.Now()
	res := run(t, BashTool(), env, `{"command":"sleep 30 & echo $! > bg.pid; echo done"}`)
	require.Less(t, time.Since(start), prompt)
	pid := readPID(t, filepath.Join(root, "bg.pid"))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	require.Equal(t, BashOutput{Output: "done\n"}, requireOK[BashOutput](t, res))
}

func TestBashOutputIsBounded(t *testing.T) {
	env, _ := newEnv(t)
	out := requireOK[BashOutput](t, run(t, BashTool(), env, `{"command":"head -c 200000 /dev/zero | tr '\\0' a; echo tail"}`))
	require.Equal(t, strings.Repeat("a", bashOutputLimit)+
		"\n[… truncated 134469 bytes of 200005; narrow the request (line range, grep) to see more]", out.Output)
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
		require.Equal(t, Presentation{Title: tt.title, Kind: KindExecute}, BashTool().Describe(args))
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// requireGone waits for pid to be dead. A killed orphan may linger as a
// zombie until init reaps it, so a zombie counts as dead. It polls (the
// orphan is not our child to wait for), for less than the 30 s its sleep
// would last by itself.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	for start := time.Now(); time.Since(start) < prompt; time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return
			}
			continue
		}
		// The state follows the parenthesised command name.
		if _, rest, _ := strings.Cut(string(stat), ") "); strings.HasPrefix(rest, "Z") {
			return
		}
	}
	t.Fatalf("process %d outlived its command", pid)
}
