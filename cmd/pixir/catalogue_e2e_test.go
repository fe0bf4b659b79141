package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// The model knows its helpers: the agents and workflow templates of the
// project reach the parent model's request (its system prompt), and a
// run_workflow call by template name, as the model makes it from there,
// runs the template. The model server is a fake that speaks OpenAI's
// Chat Completions and records every request body.
func TestTheCatalogueOfAgentsAndTemplatesReachesTheModel(t *testing.T) {
	var mu sync.Mutex
	var sent []sentRequest
	var calls atomic.Int32
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req sentRequest
		require.NoError(t, json.Unmarshal(body, &req))
		mu.Lock()
		sent = append(sent, req)
		mu.Unlock()
		switch calls.Add(1) {
		case 1:
			sseReply(0, concat(oaToolCall(0, "call_wf", "run_workflow", `{"template":"review","args":{"issue":"GAL-7"},"dry_run":true}`),
				[]string{oaChunk(`{}`, "tool_calls"), oaDone})...)(w, r, body)
		default:
			oaAnswer("Planned.", 100, 3)(w, r, body)
		}
	})
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	e, home := templateEnv(t)
	writeAgentFile(t, e.ws, "triager", "sandbox_mode = \"read-only\"\n")

	stdout, stderr, code := e.pixirAtHome(home, "run", "--json", "plan the review of GAL-7",
		"--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-main")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, sent, 2)
	system := sent[0].system()
	_, catalogue, ok := strings.Cut(system, "# Agents and workflow templates\n\n")
	require.True(t, ok, system)
	for _, want := range []string{
		"Agents (spawn_agent's agent, or a workflow step's agent):\n- check (read-only): Read-only reviewer",
		"\n- default: General-purpose child worker",
		"\n- explorer (read-only): Read-heavy evidence gatherer",
		"\n- triager (read-only): Looks around.\n",
		"\n- worker: Execution-focused worker",
		"Workflow templates (run_workflow {\"template\": NAME, \"args\": {…}}; a ? marks a parameter with a default):\n" +
			"- practice(issue: string, test_command?: string, base?: string): The multi-agent practice",
		"\n- review(issue: string, report?: string): Review one issue, then write the report.\n" +
			"- survey(question: string, report?: string): Two read-only explorers answer a question",
		"\n- triage(): Triage.\n",
	} {
		require.Contains(t, catalogue, want)
	}
	require.NotContains(t, catalogue, "broken", "a template file that does not load is left out")

	// The model's call by name ran the template: its dry run is the tool
	// result the model read next.
	var result string
	for _, m := range sent[1].Messages {
		if m.Role == "tool" && m.ToolCallID == "call_wf" && m.Content != nil {
			result = *m.Content
		}
	}
	require.Contains(t, result, `"ok":true`)
	require.Contains(t, result, "Wave 1: check")
	require.Contains(t, result, "| write | writer | isolated | check | REVIEW.md |")
}
