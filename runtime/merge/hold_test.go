package merge

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// lineWriter passes each write to a channel.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

func TestHoldWaitsUntilCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		out := make(lineWriter, 4)
		hook := holdAfter(ctx, 2, out)
		hook(1) // not yet: returns
		var wg sync.WaitGroup
		held := 0
		var mu sync.Mutex
		for n := 2; n <= 3; n++ { // two workers reach it
			wg.Go(func() {
				hook(n)
				mu.Lock()
				held++
				mu.Unlock()
			})
		}
		synctest.Wait()
		require.Equal(t, "merge held after 2 operations\n", <-out)
		require.Empty(t, out, "said once")
		mu.Lock()
		require.Zero(t, held, "both wait")
		mu.Unlock()
		cancel()
		wg.Wait()
		require.Equal(t, 2, held)
	})
}

// TestAHeldMergeEndsWhenCancelled: a merge held mid-apply returns when its
// context ends, with the journal left for Recover, which finishes it.
func TestAHeldMergeEndsWhenCancelled(t *testing.T) {
	const n = 12
	f := everyFileChanged(t, n, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 1)
	testHookApplied = holdAfter(ctx, 3, out)
	t.Cleanup(func() { testHookApplied = nil })
	done := make(chan error, 1)
	go func() {
		_, err := Merge(ctx, Request{Workspace: f.ws, Snapshot: f.m, Label: "held"})
		done <- err
	}()
	require.True(t, strings.HasPrefix(<-out, "merge held after 3"))
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	journals, _ := filepath.Glob(filepath.Join(mergesDir(f.ws), "*", journalFile))
	require.Len(t, journals, 1, "left for Recover")

	recovered, err := Recover(context.Background(), f.ws, nil)
	require.NoError(t, err)
	require.Len(t, recovered, 1)
	for i := range n {
		require.Equal(t, fmt.Sprintf("new %d\n", i), read(t, f.ws, fmt.Sprintf("f%02d.txt", i)))
	}
}
