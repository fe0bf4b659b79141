package anthropic

import (
	"context"
	"fmt"
	"strings"

	"github.com/pixir-go/pixir/runtime/provider/doctor"
	"github.com/pixir-go/pixir/runtime/provider/httpstream"
)

// Check looks at the configuration and the API for `pixir doctor`: the key,
// whether GET /v1/models answers with it, and whether it lists model.
func (p *Provider) Check(ctx context.Context, model string) []doctor.Check {
	checks := []doctor.Check{{Name: "base URL", Status: doctor.OK, Detail: p.base}}
	if p.cfg.APIKey == "" {
		return append(checks,
			doctor.Check{Name: "API key", Status: doctor.Fail, Detail: p.cfg.KeyEnv + " is not set", Fix: "export " + p.cfg.KeyEnv + "=sk-ant-… (from console.anthropic.com)"},
			doctor.Check{Name: "server", Status: doctor.Warn, Detail: "not checked: the API needs the key"})
	}
	checks = append(checks, doctor.Check{Name: "API key", Status: doctor.OK, Detail: "set (" + p.cfg.KeyEnv + ")"})
	checks = append(checks, doctor.ProbeModels(ctx, doctor.ModelList{
		Client:  p.client,
		Request: httpstream.Request{URL: p.base + "/v1/models?limit=1000", Header: p.header()},
		Subject: p.subject(model),
		Match:   matchModel,
		Fix:     "choose a listed model with --model, PIXIR_MODEL or model in config.toml",
	})...)
	return append(checks, doctor.Check{Name: "context", Status: doctor.OK, Detail: fmt.Sprintf("context window %d tokens, answers up to %d tokens", p.cfg.ContextWindow, p.cfg.MaxTokens)})
}

// matchModel accepts an id and its aliases: the list names dated snapshots
// ("claude-sonnet-4-5-20250929") that the alias "claude-sonnet-4-5" and
// "-latest" names point to.
func matchModel(model, id string) bool {
	if id == model {
		return true
	}
	alias := strings.TrimSuffix(model, "-latest")
	rest, ok := strings.CutPrefix(id, alias+"-")
	return ok && len(rest) == 8 && strings.Trim(rest, "0123456789") == ""
}
