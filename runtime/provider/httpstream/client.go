// Package httpstream is what the hand-written model providers share: an SSE
// reader, and one retry, timeout and cancel policy for their HTTP requests,
// with errors a user can act on.
//
// The policy: a connect timeout; an idle timeout (the server sent nothing
// of the answer for too long, before the headers or mid-stream, keep-alives
// not counting); a cap on the size of one answer; retries with exponential
// backoff and jitter on 429, 408, 5xx and broken connections, honouring
// Retry-After, but only while nothing was streamed to the user; and
// cancellation through the context, which closes the connection at once.
package httpstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client sends provider requests under one Policy. It is safe for
// concurrent use; its connections are kept alive and reused.
type Client struct {
	policy Policy
	hc     *http.Client
	log    *slog.Logger
}

// NewClient returns a Client with policy p (zero durations take the
// defaults). log receives a line for each retry; nil discards them.
func NewClient(p Policy, log *slog.Logger) *Client {
	p = p.normalized()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dialer := &net.Dialer{Timeout: p.ConnectTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: p.ConnectTimeout,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        8,
		IdleConnTimeout:     90 * time.Second,
		// Compressed streams arrive in bursts; SSE is small anyway.
		DisableCompression: true,
		// net/http reports a proxy's refused CONNECT (an https server
		// through HTTPS_PROXY) as a bare "Proxy Authentication Required":
		// say it was the proxy, and which.
		OnProxyConnectResponse: func(_ context.Context, proxy *url.URL, _ *http.Request, resp *http.Response) error {
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			return &ProxyRefusedError{Proxy: proxy.Redacted(), StatusCode: resp.StatusCode, WithCredentials: proxy.User != nil}
		},
	}
	// No overall timeout: a stream may last long; the idle timer bounds
	// silence instead.
	return &Client{policy: p, hc: &http.Client{Transport: tr}, log: log}
}

// Policy is the client's policy, defaults filled in.
func (c *Client) Policy() Policy { return c.policy }

// CloseIdleConnections closes kept-alive connections (and their
// goroutines); in-flight requests are not affected.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Request is one HTTP request, built again for each attempt.
type Request struct {
	// Method defaults to POST when there is a Body and GET otherwise.
	Method string
	URL    string
	Header http.Header
	Body   []byte
}

func (r Request) build(ctx context.Context) (*http.Request, error) {
	method := r.Method
	if method == "" {
		method = http.MethodGet
		if r.Body != nil {
			method = http.MethodPost
		}
	}
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, body)
	if err != nil {
		return nil, fmt.Errorf("building the request to %s: %w", r.URL, err)
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	return req, nil
}

// Stream is a 2xx response being read.
type Stream struct {
	Header  http.Header
	url     string
	body    *idleReader
	buf     *bufio.Reader
	sse     *Reader
	started bool

	// The idle watch of an event stream: quiet fires once the reads since
	// the last Progress have waited idle in all; sinceProgress is that
	// wait so far.
	idle          time.Duration
	quiet         *time.Timer
	sinceProgress time.Duration

	answer, maxAnswer int64
}

// Next returns the next server-sent event; io.EOF when the stream ended
// cleanly between events, ErrStreamClosed (wrapped) when it ended inside
// one. The wait counts against the idle timeout until the caller reports
// Progress.
func (s *Stream) Next() (Event, error) {
	s.body.watched = true // the byte timer gives way to the progress one
	start := time.Now()
	s.quiet.Reset(s.idle - s.sinceProgress)
	ev, err := s.sse.Next()
	s.quiet.Stop()
	s.sinceProgress += time.Since(start)
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, ErrLineTooLong):
		return ev, err
	}
	return ev, transportError(s.url, err)
}

// Progress records that the server sent a part of the answer, n bytes of
// text, reasoning or tool call arguments: the idle timeout starts again.
// It returns an *AnswerTooLargeError once the answer outgrows the policy's
// MaxAnswerBytes; the caller stops reading then.
func (s *Stream) Progress(n int) error {
	s.sinceProgress = 0
	s.answer += int64(n)
	if s.answer > s.maxAnswer {
		return &AnswerTooLargeError{Limit: s.maxAnswer}
	}
	return nil
}

// Body is the raw response body, for an answer that is not an event
// stream.
func (s *Stream) Body() io.Reader { return s.buf }

// ReadBody reads a whole answer that is not an event stream (a server that
// ignored stream:true), up to the size an answer may have plus room for
// its JSON; a longer body is an *AnswerTooLargeError.
func (s *Stream) ReadBody() ([]byte, error) {
	limit := s.maxAnswer + 1<<20
	data, err := io.ReadAll(io.LimitReader(s.buf, limit+1))
	if err != nil {
		return data, transportError(s.url, err)
	}
	if int64(len(data)) > limit {
		return nil, &AnswerTooLargeError{Limit: s.maxAnswer}
	}
	return data, nil
}

// IsEventStream reports whether the response is text/event-stream.
func (s *Stream) IsEventStream() bool {
	return strings.HasPrefix(strings.ToLower(s.Header.Get("Content-Type")), "text/event-stream")
}

// IsJSON reports a whole answer instead of a stream, as servers that ignore
// stream:true send: the Content-Type says JSON, or the body starts with a
// JSON object (an event stream never does) whatever the header says.
func (s *Stream) IsJSON() bool {
	if strings.HasPrefix(strings.ToLower(s.Header.Get("Content-Type")), "application/json") {
		return true
	}
	for i := 1; i <= 512; i++ {
		b, err := s.buf.Peek(i)
		if len(b) < i || err != nil {
			return false
		}
		switch b[i-1] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

// checkAnswer refuses a 2xx body that is neither an event stream nor JSON
// (a proxy's "upstream connect error …" in text/plain), and an empty one,
// with what the server sent: read as a stream, such a body would be a cut
// stream, retried and never shown. Only the first line is looked at, as it
// arrives, so a stream's first event is not waited for past its line.
func (s *Stream) checkAnswer(url string) error {
	if s.IsEventStream() {
		return nil
	}
	var b []byte
	var err error
	for {
		b, err = s.buf.Peek(s.buf.Buffered() + 1)
		rest := bytes.TrimLeft(b, " \t\r\n")
		if err != nil || len(rest) > 0 && (bytes.IndexByte(rest, '\n') >= 0 || len(b) >= 512) {
			break
		}
	}
	switch {
	case len(bytes.TrimSpace(b)) == 0 && errors.Is(err, io.EOF):
		return &UnexpectedBodyError{URL: url, ContentType: s.Header.Get("Content-Type")}
	case len(bytes.TrimSpace(b)) == 0:
		return nil // consume sees the failure
	case s.IsJSON():
		return nil
	}
	line := bytes.TrimLeft(b, " \t\r\n")
	for _, field := range []string{"data:", "event:", "id:", "retry:", ":", "["} {
		if bytes.HasPrefix(line, []byte(field)) {
			return nil // an event stream (or JSON) under another name
		}
	}
	return &UnexpectedBodyError{URL: url, ContentType: s.Header.Get("Content-Type"), Sample: strings.TrimSpace(string(b[:min(len(b), 300)]))}
}

// Started records that output reached the user: from now on a failure is
// final, never retried, so nothing is shown twice.
func (s *Stream) Started() { s.started = true }

// Stream sends req and hands the response to consume, which reads it with
// Next or Body. A failed attempt is retried under the policy when the error
// is Retryable and consume had not called Started. It returns ctx's error
// when ctx ended, an *IdleTimeoutError when the server fell silent, and
// otherwise the last attempt's error (in a *RetriesError when there were
// several).
func (c *Client) Stream(ctx context.Context, req Request, consume func(*Stream) error) error {
	for attempt := 1; ; attempt++ {
		s, err := c.attempt(ctx, req, true, consume)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if s.started || !Retryable(err) {
			return retriesError(err, attempt, "")
		}
		if attempt > c.policy.MaxRetries {
			return retriesError(err, attempt, "")
		}
		wait := c.policy.backoff(attempt - 1)
		var se *StatusError
		if errors.As(err, &se) && se.RetryAfter > 0 {
			if se.RetryAfter > c.policy.MaxRetryAfter {
				return retriesError(err, attempt, fmt.Sprintf("the server asks to wait %s before trying again", se.RetryAfter.Round(time.Second)))
			}
			wait = se.RetryAfter
		}
		// A warning, which pixir run shows: a wait of up to MaxRetryAfter
		// with nothing said looks like a hang.
		c.log.Warn("the model request failed; trying again", "url", req.URL, "attempt", fmt.Sprintf("%d of %d", attempt, c.policy.MaxRetries+1), "wait", wait.Round(time.Millisecond), "err", err)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// Get sends one request, never retried (for checks such as listing models),
// and returns the body of a 2xx answer.
func (c *Client) Get(ctx context.Context, req Request) ([]byte, error) {
	var data []byte
	_, err := c.attempt(ctx, req, false, func(s *Stream) error {
		var err error
		data, err = io.ReadAll(io.LimitReader(s.Body(), 16<<20))
		if err != nil {
			return transportError(req.URL, err)
		}
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return data, err
}

func retriesError(err error, attempts int, reason string) error {
	if attempts == 1 && reason == "" {
		return err
	}
	return &RetriesError{Attempts: attempts, Reason: reason, Err: err}
}

// attempt makes one request. The idle timer cancels the request's own
// context, which makes the transport close the connection; a cancelled ctx
// does the same. answer says the 2xx body must be a model's answer (an
// event stream or JSON), checked before consume reads it.
func (c *Client) attempt(ctx context.Context, req Request, answer bool, consume func(*Stream) error) (*Stream, error) {
	s := &Stream{url: req.URL}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := c.policy.IdleTimeout
	timer := time.AfterFunc(idle, func() { cancel(&IdleTimeoutError{After: idle}) })
	defer timer.Stop()

	hreq, err := req.build(actx)
	if err != nil {
		return s, err
	}
	resp, err := c.hc.Do(hreq)
	timer.Stop()
	if err != nil {
		return s, failure(ctx, actx, transportError(req.URL, err))
	}
	defer resp.Body.Close()
	body := &idleReader{r: resp.Body, timer: timer, d: idle}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, err := io.ReadAll(io.LimitReader(body, 1<<20))
		if err != nil && len(data) == 0 {
			return s, failure(ctx, actx, transportError(req.URL, err))
		}
		se := &StatusError{StatusCode: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header, time.Now())}
		se.Type, se.Code, se.Message = ParseErrorBody(data)
		if v := resp.Header.Get("X-Should-Retry"); v == "true" || v == "false" {
			b := v == "true"
			se.ShouldRetry = &b
		}
		return s, se
	}
	if ct := strings.ToLower(resp.Header.Get("Content-Type")); strings.HasPrefix(ct, "text/html") {
		// A web page: the base URL leads to a site or a proxy, not the API.
		data, _ := io.ReadAll(io.LimitReader(body, 300))
		return s, &NotAPIError{URL: req.URL, ContentType: ct, Sample: strings.TrimSpace(string(data))}
	}
	s.Header, s.body = resp.Header, body
	s.buf = bufio.NewReaderSize(body, 64<<10)
	s.sse = NewReader(s.buf)
	s.idle, s.maxAnswer = idle, c.policy.MaxAnswerBytes
	s.quiet = time.AfterFunc(idle, func() {
		cancel(&IdleTimeoutError{After: idle, Streaming: true})
	})
	s.quiet.Stop()
	defer s.quiet.Stop()
	if answer {
		if err := s.checkAnswer(req.URL); err != nil {
			return s, failure(ctx, actx, err)
		}
	}
	if err := consume(s); err != nil {
		return s, failure(ctx, actx, err)
	}
	return s, nil
}

// failure says why an attempt ended: the caller's cancellation, the idle
// timer, or err itself (whatever the aborted read reported is noise then).
func failure(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var idle *IdleTimeoutError
	if errors.As(context.Cause(actx), &idle) {
		return idle
	}
	return err
}

// idleReader arms the idle timer only while a Read waits on the server, so
// a slow consumer never counts as a silent server. Once the body is read as
// an event stream (watched), the Stream's progress timer takes over: bytes
// alone, such as keep-alives, do not keep a stream alive.
type idleReader struct {
	r       io.Reader
	timer   *time.Timer
	d       time.Duration
	watched bool
}

func (i *idleReader) Read(p []byte) (int, error) {
	if !i.watched {
		i.timer.Reset(i.d)
	}
	n, err := i.r.Read(p)
	i.timer.Stop()
	return n, err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
