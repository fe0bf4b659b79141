package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider/scripted"
	"github.com/pixir-go/pixir/tools"
)

// providerFlags are the flags that choose and configure the model.
type providerFlags struct {
	provider, model, script string
	maxTurnRequests         int
}

func (p *providerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.provider, "provider", "", "model provider: scripted (default; also PIXIR_PROVIDER or config.toml)")
	fs.StringVar(&p.model, "model", "", "model name (also PIXIR_MODEL or config.toml)")
	fs.StringVar(&p.script, "script", "", "script file for the scripted provider (also PIXIR_SCRIPT or config.toml [scripted] script)")
	fs.IntVar(&p.maxTurnRequests, "max-turn-requests", 0, fmt.Sprintf("model calls allowed in one turn (default %d)", runtime.DefaultMaxTurnRequests))
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

// newRuntime resolves settings (flags over environment over config.toml
// over defaults) and builds the Runtime.
func newRuntime(pf providerFlags, logger *slog.Logger) (*runtime.Runtime, error) {
	home, err := runtime.HomeDir()
	if err != nil {
		return nil, err
	}
	settings, err := runtime.LoadSettings(home)
	if err != nil {
		return nil, err
	}
	cfg := runtime.Config{
		Home:            home,
		Models:          settings.Models,
		MaxTurnRequests: settings.MaxTurnRequests,
		Tools:           tools.Builtins(),
		Logger:          logger,
	}
	if pf.maxTurnRequests > 0 {
		cfg.MaxTurnRequests = pf.maxTurnRequests
	}
	name := firstOf(pf.provider, os.Getenv("PIXIR_PROVIDER"), settings.Provider, scripted.ProviderName)
	switch name {
	case scripted.ProviderName:
		script := scripted.Default()
		if path := firstOf(pf.script, os.Getenv("PIXIR_SCRIPT"), settings.Scripted.Script); path != "" {
			if script, err = scripted.Load(path); err != nil {
				return nil, err
			}
		}
		cfg.Provider = scripted.New(script)
		cfg.Model = firstOf(pf.model, os.Getenv("PIXIR_MODEL"), settings.Model, "scripted")
	default:
		return nil, fmt.Errorf("unknown provider %q: available providers are: %s", name, scripted.ProviderName)
	}
	return runtime.New(cfg), nil
}
