package runtime

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/pixir-go/pixir/budget"
)

// BudgetSettings are the [budget] table of config.toml: what model calls
// may spend, in tokens (input and output together) and, where prices are
// configured ([model_info]), in money. Zero (or absent) means no limit.
type BudgetSettings struct {
	// SessionTokens and SessionCost bound each user session, its
	// Subagents' and workflows' calls included.
	SessionTokens int64   `toml:"session_tokens"`
	SessionCost   float64 `toml:"session_cost"`
	// SubagentTokens and SubagentCost bound each Subagent (a workflow
	// step's child too), its own children's calls included.
	SubagentTokens int64   `toml:"subagent_tokens"`
	SubagentCost   float64 `toml:"subagent_cost"`
	// WorkflowTokens and WorkflowCost bound each workflow run that names no
	// budget of its own.
	WorkflowTokens int64   `toml:"workflow_tokens"`
	WorkflowCost   float64 `toml:"workflow_cost"`
	// WarnAt is the soft limit: the fraction of a budget at which the user
	// is warned (default 0.8).
	WarnAt float64 `toml:"warn_at"`
	// Currency names the unit of the prices and of the cost limits
	// (default "USD").
	Currency string `toml:"currency"`
}

// Config is the budget configuration of the runtime.
func (b BudgetSettings) Config() BudgetConfig {
	return BudgetConfig{
		Session:  budget.Limit{Tokens: b.SessionTokens, Cost: b.SessionCost},
		Subagent: budget.Limit{Tokens: b.SubagentTokens, Cost: b.SubagentCost},
		Workflow: budget.Limit{Tokens: b.WorkflowTokens, Cost: b.WorkflowCost},
		WarnAt:   b.WarnAt,
		Currency: b.Currency,
	}
}

// ModelInfo is what the configuration says of one model: its context
// window and its prices per million tokens.
type ModelInfo struct {
	ContextWindow int      `toml:"context_window"`
	InputPrice    *float64 `toml:"input_price"`
	OutputPrice   *float64 `toml:"output_price"`
}

// Price is the model's price, and whether it has one.
func (m ModelInfo) Price() (budget.Price, bool) {
	if m.InputPrice == nil && m.OutputPrice == nil {
		return budget.Price{}, false
	}
	var p budget.Price
	if m.InputPrice != nil {
		p.Input = *m.InputPrice
	}
	if m.OutputPrice != nil {
		p.Output = *m.OutputPrice
	}
	return p, true
}

// CompactionSettings are the [compaction] table of config.toml.
type CompactionSettings struct {
	// Enabled turns compaction off when false (default on: it acts only
	// where the model's context window is known).
	Enabled *bool `toml:"enabled"`
	// Threshold is the fraction of the context window at which the
	// conversation is compacted before the next model call (default 0.8).
	Threshold float64 `toml:"threshold"`
	// KeepRecent is the fraction of the window the most recent messages
	// may keep, word for word (default 0.3).
	KeepRecent float64 `toml:"keep_recent"`
	// Summarizer is "model" (the model summarizes the older turns; the
	// default) or "fallback" (no model call: recent turns are kept, older
	// ones reduced to a digest with their tool results cut short).
	Summarizer string `toml:"summarizer"`
}

// Config is the compaction configuration of the runtime.
func (c CompactionSettings) Config() CompactionConfig {
	return CompactionConfig{Disabled: c.Enabled != nil && !*c.Enabled, Threshold: c.Threshold, KeepRecent: c.KeepRecent, Summarizer: c.Summarizer}
}

// errNoPrice is validateCost's problem of a cost budget without a price.
var errNoPrice = errors.New("[budget] limits cost, but no model has a price: add input_price and output_price (per million tokens) under [model_info.\"MODEL\"], or limit tokens instead")

// validateCost checks [budget], [model_info] and [compaction].
func (s Settings) validateCost() []error {
	var errs []error
	b := s.Budget
	for _, kv := range []struct {
		key string
		v   int64
	}{{"session_tokens", b.SessionTokens}, {"subagent_tokens", b.SubagentTokens}, {"workflow_tokens", b.WorkflowTokens}} {
		if kv.v < 0 {
			errs = append(errs, fmt.Errorf("[budget] %s must be positive (or 0 for no limit), got %d", kv.key, kv.v))
		}
	}
	for _, kv := range []struct {
		key string
		v   float64
	}{{"session_cost", b.SessionCost}, {"subagent_cost", b.SubagentCost}, {"workflow_cost", b.WorkflowCost}} {
		if kv.v < 0 || math.IsNaN(kv.v) || math.IsInf(kv.v, 0) {
			errs = append(errs, fmt.Errorf("[budget] %s must be a positive amount (or 0 for no limit), got %g", kv.key, kv.v))
		}
	}
	if b.WarnAt != 0 && (b.WarnAt <= 0 || b.WarnAt >= 1) {
		errs = append(errs, fmt.Errorf("[budget] warn_at is the fraction of a budget at which to warn, between 0 and 1 (such as 0.8), got %g", b.WarnAt))
	}
	names := make([]string, 0, len(s.ModelInfo))
	for name := range s.ModelInfo {
		names = append(names, name)
	}
	sort.Strings(names)
	priced := false
	for _, name := range names {
		m := s.ModelInfo[name]
		if m.ContextWindow < 0 {
			errs = append(errs, fmt.Errorf("[model_info.%q] context_window must be positive, got %d", name, m.ContextWindow))
		}
		for _, kp := range []struct {
			key string
			p   *float64
		}{{"input_price", m.InputPrice}, {"output_price", m.OutputPrice}} {
			key, p := kp.key, kp.p
			if p != nil && (*p < 0 || math.IsNaN(*p) || math.IsInf(*p, 0)) {
				errs = append(errs, fmt.Errorf("[model_info.%q] %s is per million tokens and cannot be negative, got %g", name, key, *p))
			}
		}
		_, has := m.Price()
		priced = priced || has
	}
	if !priced && (b.SessionCost > 0 || b.SubagentCost > 0 || b.WorkflowCost > 0) {
		errs = append(errs, errNoPrice)
	}
	c := s.Compaction
	if c.Threshold != 0 && (c.Threshold <= 0 || c.Threshold >= 1) {
		errs = append(errs, fmt.Errorf("[compaction] threshold is the fraction of the context window at which to compact, between 0 and 1 (such as 0.8), got %g", c.Threshold))
	}
	if c.KeepRecent != 0 && (c.KeepRecent <= 0 || c.KeepRecent >= 1) {
		errs = append(errs, fmt.Errorf("[compaction] keep_recent is the fraction of the context window the recent messages keep, between 0 and 1 (such as 0.3), got %g", c.KeepRecent))
	}
	if c.Threshold != 0 && c.KeepRecent != 0 && c.KeepRecent >= c.Threshold {
		errs = append(errs, fmt.Errorf("[compaction] keep_recent (%g) must be below threshold (%g): what is kept must leave room to grow", c.KeepRecent, c.Threshold))
	}
	switch c.Summarizer {
	case "", SummarizerModel, SummarizerFallback:
	default:
		errs = append(errs, fmt.Errorf("[compaction] summarizer %q is not one of %s, %s", c.Summarizer, SummarizerModel, SummarizerFallback))
	}
	return errs
}
