package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/inspect"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// cli runs the binary in the env's workspace to its end: stdout, stderr,
// exit code.
func (e *env) cli(args ...string) (string, string, int) {
	e.t.Helper()
	cmd := exec.Command(pixirBin, args...)
	cmd.Dir = e.ws
	cmd.Env = append(os.Environ(), "PIXIR_HOME="+e.home, "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(e.t, err)
	return out.String(), errOut.String(), 0
}

// scriptedSession drives `pixir acp` on the embedded offline script
// through the prompts, each to end_turn, and returns the session's id.
func scriptedSession(t *testing.T, prompts ...string) (*env, string) {
	t.Helper()
	e := newEnv(t, "")
	a := e.start()
	a.initialize()
	sid := a.newSession()
	for i, p := range prompts {
		m, _ := a.call(10+i, "session/prompt", promptParams(sid, p))
		require.Equal(t, "end_turn", stopReason(t, m), "prompt %q", p)
	}
	return e, sid
}

func decodeTree(t *testing.T, stdout string) inspect.Session {
	t.Helper()
	var s inspect.Session
	require.NoError(t, json.Unmarshal([]byte(stdout), &s), stdout)
	return s
}

// callsOf lists the tool calls of a turn by name.
func callsOf(turn *inspect.Turn) map[string]*inspect.ToolCall {
	out := map[string]*inspect.ToolCall{}
	for _, it := range turn.Items {
		if it.Kind == inspect.KindToolCall {
			out[it.ToolCall.Name] = it.ToolCall
		}
	}
	return out
}

func TestInspectAndSessionsOfARealSession(t *testing.T) {
	e, sid := scriptedSession(t, "create a file", "delegate it to a subagent", "run a workflow")
	logPath := filepath.Join(e.ws, ".pixir", "sessions", sid+".ndjson")

	t.Run("json", func(t *testing.T) {
		stdout, stderr, code := e.cli("inspect", sid, "--json")
		require.Equal(t, exitOK, code, stderr)
		require.Empty(t, stderr)
		s := decodeTree(t, stdout)
		require.Equal(t, sid, s.SessionID)
		require.Equal(t, "create a file", s.Title)
		require.Equal(t, "auto", s.Mode)
		require.Zero(t, s.Load.TornBytes)
		require.Empty(t, s.Subagents, "every child is under the call that spawned it")
		require.Empty(t, s.Workflows, "the run is under its run_workflow call")
		require.Len(t, s.Turns, 3)
		for i, turn := range s.Turns {
			require.Equal(t, i+1, turn.Index)
			require.Equal(t, inspect.TurnCompleted, turn.Status, "turn %d", i+1)
		}

		// Turn 1: write (a mutation, allowed by the mode), then read.
		calls := callsOf(s.Turns[0])
		require.Equal(t, inspect.ToolOK, calls["write"].Status)
		require.Equal(t, "allowed", calls["write"].Permission.Decision)
		require.Equal(t, inspect.ToolOK, calls["read"].Status)
		require.Nil(t, calls["read"].Permission, "reads are not decided")

		// Turn 2: the child under spawn_agent, completed, with its own Log.
		calls = callsOf(s.Turns[1])
		spawn := calls["spawn_agent"]
		require.Equal(t, inspect.ToolOK, spawn.Status)
		require.Len(t, spawn.Subagents, 1)
		child := spawn.Subagents[0]
		require.Equal(t, tools.SubagentCompleted, child.Status)
		require.Equal(t, tools.SubagentEventFinished, child.Event)
		require.Equal(t, "default", child.Agent)
		require.Equal(t, "look around and list the files", child.Task)
		require.Equal(t, spawn.ToolCallID, child.ParentToolCallID)
		require.NotEmpty(t, child.Summary)
		require.FileExists(t, child.ChildLog)
		require.Equal(t, inspect.ToolOK, calls["wait_agent"].Status)
		require.Empty(t, calls["wait_agent"].Subagents)

		// Turn 3: the workflow under run_workflow, each step
		// checkpoint_ready, with its child's Log.
		rw := callsOf(s.Turns[2])["run_workflow"]
		require.Equal(t, inspect.ToolOK, rw.Status)
		require.Empty(t, rw.Subagents, "a step's child shows under its step")
		require.Len(t, rw.Workflows, 1)
		w := rw.Workflows[0]
		require.Equal(t, workflows.StatusCompleted, w.Status)
		require.Equal(t, "survey and summarize", w.Name)
		require.Equal(t, rw.ToolCallID, w.ToolCallID)
		var steps []string
		for _, st := range w.Steps {
			steps = append(steps, st.StepID)
			require.Equal(t, workflows.CheckpointReady, st.CheckpointStatus, st.StepID)
			require.Equal(t, tools.SubagentCompleted, st.SubagentStatus, st.StepID)
			require.NotEmpty(t, st.SubagentID, st.StepID)
			require.FileExists(t, st.ChildLog, st.StepID)
		}
		require.Equal(t, []string{"survey", "notes", "summary", "index"}, steps)
		require.Equal(t, []int{1, 1, 2}, []int{w.Steps[0].Wave, w.Steps[1].Wave, w.Steps[2].Wave})
	})

	t.Run("tree", func(t *testing.T) {
		stdout, stderr, code := e.cli("inspect", sid)
		require.Equal(t, exitOK, code, stderr)
		for _, want := range []string{
			"session " + sid + ": create a file",
			"turn 1 [completed]",
			"├─ write call_1_1 [ok]",
			"allowed by mode auto",
			"turn 2 [completed]",
			"spawn_agent call_1_1-2 [ok]", // the script's call_1_1 again, made unique in the session
			"└─ subagent sa-",
			"default [completed]",
			"turn 3 [completed]",
			`"survey and summarize" [completed] 4/4 checkpoint_ready`,
			"step survey explorer wave 1 [checkpoint_ready] · subagent completed",
			"step summary default wave 2 [checkpoint_ready]",
		} {
			require.Contains(t, stdout, want)
		}
		require.NotContains(t, stdout, "warning")
	})

	t.Run("events are the Log's lines", func(t *testing.T) {
		stdout, stderr, code := e.cli("inspect", "--events", sid)
		require.Equal(t, exitOK, code, stderr)
		raw, err := os.ReadFile(logPath)
		require.NoError(t, err)
		require.Equal(t, string(raw), stdout)
	})

	t.Run("a unique prefix of the id and --cwd", func(t *testing.T) {
		stdout, stderr, code := e.cli("inspect", "--cwd", e.ws, sid[:13], "--json")
		require.Equal(t, exitOK, code, stderr)
		require.Equal(t, sid, decodeTree(t, stdout).SessionID)
	})

	t.Run("sessions", func(t *testing.T) {
		stdout, stderr, code := e.cli("sessions", "--json")
		require.Equal(t, exitOK, code, stderr)
		var list []map[string]any
		require.NoError(t, json.Unmarshal([]byte(stdout), &list), stdout)
		require.Len(t, list, 1)
		require.Equal(t, sid, list[0]["session_id"])
		require.Equal(t, "create a file", list[0]["title"])
		require.Equal(t, "auto", list[0]["mode"])
		require.InDelta(t, 3, list[0]["turns"], 0)
		require.Equal(t, logPath, list[0]["log"])

		stdout, stderr, code = e.cli("sessions")
		require.Equal(t, exitOK, code, stderr)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		require.Len(t, lines, 2)
		require.Regexp(t, `^ID\s+UPDATED\s+MODE\s+TURNS\s+TITLE$`, lines[0])
		require.Regexp(t, `^`+sid[:8]+`\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+auto\s+3\s+create a file$`, lines[1])
	})
}

func TestInspectToleratesATornLastLine(t *testing.T) {
	e, sid := scriptedSession(t, "create a file")
	logPath := filepath.Join(e.ws, ".pixir", "sessions", sid+".ndjson")
	torn := `{"id":"x","session_id":"` + sid + `","seq":99,"type":"assistant_mes`
	f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(torn)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	stdout, stderr, code := e.cli("inspect", sid)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "warning: the Log's last line is torn")
	require.Contains(t, stdout, "turn 1 [completed]")

	stdout, stderr, code = e.cli("inspect", "--json", sid)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "torn")
	s := decodeTree(t, stdout)
	require.Equal(t, len(torn), s.Load.TornBytes)
	require.Len(t, s.Turns, 1)
	require.Equal(t, inspect.TurnCompleted, s.Turns[0].Status)

	stdout, stderr, code = e.cli("inspect", "--events", sid)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "torn")
	require.NotContains(t, stdout, "assistant_mes\n")
	require.Len(t, strings.Split(strings.TrimSpace(stdout), "\n"), s.Load.Events)

	stdout, _, code = e.cli("sessions", "--json")
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout, `"turns": 1`)
}

func TestInspectAndSessionsRefuseBadInput(t *testing.T) {
	e := newEnv(t, "")
	root, err := filepath.EvalSymlinks(e.ws)
	require.NoError(t, err)

	stdout, stderr, code := e.cli("inspect", "01aa0000-no-such-session")
	require.Equal(t, exitUsage, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "01aa0000-no-such-session")
	require.Contains(t, stderr, filepath.Join(root, ".pixir", "sessions"), "it names the directory it searched")
	require.Contains(t, stderr, "pixir sessions")

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"inspect"}, "give one session id"},
		{[]string{"inspect", "a", "b"}, "give one session id"},
		{[]string{"inspect", "--json", "--events", "x"}, "choose one of --json"},
		{[]string{"inspect", "--cwd", filepath.Join(e.ws, "missing"), "x"}, "--cwd"},
		{[]string{"inspect", "../../etc/passwd"}, "is not a session id"},
		{[]string{"inspect", "--nope", "x"}, "unknown flag --nope"},
		{[]string{"sessions", "extra"}, `unexpected argument "extra"`},
		{[]string{"sessions", "--cwd", filepath.Join(e.ws, "missing")}, "--cwd"},
	}
	for _, c := range cases {
		_, stderr, code := e.cli(c.args...)
		require.Equal(t, exitUsage, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.want, c.args)
	}

	stdout, stderr, code = e.cli("sessions", "--json")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "[]\n", stdout)
	stdout, stderr, code = e.cli("sessions")
	require.Equal(t, exitOK, code)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "no sessions in")
}

// A turn that stopped other than end_turn says why in the Log, and inspect
// shows it: one stopped at the limit of model calls is partial
// (max_turn_requests), one cancelled while the model was asked is
// cancelled. Both were "incomplete" ("cancelled between model calls,
// stopped at the model-call limit, still running, or the process
// ended"): the Log kept no stop. The session loaded again goes on.
func TestInspectSaysWhyATurnStopped(t *testing.T) {
	e := newEnv(t, testScript)
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, "a.txt"), []byte("x"), 0o644))
	a := e.start("--max-turn-requests", "2")
	a.initialize()
	sid := a.newSession()
	m, _ := a.call(2, "session/prompt", promptParams(sid, "loop forever"))
	require.Equal(t, "max_turn_requests", stopReason(t, m))
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "hang please")})
	a.awaitUpdate(func(u map[string]any) bool {
		return u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed"
	})
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	m, _ = a.reply("3")
	require.Equal(t, "cancelled", stopReason(t, m))
	a.exit()

	stdout, stderr, code := e.cli("inspect", "--json", sid)
	require.Equal(t, 0, code, stderr)
	tree := decodeTree(t, stdout)
	require.Len(t, tree.Turns, 2)
	require.Equal(t, inspect.TurnPartial, tree.Turns[0].Status)
	require.Equal(t, "max_turn_requests", tree.Turns[0].StopReason)
	require.Equal(t, inspect.TurnCancelled, tree.Turns[1].Status)
	require.Equal(t, "cancelled", tree.Turns[1].StopReason)
	stdout, stderr, code = e.cli("inspect", sid)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "turn 1 [partial]")
	require.Contains(t, stdout, "stopped: at the limit of model calls per turn (max_turn_requests)")
	require.Contains(t, stdout, "turn 2 [cancelled]")
	require.Contains(t, stdout, "stopped: cancelled")
	require.NotContains(t, stdout, "no final answer in the Log")

	b := e.start()
	b.initialize()
	b.result(1, "session/load", map[string]any{"sessionId": sid, "cwd": e.ws, "mcpServers": []any{}}, nil)
	m, before := b.call(2, "session/prompt", promptParams(sid, "hello"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Equal(t, "You said: hello", agentText(updates(t, before)))
}

// pixir sessions says why a session's last turn stopped when it stopped
// other than end_turn; a later turn that ends normally clears it.
func TestSessionsSayWhyTheLastTurnStopped(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = 'long'
  [[rule.reply]]
  text = "a long answer, cut"
  cut_off = true

[[rule]]
match = 'short'
  [[rule.reply]]
  text = "done"
`)
	_, stderr, code := e.pixir("run", "--script", script, "long")
	require.Equal(t, exitPartial, code, stderr)
	sid := regexp.MustCompile(`pixir: session ([0-9a-f]{8,}) `).FindStringSubmatch(stderr)[1]
	stdout, stderr, code := e.pixir("sessions")
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `(?m)^`+sid+`\S*\s+\S+ \S+\s+auto\s+1 \(last: max_tokens\)\s+long$`, stdout)
	stdout, stderr, code = e.pixir("sessions", "--json")
	require.Equal(t, exitOK, code, stderr)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &list), stdout)
	require.Equal(t, "max_tokens", list[0]["last_stop_reason"])

	_, stderr, code = e.pixir("resume", sid, "--script", script, "short")
	require.Equal(t, exitOK, code, stderr)
	stdout, stderr, code = e.pixir("sessions", "--json")
	require.Equal(t, exitOK, code, stderr)
	list = nil
	require.NoError(t, json.Unmarshal([]byte(stdout), &list), stdout)
	require.Nil(t, list[0]["last_stop_reason"], "the last turn ended end_turn")
}
