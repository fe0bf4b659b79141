package httpstream

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDescribeSaysWhatToDo(t *testing.T) {
	subj := Subject{Server: "the OpenAI-compatible server at http://127.0.0.1:1/v1", KeyEnv: "OPENAI_API_KEY", HasKey: true,
		BaseURLHint: "--base-url or OPENAI_BASE_URL", Model: "qwen2.5-coder"}
	noKey := subj
	noKey.HasKey = false
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		subj Subject
		err  error
		kind Kind
		want []string
	}{
		{"wrong key", subj, &StatusError{StatusCode: 401, Code: "invalid_api_key", Message: "Incorrect API key provided"}, KindAuth,
			[]string{"rejected the API key (401 Unauthorized invalid_api_key): Incorrect API key provided", "set OPENAI_API_KEY to a valid key"}},
		{"no key", noKey, &StatusError{StatusCode: 401, Message: "missing bearer"}, KindAuth,
			[]string{"wants an API key and none is set", "; set OPENAI_API_KEY"}},
		{"forbidden", subj, &StatusError{StatusCode: 403, Type: "permission_error", Message: "no access"}, KindAuth,
			[]string{"refused the request (403 Forbidden permission_error)", `may use the model "qwen2.5-coder"`}},
		{"unknown model", subj, &StatusError{StatusCode: 404, Type: "api_error", Message: `model "qwen2.5-coder" not found, try pulling it first`}, KindModel,
			[]string{`does not know the model "qwen2.5-coder" (404 Not Found api_error)`, "--model, PIXIR_MODEL", "pixir doctor"}},
		{"wrong path", subj, &StatusError{StatusCode: 404, Message: "404 page not found"}, KindNotFound,
			[]string{"has no such endpoint", "check --base-url or OPENAI_BASE_URL"}},
		{"rate limited after retries", subj, &RetriesError{Attempts: 4, Err: &StatusError{StatusCode: 429, Code: "rate_limit_exceeded", Message: "Rate limit reached"}}, KindRateLimit,
			[]string{"is rate limiting requests (429 Too Many Requests rate_limit_exceeded): Rate limit reached", "(gave up after 4 attempts)"}},
		{"rate limited for an hour", subj, &RetriesError{Attempts: 1, Reason: "the server asks to wait 1h0m0s before trying again",
			Err: &StatusError{StatusCode: 429, Code: "rate_limit_exceeded", Message: "Rate limit reached for requests per day", RetryAfter: time.Hour}}, KindRateLimit,
			[]string{"; wait 1h0m0s, as the server asks, and send the prompt again (not retried: the server asks to wait 1h0m0s before trying again)"}},
		{"out of quota", subj, &StatusError{StatusCode: 429, Code: "insufficient_quota", Message: "You exceeded your current quota"}, KindQuota,
			[]string{"refuses more requests", "plan and billing"}},
		{"server fault", subj, &RetriesError{Attempts: 2, Err: &StatusError{StatusCode: 529, Type: "overloaded_error", Message: "Overloaded"}}, KindServer,
			[]string{"failed (529 overloaded_error): Overloaded; try again later (gave up after 2 attempts)"}},
		{"too large for the token limit (OpenAI)", subj, &StatusError{StatusCode: 429, Type: "tokens", Code: "rate_limit_exceeded",
			Message: "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 52311. The input or output tokens must be reduced in order to run successfully."},
			KindTooLarge, []string{"refused the request as too large (429 Too Many Requests rate_limit_exceeded): Request too large", "waiting will not help", "start a new session"}},
		{"too large for the token limit (Groq)", subj, &StatusError{StatusCode: 429, Type: "tokens", Code: "rate_limit_exceeded",
			Message: "Request too large for model `llama-3.3-70b-versatile` in organization `org_01` service tier `on_demand` on tokens per minute (TPM): Limit 12000, Requested 19876, please reduce your message size and try again."},
			KindTooLarge, []string{"refused the request as too large", "ask for less at once"}},
		{"payload too large", subj, &StatusError{StatusCode: 413, Message: "request entity too large"}, KindTooLarge,
			[]string{"refused the request as too large (413 Request Entity Too Large)"}},
		{"bad request", subj, &StatusError{StatusCode: 400, Message: "tool_choice auto needs --enable-auto-tool-choice"}, KindRejected,
			[]string{"rejected the request (400 Bad Request): tool_choice auto"}},
		{"refused", subj, &UnreachableError{URL: "http://127.0.0.1:1/v1", Err: refused}, KindUnreachable,
			[]string{"cannot reach the OpenAI-compatible server at http://127.0.0.1:1/v1: connection refused", "Check --base-url or OPENAI_BASE_URL"}},
		{"proxy refused", subj, transportError("http://127.0.0.1:1/v1/chat/completions", &net.OpError{Op: "proxyconnect", Net: "tcp",
			Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 8), Port: 3128}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}),
			KindUnreachable, []string{"cannot reach the proxy at 10.0.0.8:3128 on the way to the OpenAI-compatible server at http://127.0.0.1:1/v1: connection refused",
				"HTTPS_PROXY and HTTP_PROXY"}},
		{"proxy credentials", subj, &StatusError{StatusCode: 407, Message: "<html><body>Proxy Authentication Required</body></html>"}, KindAuth,
			[]string{"the proxy between Pixir and the OpenAI-compatible server at http://127.0.0.1:1/v1 wants credentials (407 Proxy Authentication Required)",
				"HTTPS_PROXY=http://user:password@"}},
		{"no such host", subj, &UnreachableError{Err: &net.DNSError{Name: "nohost.invalid", Err: "no such host", IsNotFound: true}}, KindUnreachable,
			[]string{`no such host "nohost.invalid"`}},
		{"idle", subj, &IdleTimeoutError{After: 2 * time.Minute}, KindIdle,
			[]string{"sent nothing for 2m0s", "idle_timeout"}},
		{"keep-alives only", subj, &IdleTimeoutError{After: 2 * time.Minute, Streaming: true}, KindIdle,
			[]string{"sent no part of the answer for 2m0s (keep-alives do not count)", "idle_timeout"}},
		{"answer too large", subj, &AnswerTooLargeError{Limit: 8 << 20}, KindAnswerLimit,
			[]string{"grew past 8MiB, so Pixir stopped it; what arrived is kept", "max_answer_size"}},
		{"closed mid-stream", subj, fmt.Errorf("%w: %w", ErrStreamClosed, errors.New("unexpected EOF")), KindClosed,
			[]string{"closed the connection before the answer was complete"}},
		{"reset", subj, &ConnError{Err: syscall.ECONNRESET}, KindClosed, []string{"broke (connection reset)"}},
		{"a web page", subj, &NotAPIError{URL: "http://127.0.0.1:1/v1/chat/completions", ContentType: "text/html; charset=utf-8", Sample: "<!doctype html>"}, KindNotFound,
			[]string{"answered with a web page (text/html; charset=utf-8), not the API", "check --base-url or OPENAI_BASE_URL"}},
		{"error event", subj, &StreamError{Type: "overloaded_error", Message: "Overloaded"}, KindStream,
			[]string{"reported an error in the middle of the answer (overloaded_error: Overloaded)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.subj.Describe(tt.err)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tt.kind, e.Kind, err.Error())
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
			require.ErrorIs(t, err, tt.err, "the cause stays reachable")
			require.Same(t, err, tt.subj.Describe(err), "describing twice changes nothing")
		})
	}
}

// What servers say of a conversation longer than the context window, as
// recorded from each of them: it is told apart from other refusals, with
// the window when the message names it.
func TestContextTooLongIsToldApart(t *testing.T) {
	subj := Subject{Server: "the server", KeyEnv: "OPENAI_API_KEY", HasKey: true}
	tests := []struct {
		name   string
		err    error
		window int
		long   bool
	}{
		{"openai", &StatusError{StatusCode: 400, Type: "invalid_request_error", Code: "context_length_exceeded",
			Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages."}, 128000, true},
		{"anthropic", &StatusError{StatusCode: 400, Type: "invalid_request_error", Message: "prompt is too long: 215033 tokens > 200000 maximum"}, 200000, true},
		{"llama.cpp", &StatusError{StatusCode: 400, Type: "exceed_context_size_error",
			Message: "the request exceeds the available context size, try increasing it (n_ctx: 4096)"}, 4096, true},
		{"mistral", &StatusError{StatusCode: 400, Message: "Prompt contains 40012 tokens and 0 draft tokens, too large for model with 32768 maximum context length"}, 32768, true},
		{"vllm", &StatusError{StatusCode: 400, Message: "This model's maximum context length is 8192 tokens. However, you requested 9001 tokens in the messages."}, 8192, true},
		{"no window named", &StatusError{StatusCode: 413, Message: "input is too long for the model"}, 0, true},
		{"in a stream", &StreamError{Type: "invalid_request_error", Message: "prompt is too long: 300000 tokens > 200000 maximum"}, 200000, true},
		{"another bad request", &StatusError{StatusCode: 400, Message: "messages: tool_use ids must be unique"}, 0, false},
		{"a server fault", &StatusError{StatusCode: 500, Message: "context window manager crashed"}, 0, false},
		{"a token rate limit", &StatusError{StatusCode: 429, Message: "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 35000. The input or output tokens must be reduced"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := subj.Describe(tt.err)
			var e *Error
			require.ErrorAs(t, err, &e)
			window, long := e.ContextOverflow()
			require.Equal(t, tt.long, long)
			require.Equal(t, tt.window, window)
			var se *StatusError
			if errors.As(tt.err, &se) && tt.long {
				require.Equal(t, KindContext, e.Kind)
				require.Contains(t, e.Message, "longer than the model's context window")
			}
		})
	}
}

// A status Go has no text for (Anthropic's 529 overloaded) reads without a
// gap in the retry warning: it said "HTTP 529 : Overloaded".
func TestAStatusWithoutAGoTextReadsWhole(t *testing.T) {
	require.Equal(t, "HTTP 529: Overloaded", (&StatusError{StatusCode: 529, Message: "Overloaded"}).Error())
	require.Equal(t, "HTTP 503 Service Unavailable: busy", (&StatusError{StatusCode: 503, Message: "busy"}).Error())
}
