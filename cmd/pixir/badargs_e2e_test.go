package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A model that asks for a tool with arguments that are not JSON at all
// reads why in the call's result, invalid_args, and the turn goes on: the
// Log has the call and its result, the editor sees a failed tool call
// showing the text that came, and the model's next answer ends the turn.
// It ended the turn (turn_failed: "send the prompt again"); before that it
// was an internal error (-32603: "encoding assistant_message event: json:
// error calling MarshalJSON for type json.RawMessage").
func TestToolArgumentsThatAreNotJSONAreAnsweredInvalidArgs(t *testing.T) {
	e := newEnv(t, `
[[rule]]
match = 'broken'
  [[rule.reply]]
  text = "Running it."
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '{"steps":[{"id":"a","task":"x"'
  [[rule.reply]]
  text = "result: {{.ToolResult}}"

[[rule]]
  [[rule.reply]]
  text = "still here"
`)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, before := a.call(2, "session/prompt", promptParams(sid, "broken"))
	require.Nil(t, m.Error, "the prompt is answered, not refused: %+v", m.Error)
	require.Equal(t, "end_turn", stopReason(t, m))
	ups := updates(t, before)
	text := agentText(ups)
	require.Contains(t, text, "Running it.")
	require.Contains(t, text, `result: {"ok":false,"error":{"kind":"invalid_args","message":"the arguments of this call of \"run_workflow\" are not valid JSON (unexpected end of JSON input), so it was not run: {\"steps\":[{\"id\":\"a\",\"task\":\"x\"; call it again with its arguments as one JSON object"`)
	var shown, failed bool
	for _, u := range ups {
		if u["sessionUpdate"] == "tool_call" && u["rawInput"] == `{"steps":[{"id":"a","task":"x"` {
			shown = true
		}
		if u["sessionUpdate"] == "tool_call_update" && u["status"] == "failed" {
			failed = true
		}
	}
	require.True(t, shown, "the editor is shown the text that came: %v", ups)
	require.True(t, failed, "and a failed tool call: %v", ups)
	types := eventTypes(readLog(t, e.ws, sid))
	require.Equal(t, []string{"user_message", "assistant_message", "provider_usage", "tool_call", "tool_result", "assistant_message", "provider_usage"}, types)

	// Loaded again, the session goes on: the call is History.
	m, before = a.call(3, "session/prompt", promptParams(sid, "and now?"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Contains(t, agentText(updates(t, before)), "still here")
}

// A model that sends arguments that are not JSON again and again does not
// loop forever: every answer is a model call, and the turn's limit of them
// ends it.
func TestToolArgumentsThatAreNeverJSONStopAtTheModelCallLimit(t *testing.T) {
	e := newEnv(t, `
[[rule]]
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments_json = '{"path": "a.t'
`)
	a := e.start("--max-turn-requests", "4")
	a.initialize()
	sid := a.newSession()
	m, _ := a.call(2, "session/prompt", promptParams(sid, "go"))
	require.Equal(t, "max_turn_requests", stopReason(t, m))
	require.Equal(t, 4, countOf(eventTypes(readLog(t, e.ws, sid)), "tool_result"))
}

// In ask mode, a change whose arguments its tool's schema refuses is
// answered invalid_args without asking the user: it was put to the user
// (Allow? for a write of path 1 with no content), and only once allowed
// refused for its arguments.
func TestAskModeDoesNotAskAboutACallItsToolRefuses(t *testing.T) {
	e := newEnv(t, `
[[rule]]
match = 'bad write'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments_json = '{"path": 1}'
  [[rule.reply]]
  text = "result: {{.ToolResult}}"

[[rule]]
match = 'good write'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "a.txt", content = "hi" }
  [[rule.reply]]
  text = "result: {{.ToolResult}}"
`)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.result(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)
	asked := 0
	allow := map[string]func(json.RawMessage) any{"session/request_permission": func(json.RawMessage) any {
		asked++
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}
	}}
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "bad write")})
	m, before := a.serveUntilReply("3", allow)
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Equal(t, 0, asked, "the user is not asked about a call that cannot run")
	text := agentText(updates(t, before))
	require.Contains(t, text, `"kind":"invalid_args"`)
	require.Contains(t, text, "/path: got number, want string")

	// A valid change is still asked about.
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": promptParams(sid, "good write")})
	m, _ = a.serveUntilReply("4", allow)
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Equal(t, 1, asked)
	require.FileExists(t, filepath.Join(e.ws, "a.txt"))
}

// run_workflow reports every problem of its spec at once, each with its
// location, as pixir run does for a file and in the same words: an
// unknown key (with the key it likely meant), an unknown dependency and an
// unknown agent together. It reported only the schema's line
// ("/steps/1: additional properties 'dependson' not allowed"), so the
// model fixed that and met the next two on its next call.
func TestRunWorkflowReportsEveryProblemOfItsSpecAtOnce(t *testing.T) {
	e := newEnv(t, `
[[rule]]
match = 'bad spec'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '{"steps":[{"id":"a","task":"x","agent":"nobody"},{"id":"b","task":"y","depends_on":["zz"],"dependson":["a"],"timeout_ms":"soon"}]}'
  [[rule.reply]]
  text = "result: {{.ToolResult}}"
`)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, before := a.call(2, "session/prompt", promptParams(sid, "bad spec"))
	require.Equal(t, "end_turn", stopReason(t, m))
	text := agentText(updates(t, before))
	require.Contains(t, text, `"kind":"invalid_args"`)
	for _, want := range []string{
		`steps[0] \"a\": there is no agent named \"nobody\"`,
		`steps[1] \"b\": unknown key \"dependson\"; did you mean \"depends_on\"?`,
		`steps[1] \"b\": timeout_ms: got JSON string, want integer`,
		`steps[1] \"b\": depends_on \"zz\" is not a step id; known ids: a, b`,
	} {
		require.Contains(t, text, want)
	}
	require.NotContains(t, text, "additional properties", "the schema's line says nothing the spec's check did not")
}
