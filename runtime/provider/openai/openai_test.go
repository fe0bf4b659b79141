package openai

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
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

func newProvider(t *testing.T, srv *wiretest.Server, key string) *Provider {
	t.Helper()
	return newProviderWith(t, srv, key, testPolicy())
}

func newProviderWith(t *testing.T, srv *wiretest.Server, key string, pol httpstream.Policy) *Provider {
	t.Helper()
	p := New(Config{BaseURL: srv.URL + "/v1", APIKey: key, ContextWindow: 32768, Policy: pol})
	t.Cleanup(p.CloseIdleConnections)
	return p
}

func fixture(t *testing.T, name string) string { return wiretest.File(t, "testdata/"+name) }

// sse replays a fixture in small pieces, split anywhere.
func sse(t *testing.T, name string) wiretest.Reply {
	return wiretest.Reply{Body: fixture(t, name), Chunk: 97}
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

var readTool = provider.ToolSpec{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}

func request(model string) provider.ModelRequest {
	return provider.ModelRequest{Model: model, System: "You are Pixir.", Tools: []provider.ToolSpec{readTool},
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "what does the README say?"}}}
}

func TestStreamsText(t *testing.T) {
	srv := wiretest.New(t, sse(t, "text.sse"))
	p := newProvider(t, srv, "sk-test")
	var d deltas
	resp, err := p.Generate(context.Background(), request("gpt-4.1-mini"), d.sink)
	require.NoError(t, err)
	require.Equal(t, "The README says Pixir is a supervised runtime.", resp.Text)
	require.Equal(t, resp.Text, d.text(provider.DeltaText))
	require.Len(t, d.got, 8, "one delta per content chunk")
	require.Empty(t, resp.ToolCalls)
	require.Equal(t, &provider.Usage{InputTokens: 812, OutputTokens: 9, ContextWindow: 32768}, resp.Usage)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "POST", reqs[0].Method)
	require.Equal(t, "/v1/chat/completions", reqs[0].Path)
	require.Equal(t, "Bearer sk-test", reqs[0].Header.Get("Authorization"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(reqs[0].Body, &body))
	require.Equal(t, true, body["stream"])
	require.Equal(t, map[string]any{"include_usage": true}, body["stream_options"])
	require.Equal(t, "gpt-4.1-mini", body["model"])
}

func TestNoKeyNoAuthorizationHeader(t *testing.T) {
	srv := wiretest.New(t, sse(t, "text.sse"))
	p := newProvider(t, srv, "")
	_, err := p.Generate(context.Background(), request("qwen2.5-coder"), nil)
	require.NoError(t, err)
	_, sent := srv.Requests()[0].Header["Authorization"]
	require.False(t, sent)
}

func TestAssemblesParallelToolCallsFromFragments(t *testing.T) {
	srv := wiretest.New(t, sse(t, "tool_calls.sse"))
	p := newProvider(t, srv, "sk-test")
	var d deltas
	resp, err := p.Generate(context.Background(), request("gpt-4.1-mini"), d.sink)
	require.NoError(t, err)
	require.Empty(t, d.text(provider.DeltaText)+d.text(provider.DeltaReasoning), "tool calls are not streamed as text")
	require.Contains(t, d.text(provider.DeltaToolCall), "README", "their fragments are passed on, to be counted")
	require.Len(t, resp.ToolCalls, 2)
	require.Equal(t, "call_Yb3Xr9kQ2fVt1nEo8LmZaC4d", resp.ToolCalls[0].ID)
	require.Equal(t, "read", resp.ToolCalls[0].Name)
	require.JSONEq(t, `{"path":"README.md"}`, string(resp.ToolCalls[0].Arguments))
	require.Equal(t, "call_P0aL8sW2eRt5yU7iO9pQ1zXc", resp.ToolCalls[1].ID)
	require.Equal(t, "bash", resp.ToolCalls[1].Name)
	require.JSONEq(t, `{"command":"ls -la \"my dir\""}`, string(resp.ToolCalls[1].Arguments))
	require.Equal(t, &provider.Usage{InputTokens: 1187, OutputTokens: 58, ContextWindow: 32768}, resp.Usage, "from the chunk with empty choices")
}

func TestStreamsReasoningContent(t *testing.T) {
	srv := wiretest.New(t, sse(t, "reasoning_content.sse"))
	p := newProvider(t, srv, "sk-test")
	var d deltas
	resp, err := p.Generate(context.Background(), request("deepseek-reasoner"), d.sink)
	require.NoError(t, err)
	require.Equal(t, "The user asks for 2+2. That is 4.", resp.Reasoning)
	require.Equal(t, resp.Reasoning, d.text(provider.DeltaReasoning))
	require.Equal(t, "2 + 2 = 4", resp.Text)
	require.Equal(t, provider.DeltaReasoning, d.got[0].Kind, "reasoning streams first")
	require.Equal(t, 14, resp.Usage.InputTokens, "usage on the finish chunk")
}

func TestOllamaReasoningAndWholeToolCalls(t *testing.T) {
	srv := wiretest.New(t, sse(t, "ollama_tool_calls.sse"))
	p := newProvider(t, srv, "")
	var d deltas
	resp, err := p.Generate(context.Background(), request("qwen3:8b"), d.sink)
	require.NoError(t, err)
	require.Equal(t, "Let me list the files.", d.text(provider.DeltaReasoning))
	require.Len(t, resp.ToolCalls, 2)
	require.Equal(t, provider.ToolCall{ID: "call_t8yqf2lm", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}, resp.ToolCalls[0])
	require.Equal(t, provider.ToolCall{ID: "call_0w9x3c1n", Name: "read", Arguments: json.RawMessage(`{"path":"go.mod"}`)}, resp.ToolCalls[1])
	require.Equal(t, 912, resp.Usage.InputTokens)
}

func TestToolCallFragmentsWithoutIndexOrID(t *testing.T) {
	a := newAssembler(httpstream.Subject{})
	var frags []toolCallFrag
	require.NoError(t, json.Unmarshal([]byte(`[
		{"id":"a","function":{"name":"read","arguments":{"path":"x"}}},
		{"id":"b","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]`), &frags))
	a.addToolCalls(frags)
	// Gemini-style: each call whole, every one at index 0.
	require.NoError(t, json.Unmarshal([]byte(`[{"index":0,"id":"c","function":{"name":"glob","arguments":"{}"}}]`), &frags))
	a.addToolCalls(frags)
	require.NoError(t, json.Unmarshal([]byte(`[{"index":0,"function":{"name":"","arguments":""}}]`), &frags))
	a.addToolCalls(frags)
	resp, err := a.response()
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 3)
	require.JSONEq(t, `{"path":"x"}`, string(resp.ToolCalls[0].Arguments))
	require.Equal(t, "bash", resp.ToolCalls[1].Name)
	require.Equal(t, "c", resp.ToolCalls[2].ID)
}

func TestAToolCallWithoutIDGetsOne(t *testing.T) {
	a := newAssembler(httpstream.Subject{})
	a.addToolCalls([]toolCallFrag{{Function: struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{Name: "read"}}})
	resp, err := a.response()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(resp.ToolCalls[0].ID, "call_"))
	require.JSONEq(t, `{}`, string(resp.ToolCalls[0].Arguments), "no arguments means {}")
}

func TestACompletionThatIsNotStreamed(t *testing.T) {
	srv := wiretest.New(t, wiretest.Reply{Header: map[string]string{"Content-Type": "application/json"},
		Body: `{"id":"chatcmpl-1","object":"chat.completion","created":1759312345,"model":"local","choices":[{"index":0,"message":{"role":"assistant","content":"Hi.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`})
	p := newProvider(t, srv, "")
	resp, err := p.Generate(context.Background(), request("local"), nil)
	require.NoError(t, err)
	require.Equal(t, "Hi.", resp.Text)
	require.Equal(t, "read", resp.ToolCalls[0].Name)
	require.Equal(t, 5, resp.Usage.InputTokens)
}

// failure checks a Generate error: an *httpstream.Error of kind, whose
// message holds each of want.
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
	jsonReply := func(status int, name string, header map[string]string) wiretest.Reply {
		return wiretest.Reply{Status: status, Body: fixture(t, name), Header: header}
	}
	tests := []struct {
		name     string
		replies  []wiretest.Reply
		key      string
		model    string
		kind     httpstream.Kind
		want     []string
		requests int
	}{
		{"wrong key", []wiretest.Reply{jsonReply(401, "error_401.json", nil)}, "sk-wrong", "gpt-4.1-mini", httpstream.KindAuth,
			[]string{"rejected the API key (401 Unauthorized invalid_api_key): Incorrect API key provided", "set OPENAI_API_KEY to a valid key"}, 1},
		{"missing key", []wiretest.Reply{jsonReply(401, "error_401.json", nil)}, "", "gpt-4.1-mini", httpstream.KindAuth,
			[]string{"wants an API key and none is set", "set OPENAI_API_KEY"}, 1},
		{"unknown model", []wiretest.Reply{jsonReply(404, "error_404_model.json", nil)}, "sk-test", "gpt-9-turbo", httpstream.KindModel,
			[]string{`does not know the model "gpt-9-turbo" (404 Not Found model_not_found)`, "--model"}, 1},
		{"unknown model on Ollama", []wiretest.Reply{jsonReply(404, "ollama_404_model.json", nil)}, "", "qwen2.5-coder", httpstream.KindModel,
			[]string{`model "qwen2.5-coder" not found, try pulling it first`}, 1},
		{"rate limited after retries", []wiretest.Reply{jsonReply(429, "error_429.json", nil)}, "sk-test", "gpt-4.1-mini", httpstream.KindRateLimit,
			[]string{"is rate limiting requests (429 Too Many Requests rate_limit_exceeded)", "gave up after 3 attempts"}, 3},
		{"a web page instead of the API", []wiretest.Reply{{Header: map[string]string{"Content-Type": "text/html; charset=utf-8"}, Body: "<!doctype html><html><title>Web UI</title></html>"}},
			"", "m", httpstream.KindNotFound, []string{"answered with a web page (text/html; charset=utf-8), not the API", "check --base-url, OPENAI_BASE_URL"}, 1},
		{"a vLLM error object in the stream", []wiretest.Reply{{Body: "data: {\"object\":\"error\",\"message\":\"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}\n\n"}},
			"", "m", httpstream.KindStream, []string{"reported an error in the middle of the answer (BadRequestError: This model's maximum context length is 32768 tokens"}, 1},
		{"error chunk in the stream", []wiretest.Reply{sse(t, "error_chunk.sse")}, "sk-test", "gpt-4.1-mini", httpstream.KindStream,
			[]string{"reported an error in the middle of the answer (server_error: The server had an error"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := wiretest.New(t, tt.replies...)
			p := newProvider(t, srv, tt.key)
			resp, err := p.Generate(context.Background(), request(tt.model), nil)
			require.Nil(t, resp)
			failure(t, err, tt.kind, tt.want...)
			require.Contains(t, err.Error(), srv.URL+"/v1", "names the server")
			require.Len(t, srv.Requests(), tt.requests)
		})
	}
}

func TestUnreachableServer(t *testing.T) {
	p := New(Config{BaseURL: wiretest.ClosedURL(t) + "/v1", Policy: testPolicy()})
	defer p.CloseIdleConnections()
	_, err := p.Generate(context.Background(), request("m"), nil)
	failure(t, err, httpstream.KindUnreachable, "cannot reach the OpenAI-compatible server at http://127.0.0.1:", "connection refused", "--base-url, OPENAI_BASE_URL")
	var re *httpstream.RetriesError
	require.False(t, errors.As(err, &re), "a refused connection is not retried")
}

func TestNoModel(t *testing.T) {
	p := New(Config{BaseURL: "http://127.0.0.1:1/v1"})
	_, err := p.Generate(context.Background(), request(""), nil)
	failure(t, err, httpstream.KindConfig, "no model is configured")
}

// --- faults ---

// upTo returns the fixture cut right after the first chunk containing mark.
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
		{Body: upTo(t, "text.sse", `" supervised"`), Cut: true},   // the chunked body breaks off
		{Body: upTo(t, "text.sse", `" supervised"`), Reset: true}, // a TCP reset
		{Body: upTo(t, "text.sse", `" supervised"`)},              // a clean end, without finish_reason or [DONE]
	} {
		srv := wiretest.New(t, cut, sse(t, "text.sse"))
		p := newProvider(t, srv, "")
		var d deltas
		_, err := p.Generate(context.Background(), request("m"), d.sink)
		failure(t, err, httpstream.KindClosed, "the connection", "send the prompt again")
		require.Equal(t, "The README says Pixir is a supervised", d.text(provider.DeltaText))
		require.Len(t, srv.Requests(), 1, "no retry once text was shown")
	}
}

func TestFaultServerStallsPastTheIdleTimeout(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t, wiretest.Reply{Body: upTo(t, "text.sse", `" README"`), Stall: true})
	p := newProviderWith(t, srv, "", idlePolicy())
	_, err := p.Generate(context.Background(), request("m"), nil)
	failure(t, err, httpstream.KindIdle, "sent no part of the answer for 400ms")
}

func TestFault429WithRetryAfterThenSuccess(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t,
		wiretest.Reply{Status: 429, Body: fixture(t, "error_429.json"), Header: map[string]string{"Retry-After": "1"}},
		sse(t, "text.sse"))
	p := newProvider(t, srv, "sk-test")
	start := time.Now()
	resp, err := p.Generate(context.Background(), request("gpt-4.1-mini"), nil)
	require.NoError(t, err)
	require.Equal(t, "The README says Pixir is a supervised runtime.", resp.Text)
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "Retry-After honoured")
	require.Len(t, srv.Requests(), 2)
}

func TestFault500ThenSuccess(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t, wiretest.Reply{Status: 500, Body: fixture(t, "error_500.json")}, sse(t, "tool_calls.sse"))
	p := newProvider(t, srv, "sk-test")
	resp, err := p.Generate(context.Background(), request("gpt-4.1-mini"), nil)
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 2)
	require.Len(t, srv.Requests(), 2)
	require.Equal(t, srv.Requests()[0].Body, srv.Requests()[1].Body, "the retry sends the same request")
}

func TestFaultInvalidJSONInToolArguments(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t, sse(t, "bad_arguments.sse"))
	p := newProvider(t, srv, "")
	resp, err := p.Generate(context.Background(), request("local-model"), nil)
	// Handed over as they came: the turn answers the call invalid_args.
	require.NoError(t, err)
	require.Equal(t, []provider.ToolCall{{ID: "call_Zq1", Name: "write", Arguments: json.RawMessage(`{"path": "a.txt", "content": "unterminated`)}}, resp.ToolCalls)
	require.Len(t, srv.Requests(), 1)
}

func TestFaultCancelWhileStreaming(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t, wiretest.Reply{Body: upTo(t, "text.sse", `" README"`), Stall: true})
	p := New(Config{BaseURL: srv.URL + "/v1", Policy: httpstream.Policy{IdleTimeout: time.Hour}}) // a cancel that did not end the stream would hang the test
	defer p.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := p.Generate(ctx, request("m"), func(d provider.Delta) { cancel() })
	require.Nil(t, resp)
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
	srv.WaitGone() // the server saw the connection close
}

// --- quirks found in recorded traffic ---

func TestQuirkLlamaCppErrorEventIsTheTurnsError(t *testing.T) {
	// Older llama.cpp servers report a failure as an "error:" line, then
	// end the stream with [DONE] as if all went well.
	srv := wiretest.New(t, sse(t, "llamacpp_error_event.sse"))
	p := newProvider(t, srv, "")
	var d deltas
	resp, err := p.Generate(context.Background(), request("qwen2.5-coder"), d.sink)
	require.Nil(t, resp, "not an empty, successful answer")
	failure(t, err, httpstream.KindStream, "exceed_context_size_error: the request exceeds the available context size, try increasing it")
	require.Len(t, srv.Requests(), 1, "an oversized prompt is not worth another attempt")
	require.Empty(t, d.got)
}

func TestQuirkMagistralContentParts(t *testing.T) {
	srv := wiretest.New(t, sse(t, "magistral.sse"))
	p := newProvider(t, srv, "sk-test")
	var d deltas
	resp, err := p.Generate(context.Background(), request("magistral-medium-2509"), d.sink)
	require.NoError(t, err)
	require.Equal(t, "Okay, the user's asking what the README says. I should read it.", resp.Reasoning)
	require.Equal(t, resp.Reasoning, d.text(provider.DeltaReasoning))
	require.Equal(t, "The README says Pixir is a supervised runtime.", resp.Text)
	require.Equal(t, resp.Text, d.text(provider.DeltaText))
	require.Equal(t, 42, resp.Usage.InputTokens)

	// The same parts in a whole message.
	srv = wiretest.New(t, wiretest.Reply{Header: map[string]string{"Content-Type": "application/json"},
		Body: `{"id":"a1","object":"chat.completion","model":"magistral-small-2509","choices":[{"index":0,"message":{"role":"assistant","tool_calls":null,` +
			`"content":[{"type":"thinking","thinking":[{"type":"text","text":"Short question."}]},{"type":"text","text":"Yes."}]},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":9,"total_tokens":20,"completion_tokens":11}}`})
	p = newProvider(t, srv, "sk-test")
	d = deltas{}
	resp, err = p.Generate(context.Background(), request("magistral-small-2509"), d.sink)
	require.NoError(t, err)
	require.Equal(t, "Short question.", resp.Reasoning)
	require.Equal(t, "Yes.", resp.Text)
	require.Equal(t, []provider.Delta{{Kind: provider.DeltaReasoning, Text: "Short question."}, {Kind: provider.DeltaText, Text: "Yes."}}, d.got)
}

func TestQuirkAnAnswerThatIsNotStreamedIsStillShown(t *testing.T) {
	body := `{"id":"chatcmpl-2","object":"chat.completion","created":1759312345,"model":"local","choices":[{"index":0,"message":{"role":"assistant",` +
		`"reasoning_content":"Greet back.","content":"Hello! How can I help?"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`
	for _, tt := range []struct {
		name  string
		reply wiretest.Reply
	}{
		{"declared as JSON", wiretest.Reply{Header: map[string]string{"Content-Type": "application/json"}, Body: body}},
		{"under an event-stream header", wiretest.Reply{Body: body + "\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := wiretest.New(t, tt.reply)
			p := newProvider(t, srv, "")
			var d deltas
			resp, err := p.Generate(context.Background(), request("local"), d.sink)
			require.NoError(t, err)
			require.Equal(t, "Hello! How can I help?", resp.Text)
			require.Equal(t, []provider.Delta{{Kind: provider.DeltaReasoning, Text: "Greet back."}, {Kind: provider.DeltaText, Text: "Hello! How can I help?"}}, d.got,
				"the answer reaches the sink, as a streamed one does")
		})
	}
}

func TestQuirkARequestTooLargeIsNotRetried(t *testing.T) {
	srv := wiretest.New(t, wiretest.Reply{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{"error":{"message":"Request too large for model ` +
		"`llama-3.3-70b-versatile`" + ` in organization ` + "`org_01jq`" + ` service tier ` + "`on_demand`" +
		` on tokens per minute (TPM): Limit 12000, Requested 19876, please reduce your message size and try again. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing","type":"tokens","code":"rate_limit_exceeded"}}`})
	p := newProvider(t, srv, "gsk-test")
	_, err := p.Generate(context.Background(), request("llama-3.3-70b-versatile"), nil)
	failure(t, err, httpstream.KindTooLarge, "refused the request as too large", "Requested 19876", "waiting will not help", "start a new session")
	require.NotContains(t, err.Error(), "gave up after")
	require.Len(t, srv.Requests(), 1)
}

func TestQuirkEndlessKeepAlivesEndTheTurn(t *testing.T) {
	wiretest.NoLeaks(t)
	// OpenRouter-style comments, a few every 20 ms for about 20 s, after
	// the first words of the answer: never silent, never progressing.
	keepAlive := ": OPENROUTER PROCESSING\n\n"
	first := `data: {"id":"gen-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"The README"},"finish_reason":null}]}` + "\n\n"
	// The first words are one piece: sent in pieces of a keep-alive's
	// length with pauses between, they took longer than the idle timeout
	// to arrive on a loaded machine, and the test failed without them.
	srv := wiretest.New(t, wiretest.Reply{Body: first + strings.Repeat(keepAlive, 5000), Chunk: len(first), Pause: 20 * time.Millisecond})
	p := newProviderWith(t, srv, "", idlePolicy())
	var d deltas
	start := time.Now()
	_, err := p.Generate(context.Background(), request("m"), d.sink)
	failure(t, err, httpstream.KindIdle, "sent no part of the answer for 400ms (keep-alives do not count)", "idle_timeout")
	require.Equal(t, "The README", d.text(provider.DeltaText), "what arrived stays with the caller")
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestQuirkEndlessTextStopsAtTheAnswerCap(t *testing.T) {
	wiretest.NoLeaks(t)
	part := `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"all work and no play "},"finish_reason":null}]}` + "\n\n"
	srv := wiretest.New(t, wiretest.Reply{Body: strings.Repeat(part, 50000), Chunk: 8192})
	pol := testPolicy()
	pol.MaxAnswerBytes = 4 << 10
	p := New(Config{BaseURL: srv.URL + "/v1", Policy: pol})
	defer p.CloseIdleConnections()
	var d deltas
	resp, err := p.Generate(context.Background(), request("m"), d.sink)
	require.Nil(t, resp)
	failure(t, err, httpstream.KindAnswerLimit, "grew past 4KiB, so Pixir stopped it", "max_answer_size")
	got := d.text(provider.DeltaText)
	require.LessOrEqual(t, len(got), 4<<10)
	require.Greater(t, len(got), 4<<10-len("all work and no play "), "the text up to the cap was streamed")
	require.Len(t, srv.Requests(), 1)
}

// geminiServer answers like Gemini's OpenAI-compatible endpoint: the
// first request gets a tool call carrying a thought signature; a follow-up
// whose assistant tool call lacks that signature is rejected with 400, as
// Gemini rejects it, and one that has it gets a text answer.
func geminiServer(t *testing.T) *wiretest.Server {
	call := fixture(t, "gemini_tool_call.sse")
	srv := wiretest.New(t)
	srv.Answer(func(n int, body []byte) wiretest.Reply {
		if n == 0 {
			return wiretest.Reply{Body: call}
		}
		var req struct {
			Messages []struct {
				ToolCalls []struct {
					ID           string `json:"id"`
					ExtraContent struct {
						Google struct {
							ThoughtSignature string `json:"thought_signature"`
						} `json:"google"`
					} `json:"extra_content"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return wiretest.Reply{Status: 400, Body: `{"error":{"message":"unreadable request"}}`}
		}
		for _, m := range req.Messages {
			for _, tc := range m.ToolCalls {
				if tc.ExtraContent.Google.ThoughtSignature == "" {
					return wiretest.Reply{Status: 400, Body: `[{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts. ` +
						`This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. ` +
						`Additional data, function call ` + "`default_api:read`" + ` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.","status":"INVALID_ARGUMENT"}}]`}
				}
			}
		}
		return wiretest.Reply{Body: `data: {"choices":[{"delta":{"content":"The README describes Pixir.","role":"assistant"},"finish_reason":"stop","index":0}],"object":"chat.completion.chunk"}` + "\n\ndata: [DONE]\n\n"}
	})
	return srv
}

func TestQuirkGeminiThoughtSignatureGoesBack(t *testing.T) {
	srv := geminiServer(t)
	p := newProvider(t, srv, "gemini-key")
	req := request("gemini-3-pro-preview")
	resp, err := p.Generate(context.Background(), req, nil)
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 1)
	tc := resp.ToolCalls[0]
	require.Equal(t, "function-call-15728437463422012543", tc.ID)
	require.JSONEq(t, `{"extra_content":{"google":{"thought_signature":"EjQKMgEMOdbHJChLX75QUCJjyYlmQ0e4vN2kqPb1tYrT9uA8sD3fG6hJ0kL5mN7pQ2rS4tV="}}}`, string(tc.ProviderData))

	// The follow-up carries the call back with its signature: accepted.
	follow := req
	follow.Messages = append(follow.Messages,
		provider.Message{Role: provider.RoleAssistant, ToolCalls: resp.ToolCalls},
		provider.Message{Role: provider.RoleTool, ToolCallID: tc.ID, ToolName: tc.Name, Text: `{"ok":true,"output":"# Pixir"}`})
	resp, err = p.Generate(context.Background(), follow, nil)
	require.NoError(t, err)
	require.Equal(t, "The README describes Pixir.", resp.Text)

	// The same follow-up without it is what Gemini rejects.
	follow.Messages[1].ToolCalls = []provider.ToolCall{{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments}}
	_, err = p.Generate(context.Background(), follow, nil)
	failure(t, err, httpstream.KindRejected, "missing a thought_signature")
}

func TestContentDecodesEveryShape(t *testing.T) {
	for raw, want := range map[string]content{
		`"plain"`:                    {text: "plain"},
		`"line\nbreak \u00e9 \"q\""`: {text: "line\nbreak é \"q\""},
		"\"bad \xff byte\"":          {text: "bad \ufffd byte"},
		`null`:                       {},
		`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"thinking","thinking":"t"}]`: {text: "a", thinking: "t"},
	} {
		var c struct {
			Content content `json:"content"`
		}
		require.NoError(t, json.Unmarshal([]byte(`{"content":`+raw+`}`), &c), raw)
		require.Equal(t, want, c.Content, raw)
	}
	var c struct {
		Content content `json:"content"`
	}
	require.Error(t, json.Unmarshal([]byte(`{"content":{"text":"x"}}`), &c), "an object is neither shape")
}

func TestReasoningEffortIsSentWhenAskedFor(t *testing.T) {
	for _, effort := range []string{"", "minimal", "high", "none"} {
		srv := wiretest.New(t, sse(t, "text.sse"))
		p := newProvider(t, srv, "sk-test")
		req := request("gpt-5")
		req.ReasoningEffort = effort
		_, err := p.Generate(context.Background(), req, nil)
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
		if effort == "" {
			require.NotContains(t, body, "reasoning_effort", "models that do not reason reject it")
		} else {
			require.Equal(t, effort, body["reasoning_effort"])
		}
	}
}

// An answer the content filter stopped (finish_reason content_filter, as
// OpenAI and Azure send it) is no finished answer: it was taken as one, so
// a turn cut by the filter ended completed. It fails readably, with what
// the server counted.
func TestAnAnswerStoppedByTheContentFilterIsNotFinished(t *testing.T) {
	body := strings.Replace(fixture(t, "text.sse"), `"finish_reason":"stop"`, `"finish_reason":"content_filter"`, 1)
	srv := wiretest.New(t, wiretest.Reply{Body: body, Chunk: 97})
	p := newProvider(t, srv, "sk-test")
	var d deltas
	resp, err := p.Generate(context.Background(), request("gpt-4.1-mini"), d.sink)
	failure(t, err, httpstream.KindFiltered, "stopped the answer with its content filter (finish_reason: content_filter)", "none of its tool calls ran")
	require.Equal(t, "The README says Pixir is a supervised runtime.", d.text(provider.DeltaText), "what streamed was shown")
	require.Equal(t, 812, resp.Usage.InputTokens, "what the server counted is charged")
	require.Empty(t, resp.ToolCalls)
	require.Len(t, srv.Requests(), 1, "not retried")
}

// A server that leaves a thinking model's thought tokens out of
// completion_tokens but counts them in total_tokens (Gemini behind several
// OpenAI-compatible gateways) billed them: they were not counted, so a
// thinking model's calls looked nearly free to every budget.
func TestThoughtTokensOnlyInTheTotalAreCounted(t *testing.T) {
	body := strings.Replace(fixture(t, "text.sse"), `"completion_tokens":9,"total_tokens":821`, `"completion_tokens":9,"total_tokens":1221`, 1)
	require.NotEqual(t, fixture(t, "text.sse"), body)
	srv := wiretest.New(t, wiretest.Reply{Body: body, Chunk: 97})
	resp, err := newProvider(t, srv, "sk-test").Generate(context.Background(), request("gemini-2.5-flash"), nil)
	require.NoError(t, err)
	require.Equal(t, &provider.Usage{InputTokens: 812, OutputTokens: 409, ContextWindow: 32768}, resp.Usage)
}

// A stream of usage chunks only, no choice at all, ended with [DONE]
// (qa34p's emptychoices): the server answered nothing, and the turn must
// fail, not end completed having done nothing. What it counted is charged.
func TestAnAnswerWithoutAnyChoiceFails(t *testing.T) {
	body := `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[]}` + "\n\n" +
		`data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":0}}` + "\n\n" +
		"data: [DONE]\n\n"
	srv := wiretest.New(t, wiretest.Reply{Body: body})
	p := newProvider(t, srv, "sk-test")
	resp, err := p.Generate(context.Background(), request("gpt-4.1-mini"), nil)
	failure(t, err, httpstream.KindProtocol, "answered nothing: its answer ended without a single choice", `serves the model "gpt-4.1-mini"`)
	require.Equal(t, 10, resp.Usage.InputTokens, "what the server counted is charged")
	require.Len(t, srv.Requests(), 1)

	// A choice that says nothing is the model's (empty) answer.
	srv = wiretest.New(t, wiretest.Reply{Body: `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"})
	_, err = newProvider(t, srv, "sk-test").Generate(context.Background(), request("gpt-4.1-mini"), nil)
	require.NoError(t, err)
}
