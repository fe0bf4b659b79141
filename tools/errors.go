package tools

import (
	"context"
	"errors"
	"fmt"

	"github.com/pixir-go/pixir/budget"
)

// ErrorKind classifies a failure so the model, the runtime and the Log can
// act on it without parsing messages.
type ErrorKind string

const (
	ErrInvalidArgs      ErrorKind = "invalid_args"
	ErrUnknownTool      ErrorKind = "unknown_tool"
	ErrPermissionDenied ErrorKind = "permission_denied"
	ErrNotFound         ErrorKind = "not_found"
	ErrConflict         ErrorKind = "conflict"
	ErrTimeout          ErrorKind = "timeout"
	ErrCancelled        ErrorKind = "cancelled"
	ErrDetached         ErrorKind = "detached"
	ErrProviderError    ErrorKind = "provider_error"
	ErrInternal         ErrorKind = "internal"
	// ErrBudgetExhausted: a budget or a cap is spent (tokens, cost, the
	// number of subagents), so the model call or spawn was refused.
	ErrBudgetExhausted ErrorKind = "budget_exhausted"
)

// Failure is the error half of a Result. It is also a Go error, so code
// below a tool (workspace confinement, for one) can return it and have its
// kind survive wrapping with %w.
type Failure struct {
	Kind    ErrorKind `json:"kind"`
	Message string    `json:"message"`
	Details any       `json:"details,omitempty"`
}

func (f *Failure) Error() string { return string(f.Kind) + ": " + f.Message }

// OK is a successful Result carrying output for the model.
func OK(output any) Result { return Result{OK: true, Output: output} }

// Fail is a failed Result. The message should say what was wrong and what
// to do about it: the model reads it and decides its next call from it.
func Fail(kind ErrorKind, format string, args ...any) Result {
	return Failed(&Failure{Kind: kind, Message: fmt.Sprintf(format, args...)})
}

// Failed wraps f in a failed Result.
func Failed(f *Failure) Result { return Result{Error: f} }

// AsFailure turns any error into a Failure: a *Failure anywhere in the chain
// is kept as it is, context errors become cancelled or timeout, and anything
// else is internal. It returns nil for a nil error.
func AsFailure(err error) *Failure {
	if err == nil {
		return nil
	}
	if f, ok := errors.AsType[*Failure](err); ok {
		return f
	}
	if e, ok := errors.AsType[*budget.ExhaustedError](err); ok {
		return &Failure{Kind: ErrBudgetExhausted, Message: e.Error()}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return &Failure{Kind: ErrCancelled, Message: "the call was cancelled before it finished"}
	case errors.Is(err, context.DeadlineExceeded):
		return &Failure{Kind: ErrTimeout, Message: "the call ran out of time before it finished"}
	}
	return &Failure{Kind: ErrInternal, Message: err.Error()}
}
