package main

import (
	"encoding/json"
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
