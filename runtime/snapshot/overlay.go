package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pixir-go/pixir/tools"
)

// Overlay brings into the snapshot m what another child changed in its
// own snapshot, from: the files and links of ch.Added and ch.Changed are
// copied over (replacing what is there), those of ch.Deleted removed. The
// manifest takes them as its own, so Changes reports only what this
// snapshot's child does afterwards. A workflow step sees its isolated
// dependencies' work this way; the user's workspace is never touched.
//
// Paths are the slash-separated, workspace-relative ones Changes reports;
// one that would leave the snapshot, or that Take would exclude, is an
// error.
func (m *Manifest) Overlay(ctx context.Context, from string, ch Changes) error {
	fromAbs, err := filepath.Abs(from)
	if err != nil {
		return fmt.Errorf("overlay source %s: %w", from, err)
	}
	c := &copier{ctx: ctx, src: fromAbs, dst: m.Root, umask: umask()}
	buf, h := make([]byte, bufSize), new(sum)
	index := make(map[string]int, len(m.Entries))
	for i, e := range m.Entries {
		index[e.Path] = i
	}
	put := func(e Entry) {
		if i, ok := index[e.Path]; ok {
			m.Entries[i] = e
			return
		}
		index[e.Path] = len(m.Entries)
		m.Entries = append(m.Entries, e)
	}
	for _, p := range append(slices.Clone(ch.Added), ch.Changed...) {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := overlayPath(p)
		if err != nil {
			return err
		}
		info, err := os.Lstat(filepath.Join(fromAbs, rel))
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone since its change list was made
		} else if err != nil {
			return fmt.Errorf("overlay %s: %w", p, err)
		}
		dst := filepath.Join(m.Root, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("overlay %s: %w", p, err)
		}
		if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("overlay %s: %w", p, err)
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if err := c.link(rel); err != nil {
				return fmt.Errorf("overlay %s: %w", p, err)
			}
			put(c.links[len(c.links)-1])
		case info.Mode().IsRegular():
			e, err := c.file(rel, buf, h)
			if err != nil {
				return fmt.Errorf("overlay: %w", err)
			}
			if e != nil {
				put(*e)
			}
		}
	}
	deleted := map[string]bool{}
	for _, p := range ch.Deleted {
		rel, err := overlayPath(p)
		if err != nil {
			return err
		}
		if err := os.Remove(filepath.Join(m.Root, rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("overlay %s: %w", p, err)
		}
		deleted[filepath.ToSlash(rel)] = true
	}
	m.Entries = slices.DeleteFunc(m.Entries, func(e Entry) bool { return deleted[e.Path] })
	slices.SortFunc(m.Entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	m.Bytes = 0
	for _, e := range m.Entries {
		if e.Mode.IsRegular() {
			m.Bytes += e.Size
		}
	}
	return nil
}

// overlayPath checks a change-list path and makes it OS-separated.
func overlayPath(p string) (string, error) {
	rel := filepath.FromSlash(p)
	if p == "" || filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("overlay: %q is not a path inside the workspace", p)
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, name := range parts {
		if Excluded(name, i < len(parts)-1) {
			return "", fmt.Errorf("overlay: %q is excluded from snapshots", p)
		}
	}
	return rel, nil
}

// ForChild is a snapshot as the Subagents Manager uses it
// (runtime.Snapshot): change lists in the tools' terms.
type ForChild struct{ M *Manifest }

// TakeForChild takes a snapshot for a child (Take).
func TakeForChild(ctx context.Context, src, dst string) (ForChild, error) {
	m, err := Take(ctx, src, dst)
	return ForChild{m}, err
}

// Changes is Manifest.Changes, never with nil lists.
func (s ForChild) Changes(ctx context.Context, dir string) (tools.FileChanges, error) {
	ch, err := s.M.Changes(ctx, dir)
	if err != nil {
		return tools.FileChanges{}, err
	}
	return tools.FileChanges{Added: nonNil(ch.Added), Changed: nonNil(ch.Changed), Deleted: nonNil(ch.Deleted)}, nil
}

// Overlay is Manifest.Overlay.
func (s ForChild) Overlay(ctx context.Context, from string, ch tools.FileChanges) error {
	return s.M.Overlay(ctx, from, Changes{Added: ch.Added, Changed: ch.Changed, Deleted: ch.Deleted})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
