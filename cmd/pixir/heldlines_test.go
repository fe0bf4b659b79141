package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/internal/termtext"
	"github.com/pixir-go/pixir/workflows"
)

// writes records every write it is given, one entry each.
type writes struct {
	mu  sync.Mutex
	got []string
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, string(p))
	return len(p), nil
}

func (w *writes) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.got...)
}

// Held lines go out together, one write, no later than heldFor after the
// first of them, while the run goes on producing none (fake time: the
// bubble's clock moves only when every goroutine waits).
func TestHeldLinesAreWrittenTogetherWithinATenthOfASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &writes{}
		h := newHeldLines(w)
		h.Hold([]byte("a\n"))
		time.Sleep(heldFor / 2)
		h.Hold([]byte("b\n"))
		synctest.Wait()
		require.Empty(t, w.all(), "nothing is written before heldFor has passed")
		time.Sleep(heldFor/2 - time.Nanosecond)
		synctest.Wait()
		require.Empty(t, w.all())
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		require.Equal(t, []string{"a\nb\n"}, w.all(), "both lines in one write, heldFor after the first")

		// The next line arms the timer again.
		h.Hold([]byte("c\n"))
		time.Sleep(heldFor)
		synctest.Wait()
		require.Equal(t, []string{"a\nb\n", "c\n"}, w.all())
	})
}

// Anything else written to stderr goes after what is held, so stderr's
// order is the order things happened in; Flush writes at once; a burst is
// written when heldMax bytes are held.
func TestHeldLinesKeepStderrInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &writes{}
		h := newHeldLines(w)
		h.Hold([]byte("step s1 queued\n"))
		_, err := h.Write([]byte("pixir: denied: write x\n"))
		require.NoError(t, err)
		require.Equal(t, []string{"step s1 queued\n", "pixir: denied: write x\n"}, w.all())

		h.Hold([]byte("step s1 running\n"))
		h.Flush()
		require.Equal(t, "step s1 running\n", w.all()[2])

		line := []byte(strings.Repeat("x", 99) + "\n")
		for range heldMax / len(line) {
			h.Hold(line)
		}
		require.Len(t, w.all(), 3)
		h.Hold(line)
		require.Len(t, w.all(), 4, "heldMax bytes are written at once")
		require.Len(t, w.all()[3], (heldMax/len(line)+1)*len(line))

		// Nothing is left armed: the timer stopped with the last write.
		time.Sleep(2 * heldFor)
		synctest.Wait()
		require.Len(t, w.all(), 4)
	})
}

// The headless view holds its lines: none is written while a step runs
// within a tenth of a second, all of them together when it has passed,
// and pausing for a question (a wait) or finishing writes them at once.
func TestHeadlessWorkflowViewWritesItsLinesTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &writes{}
		held := newHeldLines(w)
		v := newWorkflowView(held, false, &workflows.Workflow{Name: "wf", Steps: []workflows.Step{{ID: "a"}, {ID: "b"}}})
		v.held = held
		v.start()
		v.workflowEvent(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-1"})
		v.workflowEvent(workflows.WorkflowEvent{Kind: workflows.EventFanOut, Run: "a", Items: 2, MaxItems: 5})
		synctest.Wait()
		require.Empty(t, w.all())
		time.Sleep(heldFor)
		synctest.Wait()
		got := w.all()
		require.Len(t, got, 1)
		require.Contains(t, got[0], "workflow wf-1 started: 2 steps\n")
		require.Contains(t, got[0], "step a fans out over 2 items (max 5)\n")

		v.workflowEvent(workflows.WorkflowEvent{Kind: workflows.EventFanOut, Run: "b", Items: 1, MaxItems: 5})
		resume := v.pause()
		require.Len(t, w.all(), 2, "a question waits: what happened so far is shown first")
		resume()

		v.workflowEvent(workflows.WorkflowEvent{Kind: workflows.EventWorkflowFinished, WorkflowID: "wf-1", Status: workflows.StatusCompleted})
		v.finish(nil)
		require.Len(t, w.all(), 3)
		require.Contains(t, w.all()[2], "workflow wf-1 completed in 0.0 s\n")
	})
}

// What goes to stderr beside the view is made inert as before when
// stderr was a termtext.Writer, and goes after the held lines.
func TestHoldingStderrKeepsItInert(t *testing.T) {
	var raw bytes.Buffer
	out := newRunOutput(&bytes.Buffer{}, termtext.NewWriter(&raw), false)
	held := newHeldLines(termtext.Raw(out.stderr))
	out = holdingStderr(out, held)
	held.Hold([]byte("held\n"))
	_, err := out.stderr.Write([]byte("title \x1b]0;evil\x07\n"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(raw.String(), "held\ntitle "))
	require.NotContains(t, raw.String(), "\x1b")
}
