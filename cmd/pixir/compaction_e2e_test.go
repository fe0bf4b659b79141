package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// windowedModel is an OpenAI-compatible server with a small context
// window. It counts a request's tokens its own way (a quarter of its body's
// bytes, which Pixir's estimate does not know) and refuses one over the
// window with 400 context_length_exceeded, as OpenAI does. A request
// without tools is a summary request: it answers with a summary. Any other
// request reads the file its last user message names, then says it did.
type windowedModel struct {
	*fakeModel
	window int

	mu     sync.Mutex
	tokens []int // of each request, in order
	bodies []chatRequest
}

func newWindowedModel(t *testing.T, window int) *windowedModel {
	m := &windowedModel{window: window}
	m.fakeModel = newFakeModel(t, m.reply)
	return m
}

func (m *windowedModel) reply(w http.ResponseWriter, r *http.Request, body []byte) {
	n := len(body) / 4
	var req chatRequest
	_ = json.Unmarshal(body, &req)
	m.mu.Lock()
	m.tokens = append(m.tokens, n)
	m.bodies = append(m.bodies, req)
	call := len(m.tokens)
	m.mu.Unlock()
	if n > m.window {
		jsonReply(http.StatusBadRequest, fmt.Sprintf(`{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, m.window, n))(w, r, body)
		return
	}
	if len(req.Tools) == 0 {
		oaAnswer(fmt.Sprintf("SUMMARY %d: the user asked to read the files one by one; each was read.", call), n, 20)(w, r, body)
		return
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "tool" {
		oaAnswer("I read it.", n, 4)(w, r, body)
		return
	}
	path := strings.TrimPrefix(*last.Content, "read ")
	sseReply(0, concat(
		[]string{oaChunk(`{"role":"assistant","content":null}`, "")},
		oaToolCall(0, fmt.Sprintf("call_%d", call), "read", fmt.Sprintf(`{"path":%q}`, path)),
		[]string{oaChunk(`{}`, "tool_calls"), oaUsage(n, 12), oaDone},
	)...)(w, r, body)
}

func (m *windowedModel) sent() ([]int, []chatRequest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.tokens...), append([]chatRequest(nil), m.bodies...)
}

// compactionWorkspace writes n files of about 3 KB each.
func compactionWorkspace(t *testing.T, ws string, n int) {
	t.Helper()
	for i := range n {
		body := strings.Repeat(fmt.Sprintf("line %d of file %d; ", i, i), 150)
		require.NoError(t, os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte(body), 0o644))
	}
}

// initializeWith sends initialize with the client's capabilities.
func (a *agent) initializeWith(caps map[string]any) {
	a.t.Helper()
	a.result(0, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps}, nil)
}

func ofKind(ups []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, u := range ups {
		if u["sessionUpdate"] == kind {
			out = append(out, u)
		}
	}
	return out
}

func contentText(c []struct {
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
}) string {
	var b strings.Builder
	for _, m := range c {
		if m.Content != nil {
			b.WriteString(*m.Content)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// A long session against a model with a small window: the conversation is
// compacted before it outgrows the window, so the server never receives a
// request over it; the editor that asked for compaction updates sees each
// one; and a session loaded in a fresh process replays the whole
// conversation with its compactions, and goes on from the summary.
func TestALongSessionStaysUnderASmallWindow(t *testing.T) {
	const window, files = 20000, 24
	srv := newWindowedModel(t, window)
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	e := newEnv(t, "")
	e.writeConfig(fmt.Sprintf("context_window = %d\n", window))
	compactionWorkspace(t, e.ws, files)
	args := []string{"--provider", "openai", "--base-url", srv.URL + "/v1", "--model", "gpt-test"}
	a := e.start(args...)
	a.initializeWith(map[string]any{"session": map[string]any{"compaction": map[string]any{}}})
	sid := a.newSession()
	var ups []map[string]any
	for i := range files {
		m, before := a.call(10+i, "session/prompt", promptParams(sid, fmt.Sprintf("read f%d.txt", i)))
		require.Equal(t, "end_turn", stopReason(t, m), "turn %d; stderr: %s", i, a.stderr.String())
		ups = append(ups, updates(t, before)...)
	}

	tokens, reqs := srv.sent()
	for i, n := range tokens {
		require.LessOrEqual(t, n, window, "request %d went past the window", i)
	}
	// Each compaction was shown: started, its summary streamed, completed.
	started := map[string]bool{}
	for _, u := range ofKind(ups, "compaction_update") {
		if u["status"] == "in_progress" {
			started[u["compactionId"].(string)] = true
		}
	}
	var completed []map[string]any
	for _, u := range ofKind(ups, "compaction_update") {
		if u["status"] == "completed" {
			completed = append(completed, u)
			require.True(t, started[u["compactionId"].(string)], "completed after it started")
		}
	}
	require.NotEmpty(t, completed, "%d files of 3 KB do not fit %d tokens", files, window)
	require.NotEmpty(t, ofKind(ups, "compaction_summary_chunk"))
	summary := completed[0]["summary"].([]any)[0].(map[string]any)["text"].(string)
	require.Contains(t, summary, "SUMMARY")
	meta := completed[0]["_meta"].(map[string]any)["pixir"].(map[string]any)
	require.Equal(t, "model", meta["method"])
	require.Equal(t, "threshold", meta["reason"])

	// The Log records each compaction.
	events := readLog(t, e.ws, sid)
	var compactions []map[string]any
	for _, ev := range events {
		if ev.Type == "compaction" {
			var d map[string]any
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			compactions = append(compactions, d)
		}
	}
	require.Len(t, compactions, len(completed))

	// Later requests start from the last summary and carry none of the
	// first files.
	lastReq := reqs[len(reqs)-1]
	require.Equal(t, "system", lastReq.Messages[0].Role)
	require.Contains(t, *lastReq.Messages[1].Content, "The conversation so far was compacted")
	require.NotContains(t, contentText(lastReq.Messages), "line 0 of file 0")

	// A fresh process loads the session: the whole conversation replays,
	// its compactions in place; the next request goes on from the summary.
	a.exit()
	b := e.start(args...)
	b.initializeWith(map[string]any{"session": map[string]any{"compaction": map[string]any{}}})
	m, replay := b.call(1, "session/load", loadParams(sid, e.ws))
	require.Nil(t, m.Error, m.raw)
	rups := updates(t, replay)
	var users []string
	for _, u := range ofKind(rups, "user_message_chunk") {
		users = append(users, u["content"].(map[string]any)["text"].(string))
	}
	require.Len(t, users, files, "every prompt replays, the compacted ones too")
	require.Equal(t, "read f0.txt", users[0])
	var replayed []string
	for _, u := range ofKind(rups, "compaction_update") {
		require.Equal(t, "completed", u["status"])
		replayed = append(replayed, u["compactionId"].(string))
	}
	require.Len(t, replayed, len(completed))
	require.Equal(t, completed[len(completed)-1]["compactionId"], replayed[len(replayed)-1])

	first := len(reqs)
	m, _ = b.call(2, "session/prompt", promptParams(sid, "read f0.txt"))
	require.Equal(t, "end_turn", stopReason(t, m), b.stderr.String())
	tokens, reqs = srv.sent()
	for _, n := range tokens[first:] {
		require.LessOrEqual(t, n, window)
	}
	// The first request after the load (the read, or a summary request
	// when the session compacts once more) carries the summary the first
	// process sent last, not the conversation it replaced.
	next := contentText(reqs[first].Messages)
	require.Contains(t, next, *lastReq.Messages[1].Content, "the loaded session goes on from the same summary")
	require.NotContains(t, next, "line 0 of file 0")
}

// Nothing says the window: the server's context-length error does. The
// refused request is compacted and made again, the turn goes on, and no
// later request passes the window. An editor that did not ask for
// compaction updates gets none.
func TestAContextLengthErrorCompactsAndRetries(t *testing.T) {
	const window, files = 20000, 24
	srv := newWindowedModel(t, window)
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	e := newEnv(t, "")
	compactionWorkspace(t, e.ws, files)
	a := e.start("--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-test")
	a.initialize()
	sid := a.newSession()
	var ups []map[string]any
	for i := range files {
		m, before := a.call(10+i, "session/prompt", promptParams(sid, fmt.Sprintf("read f%d.txt", i)))
		require.Equal(t, "end_turn", stopReason(t, m), "turn %d; stderr: %s", i, a.stderr.String())
		ups = append(ups, updates(t, before)...)
	}
	require.NotContains(t, agentText(ups), "context window", "no turn failed")
	tokens, _ := srv.sent()
	over := 0
	for _, n := range tokens {
		if n > window {
			over++
		}
	}
	require.Equal(t, 1, over, "one refusal taught the window: %v", tokens)
	require.Empty(t, ofKind(ups, "compaction_update"))
	require.Empty(t, ofKind(ups, "compaction_summary_chunk"))
	var reasons []string
	for _, ev := range readLog(t, e.ws, sid) {
		if ev.Type == "compaction" {
			var d struct {
				Reason string `json:"reason"`
			}
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			reasons = append(reasons, d.Reason)
		}
	}
	require.NotEmpty(t, reasons)
	require.Equal(t, "context_length", reasons[0])
	require.Less(t, len(reasons), files/3, "a compaction leaves room to grow, even where the tools take much of the window: %v", reasons)
}
