package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAsFailure(t *testing.T) {
	denied := &Failure{Kind: ErrPermissionDenied, Message: "outside"}
	tests := []struct {
		name string
		err  error
		want *Failure
	}{
		{"nil", nil, nil},
		{"failure", denied, denied},
		{"wrapped failure", fmt.Errorf("resolve: %w", denied), denied},
		{"cancelled", fmt.Errorf("run: %w", context.Canceled), &Failure{Kind: ErrCancelled, Message: "the call was cancelled before it finished"}},
		{"deadline", context.DeadlineExceeded, &Failure{Kind: ErrTimeout, Message: "the call ran out of time before it finished"}},
		{"other", errors.New("disk on fire"), &Failure{Kind: ErrInternal, Message: "disk on fire"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, AsFailure(tt.err))
		})
	}
	require.Same(t, denied, AsFailure(fmt.Errorf("x: %w", denied)))
}

func TestResultEnvelope(t *testing.T) {
	b, err := json.Marshal(Fail(ErrNotFound, "no file at %s; check the path", "a.go"))
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":false,"error":{"kind":"not_found","message":"no file at a.go; check the path"}}`, string(b))

	res := OK(map[string]int{"n": 1})
	res.Diffs = []Diff{{Path: "/x"}}
	b, err = json.Marshal(res)
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true,"output":{"n":1}}`, string(b))

	require.EqualError(t, &Failure{Kind: ErrConflict, Message: "two matches"}, "conflict: two matches")
}
