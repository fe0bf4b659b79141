package merge

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/pixir-go/pixir/runtime/snapshot"
	"github.com/pixir-go/pixir/tools"
)

// Child is an isolated child's snapshot as the Subagents Manager uses it
// (runtime.Snapshot): its workspace is <home>/workspace, its base and
// manifest <home>/base, and it has a git repository of its own when the
// parent's workspace is a git work tree.
type Child struct{ M *snapshot.Manifest }

// BaseDir is where a child's base is kept, beside its workspace.
func BaseDir(workspace string) string { return filepath.Join(filepath.Dir(workspace), "base") }

// TakeChild takes a child's snapshot of src into dst (its workspace).
func TakeChild(ctx context.Context, src, dst string) (Child, error) {
	m, err := snapshot.TakeWith(ctx, src, dst, snapshot.Options{BaseDir: BaseDir(dst), Git: true})
	return Child{m}, err
}

// LoadChild loads the snapshot of the child whose workspace is dst, as an
// earlier process took it (a child restored from the Log).
func LoadChild(dst string) (Child, error) {
	m, err := snapshot.Load(BaseDir(dst))
	if err != nil {
		return Child{}, fmt.Errorf("%w (%w)", ErrNoSnapshot, err)
	}
	m.Root = dst
	return Child{m}, nil
}

// RemoveChild deletes a child's snapshot: its workspace and its base.
func RemoveChild(dst string) error {
	if err := snapshot.Remove(dst); err != nil {
		return err
	}
	return snapshot.Remove(BaseDir(dst))
}

// Changes is Manifest.Changes in the tools' terms, never with nil lists.
func (c Child) Changes(ctx context.Context, dir string) (tools.FileChanges, error) {
	ch, err := c.M.Changes(ctx, dir)
	if err != nil {
		return tools.FileChanges{}, err
	}
	return tools.FileChanges{Added: nonNil(ch.Added), Changed: nonNil(ch.Changed), Deleted: nonNil(ch.Deleted), Mode: ch.Mode}, nil
}

// Overlay is Manifest.Overlay.
func (c Child) Overlay(ctx context.Context, from string, ch tools.FileChanges) error {
	return c.M.Overlay(ctx, from, snapshot.Changes{Added: ch.Added, Changed: ch.Changed, Deleted: ch.Deleted, Mode: ch.Mode})
}

// Merge merges the child's changes (Merge), req.Snapshot being this one.
func (c Child) Merge(ctx context.Context, req Request) (tools.MergeReport, error) {
	req.Snapshot = c.M
	return Merge(ctx, req)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
