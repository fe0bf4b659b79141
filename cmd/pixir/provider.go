package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/inspect"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/runtime/provider/anthropic"
	"github.com/pixir-go/pixir/runtime/provider/httpstream"
	"github.com/pixir-go/pixir/runtime/provider/openai"
	"github.com/pixir-go/pixir/runtime/provider/scripted"
	"github.com/pixir-go/pixir/sandbox"
	"github.com/pixir-go/pixir/tools"
)

// providerNames lists the providers, the default first.
var providerNames = []string{scripted.ProviderName, openai.ProviderName, anthropic.ProviderName}

// defaultAnthropicModel is the model of the anthropic provider when none is
// configured. The openai provider has no default: servers differ too much.
const defaultAnthropicModel = "claude-sonnet-4-5"

// providerFlags are the flags that choose and configure the model.
type providerFlags struct {
	provider, profile, model, baseURL, script string
	maxTurnRequests                           int
	limits                                    runtime.SubagentLimits
}

func (p *providerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.provider, "provider", "", "model provider: scripted (default), openai or anthropic (also PIXIR_PROVIDER or config.toml)")
	fs.StringVar(&p.profile, "profile", "", "a [profiles.NAME] table of config.toml (also PIXIR_PROFILE or profile in config.toml)")
	fs.StringVar(&p.model, "model", "", "model name (also PIXIR_MODEL or config.toml)")
	fs.StringVar(&p.baseURL, "base-url", "", "API root of the openai or anthropic provider, e.g. http://localhost:11434/v1 (also OPENAI_BASE_URL, ANTHROPIC_BASE_URL or base_url in config.toml)")
	fs.StringVar(&p.script, "script", "", "script file for the scripted provider (also PIXIR_SCRIPT or config.toml [scripted] script)")
	fs.IntVar(&p.maxTurnRequests, "max-turn-requests", 0, fmt.Sprintf("model calls allowed in one turn (default %d)", runtime.DefaultMaxTurnRequests))
	fs.IntVar(&p.limits.MaxThreads, "max-threads", 0, fmt.Sprintf("subagents running at once in each session (default %d; also [agents] max_threads)", runtime.DefaultMaxThreads))
	fs.IntVar(&p.limits.MaxDepth, "max-depth", 0, fmt.Sprintf("how deep subagents may spawn subagents (default %d; also [agents] max_depth)", runtime.DefaultMaxDepth))
	fs.IntVar(&p.limits.TimeoutMS, "subagent-timeout-ms", 0, fmt.Sprintf("a subagent's time limit (default %d; also [agents] timeout_ms)", runtime.DefaultSubagentTimeout.Milliseconds()))
}

// repeat is the flags that chose the model as given, to repeat in the
// commands a run prints ("" when none was given).
func (p *providerFlags) repeat() string {
	var b strings.Builder
	for _, f := range []struct{ name, value string }{
		{"provider", p.provider}, {"profile", p.profile}, {"model", p.model}, {"base-url", p.baseURL}, {"script", p.script},
	} {
		if f.value != "" {
			b.WriteString(" --" + f.name + " " + shellQuote(f.value))
		}
	}
	return b.String()
}

// subagentLimits lays the flags over config.toml's [agents] table.
func (p *providerFlags) subagentLimits(fromFile runtime.SubagentLimits) runtime.SubagentLimits {
	l := fromFile
	if p.limits.MaxThreads > 0 {
		l.MaxThreads = p.limits.MaxThreads
	}
	if p.limits.MaxDepth > 0 {
		l.MaxDepth = p.limits.MaxDepth
	}
	if p.limits.TimeoutMS > 0 {
		l.TimeoutMS = p.limits.TimeoutMS
	}
	return l
}

// firstOf returns the first non-empty value: flag, environment, config.
func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// providerChoice is the provider and its settings once flags, environment,
// profile and config.toml are resolved, in that order of precedence.
type providerChoice struct {
	Name, Profile, Model string
	// Settings are the merged provider settings; BaseURL and Script are
	// resolved in them.
	Settings runtime.ProviderSettings
	// KeyEnv names the variable of the API key; APIKey is its value.
	KeyEnv, APIKey string
}

// resolveProvider applies flag > environment > profile > top-level
// config.toml > default.
func resolveProvider(pf providerFlags, settings runtime.Settings, getenv func(string) string) (providerChoice, error) {
	ps, profile, err := settings.WithProfile(firstOf(pf.profile, getenv("PIXIR_PROFILE")))
	if err != nil {
		return providerChoice{}, err
	}
	name := firstOf(pf.provider, getenv("PIXIR_PROVIDER"), ps.Provider, scripted.ProviderName)
	// The file's model, models, base_url, api_key_env and context_window
	// belong to the file's provider: when a flag or PIXIR_PROVIDER picks
	// another one, they are left out (they would send its requests, and a
	// key, to the wrong server).
	ps = ps.For(name)
	c := providerChoice{Name: name, Profile: profile, Settings: ps}
	c.Model = firstOf(pf.model, getenv("PIXIR_MODEL"), ps.Model)
	switch c.Name {
	case scripted.ProviderName:
		c.Model = firstOf(c.Model, "scripted")
		c.Settings.Scripted.Script = firstOf(pf.script, getenv("PIXIR_SCRIPT"), ps.Scripted.Script)
		c.Settings.BaseURL = ""
	case openai.ProviderName:
		c.Settings.BaseURL = firstOf(pf.baseURL, getenv("OPENAI_BASE_URL"), ps.BaseURL, openai.DefaultBaseURL)
		c.KeyEnv = firstOf(ps.APIKeyEnv, openai.DefaultKeyEnv)
	case anthropic.ProviderName:
		c.Model = firstOf(c.Model, defaultAnthropicModel)
		c.Settings.BaseURL = firstOf(pf.baseURL, getenv("ANTHROPIC_BASE_URL"), ps.BaseURL, anthropic.DefaultBaseURL)
		c.KeyEnv = firstOf(ps.APIKeyEnv, anthropic.DefaultKeyEnv)
	default:
		return providerChoice{}, fmt.Errorf("unknown provider %q: available providers are: %s", c.Name, strings.Join(providerNames, ", "))
	}
	if c.KeyEnv != "" {
		c.APIKey = strings.TrimSpace(getenv(c.KeyEnv))
	}
	if c.Settings.BaseURL != "" {
		if u, err := url.Parse(c.Settings.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return providerChoice{}, fmt.Errorf("the base URL %q of the %s provider is not an http(s) URL; write it whole, e.g. http://localhost:11434/v1", c.Settings.BaseURL, c.Name)
		}
	}
	return c, nil
}

// use is what a session's metadata records of the choice, for pixir
// resume to choose it again (resumeFlags). A script's path is made whole:
// a resume may be run from another folder.
func (c providerChoice) use() runtime.ProviderUse {
	u := runtime.ProviderUse{Name: c.Name, Profile: c.Profile, BaseURL: c.Settings.BaseURL, Script: c.Settings.Scripted.Script}
	if u.Script != "" {
		if abs, err := filepath.Abs(u.Script); err == nil {
			u.Script = abs
		}
	}
	return u
}

// resumeFlags are the provider flags of pixir resume of session id in
// dir. With neither --provider nor --profile given, the session goes on
// with the provider, profile, model, base URL and script it last ran
// with, as its metadata records them, not with what the environment and
// config.toml choose now (the offline scripted model when nothing is
// set); --model, --base-url or --script alone change that setting only.
// kept describes what was taken from the session ("" when nothing was:
// flags chose, or the session records no provider).
func resumeFlags(pf providerFlags, dir, id string) (flags providerFlags, kept string) {
	if pf.provider != "" || pf.profile != "" {
		return pf, ""
	}
	found, err := inspect.Locate(dir, id)
	if err != nil || found.Child {
		return pf, "" // openSession says what is wrong
	}
	meta, err := runtime.ReadMeta(found.Workspace, found.ID)
	if err != nil || meta.Provider == nil || meta.Provider.Name == "" {
		return pf, "" // an older session's metadata, or none: as before
	}
	u := meta.Provider
	pf.provider, pf.profile = u.Name, u.Profile
	pf.model = firstOf(pf.model, meta.Model)
	pf.baseURL = firstOf(pf.baseURL, u.BaseURL)
	pf.script = firstOf(pf.script, u.Script)
	kept = "the " + u.Name + " provider"
	if pf.model != "" {
		kept += ", model " + pf.model
	}
	if pf.baseURL != "" {
		kept += ", at " + pf.baseURL
	}
	if pf.profile != "" {
		kept += ", profile " + pf.profile
	}
	if pf.script != "" {
		kept += ", script " + pf.script
	}
	return pf, kept
}

// keptFailed says that what a resumed session last ran with cannot be
// had now, and how to choose another, rather than run it on a different
// model than it had.
func keptFailed(id, kept string, err error) error {
	if kept == "" || err == nil {
		return err
	}
	return fmt.Errorf("session %s last ran with %s, which cannot be used now: %w; to go on with another model, choose it: --provider (with --model, --base-url) or --profile", id, kept, err)
}

// policy is the request policy the settings ask for.
func (c providerChoice) policy() httpstream.Policy {
	p := httpstream.DefaultPolicy()
	if d := c.Settings.ConnectTimeout.Duration; d > 0 {
		p.ConnectTimeout = d
	}
	if d := c.Settings.IdleTimeout.Duration; d > 0 {
		p.IdleTimeout = d
	}
	if c.Settings.MaxRetries != nil {
		p.MaxRetries = *c.Settings.MaxRetries
	}
	if n := c.Settings.MaxAnswerSize.Bytes; n > 0 {
		p.MaxAnswerBytes = n
	}
	return p
}

// modelProblem is what makes pixir run and pixir acp refuse a provider
// setup before starting (exit 64); pixir doctor fails on the same.
func (c providerChoice) modelProblem() error {
	if c.Name == openai.ProviderName && c.Model == "" {
		return fmt.Errorf("the openai provider needs a model: set --model, PIXIR_MODEL or model in config.toml (pixir doctor lists the models the server at %s serves)", c.Settings.BaseURL)
	}
	return nil
}

// keyProblem says which variable to set when the provider's server needs
// an API key and none is set: Anthropic's API, and OpenAI's own.
func (c providerChoice) keyProblem() error {
	switch {
	case c.APIKey != "":
	case c.Name == anthropic.ProviderName:
		return fmt.Errorf("the anthropic provider needs an API key and %s is not set; export %s=sk-ant-… (from console.anthropic.com)", c.KeyEnv, c.KeyEnv)
	case c.Name == openai.ProviderName && openai.NeedsKey(c.Settings.BaseURL):
		return fmt.Errorf("the OpenAI API at %s needs an API key and %s is not set; export %s=sk-…, or point --base-url at a server that needs none (a local Ollama: http://localhost:11434/v1)", c.Settings.BaseURL, c.KeyEnv, c.KeyEnv)
	}
	return nil
}

// requireKey refuses a headless run whose provider needs a key it does
// not have, before a session is made: no Log of a run that could not
// start.
func requireKey(pf providerFlags) error {
	if _, _, c, err := loadChoice(pf); err == nil {
		return c.keyProblem()
	}
	return nil // newRuntime says what is wrong with the configuration
}

// buildProvider makes the chosen provider.
func buildProvider(c providerChoice, logger *slog.Logger) (provider.Provider, error) {
	hint := "--base-url, " + map[string]string{openai.ProviderName: "OPENAI_BASE_URL", anthropic.ProviderName: "ANTHROPIC_BASE_URL"}[c.Name] + " or base_url in config.toml"
	switch c.Name {
	case openai.ProviderName:
		return openai.New(openai.Config{
			BaseURL: c.Settings.BaseURL, APIKey: c.APIKey, KeyEnv: c.KeyEnv, BaseURLHint: hint,
			ContextWindow: c.Settings.ContextWindow, MaxTokens: c.Settings.MaxTokens,
			Policy: c.policy(), Logger: logger,
		}), nil
	case anthropic.ProviderName:
		return anthropic.New(anthropic.Config{
			BaseURL: c.Settings.BaseURL, APIKey: c.APIKey, KeyEnv: c.KeyEnv, BaseURLHint: hint,
			ContextWindow: c.Settings.ContextWindow, MaxTokens: c.Settings.MaxTokens,
			Policy: c.policy(), Logger: logger,
		}), nil
	}
	path := c.Settings.Scripted.Script
	if path == "" {
		return scripted.NewDefault(), nil
	}
	script, err := scripted.Load(path) // a broken script is refused at start
	if err != nil {
		return nil, err
	}
	return scripted.New(script), nil
}

// loadChoice reads config.toml and resolves the provider. With no home
// folder (no $PIXIR_HOME, no $HOME) home is "" and nothing of it is read,
// as pixir agents and workflows go on without one: noHome says so.
func loadChoice(pf providerFlags) (string, runtime.Settings, providerChoice, error) {
	var settings runtime.Settings
	home, err := runtime.HomeDir()
	if err != nil {
		home = ""
	} else if settings, err = runtime.LoadSettings(home); err != nil {
		return home, settings, providerChoice{}, err
	}
	c, err := resolveProvider(pf, settings, os.Getenv)
	return home, settings, c, err
}

// noHome says what a command does without a home folder, or "" when
// there is one.
func noHome() string {
	if _, err := runtime.HomeDir(); err != nil {
		return err.Error() + "; going on: config.toml and the user's AGENTS.md are not read, confined commands get no Go build cache of Pixir's, and sessions are not indexed for pixir sessions without --cwd"
	}
	return ""
}

// newRuntime resolves settings (flags over environment over profile over
// config.toml over defaults) and builds the Runtime.
func newRuntime(pf providerFlags, logger *slog.Logger) (*runtime.Runtime, error) {
	home, settings, c, err := loadChoice(pf)
	if err != nil {
		return nil, err
	}
	if home == "" {
		logger.Warn(noHome())
	}
	if err := c.modelProblem(); err != nil {
		return nil, err
	}
	if err := c.keyProblem(); err != nil {
		// Not fatal for pixir acp: the editor shows the provider's error
		// in the chat, where the user looks, at the first prompt. pixir
		// run checks it before making a session (requireKey).
		logger.Warn(err.Error(), "env", c.KeyEnv)
	}
	provider, err := buildProvider(c, logger)
	if err != nil {
		return nil, err
	}
	promptOptions, err := settings.Prompt.Options(home)
	if err != nil {
		return nil, err
	}
	mcpConfig, err := settings.MCPConfig(os.Getenv)
	if err != nil {
		// The other servers still start; this one's missing secret is
		// the user's to set.
		logger.Warn("MCP servers of config.toml left out", "err", err)
	}
	cfg := runtime.Config{
		Home:            home,
		Provider:        provider,
		Model:           c.Model,
		ProviderUse:     c.use(),
		Models:          c.Settings.Models,
		ReasoningEffort: c.Settings.ReasoningEffort,
		MaxTurnRequests: settings.MaxTurnRequests,
		Prompt:          promptOptions,
		Tools:           tools.Builtins(),
		Workflows:       true,
		Logger:          logger,
		Subagents:       subagentConfig(pf.subagentLimits(settings.Agents), logger),
		// The provider's key never reaches a command, whatever its name;
		// confined commands build Go in a cache of Pixir's, not the user's.
		Sandbox:    sandbox.New(settings.Sandbox, c.KeyEnv).WithGoCache(goCache(home)),
		MCP:        mcpConfig,
		Version:    version,
		Budget:     settings.Budget.Config(),
		ModelInfo:  settings.ModelInfo,
		Compaction: settings.Compaction.Config(),
	}
	if pf.maxTurnRequests > 0 {
		cfg.MaxTurnRequests = pf.maxTurnRequests
	}
	cfg.ContextWindow = c.Settings.ContextWindow
	if cfg.ContextWindow == 0 && c.Name == anthropic.ProviderName {
		cfg.ContextWindow = anthropic.DefaultContextWindow // what Anthropic's current models take
	}
	return runtime.New(cfg), nil
}

// goCache is the folder of Pixir's Go build caches in home, or "" (the
// user's own cache) without a home folder.
func goCache(home string) string {
	if home == "" {
		return ""
	}
	return filepath.Join(home, "cache", "go-build")
}
