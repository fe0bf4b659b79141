package merge

import (
	"context"
	"fmt"

	"github.com/pixir-go/pixir/runtime/wslock"
)

// lockWorkspace takes the workspace's lock to write (.pixir/workspace.lock,
// see runtime/wslock) and returns its release: a snapshot's copy, in this
// process or another, never sees half of a merge, and merges are made one
// at a time. It is taken only to write (the plan and the question to the
// user are made before it), so it is held briefly; a wait for another
// process is said through waiting, and ctx ends it.
func lockWorkspace(ctx context.Context, workspace string, waiting wslock.Waiting) (func(), error) {
	unlock, err := wslock.Lock(ctx, workspace, true, waiting)
	if err != nil {
		return nil, fmt.Errorf("locking the workspace for a merge: %w", err)
	}
	return unlock, nil
}
