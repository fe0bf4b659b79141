package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeWorkspace confines paths to root lexically: enough to test tools,
// which only pass paths through Resolve.
type fakeWorkspace struct{ root string }

func (w fakeWorkspace) Root() string { return w.root }

func (w fakeWorkspace) Resolve(path string) (string, error) {
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.root, abs)
	}
	abs = filepath.Clean(abs)
	rel, err := filepath.Rel(w.root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("resolving %q: %w", path, &Failure{Kind: ErrPermissionDenied, Message: path + " is outside the workspace; use a path inside it"})
	}
	return abs, nil
}

// newEnv gives an Env whose workspace is a fresh temporary directory.
func newEnv(t *testing.T) (Env, string) {
	t.Helper()
	root := t.TempDir()
	return Env{SessionID: "s1", Workspace: fakeWorkspace{root: root}, Files: osFiles{}}, root
}

// osFiles is the local tools.Files of the tests: plain os calls, with the
// regular-file check the runtime's confined implementation makes.
type osFiles struct{}

func (osFiles) Open(_ context.Context, path string) (io.ReadCloser, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	switch {
	case err != nil:
	case info.IsDir():
		err = ErrIsDir
	case !info.Mode().IsRegular():
		err = ErrNotRegular
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (osFiles) WriteFile(_ context.Context, path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
func run(t *testing.T, tool Tool, env Env, args string) Result {
	t.Helper()
	return tool.Run(t.Context(), env, json.RawMessage(args))
}

func dryRun(t *testing.T, tool Tool, env Env, args string) Result {
	t.Helper()
	return tool.DryRun(t.Context(), env, json.RawMessage(args))
}

// requireFailure asserts res is a failure of kind whose message is msg.
func requireFailure(t *testing.T, res Result, kind ErrorKind, msg string) {
	t.Helper()
	require.False(t, res.OK, "result: %+v", res.Output)
	require.NotNil(t, res.Error)
	require.Equal(t, kind, res.Error.Kind, res.Error.Message)
	require.Equal(t, msg, res.Error.Message)
}

// requireOK asserts res succeeded and returns its output as T.
func requireOK[T any](t *testing.T, res Result) T {
	t.Helper()
	require.True(t, res.OK, "failure: %+v", res.Error)
	require.Nil(t, res.Error)
	out, ok := res.Output.(T)
	require.True(t, ok, "output is %T", res.Output)
	return out
}
