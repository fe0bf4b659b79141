// What model calls cost: every call is priced (where the configuration
// has a price for its model) and charged to the accounts it counts against
// (its Subagent's, its workflow run's, its session's and its ancestors'),
// before which the turn checks that none is spent; soft limits warn the
// user, and the session's usage goes to whoever watches it.

package runtime

import (
	"sync"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/runtime/provider"
)

// BudgetConfig limits what model calls may spend. A zero Limit limits
// nothing.
type BudgetConfig struct {
	// Session bounds each user session, everything it starts included.
	Session budget.Limit
	// Subagent bounds each Subagent, its own children included.
	Subagent budget.Limit
	// Workflow bounds each workflow run that names no budget of its own.
	Workflow budget.Limit
	// WarnAt is the soft limit, a fraction of each budget.
	WarnAt float64
	// Currency is the unit of prices and cost limits ("USD").
	Currency string
}

func (c BudgetConfig) currency() string {
	if c.Currency == "" {
		return "USD"
	}
	return c.Currency
}

// UsageData is how full a session's context is and what the session
// spent (ephemeral usage events), after each of its model calls and each
// priced call of its Subagents.
type UsageData struct {
	// Used is the tokens of the session's last model call (its input and
	// its answer): what its context holds. Window is the model's context
	// size, 0 when unknown.
	Used   int64 `json:"used"`
	Window int   `json:"window,omitempty"`
	// Total is what the session spent, its Subagents and workflows
	// included.
	Total budget.Usage `json:"total"`
}

// modelFacts are what the runtime knows of models beyond the
// configuration: context windows learned from context-length errors.
type modelFacts struct {
	mu      sync.Mutex
	learned map[string]int
}

// learn keeps the smallest window a context-length error said, or made
// plain, for model.
func (f *modelFacts) learn(model string, window int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.learned == nil {
		f.learned = map[string]int{}
	}
	if old, ok := f.learned[model]; !ok || window < old {
		f.learned[model] = window
	}
}

func (f *modelFacts) window(model string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.learned[model]
}

// contextWindow is model's context size: configured for it, learned from
// a context-length error, or else what the provider reported (reported,
// 0 when unknown).
func (r *Runtime) contextWindow(model string, reported int) int {
	if w := r.cfg.ModelInfo[model].ContextWindow; w > 0 {
		return w
	}
	if w := r.facts.window(model); w > 0 {
		return w
	}
	return reported
}

// priced reports whether any model has a price: then every usage carries
// a cost (and counts the calls that had none).
func (r *Runtime) priced() bool {
	r.pricedOnce.Do(func() {
		for _, m := range r.cfg.ModelInfo {
			if _, ok := m.Price(); ok {
				r.hasPrices = true
			}
		}
	})
	return r.hasPrices
}

// callUsage is one model call of model as a budget counts it.
func (r *Runtime) callUsage(model string, u provider.Usage) budget.Usage {
	out := budget.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens), ModelCalls: 1}
	if !r.priced() {
		return out
	}
	out.Currency = r.cfg.Budget.currency()
	if p, ok := r.cfg.ModelInfo[model].Price(); ok {
		out.Cost = p.Of(out.InputTokens, out.OutputTokens)
	} else {
		out.Unpriced = 1
	}
	return out
}

// sessionAccount is the account of a user's session.
func (r *Runtime) sessionAccount() *budget.Account {
	return budget.NewAccount("the session", "raise session_tokens (or session_cost) in [budget] of config.toml, or start a new session",
		r.cfg.Budget.Session, r.cfg.Budget.WarnAt)
}

// subagentAccount is the account of one Subagent.
func (r *Runtime) subagentAccount(id string) *budget.Account {
	return budget.NewAccount("subagent "+id, "raise subagent_tokens (or subagent_cost) in [budget] of config.toml; meanwhile do the rest of its work yourself",
		r.cfg.Budget.Subagent, r.cfg.Budget.WarnAt)
}

// root is the user's session this session descends from (itself for a
// user's session): the one the user watches.
func (s *Session) root() *Session {
	r := s
	for r.parent != nil {
		r = r.parent
	}
	return r
}

// Usage is what the session spent, its Subagents and workflows included.
func (s *Session) Usage() budget.Usage { return s.accounts[0].Spent() }

// exhausted is nil while every account this session's model calls count
// against may spend more.
func (s *Session) exhausted() error { return s.accounts.Exhausted() }

// charge charges one model call of this session (its usage priced by
// callUsage; window its model's context size) to its accounts, warns the
// user of every soft limit it passed, and shows the user's session its
// new usage.
func (s *Session) charge(call budget.Usage, window int) {
	warnings := s.accounts.Charge(call)
	root := s.root()
	for _, w := range warnings {
		if err := root.emitBackground(EventNotice, NoticeData{Source: "budget", Severity: "warning", Title: w.Title(), Detail: w.Description()}); err != nil {
			s.rt.log.Warn("showing a budget warning", "session", root.ID(), "err", err)
		}
	}
	root.mu.Lock()
	if s == root {
		root.context, root.window = call.Tokens(), window
	}
	d := UsageData{Used: root.context, Window: root.window}
	root.mu.Unlock()
	if s != root && s.descendantObserver() != nil {
		// A client that shows the child as a session of its own sees its
		// context and spend too.
		if err := s.emitBackground(EventUsage, UsageData{Used: call.Tokens(), Window: window, Total: s.Usage()}); err != nil {
			s.rt.log.Warn("showing a subagent's usage", "session", s.ID(), "err", err)
		}
	}
	if s != root && call.Currency == "" {
		return // the root's context and cost are as they were
	}
	d.Total = root.Usage()
	if err := root.emitBackground(EventUsage, d); err != nil {
		s.rt.log.Warn("showing the session's usage", "session", root.ID(), "err", err)
	}
}
