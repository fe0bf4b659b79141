package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// gcSettings are the collector's settings as the runtime reports them.
func gcSettings() (gogc, limit uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// keepGCSettings gives the collector back, after the test, the settings
// it had before (GOGC in go test's environment among them).
func keepGCSettings(t *testing.T) (gogc, limit uint64) {
	gogc, limit = gcSettings()
	t.Cleanup(func() {
		debug.SetGCPercent(int(int64(gogc)))
		debug.SetMemoryLimit(int64(limit))
	})
	return gogc, limit
}

// awaitGCSettings waits for the first collection's finalizer to give the
// collector back its settings: it runs on its own goroutine.
func awaitGCSettings(gogc, limit uint64) {
	runtime.GC()
	for {
		if g, l := gcSettings(); g == gogc && l == limit {
			return
		}
		runtime.Gosched()
	}
}

// Not parallel: the settings are the process's.
func TestARunsStartHeapIsGivenBackAtTheFirstCollection(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	gogc, limit := keepGCSettings(t)

	setStartHeap(64 << 20)
	g, l := gcSettings()
	require.Equal(t, uint64(math.MaxUint64), g, "off (-1) until the first collection")
	require.Equal(t, uint64(64<<20), l, "the heap held to the floor meanwhile")
	awaitGCSettings(gogc, limit)
}

// A second start heap in one process keeps the first's: the collector
// off would otherwise be the setting the second gives back.
func TestAStartHeapIsSetOncePerProcess(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	gogc, limit := keepGCSettings(t)
	startHeapOnce = sync.Once{} // this test's process, whatever ran before
	t.Cleanup(func() { startHeapOnce = sync.Once{} })

	startHeap(64 << 20)
	startHeap(32 << 20) // changes nothing: no second floor, no second finalizer
	_, l := gcSettings()
	require.Equal(t, uint64(64<<20), l, "the first floor stands")
	awaitGCSettings(gogc, limit)
}

func TestAStartHeapLeavesTheUsersSettings(t *testing.T) {
	t.Setenv("GOGC", "100")
	gogc, limit := keepGCSettings(t)
	setStartHeap(64 << 20)
	g, l := gcSettings()
	require.Equal(t, gogc, g)
	require.Equal(t, limit, l)
}
