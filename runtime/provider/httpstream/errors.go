package httpstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StatusError is a non-2xx answer, with what its body said.
type StatusError struct {
	StatusCode int
	// Type and Code are the API's error type and code when its body had them
	// ("authentication_error", "model_not_found", …).
	Type, Code string
	// Message is the API's error message, or the start of the body when it
	// was not an error object.
	Message string
	// RetryAfter is what the server asked to wait (Retry-After,
	// retry-after-ms); zero when it said nothing.
	RetryAfter time.Duration
	// ShouldRetry is the server's x-should-retry header, when sent.
	ShouldRetry *bool
}

func (e *StatusError) Error() string {
	s := "HTTP " + e.Status()
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Retryable reports whether another attempt may succeed: rate limits,
// timeouts and server faults, unless the server said otherwise or the
// account is out of quota (waiting will not help).
func (e *StatusError) Retryable() bool {
	if e.ShouldRetry != nil {
		return *e.ShouldRetry
	}
	if e.Code == "insufficient_quota" || e.Type == "insufficient_quota" || e.TooLarge() {
		return false
	}
	return e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// TooLarge reports a request refused for its size: 413, or a 429 that is
// no rate limit but a request larger than the per-minute token limit
// allows (OpenAI: "Request too large for gpt-4o … The input or output
// tokens must be reduced"; Groq: "Request too large for model … please
// reduce your message size"). Waiting will not help; only a shorter
// request will.
func (e *StatusError) TooLarge() bool {
	if e.StatusCode == http.StatusRequestEntityTooLarge {
		return true
	}
	if e.StatusCode != http.StatusTooManyRequests {
		return false
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "request too large") || strings.Contains(m, "must be reduced") ||
		strings.Contains(m, "reduce your message size")
}

// ContextTooLong reports a request refused because the conversation does
// not fit the model's context window (OpenAI's context_length_exceeded,
// Anthropic's "prompt is too long", llama.cpp's exceed_context_size_error,
// vLLM's and Mistral's "maximum context length"), with the window when the
// message names it (0 when not). Waiting will not help; a shorter
// conversation will.
func (e *StatusError) ContextTooLong() (window int, ok bool) {
	if e.StatusCode < 400 || e.StatusCode >= 500 {
		return 0, false
	}
	return contextTooLong(e.Type, e.Code, e.Message)
}

// contextPhrases are what servers say of a conversation longer than the
// context window.
var contextPhrases = []string{
	"context_length_exceeded", "exceed_context_size", "maximum context length", "context length", "context window",
	"context size", "prompt is too long", "input is too long", "reduce the length of the messages", "n_ctx",
}

// contextWindowPatterns find the window in such a message.
var contextWindowPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`maximum context length is (\d+)`),
		regexp.MustCompile(`(\d+) maximum context length`),
		regexp.MustCompile(`\d+ tokens > (\d+) maximum`),
		regexp.MustCompile(`n_ctx"?\s*[:=]?\s*(\d+)`),
		regexp.MustCompile(`context (?:window|size|length) (?:of |is )?\(?(\d+)`),
	}
})

func contextTooLong(typ, code, message string) (int, bool) {
	all := strings.ToLower(typ + " " + code + " " + message)
	found := false
	for _, p := range contextPhrases {
		if strings.Contains(all, p) {
			found = true
			break
		}
	}
	if !found {
		return 0, false
	}
	for _, re := range contextWindowPatterns() {
		if m := re.FindStringSubmatch(all); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
				return n, true
			}
		}
	}
	return 0, true
}

// Status is e.g. "401 Unauthorized" or "529".
func (e *StatusError) Status() string {
	if t := http.StatusText(e.StatusCode); t != "" {
		return fmt.Sprintf("%d %s", e.StatusCode, t)
	}
	return fmt.Sprint(e.StatusCode)
}

// StreamError is an error the server reported inside a stream that had
// already started (an SSE error event or chunk).
type StreamError struct {
	Type, Code, Message string
}

func (e *StreamError) Error() string {
	if e.Type == "" {
		return e.Message
	}
	return e.Type + ": " + e.Message
}

// ContextTooLong is StatusError.ContextTooLong for an error reported in a
// stream.
func (e *StreamError) ContextTooLong() (window int, ok bool) {
	return contextTooLong(e.Type, e.Code, e.Message)
}

// Retryable reports whether the error is a passing server condition.
func (e *StreamError) Retryable() bool {
	switch e.Type {
	case "overloaded_error", "api_error", "server_error", "rate_limit_error", "internal_server_error", "timeout_error":
		return true
	}
	return false
}

// UnreachableError is a connection that could not be made: refused, no
// such host, connect timeout. It is not retried: the server is not there.
type UnreachableError struct {
	URL string
	Err error
	// Proxy is the proxy's address when the connection to the proxy (from
	// HTTPS_PROXY, HTTP_PROXY or ALL_PROXY) failed, not the server's.
	Proxy string
}

func (e *UnreachableError) Error() string { return "cannot reach " + e.URL + ": " + e.Reason() }
func (e *UnreachableError) Unwrap() error { return e.Err }

// Reason is the cause in a few words.
func (e *UnreachableError) Reason() string {
	var dns *net.DNSError
	switch {
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(e.Err, &dns):
		if dns.IsNotFound {
			return fmt.Sprintf("no such host %q", dns.Name)
		}
		return "DNS lookup failed: " + dns.Err
	case isTimeout(e.Err):
		return "the connection timed out"
	}
	return e.Err.Error()
}

// ProxyRefusedError is a proxy that refused to open the tunnel to an https
// server (its answer to CONNECT was not 200): 407 when it wants
// credentials. Not retried.
type ProxyRefusedError struct {
	// Proxy is the proxy's address, its password hidden.
	Proxy      string
	StatusCode int
	// WithCredentials says the proxy's address carried credentials.
	WithCredentials bool
}

func (e *ProxyRefusedError) Error() string {
	return fmt.Sprintf("the proxy %s refused the tunnel (%s)", e.Proxy, (&StatusError{StatusCode: e.StatusCode}).Status())
}

// ConnError is a connection that broke: reset by the peer, closed before
// the response or in the middle of it. Retried while nothing was streamed.
type ConnError struct {
	Err error
}

func (e *ConnError) Error() string { return "the connection broke: " + e.Err.Error() }

// Reason is the cause in a few words.
func (e *ConnError) Reason() string {
	switch {
	case errors.Is(e.Err, syscall.ECONNRESET), errors.Is(e.Err, syscall.ECONNABORTED):
		return "connection reset"
	case errors.Is(e.Err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(e.Err, io.EOF):
		return "closed without an answer"
	}
	return e.Err.Error()
}
func (e *ConnError) Unwrap() error   { return e.Err }
func (e *ConnError) Retryable() bool { return true }

// IdleTimeoutError is a server that sent nothing of the answer for After:
// no response headers, or (Streaming) no part of a started stream, where
// keep-alives (SSE comments, pings, empty chunks) do not count.
type IdleTimeoutError struct {
	After     time.Duration
	Streaming bool
}

func (e *IdleTimeoutError) Error() string {
	if e.Streaming {
		return fmt.Sprintf("the server sent no part of the answer for %s", e.After)
	}
	return fmt.Sprintf("the server sent nothing for %s", e.After)
}

// AnswerTooLargeError is an answer that grew past the policy's
// MaxAnswerBytes. Not retried: the same request would do the same.
type AnswerTooLargeError struct {
	Limit int64
}

func (e *AnswerTooLargeError) Error() string {
	return fmt.Sprintf("the answer grew past %s", FormatBytes(e.Limit))
}

// FormatBytes writes a size the way a user writes it in config.toml:
// "8MiB", "512KiB", "100B".
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// NotAPIError is a 2xx answer that is a web page, not the API's: the base
// URL leads to a site, a proxy's login page or a server's web UI. Not
// retried.
type NotAPIError struct {
	URL, ContentType, Sample string
}

func (e *NotAPIError) Error() string {
	return fmt.Sprintf("%s answered with a web page (%s), not the API: %s", e.URL, e.ContentType, Truncate(e.Sample, 120))
}

// UnexpectedBodyError is a 2xx answer that is no model's answer: empty
// (Sample is ""), or neither an event stream nor JSON, such as a proxy's
// "upstream connect error …" in text/plain. Not retried: nothing says
// another attempt would be read.
type UnexpectedBodyError struct {
	URL, ContentType, Sample string
}

func (e *UnexpectedBodyError) Error() string {
	if e.Sample == "" {
		return fmt.Sprintf("%s answered 200 with an empty body (%s)", e.URL, e.contentType())
	}
	return fmt.Sprintf("%s answered 200 with %s, not a model's answer: %s", e.URL, e.contentType(), Truncate(e.Sample, 200))
}

func (e *UnexpectedBodyError) contentType() string {
	if e.ContentType == "" {
		return "no Content-Type"
	}
	return "Content-Type " + e.ContentType
}

// ErrStreamClosed is a stream that ended before its end marker ([DONE],
// message_stop). Retried while nothing was streamed.
var ErrStreamClosed = errors.New("the server closed the stream before the answer was complete")

// RetriesError is the last error of a request that was tried more than
// once.
type RetriesError struct {
	Attempts int
	// Reason says why the retries stopped early, when they did.
	Reason string
	Err    error
}

func (e *RetriesError) Error() string {
	return fmt.Sprintf("%v (%s)", e.Err, e.Summary())
}
func (e *RetriesError) Unwrap() error { return e.Err }

// Summary is e.g. "gave up after 4 attempts" or "not retried: the server
// asks to wait 1h0m0s before trying again".
func (e *RetriesError) Summary() string {
	switch {
	case e.Attempts <= 1:
		return "not retried: " + e.Reason
	case e.Reason != "":
		return fmt.Sprintf("gave up after %d attempts: %s", e.Attempts, e.Reason)
	}
	return fmt.Sprintf("gave up after %d attempts", e.Attempts)
}

// Retryable reports whether err is worth another attempt, if nothing was
// streamed yet.
func Retryable(err error) bool {
	if errors.Is(err, ErrStreamClosed) {
		return true
	}
	var r interface{ Retryable() bool }
	return errors.As(err, &r) && r.Retryable()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// transportError classifies an error of http.Client.Do or of reading a
// response body.
func transportError(url string, err error) error {
	var op *net.OpError
	var dns *net.DNSError
	var pr *ProxyRefusedError
	switch {
	case errors.As(err, &pr):
		return pr
	case errors.As(err, &op) && op.Op == "proxyconnect":
		// net/http's wrapping of any failure to reach the proxy.
		proxy := "the proxy"
		var dial *net.OpError
		if errors.As(op.Err, &dial) && dial.Addr != nil {
			proxy = "the proxy at " + dial.Addr.String()
		}
		return &UnreachableError{URL: url, Err: err, Proxy: proxy}
	case errors.As(err, &dns), errors.As(err, &op) && op.Op == "dial":
		return &UnreachableError{URL: url, Err: err}
	case isTimeout(err):
		// The TLS handshake outlasted the connect timeout (no read
		// deadlines are set otherwise: the idle timer cancels instead).
		return &UnreachableError{URL: url, Err: err}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %w", ErrStreamClosed, err)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNABORTED):
		return &ConnError{Err: err}
	}
	return err
}

// errorBody is the error objects APIs send: OpenAI and most compatible
// servers {"error":{"message","type","code"}}, Anthropic
// {"type":"error","error":{"type","message"}}, vLLM {"object":"error",
// "message","type","code"}, Ollama's native API and some proxies
// {"error":"text"}, FastAPI {"detail":"text"}; Gemini's OpenAI-compatible
// endpoint wraps its error in an array, [{"error":{…}}].
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Detail  json.RawMessage `json:"detail"`
}

type errorObject struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// ParseErrorBody pulls type, code and message out of an error body; when it
// is not an error object the message is the start of the body.
func ParseErrorBody(body []byte) (typ, code, message string) {
	var wrapped []json.RawMessage
	if json.Unmarshal(body, &wrapped) == nil && len(wrapped) == 1 {
		if typ, code, message = ParseErrorBody(wrapped[0]); message != "" && message != string(wrapped[0]) {
			return typ, code, message
		}
	}
	var b errorBody
	if json.Unmarshal(body, &b) == nil {
		var o errorObject
		var s string
		switch {
		case json.Unmarshal(b.Error, &o) == nil && (o.Message != "" || o.Type != ""):
			return o.Type, codeString(o.Code), o.Message
		case json.Unmarshal(b.Error, &s) == nil && s != "":
			return "", "", s
		case b.Message != "":
			return b.Type, codeString(b.Code), b.Message
		case json.Unmarshal(b.Detail, &s) == nil && s != "":
			return "", "", s
		case len(b.Detail) > 0:
			return "", "", string(b.Detail)
		}
	}
	return "", "", Truncate(strings.TrimSpace(string(body)), 300)
}

// codeString reads a code that is a string in some APIs and a number in
// others.
func codeString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// Truncate cuts s to about n bytes (on a rune boundary), marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
