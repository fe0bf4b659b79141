package runtime

import (
	"sync"
	"time"
)

// progressThrottle passes on at most one activity per interval, and the
// last one offered inside an interval at its end: a child that writes a
// file and then runs a long check must not be shown "Write x" for the
// whole check because "go test" came 100 ms after it.
type progressThrottle struct {
	every time.Duration
	emit  func(activity string)

	mu       sync.Mutex
	reported time.Time
	pending  string      // offered inside the interval, not yet passed on
	timer    *time.Timer // passes pending on at the interval's end
	stopped  bool
}

// offer passes activity on now, or at the end of the current interval
// if none newer is offered by then.
func (p *progressThrottle) offer(activity string) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	wait := p.every - time.Since(p.reported)
	if wait > 0 {
		p.pending = activity
		if p.timer == nil {
			p.timer = time.AfterFunc(wait, p.flush)
		}
		p.mu.Unlock()
		return
	}
	p.reported, p.pending = time.Now(), ""
	p.mu.Unlock()
	p.emit(activity)
}

// flush passes on the activity offered during the interval just ended.
// It emits holding the lock, so that stop, which takes it, returns only
// after it: no progress comes after the child's end.
func (p *progressThrottle) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = nil
	if p.stopped || p.pending == "" {
		return
	}
	activity := p.pending
	p.reported, p.pending = time.Now(), ""
	p.emit(activity)
}

// stop drops what is pending and passes nothing on after it returns:
// the child ended, and its end says more than its last activity.
func (p *progressThrottle) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped, p.pending = true, ""
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}
