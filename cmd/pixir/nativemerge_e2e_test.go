package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writesOutA is a script's rule for a writer step whose task starts
// "[w]": it writes out/a.txt, then reports checkpoint_ready.
const writesOutA = `
[[rule]]
match = '\A\[w\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "out/a.txt", content = "hi\n" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"wrote it"}'
  [[rule.reply]]
  text = "ok"
`

// A client that shows Subagents as sessions of their own is never told of
// a "subagent-…" tool call; the question whether to merge a workflow step's
// changes names the run_workflow call it was told of, without changing
// that call's status. It named subagent-<id>, a tool call the client did
// not know.
func TestANativeClientIsAskedAboutAMergeOnTheWorkflowsCall(t *testing.T) {
	e := newEnv(t, writesOutA+`
[[rule]]
match = 'go'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '{"name":"w","steps":[{"id":"w","task":"[w] write","write_set":["out/**"]}]}'
  [[rule.reply]]
  text = "done"
`)
	a := e.start()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"subagents": map[string]any{}}}, nil)
	sid := a.newSession()
	a.result(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)
	type question struct {
		SessionID string         `json:"sessionId"`
		ToolCall  map[string]any `json:"toolCall"`
	}
	var asked []question
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "go")})
	m, before := a.serveUntilReply("3", map[string]func(json.RawMessage) any{"session/request_permission": func(p json.RawMessage) any {
		var q question
		require.NoError(t, json.Unmarshal(p, &q))
		asked = append(asked, q)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}
	}})
	require.Equal(t, "end_turn", stopReason(t, m))
	told := map[string]bool{} // the tool calls each session was told of
	for _, msg := range before {
		if msg.Method != "session/update" {
			continue
		}
		var n struct {
			SessionID string         `json:"sessionId"`
			Update    map[string]any `json:"update"`
		}
		require.NoError(t, json.Unmarshal(msg.Params, &n))
		if n.Update["sessionUpdate"] == "tool_call" {
			told[n.SessionID+" "+n.Update["toolCallId"].(string)] = true
		}
	}
	var merge *question
	for i, q := range asked {
		require.True(t, told[q.SessionID+" "+q.ToolCall["toolCallId"].(string)], "a question about a tool call the client was told of: %+v", q)
		if strings.HasPrefix(q.ToolCall["title"].(string), "Merge step w") {
			merge = &asked[i]
		}
	}
	require.NotNil(t, merge, "the merge was asked about: %+v", asked)
	// One file is "1 file" (the question said "1 files").
	require.Regexp(t, `^Merge step w \(sa-[0-9a-f]+\) into the workspace: 1 file$`, merge.ToolCall["title"])
	require.Equal(t, sid, merge.SessionID)
	require.NotContains(t, merge.ToolCall, "status", "the workflow's call keeps its status")
}
