package httpstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider/internal/wiretest"
)

// testPolicy keeps every wait tiny so the suite stays fast.
func testPolicy() Policy {
	return Policy{
		ConnectTimeout: 2 * time.Second,
		IdleTimeout:    300 * time.Millisecond,
		MaxRetries:     2,
		MinBackoff:     5 * time.Millisecond,
		MaxBackoff:     20 * time.Millisecond,
		MaxRetryAfter:  3 * time.Second,
	}
}

func newTestClient(t *testing.T, p Policy) *Client {
	c := NewClient(p, nil)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

const okStream = "data: one\n\ndata: two\n\ndata: [DONE]\n\n"

// collect reads events until [DONE], marking output as started when asked.
func collect(out *[]string, start bool) func(*Stream) error {
	return func(s *Stream) error {
		*out = nil
		for {
			ev, err := s.Next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					return ErrStreamClosed
				}
				return err
			}
			if ev.Data == "[DONE]" {
				return nil
			}
			if start {
				s.Started()
			}
			if err := s.Progress(len(ev.Data)); err != nil {
				return err
			}
			*out = append(*out, ev.Data)
		}
	}
}

func post(url string) Request {
	return Request{URL: url + "/chat/completions", Body: []byte(`{}`), Header: http.Header{"Content-Type": {"application/json"}}}
}

func TestStreamRetriesRetryableFailuresBeforeOutput(t *testing.T) {
	wiretest.NoLeaks(t)
	tests := []struct {
		name     string
		first    wiretest.Reply
		minWait  time.Duration
		requests int
	}{
		{"500 then success", wiretest.Reply{Status: 500, Body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error"}}`}, 0, 2},
		{"429 with Retry-After seconds", wiretest.Reply{Status: 429, Header: map[string]string{"Retry-After": "1"},
			Body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`}, 900 * time.Millisecond, 2},
		{"529 overloaded", wiretest.Reply{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, 0, 2},
		{"connection reset before the headers", wiretest.Reply{Drop: true}, 0, 2},
		{"connection reset after the headers", wiretest.Reply{Reset: true}, 0, 2},
		{"stream cut before any output", wiretest.Reply{Body: "data: one\n\n", Cut: true}, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := wiretest.New(t, tt.first, wiretest.Reply{Body: okStream, Chunk: 7})
			c := newTestClient(t, testPolicy())
			var got []string
			start := time.Now()
			// Output only starts with the second event, so a cut after the
			// first is still "before any output".
			err := c.Stream(context.Background(), post(srv.URL), collect(&got, false))
			require.NoError(t, err)
			require.Equal(t, []string{"one", "two"}, got)
			require.Len(t, srv.Requests(), tt.requests)
			require.GreaterOrEqual(t, time.Since(start), tt.minWait)
		})
	}
}

func TestStreamGivesUpAfterMaxRetries(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t, wiretest.Reply{Status: 503, Body: `{"error":{"message":"upstream busy","type":"server_error"}}`})
	c := newTestClient(t, testPolicy())
	var got []string
	err := c.Stream(context.Background(), post(srv.URL), collect(&got, true))
	var re *RetriesError
	require.ErrorAs(t, err, &re)
	require.Equal(t, 3, re.Attempts)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 503, se.StatusCode)
	require.Len(t, srv.Requests(), 3)
}

func TestStreamDoesNotRetry(t *testing.T) {
	wiretest.NoLeaks(t)
	tests := []struct {
		name  string
		reply wiretest.Reply
		check func(t *testing.T, err error)
	}{
		{"401", wiretest.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`},
			func(t *testing.T, err error) {
				var se *StatusError
				require.ErrorAs(t, err, &se)
				require.Equal(t, "invalid_api_key", se.Code)
			}},
		{"x-should-retry false", wiretest.Reply{Status: 500, Header: map[string]string{"X-Should-Retry": "false"}, Body: `{}`},
			func(t *testing.T, err error) { require.False(t, Retryable(err)) }},
		{"a request too large for the token limit", wiretest.Reply{Status: 429, Body: `{"error":{"message":"Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 52311. The input or output tokens must be reduced in order to run successfully.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`},
			func(t *testing.T, err error) {
				var se *StatusError
				require.ErrorAs(t, err, &se)
				require.True(t, se.TooLarge())
				require.False(t, Retryable(err))
			}},
		{"out of quota", wiretest.Reply{Status: 429, Body: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`},
			func(t *testing.T, err error) { require.False(t, Retryable(err)) }},
		{"Retry-After longer than the policy waits", wiretest.Reply{Status: 429, Header: map[string]string{"Retry-After": "3600"}, Body: `{}`},
			func(t *testing.T, err error) {
				var re *RetriesError
				require.ErrorAs(t, err, &re)
				require.Contains(t, re.Error(), "not retried: the server asks to wait 1h0m0s")
			}},
		{"a failure after output was streamed", wiretest.Reply{Body: "data: one\n\n", Reset: true},
			func(t *testing.T, err error) {
				require.True(t, Retryable(err), "retryable in itself, but output had started")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := wiretest.New(t, tt.reply, wiretest.Reply{Body: okStream})
			c := newTestClient(t, testPolicy())
			var got []string
			err := c.Stream(context.Background(), post(srv.URL), collect(&got, true))
			require.Error(t, err)
			require.Len(t, srv.Requests(), 1)
			tt.check(t, err)
		})
	}
}

func TestStreamIdleTimeout(t *testing.T) {
	wiretest.NoLeaks(t)
	t.Run("before the headers", func(t *testing.T) {
		srv := wiretest.New(t, wiretest.Reply{Delay: time.Hour})
		p := testPolicy()
		c := newTestClient(t, p)
		err := c.Stream(context.Background(), post(srv.URL), func(*Stream) error { return nil })
		var it *IdleTimeoutError
		require.ErrorAs(t, err, &it)
		require.Equal(t, p.IdleTimeout, it.After)
		require.Len(t, srv.Requests(), 1, "silence is not retried")
	})
	t.Run("in the middle of the stream", func(t *testing.T) {
		srv := wiretest.New(t, wiretest.Reply{Body: "data: one\n\n", Stall: true})
		c := newTestClient(t, testPolicy())
		var got []string
		start := time.Now()
		err := c.Stream(context.Background(), post(srv.URL), collect(&got, true))
		var it *IdleTimeoutError
		require.ErrorAs(t, err, &it)
		require.Equal(t, []string{"one"}, got)
		require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
	})
	t.Run("a slow reader is not a silent server", func(t *testing.T) {
		srv := wiretest.New(t, wiretest.Reply{Body: okStream})
		c := newTestClient(t, testPolicy())
		var got []string
		err := c.Stream(context.Background(), post(srv.URL), func(s *Stream) error {
			time.Sleep(2 * testPolicy().IdleTimeout)
			return collect(&got, true)(s)
		})
		require.NoError(t, err)
		require.Equal(t, []string{"one", "two"}, got)
	})
}

func TestStreamKeepAlivesDoNotKeepAStreamAlive(t *testing.T) {
	wiretest.NoLeaks(t)
	keepAlive := ": keep-alive\n\n"
	t.Run("only keep-alives after a part of the answer", func(t *testing.T) {
		// 20 s of keep-alives, one every 20 ms: far more than the idle
		// timeout, and never 300 ms of silence.
		srv := wiretest.New(t, wiretest.Reply{Body: "data: one\n\n" + strings.Repeat(keepAlive, 1000), Chunk: len(keepAlive), Pause: 20 * time.Millisecond})
		c := newTestClient(t, testPolicy())
		var got []string
		start := time.Now()
		err := c.Stream(context.Background(), post(srv.URL), collect(&got, true))
		var it *IdleTimeoutError
		require.ErrorAs(t, err, &it)
		require.True(t, it.Streaming)
		require.Equal(t, []string{"one"}, got)
		require.Less(t, time.Since(start), 5*time.Second)
		require.Len(t, srv.Requests(), 1)
		srv.WaitGone()
	})
	t.Run("keep-alives between parts of the answer are fine", func(t *testing.T) {
		// 1.2 s of answer, a part every 100 ms with keep-alives between:
		// longer than the idle timeout in all, never idle for it.
		var body strings.Builder
		for range 12 {
			body.WriteString(keepAlive + keepAlive + "data: part\n\n")
		}
		body.WriteString("data: [DONE]\n\n")
		srv := wiretest.New(t, wiretest.Reply{Body: body.String(), Chunk: len(keepAlive), Pause: 33 * time.Millisecond})
		p := testPolicy()
		p.IdleTimeout = 600 * time.Millisecond // six parts' time: room for a busy machine
		c := newTestClient(t, p)
		var got []string
		start := time.Now()
		require.NoError(t, c.Stream(context.Background(), post(srv.URL), collect(&got, true)))
		require.Len(t, got, 12)
		require.Greater(t, time.Since(start), p.IdleTimeout, "the whole answer took longer than the idle timeout")
	})
}

func TestStreamStopsAnAnswerPastItsCap(t *testing.T) {
	wiretest.NoLeaks(t)
	part := "data: " + strings.Repeat("x", 94) + "\n\n"
	// An endless answer: the server would go on for 100,000 parts.
	srv := wiretest.New(t, wiretest.Reply{Body: strings.Repeat(part, 100000), Chunk: 4096})
	p := testPolicy()
	p.MaxAnswerBytes = 1000
	c := newTestClient(t, p)
	var got []string
	err := c.Stream(context.Background(), post(srv.URL), collect(&got, true))
	var tl *AnswerTooLargeError
	require.ErrorAs(t, err, &tl)
	require.Equal(t, int64(1000), tl.Limit)
	require.Len(t, got, 10, "what arrived within the cap was handed over")
	require.Len(t, srv.Requests(), 1, "not retried")
	require.Equal(t, "the answer grew past 1000B", err.Error())
}

func TestReadBodyIsCapped(t *testing.T) {
	wiretest.NoLeaks(t)
	json := `{"text":"` + strings.Repeat("x", 2<<20) + `"}`
	srv := wiretest.New(t, wiretest.Reply{Header: map[string]string{"Content-Type": "application/json"}, Body: json})
	p := testPolicy()
	p.MaxAnswerBytes = 1 << 10
	c := newTestClient(t, p)
	err := c.Stream(context.Background(), post(srv.URL), func(s *Stream) error {
		require.True(t, s.IsJSON())
		_, err := s.ReadBody()
		return err
	})
	var tl *AnswerTooLargeError
	require.ErrorAs(t, err, &tl)
}

func TestIsJSONSniffsTheBody(t *testing.T) {
	wiretest.NoLeaks(t)
	for _, tt := range []struct {
		name  string
		reply wiretest.Reply
		want  bool
	}{
		{"event stream", wiretest.Reply{Body: okStream}, false},
		{"JSON declared", wiretest.Reply{Header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, Body: `{}`}, true},
		{"JSON under an event-stream header", wiretest.Reply{Body: "\n  {\"id\":\"chatcmpl-1\"}"}, true},
		{"a comment first", wiretest.Reply{Body: ": hi\n\n" + okStream}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := wiretest.New(t, tt.reply)
			c := newTestClient(t, testPolicy())
			require.NoError(t, c.Stream(context.Background(), post(srv.URL), func(s *Stream) error {
				require.Equal(t, tt.want, s.IsJSON())
				return nil
			}))
		})
	}
}

func TestStreamCancelClosesTheConnectionAtOnce(t *testing.T) {
	wiretest.NoLeaks(t)
	srv := wiretest.New(t, wiretest.Reply{Body: "data: one\n\n", Stall: true})
	p := testPolicy()
	p.IdleTimeout = time.Hour // a cancel that did not close the stream would hang the test
	c := newTestClient(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	err := c.Stream(ctx, post(srv.URL), func(s *Stream) error {
		for {
			if _, err := s.Next(); err != nil {
				return err
			}
			s.Started()
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	srv.WaitGone() // the server saw the connection close
}

func TestStreamConnectTimeout(t *testing.T) {
	wiretest.NoLeaks(t)
	// A server that accepts the connection and never answers the TLS
	// handshake: the connect timeout, not the (longer) idle one, ends it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-accepted
		for _, c := range conns {
			c.Close()
		}
	})
	p := testPolicy()
	p.ConnectTimeout = 200 * time.Millisecond
	p.IdleTimeout = time.Hour
	c := newTestClient(t, p)
	err = c.Stream(context.Background(), post("https://"+l.Addr().String()), func(*Stream) error { return nil })
	var ue *UnreachableError
	require.ErrorAs(t, err, &ue, "%v", err)
	require.Equal(t, "the connection timed out", ue.Reason())
	var described *Error
	require.ErrorAs(t, Subject{Server: "the server", BaseURLHint: "--base-url"}.Describe(err), &described)
	require.Equal(t, KindUnreachable, described.Kind)
}

func TestStreamCancelDuringBackoff(t *testing.T) {
	wiretest.NoLeaks(t)
	// A backoff of an hour: one that the deadline did not interrupt would
	// hang the test until go test's own timeout.
	// The cancel comes once the client says it waits to retry (its log
	// line, written just before the wait), not after a wall-clock
	// deadline (a busy machine can take longer than any deadline to send
	// the request).
	srv := wiretest.New(t, wiretest.Reply{Status: 429, Header: map[string]string{"Retry-After": "3600"}, Body: `{}`})
	p := testPolicy()
	p.MaxRetryAfter = 2 * time.Hour
	waiting := make(chan struct{})
	c := NewClient(p, slog.New(onMessage{msg: "the model request failed; trying again", seen: sync.OnceFunc(func() { close(waiting) })}))
	t.Cleanup(c.CloseIdleConnections)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-waiting; cancel() }()
	err := c.Stream(ctx, post(srv.URL), func(*Stream) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, srv.Requests(), 1)
}

func TestStreamUnreachableIsNotRetried(t *testing.T) {
	wiretest.NoLeaks(t)
	c := newTestClient(t, testPolicy())
	url := wiretest.ClosedURL(t)
	err := c.Stream(context.Background(), post(url), func(*Stream) error { return nil })
	var ue *UnreachableError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, "connection refused", ue.Reason())
	var re *RetriesError
	require.False(t, errors.As(err, &re))
}

func TestGetReturnsTheBody(t *testing.T) {
	srv := wiretest.New(t, wiretest.Reply{Header: map[string]string{"Content-Type": "application/json"}, Body: `{"data":[]}`})
	c := newTestClient(t, testPolicy())
	body, err := c.Get(context.Background(), Request{URL: srv.URL + "/models"})
	require.NoError(t, err)
	require.JSONEq(t, `{"data":[]}`, string(body))
	require.Equal(t, http.MethodGet, srv.Requests()[0].Method)
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{map[string]string{"Retry-After": "13"}, 13 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After": "Sun, 01 Mar 2026 12:00:30 GMT"}, 30 * time.Second},
		{map[string]string{"Retry-After": "Sun, 01 Mar 2026 11:00:00 GMT"}, 0},
		{map[string]string{"Retry-After": "-1"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "1"}, 250 * time.Millisecond},
		{nil, 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		require.Equal(t, tt.want, parseRetryAfter(h, now), "%v", tt.header)
	}
}

func TestBackoffGrowsWithJitterAndIsCapped(t *testing.T) {
	p := Policy{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}.normalized()
	for n, base := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		base *= time.Millisecond
		for range 50 {
			d := p.backoff(n)
			require.GreaterOrEqual(t, d, base/2, "retry %d", n)
			require.LessOrEqual(t, d, base, "retry %d", n)
		}
	}
}

func TestParseErrorBody(t *testing.T) {
	tests := []struct {
		name, body, typ, code, msg string
	}{
		{"OpenAI", "{\n    \"error\": {\n        \"message\": \"Incorrect API key provided: sk-abc.\",\n        \"type\": \"invalid_request_error\",\n        \"param\": null,\n        \"code\": \"invalid_api_key\"\n    }\n}\n",
			"invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-abc."},
		{"Anthropic", `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`,
			"not_found_error", "", "model: claude-nope"},
		{"vLLM", `{"object":"error","message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`,
			"NotFoundError", "404", "The model `x` does not exist."},
		{"Ollama native", `{"error":"model \"qwen\" not found, try pulling it first"}`, "", "", `model "qwen" not found, try pulling it first`},
		{"FastAPI", `{"detail":"Not Found"}`, "", "", "Not Found"},
		{"Gemini OpenAI-compatible", `[{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts.","status":"INVALID_ARGUMENT"}}]`,
			"", "400", "Function call is missing a thought_signature in functionCall parts."},
		{"HTML", "<html><body><h1>502 Bad Gateway</h1></body></html>\n", "", "", "<html><body><h1>502 Bad Gateway</h1></body></html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, code, msg := ParseErrorBody([]byte(tt.body))
			require.Equal(t, []string{tt.typ, tt.code, tt.msg}, []string{typ, code, msg})
		})
	}
	_, _, msg := ParseErrorBody([]byte(strings.Repeat("é", 400)))
	require.True(t, strings.HasSuffix(msg, "…"))
	require.LessOrEqual(t, len(msg), 304)
}

// onMessage is a slog handler that calls seen when a record with msg is
// logged.
type onMessage struct {
	msg  string
	seen func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.seen()
	}
	return nil
}
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onMessage) WithGroup(string) slog.Handler      { return h }

// refusingProxy is a real proxy on a local port that answers every CONNECT
// with status; it returns the proxy's URL and the CONNECTs it received.
func refusingProxy(t *testing.T, status int) (string, <-chan *http.Request) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	got := make(chan *http.Request, 8)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				got <- req
				fmt.Fprintf(conn, "HTTP/1.1 %d %s\r\nProxy-Authenticate: Basic realm=\"corp\"\r\nContent-Length: 0\r\n\r\n", status, http.StatusText(status))
			})
		}
	})
	return "http://" + ln.Addr().String(), got
}

// An https server through a proxy that refuses the CONNECT: net/http says
// only "Proxy Authentication Required"; the error names the proxy (its
// password hidden) and says what to set.
func TestAProxyThatRefusesTheTunnelIsNamed(t *testing.T) {
	subj := Subject{Server: "the OpenAI-compatible server at https://api.example.invalid/v1", KeyEnv: "OPENAI_API_KEY", HasKey: true,
		BaseURLHint: "--base-url or OPENAI_BASE_URL"}
	for _, tt := range []struct {
		name   string
		status int
		user   string
		kind   Kind
		want   string
	}{
		{"no credentials", http.StatusProxyAuthRequired, "", KindAuth,
			"wants credentials (407 Proxy Authentication Required); give them in the proxy's address, as in HTTPS_PROXY=http://user:password@proxy:3128"},
		{"wrong credentials", http.StatusProxyAuthRequired, "ann:s3cret@", KindAuth,
			"rejected the credentials in its address (407 Proxy Authentication Required); correct the user and password in HTTPS_PROXY"},
		{"forbidden", http.StatusForbidden, "", KindUnreachable,
			"refused to open the connection to the OpenAI-compatible server at https://api.example.invalid/v1 (403 Forbidden); check HTTPS_PROXY"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proxy, got := refusingProxy(t, tt.status)
			proxyURL, err := url.Parse(strings.Replace(proxy, "http://", "http://"+tt.user, 1))
			require.NoError(t, err)
			c := newTestClient(t, testPolicy())
			c.hc.Transport.(*http.Transport).Proxy = http.ProxyURL(proxyURL)
			err = c.Stream(context.Background(), post("https://api.example.invalid/v1"), func(*Stream) error { return nil })
			require.Error(t, err)
			req := <-got
			require.Equal(t, http.MethodConnect, req.Method)
			require.Len(t, got, 0, "a refused tunnel is not retried")
			desc := subj.Describe(err)
			var e *Error
			require.ErrorAs(t, desc, &e)
			require.Equal(t, tt.kind, e.Kind, desc.Error())
			require.Contains(t, desc.Error(), "the proxy "+proxyURL.Redacted()+" ")
			require.Contains(t, desc.Error(), tt.want)
			require.NotContains(t, desc.Error(), "s3cret")
		})
	}
}

// A 200 that is no model's answer (a gateway's text/plain, an empty body)
// is said with what the server sent, at once: not read as a stream cut
// short and retried. An event stream or JSON under another name still
// reads.
func TestAnAnswerThatIsNoAnswerSaysWhatCame(t *testing.T) {
	wiretest.NoLeaks(t)
	subj := Subject{Server: "the OpenAI-compatible server at http://127.0.0.1:1/v1", BaseURLHint: "--base-url or OPENAI_BASE_URL"}
	plain := "upstream connect error or disconnect/reset before headers. reset reason: overflow"
	for _, tt := range []struct {
		name  string
		reply wiretest.Reply
		want  string // "" when it reads
	}{
		{"plain text", wiretest.Reply{Header: map[string]string{"Content-Type": "text/plain"}, Body: plain},
			`answered with something that is not a model's answer (200 OK, Content-Type text/plain): "` + plain + `"`},
		{"empty JSON", wiretest.Reply{Header: map[string]string{"Content-Type": "application/json"}, Body: ""},
			"answered with an empty body (200 OK, Content-Type application/json): no answer at all"},
		{"blank, no type", wiretest.Reply{Header: map[string]string{"Content-Type": ""}, Body: "\r\n"},
			"answered with an empty body (200 OK, no Content-Type)"},
		{"an event stream as text/plain", wiretest.Reply{Header: map[string]string{"Content-Type": "text/plain"}, Body: okStream, Chunk: 3}, ""},
		{"a comment first as text/plain", wiretest.Reply{Header: map[string]string{"Content-Type": "text/plain"}, Body: "\n: hi\n\n" + okStream}, ""},
		{"JSON as text/plain", wiretest.Reply{Header: map[string]string{"Content-Type": "text/plain"}, Body: `{"id":"x"}`}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := wiretest.New(t, tt.reply)
			c := newTestClient(t, testPolicy())
			err := c.Stream(context.Background(), post(srv.URL), func(s *Stream) error {
				if s.IsJSON() {
					_, err := s.ReadBody()
					return err
				}
				var out []string
				return collect(&out, false)(s)
			})
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Len(t, srv.Requests(), 1, "not retried")
			require.Contains(t, subj.Describe(err).Error(), tt.want)
		})
	}
}
