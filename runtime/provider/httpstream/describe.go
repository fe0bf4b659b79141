package httpstream

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Kind classifies a provider failure.
type Kind string

const (
	KindConfig      Kind = "config"            // e.g. no API key
	KindAuth        Kind = "auth"              // key missing or rejected (401, 403)
	KindModel       Kind = "unknown_model"     // 404 naming the model
	KindNotFound    Kind = "not_found"         // 404 for the endpoint: wrong base URL
	KindQuota       Kind = "quota"             // out of credit; waiting will not help
	KindRateLimit   Kind = "rate_limited"      // 429 after the retries
	KindServer      Kind = "server_error"      // 5xx after the retries
	KindRejected    Kind = "bad_request"       // 400, 422
	KindTooLarge    Kind = "request_too_large" // 413, or a 429 for a request over the token limit
	KindContext     Kind = "context_length"    // the conversation is longer than the model's context window
	KindAnswerLimit Kind = "answer_too_large"  // the answer outgrew max_answer_size
	KindUnreachable Kind = "unreachable"       // refused, no such host, connect timeout
	KindIdle        Kind = "idle_timeout"      // the server fell silent
	KindClosed      Kind = "stream_closed"     // the stream ended early
	KindStream      Kind = "stream_error"      // the server reported an error mid-stream
	KindProtocol    Kind = "protocol"          // a stream Pixir cannot read
	KindToolCall    Kind = "invalid_tool_call" // the model's tool call is malformed
	KindFiltered    Kind = "content_filter"    // the server's content filter or safety classifier stopped the answer
	KindOther       Kind = "other"
)

// Error is a provider failure as the user reads it: Message says what went
// wrong and what to do; Err is the cause, for errors.Is and errors.As.
type Error struct {
	Kind    Kind
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// ContextOverflow reports a request longer than the model's context
// window, with the window when the server named it: the runtime then
// compacts the conversation and tries again.
func (e *Error) ContextOverflow() (window int, ok bool) {
	var se *StatusError
	var me *StreamError
	switch {
	case errors.As(e.Err, &se):
		return se.ContextTooLong()
	case errors.As(e.Err, &me):
		return me.ContextTooLong()
	}
	return 0, false
}

// Subject is what the messages of Describe talk about.
type Subject struct {
	// Server is e.g. "the OpenAI-compatible server at http://localhost:11434/v1".
	Server string
	// KeyEnv names the variable holding the API key; HasKey says whether
	// one was given.
	KeyEnv string
	HasKey bool
	// BaseURLHint says how to change the address, e.g. "--base-url or
	// OPENAI_BASE_URL".
	BaseURLHint string
	// Model is the model of the request.
	Model string
}

// Describe turns an error of Client.Stream or Client.Get into an *Error
// whose message says what went wrong and what to do. Errors that already
// are an *Error are returned as they are.
func (s Subject) Describe(err error) error {
	if err == nil {
		return nil
	}
	var done *Error
	if errors.As(err, &done) {
		return err
	}
	kind, msg := s.describe(err)
	var re *RetriesError
	if errors.As(err, &re) {
		msg += " (" + re.Summary() + ")"
	}
	return &Error{Kind: kind, Message: msg, Err: err}
}

func (s Subject) describe(err error) (Kind, string) {
	var (
		se *StatusError
		ue *UnreachableError
		ie *IdleTimeoutError
		me *StreamError
		ce *ConnError
		na *NotAPIError
		al *AnswerTooLargeError
		pr *ProxyRefusedError
		ub *UnexpectedBodyError
	)
	switch {
	case errors.As(err, &se):
		return s.status(se)
	case errors.As(err, &na):
		return KindNotFound, fmt.Sprintf("%s answered with a web page (%s), not the API; the base URL leads somewhere else: check %s",
			s.Server, na.ContentType, s.BaseURLHint)
	case errors.As(err, &ub) && ub.Sample == "":
		return KindProtocol, fmt.Sprintf("%s answered with an empty body (200 OK, %s): no answer at all; a proxy or gateway on the way may have dropped it. "+
			"Send the prompt again; if it keeps happening, check %s", s.Server, ub.contentType(), s.BaseURLHint)
	case errors.As(err, &ub):
		return KindProtocol, fmt.Sprintf("%s answered with something that is not a model's answer (200 OK, %s): %q; "+
			"a proxy or gateway on the way may have sent it. Check %s, or send the prompt again if it was passing", s.Server, ub.contentType(), Truncate(ub.Sample, 200), s.BaseURLHint)
	case errors.As(err, &pr) && pr.StatusCode == http.StatusProxyAuthRequired && pr.WithCredentials:
		return KindAuth, fmt.Sprintf("the proxy %s between Pixir and %s rejected the credentials in its address (407 Proxy Authentication Required); "+
			"correct the user and password in HTTPS_PROXY (or HTTP_PROXY, ALL_PROXY), as in http://user:password@proxy:3128", pr.Proxy, s.Server)
	case errors.As(err, &pr) && pr.StatusCode == http.StatusProxyAuthRequired:
		return KindAuth, fmt.Sprintf("the proxy %s between Pixir and %s wants credentials (407 Proxy Authentication Required); "+
			"give them in the proxy's address, as in HTTPS_PROXY=http://user:password@proxy:3128", pr.Proxy, s.Server)
	case errors.As(err, &pr):
		return KindUnreachable, fmt.Sprintf("the proxy %s refused to open the connection to %s (%s); check HTTPS_PROXY (or HTTP_PROXY, ALL_PROXY), "+
			"the proxy's rules, or list the server's host in NO_PROXY to reach it without the proxy", pr.Proxy, s.Server, (&StatusError{StatusCode: pr.StatusCode}).Status())
	case errors.As(err, &ue) && ue.Proxy != "":
		return KindUnreachable, fmt.Sprintf("cannot reach %s on the way to %s: %s; is the proxy running, and are HTTPS_PROXY and HTTP_PROXY right? "+
			"(NO_PROXY lists the hosts reached without it)", ue.Proxy, s.Server, ue.Reason())
	case errors.As(err, &ue):
		return KindUnreachable, fmt.Sprintf("cannot reach %s: %s; is it running, and is the address right? Check %s",
			s.Server, ue.Reason(), s.BaseURLHint)
	case errors.As(err, &ie) && ie.Streaming:
		return KindIdle, fmt.Sprintf("%s sent no part of the answer for %s (keep-alives do not count), so Pixir gave up on the request; "+
			"the server may be stuck (idle_timeout in config.toml sets how long to wait)", s.Server, ie.After)
	case errors.As(err, &ie):
		return KindIdle, fmt.Sprintf("%s sent nothing for %s, so Pixir gave up on the request; the server may be stuck or overloaded "+
			"(idle_timeout in config.toml sets how long to wait)", s.Server, ie.After)
	case errors.As(err, &al):
		return KindAnswerLimit, fmt.Sprintf("the answer from %s grew past %s, so Pixir stopped it; what arrived is kept. "+
			"The model may be repeating itself: send the prompt again or ask for less (max_answer_size in config.toml sets the limit)",
			s.Server, FormatBytes(al.Limit))
	case errors.As(err, &me):
		return KindStream, fmt.Sprintf("%s reported an error in the middle of the answer (%s); send the prompt again", s.Server, me.Error())
	case errors.Is(err, ErrStreamClosed):
		return KindClosed, fmt.Sprintf("%s closed the connection before the answer was complete; send the prompt again", s.Server)
	case errors.As(err, &ce):
		return KindClosed, fmt.Sprintf("the connection to %s broke (%s); send the prompt again", s.Server, ce.Reason())
	case errors.Is(err, ErrLineTooLong):
		return KindProtocol, fmt.Sprintf("%s sent a stream Pixir cannot read: %v", s.Server, err)
	}
	return KindOther, fmt.Sprintf("%s: %v", s.Server, err)
}

func (s Subject) status(e *StatusError) (Kind, string) {
	detail := e.Status()
	if e.Code != "" {
		detail += " " + e.Code
	} else if e.Type != "" {
		detail += " " + e.Type
	}
	says := ""
	if m := strings.TrimSuffix(strings.TrimSpace(e.Message), "."); m != "" {
		says = ": " + m // what to do follows after "; "
	}
	switch {
	case e.StatusCode == http.StatusUnauthorized:
		if !s.HasKey {
			return KindAuth, fmt.Sprintf("%s wants an API key and none is set (%s)%s; set %s", s.Server, detail, says, s.KeyEnv)
		}
		return KindAuth, fmt.Sprintf("%s rejected the API key (%s)%s; set %s to a valid key", s.Server, detail, says, s.KeyEnv)
	case e.StatusCode == http.StatusForbidden:
		return KindAuth, fmt.Sprintf("%s refused the request (%s)%s; check that the key in %s may use the model %q",
			s.Server, detail, says, s.KeyEnv, s.Model)
	case e.StatusCode == http.StatusNotFound && mentionsModel(e):
		return KindModel, fmt.Sprintf("%s does not know the model %q (%s)%s; choose one it serves with --model, PIXIR_MODEL "+
			"or model in config.toml (pixir doctor lists them)", s.Server, s.Model, detail, says)
	case e.StatusCode == http.StatusNotFound:
		return KindNotFound, fmt.Sprintf("%s has no such endpoint (%s)%s; check %s", s.Server, detail, says, s.BaseURLHint)
	case e.StatusCode != http.StatusTooManyRequests && contextLong(e):
		return KindContext, fmt.Sprintf("%s refused the request as longer than the model's context window (%s)%s; "+
			"Pixir compacts the conversation and tries once more when compaction is on (set context_window, or [model_info] context_window, so it compacts before), "+
			"or start a new session", s.Server, detail, says)
	case e.TooLarge():
		return KindTooLarge, fmt.Sprintf("%s refused the request as too large (%s)%s; waiting will not help, a shorter request will: "+
			"start a new session, or ask for less at once (smaller files, narrower searches, shorter command output)", s.Server, detail, says)
	case e.StatusCode == http.StatusProxyAuthRequired:
		return KindAuth, fmt.Sprintf("the proxy between Pixir and %s wants credentials (%s)%s; "+
			"give them in the proxy's address, as in HTTPS_PROXY=http://user:password@proxy:3128", s.Server, detail, says)
	case e.StatusCode == http.StatusTooManyRequests && !e.Retryable():
		return KindQuota, fmt.Sprintf("%s refuses more requests for now (%s)%s; check the plan and billing of the key in %s",
			s.Server, detail, says, s.KeyEnv)
	case e.StatusCode == http.StatusTooManyRequests:
		wait := "wait a little"
		if e.RetryAfter >= time.Second {
			// A daily limit asks for hours: "a little" would mislead.
			wait = "wait " + e.RetryAfter.Round(time.Second).String() + ", as the server asks,"
		}
		return KindRateLimit, fmt.Sprintf("%s is rate limiting requests (%s)%s; %s and send the prompt again", s.Server, detail, says, wait)
	case e.StatusCode >= 500:
		return KindServer, fmt.Sprintf("%s failed (%s)%s; try again later", s.Server, detail, says)
	case e.StatusCode == http.StatusBadRequest, e.StatusCode == http.StatusUnprocessableEntity:
		return KindRejected, fmt.Sprintf("%s rejected the request (%s)%s", s.Server, detail, says)
	}
	return KindOther, fmt.Sprintf("%s answered %s%s", s.Server, detail, says)
}

// mentionsModel tells a 404 for an unknown model (OpenAI's model_not_found,
// Anthropic's "model: x", Ollama's `model "x" not found`) from one for a
// wrong path.
func mentionsModel(e *StatusError) bool {
	return e.Code == "model_not_found" || strings.Contains(strings.ToLower(e.Message), "model")
}

func contextLong(e *StatusError) bool {
	_, ok := e.ContextTooLong()
	return ok
}
