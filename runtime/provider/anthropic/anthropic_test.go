package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/runtime/provider/doctor"
	"github.com/pixir-go/pixir/runtime/provider/httpstream"
	"github.com/pixir-go/pixir/runtime/provider/internal/wiretest"
)

// testPolicy's idle timeout is far past any pause a loaded machine puts
// between a local server's chunks (at 400 ms, an endless answer's test
// failed at a load of 11); the tests of the idle timeout itself take
// idlePolicy, whose 400 ms only a stalled or never-progressing stream
// reaches.
func testPolicy() httpstream.Policy {
	return httpstream.Policy{ConnectTimeout: 2 * time.Second, IdleTimeout: 30 * time.Second, MaxRetries: 2,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxRetryAfter: 3 * time.Second}
}

func idlePolicy() httpstream.Policy {
	p := testPolicy()
	p.IdleTimeout = 400 * time.Millisecond
	return p
}

func newProvider(t *testing.T, srv *wiretest.Server) *Provider {
	t.Helper()
	return newProviderWith(t, srv, testPolicy())
}

func newProviderWith(t *testing.T, srv *wiretest.Server, pol httpstream.Policy) *Provider {
	t.Helper()
	p := New(Config{BaseURL: srv.URL, APIKey: "sk-ant-test", Policy: pol})
	t.Cleanup(p.CloseIdleConnections)
	return p
}

func fixture(t *testing.T, name string) string { return wiretest.File(t, "testdata/"+name) }

func sse(t *testing.T, name string) wiretest.Reply {
	return wiretest.Reply{Body: fixture(t, name), Chunk: 61}
}

type deltas struct {
	mu  sync.Mutex
	got []provider.Delta
}

func (d *deltas) sink(x provider.Delta) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, x)
}

func (d *deltas) text(kind provider.DeltaKind) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for _, x := range d.got {
		if x.Kind == kind {
			b.WriteString(x.Text)
		}
	}
	return b.String()
}

func request(model string) provider.ModelRequest {
	return provider.ModelRequest{Model: model, System: "You are Pixir.",
		Tools:    []provider.ToolSpec{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "what does the README say?"}}}
}

func TestStreamsText(t *testing.T) {
	srv := wiretest.New(t, sse(t, "text.sse"))
	p := newProvider(t, srv)
	var d deltas
	resp, err := p.Generate(context.Background(), request("claude-sonnet-4-5"), d.sink)
	require.NoError(t, err)
	require.Equal(t, "Hello! The README describes Pixir, a supervised runtime.", resp.Text)
	require.Equal(t, resp.Text, d.text(provider.DeltaText))
	require.Equal(t, &provider.Usage{InputTokens: 25, OutputTokens: 15, ContextWindow: DefaultContextWindow}, resp.Usage)

	req := srv.Requests()[0]
	require.Equal(t, "/v1/messages", req.Path)
	require.Equal(t, "sk-ant-test", req.Header.Get("X-Api-Key"))
	require.Equal(t, "2023-06-01", req.Header.Get("Anthropic-Version"))
	require.Empty(t, req.Header.Get("Authorization"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(req.Body, &body))
	require.Equal(t, true, body["stream"])
	require.Equal(t, float64(DefaultMaxTokens), body["max_tokens"])
	require.Equal(t, "You are Pixir.", body["system"])
}

func TestThinkingTextAndToolUse(t *testing.T) {
	srv := wiretest.New(t, sse(t, "tool_use.sse"))
	p := newProvider(t, srv)
	var d deltas
	resp, err := p.Generate(context.Background(), request("claude-sonnet-4-5"), d.sink)
	require.NoError(t, err)
	require.Equal(t, "The user wants the README and the file list. I'll call both tools.", resp.Reasoning)
	require.Equal(t, resp.Reasoning, d.text(provider.DeltaReasoning))
	require.Equal(t, "I'll read the README and list the files.", resp.Text)
	require.Equal(t, provider.DeltaReasoning, d.got[0].Kind)
	// The signed thinking rides on the first call, to go back with it.
	var pd struct {
		Thinking []map[string]string `json:"thinking"`
	}
	require.NoError(t, json.Unmarshal(resp.ToolCalls[0].ProviderData, &pd))
	require.Len(t, pd.Thinking, 1)
	require.Equal(t, "thinking", pd.Thinking[0]["type"])
	require.Equal(t, resp.Reasoning, pd.Thinking[0]["thinking"])
	require.True(t, strings.HasPrefix(pd.Thinking[0]["signature"], "EqQBCgIYAhIM1gbcDa9G"), pd.Thinking[0]["signature"])
	resp.ToolCalls[0].ProviderData = nil
	require.Equal(t, []provider.ToolCall{
		{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "read", Arguments: json.RawMessage(`{"path": "README.md"}`)},
		{ID: "toolu_01Kd8UoJTgY9XrnSh7qBm4vE", Name: "bash", Arguments: json.RawMessage(`{"command": "ls -la \"my dir\""}`)},
		{ID: "toolu_01Ng2eQz7vHcR5pXyW3aLt9K", Name: "list_agents", Arguments: json.RawMessage(`{}`)},
	}, resp.ToolCalls)
	require.Equal(t, &provider.Usage{InputTokens: 472 + 1024, OutputTokens: 156, ContextWindow: DefaultContextWindow}, resp.Usage, "cached input counts")
}

func failure(t *testing.T, err error, kind httpstream.Kind, want ...string) {
	t.Helper()
	var e *httpstream.Error
	require.ErrorAs(t, err, &e, "%v", err)
	require.Equal(t, kind, e.Kind, err.Error())
	for _, w := range want {
		require.Contains(t, err.Error(), w)
	}
}

func TestErrorsAUserCanActOn(t *testing.T) {
	tests := []struct {
		name     string
		reply    wiretest.Reply
		model    string
		kind     httpstream.Kind
		want     []string
		requests int
	}{
		{"wrong key", wiretest.Reply{Status: 401, Body: fixture(t, "error_401.json")}, "claude-sonnet-4-5", httpstream.KindAuth,
			[]string{"the Anthropic API at http://127.0.0.1:", "rejected the API key (401 Unauthorized authentication_error): invalid x-api-key", "set ANTHROPIC_API_KEY to a valid key"}, 1},
		{"unknown model", wiretest.Reply{Status: 404, Body: fixture(t, "error_404_model.json")}, "claude-sonnet-9", httpstream.KindModel,
			[]string{`does not know the model "claude-sonnet-9" (404 Not Found not_found_error): model: claude-sonnet-9`}, 1},
		{"rate limited after retries", wiretest.Reply{Status: 429, Body: fixture(t, "error_429.json")}, "claude-sonnet-4-5", httpstream.KindRateLimit,
			[]string{"is rate limiting requests (429 Too Many Requests rate_limit_error)", "gave up after 3 attempts"}, 3},
		{"overloaded", wiretest.Reply{Status: 529, Body: fixture(t, "error_529.json")}, "claude-sonnet-4-5", httpstream.KindServer,
			[]string{"failed (529 overloaded_error): Overloaded; try again later (gave up after 3 attempts)"}, 3},
		{"bad request", wiretest.Reply{Status: 400, Body: fixture(t, "error_400.json")}, "claude-sonnet-4-5", httpstream.KindRejected,
			[]string{"rejected the request (400 Bad Request invalid_request_error): messages.1.content.0"}, 1},
		{"overloaded mid-stream", sse(t, "overloaded.sse"), "claude-sonnet-4-5", httpstream.KindStream,
			[]string{"reported an error in the middle of the answer (overloaded_error: Overloaded)"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := wiretest.New(t, tt.reply)
			p := newProvider(t, srv)
			_, err := p.Generate(context.Background(), request(tt.model), nil)
			failure(t, err, tt.kind, tt.want...)
			require.Len(t, srv.Requests(), tt.requests)
		})
	}
}

func TestMissingKeyIsAClearErrorWithoutARequest(t *testing.T) {
	srv := wiretest.New(t)
	p := New(Config{BaseURL: srv.URL})
	_, err := p.Generate(context.Background(), request("claude-sonnet-4-5"), nil)
	failure(t, err, httpstream.KindConfig, "ANTHROPIC_API_KEY is not set", "export ANTHROPIC_API_KEY=")
	require.Empty(t, srv.Requests())
}

func TestUnreachable(t *testing.T) {
	p := New(Config{BaseURL: wiretest.ClosedURL(t), APIKey: "k", Policy: testPolicy()})
	defer p.CloseIdleConnections()
	_, err := p.Generate(context.Background(), request("claude-sonnet-4-5"), nil)
	failure(t, err, httpstream.KindUnreachable, "cannot reach the Anthropic API at http://127.0.0.1:", "connection refused", "ANTHROPIC_BASE_URL")
}

func TestBaseURLWithV1(t *testing.T) {
	srv := wiretest.New(t, sse(t, "text.sse"))
	p := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "k", Policy: testPolicy()})
	defer p.CloseIdleConnections()
	_, err := p.Generate(context.Background(), request("m"), nil)
	require.NoError(t, err)
	require.Equal(t, "/v1/messages", srv.Requests()[0].Path)
}

// --- faults ---

func upTo(t *testing.T, name, mark string) string {
	body := fixture(t, name)
	i := strings.Index(body, mark)
	require.GreaterOrEqual(t, i, 0)
	j := strings.Index(body[i:], "\n\n")
	return body[:i+j+2]
}

func TestFaultServerClosesMidStream(t *testing.T) {
	wiretest.NoLeaks(t)
	for _, cut := range []wiretest.Reply{
		{Body: upTo(t, "text.sse", `" describes Pixir,"`), Cut: true},
		{Body: upTo(t, "text.sse", `" describes Pixir,"`), Reset: true},
		{Body: upTo(t, "text.sse", `" describes Pixir,"`)},
	} {
		srv := wiretest.New(t, cut, sse(t, "text.sse"))
		p := newProvider(t, srv)
		var d deltas
		_, err := p.Generate(context.Background(), request("m"), d.sink)
		failure(t, err, httpstream.KindClosed, "send the prompt again")
		require.Equal(t, "Hello! The README describes Pixir,", d.text(provider.DeltaText))
		require.Len(t, srv.Requests(), 1, "no retry once text was shown")
	}
}

// A stream that ends after message_delta said why the answer stopped,
// without message_stop, holds the whole answer: it failed as closed
// before the answer was complete, its text kept as partial and the usage
// the server counted dropped.
func TestAStreamWithoutMessageStopAfterTheStopReasonIsWhole(t *testing.T) {
	wiretest.NoLeaks(t)
	for _, reply := range []wiretest.Reply{
		{Body: upTo(t, "text.sse", `"type":"message_delta"`)},
		{Body: upTo(t, "text.sse", `"type":"message_delta"`), Cut: true},
	} {
		srv := wiretest.New(t, reply)
		p := newProvider(t, srv)
		resp, err := p.Generate(context.Background(), request("m"), nil)
		require.NoError(t, err)
		require.Equal(t, "Hello! The README describes Pixir, a supervised runtime.", resp.Text)
		require.Equal(t, 15, resp.Usage.OutputTokens)
		require.Len(t, srv.Requests(), 1)
	}
}

func TestFaultClosedBeforeOutputIsRetried(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t, wiretest.Reply{Body: upTo(t, "text.sse", "event: ping"), Cut: true}, sse(t, "text.sse"))
	p := newProvider(t, srv)
	resp, err := p.Generate(context.Background(), request("m"), nil)
	require.NoError(t, err)
	require.Contains(t, resp.Text, "supervised runtime")
	require.Len(t, srv.Requests(), 2)
}

func TestFaultServerStallsPastTheIdleTimeout(t *testing.T) {
	wiretest.NoLeaks(t)
	// Pings keep a slow answer alive; silence past the timeout ends it.
	srv := wiretest.New(t, wiretest.Reply{Body: upTo(t, "text.sse", "event: ping"), Stall: true})
	p := newProviderWith(t, srv, idlePolicy())
	_, err := p.Generate(context.Background(), request("m"), nil)
	failure(t, err, httpstream.KindIdle, "the Anthropic API at", "sent no part of the answer for 400ms")
	require.Len(t, srv.Requests(), 1)
}

func TestFault429WithRetryAfterThenSuccess(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t,
		wiretest.Reply{Status: 429, Body: fixture(t, "error_429.json"), Header: map[string]string{"Retry-After": "1", "Anthropic-Ratelimit-Input-Tokens-Remaining": "0"}},
		sse(t, "text.sse"))
	p := newProvider(t, srv)
	start := time.Now()
	resp, err := p.Generate(context.Background(), request("m"), nil)
	require.NoError(t, err)
	require.Contains(t, resp.Text, "Hello!")
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)
	require.Len(t, srv.Requests(), 2)
}

func TestFault500ThenSuccess(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t,
		wiretest.Reply{Status: 500, Body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_011CUbR7"}`},
		sse(t, "tool_use.sse"))
	p := newProvider(t, srv)
	resp, err := p.Generate(context.Background(), request("m"), nil)
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 3)
	require.Len(t, srv.Requests(), 2)
}

func TestFaultInvalidJSONInToolInput(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t, sse(t, "bad_input.sse"))
	p := newProvider(t, srv)
	resp, err := p.Generate(context.Background(), request("m"), nil)
	// Handed over as it came, with the cut: the turn ends max_tokens.
	require.NoError(t, err)
	require.Equal(t, &provider.ModelResponse{Usage: &provider.Usage{InputTokens: 300, OutputTokens: 64, ContextWindow: 200000}, Truncated: true,
		ToolCalls: []provider.ToolCall{{ID: "toolu_01Bad", Name: "write", Arguments: json.RawMessage(`{"path": "a.txt", "content": "long text`)}}}, resp)
}

func TestFaultCancelWhileStreaming(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t, wiretest.Reply{Body: upTo(t, "text.sse", `"Hello"`), Stall: true})
	p := New(Config{BaseURL: srv.URL, APIKey: "k", Policy: httpstream.Policy{IdleTimeout: time.Hour}}) // a cancel that did not end the stream would hang the test
	defer p.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := p.Generate(ctx, request("m"), func(provider.Delta) { cancel() })
	require.Nil(t, resp)
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
	srv.WaitGone() // the server saw the connection close
}

func TestCheck(t *testing.T) {
	models := wiretest.Reply{Header: map[string]string{"Content-Type": "application/json"}, Body: fixture(t, "models.json")}
	t.Run("alias of a listed snapshot", func(t *testing.T) {
		srv := wiretest.New(t, models)
		p := newProvider(t, srv)
		checks := p.Check(context.Background(), "claude-sonnet-4-5")
		for _, c := range checks {
			require.Equal(t, doctor.OK, c.Status, "%+v", c)
		}
		req := srv.Requests()[0]
		require.Equal(t, "/v1/models?limit=1000", req.Path)
		require.Equal(t, "sk-ant-test", req.Header.Get("X-Api-Key"))
	})
	t.Run("unknown model", func(t *testing.T) {
		srv := wiretest.New(t, models)
		p := newProvider(t, srv)
		var model doctor.Check
		for _, c := range p.Check(context.Background(), "claude-sonnet-9") {
			if c.Name == "model" {
				model = c
			}
		}
		require.Equal(t, doctor.Fail, model.Status)
		require.Contains(t, model.Detail, "claude-sonnet-4-5-20250929")
	})
	t.Run("no key", func(t *testing.T) {
		srv := wiretest.New(t, models)
		p := New(Config{BaseURL: srv.URL})
		checks := p.Check(context.Background(), "claude-sonnet-4-5")
		require.Equal(t, doctor.Fail, checks[1].Status)
		require.Empty(t, srv.Requests(), "no request without a key")
	})
}

func TestMatchModel(t *testing.T) {
	require.True(t, matchModel("claude-sonnet-4-5", "claude-sonnet-4-5-20250929"))
	require.True(t, matchModel("claude-3-5-haiku-latest", "claude-3-5-haiku-20241022"))
	require.True(t, matchModel("claude-opus-4-1-20250805", "claude-opus-4-1-20250805"))
	require.False(t, matchModel("claude-sonnet-4", "claude-sonnet-4-5-20250929"))
}

// --- quirks found in recorded traffic ---

func TestQuirkAWholeMessageForAStreamingRequest(t *testing.T) {
	// An Anthropic-compatible server that does not stream answers the
	// streaming request with one message.
	srv := wiretest.New(t, wiretest.Reply{Header: map[string]string{"Content-Type": "application/json"}, Body: fixture(t, "message.json")})
	p := newProvider(t, srv)
	var d deltas
	resp, err := p.Generate(context.Background(), request("claude-sonnet-4-5"), d.sink)
	require.NoError(t, err)
	require.Len(t, srv.Requests(), 1, "used at once, not retried")
	require.Equal(t, "I'll read the README.", resp.Text)
	require.Equal(t, "The user wants the README; I should read it.", resp.Reasoning)
	require.Equal(t, []provider.Delta{{Kind: provider.DeltaReasoning, Text: resp.Reasoning}, {Kind: provider.DeltaText, Text: resp.Text}}, d.got,
		"shown like a streamed answer")
	require.Len(t, resp.ToolCalls, 1)
	require.Equal(t, "toolu_01A09q90qw90lq917835lq9", resp.ToolCalls[0].ID)
	require.JSONEq(t, `{"path":"README.md"}`, string(resp.ToolCalls[0].Arguments))
	require.Equal(t, &provider.Usage{InputTokens: 472, OutputTokens: 91, ContextWindow: DefaultContextWindow}, resp.Usage)

	// An error object in a 200 answer is the turn's error.
	srv = wiretest.New(t, wiretest.Reply{Header: map[string]string{"Content-Type": "application/json"},
		Body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 212345 tokens > 200000 maximum"}}`})
	p = newProvider(t, srv)
	_, err = p.Generate(context.Background(), request("claude-sonnet-4-5"), nil)
	require.ErrorContains(t, err, "prompt is too long: 212345 tokens > 200000 maximum")
	require.Len(t, srv.Requests(), 1)
}

func TestQuirkEndlessPingsEndTheTurn(t *testing.T) {
	wiretest.NoLeaks(t)
	ping := "event: ping\ndata: {\"type\": \"ping\"}\n\n"
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n"
	srv := wiretest.New(t, wiretest.Reply{Body: start + strings.Repeat(ping, 1000), Chunk: len(ping), Pause: 20 * time.Millisecond})
	p := newProviderWith(t, srv, idlePolicy())
	began := time.Now()
	_, err := p.Generate(context.Background(), request("claude-sonnet-4-5"), nil)
	var e *httpstream.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, httpstream.KindIdle, e.Kind, err.Error())
	require.Contains(t, err.Error(), "sent no part of the answer for 400ms (keep-alives do not count)")
	require.Less(t, time.Since(began), 5*time.Second)
}

func TestQuirkEndlessTextStopsAtTheAnswerCap(t *testing.T) {
	wiretest.NoLeaks(t)
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	part := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"la la la \"}}\n\n"
	srv := wiretest.New(t, wiretest.Reply{Body: start + strings.Repeat(part, 50000), Chunk: 8192})
	pol := testPolicy()
	pol.MaxAnswerBytes = 1 << 10
	p := New(Config{BaseURL: srv.URL, APIKey: "k", Policy: pol})
	defer p.CloseIdleConnections()
	var d deltas
	_, err := p.Generate(context.Background(), request("claude-sonnet-4-5"), d.sink)
	var e *httpstream.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, httpstream.KindAnswerLimit, e.Kind, err.Error())
	require.Contains(t, err.Error(), "grew past 1KiB")
	require.Equal(t, strings.Repeat("la la la ", 113), d.text(provider.DeltaText), "the text up to the cap was streamed")
	require.Len(t, srv.Requests(), 1)
}

func TestReasoningEffortIsAThinkingBudget(t *testing.T) {
	for _, tt := range []struct {
		effort    string
		thinking  map[string]any
		maxTokens float64
	}{
		{"", nil, DefaultMaxTokens},
		{"none", nil, DefaultMaxTokens},
		{"minimal", map[string]any{"type": "enabled", "budget_tokens": float64(1024)}, DefaultMaxTokens},
		{"medium", map[string]any{"type": "enabled", "budget_tokens": float64(8192)}, 8192 + 4096},
		{"high", map[string]any{"type": "enabled", "budget_tokens": float64(16384)}, 16384 + 4096},
		{"xhigh", map[string]any{"type": "enabled", "budget_tokens": float64(24576)}, 24576 + 4096},
	} {
		t.Run("effort="+tt.effort, func(t *testing.T) {
			srv := wiretest.New(t, sse(t, "text.sse"))
			p := newProvider(t, srv)
			req := request("claude-sonnet-4-5")
			req.ReasoningEffort = tt.effort
			_, err := p.Generate(context.Background(), req, nil)
			require.NoError(t, err)
			var body map[string]any
			require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
			if tt.thinking == nil {
				require.NotContains(t, body, "thinking")
			} else {
				require.Equal(t, tt.thinking, body["thinking"])
			}
			require.Equal(t, tt.maxTokens, body["max_tokens"], "room for the answer beyond the budget")
		})
	}
}

// TestThinkingGoesBackBeforeToolUse: with thinking on, the API rejects a
// follow-up whose last assistant message (tool_use) does not start with
// its signed thinking block; the provider sends it back.
func TestThinkingGoesBackBeforeToolUse(t *testing.T) {
	call := fixture(t, "tool_use.sse")
	srv := wiretest.New(t)
	srv.Answer(func(n int, body []byte) wiretest.Reply {
		if n == 0 {
			return wiretest.Reply{Body: call}
		}
		var req struct {
			Thinking *struct{ BudgetTokens int } `json:"thinking"`
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type      string `json:"type"`
					Signature string `json:"signature"`
				} `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(body, &req) != nil || req.Thinking == nil {
			return wiretest.Reply{Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"test: thinking expected on"}}`}
		}
		for i, m := range req.Messages {
			if m.Role == "assistant" && (m.Content[0].Type != "thinking" || m.Content[0].Signature == "") {
				return wiretest.Reply{Status: 400, Body: fmt.Sprintf(`{"type":"error","error":{"type":"invalid_request_error","message":"messages.%d.content.0.type: Expected `+
					"`thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block"+`"}}`, i, m.Content[0].Type)}
			}
		}
		return sse(t, "text.sse")
	})
	p := newProvider(t, srv)
	req := request("claude-sonnet-4-5")
	req.ReasoningEffort = "high"
	resp, err := p.Generate(context.Background(), req, nil)
	require.NoError(t, err)
	req.Messages = append(req.Messages, provider.Message{Role: provider.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
	for _, tc := range resp.ToolCalls {
		req.Messages = append(req.Messages, provider.Message{Role: provider.RoleTool, ToolCallID: tc.ID, ToolName: tc.Name, Text: `{"ok":true,"output":"x"}`})
	}
	resp, err = p.Generate(context.Background(), req, nil)
	require.NoError(t, err, "the signed thinking went back")
	require.Contains(t, resp.Text, "supervised runtime")

	// Without it, the API's answer.
	req.Messages[1].ToolCalls[0].ProviderData = nil
	_, err = p.Generate(context.Background(), req, nil)
	require.ErrorContains(t, err, "must start with a thinking block")
}

// stop_reason refusal (the API's safety classifiers stopped the answer)
// is no finished answer: it was taken as one. It fails readably, with
// what the server counted; model_context_window_exceeded is an answer cut
// off, as max_tokens is.
func TestARefusalOrAFullContextIsNotAFinishedAnswer(t *testing.T) {
	refusal := strings.Replace(fixture(t, "text.sse"), `"stop_reason":"end_turn"`, `"stop_reason":"refusal"`, 1)
	srv := wiretest.New(t, wiretest.Reply{Body: refusal, Chunk: 61})
	p := newProvider(t, srv)
	var d deltas
	resp, err := p.Generate(context.Background(), request("m"), d.sink)
	failure(t, err, httpstream.KindFiltered, "stopped the answer with its safety classifiers (stop_reason: refusal)", "none of its tool calls ran")
	require.Equal(t, "Hello! The README describes Pixir, a supervised runtime.", d.text(provider.DeltaText))
	require.Equal(t, 15, resp.Usage.OutputTokens)
	require.Len(t, srv.Requests(), 1, "not retried")

	full := strings.Replace(fixture(t, "text.sse"), `"stop_reason":"end_turn"`, `"stop_reason":"model_context_window_exceeded"`, 1)
	srv = wiretest.New(t, wiretest.Reply{Body: full, Chunk: 61})
	resp, err = newProvider(t, srv).Generate(context.Background(), request("m"), nil)
	require.NoError(t, err)
	require.True(t, resp.Truncated, "cut off by the context window")
}
