package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/stretchr/testify/require"
)

// gcSettings are the collector's settings as the runtime reports them.
func gcSettings() (gogc, limit uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// Not parallel: the settings are the process's.
func TestARunsStartHeapIsGivenBackAtTheFirstCollection(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	t.Cleanup(func() { debug.SetGCPercent(100); debug.SetMemoryLimit(math.MaxInt64) })
	gogc, limit := gcSettings()
	require.Equal(t, uint64(100), gogc)
	require.Equal(t, uint64(math.MaxInt64), limit)

	startHeap(64 << 20)
	gogc, limit = gcSettings()
	require.Equal(t, uint64(math.MaxUint64), gogc, "off (-1) until the first collection")
	require.Equal(t, uint64(64<<20), limit, "the heap held to the floor meanwhile")

	runtime.GC()
	for { // the finalizer runs on its own goroutine, after the collection
		if gogc, limit = gcSettings(); gogc == 100 && limit == math.MaxInt64 {
			break
		}
		runtime.Gosched()
	}
}

func TestAStartHeapLeavesTheUsersSettings(t *testing.T) {
	t.Setenv("GOGC", "100")
	startHeap(64 << 20)
	gogc, limit := gcSettings()
	require.Equal(t, uint64(100), gogc)
	require.Equal(t, uint64(math.MaxInt64), limit)
}
