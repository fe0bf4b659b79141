package runtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/merge"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// heldSnapshot reports whether the Manager holds child id's snapshot in
// memory.
func (f *managerFixture) heldSnapshot(id string) bool {
	m := f.rt.subagents
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byID[id].snap != nil
}

// TestAnIsolatedChildsSnapshotIsHeldOnlyWhileInUse: found at scale (qa32s),
// every isolated child's snapshot manifest (~150 B a file) stayed in
// memory until the process ended: 618 MB for 50 writers over 20,000
// files. It is let go when the child's run ends and when a merge is
// decided, and read back from disk for the next merge or run, which see
// what the last one left (the merged base, the child's next changes).
func TestAnIsolatedChildsSnapshotIsHeldOnlyWhileInUse(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{
		Snapshot: func(ctx context.Context, src, dst string) (Snapshot, error) {
			return merge.TakeChild(ctx, src, dst)
		},
		LoadSnapshot:   func(dst string) (Snapshot, error) { return merge.LoadChild(dst) },
		RemoveSnapshot: merge.RemoveChild,
	})
	ws := f.parent.workspace.Root()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "old.txt"), []byte("old\n"), 0o644))

	v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Task: "write new.txt", WorkspaceMode: WorkspaceIsolated})
	require.NoError(t, err)
	got := f.wait(t, v.ID).Agents[0]
	require.Equal(t, tools.SubagentCompleted, got.Status)
	require.Equal(t, []string{"new.txt"}, got.Changes.Added)
	require.False(t, f.heldSnapshot(v.ID), "an ended child's snapshot stays in memory")

	rep, err := f.b.Merge(context.Background(), v.ID, false)
	require.NoError(t, err)
	require.Equal(t, tools.MergeMerged, rep.Status)
	require.FileExists(t, filepath.Join(ws, "new.txt"))
	require.False(t, f.heldSnapshot(v.ID), "a merged child's snapshot stays in memory")

	// Its next run starts from the snapshot the merge moved on: only what
	// it does now is its change, found in the snapshot, not by a scan.
	_, err = f.b.SendInput(context.Background(), v.ID, "write two.txt")
	require.NoError(t, err)
	got = f.wait(t, v.ID).Agents[0]
	require.Equal(t, tools.SubagentCompleted, got.Status)
	require.NotNil(t, got.Changes)
	require.Equal(t, []string{"two.txt"}, got.Changes.Added)
	require.Empty(t, got.Changes.Changed)
	require.False(t, f.heldSnapshot(v.ID))

	rep, err = f.b.Merge(context.Background(), v.ID, false)
	require.NoError(t, err)
	require.Equal(t, tools.MergeMerged, rep.Status)
	require.Equal(t, 1, rep.Applied.Count(), "%+v", rep)
	require.FileExists(t, filepath.Join(ws, "two.txt"))
	require.False(t, f.heldSnapshot(v.ID))
}

// A snapshot being read back is in use already: a workflow's removal of a
// merged step's snapshot (dropMerged, which removes only one nothing uses)
// cannot remove it under the read, and once removed a merge says why.
// The use was counted only after the read (review33c #8).
func TestASnapshotBeingReadBackIsNotRemovedUnderTheRead(t *testing.T) {
	reading, release := make(chan struct{}), make(chan struct{})
	f := newManagerFixture(t, SubagentConfig{
		Snapshot: func(ctx context.Context, src, dst string) (Snapshot, error) {
			return merge.TakeChild(ctx, src, dst)
		},
		LoadSnapshot: func(dst string) (Snapshot, error) {
			close(reading)
			<-release
			return merge.LoadChild(dst)
		},
		RemoveSnapshot: merge.RemoveChild,
	})
	v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Task: "write new.txt", WorkspaceMode: WorkspaceIsolated})
	require.NoError(t, err)
	require.Equal(t, tools.SubagentCompleted, f.wait(t, v.ID).Agents[0].Status)
	require.False(t, f.heldSnapshot(v.ID))

	m := f.rt.subagents
	sa := func() *subagent { m.mu.Lock(); defer m.mu.Unlock(); return m.byID[v.ID] }()
	merged := make(chan error, 1)
	go func() {
		_, err := f.b.Merge(context.Background(), v.ID, false)
		merged <- err
	}()
	<-reading
	whole := &workflows.StepOutcome{AgentID: v.ID, WorkspaceMode: workflows.Isolated,
		Changes: &tools.FileChanges{Added: []string{"new.txt"}},
		Merge:   &workflows.StepMerge{MergeReport: tools.MergeReport{Status: tools.MergeMerged, Applied: tools.MergeFiles{Added: []string{"new.txt"}}}}}
	m.dropMerged(whole)
	require.False(t, m.snapshotRemoved(sa), "removed while a merge read it back")
	close(release)
	require.NoError(t, <-merged)

	m.dropMerged(whole)
	require.True(t, m.snapshotRemoved(sa), "nothing uses it now")
	_, err = f.b.Merge(context.Background(), v.ID, false)
	require.ErrorContains(t, err, "its snapshot was removed then")
}

// snapshotRemoved reports whether dropMerged removed sa's snapshot.
func (m *Manager) snapshotRemoved(sa *subagent) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sa.snapRemoved
}
