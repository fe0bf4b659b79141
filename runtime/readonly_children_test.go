package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/merge"
	"github.com/pixir-go/pixir/tools"
)

// readOnlyCatalog offers "default" and a read-only "explorer".
type readOnlyCatalog struct{}

func (readOnlyCatalog) Agent(name string) (AgentSpec, bool) {
	switch name {
	case "default":
		return AgentSpec{Name: name}, true
	case "explorer":
		return AgentSpec{Name: name, ReadOnly: true}, true
	}
	return AgentSpec{}, false
}

func (readOnlyCatalog) Names() []string { return []string{"default", "explorer"} }

func readOnlyAgents(string) (AgentCatalog, error) { return readOnlyCatalog{}, nil }

func TestReadOnlyChildrenShareTheWorkspaceByDefault(t *testing.T) {
	tests := []struct {
		name, agent, asked string
		parentMode         Mode
		want               string
	}{
		{"a read-only agent", "explorer", "", ModeAuto, WorkspaceShared},
		{"any child of a read_only parent", "default", "", ModeReadOnly, WorkspaceShared},
		{"a child that may write", "default", "", ModeAuto, WorkspaceIsolated},
		{"a read-only agent asked isolated", "explorer", WorkspaceIsolated, ModeAuto, WorkspaceIsolated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newManagerFixtureWith(t, SubagentConfig{Agents: readOnlyAgents}, childProvider{})
			require.NoError(t, f.parent.SetMode(tt.parentMode))
			v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Agent: tt.agent, Task: "look", WorkspaceMode: tt.asked})
			require.NoError(t, err)
			require.Equal(t, tt.want, v.WorkspaceMode)
			out, err := f.b.Wait(context.Background(), tools.WaitRequest{IDs: []string{v.ID}, Timeout: noHorizon})
			require.NoError(t, err)
			require.Equal(t, tools.SubagentCompleted, out.Agents[0].Status)
			_, err = os.Stat(filepath.Join(f.parent.workspace.Root(), StateDir, "subagents", v.ID, "workspace"))
			require.Equal(t, tt.want == WorkspaceShared, os.IsNotExist(err), "a snapshot exactly when isolated: %v", err)
		})
	}
}

// BenchmarkReadOnlyChildren runs 32 read-only children (the explorer) to
// completion on an instant provider in a workspace of 286 files of 4 KiB,
// with the real snapshot package: by default now (shared, no copy) and
// asked isolated (a snapshot each, as every child had before), in the same
// run. It reports wall time and Pixir's CPU time per child.
func BenchmarkReadOnlyChildren(b *testing.B) {
	const children, files = 32, 286
	ws := b.TempDir()
	body := strings.Repeat("x", 4<<10)
	for i := range files {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%02d", i%20))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", i)), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	take := func(ctx context.Context, src, dst string) (Snapshot, error) {
		return merge.TakeChild(ctx, src, dst)
	}
	for _, mode := range []string{"", WorkspaceIsolated} {
		name := "default-shared"
		if mode != "" {
			name = "isolated"
		}
		b.Run(name, func(b *testing.B) {
			var wall, cpu time.Duration
			for b.Loop() {
				rt := New(Config{Home: b.TempDir(), Provider: childProvider{}, Model: "m", Tools: tools.Builtins(),
					Subagents: SubagentConfig{Agents: readOnlyAgents, Snapshot: take, RemoveSnapshot: merge.RemoveChild}})
				parent, err := rt.NewSession(ws)
				if err != nil {
					b.Fatal(err)
				}
				bind := binding{m: rt.subagents, parent: parent}
				cpu0, start := cpuTime(), time.Now()
				for range children {
					if _, err := bind.Spawn(context.Background(), tools.SpawnRequest{Agent: "explorer", Task: "look", WorkspaceMode: mode}); err != nil {
						b.Fatal(err)
					}
				}
				if out, err := bind.Wait(context.Background(), tools.WaitRequest{Timeout: time.Hour}); err != nil || len(out.Finished) != children {
					b.Fatalf("not all children finished: %v", err)
				}
				wall += time.Since(start)
				cpu += cpuTime() - cpu0
				_ = rt.CloseSession(parent.ID()) // removes the snapshots
				rt.Close()
			}
			per := float64(b.N * children)
			b.ReportMetric(float64(wall.Microseconds())/1000/per, "wall-ms/child")
			b.ReportMetric(float64(cpu.Microseconds())/1000/per, "cpu-ms/child")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
