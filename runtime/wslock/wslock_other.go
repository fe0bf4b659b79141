//go:build !unix

package wslock

import "context"

// lockFile does nothing where flock does not exist: there, a merge in
// another process can still write a workspace while this one copies it
// (this process's own are kept apart by Lock's in-process lock).
func lockFile(context.Context, string, bool, Waiting) (func(), error) {
	return func() {}, nil
}
