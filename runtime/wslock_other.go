//go:build !unix

package runtime

import "context"

// lockWorkspaceFile does nothing where flock does not exist: there, a
// merge in another process can still write a workspace while this one
// copies it (this process's own are kept apart by Manager.inWorkspace).
func lockWorkspaceFile(context.Context, string, bool, func(string)) (func(), error) {
	return func() {}, nil
}
