package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pixir-go/pixir/acp/rpc"
)

// validator is implemented by every params type: it checks what JSON
// decoding cannot (required fields, allowed values).
type validator interface{ validate() error }

// decodeParams decodes and validates request params into T. Every failure
// is -32602 with a message naming the field.
func decodeParams[T any, PT interface {
	*T
	validator
}](raw json.RawMessage) (*T, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params: params are required")
	}
	if raw[0] != '{' {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params: params must be an object")
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params: %s", describeJSONError(err))
	}
	if err := PT(v).validate(); err != nil {
		return nil, err
	}
	return v, nil
}

func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := typeErr.Field
		if field == "" {
			field = "params"
		}
		return fmt.Sprintf("%q must be %s, got %s", field, jsonTypeName(typeErr.Type.Kind().String()), typeErr.Value)
	}
	return err.Error()
}

func jsonTypeName(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32", "uint16", "uint64", "float64":
		return "a number"
	}
	return "a " + goKind
}

func missing(field string) error {
	return rpc.Errorf(rpc.CodeInvalidParams, "invalid params: missing required field %q", field)
}

func invalid(field, format string, args ...any) error {
	return rpc.Errorf(rpc.CodeInvalidParams, "invalid params: %q %s", field, fmt.Sprintf(format, args...))
}

func isAbs(p string) bool { return filepath.IsAbs(p) }

// checkCwd validates the cwd and mcpServers fields of session setup
// requests.
func checkCwd(cwd string, mcpServers []json.RawMessage, mcpRequired bool) error {
	if cwd == "" {
		return missing("cwd")
	}
	if !isAbs(cwd) {
		return invalid("cwd", "must be an absolute path, got %q", cwd)
	}
	if strings.ContainsRune(cwd, 0) {
		return invalid("cwd", "contains a NUL byte")
	}
	if mcpRequired && mcpServers == nil {
		return missing("mcpServers")
	}
	return nil
}
