package main

import (
	"io"
	"sync"
	"time"

	"github.com/pixir-go/pixir/internal/termtext"
)

// heldLines is stderr while a workflow runs headless: the live view's
// lines are held and written together, in one write, instead of one
// write each (a run of thousands of steps printed four lines a step, a
// system call each, more than all its Logs cost).
//
// The view stays live for a person watching: a held line is written at
// most heldFor after it was held (the first line held arms a timer that
// writes them all), at once when heldMax bytes are held, and before
// anything else written to stderr (a warning, a question, the summary),
// so the order of what stderr shows never changes. Flush writes what is
// held before the run waits on someone (a question) and when it ends.
type heldLines struct {
	mu    sync.Mutex
	w     io.Writer
	held  []byte
	timer *time.Timer
}

const (
	// heldFor is the longest a line waits: a person sees it within a
	// tenth of a second, as a terminal's frame is redrawn.
	heldFor = 100 * time.Millisecond
	// heldMax is the most held at once: a burst is written in pieces of
	// this size.
	heldMax = 64 << 10
)

func newHeldLines(w io.Writer) *heldLines { return &heldLines{w: w} }

// Hold keeps line (whole lines, each ending in a newline) to be written
// with the others.
func (h *heldLines) Hold(line []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = append(h.held, line...)
	switch {
	case len(h.held) >= heldMax:
		h.flushLocked()
	case h.timer == nil:
		h.timer = time.AfterFunc(heldFor, h.Flush)
	}
}

// Write writes p after what is held, so stderr keeps its order.
func (h *heldLines) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushLocked()
	return h.w.Write(p)
}

// Flush writes what is held now.
func (h *heldLines) Flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushLocked()
}

func (h *heldLines) flushLocked() {
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	if len(h.held) == 0 {
		return
	}
	// A failed write loses these lines only, as the view's own writes
	// did: the run goes on.
	_, _ = h.w.Write(h.held)
	h.held = h.held[:0]
}

// holdingStderr is out with everything written to its stderr going
// through held, made inert as before when it was.
func holdingStderr(out *runOutput, held *heldLines) *runOutput {
	var stderr io.Writer = held
	if _, ok := out.stderr.(*termtext.Writer); ok {
		stderr = termtext.NewWriter(held)
	}
	return newRunOutput(out.stdout, stderr, out.json)
}
