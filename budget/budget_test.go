package budget

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAccountWarnsOnceAndIsExhaustedAtItsLimit(t *testing.T) {
	a := NewAccount("workflow wf-1", "raise budget.tokens", Limit{Tokens: 1000}, 0.8)
	require.Nil(t, a.Charge(Usage{InputTokens: 500, OutputTokens: 100, ModelCalls: 1}))
	require.NoError(t, a.Exhausted())

	w := a.Charge(Usage{InputTokens: 200, OutputTokens: 50, ModelCalls: 1})
	require.NotNil(t, w, "850 of 1000 passes 80%")
	require.Equal(t, "Workflow wf-1 has spent 85% of its budget", w.Title())
	require.Contains(t, w.Description(), "850 tokens (700 in, 150 out) in 2 model calls of 1,000 tokens")
	require.Nil(t, a.Charge(Usage{InputTokens: 10, ModelCalls: 1}), "a warning is given once")
	require.NoError(t, a.Exhausted())

	a.Charge(Usage{InputTokens: 140, ModelCalls: 1})
	err := a.Exhausted()
	require.Error(t, err)
	require.True(t, IsExhausted(err))
	require.Contains(t, err.Error(), "the budget of workflow wf-1 is spent (1,000 tokens")
	require.Contains(t, err.Error(), "raise budget.tokens")
}

func TestCostLimits(t *testing.T) {
	p := Price{Input: 3, Output: 15}
	require.InDelta(t, 0.0045, p.Of(1000, 100), 1e-12)
	a := NewAccount("the session", "raise it", Limit{Cost: 0.01}, 0)
	a.Charge(Usage{InputTokens: 1000, OutputTokens: 100, ModelCalls: 1, Cost: p.Of(1000, 100), Currency: "USD"})
	require.NoError(t, a.Exhausted())
	w := a.Charge(Usage{InputTokens: 1000, OutputTokens: 100, ModelCalls: 1, Cost: p.Of(1000, 100), Currency: "USD"})
	require.NotNil(t, w, "0.009 of 0.01 passes the default 80%")
	a.Charge(Usage{InputTokens: 1000, ModelCalls: 1, Cost: p.Of(1000, 0), Currency: "USD"})
	require.Error(t, a.Exhausted())
	require.Equal(t, "0.0120 USD", Money(a.Spent().Cost, "USD"))
}

func TestUnlimitedAccountNeverWarnsOrRefuses(t *testing.T) {
	a := NewAccount("subagent sa-1", "", Limit{}, 0)
	require.Nil(t, a.Charge(Usage{InputTokens: 1 << 40}))
	require.NoError(t, a.Exhausted())
	var none *Account
	require.NoError(t, none.Exhausted(), "a nil account limits nothing")
}

func TestAccountsChargeEveryAccountAndReportTheFirstExhausted(t *testing.T) {
	child := NewAccount("subagent sa-1", "raise subagent_tokens", Limit{Tokens: 100}, 0.5)
	run := NewAccount("workflow wf-1", "raise budget.tokens", Limit{Tokens: 1000}, 0.5)
	session := NewAccount("the session", "raise session_tokens", Limit{}, 0)
	as := Accounts{child, run, session}
	warnings := as.Charge(Usage{InputTokens: 60, ModelCalls: 1})
	require.Len(t, warnings, 1)
	require.Equal(t, "subagent sa-1", warnings[0].Account)
	require.Equal(t, int64(60), session.Spent().Tokens())
	as.Charge(Usage{InputTokens: 60, ModelCalls: 1})
	var e *ExhaustedError
	require.ErrorAs(t, as.Exhausted(), &e)
	require.Equal(t, "subagent sa-1", e.Account)
}

func TestStartCountsEarlierSpendWithoutWarning(t *testing.T) {
	a := NewAccount("the session", "raise it", Limit{Tokens: 100}, 0.5)
	a.Start(Usage{InputTokens: 90})
	require.Nil(t, a.Charge(Usage{InputTokens: 1}), "the earlier spend passed the soft limit already")
	a.Charge(Usage{InputTokens: 9})
	require.Error(t, a.Exhausted())
}

func TestChargesFromManyGoroutinesAddUp(t *testing.T) {
	a := NewAccount("the session", "", Limit{Tokens: 1 << 40}, 0)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 100 {
				a.Charge(Usage{InputTokens: 2, OutputTokens: 1, ModelCalls: 1})
			}
		})
	}
	wg.Wait()
	require.Equal(t, Usage{InputTokens: 10000, OutputTokens: 5000, ModelCalls: 5000}, a.Spent())
}

func TestUsageAndLimitText(t *testing.T) {
	require.Equal(t, "1,234,567", Count(1234567))
	require.Equal(t, "-1,000", Count(-1000))
	require.Equal(t, "999", Count(999))
	u := Usage{InputTokens: 1000, OutputTokens: 1, ModelCalls: 1, Cost: 2.5, Currency: "EUR", Unpriced: 1}
	require.Equal(t, "1,001 tokens (1,000 in, 1 out) in 1 model call, 2.50 EUR (1 unpriced)", u.String())
	require.Equal(t, "10,000 tokens and a cost of 1.5", Limit{Tokens: 10000, Cost: 1.5}.String())
	require.Equal(t, "no limit", Limit{}.String())
	require.Equal(t, Limit{Tokens: 5, Cost: 2}, Limit{Tokens: 5}.Or(Limit{Tokens: 9, Cost: 2}))
}
