package runtime

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestProgressThrottlePassesOnTheLastActivityOfAnInterval: an activity
// offered inside the interval is passed on at its end, the newest of
// those offered; one offered after stop never is.
func TestProgressThrottlePassesOnTheLastActivityOfAnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var shown []string
		p := &progressThrottle{every: 250 * time.Millisecond, emit: func(a string) {
			mu.Lock()
			shown = append(shown, a)
			mu.Unlock()
		}}
		seen := func() []string {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(shown)
		}
		p.offer("Write mul_test.go")
		if got := seen(); !slices.Equal(got, []string{"Write mul_test.go"}) {
			t.Fatalf("the first activity is shown at once: %q", got)
		}
		time.Sleep(100 * time.Millisecond)
		p.offer("Read mul.go")
		p.offer("Run go test ./...")
		if got := seen(); len(got) != 1 {
			t.Fatalf("inside the interval nothing more is shown yet: %q", got)
		}
		// The check runs for 42 s: its activity is shown once the
		// interval ends, not dropped.
		time.Sleep(42 * time.Second)
		if got := seen(); !slices.Equal(got, []string{"Write mul_test.go", "Run go test ./..."}) {
			t.Fatalf("the last activity of the interval is shown at its end: %q", got)
		}
		// An activity long after the last is shown at once.
		p.offer("Edit mul.go")
		if got := seen(); len(got) != 3 || got[2] != "Edit mul.go" {
			t.Fatalf("an activity after a quiet interval is shown at once: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
		p.offer("Run go vet")
		p.stop()
		time.Sleep(time.Second)
		p.offer("after the end")
		time.Sleep(time.Second)
		if got := seen(); len(got) != 3 {
			t.Fatalf("nothing is shown after stop: %q", got)
		}
	})
}
