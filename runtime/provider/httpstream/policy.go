package httpstream

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy is the one retry, timeout and cancel policy of every provider.
type Policy struct {
	// ConnectTimeout bounds making the connection (dial and TLS handshake).
	ConnectTimeout time.Duration
	// IdleTimeout is how long the server may send nothing of the answer:
	// before the response headers, and between two parts of a stream
	// (keep-alives, pings and empty chunks are not parts: a server that
	// sends only those for IdleTimeout is given up on too). Time the caller
	// spends between reads does not count.
	IdleTimeout time.Duration
	// MaxAnswerBytes caps one answer: its text, reasoning and tool call
	// arguments together. A server that streams past it (a model stuck in
	// a loop) is stopped with an *AnswerTooLargeError; what was streamed
	// stays with the caller.
	MaxAnswerBytes int64
	// MaxRetries is how many times a failed request is tried again (0: never).
	// Only failures before any output was streamed are retried: rate limits
	// (429), timeouts (408), server faults (5xx), broken connections.
	MaxRetries int
	// MinBackoff is the first wait between attempts; it doubles with each
	// retry, up to MaxBackoff, and is jittered.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps what the server may ask to wait with Retry-After; a
	// server asking for longer gets no retry, so the user hears at once.
	MaxRetryAfter time.Duration
}

// DefaultPolicy is what providers use unless configured otherwise.
func DefaultPolicy() Policy {
	return Policy{
		ConnectTimeout: 10 * time.Second,
		// Long enough for a local server loading a model before its first
		// byte, or a reasoning model thinking in silence.
		IdleTimeout:   2 * time.Minute,
		MaxRetries:    3,
		MinBackoff:    500 * time.Millisecond,
		MaxBackoff:    8 * time.Second,
		MaxRetryAfter: time.Minute,
		// No model writes this much in one answer (128k output tokens are
		// about 0.5 MiB); a whole file written through a tool call fits.
		MaxAnswerBytes: DefaultMaxAnswerBytes,
	}
}

// DefaultMaxAnswerBytes is the default of Policy.MaxAnswerBytes.
const DefaultMaxAnswerBytes = 8 << 20

// normalized fills zero durations with the defaults.
func (p Policy) normalized() Policy {
	d := DefaultPolicy()
	if p.ConnectTimeout <= 0 {
		p.ConnectTimeout = d.ConnectTimeout
	}
	if p.IdleTimeout <= 0 {
		p.IdleTimeout = d.IdleTimeout
	}
	if p.MaxRetries < 0 {
		p.MaxRetries = 0
	}
	if p.MinBackoff <= 0 {
		p.MinBackoff = d.MinBackoff
	}
	if p.MaxBackoff < p.MinBackoff {
		p.MaxBackoff = max(p.MinBackoff, min(d.MaxBackoff, 16*p.MinBackoff))
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = d.MaxRetryAfter
	}
	if p.MaxAnswerBytes <= 0 {
		p.MaxAnswerBytes = d.MaxAnswerBytes
	}
	return p
}

// backoff is the wait before retry number n (0-based): exponential, capped,
// with "equal jitter" (half fixed, half random) so that clients that failed
// together do not retry together.
func (p Policy) backoff(n int) time.Duration {
	d := p.MinBackoff
	for i := 0; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.MaxBackoff)
	half := d / 2
	return half + rand.N(half+1)
}

// parseRetryAfter reads retry-after-ms (OpenAI) or Retry-After in seconds
// or as an HTTP date; zero when absent or unreadable.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
