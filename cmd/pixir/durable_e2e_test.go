package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
)

// These tests hold the Log to its promises through the binary: one writer
// per session, a full disk ends a turn cleanly, damage is reported, and a
// crash never leaves a session that model APIs refuse.

// logOf reads a session's Log as Pixir does, with its damage report.
func logOf(t *testing.T, ws, sid string) ([]runtime.Event, runtime.LoadReport) {
	t.Helper()
	events, report, err := runtime.ReadLog(filepath.Join(ws, ".pixir", "sessions", sid+".ndjson"))
	require.NoError(t, err)
	return events, report
}

func countType(events []runtime.Event, typ runtime.EventType) int {
	n := 0
	for _, ev := range events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func loadParams(sid, cwd string) map[string]any {
	return map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}
}

func TestASecondProcessCannotWriteASessionInUse(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, _ := a.call(2, "session/prompt", promptParams(sid, "write a file"))
	require.Equal(t, "end_turn", stopReason(t, m))

	// Another editor window: load and resume are refused, naming the holder.
	b := e.start()
	b.initialize()
	holder := fmt.Sprintf("pid %d: %s acp --script %s", a.cmd.Process.Pid, pixirBin, e.script)
	for i, method := range []string{"session/load", "session/resume"} {
		m, replay := b.call(10+i, method, loadParams(sid, e.ws))
		require.NotNil(t, m.Error, "%s of a session in use: %s", method, m.raw)
		require.Equal(t, -32600, m.Error.Code)
		require.Contains(t, m.Error.Message, "the session is in use by another process")
		require.Contains(t, m.Error.Message, holder)
		require.Empty(t, updates(t, replay), "nothing is replayed")
	}
	// What only reads still works: session/list, and pixir inspect.
	var list struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
		} `json:"sessions"`
	}
	b.result(12, "session/list", map[string]any{"cwd": e.ws}, &list)
	require.Equal(t, sid, list.Sessions[0].SessionID)
	cli := &runEnv{t: t, home: e.home, ws: e.ws}
	stdout, stderr, code := cli.pixir("inspect", sid)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "write a file")
	// pixir resume, from a terminal, is refused the same way.
	_, stderr, code = cli.pixir("resume", sid, "hello from a terminal")
	require.Equal(t, exitError, code, "a conflict, not invalid input: %s", stderr)
	require.Contains(t, stderr, "the session is in use by another process")
	require.Contains(t, stderr, fmt.Sprintf("pid %d", a.cmd.Process.Pid))

	// The holder lost nothing and goes on.
	m, _ = a.call(3, "session/prompt", promptParams(sid, "run it"))
	require.Equal(t, "end_turn", stopReason(t, m))
	events, report := logOf(t, e.ws, sid)
	require.True(t, report.Intact(), report.String())
	require.Equal(t, 2, countType(events, runtime.EventUserMessage))
	for i, ev := range events {
		require.Equal(t, int64(i+1), ev.Seq)
	}

	// Once the holder ends, the session opens elsewhere.
	a.exit()
	m, replay := b.call(13, "session/load", loadParams(sid, e.ws))
	require.Nil(t, m.Error, m.raw)
	require.Contains(t, agentText(updates(t, replay)), "Ran it.")
}

// bigReadScript reads big.txt, whose result is far larger than the file
// size limit the agent runs under.
const bigReadScript = `
[[rule]]
match = "read the big file"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "big.txt" }
  [[rule.reply]]
  text = "Read it."
[[rule]]
  [[rule.reply]]
  text = "Hello again."
`

// startLimited starts pixir acp unable to write a file past limitKiB, as on
// a full disk: a write that crosses the limit is cut short and fails
// (EFBIG), which is what a full disk does to a write (ENOSPC).
func (e *env) startLimited(limitKiB int) *agent {
	e.t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		e.t.Skip("needs bash to set a file size limit")
	}
	return e.startCommand(exec.Command(bash, "-c", `ulimit -f "$1" && shift && exec "$@"`, "limit",
		strconv.Itoa(limitKiB), pixirBin, "acp", "--script", e.script), nil)
}

func TestAFullDiskEndsTheTurnCleanly(t *testing.T) {
	e := newEnv(t, bigReadScript)
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, "big.txt"), []byte(strings.Repeat("a line of the big file\n", 5000)), 0o644))
	a := e.startLimited(16)
	a.initialize()
	sid := a.newSession()
	m, during := a.call(2, "session/prompt", promptParams(sid, "read the big file"))

	// The turn ends with the reason shown.
	require.NotNil(t, m.Error, "the prompt cannot succeed: %s", m.raw)
	require.Contains(t, m.Error.Message, "the session's Log could not be written")
	require.Contains(t, m.Error.Message, "file too large")
	ups := updates(t, during)
	require.Contains(t, agentText(ups), "The turn stopped")
	// The call the editor saw is finalized: none is left in progress.
	calls, order := toolCallsByID(ups)
	require.Len(t, order, 1)
	require.Equal(t, "failed", calls[order[0]]["status"], "%v", calls[order[0]])

	// The Log is whole: the result that did not fit left nothing behind.
	events, report := logOf(t, e.ws, sid)
	require.True(t, report.Intact(), report.String())
	require.Equal(t, 0, countType(events, runtime.EventToolResult))
	require.NoError(t, a.stdin.Close())
	_ = a.cmd.Wait()

	// With room again, the session loads: the call is shown ended, recorded
	// as interrupted, and the conversation goes on.
	b := e.start()
	b.initialize()
	m, replay := b.call(1, "session/load", loadParams(sid, e.ws))
	require.Nil(t, m.Error, m.raw)
	calls, order = toolCallsByID(updates(t, replay))
	require.Len(t, order, 1)
	require.Equal(t, "failed", calls[order[0]]["status"])
	require.Contains(t, string(mustJSON(t, calls[order[0]])), "interrupted")
	m, _ = b.call(2, "session/prompt", promptParams(sid, "hello"))
	require.Equal(t, "end_turn", stopReason(t, m))
	events, report = logOf(t, e.ws, sid)
	require.True(t, report.Intact())
	require.Equal(t, 1, countType(events, runtime.EventToolResult))
}

// strictOpenAI answers like the OpenAI API: first with a tool call to a
// command that takes long, then, to a conversation where every tool call
// has its result, with text; a tool call without a result is refused with
// the 400 the real API sends.
func strictOpenAI(t *testing.T) *fakeModel {
	t.Helper()
	slow := sseReply(0, concat(
		[]string{oaChunk(`{"role":"assistant","content":null}`, "")},
		oaToolCall(0, "call_slow", "bash", `{"command":"sleep 20"}`),
		[]string{oaChunk(`{}`, "tool_calls"), oaUsage(100, 10), oaDone},
	)...)
	strict := func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req chatRequest
		require.NoError(t, json.Unmarshal(body, &req))
		for i, m := range req.Messages {
			for _, tc := range m.ToolCalls {
				answered := false
				for _, next := range req.Messages[i+1:] {
					if next.Role != "tool" {
						break
					}
					answered = answered || next.ToolCallID == tc.ID
				}
				if !answered {
					jsonReply(400, `{"error":{"message":"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. `+
						`The following tool_call_ids did not have response messages: `+tc.ID+`","type":"invalid_request_error","param":"messages.[`+strconv.Itoa(i+1)+`].role","code":null}}`)(w, r, body)
					return
				}
			}
		}
		oaAnswer("All good.", 200, 3)(w, r, body)
	}
	return newFakeModel(t, slow, strict)
}

func TestAKillMidToolCallLeavesASessionModelsAccept(t *testing.T) {
	srv := strictOpenAI(t)
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	e := newEnv(t, "")
	args := []string{"--provider", "openai", "--base-url", srv.URL + "/v1", "--model", "gpt-test"}
	a := e.start(args...)
	a.initialize()
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": promptParams(sid, "run the slow command")})
	a.awaitUpdate(func(u map[string]any) bool { return u["toolCallId"] == "call_slow" && u["status"] == "in_progress" })
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	_ = a.cmd.Wait()
	events, _ := logOf(t, e.ws, sid)
	require.Equal(t, 0, countType(events, runtime.EventToolResult), "killed mid tool call")

	b := e.start(args...)
	b.initialize()
	m, replay := b.call(1, "session/load", loadParams(sid, e.ws))
	require.Nil(t, m.Error, m.raw)
	calls, _ := toolCallsByID(updates(t, replay))
	require.Equal(t, "failed", calls["call_slow"]["status"], "the editor sees the call ended")
	m, during := b.call(2, "session/prompt", promptParams(sid, "go on"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Equal(t, "All good.", agentText(updates(t, during)), "the model accepted the conversation")
	last := srv.received()[len(srv.received())-1]
	require.Contains(t, string(last.Body), `"tool_call_id":"call_slow"`)
	require.Contains(t, string(last.Body), `interrupted: Pixir stopped`)
	require.NoError(t, b.stdin.Close())
	_ = b.cmd.Wait()

	// Recorded once, durably: a third process finds it and adds nothing.
	c := e.start(args...)
	c.initialize()
	m, _ = c.call(1, "session/load", loadParams(sid, e.ws))
	require.Nil(t, m.Error, m.raw)
	events, report := logOf(t, e.ws, sid)
	require.True(t, report.Intact())
	interrupted := 0
	for _, ev := range events {
		var d runtime.ToolResultData
		if ev.Type == runtime.EventToolResult && json.Unmarshal(ev.Data, &d) == nil && d.Interrupted {
			interrupted++
			require.Equal(t, "call_slow", d.ToolCallID)
		}
	}
	require.Equal(t, 1, interrupted)
}

func TestSetModeChangesNothingWhenItFails(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	// session/new writes the metadata just after its reply: await the
	// file (renamed into place from its temporary), so the folder below
	// meets the set_mode's save, not that first write.
	for {
		if _, err := os.Stat(filepath.Join(e.ws, ".pixir", "sessions", sid+".json")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The metadata cannot be saved: a folder stands where its temporary
	// file goes (whoever runs the test; root ignores file modes).
	require.NoError(t, os.Mkdir(filepath.Join(e.ws, ".pixir", "sessions", sid+".json.tmp"), 0o755))
	m, before := a.call(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "read_only"})
	require.NotNil(t, m.Error, m.raw)
	require.Contains(t, m.Error.Message, "nothing was changed")
	require.Empty(t, updates(t, before), "no current_mode_update for a change that did not happen")
	m, _ = a.call(3, "session/set_config_option", map[string]any{"sessionId": sid, "configId": "mode", "value": "read_only"})
	require.NotNil(t, m.Error, m.raw)

	// Still auto: a write goes through.
	m, _ = a.call(4, "session/prompt", promptParams(sid, "write a file"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.FileExists(t, filepath.Join(e.ws, "a.txt"))
}

func TestADamagedLineIsReportedAndSkipped(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	for i, p := range []string{"write a file", "run it"} {
		m, _ := a.call(2+i, "session/prompt", promptParams(sid, p))
		require.Equal(t, "end_turn", stopReason(t, m))
	}
	a.exit()

	// Garbage in the middle of the Log, as a disk error or a stray writer
	// would leave it.
	path := filepath.Join(e.ws, ".pixir", "sessions", sid+".ndjson")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	damaged := strings.Join(lines[:4], "") + "\x00\x00 not an event\n" + strings.Join(lines[4:], "")
	require.NoError(t, os.WriteFile(path, []byte(damaged), 0o644))

	// An editor that shows notices gets one; the conversation replays.
	b := e.start()
	b.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"session": map[string]any{"notices": map[string]any{}}}}, nil)
	m, replay := b.call(1, "session/load", loadParams(sid, e.ws))
	require.Nil(t, m.Error, m.raw)
	ups := updates(t, replay)
	var notice map[string]any
	for _, u := range ups {
		if u["sessionUpdate"] == "notice" {
			notice = u
		}
	}
	require.NotNil(t, notice, "the damage is reported")
	require.Equal(t, "warning", notice["severity"])
	require.Contains(t, notice["description"], "line 5 (")
	require.Contains(t, notice["description"], "is not an event and was skipped")
	require.Contains(t, agentText(ups), "Ran it.")
	require.NotContains(t, agentText(ups), "damaged", "a client with notices gets no message in the conversation")
	b.exit()

	// From a terminal, pixir resume says it, and the turn runs.
	cli := &runEnv{t: t, home: e.home, ws: e.ws}
	_, stderr, code := cli.pixir("resume", "--script", e.script, sid, "run it")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "part of session "+sid+"'s Log is damaged and was skipped: ")
	require.Contains(t, stderr, "line 5 (")
	events, report := logOf(t, e.ws, sid)
	require.Equal(t, 1, report.Skipped, "the damaged line stays, as evidence")
	require.Equal(t, 3, countType(events, runtime.EventUserMessage))
}

// hostile is model output that, printed raw, would retitle the terminal,
// clear it, move the cursor, write the clipboard (OSC 52) and hide in C1.
const hostile = "\x1b]0;pwned\x07\x1b[2J\x1b[H\x1b]52;c;cm0gLXJmIH4=\x07\u009b31m\rgotcha"

// requireInert fails if out holds a control character a terminal obeys.
func requireInert(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07", "\u009b", "\r"} {
		require.NotContains(t, out, c, "%s prints a raw control character: %q", what, out)
	}
}

func TestTerminalEscapesArePrintedInert(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
  [[rule.reply]]
  text = `+jsonString(hostile+" done")+`
`)
	stdout, stderr, code := e.pixir("run", "--script", script, "title me "+hostile)
	require.Equal(t, exitOK, code, stderr)
	requireInert(t, "pixir run", stdout+stderr)
	require.Contains(t, stdout, "␛]0;pwned␇␛[2J␛[H␛]52;c;cm0gLXJmIH4=␇\\u009b31m␍gotcha done", "shown, inert")

	stdout, stderr, code = e.pixir("sessions")
	require.Equal(t, exitOK, code, stderr)
	requireInert(t, "pixir sessions", stdout+stderr)
	require.Contains(t, stdout, "title me ␛]0;pwned")
	var list []struct {
		SessionID string `json:"session_id"`
		Title     string `json:"title"`
	}
	stdout, _, code = e.pixir("sessions", "--json")
	require.Equal(t, exitOK, code)
	requireInert(t, "pixir sessions --json", stdout)
	require.NoError(t, json.Unmarshal([]byte(stdout), &list))
	require.Contains(t, list[0].Title, "\x1b]0;pwned", "JSON keeps the data as it is, escaped")

	for _, args := range [][]string{{"inspect", list[0].SessionID}, {"inspect", "--json", list[0].SessionID}, {"inspect", "--events", list[0].SessionID}} {
		stdout, stderr, code = e.pixir(args...)
		require.Equal(t, exitOK, code, stderr)
		requireInert(t, "pixir "+strings.Join(args, " "), stdout+stderr)
		require.Contains(t, stdout, "pwned")
	}

	// An agent file is text from a repository.
	require.NoError(t, os.MkdirAll(filepath.Join(e.ws, ".pixir", "agents"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, ".pixir", "agents", "evil.toml"),
		[]byte("name = \"evil\"\ndescription = "+jsonString("Reviews. "+hostile)+"\ndeveloper_instructions = \"Be evil.\"\n"), 0o644))
	stdout, stderr, code = e.pixir("agents")
	require.Equal(t, exitOK, code, stderr)
	requireInert(t, "pixir agents", stdout+stderr)
	require.Contains(t, stdout, "Reviews. ␛]0;pwned")
}

// TestEventsThisPixirCannotReadAreReported: a Log with whole lines that
// are events this Pixir cannot fold into the conversation (a prompt whose
// text is a number, an event of a type a newer Pixir might write) loads,
// and what was left out is said to the editor and on pixir resume's
// stderr, by seq and type, as a damaged line is. They were dropped from
// the conversation with nothing said but a server log line (and raw log
// lines on pixir resume's terminal).
func TestEventsThisPixirCannotReadAreReported(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	for i, p := range []string{"write a file", "run it"} {
		m, _ := a.call(2+i, "session/prompt", promptParams(sid, p))
		require.Equal(t, "end_turn", stopReason(t, m))
	}
	a.exit()

	path := filepath.Join(e.ws, ".pixir", "sessions", sid+".ndjson")
	events, report := logOf(t, e.ws, sid)
	require.True(t, report.Intact())
	last := events[len(events)-1].Seq
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	for i, line := range []string{
		`{"id":"x1","session_id":"%s","seq":%d,"ts":"2026-11-25T06:00:00Z","type":"user_message","data":{"text":42}}`,
		`{"id":"x2","session_id":"%s","seq":%d,"ts":"2026-11-25T06:00:01Z","type":"mode_changed","data":{"mode":"read_only"}}`,
	} {
		_, err := fmt.Fprintf(f, line+"\n", sid, last+int64(i)+1)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	first, second := fmt.Sprintf("event %d (user_message) was left out: its data does not decode", last+1),
		fmt.Sprintf("event %d (mode_changed) was left out: its type is not one this Pixir knows", last+2)

	b := e.start()
	b.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"session": map[string]any{"notices": map[string]any{}}}}, nil)
	m, replay := b.call(1, "session/load", loadParams(sid, e.ws))
	require.Nil(t, m.Error, m.raw)
	ups := updates(t, replay)
	var notice map[string]any
	for _, u := range ups {
		if u["sessionUpdate"] == "notice" {
			notice = u
		}
	}
	require.NotNil(t, notice, "what was left out is reported")
	require.Contains(t, notice["description"], first)
	require.Contains(t, notice["description"], second)
	require.Contains(t, notice["description"], "What was left out stays in "+path)
	require.Contains(t, agentText(ups), "Ran it.", "the rest replays")
	b.exit()

	cli := &runEnv{t: t, home: e.home, ws: e.ws}
	_, stderr, code := cli.pixir("resume", "--script", e.script, sid, "run it")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "part of session "+sid+"'s Log is damaged and was skipped: ")
	require.Contains(t, stderr, first)
	require.Contains(t, stderr, second)
	require.NotContains(t, stderr, "level=", "no raw log lines on the terminal")
}

// TestALogRemovedWhileTheSessionIsOpenIsWrittenBack: .pixir is removed
// between two prompts of an open session (git clean -fdx removes it with
// everything git ignores). The next prompt writes the Log back from the
// open file before its turn, so nothing is lost: another process loads
// both turns, and the state folder has its .gitignore again. Before, the
// turns went on into the removed file with end_turn answers, and the
// session was "not found" once the process ended.
func TestALogRemovedWhileTheSessionIsOpenIsWrittenBack(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, _ := a.call(2, "session/prompt", promptParams(sid, "write a file"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.NoError(t, os.RemoveAll(filepath.Join(e.ws, ".pixir")))

	m, _ = a.call(3, "session/prompt", promptParams(sid, "run it"))
	require.Equal(t, "end_turn", stopReason(t, m))
	events, report := logOf(t, e.ws, sid)
	require.True(t, report.Intact(), report.String())
	require.Equal(t, 2, countType(events, runtime.EventUserMessage), "both turns are in the Log")
	for i, ev := range events {
		require.Equal(t, int64(i+1), ev.Seq)
	}
	_, err := os.Stat(filepath.Join(e.ws, ".pixir", ".gitignore"))
	require.NoError(t, err, "the state folder keeps out of git again")
	a.exit()

	b := e.start()
	b.initialize()
	m, replay := b.call(1, "session/load", loadParams(sid, e.ws))
	require.Nil(t, m.Error, m.raw)
	require.Contains(t, agentText(updates(t, replay)), "Ran it.")
}

// TestAModeSetAfterTheStateFolderWasRemovedIsSaved: .pixir removed while
// the session is open, then session/set_mode, before any prompt: the Log
// is written back and the mode saved beside it (another process loads the
// session in that mode). Before, set_mode failed with "open
// ….json.tmp: no such file or directory" until a prompt had written the
// Log back.
func TestAModeSetAfterTheStateFolderWasRemovedIsSaved(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, _ := a.call(2, "session/prompt", promptParams(sid, "write a file"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.NoError(t, os.RemoveAll(filepath.Join(e.ws, ".pixir")))

	a.result(3, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "read_only"}, nil)
	events, report := logOf(t, e.ws, sid)
	require.True(t, report.Intact(), report.String())
	require.Equal(t, 1, countType(events, runtime.EventUserMessage), "the Log is back, its turn in it")
	a.exit()

	b := e.start()
	b.initialize()
	var r struct {
		Modes struct {
			CurrentModeID string `json:"currentModeId"`
		} `json:"modes"`
	}
	b.result(1, "session/load", loadParams(sid, e.ws), &r)
	require.Equal(t, "read_only", r.Modes.CurrentModeID)
}

// TestALogRemovedAfterTheLastTurnIsWrittenBackAtTheEnd: .pixir is removed
// after the last turn of a process (a git clean -fdx while the editor is
// open, or during pixir run's only turn), and the process ends with no
// prompt or setting after it. The Log is written back when the session
// ends, with the state folder's .gitignore: another process loads it.
// Before, it was written back only before a next turn or a metadata save,
// and the session, every turn of it, was lost when the process ended.
func TestALogRemovedAfterTheLastTurnIsWrittenBackAtTheEnd(t *testing.T) {
	e := newEnv(t, testScript)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, _ := a.call(2, "session/prompt", promptParams(sid, "write a file"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.NoError(t, os.RemoveAll(filepath.Join(e.ws, ".pixir")))
	a.exit()

	events, report := logOf(t, e.ws, sid)
	require.True(t, report.Intact(), report.String())
	require.Equal(t, 1, countType(events, runtime.EventUserMessage), "the turn is in the Log")
	_, err := os.Stat(filepath.Join(e.ws, ".pixir", ".gitignore"))
	require.NoError(t, err, "the state folder keeps out of git again")
	b := e.start()
	b.initialize()
	m, replay := b.call(1, "session/load", loadParams(sid, e.ws))
	require.Nil(t, m.Error, m.raw)
	require.Contains(t, agentText(updates(t, replay)), "Wrote it.")
}
