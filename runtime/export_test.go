package runtime

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// ChildCancelledWhileQueuedThenSentInputs runs, in a real session, a child
// cancelled while queued and then sent input ("THE MESSAGE", which it
// starts with), and once that run ended, sent "AGAIN" (a later run, an
// input event), to its end: the session's workspace and id, and the
// child's id. For the tests of what reads the session's Log (runtime_test).
func ChildCancelledWhileQueuedThenSentInputs(t *testing.T) (workspace, sessionID, childID string) {
	t.Helper()
	f, queued := childCancelledWhileQueuedThenSentInput(t)
	_, err := f.b.SendInput(context.Background(), queued.ID, "AGAIN")
	require.NoError(t, err)
	out := f.wait(t, queued.ID)
	require.Equal(t, "did: AGAIN", out.Agents[0].Summary)
	return f.parent.Workspace().Root(), f.parent.ID(), queued.ID
}
