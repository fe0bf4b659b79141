package runtime_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/inspect"
)

// pixir inspect counts the inputs a child ran, as the session's own Log
// has them: a child cancelled while queued and then sent input starts
// with that input (its started event carries it, and no input event
// follows), and a later send_input is an input event. It counted input
// events only: 1 here, and 0 for a child sent nothing after its start.
func TestInspectCountsTheInputsAChildRan(t *testing.T) {
	ws, sid, child := runtime.ChildCancelledWhileQueuedThenSentInputs(t)
	found, err := inspect.Locate(ws, sid)
	require.NoError(t, err)
	s, _, err := inspect.Load(found)
	require.NoError(t, err)
	var got *inspect.Subagent
	for _, sa := range s.Subagents {
		if sa.SubagentID == child {
			got = sa
		}
	}
	require.NotNil(t, got, "the child in the session's tree: %+v", s.Subagents)
	require.Equal(t, "THE TASK", got.Task)
	require.Equal(t, 2, got.Inputs, "THE MESSAGE (its first run) and AGAIN")
}
