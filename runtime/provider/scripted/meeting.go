package scripted

import (
	"context"
	"sync"
)

// meeting is the `together = N` of a reply: its calls wait until N of them
// are waiting, then all go on at once. Parallel workflow steps that answer
// from the same reply are then sure to overlap however busy the machine
// is, which a delay only makes likely. A call waiting for company that
// never comes ends with its request (a cancelled turn).
type meeting struct {
	n       int
	mu      sync.Mutex
	waiting int
	gone    chan struct{} // closed when the current group is complete
}

func newMeeting(n int) *meeting { return &meeting{n: n, gone: make(chan struct{})} }

func (m *meeting) wait(ctx context.Context) error {
	m.mu.Lock()
	m.waiting++
	gone := m.gone
	if m.waiting == m.n {
		close(m.gone)
		m.waiting, m.gone = 0, make(chan struct{})
	}
	m.mu.Unlock()
	select {
	case <-gone:
		return nil
	case <-ctx.Done():
		m.mu.Lock()
		if m.gone == gone { // still waiting: leave the group
			m.waiting--
		}
		m.mu.Unlock()
		return ctx.Err()
	}
}
