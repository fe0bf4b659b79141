package runtime

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/merge"
	"github.com/pixir-go/pixir/runtime/wslock"
	"github.com/pixir-go/pixir/tools"
)

// lockProbe is a snapshot whose copy and merge say whether the other
// could run beside them: whether the workspace's lock was free for it.
type lockProbe struct {
	snapshotCopy
	m    *Manager
	mu   *sync.Mutex
	seen *[]string
}

func (p lockProbe) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*p.seen = append(*p.seen, s)
}

func (p lockProbe) Merge(_ context.Context, req merge.Request) (tools.MergeReport, error) {
	// The merge takes the workspace's lock itself, to write, after its
	// question (see runtime/merge): here, before it, a copy can run.
	if wslock.Held(req.Workspace, false) {
		p.note("merge: the workspace's lock is held before the merge writes")
	} else {
		p.note("merge: copies run beside its plan and question")
	}
	return tools.MergeReport{Status: tools.MergeMerged}, nil
}

// TestASnapshotNeverCopiesAWorkspaceBeingMerged: found in review, a
// sibling's snapshot was copied while an on_ready merge renamed its files
// into the workspace, so its base could hold half of a merge (under load,
// TestFanOutHoldsEachInstanceToItsFiles saw it). A copy holds the
// workspace's lock to read; a merge takes it to write only while it
// writes (TestTheQuestionIsAskedWithoutTheWorkspaceLock in runtime/merge).
func TestASnapshotNeverCopiesAWorkspaceBeingMerged(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	var f *managerFixture
	f = newManagerFixture(t, SubagentConfig{Snapshot: func(ctx context.Context, src, dst string) (Snapshot, error) {
		probe := lockProbe{m: f.rt.subagents, mu: &mu, seen: &seen}
		if wslock.Held(src, false) {
			probe.note("copy: merges wait")
		} else {
			probe.note("a merge could run during the copy")
		}
		s, err := takeCopy(ctx, src, dst)
		if err != nil {
			return nil, err
		}
		probe.snapshotCopy = s.(snapshotCopy)
		return probe, nil
	}})
	v := f.spawn(t, "write new.txt")
	f.wait(t, v.ID)
	_, err := f.b.Merge(context.Background(), v.ID, false)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"copy: merges wait", "merge: copies run beside its plan and question"}, seen)
}

// panickyMerge is a snapshot whose merge panics.
type panickyMerge struct{ snapshotCopy }

func (panickyMerge) Merge(context.Context, merge.Request) (tools.MergeReport, error) {
	panic("a fault in the merge")
}

// A panic in the snapshot's copy or merge, which run holding the
// workspace's lock, leaves the lock free: it was released only on the way
// out without a panic, so the next merge (or, after a merge's panic, every
// copy) waited for good, and a workflow runner recovering from the panic
// hung in stopRunning on a child stuck before its copy. The copy's panic
// is recovered by the child's run (it fails "crashed"); the merge's here.
func TestAPanicInACopyOrMergeReleasesTheWorkspaceLock(t *testing.T) {
	var mu sync.Mutex
	copies := 0
	f := newManagerFixture(t, SubagentConfig{Snapshot: func(ctx context.Context, src, dst string) (Snapshot, error) {
		mu.Lock()
		copies++
		n := copies
		mu.Unlock()
		if n == 1 {
			panic("a fault in the copy")
		}
		s, err := takeCopy(ctx, src, dst)
		if err != nil {
			return nil, err
		}
		return panickyMerge{s.(snapshotCopy)}, nil
	}})
	root := f.parent.workspace.Root()
	merging := f.rt.subagents.mergeLock(root)
	free := func(what string) {
		t.Helper()
		require.False(t, wslock.Held(root, false), "the workspace's lock is still held after %s", what)
		select {
		case merging <- struct{}{}:
			<-merging
		default:
			t.Fatalf("this process's merge lock is still held after %s", what)
		}
	}

	crashed := f.spawn(t, "write new.txt")
	got := f.wait(t, crashed.ID).Agents[0]
	require.Equal(t, tools.SubagentFailed, got.Status)
	require.Contains(t, got.Error.Message, "a fault in the copy")
	free("a copy that panicked")

	v := f.spawn(t, "write new.txt")
	require.Equal(t, tools.SubagentCompleted, f.wait(t, v.ID).Agents[0].Status)
	for _, dryRun := range []bool{true, false} {
		require.PanicsWithValue(t, "a fault in the merge", func() { _, _ = f.b.Merge(context.Background(), v.ID, dryRun) })
		free(fmt.Sprintf("a merge (dry run %v) that panicked", dryRun))
	}
}

// heldMerge is a snapshot whose merge holds this process's merge lock
// until released, as a merge waiting for its user's answer does.
type heldMerge struct {
	snapshotCopy
	entered chan<- string
	release <-chan struct{}
}

func (h heldMerge) Merge(context.Context, merge.Request) (tools.MergeReport, error) {
	h.entered <- h.root
	<-h.release
	return tools.MergeReport{Status: tools.MergeMerged}, nil
}

// A merge waiting behind another's open question ends when its own turn
// is cancelled: the lock was a mutex, and session B's cancel could not end
// its wait for session A's user (review33a #5).
func TestAMergeWaitingBehindAnotherEndsWhenCancelled(t *testing.T) {
	entered := make(chan string, 2)
	release := make(chan struct{})
	f := newManagerFixture(t, SubagentConfig{Snapshot: func(ctx context.Context, src, dst string) (Snapshot, error) {
		s, err := takeCopy(ctx, src, dst)
		if err != nil {
			return nil, err
		}
		return heldMerge{snapshotCopy: s.(snapshotCopy), entered: entered, release: release}, nil
	}})
	first, second := f.spawn(t, "write a.txt"), f.spawn(t, "write b.txt")
	f.wait(t, first.ID)
	f.wait(t, second.ID)

	firstDone := make(chan error, 1)
	go func() {
		_, err := f.b.Merge(context.Background(), first.ID, false)
		firstDone <- err
	}()
	<-entered // the first merge holds the lock, its "question" open

	ctx, cancel := context.WithCancel(context.Background())
	secondDone := make(chan error, 1)
	go func() {
		_, err := f.b.Merge(ctx, second.ID, false)
		secondDone <- err
	}()
	cancel()
	select {
	case err := <-secondDone:
		require.Error(t, err)
		var failure *tools.Failure
		require.ErrorAs(t, err, &failure)
		require.Equal(t, tools.ErrCancelled, failure.Kind, err.Error())
	case <-entered:
		t.Fatal("the second merge ran while the first held the lock")
	}
	close(release)
	require.NoError(t, <-firstDone)
}
