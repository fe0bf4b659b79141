// Package anthropic is a provider for the Anthropic Messages API, streamed
// over SSE under the shared httpstream policy: text, thinking and tool_use
// blocks.
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/runtime/provider/httpstream"
)

const (
	// ProviderName is what Name returns.
	ProviderName = "anthropic"
	// DefaultBaseURL is Anthropic's API (without /v1).
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultKeyEnv is the variable the API key is read from.
	DefaultKeyEnv = "ANTHROPIC_API_KEY"
	// APIVersion is the anthropic-version header.
	APIVersion = "2023-06-01"
	// DefaultMaxTokens bounds an answer when not configured; the API needs
	// a bound, and every current model allows this one.
	DefaultMaxTokens = 8192
	// DefaultContextWindow is the context size of current Claude models.
	DefaultContextWindow = 200000
)

// Config configures a Provider.
type Config struct {
	// BaseURL is the API root; empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key; required.
	APIKey string
	// KeyEnv names where APIKey came from, for messages; empty means
	// DefaultKeyEnv.
	KeyEnv string
	// BaseURLHint says how the user sets BaseURL, for messages.
	BaseURLHint string
	// ContextWindow is reported in Usage; 0 means DefaultContextWindow.
	ContextWindow int
	// MaxTokens bounds each answer; 0 means DefaultMaxTokens.
	MaxTokens int
	Policy    httpstream.Policy
	Logger    *slog.Logger
}

// Provider streams messages from the Anthropic API.
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
		cfg.BaseURLHint = "--base-url, ANTHROPIC_BASE_URL or base_url in config.toml"
	}
	if cfg.ContextWindow <= 0 {
		cfg.ContextWindow = DefaultContextWindow
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	// Accept a base URL given with /v1, as OpenAI-style ones are.
	base := strings.TrimSuffix(strings.TrimRight(cfg.BaseURL, "/"), "/v1")
	return &Provider{cfg: cfg, base: base, client: httpstream.NewClient(cfg.Policy, cfg.Logger)}
}

// Name is "anthropic".
func (p *Provider) Name() string { return ProviderName }

// BaseURL is the API root requests go to.
func (p *Provider) BaseURL() string { return p.base }

// CloseIdleConnections releases kept-alive connections.
func (p *Provider) CloseIdleConnections() { p.client.CloseIdleConnections() }

func (p *Provider) subject(model string) httpstream.Subject {
	return httpstream.Subject{Server: "the Anthropic API at " + p.base, KeyEnv: p.cfg.KeyEnv, HasKey: p.cfg.APIKey != "",
		BaseURLHint: p.cfg.BaseURLHint, Model: model}
}

func (p *Provider) header() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("X-Api-Key", p.cfg.APIKey)
	h.Set("Anthropic-Version", APIVersion)
	return h
}

func (p *Provider) missingKey() error {
	return &httpstream.Error{Kind: httpstream.KindConfig,
		Message: fmt.Sprintf("the anthropic provider needs an API key and %s is not set; export %s=sk-ant-… (from console.anthropic.com)", p.cfg.KeyEnv, p.cfg.KeyEnv)}
}

// Generate streams one message.
func (p *Provider) Generate(ctx context.Context, req provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if sink == nil {
		sink = func(provider.Delta) {}
	}
	if p.cfg.APIKey == "" {
		return nil, p.missingKey()
	}
	if req.Model == "" {
		return nil, &httpstream.Error{Kind: httpstream.KindConfig, Message: "no model is configured for the anthropic provider; set --model, PIXIR_MODEL or model in config.toml"}
	}
	subj := p.subject(req.Model)
	body, err := json.Marshal(p.request(req))
	if err != nil {
		return nil, fmt.Errorf("encoding the messages request: %w", err)
	}
	var a *assembler
	err = p.client.Stream(ctx, httpstream.Request{URL: p.base + "/v1/messages", Header: p.header(), Body: body}, func(s *httpstream.Stream) error {
		a = newAssembler(subj) // each attempt starts afresh
		if s.IsJSON() {
			return a.readMessage(s, sink)
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
