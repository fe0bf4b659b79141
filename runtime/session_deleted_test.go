package runtime

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
)

// A workspace the user deleted whole while its session was open is not
// made again when the session ends (the Log's write-back at the end,
// 7969613, brought the folder back with the Log in it).
func TestADeletedWorkspaceIsNotMadeAgainAtTheSessionsEnd(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){text("ok")}}
	ws := filepath.Join(t.TempDir(), "project")
	require.NoError(t, os.Mkdir(ws, 0o755))
	rt := New(Config{Home: t.TempDir(), Provider: p, Model: "m", Tools: tools.Builtins()})
	s, err := rt.NewSession(ws)
	require.NoError(t, err)
	_, err = s.Prompt(context.Background(), Prompt{Text: "one"}, TurnOptions{})
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(ws))
	rt.Close()
	_, err = os.Lstat(ws)
	require.ErrorIs(t, err, fs.ErrNotExist, "the deleted workspace came back")
}
