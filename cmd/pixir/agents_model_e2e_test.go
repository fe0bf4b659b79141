package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// An agent's model and reasoning effort, and the configured effort, reach
// the model server: the tests read the request bodies it received.

type sentRequest struct {
	Model           string `json:"model"`
	ReasoningEffort string `json:"reasoning_effort"`
	Messages        []struct {
		Role       string  `json:"role"`
		Content    *string `json:"content"`
		ToolCallID string  `json:"tool_call_id"`
	} `json:"messages"`
}

func (r sentRequest) system() string {
	if len(r.Messages) > 0 && r.Messages[0].Role == "system" && r.Messages[0].Content != nil {
		return *r.Messages[0].Content
	}
	return ""
}

// agentsServer plays a parent that spawns agent, waits for it and ends,
// and a child (any request for childModel) that answers at once.
func agentsServer(t *testing.T, agent, childModel string) (*fakeModel, func() []sentRequest) {
	var mu sync.Mutex
	var sent []sentRequest
	var parentCalls atomic.Int32
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req sentRequest
		require.NoError(t, json.Unmarshal(body, &req))
		mu.Lock()
		sent = append(sent, req)
		mu.Unlock()
		if req.Model == childModel {
			oaAnswer("The child looked and is done.", 50, 7)(w, r, body)
			return
		}
		switch parentCalls.Add(1) {
		case 1:
			sseReply(0, concat(oaToolCall(0, "call_spawn", "spawn_agent", `{"agent":"`+agent+`","task":"look around and report"}`),
				[]string{oaChunk(`{}`, "tool_calls"), oaDone})...)(w, r, body)
		case 2:
			sseReply(0, concat(oaToolCall(0, "call_wait", "wait_agent", `{"timeout_ms":60000}`),
				[]string{oaChunk(`{}`, "tool_calls"), oaDone})...)(w, r, body)
		default:
			oaAnswer("All done.", 100, 3)(w, r, body)
		}
	})
	return srv, func() []sentRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]sentRequest(nil), sent...)
	}
}

func writeAgentFile(t *testing.T, ws, name, extra string) {
	t.Helper()
	dir := filepath.Join(ws, ".pixir", "agents")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	body := "name = \"" + name + "\"\ndescription = \"Looks around.\"\ndeveloper_instructions = \"You are the " + name + " agent.\"\n" + extra
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".toml"), []byte(body), 0o644))
}

func TestAnAgentsModelAndReasoningEffortReachTheServer(t *testing.T) {
	srv, sent := agentsServer(t, "thinker", "gpt-big")
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	r := newRunEnv(t)
	t.Setenv("HOME", filepath.Join(r.home, "user")) // no agents of the machine's user
	require.NoError(t, os.MkdirAll(r.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(r.home, "config.toml"), []byte(
		"provider = \"openai\"\nbase_url = \""+srv.URL+"/v1\"\nmodel = \"gpt-small\"\nmodels = [\"gpt-small\", \"gpt-big\"]\nmodel_reasoning_effort = \"high\"\n"), 0o644))
	writeAgentFile(t, r.ws, "thinker", "model = \"gpt-big\"\nmodel_reasoning_effort = \"low\"\n")

	stdout, stderr, code := r.pixir("run", "--json", "get a child to look around")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Equal(t, "All done.", validEnvelope(t, stdout, "pixir_run_output.json")["output"].(map[string]any)["text"])

	var parent, child []sentRequest
	for _, req := range sent() {
		if req.Model == "gpt-big" {
			child = append(child, req)
		} else {
			parent = append(parent, req)
		}
	}
	require.Len(t, parent, 3)
	for _, req := range parent {
		require.Equal(t, "gpt-small", req.Model)
		require.Equal(t, "high", req.ReasoningEffort, "model_reasoning_effort of config.toml")
	}
	require.Len(t, child, 1, "the child ran on its agent's model")
	require.Equal(t, "low", child[0].ReasoningEffort, "the agent's own effort")
	require.Contains(t, child[0].system(), "You are the thinker agent.")
}

func TestAnAgentsModelThatIsNotConfiguredIsRefused(t *testing.T) {
	srv, sent := agentsServer(t, "wide", "gpt-huge")
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	r := newRunEnv(t)
	t.Setenv("HOME", filepath.Join(r.home, "user"))
	writeAgentFile(t, r.ws, "wide", "model = \"gpt-huge\"\n")

	stdout, stderr, code := r.pixir("run", "--json", "get a child to look around", "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-small")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	var spawnResult string
	for _, req := range sent() {
		require.NotEqual(t, "gpt-huge", req.Model, "never run on a model the configuration does not list")
		for _, m := range req.Messages {
			if m.Role == "tool" && m.ToolCallID == "call_spawn" && m.Content != nil {
				spawnResult = *m.Content
			}
		}
	}
	require.Contains(t, spawnResult, `"kind":"invalid_args"`)
	require.Contains(t, spawnResult, `agent \"wide\" asks for the model \"gpt-huge\" (model in `+filepath.Join(r.ws, ".pixir", "agents", "wide.toml"))
	require.Contains(t, spawnResult, "not among the models configured for the openai provider (gpt-small)")
	require.True(t, strings.Contains(spawnResult, "add it to models in config.toml"), spawnResult)
}

func TestReasoningEffortBecomesAnAnthropicThinkingBudget(t *testing.T) {
	srv := newFakeModel(t, sseReply(0, concat(
		[]string{anMessageStart(20), anEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			anDelta(0, `{"type":"text_delta","text":"Thought about it."}`), anStop(0)},
		anEnd("end_turn", 30))...))
	providerEnv(t, "ANTHROPIC_API_KEY", "sk-ant-e2e")
	r := newRunEnv(t)
	require.NoError(t, os.MkdirAll(r.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(r.home, "config.toml"), []byte("[profiles.deep]\nprovider = \"anthropic\"\nmodel_reasoning_effort = \"medium\"\n"), 0o644))
	stdout, stderr, code := r.pixir("run", "--json", "think", "--profile", "deep", "--base-url", srv.URL)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	var body struct {
		MaxTokens int            `json:"max_tokens"`
		Thinking  map[string]any `json:"thinking"`
	}
	require.NoError(t, json.Unmarshal(srv.received()[0].Body, &body))
	require.Equal(t, map[string]any{"type": "enabled", "budget_tokens": float64(8192)}, body.Thinking)
	require.Equal(t, 8192+4096, body.MaxTokens)
}
