package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// These tests drive big workflows through the built binary (issue 18): a
// dry run that used to send 121 MiB to the editor and write a 32 MiB Log
// line, and a big run cancelled from the editor.

// overlappingWriters is the JSON spec of n writers of one tree, marked
// with tag for the child rules of testdata/workflows.toml.
func overlappingWriters(n int, tag string, extra string) string {
	var b strings.Builder
	b.WriteString(`{"name": "big"` + extra + `, "steps": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"id": "w%d", "task": "%s Rewrite part %d of src.", "write_set": ["src/**"]}`, i, tag, i)
	}
	b.WriteString("]}")
	return b.String()
}

// bigScript is a script whose parent answers prompt with a run_workflow
// call of spec, then reads the result.
func bigScript(t *testing.T, prompt, spec string) string {
	t.Helper()
	require.NotContains(t, spec, "'''")
	return fmt.Sprintf(`
[[rule]]
name = "big"
match = '^%s$'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '''%s'''
  [[rule.reply]]
  text = 'The result was {{field "output.mode" .ToolResult}} of {{field "output.summary.steps" .ToolResult}} steps.'

[[rule]]
name = "hang"
match = '\[hang\]'
  [[rule.reply]]
  hang = true
`, prompt, spec)
}

// TestBigDryRunSendsBoundedMessagesAndLogLines: 300 writers of one tree,
// dry-run in read_only (allowed there without asking, so any prompt can
// do it): 44,850 pairs at merge risk and 299 steps held back are counted,
// the first of them named, and every message and Log line stays small,
// with markers saying what was left out.
func TestBigDryRunSendsBoundedMessagesAndLogLines(t *testing.T) {
	e := newEnv(t, bigScript(t, "big plan", overlappingWriters(300, "[ready]", `, "dry_run": true`)))
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.result(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "read_only"}, nil)
	m, before := a.call(3, "session/prompt", promptParams(sid, "big plan"))
	require.Equal(t, "end_turn", stopReason(t, m))

	total := 0
	var end map[string]any
	for _, msg := range before {
		total += len(msg.raw)
		require.Less(t, len(msg.raw), 300<<10, "one message: %.200s", msg.raw)
	}
	require.Less(t, total, 1<<20, "everything the turn sent (it was 121 MiB)")
	for _, u := range updates(t, before) {
		if u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed" && u["rawOutput"] != nil {
			end = u
		}
	}
	require.NotNil(t, end, "the run_workflow call ended")
	raw, err := json.Marshal(end["rawOutput"])
	require.NoError(t, err)
	var res struct {
		OK     bool `json:"ok"`
		Output struct {
			Mode           string            `json:"mode"`
			Output         string            `json:"output"`
			Steps          []json.RawMessage `json:"steps"`
			MergeRisks     []json.RawMessage `json:"merge_conflict_risk"`
			MergeRiskCount struct {
				Pairs int `json:"pairs"`
			} `json:"merge_conflict_risk_count"`
			Truncated map[string]any `json:"truncated"`
		} `json:"output"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	require.True(t, res.OK)
	require.Equal(t, "dry_run", res.Output.Mode)
	require.Equal(t, 300*299/2, res.Output.MergeRiskCount.Pairs)
	require.Len(t, res.Output.MergeRisks, 50)
	require.Len(t, res.Output.Steps, 200)
	// One wave: no writer depends on another; 200 of its 300 steps listed.
	require.Equal(t, map[string]any{"waves": 1.0, "steps": 100.0, "serialized": 249.0, "merge_conflict_risk": 44800.0,
		"note": res.Output.Truncated["note"]}, res.Output.Truncated)
	require.Contains(t, res.Output.Output, "- … and 44830 more pairs")
	require.Contains(t, res.Output.Output, "Dry run: 300 steps in 1 wave")
	require.Contains(t, res.Output.Output, "… and 280 more\n")
	require.Equal(t, "The result was dry_run of 300 steps.", agentText(updates(t, before)))

	var resultLine string
	for _, ev := range readLog(t, e.ws, sid) {
		line, err := json.Marshal(ev)
		require.NoError(t, err)
		require.Less(t, len(line), 300<<10, "one Log line (one was 32 MiB): %.200s", line)
		if ev.Type == "tool_result" {
			resultLine = string(line)
		}
	}
	require.Contains(t, resultLine, `"truncated":{`)
	require.Contains(t, resultLine, `… and 44830 more pairs`)
}

// TestCancelOfABigRunEndsItPromptly: a run of 300 writers that wait until
// they are stopped, cancelled from the editor once its first step runs,
// answers the prompt cancelled, with the running step stopped and the
// rest held, all in the Log.
func TestCancelOfABigRunEndsItPromptly(t *testing.T) {
	e := newEnv(t, bigScript(t, "big run", overlappingWriters(300, "[hang]", "")))
	a := e.start()
	a.initialize()
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": promptParams(sid, "big run")})
	// The first step's child is running: its tool call is in progress.
	a.awaitUpdate(func(u map[string]any) bool {
		id, _ := u["toolCallId"].(string)
		return strings.HasPrefix(id, "subagent-") && u["status"] == "in_progress"
	})
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	m, before := a.reply("2")
	require.Equal(t, "cancelled", stopReason(t, m))
	for _, msg := range before {
		require.Less(t, len(msg.raw), 300<<10, "one message: %.200s", msg.raw)
	}

	var finished map[string]any
	held := 0
	for _, ev := range readLog(t, e.ws, sid) {
		if ev.Type != "workflow_event" {
			continue
		}
		var d map[string]any
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		switch d["kind"] {
		case "step_held":
			held++
		case "workflow_finished":
			finished = d
		}
	}
	require.NotNil(t, finished, "the run recorded its end")
	require.Equal(t, "cancelled", finished["stopped_by"])
	require.Equal(t, 299, held, "every step that had not started is held")
}
