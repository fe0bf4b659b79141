package smoke

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/snapshot"
	"github.com/pixir-go/pixir/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// subagents is the Manager's wiring the CLI gives: real snapshots, the
// built-in agent only.
func subagents() runtime.SubagentConfig {
	return runtime.SubagentConfig{
		Snapshot: func(ctx context.Context, src, dst string) (runtime.Snapshot, error) {
			m, err := snapshot.Take(ctx, src, dst)
			if err != nil {
				return nil, err
			}
			return manifest{m}, nil
		},
		RemoveSnapshot: snapshot.Remove,
	}
}

type manifest struct{ m *snapshot.Manifest }

func (s manifest) Changes(ctx context.Context, dir string) (tools.FileChanges, error) {
	ch, err := s.m.Changes(ctx, dir)
	if err != nil {
		return tools.FileChanges{}, err
	}
	return tools.FileChanges{Added: ch.Added, Changed: ch.Changed, Deleted: ch.Deleted}, nil
}
