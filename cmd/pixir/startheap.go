package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"
)

// runStartHeap is the heap a workflow run may reach before its first
// collection (see startHeap).
const runStartHeap = 64 << 20

// startHeap lets the heap grow to floor bytes before the garbage collector
// first runs, then gives the collector back its settings: a workflow run
// keeps each step's child (a few KiB a step) and allocates ~15 KiB a
// step, so from the runtime's first goal of 4 MiB it collected a dozen
// times on its way up, 10–15 % of a 1,000-step run's CPU (on the instant
// provider; issue 18 item 3). Until the first collection the collector
// is off and the heap is held to floor by a memory limit; the first
// collection (the limit reached, or any other) restores both, so the
// collector then paces the heap from what is live as it always does: the
// peak is at most floor or what it would have been, whichever is larger.
// The Go compiler starts its heap the same way (cmd/compile,
// base.AdjustStartingHeap). GOGC or GOMEMLIMIT in the environment is the
// user's choice: then nothing changes.
//
// Once per process: a second call before the first collection would keep
// the first's settings (the collector off) as the ones to give back.
func startHeap(floor int64) { startHeapOnce.Do(func() { setStartHeap(floor) }) }

var startHeapOnce sync.Once

func setStartHeap(floor int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	gogc := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(floor)
	// A finalizer runs after the first collection that finds its object
	// unreachable: this one is, from the start. (32 bytes keeps it out
	// of the tiny allocator, whose blocks outlive their objects.)
	type sentinel [32]byte
	runtime.SetFinalizer(new(sentinel), func(*sentinel) {
		debug.SetGCPercent(gogc)
		debug.SetMemoryLimit(limit)
	})
}
