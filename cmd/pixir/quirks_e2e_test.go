package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// Provider quirks found in recorded traffic, through the binary: what a
// server sends must reach every view of a turn.

func thoughtText(ups []map[string]any) string {
	var s string
	for _, u := range ups {
		if u["sessionUpdate"] == "agent_thought_chunk" {
			s += u["content"].(map[string]any)["text"].(string)
		}
	}
	return s
}

// TestQuirkAnAnswerThatIsNotStreamedIsShownEverywhere: servers that ignore
// stream:true answer once with JSON. The editor, pixir run --json and the
// Log all get the answer.
func TestQuirkAnAnswerThatIsNotStreamedIsShownEverywhere(t *testing.T) {
	openaiBody := `{"id":"chatcmpl-9","object":"chat.completion","created":1759312345,"model":"local","choices":[{"index":0,"message":{"role":"assistant",` +
		`"reasoning_content":"A greeting.","content":"Hello from a server that does not stream."},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":9,"total_tokens":909}}`
	anthropicBody := `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"A greeting.","signature":"sig"},` +
		`{"type":"text","text":"Hello from a server that does not stream."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":900,"output_tokens":9}}`
	for _, tt := range []struct {
		provider, body, base string
	}{
		{"openai", openaiBody, "/v1"},
		{"anthropic", anthropicBody, ""},
	} {
		t.Run(tt.provider, func(t *testing.T) {
			srv := newFakeModel(t, jsonReply(200, tt.body))
			providerEnv(t, "ANTHROPIC_API_KEY", "sk-ant-e2e")
			flags := []string{"--provider", tt.provider, "--base-url", srv.URL + tt.base, "--model", "m"}

			// The editor.
			e := newEnv(t, "")
			a := e.start(append([]string{}, flags...)...)
			a.initialize()
			sid := a.newSession()
			m, before := a.call(2, "session/prompt", promptParams(sid, "hello"))
			require.Equal(t, "end_turn", stopReason(t, m), "stderr: %s", a.stderr.String())
			ups := updates(t, before)
			require.Equal(t, "Hello from a server that does not stream.", agentText(ups))
			require.Equal(t, "A greeting.", thoughtText(ups))
			require.Len(t, srv.received(), 1, "used at once, not retried")

			// The Log.
			var texts []string
			for _, ev := range readLog(t, e.ws, sid) {
				if ev.Type == "assistant_message" {
					var d struct{ Text string }
					require.NoError(t, json.Unmarshal(ev.Data, &d))
					texts = append(texts, d.Text)
				}
			}
			require.Equal(t, []string{"Hello from a server that does not stream."}, texts)

			// pixir run, with and without --json.
			r := newRunEnv(t)
			stdout, stderr, code := r.pixir(append([]string{"run", "hello"}, flags...)...)
			require.Equal(t, exitOK, code, stderr)
			require.Contains(t, stdout, "Hello from a server that does not stream.")
			stdout, stderr, code = r.pixir(append([]string{"run", "--json", "hello"}, flags...)...)
			require.Equal(t, exitOK, code, stderr)
			env := validEnvelope(t, stdout, "pixir_run_output.json")
			require.Equal(t, "Hello from a server that does not stream.", env["output"].(map[string]any)["text"])
		})
	}
}

// geminiReply answers like Gemini's OpenAI-compatible endpoint: the first
// request gets a tool call with a thought signature; any later request
// whose history has a tool call without its signature is rejected with
// 400, as Gemini does; the others get a text answer.
func geminiReply(calls *atomic.Int32) fakeReply {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		n := calls.Add(1)
		if n == 1 {
			sseReply(0, `data: {"choices":[{"delta":{"role":"assistant","tool_calls":[{"extra_content":{"google":{"thought_signature":"c2lnbmF0dXJlLW9mLXRoZS10aG91Z2h0"}},`+
				`"function":{"arguments":"{\"path\":\"README.md\"}","name":"read"},"id":"function-call-1","type":"function"}]},"finish_reason":"tool_calls","index":0}],`+
				`"created":1763123456,"id":"g1","model":"gemini-3-pro-preview","object":"chat.completion.chunk"}`+"\n\n", oaDone)(w, r, body)
			return
		}
		var req struct {
			Messages []struct {
				ToolCalls []struct {
					ExtraContent struct {
						Google struct {
							ThoughtSignature string `json:"thought_signature"`
						} `json:"google"`
					} `json:"extra_content"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		for _, m := range req.Messages {
			for _, tc := range m.ToolCalls {
				if tc.ExtraContent.Google.ThoughtSignature != "c2lnbmF0dXJlLW9mLXRoZS10aG91Z2h0" {
					jsonReply(400, `[{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts.","status":"INVALID_ARGUMENT"}}]`)(w, r, body)
					return
				}
			}
		}
		oaAnswer(fmt.Sprintf("Answer %d.", n), 100, 5)(w, r, body)
	}
}

// TestQuirkGeminiThoughtSignatureSurvivesResume: the signature Gemini puts
// on a tool call goes back with it in the same turn and, from the Log, in
// a later process that resumes the session.
func TestQuirkGeminiThoughtSignatureSurvivesResume(t *testing.T) {
	var calls atomic.Int32
	srv := newFakeModel(t, geminiReply(&calls))
	providerEnv(t, "OPENAI_API_KEY", "gemini-key")
	flags := []string{"--provider", "openai", "--base-url", srv.URL + "/v1", "--model", "gemini-3-pro-preview"}
	r := newRunEnv(t)
	r.file("README.md", "# Pixir\n")

	stdout, stderr, code := r.pixir(append([]string{"run", "--json", "what does the README say?"}, flags...)...)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	out := validEnvelope(t, stdout, "pixir_run_output.json")["output"].(map[string]any)
	require.Equal(t, "Answer 2.", out["text"])
	sid := out["session_id"].(string)

	stdout, stderr, code = r.pixir(append([]string{"resume", sid, "--json", "and now?"}, flags...)...)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Equal(t, "Answer 3.", validEnvelope(t, stdout, "pixir_run_output.json")["output"].(map[string]any)["text"])
	require.Len(t, srv.received(), 3)
	require.Contains(t, string(srv.received()[2].Body), `"thought_signature":"c2lnbmF0dXJlLW9mLXRoZS10aG91Z2h0"`, "reloaded from the Log")
}

// An answer the server's content filter stopped (OpenAI and Azure send
// finish_reason content_filter) ended the turn completed, exit 0, its
// half answer taken for the whole. Through the binary: the turn fails,
// says why, and keeps what arrived, marked partial, with the usage charged.
func TestQuirkAnAnswerStoppedByTheContentFilterIsNotCompleted(t *testing.T) {
	srv := newFakeModel(t, sseReply(0, concat(oaText("Here is how to "), []string{oaChunk(`{}`, "content_filter"), oaUsage(900, 4), oaDone})...))
	providerEnv(t)
	e := newRunEnv(t)
	stdout, stderr, code := e.pixir("run", "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "m", "hi")
	require.Equal(t, exitError, code, stderr)
	require.Contains(t, stdout, "Here is how to")
	require.Contains(t, stderr, "stopped the answer with its content filter (finish_reason: content_filter)")
	require.Contains(t, stderr, "pixir: usage: 904 tokens")
	var partial, failed bool
	for _, ev := range readLog(t, e.ws, onlySession(t, e.ws)) {
		switch ev.Type {
		case "assistant_message":
			var d struct {
				Text    string
				Partial bool
			}
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			partial = d.Partial && d.Text == "Here is how to "
		case "turn_failed":
			failed = true
		}
	}
	require.True(t, partial, "what arrived is kept, marked partial")
	require.True(t, failed)
	require.Len(t, srv.received(), 1, "not retried")
}
