package main

import (
	"encoding/json"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A client that shows Subagents as sessions of their own may let its user
// type into one. A child's session takes no prompt or setting of its own:
// the answer says whose session it is and what to do instead. It said
// "<id> is not open in this process; load or resume it first", and loading
// it fails ("no log"): the user was sent round in a circle.
func TestAChildSessionRefusesAPromptSayingWhoseItIs(t *testing.T) {
	e := newEnv(t, `
[[rule]]
match = '\A\[kid\]'
  [[rule.reply]]
  hang = true

[[rule]]
match = 'spawn'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "[kid] wait for me", agent = "explorer" }
  [[rule.reply]]
  text = "spawned"
`)
	a := e.start()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"subagents": map[string]any{}}}, nil)
	sid := a.newSession()
	m, before := a.call(2, "session/prompt", promptParams(sid, "spawn one"))
	require.Equal(t, "end_turn", stopReason(t, m))
	child := ""
	for _, u := range updates(t, before) {
		if u["sessionUpdate"] == "subagent_update" && u["title"] != nil {
			child, _ = u["sessionId"].(string)
		}
	}
	require.NotEmpty(t, child, "the child was announced")

	want := child + " is the session of a Subagent of session " + sid
	m, _ = a.call(3, "session/prompt", promptParams(child, "hello child"))
	require.NotNil(t, m.Error, m.raw)
	require.Equal(t, -32002, m.Error.Code)
	require.Contains(t, m.Error.Message, want)
	require.Contains(t, m.Error.Message, "send_input")
	m, _ = a.call(4, "session/set_mode", map[string]any{"sessionId": child, "modeId": "ask"})
	require.NotNil(t, m.Error, m.raw)
	require.Contains(t, m.Error.Message, want)

	// The child is untouched: a cancel of its session still reaches it.
	a.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + child + `"}}`)
	a.awaitUpdate(func(u map[string]any) bool {
		st, _ := u["state"].(map[string]any)
		return u["sessionUpdate"] == "subagent_update" && u["sessionId"] == child && st["state"] == "idle" && st["stopReason"] == "cancelled"
	})
}

// A Subagent whose last answer the model's token limit cut off has not
// finished: its parent is told so (wait_agent's result, the subagent_event
// in the Log, inspect) with the partial summary kept, and a workflow step
// it ran is not checkpoint_ready. It was reported completed; the notice
// was in the child's Log only.
func TestASubagentCutOffAtTheTokenLimitIsNotCompleted(t *testing.T) {
	e := newEnv(t, `
[[rule]]
match = "^delegate$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "explain everything", agent = "explorer" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments = { timeout_ms = 3600000 }
  [[rule.reply]]
  text = "waited: {{.ToolResult}}"
[[rule]]
match = "^run a step$"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '{"steps":[{"id":"explain","task":"explain everything"}]}'
  [[rule.reply]]
  text = "ran: {{.ToolResult}}"
[[rule]]
match = "explain everything"
  [[rule.reply]]
  text = "The first half of"
  cut_off = true
`)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, before := a.call(2, "session/prompt", promptParams(sid, "delegate"))
	require.Equal(t, "end_turn", stopReason(t, m))
	text := agentText(updates(t, before))
	require.Contains(t, text, `"status":"failed"`)
	require.Contains(t, text, `"summary":"The first half of"`)
	require.Contains(t, text, "cut off at the model's token limit (max_tokens)")
	var ends []string
	for _, ev := range readLog(t, e.ws, sid) {
		if ev.Type == "subagent_event" {
			var d struct{ Event, Status string }
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			ends = append(ends, d.Event+"/"+d.Status)
		}
	}
	require.Equal(t, []string{"queued/queued", "started/running", "failed/failed"}, ends)

	m, before = a.call(3, "session/prompt", promptParams(sid, "run a step"))
	require.Equal(t, "end_turn", stopReason(t, m))
	text = agentText(updates(t, before))
	require.Contains(t, text, `"checkpoint_status":"failed"`)
	require.NotContains(t, text, `"checkpoint_status":"checkpoint_ready"`)
	a.exit()

	stdout, stderr, code := e.cli("inspect", sid)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "[failed]")
	require.Contains(t, stdout, "cut off at the model's token limit")
}

// A child running when its process was killed comes back from a load in
// the state "unknown" (what it did after is not known), with Pixir's
// status detached in _meta: on the first load, which records its end in
// the Log, and on every later one, which replays that record.
func TestAChildDetachedByACrashComesBackUnknownOnEveryLoad(t *testing.T) {
	e := newEnv(t, `
[[rule]]
match = '\A\[kid\]'
  [[rule.reply]]
  hang = true

[[rule]]
match = 'spawn'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "[kid] wait for me", agent = "explorer" }
  [[rule.reply]]
  text = "spawned"
`)
	native := map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"subagents": map[string]any{}}}
	a := e.start()
	a.result(0, "initialize", native, nil)
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": promptParams(sid, "spawn one")})
	child := ""
	a.awaitUpdate(func(u map[string]any) bool {
		st, _ := u["state"].(map[string]any)
		if u["sessionUpdate"] == "subagent_update" && st["state"] == "running" {
			child, _ = u["sessionId"].(string)
			return true
		}
		return false
	})
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	_ = a.cmd.Wait()

	for i := range 2 {
		b := e.start()
		b.result(0, "initialize", native, nil)
		m, replay := b.call(1, "session/load", loadParams(sid, e.ws))
		require.Nil(t, m.Error, m.raw)
		var last map[string]any
		for _, u := range updates(t, replay) {
			if st, ok := u["state"].(map[string]any); ok && u["sessionUpdate"] == "subagent_update" && u["sessionId"] == child {
				last = st
			}
		}
		require.NotNil(t, last, "load %d shows the child's state", i+1)
		require.Equal(t, "unknown", last["state"], "load %d", i+1)
		require.Equal(t, "detached", last["_meta"].(map[string]any)["pixir"].(map[string]any)["status"], "load %d", i+1)
		b.exit()
	}
}
