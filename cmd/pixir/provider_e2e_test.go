package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests run `pixir acp` with the openai and anthropic providers
// against fake model servers on 127.0.0.1 that speak the real SSE wire
// formats.

// fakeModel is a model server that answers each request with the next of
// its replies (the last one repeats) and keeps what it received.
type fakeModel struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []fakeReply
	requests []fakeRequest
}

// fakeReply answers one request; body is the request body.
type fakeReply func(w http.ResponseWriter, r *http.Request, body []byte)

type fakeRequest struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

func newFakeModel(t *testing.T, replies ...fakeReply) *fakeModel {
	t.Helper()
	f := &fakeModel{replies: replies}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.requests)
		f.requests = append(f.requests, fakeRequest{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
		reply := f.replies[min(n, len(f.replies)-1)]
		f.mu.Unlock()
		reply(w, r, body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeModel) received() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

// sseReply streams events, each written in two pieces (so that events are
// split across reads, as on a real network) and flushed, with pause
// between them.
func sseReply(pause time.Duration, events ...string) fakeReply {
	return func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		for _, ev := range events {
			half := len(ev) / 2
			for _, piece := range []string{ev[:half], ev[half:]} {
				if _, err := io.WriteString(w, piece); err != nil {
					return
				}
				fl.Flush()
			}
			if pause > 0 {
				select {
				case <-time.After(pause):
				case <-r.Context().Done():
					return
				}
			}
		}
	}
}

// jsonReply answers with status and an error body.
func jsonReply(status int, body string, header ...string) fakeReply {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// stallReply sends events, then nothing until the client goes away.
func stallReply(events ...string) fakeReply {
	send := sseReply(0, events...)
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		send(w, r, body)
		<-r.Context().Done()
	}
}

// keepAliveReply sends events, then SSE keep-alive comments every 20 ms
// until the client goes away: a stream that never ends nor progresses.
func keepAliveReply(events ...string) fakeReply {
	send := sseReply(0, events...)
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		send(w, r, body)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	}
}

// cutReply sends events, then drops the connection mid-response.
func cutReply(events ...string) fakeReply {
	send := sseReply(0, events...)
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		send(w, r, body)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}
}

// --- the OpenAI wire format ---

// oaChunk is one chat.completion.chunk event as OpenAI sends it.
func oaChunk(delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return fmt.Sprintf(`data: {"id":"chatcmpl-CLe2e","object":"chat.completion.chunk","created":1759312345,"model":"gpt-test-2025-04-14",`+
		`"service_tier":"default","system_fingerprint":"fp_4fce0778af","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}],"usage":null,"obfuscation":"x"}`+"\n\n", delta, fr)
}

func oaUsage(prompt, completion int) string {
	return fmt.Sprintf(`data: {"id":"chatcmpl-CLe2e","object":"chat.completion.chunk","created":1759312345,"model":"gpt-test-2025-04-14",`+
		`"service_tier":"default","system_fingerprint":"fp_4fce0778af","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,`+
		`"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"obfuscation":"x"}`+"\n\n",
		prompt, completion, prompt+completion)
}

const oaDone = "data: [DONE]\n\n"

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// oaToolCall streams a tool call the way OpenAI does: id, type and name
// first with empty arguments, then the arguments in pieces.
func oaToolCall(index int, id, name string, argPieces ...string) []string {
	out := []string{oaChunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, index, id, name), "")}
	for _, p := range argPieces {
		out = append(out, oaChunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, index, jsonString(p)), ""))
	}
	return out
}

func oaText(pieces ...string) []string {
	var out []string
	for _, p := range pieces {
		out = append(out, oaChunk(`{"content":`+jsonString(p)+`}`, ""))
	}
	return out
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// oaAnswer is a streamed text answer with usage and [DONE].
func oaAnswer(text string, prompt, completion int) fakeReply {
	words := strings.SplitAfter(text, " ")
	return sseReply(0, concat(
		[]string{oaChunk(`{"role":"assistant","content":"","refusal":null}`, "")},
		oaText(words...),
		[]string{oaChunk(`{}`, "stop"), oaUsage(prompt, completion), oaDone},
	)...)
}

// --- the process ---

// providerEnv sets the provider variables for the pixir processes the test
// starts (start passes the test's environment on): those given, and every
// other one empty, so the machine's own settings do not leak in.
func providerEnv(t *testing.T, kv ...string) {
	t.Helper()
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "PIXIR_PROFILE", "PIXIR_MODEL"} {
		t.Setenv(k, "")
	}
	for i := 0; i+1 < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

// writeConfig writes $PIXIR_HOME/config.toml.
func (e *env) writeConfig(config string) {
	e.t.Helper()
	require.NoError(e.t, os.MkdirAll(e.home, 0o755))
	require.NoError(e.t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte(config), 0o644))
}

// toolCallsByID folds tool_call and tool_call_update notifications into
// the last state of each call, and says in which order the calls came.
func toolCallsByID(ups []map[string]any) (map[string]map[string]any, []string) {
	calls := map[string]map[string]any{}
	var order []string
	for _, u := range ups {
		kind := u["sessionUpdate"]
		if kind != "tool_call" && kind != "tool_call_update" {
			continue
		}
		id, _ := u["toolCallId"].(string)
		c, ok := calls[id]
		if !ok {
			c = map[string]any{"first": kind}
			calls[id] = c
			order = append(order, id)
		}
		for k, v := range u {
			if v != nil {
				c[k] = v
			}
		}
	}
	return calls, order
}

func usageUpdates(ups []map[string]any) []map[string]any {
	var out []map[string]any
	for _, u := range ups {
		if u["sessionUpdate"] == "usage_update" {
			out = append(out, u)
		}
	}
	return out
}

// chatRequest is the part of a Chat Completions request the tests check.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string  `json:"role"`
		Content    *string `json:"content"`
		ToolCallID string  `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func TestOpenAIProviderTurnWithToolCalls(t *testing.T) {
	const content = "hi from the model\n"
	const answer = "I wrote hello.txt and read it back."
	var toolMessages sync.Map // tool_call_id → content, as the second request carried them
	srv := newFakeModel(t,
		// Call 1: two parallel tool calls, their arguments in fragments.
		sseReply(5*time.Millisecond, concat(
			[]string{oaChunk(`{"role":"assistant","content":null,"refusal":null}`, "")},
			oaToolCall(0, "call_w1", "write", `{"pa`, `th": "hel`, `lo.txt", "con`, `tent": "hi from `, `the model\n"}`),
			oaToolCall(1, "call_r2", "read", `{"path"`, `: "hello.txt"}`),
			[]string{oaChunk(`{}`, "tool_calls"), oaUsage(1180, 61), oaDone},
		)...),
		// Call 2: it must see both results; then it answers.
		func(w http.ResponseWriter, r *http.Request, body []byte) {
			var req chatRequest
			if json.Unmarshal(body, &req) == nil {
				for _, m := range req.Messages {
					if m.Role == "tool" && m.Content != nil {
						toolMessages.Store(m.ToolCallID, *m.Content)
					}
				}
			}
			oaAnswer(answer, 1302, 11)(w, r, body)
		},
	)
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	e := newEnv(t, "")
	e.writeConfig("context_window = 32768\n")
	a := e.start("--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-test")
	a.initialize()
	sid := a.newSession()
	m, before := a.call(2, "session/prompt", promptParams(sid, "write hello.txt, then read it"))
	require.Equal(t, "end_turn", stopReason(t, m), "stderr: %s", a.stderr.String())
	ups := updates(t, before)

	// The tool calls ran, in order, and completed.
	calls, order := toolCallsByID(ups)
	require.Equal(t, []string{"call_w1", "call_r2"}, order)
	w, r := calls["call_w1"], calls["call_r2"]
	require.Equal(t, "tool_call", w["first"], "announced with tool_call before any update")
	require.Equal(t, "completed", w["status"])
	require.Equal(t, "edit", w["kind"])
	require.Equal(t, map[string]any{"path": "hello.txt", "content": content}, w["rawInput"], "the fragments were joined")
	require.Equal(t, "completed", r["status"])
	require.Equal(t, "read", r["kind"])
	got, err := os.ReadFile(filepath.Join(e.ws, "hello.txt"))
	require.NoError(t, err)
	require.Equal(t, content, string(got))

	// The answer streamed, in several chunks.
	require.Equal(t, answer, agentText(ups))
	chunks := 0
	for _, u := range ups {
		if u["sessionUpdate"] == "agent_message_chunk" {
			chunks++
		}
	}
	require.Greater(t, chunks, 3, "streamed, not sent whole")

	// Usage reached the editor with the configured context window.
	usage := usageUpdates(ups)
	require.Len(t, usage, 2, "one per model call")
	require.Equal(t, map[string]any{"sessionUpdate": "usage_update", "used": float64(1180 + 61), "size": float64(32768)}, usage[0])
	require.Equal(t, map[string]any{"sessionUpdate": "usage_update", "used": float64(1302 + 11), "size": float64(32768)}, usage[1])

	// What the server received.
	reqs := srv.received()
	require.Len(t, reqs, 2)
	for _, req := range reqs {
		require.Equal(t, "POST", req.Method)
		require.Equal(t, "/v1/chat/completions", req.Path)
		require.Equal(t, "Bearer sk-e2e", req.Header.Get("Authorization"))
	}
	var first, second chatRequest
	require.NoError(t, json.Unmarshal(reqs[0].Body, &first))
	require.NoError(t, json.Unmarshal(reqs[1].Body, &second))
	require.Equal(t, "gpt-test", first.Model)
	require.True(t, first.Stream)
	var toolNames []string
	for _, tool := range first.Tools {
		toolNames = append(toolNames, tool.Function.Name)
	}
	require.Contains(t, toolNames, "write")
	require.Contains(t, toolNames, "read")
	// The second request carries the assistant's calls and both results,
	// each with the id of its call.
	var asked []string
	for _, m := range second.Messages {
		if m.Role == "assistant" {
			for _, tc := range m.ToolCalls {
				asked = append(asked, tc.ID+" "+tc.Function.Name+" "+tc.Function.Arguments)
			}
		}
	}
	require.Equal(t, []string{
		`call_w1 write {"path": "hello.txt", "content": "hi from the model\n"}`,
		`call_r2 read {"path": "hello.txt"}`,
	}, asked)
	last := second.Messages[len(second.Messages)-2:]
	require.Equal(t, "tool", last[0].Role)
	require.Equal(t, "call_w1", last[0].ToolCallID)
	require.Equal(t, "tool", last[1].Role)
	require.Equal(t, "call_r2", last[1].ToolCallID)
	readResult, ok := toolMessages.Load("call_r2")
	require.True(t, ok)
	require.Contains(t, readResult, `"ok":true`)
	require.Contains(t, readResult, "hi from the model", "the model reads the file's content")

	// The Log holds the evidence.
	events := readLog(t, e.ws, sid)
	require.Equal(t, []string{
		"user_message", "assistant_message", "provider_usage",
		"tool_call", "permission_decision", "tool_result", "tool_call", "tool_result",
		"assistant_message", "provider_usage",
	}, eventTypes(events))
	var usageData []map[string]any
	for _, ev := range events {
		if ev.Type == "provider_usage" {
			var d map[string]any
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			usageData = append(usageData, d)
		}
	}
	require.Equal(t, "openai", usageData[1]["provider"])
	require.Equal(t, "gpt-test", usageData[1]["model"])
	require.Equal(t, float64(1302), usageData[1]["input_tokens"])
	require.Equal(t, float64(11), usageData[1]["output_tokens"])
	require.Equal(t, float64(32768), usageData[1]["context_window"])
}

// --- the Anthropic wire format ---

func anEvent(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

func anMessageStart(input int) string {
	return anEvent("message_start", fmt.Sprintf(`{"type":"message_start","message":{"model":"claude-test-20250929","id":"msg_01e2e","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,`+
		`"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}`, input))
}

func anDelta(index int, delta string) string {
	return anEvent("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, index, delta))
}

func anStop(index int) string {
	return anEvent("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, index))
}

func anEnd(stopReason string, output int) []string {
	return []string{
		anEvent("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stopReason, output)),
		anEvent("message_stop", `{"type":"message_stop"}`),
	}
}

// messagesRequest is the part of a Messages API request the test checks.
type messagesRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   string          `json:"content"`
		} `json:"content"`
	} `json:"messages"`
}

func TestAnthropicProviderTurnWithToolUse(t *testing.T) {
	const answer = "Done: notes.txt holds the note."
	srv := newFakeModel(t,
		sseReply(5*time.Millisecond, concat(
			[]string{
				anMessageStart(2048),
				anEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
				anEvent("ping", `{"type": "ping"}`),
				anDelta(0, `{"type":"thinking_delta","thinking":"The user wants a note."}`),
				anDelta(0, `{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}`),
				anStop(0),
				anEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
				anDelta(1, `{"type":"text_delta","text":"Writing the note."}`),
				anStop(1),
				anEvent("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01E2e","name":"write","input":{}}}`),
				anDelta(2, `{"type":"input_json_delta","partial_json":""}`),
				anDelta(2, `{"type":"input_json_delta","partial_json":"{\"path\": \"no"}`),
				anDelta(2, `{"type":"input_json_delta","partial_json":"tes.txt\", \"content\": \"a no"}`),
				anDelta(2, `{"type":"input_json_delta","partial_json":"te\\n\"}"}`),
				anStop(2),
			},
			anEnd("tool_use", 87),
		)...),
		sseReply(0, concat(
			[]string{
				anMessageStart(2301),
				anEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
				anDelta(0, `{"type":"text_delta","text":"Done: notes.txt"}`),
				anDelta(0, `{"type":"text_delta","text":" holds the note."}`),
				anStop(0),
			},
			anEnd("end_turn", 9),
		)...),
	)
	providerEnv(t, "ANTHROPIC_API_KEY", "sk-ant-e2e")
	e := newEnv(t, "")
	a := e.start("--provider", "anthropic", "--base-url", srv.URL, "--model", "claude-test")
	a.initialize()
	sid := a.newSession()
	m, before := a.call(2, "session/prompt", promptParams(sid, "write a note"))
	require.Equal(t, "end_turn", stopReason(t, m), "stderr: %s", a.stderr.String())
	ups := updates(t, before)

	var thought strings.Builder
	for _, u := range ups {
		if u["sessionUpdate"] == "agent_thought_chunk" {
			thought.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	require.Equal(t, "The user wants a note.", thought.String(), "thinking streams as a thought")
	require.Equal(t, "Writing the note."+answer, agentText(ups))
	calls, order := toolCallsByID(ups)
	require.Equal(t, []string{"toolu_01E2e"}, order)
	require.Equal(t, "completed", calls["toolu_01E2e"]["status"])
	require.Equal(t, map[string]any{"path": "notes.txt", "content": "a note\n"}, calls["toolu_01E2e"]["rawInput"])
	got, err := os.ReadFile(filepath.Join(e.ws, "notes.txt"))
	require.NoError(t, err)
	require.Equal(t, "a note\n", string(got))
	usage := usageUpdates(ups)
	require.Len(t, usage, 2)
	require.Equal(t, float64(2301+9), usage[1]["used"])
	require.Equal(t, float64(200000), usage[1]["size"], "the Claude context window by default")

	reqs := srv.received()
	require.Len(t, reqs, 2)
	require.Equal(t, "/v1/messages", reqs[1].Path)
	require.Equal(t, "sk-ant-e2e", reqs[1].Header.Get("X-Api-Key"))
	require.Equal(t, "2023-06-01", reqs[1].Header.Get("Anthropic-Version"))
	var second messagesRequest
	require.NoError(t, json.Unmarshal(reqs[1].Body, &second))
	require.Equal(t, "claude-test", second.Model)
	require.True(t, second.Stream)
	n := len(second.Messages)
	require.GreaterOrEqual(t, n, 3)
	asst, user := second.Messages[n-2], second.Messages[n-1]
	require.Equal(t, "assistant", asst.Role)
	require.Equal(t, "tool_use", asst.Content[len(asst.Content)-1].Type)
	require.Equal(t, "toolu_01E2e", asst.Content[len(asst.Content)-1].ID)
	require.JSONEq(t, `{"path":"notes.txt","content":"a note\n"}`, string(asst.Content[len(asst.Content)-1].Input))
	require.Equal(t, "user", user.Role)
	require.Equal(t, "tool_result", user.Content[0].Type)
	require.Equal(t, "toolu_01E2e", user.Content[0].ToolUseID)
	require.Contains(t, user.Content[0].Content, `"ok":true`)

	events := readLog(t, e.ws, sid)
	require.Contains(t, eventTypes(events), "reasoning")
	require.Contains(t, eventTypes(events), "provider_usage")
}

// --- failures ---

// closedURL is an http URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr
}

func TestProviderFailuresAreReadableTurnFailures(t *testing.T) {
	const recovered = "Back to normal."
	ok := oaAnswer(recovered, 10, 3)
	tests := []struct {
		name    string
		key     string
		config  string
		replies []fakeReply
		baseURL func(t *testing.T, srv *fakeModel) string
		want    []string
		partial string // text shown before the failure
	}{
		{name: "wrong key", key: "sk-wrong",
			replies: []fakeReply{jsonReply(401, `{"error":{"message":"Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`), ok},
			want:    []string{"rejected the API key (401 Unauthorized invalid_api_key)", "set OPENAI_API_KEY to a valid key"}},
		{name: "no key where one is needed",
			replies: []fakeReply{jsonReply(401, `{"error":{"message":"You didn't provide an API key.","type":"invalid_request_error","param":null,"code":null}}`), ok},
			want:    []string{"wants an API key and none is set", "set OPENAI_API_KEY"}},
		{name: "unknown model",
			replies: []fakeReply{jsonReply(404, `{"error":{"message":"The model `+"`gpt-test`"+` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`), ok},
			want:    []string{`does not know the model "gpt-test"`, "--model, PIXIR_MODEL", "pixir doctor"}},
		{name: "unreachable server",
			baseURL: func(t *testing.T, _ *fakeModel) string { return closedURL(t) + "/v1" },
			want:    []string{"cannot reach the OpenAI-compatible server at http://127.0.0.1:", "connection refused", "--base-url, OPENAI_BASE_URL or base_url in config.toml"}},
		// The idle timeouts are long enough that a loaded machine's first
		// chunk comes before them: only the stall after it runs out (at
		// 300 ms a slow first chunk failed the turn before "Thinking").
		{name: "server stalls past the idle timeout", config: "idle_timeout = \"2s\"\n",
			replies: []fakeReply{stallReply(oaText("Thinking")...), ok},
			want:    []string{"sent no part of the answer for 2s", "idle_timeout in config.toml"}, partial: "Thinking"},
		{name: "an endless answer stops at max_answer_size", config: "max_answer_size = \"1KiB\"\n",
			replies: []fakeReply{sseReply(0, oaText(strings.SplitAfter(strings.Repeat("la ", 5000), " ")...)...), ok},
			want:    []string{"grew past 1KiB, so Pixir stopped it; what arrived is kept", "max_answer_size in config.toml"}, partial: "la la la "},
		{name: "only keep-alives after the first words", config: "idle_timeout = \"2s\"\n",
			replies: []fakeReply{keepAliveReply(oaText("Thinking")...), ok},
			want:    []string{"sent no part of the answer for 2s (keep-alives do not count)", "idle_timeout in config.toml"}, partial: "Thinking"},
		{name: "a request too large for the token limit",
			replies: []fakeReply{jsonReply(429, `{"error":{"message":"Request too large for gpt-test in organization org-e2e on tokens per min (TPM): Limit 30000, Requested 48211. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`), ok},
			want:    []string{"refused the request as too large (429 Too Many Requests rate_limit_exceeded)", "waiting will not help", "start a new session"}},
		{name: "an older llama.cpp server's error event",
			replies: []fakeReply{sseReply(0, oaChunk(`{"role":"assistant","content":null}`, ""),
				`error: {"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}`+"\n\n", oaDone), ok},
			want: []string{"exceed_context_size_error: the request exceeds the available context size, try increasing it"}},
		{name: "server closes mid-stream",
			replies: []fakeReply{cutReply(oaText("Half", " an answer")...), ok},
			want:    []string{"send the prompt again"}, partial: "Half an answer"},
		{name: "server error after the retries", config: "max_retries = 1\n",
			replies: []fakeReply{jsonReply(503, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}`),
				jsonReply(503, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}`), ok},
			want: []string{"failed (503 Service Unavailable server_error): The engine is currently overloaded", "gave up after 2 attempts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replies := tt.replies
			if replies == nil {
				replies = []fakeReply{ok}
			}
			srv := newFakeModel(t, replies...)
			base := srv.URL + "/v1"
			if tt.baseURL != nil {
				base = tt.baseURL(t, srv)
			}
			providerEnv(t, "OPENAI_API_KEY", tt.key)
			e := newEnv(t, "")
			e.writeConfig(tt.config)
			a := e.start("--provider", "openai", "--base-url", base, "--model", "gpt-test")
			a.initialize()
			sid := a.newSession()
			m, before := a.call(2, "session/prompt", promptParams(sid, "hello"))
			require.Equal(t, "end_turn", stopReason(t, m)) // a hang fails on go test's timeout
			text := agentText(updates(t, before))
			require.Contains(t, text, "the model provider failed")
			require.True(t, strings.HasPrefix(text, tt.partial), "the text shown before the failure stays: %q", text)
			for _, w := range tt.want {
				require.Contains(t, text, w)
			}
			var failed []string
			for _, ev := range readLog(t, e.ws, sid) {
				if ev.Type == "assistant_message" && tt.partial != "" {
					var d struct {
						Text    string
						Partial bool
					}
					require.NoError(t, json.Unmarshal(ev.Data, &d))
					require.True(t, d.Partial && strings.HasPrefix(d.Text, tt.partial), "the Log keeps what was shown: %+v", d)
				}
				if ev.Type == "turn_failed" {
					var d struct{ Kind, Message string }
					require.NoError(t, json.Unmarshal(ev.Data, &d))
					require.Equal(t, "provider_error", d.Kind)
					failed = append(failed, d.Message)
				}
			}
			require.Len(t, failed, 1)
			for _, w := range tt.want {
				require.Contains(t, failed[0], w)
			}

			// The session is still usable.
			m, before = a.call(3, "session/prompt", promptParams(sid, "again"))
			require.Equal(t, "end_turn", stopReason(t, m))
			if tt.baseURL == nil {
				require.Equal(t, recovered, agentText(updates(t, before)))
			}
		})
	}
}

func TestProviderRetriesBeforeOutputThenSucceeds(t *testing.T) {
	tests := []struct {
		name    string
		first   fakeReply
		minWait time.Duration
	}{
		{"429 with Retry-After", jsonReply(429, `{"error":{"message":"Rate limit reached for gpt-test on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "Retry-After", "1"), 900 * time.Millisecond},
		{"500", jsonReply(500, `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeModel(t, tt.first, oaAnswer("Fine now.", 20, 3))
			providerEnv(t)
			e := newEnv(t, "")
			a := e.start("--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-test")
			a.initialize()
			sid := a.newSession()
			start := time.Now()
			m, before := a.call(2, "session/prompt", promptParams(sid, "hello"))
			require.Equal(t, "end_turn", stopReason(t, m))
			require.GreaterOrEqual(t, time.Since(start), tt.minWait)
			require.Equal(t, "Fine now.", agentText(updates(t, before)))
			require.Len(t, srv.received(), 2)
			require.NotContains(t, eventTypes(readLog(t, e.ws, sid)), "turn_failed")
		})
	}
}

func TestCancelWhileTheProviderStreams(t *testing.T) {
	gone := make(chan struct{})
	var once sync.Once
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		sseReply(0, oaText("Working", " on it")...)(w, r, body)
		<-r.Context().Done()
		once.Do(func() { close(gone) })
	})
	providerEnv(t)
	e := newEnv(t, "")
	a := e.start("--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-test")
	a.initialize()
	sid := a.newSession()
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": promptParams(sid, "go")})
	// Wait until the answer is streaming.
	for streaming := false; !streaming; {
		m := a.next()
		streaming = m.Method == "session/update" && updates(t, []message{m})[0]["sessionUpdate"] == "agent_message_chunk"
	}
	a.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	m, _ := a.reply("2")
	require.Equal(t, "cancelled", stopReason(t, m))
	<-gone // the connection to the model server closed with the cancel
}

func TestAnthropicProviderFailures(t *testing.T) {
	tests := []struct {
		name, key string
		requests  int
		want      []string
	}{
		{"no key: said without asking the server", "", 0,
			[]string{"the anthropic provider needs an API key and ANTHROPIC_API_KEY is not set; export ANTHROPIC_API_KEY="}},
		{"wrong key", "sk-ant-wrong", 1,
			[]string{"the Anthropic API at http://127.0.0.1:", "rejected the API key (401 Unauthorized authentication_error): invalid x-api-key", "set ANTHROPIC_API_KEY to a valid key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeModel(t, jsonReply(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CUbR7"}`))
			providerEnv(t, "ANTHROPIC_API_KEY", tt.key)
			e := newEnv(t, "")
			a := e.start("--provider", "anthropic", "--base-url", srv.URL)
			a.initialize()
			sid := a.newSession()
			m, before := a.call(2, "session/prompt", promptParams(sid, "hello"))
			require.Equal(t, "end_turn", stopReason(t, m))
			text := agentText(updates(t, before))
			for _, w := range tt.want {
				require.Contains(t, text, w)
			}
			require.Contains(t, eventTypes(readLog(t, e.ws, sid)), "turn_failed")
			require.Len(t, srv.received(), tt.requests)
		})
	}
}

func TestOpenAIProviderNeedsAModel(t *testing.T) {
	providerEnv(t)
	e := newEnv(t, "")
	a := e.start("--provider", "openai", "--base-url", "http://127.0.0.1:1/v1")
	require.Error(t, a.cmd.Wait())
	require.Equal(t, exitUsage, a.cmd.ProcessState.ExitCode())
	require.Contains(t, a.stderr.String(), "the openai provider needs a model: set --model, PIXIR_MODEL or model in config.toml")
}

// pixir run says each retry on stderr, and how long it waits: a retry was
// an info log, below what pixir run shows, so a server's Retry-After (up
// to a minute, each attempt) was a silent wait that looked like a hang.
func TestRunSaysEachRetryOfTheModelRequest(t *testing.T) {
	srv := newFakeModel(t,
		jsonReply(503, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error","param":null,"code":null}}`, "Retry-After", "0"),
		oaAnswer("Fine now.", 20, 3))
	e := newRunEnv(t)
	e.env = append(e.env, "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	stdout, stderr, code := e.pixir("run", "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-test", "hello")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Fine now.\n", stdout)
	require.Len(t, srv.received(), 2)
	require.Regexp(t, `pixir: warning: the model request failed; trying again \(url: http://127\.0\.0\.1:[0-9]+/v1/chat/completions, attempt: 1 of 4, wait: [0-9.]+m?s, err: HTTP 503 Service Unavailable: The engine is currently overloaded`, stderr)
}

// An answer whose tool call's arguments are not JSON is charged, and the
// call is answered invalid_args for the model to read: the turn goes on
// (the model answers again), the call and its result are in the Log. The
// turn failed ("send the prompt again"); before that the answer's tokens
// were dropped with it.
func TestABrokenToolCallIsAnsweredAndCharged(t *testing.T) {
	srv := newFakeModel(t, sseReply(0, concat(
		[]string{oaChunk(`{"role":"assistant","content":null,"refusal":null}`, "")},
		oaToolCall(0, "call_1", "read", `{"path": "a.t`),
		[]string{oaChunk(`{}`, "tool_calls"), oaUsage(50, 7), oaDone},
	)...), sseReply(0, concat(
		[]string{oaChunk(`{"role":"assistant","content":"","refusal":null}`, "")},
		oaText("done"),
		[]string{oaChunk(`{}`, "stop"), oaUsage(80, 2), oaDone})...))
	e := newRunEnv(t)
	e.env = append(e.env, "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	stdout, stderr, code := e.pixir("run", "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-test", "--json", "hello")
	require.Equal(t, exitOK, code, stderr)
	out := validEnvelope(t, stdout, "pixir_run_output.json")["output"].(map[string]any)
	require.Equal(t, map[string]any{"input_tokens": 130.0, "output_tokens": 9.0, "model_calls": 2.0}, out["usage"])
	require.Equal(t, 1.0, out["failed_tool_calls"])
	reqs := srv.received()
	require.Len(t, reqs, 2)
	// The second request answers the call: {} in place of what came, and
	// the result saying why.
	var sent struct {
		Messages []struct {
			Role      string `json:"role"`
			Content   any    `json:"content"`
			ToolCalls []struct {
				Function struct{ Arguments string } `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(reqs[1].Body, &sent))
	msgs := sent.Messages[len(sent.Messages)-2:]
	require.Equal(t, "{}", msgs[0].ToolCalls[0].Function.Arguments)
	require.Equal(t, "tool", msgs[1].Role)
	require.Equal(t, `{"ok":false,"error":{"kind":"invalid_args","message":"the arguments of this call of \"read\" are not valid JSON (unexpected end of JSON input), so it was not run: {\"path\": \"a.t; call it again with its arguments as one JSON object"}}`, msgs[1].Content)
	var types []string
	for _, ev := range readLog(t, e.ws, out["session_id"].(string)) {
		types = append(types, ev.Type)
	}
	require.Equal(t, []string{"user_message", "assistant_message", "provider_usage", "tool_call", "tool_result", "assistant_message", "provider_usage"}, types)
}

// A tool call the token limit cut off (its arguments stop in the middle)
// is not answered invalid_args for the model to try again: the answer was
// cut, so the turn ends max_tokens (partial), none of its calls run, and
// the notice names the call. It ended as a provider failure.
func TestAToolCallCutOffAtTheTokenLimitEndsTheTurnMaxTokens(t *testing.T) {
	srv := newFakeModel(t, sseReply(0, concat(
		[]string{oaChunk(`{"role":"assistant","content":"","refusal":null}`, "")},
		oaText("Writing it."),
		oaToolCall(0, "call_1", "read", `{"path": "a.txt"}`),
		oaToolCall(1, "call_2", "write", `{"path": "b.txt", "content": "the first half`),
		[]string{oaChunk(`{}`, "length"), oaUsage(50, 7), oaDone},
	)...))
	e := newRunEnv(t)
	e.env = append(e.env, "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	stdout, stderr, code := e.pixir("run", "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-test", "hello")
	require.Equal(t, exitPartial, code, stderr)
	require.Equal(t, "Writing it.", strings.TrimSpace(stdout))
	require.Contains(t, stderr, `in the middle of its call of "write", so none of the answer's tool calls ran`)
	require.Contains(t, stderr, "pixir: the turn ended max_tokens")
	require.Contains(t, stderr, "pixir: usage: 57 tokens (50 in, 7 out) in 1 model call")
	require.Len(t, srv.received(), 1)
	var types []string
	for _, ev := range readLog(t, e.ws, onlySession(t, e.ws)) {
		types = append(types, ev.Type)
	}
	// The last is why the turn stopped (max_tokens).
	require.Equal(t, []string{"user_message", "assistant_message", "provider_usage", "notice", "assistant_message"}, types)
}

// An answer the model's token limit cut off (OpenAI finish_reason
// "length", Anthropic stop_reason "max_tokens") is not a finished turn: it
// ends max_tokens (pixir run: partial, exit 2), and the user is told why
// and what to raise, in the Log too. It was reported completed, the cut
// answer shown as if the model had finished it.
func TestAnAnswerCutOffAtTheTokenLimitIsNotAFinishedTurn(t *testing.T) {
	for _, tt := range []struct {
		name, provider string
		reply          fakeReply
	}{
		{"openai", "openai", sseReply(0, concat(
			[]string{oaChunk(`{"role":"assistant","content":"","refusal":null}`, "")},
			oaText("The first ", "half of"),
			[]string{oaChunk(`{}`, "length"), oaUsage(20, 4), oaDone})...)},
		{"anthropic", "anthropic", sseReply(0, concat(
			[]string{anMessageStart(20), anEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
				anDelta(0, `{"type":"text_delta","text":"The first "}`), anDelta(0, `{"type":"text_delta","text":"half of"}`), anStop(0)},
			anEnd("max_tokens", 4))...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeModel(t, tt.reply)
			e := newRunEnv(t)
			base := srv.URL + "/v1"
			if tt.provider == "anthropic" {
				base = srv.URL
			}
			e.env = append(e.env, "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "ANTHROPIC_API_KEY=sk-ant-test", "ANTHROPIC_BASE_URL=")
			stdout, stderr, code := e.pixir("run", "--provider", tt.provider, "--base-url", base, "--model", "m", "hello")
			require.Equal(t, exitPartial, code, stderr)
			require.Equal(t, "The first half of", strings.TrimSpace(stdout), "what arrived is shown")
			require.Contains(t, stderr, "! The answer was cut off at the model's token limit: ")
			require.Contains(t, stderr, "raise max_tokens in config.toml")
			require.Contains(t, stderr, "pixir: the turn ended max_tokens")
			var notices int
			for _, ev := range readLog(t, e.ws, onlySession(t, e.ws)) {
				if ev.Type == "notice" {
					notices++
				}
			}
			require.Equal(t, 1, notices, "the Log says why the turn ended")
		})
	}
}
