package runtime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDeleteSessionRemovesItsLogMetadataAndChildrenFolders(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	v := f.spawn(t, "write new.txt") // isolated: a snapshot under .pixir/subagents/<id>/
	f.wait(t, v.ID)
	root := f.parent.workspace.Root()
	home := filepath.Join(root, StateDir, "subagents", v.ID)
	require.DirExists(t, home)
	other, err := f.rt.NewSession(root)
	require.NoError(t, err)

	id := f.parent.ID()
	require.NoError(t, f.rt.DeleteSession(id))
	require.NoFileExists(t, logPath(root, id))
	require.NoFileExists(t, metaPath(root, id))
	require.NoDirExists(t, home)
	require.FileExists(t, logPath(root, other.ID()), "another session stays")
	metas, err := f.rt.ListSessions(root)
	require.NoError(t, err)
	require.Len(t, metas, 1)
	require.Equal(t, other.ID(), metas[0].ID)

	require.ErrorIs(t, f.rt.DeleteSession(id), ErrSessionNotFound, "deleted for good")
	_, err = f.rt.Session(id)
	require.ErrorIs(t, err, ErrSessionNotFound)
}

func TestDeleteSessionRefusesARunningSession(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	v := f.spawn(t, "hang")
	f.events.await(v.ID, "started")
	require.ErrorIs(t, f.rt.DeleteSession(f.parent.ID()), ErrSessionRunning)
	require.FileExists(t, logPath(f.parent.workspace.Root(), f.parent.ID()))
}

func TestDeleteSessionOfAnotherProcessIsRefused(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	root, id := f.parent.workspace.Root(), f.parent.ID()
	require.NoError(t, f.rt.CloseSession(id))
	// Another process holds the Log (here: another runtime of this one).
	rt2 := New(Config{Home: t.TempDir(), Provider: childProvider{}, Model: "m"})
	t.Cleanup(rt2.Close)
	_, _, err := rt2.OpenSession(id, root, nil)
	require.NoError(t, err)
	require.ErrorIs(t, f.rt.DeleteSession(id), ErrSessionInUse)
	_, err = os.Stat(logPath(root, id))
	require.NoError(t, err)
}
