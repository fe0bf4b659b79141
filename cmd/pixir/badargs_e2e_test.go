package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A model that asks for a tool with arguments that are not JSON at all (a
// reply cut off mid-call) gets its turn ended readably, like any provider
// failure: the prompt answers end_turn with the reason shown, the Log has a
// turn_failed event, and the session goes on. It was an internal error
// (-32603: "encoding assistant_message event: json: error calling
// MarshalJSON for type json.RawMessage"), the editor shown nothing.
func TestToolArgumentsThatAreNotJSONEndTheTurnReadably(t *testing.T) {
	e := newEnv(t, `
[[rule]]
match = 'cut off'
  [[rule.reply]]
  text = "Running it."
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '{"steps":[{"id":"a","task":"x"'

[[rule]]
  [[rule.reply]]
  text = "still here"
`)
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, before := a.call(2, "session/prompt", promptParams(sid, "cut off"))
	require.Nil(t, m.Error, "the prompt is answered, not refused: %+v", m.Error)
	require.Equal(t, "end_turn", stopReason(t, m))
	text := agentText(updates(t, before))
	require.Contains(t, text, "Running it.")
	require.Contains(t, text, `the model called "run_workflow" with arguments that are not valid JSON`)
	m, before = a.call(3, "session/prompt", promptParams(sid, "and now?"))
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Contains(t, agentText(updates(t, before)), "still here")
	types := eventTypes(readLog(t, e.ws, sid))
	require.Contains(t, types, "turn_failed")
	require.Equal(t, 2, countOf(types, "user_message"))
}
