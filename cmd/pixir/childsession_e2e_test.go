package main

import (
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
