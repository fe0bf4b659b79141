package runtime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// storeLater collects what WithStoreAfter hands over, for the test to run
// (or never run, as a process that died would).
type storeLater struct{ stores []func() }

func (l *storeLater) option() SessionOption {
	return WithStoreAfter(func(store func()) { l.stores = append(l.stores, store) })
}

func (l *storeLater) run() {
	for _, f := range l.stores {
		f()
	}
	l.stores = nil
}

func newStoreRuntime(t *testing.T) (*Runtime, string, string) {
	t.Helper()
	home, ws := t.TempDir(), t.TempDir()
	rt := New(Config{Home: home, Provider: childProvider{}, Model: "m"})
	t.Cleanup(rt.Close)
	return rt, home, ws
}

func TestNewSessionWithStoreAfterWritesMetadataOnlyWhenTheStoreRuns(t *testing.T) {
	rt, home, ws := newStoreRuntime(t)
	var later storeLater
	s, err := rt.NewSession(ws, later.option())
	require.NoError(t, err)
	root := s.workspace.Root()
	require.FileExists(t, logPath(root, s.ID()), "the Log exists before the answer")
	require.NoFileExists(t, metaPath(root, s.ID()))
	require.FileExists(t, filepath.Join(home, "workspaces"), "the workspace is indexed before the answer")
	require.Len(t, later.stores, 1)

	later.run()
	m, err := readMeta(root, s.ID())
	require.NoError(t, err)
	require.Equal(t, s.Meta(), m)
	require.Contains(t, rt.knownWorkspaces(), root)
}

func TestStoreAfterAModeChangeKeepsTheChange(t *testing.T) {
	rt, _, ws := newStoreRuntime(t)
	var later storeLater
	s, err := rt.NewSession(ws, later.option())
	require.NoError(t, err)
	require.NoError(t, s.SetMode(ModeAsk)) // a client may change it before the store runs
	later.run()
	m, err := readMeta(s.workspace.Root(), s.ID())
	require.NoError(t, err)
	require.Equal(t, ModeAsk, m.Mode)
}

// A session closed before its put-off store ran (session/close sent at
// once after session/new's answer, whose write follows the answer; or the
// process ending cleanly) writes its metadata as it closes: it was left
// with its Log alone, on a busy machine, when the close came first.
func TestAClosedSessionWritesTheMetadataItsStorePutOff(t *testing.T) {
	rt, _, ws := newStoreRuntime(t)
	var later storeLater
	closed, err := rt.NewSession(ws, later.option())
	require.NoError(t, err)
	root := closed.workspace.Root()
	require.NoFileExists(t, metaPath(root, closed.ID()))
	require.NoError(t, rt.CloseSession(closed.ID()))
	m, err := readMeta(root, closed.ID())
	require.NoError(t, err, "closed by session/close")
	require.Equal(t, closed.ID(), m.ID)

	stopped, err := rt.NewSession(ws, later.option())
	require.NoError(t, err)
	rt.Close() // as at exit
	m, err = readMeta(root, stopped.ID())
	require.NoError(t, err, "stopped at exit")
	require.Equal(t, stopped.ID(), m.ID)

	// Late, the put-off stores write nothing: a file removed since stays
	// removed (as a delete's removal must).
	require.NoError(t, os.Remove(metaPath(root, closed.ID())))
	later.run()
	require.NoFileExists(t, metaPath(root, closed.ID()))
}

func TestStoreAfterDeleteWritesNothing(t *testing.T) {
	rt, _, ws := newStoreRuntime(t)
	var later storeLater
	s, err := rt.NewSession(ws, later.option())
	require.NoError(t, err)
	root, id := s.workspace.Root(), s.ID()
	require.NoError(t, rt.DeleteSession(id))
	later.run()
	require.NoFileExists(t, metaPath(root, id), "a deleted session's metadata is not written back")
	require.NoFileExists(t, logPath(root, id))
}

// A process that dies between the answer and the store leaves the Log
// alone: listing shows the session, and loading it gives the metadata it
// had (auto mode, the configured model) and writes it.
func TestSessionWhoseStoreNeverRanIsListedAndLoads(t *testing.T) {
	rt, home, ws := newStoreRuntime(t)
	var never storeLater
	s, err := rt.NewSession(ws, never.option())
	require.NoError(t, err)
	root, id := s.workspace.Root(), s.ID()
	// As a process that died: the store never ran, and nothing wrote in
	// its place (a clean stop writes it, see below).
	s.metaMu.Lock()
	s.storePending = false
	s.metaMu.Unlock()
	s.stop()
	require.NoFileExists(t, metaPath(root, id))

	rt2 := New(Config{Home: home, Provider: childProvider{}, Model: "m"})
	t.Cleanup(rt2.Close)
	metas, err := rt2.ListSessions(ws)
	require.NoError(t, err)
	require.Len(t, metas, 1)
	require.Equal(t, id, metas[0].ID)
	// Listed without a workspace too: the home indexed it before the reply.
	metas, err = rt2.ListSessions("")
	require.NoError(t, err)
	require.Len(t, metas, 1)
	require.Equal(t, id, metas[0].ID)

	loaded, _, err := rt2.OpenSession(id, ws, nil)
	require.NoError(t, err)
	require.Equal(t, ModeAuto, loaded.Meta().Mode)
	require.Equal(t, "m", loaded.Meta().Model)
	require.NoError(t, loaded.SetMode(ModeReadOnly))
	m, err := readMeta(root, id)
	require.NoError(t, err)
	require.Equal(t, ModeReadOnly, m.Mode)
	_, err = os.Stat(logPath(root, id))
	require.NoError(t, err)
}
