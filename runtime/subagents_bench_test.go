package runtime

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/pixir-go/pixir/tools"
)

// BenchmarkTenThousandSubagents spawns 10,000 children on a provider that
// answers at once and runs them all to completion under the default limits
// (6 at a time, shared workspace: each child still gets its own Session, Log
// and metadata). It reports the wall time of the whole run and the heap
// retained per child once they are done (targets: under 2 s, under
// 100 KB per child). The metrics are those of the last round.
func BenchmarkTenThousandSubagents(b *testing.B) {
	children := benchChildren()
	// Each round is ten thousand children: make bench's -benchtime 50x
	// would take minutes, and three rounds show the spread.
	for range min(b.N, 3) {
		b.StopTimer()
		rt := New(Config{Home: b.TempDir(), Provider: childProvider{}, Model: "m", Tools: tools.Builtins()})
		parent, err := rt.NewSession(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		bind := binding{m: rt.subagents, parent: parent}
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()

		start := time.Now()
		for i := range children {
			if _, err := bind.Spawn(context.Background(), tools.SpawnRequest{Task: "task", WorkspaceMode: WorkspaceShared}); err != nil {
				b.Fatal(i, err)
			}
		}
		out, err := bind.Wait(context.Background(), tools.WaitRequest{Timeout: time.Minute})
		if err != nil || out.Incomplete || len(out.Finished) != children {
			b.Fatalf("not all children finished: %v, %d of %d", err, len(out.Finished), children)
		}
		wall := time.Since(start)

		b.StopTimer()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(after.HeapAlloc-min(before.HeapAlloc, after.HeapAlloc))/float64(children)/1024, "KB-per-child")
		b.ReportMetric(float64(after.Sys)/(1<<20), "sys-MB")
		rt.Close()
		debug.FreeOSMemory()
		b.StartTimer()
	}
}

// benchChildren is 10,000, or PIXIR_BENCH_CHILDREN when profiling.
func benchChildren() int {
	if n, err := strconv.Atoi(os.Getenv("PIXIR_BENCH_CHILDREN")); err == nil && n > 0 {
		return n
	}
	return 10_000
}
