package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sourcegraph/jsonrpc2"
)

// JSON-RPC and ACP error codes.
const (
	CodeParseError       = jsonrpc2.CodeParseError
	CodeInvalidRequest   = jsonrpc2.CodeInvalidRequest
	CodeMethodNotFound   = jsonrpc2.CodeMethodNotFound
	CodeInvalidParams    = jsonrpc2.CodeInvalidParams
	CodeInternalError    = jsonrpc2.CodeInternalError
	CodeRequestCancelled = -32800
	CodeAuthRequired     = -32000
	CodeResourceNotFound = -32002
)

// Error is a JSON-RPC error with a code. Handlers return it (possibly
// wrapped with %w) to choose the code a client sees; any other error is
// reported as an internal error.
type Error struct {
	Code    int64
	Message string
	Data    json.RawMessage
}

func (e *Error) Error() string { return e.Message }

// Errorf makes an *Error with a formatted message.
func Errorf(code int64, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// toWireError picks the code for err. A request whose context the peer
// cancelled answers -32800; a coded error keeps its code and takes the
// outermost message, so wrapping adds context without losing the code.
func toWireError(ctx context.Context, err error) *Error {
	var coded *Error
	if errors.As(err, &coded) {
		return &Error{Code: coded.Code, Message: err.Error(), Data: coded.Data}
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return &Error{Code: CodeRequestCancelled, Message: "request cancelled"}
	}
	return &Error{Code: CodeInternalError, Message: "internal error: " + err.Error()}
}
