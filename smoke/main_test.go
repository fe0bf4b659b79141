package smoke

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/merge"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// subagents is the Manager's wiring the CLI gives: real snapshots, the
// built-in agent only.
func subagents() runtime.SubagentConfig {
	return runtime.SubagentConfig{
		Snapshot: func(ctx context.Context, src, dst string) (runtime.Snapshot, error) {
			return merge.TakeChild(ctx, src, dst)
		},
		RemoveSnapshot: merge.RemoveChild,
	}
}
