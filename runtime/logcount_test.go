package runtime

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTheMetadataSaysHowManyTurnsTheLogHeldAtWhatSize: pixir sessions read
// every Log whole to count its turns (3,001 Logs of 4 MB: 97–137 s, qa32s).
// The metadata saved at each turn's end keeps the count and the Log's size
// it is true of, so a list reads only what was appended since; a session
// opened again counts on from its Log.
func TestTheMetadataSaysHowManyTurnsTheLogHeldAtWhatSize(t *testing.T) {
	s := newTestSession(t, &fakeProvider{})
	for _, text := range []string{"one", "two"} {
		_, err := s.Prompt(context.Background(), Prompt{Text: text}, TurnOptions{})
		require.NoError(t, err)
	}
	saved, err := readMeta(s.workspace.Root(), s.ID())
	require.NoError(t, err)
	info, err := os.Stat(s.log.Path())
	require.NoError(t, err)
	require.Equal(t, &LogCount{Bytes: info.Size(), UserMessages: 2}, saved.Count)

	// Opened again (pixir resume), the Log's turns are counted as it is read.
	log, _, err := OpenLog(s.log.Path()+".copy", nil)
	require.NoError(t, err)
	require.NoError(t, log.Close())
	b, err := os.ReadFile(s.log.Path())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.log.Path()+".copy", b, 0o644))
	log, _, err = OpenLog(s.log.Path()+".copy", nil)
	require.NoError(t, err)
	defer log.Close()
	require.Equal(t, LogCount{Bytes: info.Size(), UserMessages: 2}, log.Count())
	require.NoError(t, log.Append(&Event{Type: EventUserMessage, Data: []byte(`{"text":"three"}`)}))
	require.Equal(t, 3, log.Count().UserMessages)
}

// A fork's Log is written anew (usage events dropped, renumbered, a
// notice added), so the source's count, kept with the source's byte size,
// is not carried into the fork's metadata: a list would count the fork's
// turns from an offset that means nothing in its Log (review33c #4).
func TestAForkDoesNotTakeItsSourcesCount(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	rt := New(Config{Home: home, Provider: &fakeProvider{}, Model: "m"})
	defer rt.Close()
	src, err := rt.NewSession(ws)
	require.NoError(t, err)
	for _, text := range []string{"one", "two"} {
		_, err := src.Prompt(context.Background(), Prompt{Text: text}, TurnOptions{})
		require.NoError(t, err)
	}
	saved, err := readMeta(ws, src.ID())
	require.NoError(t, err)
	require.NotNil(t, saved.Count)

	fork, _, err := rt.ForkSession(src.ID(), ws)
	require.NoError(t, err)
	forked, err := readMeta(ws, fork.ID())
	require.NoError(t, err)
	if forked.Count != nil {
		info, err := os.Stat(fork.LogPath())
		require.NoError(t, err)
		require.Equal(t, info.Size(), forked.Count.Bytes, "a count of the fork's own Log, or none")
	}
}
