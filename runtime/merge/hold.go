package merge

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// HoldEnv is a test hook through the binary, in builds with the
// pixirtesthooks tag only (the e2e tests build pixir so; a release build
// never reads it): PIXIR_TEST_MERGE_HOLD=<n> makes every apply (not a
// recovery) stop once n of its operations are applied, print "merge held
// after n operations" on stderr and wait there to be killed, so that a
// test kills pixir (kill -9) in the middle of a merge at a point it awaits
// instead of after a guessed sleep.
const HoldEnv = "PIXIR_TEST_MERGE_HOLD"

// TestHooksTag is the build tag that compiles HoldEnv in.
const TestHooksTag = "pixirtesthooks"

// heldLine is what a held apply prints.
const heldLine = "merge held after %d operations"

// holdAfter is the hook HoldEnv asks for: once after operations are
// applied, every worker stops and waits until ctx ends (the merge is then
// cancelled, its journal left for Recover, as after a crash).
func holdAfter(ctx context.Context, after int, out io.Writer) func(n int) {
	var once sync.Once
	return func(n int) {
		if n < after {
			return
		}
		once.Do(func() { fmt.Fprintf(out, heldLine+"\n", after) })
		<-ctx.Done()
	}
}
