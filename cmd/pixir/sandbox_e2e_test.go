package main

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/sandbox"
	"github.com/pixir-go/pixir/sandbox/sandboxtest"
	"github.com/pixir-go/pixir/tools"
)

// These tests drive the command sandbox (issue 15) through the built
// binary over real pipes, on the scripted provider and
// testdata/sandbox.toml.

// sandboxScript is testdata/sandbox.toml with this test's port, marker and
// FIFO filled in.
func sandboxScript(t *testing.T, port int, marker, fifo string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sandbox.toml"))
	require.NoError(t, err)
	return strings.NewReplacer("@PORT@", strconv.Itoa(port), "@MARKER@", marker, "@FIFO@", fifo).Replace(string(b))
}

func needLandlock(t *testing.T) {
	t.Helper()
	if sup := (*sandbox.Sandbox)(nil).Support(); !sup.Landlock || !sup.LandlockNetwork {
		t.Skip("this kernel has no Landlock with network rules:", sup.LandlockProblem)
	}
}

func needPIDNamespaces(t *testing.T) {
	t.Helper()
	if sup := (*sandbox.Sandbox)(nil).Check(t.Context()); sup.Contain != "pid-namespace" {
		t.Skip("commands cannot get PID namespaces here:", sup.ContainProblem)
	}
}

// toolResult is one tool_result event of a Log.
type toolResult struct {
	Name   string   `json:"name"`
	Result envelope `json:"result"`
}

func toolResultsOf(t *testing.T, events []logEvent) []toolResult {
	t.Helper()
	var out []toolResult
	for _, ev := range events {
		if ev.Type == "tool_result" {
			var r toolResult
			require.NoError(t, json.Unmarshal(ev.Data, &r))
			out = append(out, r)
		}
	}
	return out
}

func bashOutputOf(t *testing.T, r toolResult) tools.BashOutput {
	t.Helper()
	require.Equal(t, "bash", r.Name)
	require.True(t, r.Result.OK, "%+v", r.Result.Error)
	var out tools.BashOutput
	require.NoError(t, json.Unmarshal(r.Result.Output, &out))
	return out
}

// treeOf maps every file under root, .pixir/ aside, to its content.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == ".pixir" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			tree[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		tree[rel] = string(b)
		return err
	}))
	return tree
}

func TestReadOnlyStepRunsTestsButChangesNothing(t *testing.T) {
	needLandlock(t)
	e := newEnv(t, sandboxScript(t, 0, "", ""))
	for name, content := range map[string]string{"test.sh": "test -f src/a.go\n", "src/a.go": "package a\n", ".git/HEAD": "ref: refs/heads/main\n"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(e.ws, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(e.ws, name), []byte(content), 0o644))
	}
	before := treeOf(t, e.ws)
	a := e.start()
	a.initialize()
	s := &wfSession{t: t, e: e, a: a, sid: a.newSession(), id: 2}
	s.prompt("sbx review")

	out := outcomeOf(t, onlyResult(t, s.log()))
	step := stepOf(t, out, "review")
	results := toolResultsOf(t, childLog(t, e.ws, step))
	require.Len(t, results, 1)
	bash := bashOutputOf(t, results[0])
	require.Equal(t, "read-only", bash.Sandbox)
	require.Contains(t, bash.Output, "TESTS-PASSED")
	require.Contains(t, bash.Output, "TMP-OK")
	require.Contains(t, bash.Output, "Permission denied")
	require.Equal(t, before, treeOf(t, e.ws), "a read-only step changed the workspace")
}

func TestWriterStepWritesOnlyBeneathItsWriteSet(t *testing.T) {
	needLandlock(t)
	e := newEnv(t, sandboxScript(t, 0, "", ""))
	for name, content := range map[string]string{"src/a.go": "package a\n", ".git/HEAD": "ref: refs/heads/main\n"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(e.ws, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(e.ws, name), []byte(content), 0o644))
	}
	a := e.start()
	a.initialize()
	s := &wfSession{t: t, e: e, a: a, sid: a.newSession(), id: 2}
	s.prompt("sbx writer")

	step := stepOf(t, outcomeOf(t, onlyResult(t, s.log())), "docs")
	bash := bashOutputOf(t, toolResultsOf(t, childLog(t, e.ws, step))[0])
	require.Equal(t, "write-set", bash.Sandbox)
	require.Contains(t, bash.Output, "DOCS-OK")
	b, err := os.ReadFile(filepath.Join(e.ws, "docs", "guide.md"))
	require.NoError(t, err)
	require.Equal(t, "# Docs\n", string(b))
	for _, refused := range []string{"src/x.go", ".pixir/injected"} {
		_, err := os.Stat(filepath.Join(e.ws, refused))
		require.ErrorIs(t, err, fs.ErrNotExist, "%s was written outside the write set", refused)
	}
	head, err := os.ReadFile(filepath.Join(e.ws, ".git", "HEAD"))
	require.NoError(t, err)
	require.Equal(t, "ref: refs/heads/main\n", string(head))
}

func TestAnAgentWithoutNetworkCannotReachALoopbackListener(t *testing.T) {
	needLandlock(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	e := newEnv(t, sandboxScript(t, ln.Addr().(*net.TCPAddr).Port, "", ""))
	agentsDir := filepath.Join(e.ws, ".pixir", "agents")
	require.NoError(t, os.MkdirAll(agentsDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(agentsDir, "offline.toml"), []byte(
		"name = \"offline\"\ndescription = \"Works without the network.\"\ndeveloper_instructions = \"Do the task.\"\nnetwork = \"deny\"\n"), 0o644))
	a := e.start()
	a.initialize()
	s := &wfSession{t: t, e: e, a: a, sid: a.newSession(), id: 2}
	s.prompt("sbx network")

	out := outcomeOf(t, onlyResult(t, s.log()))
	online := bashOutputOf(t, toolResultsOf(t, childLog(t, e.ws, stepOf(t, out, "online")))[0])
	require.Equal(t, "CONNECTED\n", online.Output, "the listener is reachable for an agent with the network")
	offline := bashOutputOf(t, toolResultsOf(t, childLog(t, e.ws, stepOf(t, out, "offline")))[0])
	require.Equal(t, "REFUSED\n", offline.Output)
}

// secrets are put in pixir's environment; no command may see them.
var secrets = map[string]string{
	"OPENAI_API_KEY": "sk-openai-e2e", "ANTHROPIC_API_KEY": "sk-ant-e2e", "GITHUB_TOKEN": "ghp-e2e", "DB_PASSWORD": "hunter2-e2e",
}

func TestBashEnvironmentShowsNoProviderKey(t *testing.T) {
	e := newEnv(t, sandboxScript(t, 0, "", ""))
	a := e.startWith(secrets)
	a.initialize()
	sid := a.newSession()
	m, _ := a.call(3, "session/prompt", promptParams(sid, "sbx env"))
	require.Equal(t, "end_turn", stopReason(t, m))
	bash := bashOutputOf(t, toolResultsOf(t, readLog(t, e.ws, sid))[0])
	require.Contains(t, bash.Output, "PATH=")
	for name, value := range secrets {
		require.NotContains(t, bash.Output, value, "%s reached the command", name)
	}
}

func TestEveryProcessOfACommandEndsWithIt(t *testing.T) {
	needPIDNamespaces(t)
	marker := sandboxtest.Marker(21)
	e := newEnv(t, sandboxScript(t, 0, marker, ""))
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, _ := a.call(3, "session/prompt", promptParams(sid, "sbx background"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Equal(t, "started\n", bashOutputOf(t, toolResultsOf(t, readLog(t, e.ws, sid))[0]).Output)
	require.Empty(t, sandboxtest.Running("sleep "+marker), "a nohup setsid job outlived its command")
}

// hangingCommand starts pixir on "sbx hang" and returns once the command's
// processes are up, with their pids.
func hangingCommand(t *testing.T) (*env, *agent, string, string, []int) {
	t.Helper()
	marker := sandboxtest.Marker(22)
	fifo := filepath.Join(t.TempDir(), "up")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	e := newEnv(t, sandboxScript(t, 0, marker, fifo))
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "sbx hang")})
	awaitFIFOLine(t, a, fifo, "3")
	// The FIFO says the shell started its children; each becomes "sleep
	// MARKER" once it has exec'd, which nothing outside can await: look
	// until all three have (the test's timeout bounds it).
	var pids []int
	for pids = sandboxtest.Running("sleep " + marker); len(pids) < 3; pids = sandboxtest.Running("sleep " + marker) {
		require.NoError(t, t.Context().Err())
		time.Sleep(5 * time.Millisecond)
	}
	require.Len(t, pids, 3, "the setsid child, the double-forked child and the foreground sleep")
	return e, a, sid, marker, pids
}

// awaitFIFOLine returns once a command of a's turn (the prompt with
// request id promptID) has written a line to fifo. Should the turn end, or
// pixir, before the command writes, it fails the test with what pixir said
// instead of waiting for ever: a blocking open of the FIFO waited until
// the command opened it, so a command that never started (seen once, in a
// whole-suite run at load 30–45) hung the test to go test's timeout with
// nothing said. Opened read-write, the FIFO never waits for a writer, and
// closing it ends the read.
func awaitFIFOLine(t *testing.T, a *agent, fifo, promptID string) {
	t.Helper()
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	read := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(f).ReadString('\n')
		read <- err
	}()
	var seen []string // what pixir wrote meanwhile, for the failure
	for {
		select {
		case err := <-read:
			require.NoError(t, err)
			return
		case line, ok := <-a.lines:
			if !ok {
				f.Close()
				t.Fatalf("pixir ended before the command wrote to %s; it wrote:\n%s\nstderr:\n%s", fifo, strings.Join(seen, ""), a.stderr)
			}
			seen = append(seen, line)
			var m message
			if json.Unmarshal([]byte(line), &m) == nil && string(m.ID) == promptID {
				f.Close()
				t.Fatalf("the turn ended before the command wrote to %s; pixir wrote:\n%s\nstderr:\n%s", fifo, strings.Join(seen, ""), a.stderr)
			}
		}
	}
}

func TestCancelEndsEveryProcessOfTheCommand(t *testing.T) {
	needPIDNamespaces(t)
	_, a, sid, marker, _ := hangingCommand(t)
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	m, _ := a.reply("3")
	require.Equal(t, "cancelled", stopReason(t, m))
	// The command's end was reported after its namespace's init was
	// reaped, which the kernel does only once everything in it is gone.
	require.Empty(t, sandboxtest.Running("sleep "+marker), "a process outlived the cancel")
}

func TestKillingPixirEndsEveryProcessOfItsCommands(t *testing.T) {
	needPIDNamespaces(t)
	_, a, _, marker, pids := hangingCommand(t)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	_ = a.cmd.Wait()
	require.NoError(t, sandboxtest.AwaitExit(pids))
	require.Empty(t, sandboxtest.Running("sleep "+marker), "a process outlived pixir")
}

func TestHardLinkedLogIsNotReadOrWrittenByFileTools(t *testing.T) {
	e := newEnv(t, sandboxScript(t, 0, "", ""))
	a := e.start()
	a.initialize()
	sid := a.newSession()
	logPath := filepath.Join(e.ws, ".pixir", "sessions", sid+".ndjson")
	require.NoError(t, os.Link(logPath, filepath.Join(e.ws, "leak.ndjson")))
	m, _ := a.call(3, "session/prompt", promptParams(sid, "sbx hardlink"))
	require.Equal(t, "end_turn", stopReason(t, m))

	results := toolResultsOf(t, readLog(t, e.ws, sid))
	require.Len(t, results, 3)
	read, grep, write := results[0], results[1], results[2]
	require.False(t, read.Result.OK)
	require.Equal(t, tools.ErrPermissionDenied, read.Result.Error.Kind)
	require.Contains(t, read.Result.Error.Message, "hard link")
	require.NotContains(t, string(grep.Result.Output), "leak.ndjson", "grep read the Log through the hard link")
	// write reads the file first, for its diff: refused the same way.
	require.False(t, write.Result.OK)
	require.Equal(t, tools.ErrPermissionDenied, write.Result.Error.Kind)
	// The Log is intact: it still reads as this session's events.
	events := readLog(t, e.ws, sid)
	require.Equal(t, "user_message", events[0].Type)
	require.NotContains(t, eventTypes(events), "overwritten")
}

func TestWithoutLandlockReadOnlyRefusesCommandsAndSaysWhyOnce(t *testing.T) {
	e := newEnv(t, sandboxScript(t, 0, "", ""))
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("[sandbox]\nlandlock = false\n"), 0o644))
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.result(3, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "read_only"}, nil)
	m, _ := a.call(4, "session/prompt", promptParams(sid, "sbx run"))
	require.Equal(t, "end_turn", stopReason(t, m))

	results := toolResultsOf(t, readLog(t, e.ws, sid))
	require.Len(t, results, 2)
	for _, r := range results {
		require.False(t, r.Result.OK)
		require.Equal(t, tools.ErrPermissionDenied, r.Result.Error.Kind)
		require.Contains(t, r.Result.Error.Message, "no kernel sandbox can hold them to read-only here (turned off by landlock = false")
	}
	_, err := os.Stat(filepath.Join(e.ws, "ran.txt"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	stderr := a.stderrAtExit() // its warning is written before the reply, and copied from the pipe after
	require.Equal(t, 1, strings.Count(stderr, "commands are not sandboxed"), "the log says it once per session:\n%s", stderr)
}

func TestReadOnlySessionRunsCommandsInTheSandbox(t *testing.T) {
	needLandlock(t)
	e := newEnv(t, sandboxScript(t, 0, "", ""))
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.result(3, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "read_only"}, nil)
	m, _ := a.call(4, "session/prompt", promptParams(sid, "sbx run"))
	require.Equal(t, "end_turn", stopReason(t, m))
	results := toolResultsOf(t, readLog(t, e.ws, sid))
	require.Len(t, results, 2)
	write := bashOutputOf(t, results[0])
	require.Equal(t, "read-only", write.Sandbox)
	require.NotEqual(t, 0, write.ExitCode)
	require.Contains(t, write.Output, "Permission denied")
	_, err := os.Stat(filepath.Join(e.ws, "ran.txt"))
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestWithoutLandlockAWritersCommandsSayTheyAreNotConfined(t *testing.T) {
	e := newEnv(t, sandboxScript(t, 0, "", ""))
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("[sandbox]\nlandlock = false\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(e.ws, "src"), 0o755))
	a := e.start()
	a.initialize()
	s := &wfSession{t: t, e: e, a: a, sid: a.newSession(), id: 2}
	s.prompt("sbx writer")

	step := stepOf(t, outcomeOf(t, onlyResult(t, s.log())), "docs")
	bash := bashOutputOf(t, toolResultsOf(t, childLog(t, e.ws, step))[0])
	require.Empty(t, bash.Sandbox)
	require.Contains(t, bash.SandboxNotice, "commands of this session run without the kernel sandbox: turned off by landlock = false")
	require.True(t, strings.HasPrefix(bash.Output, "[Pixir: commands of this session run without the kernel sandbox"), bash.Output)
	stderr := a.stderrAtExit()
	require.Equal(t, 1, strings.Count(stderr, "commands are not sandboxed"), stderr)
}

func TestClosingTheSessionEndsEveryProcessOfItsCommand(t *testing.T) {
	needPIDNamespaces(t)
	_, a, sid, marker, _ := hangingCommand(t)
	before := a.result(4, "session/close", map[string]any{"sessionId": sid}, nil)
	require.Empty(t, sandboxtest.Running("sleep "+marker), "a process outlived session/close")
	// Closing cancels the work as session/cancel would, then frees the
	// session: the prompt is answered "cancelled" before the close is, so
	// nothing of the closed session (its last updates, its reply) comes
	// after the close's reply (it did: a session_info_update and the
	// prompt's reply followed it).
	require.NotEmpty(t, before)
	last := before[len(before)-1]
	require.Equal(t, "3", string(last.ID), "the prompt's reply comes last before the close's: %s", last.raw)
	require.Equal(t, "cancelled", stopReason(t, last))
}

func TestPixirExitingEndsEveryProcessOfItsCommands(t *testing.T) {
	needPIDNamespaces(t)
	_, a, _, marker, pids := hangingCommand(t)
	require.NoError(t, a.stdin.Close()) // the editor went away
	_ = a.cmd.Wait()
	require.NoError(t, sandboxtest.AwaitExit(pids))
	require.Empty(t, sandboxtest.Running("sleep "+marker), "a process outlived pixir")
}
