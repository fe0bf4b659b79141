// Package openai is a provider for servers that speak the OpenAI Chat
// Completions API: OpenAI itself, and local servers such as Ollama,
// llama.cpp, vLLM and LM Studio. It streams text, reasoning and tool calls
// over SSE, under the shared httpstream policy.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/runtime/provider/httpstream"
)

const (
	// ProviderName is what Name returns.
	ProviderName = "openai"
	// DefaultBaseURL is OpenAI's API.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultKeyEnv is the variable the API key is read from.
	DefaultKeyEnv = "OPENAI_API_KEY"
)

// Config configures a Provider.
type Config struct {
	// BaseURL is the API root, ending in /v1 for most servers; empty means
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends no Authorization header
	// (local servers need none).
	APIKey string
	// KeyEnv names where APIKey came from, for messages; empty means
	// DefaultKeyEnv.
	KeyEnv string
	// BaseURLHint says how the user sets BaseURL, for messages.
	BaseURLHint string
	// ContextWindow is reported in Usage (0: unknown, and editors are not
	// told how full the context is).
	ContextWindow int
	// MaxTokens bounds each answer (sent as max_tokens); 0 leaves it to the
	// server.
	MaxTokens int
	Policy    httpstream.Policy
	// Logger receives a line for each retry.
	Logger *slog.Logger
}

// Provider streams chat completions from an OpenAI-compatible server.
type Provider struct {
	cfg    Config
	base   string
	client *httpstream.Client
}

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.KeyEnv == "" {
		cfg.KeyEnv = DefaultKeyEnv
	}
	if cfg.BaseURLHint == "" {
		cfg.BaseURLHint = "--base-url, OPENAI_BASE_URL or base_url in config.toml"
	}
	return &Provider{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/"), client: httpstream.NewClient(cfg.Policy, cfg.Logger)}
}

// Name is "openai".
func (p *Provider) Name() string { return ProviderName }

// BaseURL is the API root requests go to.
func (p *Provider) BaseURL() string { return p.base }

// CloseIdleConnections releases kept-alive connections.
func (p *Provider) CloseIdleConnections() { p.client.CloseIdleConnections() }

func (p *Provider) subject(model string) httpstream.Subject {
	server := "the OpenAI-compatible server at " + p.base
	if isOpenAI(p.base) {
		server = "the OpenAI API at " + p.base
	}
	return httpstream.Subject{Server: server, KeyEnv: p.cfg.KeyEnv, HasKey: p.cfg.APIKey != "", BaseURLHint: p.cfg.BaseURLHint, Model: model}
}

// NeedsKey reports whether the server at base refuses requests without an
// API key: OpenAI's own API does; local servers usually do not.
func NeedsKey(base string) bool { return isOpenAI(base) }

func isOpenAI(base string) bool {
	u, err := url.Parse(base)
	return err == nil && u.Hostname() == "api.openai.com"
}

func (p *Provider) header() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	if p.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
	return h
}

// Generate streams one chat completion.
func (p *Provider) Generate(ctx context.Context, req provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if sink == nil {
		sink = func(provider.Delta) {}
	}
	subj := p.subject(req.Model)
	if req.Model == "" {
		return nil, &httpstream.Error{Kind: httpstream.KindConfig, Message: "no model is configured for the openai provider; set --model, PIXIR_MODEL or model in config.toml"}
	}
	if p.cfg.APIKey == "" && isOpenAI(p.base) {
		// Said here, not by a 401 from a round trip.
		return nil, &httpstream.Error{Kind: httpstream.KindConfig,
			Message: fmt.Sprintf("the OpenAI API needs an API key and %s is not set; export %s=sk-…, or point --base-url at a server that needs none", p.cfg.KeyEnv, p.cfg.KeyEnv)}
	}
	body, err := json.Marshal(p.request(req))
	if err != nil {
		return nil, fmt.Errorf("encoding the chat request: %w", err)
	}
	var a *assembler
	err = p.client.Stream(ctx, httpstream.Request{URL: p.base + "/chat/completions", Header: p.header(), Body: body}, func(s *httpstream.Stream) error {
		a = newAssembler(subj) // each attempt starts afresh
		if s.IsJSON() {
			return a.readCompletion(s, sink)
		}
		return a.readStream(s, sink)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, subj.Describe(err)
	}
	resp, err := a.response()
	if resp != nil && resp.Usage != nil {
		resp.Usage.ContextWindow = p.cfg.ContextWindow
	}
	return resp, err
}

var errNoName = errors.New("a tool call has no name")

var errNoChoices = errors.New("the answer held no choice")

var errFiltered = errors.New("the answer was stopped by the content filter")
