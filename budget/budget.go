// Package budget is what model calls cost and what they may cost: Usage
// (tokens, model calls, and money where a price is configured for the
// model), a Limit on it, and the Account that charges each call to a limit
// and says when it is spent. A call counts against several accounts at
// once (its Subagent's, its workflow run's, its session's): Accounts
// charges and checks them together.
//
// It is a leaf, imported by the runtime (which charges every model call),
// by workflows (a run's own account, its budget) and by tools (the usage
// the agent tools show).
package budget

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
)

// Usage is what model calls spent.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	ModelCalls   int64 `json:"model_calls"`
	// Cost is what the calls cost, in Currency, counted for the calls whose
	// model has a price in the configuration (Unpriced counts the others).
	Cost     float64 `json:"cost,omitempty"`
	Currency string  `json:"currency,omitempty"`
	Unpriced int64   `json:"unpriced_calls,omitempty"`
}

// Tokens is input and output tokens together: what a token limit counts.
func (u Usage) Tokens() int64 { return u.InputTokens + u.OutputTokens }

// IsZero reports whether nothing was spent.
func (u Usage) IsZero() bool { return u == Usage{} }

// Add returns u with o added.
func (u Usage) Add(o Usage) Usage {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.ModelCalls += o.ModelCalls
	u.Cost += o.Cost
	u.Unpriced += o.Unpriced
	if u.Currency == "" {
		u.Currency = o.Currency
	}
	return u
}

// Sub returns u without o: what was spent since o was.
func (u Usage) Sub(o Usage) Usage {
	u.InputTokens -= o.InputTokens
	u.OutputTokens -= o.OutputTokens
	u.ModelCalls -= o.ModelCalls
	u.Cost -= o.Cost
	u.Unpriced -= o.Unpriced
	return u
}

// String is the usage as a person reads it: "12,345 tokens (10,000 in,
// 2,345 out) in 3 calls, 0.0412 USD".
func (u Usage) String() string {
	calls := "calls"
	if u.ModelCalls == 1 {
		calls = "call"
	}
	s := fmt.Sprintf("%s tokens (%s in, %s out) in %d model %s", Count(u.Tokens()), Count(u.InputTokens), Count(u.OutputTokens), u.ModelCalls, calls)
	if u.Currency != "" {
		s += ", " + Money(u.Cost, u.Currency)
		if u.Unpriced > 0 {
			s += fmt.Sprintf(" (%d unpriced)", u.Unpriced)
		}
	}
	return s
}

// Count writes n with thousands separators.
func Count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Money writes an amount with enough digits to tell small sums apart.
func Money(amount float64, currency string) string {
	switch {
	case amount == 0:
		return "0 " + currency
	case math.Abs(amount) < 1:
		return fmt.Sprintf("%.4f %s", amount, currency)
	}
	return fmt.Sprintf("%.2f %s", amount, currency)
}

// Price is what a model charges, per million tokens.
type Price struct {
	Input  float64
	Output float64
}

// Of is the price of one call.
func (p Price) Of(in, out int64) float64 {
	return (float64(in)*p.Input + float64(out)*p.Output) / 1e6
}

// Limit bounds what may be spent: tokens (input and output together) and
// cost. Zero means no limit on that measure.
type Limit struct {
	Tokens int64   `json:"tokens,omitempty" jsonschema:"minimum=0" jsonschema_description:"Most input and output tokens together; 0 or absent: no token limit."`
	Cost   float64 `json:"cost,omitempty" jsonschema:"minimum=0" jsonschema_description:"Most cost, in the configured currency (it needs prices configured per model); 0 or absent: no cost limit."`
}

// IsZero reports whether the limit limits nothing.
func (l Limit) IsZero() bool { return l.Tokens <= 0 && l.Cost <= 0 }

// Or is l, or d where l limits nothing.
func (l Limit) Or(d Limit) Limit {
	if l.Tokens <= 0 {
		l.Tokens = d.Tokens
	}
	if l.Cost <= 0 {
		l.Cost = d.Cost
	}
	return l
}

// String is the limit as a person reads it.
func (l Limit) String() string {
	var parts []string
	if l.Tokens > 0 {
		parts = append(parts, Count(l.Tokens)+" tokens")
	}
	if l.Cost > 0 {
		parts = append(parts, fmt.Sprintf("a cost of %g", l.Cost))
	}
	if len(parts) == 0 {
		return "no limit"
	}
	return strings.Join(parts, " and ")
}

// fraction is how much of the limit u spent: the larger of the token and
// the cost fraction (0 when nothing is limited).
func (l Limit) fraction(u Usage) float64 {
	f := 0.0
	if l.Tokens > 0 {
		f = float64(u.Tokens()) / float64(l.Tokens)
	}
	if l.Cost > 0 {
		f = max(f, u.Cost/l.Cost)
	}
	return f
}

// DefaultWarnAt is the fraction of a limit at which an account warns
// (the soft limit) when its owner sets none.
const DefaultWarnAt = 0.8

// Account is one limit and what was spent against it. It is safe for
// concurrent use: the children of a session charge their calls to its
// account from their own goroutines.
type Account struct {
	// Name says whose budget this is, for messages: "the session", "workflow
	// wf-1a2b", "subagent sa-3c4d".
	Name string
	// Raise says how to raise the limit, for the message of an exhausted
	// account: "raise session_tokens in [budget] of config.toml".
	Raise  string
	limit  Limit
	warnAt float64

	mu     sync.Mutex
	spent  Usage
	warned bool
}

// NewAccount opens an account with limit, which warns once spent passes
// warnAt of it (DefaultWarnAt when warnAt is not in (0, 1)).
func NewAccount(name, raise string, limit Limit, warnAt float64) *Account {
	if warnAt <= 0 || warnAt >= 1 {
		warnAt = DefaultWarnAt
	}
	return &Account{Name: name, Raise: raise, limit: limit, warnAt: warnAt}
}

// Limit is the account's limit.
func (a *Account) Limit() Limit { return a.limit }

// Spent is what was charged so far.
func (a *Account) Spent() Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.spent
}

// Start records what was spent before the account was opened (a session
// reopened from its Log), without warning.
func (a *Account) Start(u Usage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.spent = a.spent.Add(u)
	a.warned = a.limit.fraction(a.spent) >= a.warnAt
}

// Charge adds a call's usage. It returns the soft-limit warning when this
// call is the one that passed it, once in the account's life.
func (a *Account) Charge(u Usage) *Warning {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.spent = a.spent.Add(u)
	if a.warned || a.limit.IsZero() || a.limit.fraction(a.spent) < a.warnAt {
		return nil
	}
	a.warned = true
	return &Warning{Account: a.Name, Limit: a.limit, Spent: a.spent, Raise: a.Raise}
}

// Exhausted is nil while the account may spend more, and an
// *ExhaustedError once spent reached its limit.
func (a *Account) Exhausted() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	l, u := a.limit, a.spent
	if (l.Tokens > 0 && u.Tokens() >= l.Tokens) || (l.Cost > 0 && u.Cost >= l.Cost) {
		return &ExhaustedError{Account: a.Name, Limit: l, Spent: u, Raise: a.Raise}
	}
	return nil
}

// Accounts are the accounts one model call counts against, the most
// specific first.
type Accounts []*Account

// Charge charges every account and returns the warnings this call set off.
func (as Accounts) Charge(u Usage) []Warning {
	var out []Warning
	for _, a := range as {
		if w := a.Charge(u); w != nil {
			out = append(out, *w)
		}
	}
	return out
}

// Exhausted is the first exhausted account's error, or nil.
func (as Accounts) Exhausted() error {
	for _, a := range as {
		if err := a.Exhausted(); err != nil {
			return err
		}
	}
	return nil
}

// Warning says an account passed its soft limit.
type Warning struct {
	Account string
	Limit   Limit
	Spent   Usage
	Raise   string
}

// Title is the warning in a few words.
func (w Warning) Title() string {
	return fmt.Sprintf("%s has spent %.0f%% of its budget", capitalize(w.Account), 100*w.Limit.fraction(w.Spent))
}

// Description says what was spent and what happens at the limit.
func (w Warning) Description() string {
	return fmt.Sprintf("%s of %s. At the limit the next model call or spawn is refused; to allow more, %s.", w.Spent, w.Limit, w.Raise)
}

// ExhaustedError is a model call or a spawn refused because an account's
// limit is spent.
type ExhaustedError struct {
	Account string
	Limit   Limit
	Spent   Usage
	Raise   string
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("the budget of %s is spent (%s, its limit is %s), so no more model calls or subagents run for it; to go on, %s",
		e.Account, e.Spent, e.Limit, e.Raise)
}

// IsExhausted reports whether err is, or wraps, an *ExhaustedError.
func IsExhausted(err error) bool {
	var e *ExhaustedError
	return errors.As(err, &e)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
