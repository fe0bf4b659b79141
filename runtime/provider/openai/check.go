package openai

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/pixir-go/pixir/runtime/provider/doctor"
	"github.com/pixir-go/pixir/runtime/provider/httpstream"
)

// Check looks at the configuration and the server for `pixir doctor`: the
// base URL, the key, whether the server answers GET /models, and whether
// it lists model.
func (p *Provider) Check(ctx context.Context, model string) []doctor.Check {
	subj := p.subject(model)
	var checks []doctor.Check
	u, err := url.Parse(p.base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return append(checks, doctor.Check{Name: "base URL", Status: doctor.Fail,
			Detail: fmt.Sprintf("%q is not an http(s) URL", p.base), Fix: "set " + p.cfg.BaseURLHint + ", e.g. http://localhost:11434/v1"})
	}
	checks = append(checks, doctor.Check{Name: "base URL", Status: doctor.OK, Detail: p.base})

	switch {
	case p.cfg.APIKey != "":
		checks = append(checks, doctor.Check{Name: "API key", Status: doctor.OK, Detail: "set (" + p.cfg.KeyEnv + ")"})
	case isOpenAI(p.base):
		return append(checks,
			doctor.Check{Name: "API key", Status: doctor.Fail, Detail: p.cfg.KeyEnv + " is not set, and the OpenAI API needs a key", Fix: "export " + p.cfg.KeyEnv + "=sk-…"},
			doctor.Check{Name: "server", Status: doctor.Warn, Detail: "not checked: the API needs the key"})
	default:
		checks = append(checks, doctor.Check{Name: "API key", Status: doctor.OK,
			Detail: "none (" + p.cfg.KeyEnv + " is not set); fine for a local server that needs none"})
	}

	fix := "choose a listed model with --model, PIXIR_MODEL or model in config.toml"
	if strings.Contains(p.base, ":11434") {
		fix += fmt.Sprintf(", or fetch it with: ollama pull %s", model)
	}
	probe := doctor.ProbeModels(ctx, doctor.ModelList{
		Client:  p.client,
		Request: httpstream.Request{URL: p.base + "/models", Header: p.header()},
		Subject: subj,
		Match:   matchModel,
		Fix:     fix,
	})
	// A server with one model (llama.cpp) serves it under any name.
	if len(probe) == 2 && probe[1].Status == doctor.Fail && strings.Contains(probe[0].Detail, " 1 model(s)") {
		probe[1].Status = doctor.Warn
		probe[1].Detail += "; a server with a single model, such as llama.cpp, may serve it under any name"
	}
	checks = append(checks, probe...)

	if p.cfg.ContextWindow > 0 {
		checks = append(checks, doctor.Check{Name: "context", Status: doctor.OK, Detail: fmt.Sprintf("context window %d tokens", p.cfg.ContextWindow)})
	} else {
		checks = append(checks, doctor.Check{Name: "context", Status: doctor.Warn,
			Detail: "context window unknown, so editors are not told how full the context is",
			Fix:    "set context_window in config.toml to the model's context size"})
	}
	return checks
}

// matchModel accepts the model itself and Ollama's default tag.
func matchModel(model, id string) bool {
	return id == model || id == model+":latest" || strings.TrimSuffix(model, ":latest") == id
}
