package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An editor in ask mode allows a writer step's write and declines the
// merge of its work, over ACP through the binary: the work stays in the
// step's snapshot, so the workflow is not completed (it said completed,
// ok, with the file absent from the workspace and its dependent run on a
// workspace without it): the step needs the orchestrator, its dependent
// is held, and the next actions say how to land it.
func TestADeclinedMergeIsNotACompletedWorkflow(t *testing.T) {
	e := newEnv(t, writesOutA+`
[[rule]]
match = '\A\[d\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"looked"}'
  [[rule.reply]]
  text = "ok"

[[rule]]
match = 'go'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '{"name":"w","steps":[{"id":"w","task":"[w] write","write_set":["out/**"]},{"id":"d","task":"[d] look","depends_on":["w"]}]}'
  [[rule.reply]]
  text = "RESULT {{.ToolResult}}"
`)
	a := e.start()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, nil)
	sid := a.newSession()
	a.result(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "go")})
	m, _ := a.serveUntilReply("3", map[string]func(json.RawMessage) any{"session/request_permission": func(p json.RawMessage) any {
		var q struct {
			ToolCall map[string]any `json:"toolCall"`
		}
		require.NoError(t, json.Unmarshal(p, &q))
		if strings.HasPrefix(q.ToolCall["title"].(string), "Merge") {
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject_once"}}
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}
	}})
	require.Equal(t, "end_turn", stopReason(t, m))
	require.NoFileExists(t, filepath.Join(e.ws, "out", "a.txt"), "declined: not merged")

	// The run_workflow result, as the parent's Log has it.
	logs, err := filepath.Glob(filepath.Join(e.ws, ".pixir", "sessions", "*.ndjson"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	var res struct {
		OK     bool `json:"ok"`
		Output struct {
			Status string `json:"status"`
			Steps  []struct {
				StepID           string `json:"step_id"`
				CheckpointStatus string `json:"checkpoint_status"`
				Merge            *struct {
					Status string `json:"status"`
					Reason string `json:"reason"`
				} `json:"merge"`
			} `json:"steps"`
			SafeNextActions []struct {
				Action  string   `json:"action"`
				StepIDs []string `json:"step_ids"`
			} `json:"safe_next_actions"`
		} `json:"output"`
	}
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Name   string          `json:"name"`
				Result json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "tool_result" && ev.Data.Name == "run_workflow" {
			require.NoError(t, json.Unmarshal(ev.Data.Result, &res))
			found = true
		}
	}
	require.True(t, found, "the run_workflow result is in the Log")
	require.False(t, res.OK)
	require.Equal(t, "failed", res.Output.Status, "never completed: no step is checkpoint_ready")
	w := res.Output.Steps[0]
	require.Equal(t, "needs_orchestrator", w.CheckpointStatus)
	require.Equal(t, "not_merged", w.Merge.Status)
	require.Contains(t, w.Merge.Reason, "declined")
	require.Equal(t, "held", res.Output.Steps[1].CheckpointStatus, "d did not run on a workspace without w's work")
	var again []string
	for _, a := range res.Output.SafeNextActions {
		if a.Action == "merge_again" {
			again = a.StepIDs
		}
	}
	require.Equal(t, []string{"w"}, again)
}

// An editor in ask mode denies every write of a writer step whose child
// then reports checkpoint_ready anyway: the step did not do its work, so
// it is partial (it said "merged (0 files)" and the run completed), and
// the Log, inspect and the plan say so alike.
func TestAStepWhoseEveryChangeWasDeniedIsPartial(t *testing.T) {
	e := newEnv(t, writesOutA+`
[[rule]]
match = '\A\[d\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"looked"}'
  [[rule.reply]]
  text = "ok"

[[rule]]
match = 'go'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '{"name":"w","steps":[{"id":"w","task":"[w] write","write_set":["out/**"]},{"id":"d","task":"[d] look"}]}'
  [[rule.reply]]
  text = "RESULT {{.ToolResult}}"
`)
	a := e.start()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, nil)
	sid := a.newSession()
	a.result(2, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": promptParams(sid, "go")})
	var asked []string
	m, before := a.serveUntilReply("3", map[string]func(json.RawMessage) any{"session/request_permission": func(p json.RawMessage) any {
		var q struct {
			ToolCall map[string]any `json:"toolCall"`
		}
		require.NoError(t, json.Unmarshal(p, &q))
		title, _ := q.ToolCall["title"].(string)
		asked = append(asked, title)
		if strings.HasPrefix(title, "Workflow") || strings.HasPrefix(title, "Merge") {
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}
		}
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject_once"}}
	}})
	require.Equal(t, "end_turn", stopReason(t, m))
	require.Len(t, asked, 2, "the workflow, then w's write: %q", asked)
	require.NoFileExists(t, filepath.Join(e.ws, "out", "a.txt"), "denied: not written")

	// The plan's last entry for w says partial.
	var planW string
	for _, u := range updates(t, before) {
		if u["sessionUpdate"] != "plan" {
			continue
		}
		for _, en := range u["entries"].([]any) {
			en := en.(map[string]any)
			if content, _ := en["content"].(string); strings.HasPrefix(content, "w:") {
				planW = en["status"].(string) + " " + content
			}
		}
	}
	require.True(t, strings.HasSuffix(planW, "— partial"), planW)

	// The run_workflow result, as the parent's Log has it.
	logs, err := filepath.Glob(filepath.Join(e.ws, ".pixir", "sessions", "*.ndjson"))
	require.NoError(t, err)
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	var res struct {
		Output struct {
			Status string `json:"status"`
			Steps  []struct {
				CheckpointStatus string `json:"checkpoint_status"`
				Checkpoint       struct {
					KnownLimitations []string `json:"known_limitations"`
				} `json:"checkpoint"`
			} `json:"steps"`
		} `json:"output"`
	}
	for _, line := range strings.Split(string(b), "\n") {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Name   string          `json:"name"`
				Result json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "tool_result" && ev.Data.Name == "run_workflow" {
			require.NoError(t, json.Unmarshal(ev.Data.Result, &res))
		}
	}
	require.Equal(t, "partial", res.Output.Status, "never completed: w's work was not done")
	require.Equal(t, "partial", res.Output.Steps[0].CheckpointStatus)
	require.Contains(t, strings.Join(res.Output.Steps[0].Checkpoint.KnownLimitations, "\n"), "the user denied 1 change the child asked to make")
	require.Equal(t, "checkpoint_ready", res.Output.Steps[1].CheckpointStatus)
	a.exit()

	stdout, stderr, code := e.cli("inspect", sid)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "partial", stdout)
	require.NotContains(t, stdout, "merged (0 files)", stdout)
}
