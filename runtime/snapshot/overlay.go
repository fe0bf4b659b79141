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
)

// Overlay brings into the snapshot m what another child changed in its
// own snapshot, from: the files and links of ch.Added and ch.Changed are
// copied over (replacing what is there), those of ch.Deleted removed, the
// permission bits of ch.Mode copied. The
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
	var bases *pack // the inherited files are the base now
	if m.BaseDir != "" {
		bases = m.extraPack()
	}
	put := m.put
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
			if bases != nil {
				bases.mu.Lock()
			}
			e, err := c.file(rel, buf, h, bases)
			if bases != nil {
				bases.mu.Unlock()
			}
			if err != nil {
				return fmt.Errorf("overlay: %w", err)
			}
			if e != nil {
				put(*e)
			}
		}
	}
	for _, p := range ch.Mode {
		rel, err := overlayPath(p)
		if err != nil {
			return err
		}
		info, err := os.Lstat(filepath.Join(fromAbs, rel))
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.Mode().IsRegular()) {
			continue
		} else if err != nil {
			return fmt.Errorf("overlay %s: %w", p, err)
		}
		if err := os.Chmod(filepath.Join(m.Root, rel), info.Mode()&modeBits); err != nil {
			return fmt.Errorf("overlay %s: %w", p, err)
		}
		if e, ok := m.Lookup(filepath.ToSlash(rel)); ok {
			e.Mode = e.Mode&^modeBits | info.Mode()&modeBits
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
	m.indexMu.Lock()
	m.byPath = nil // positions moved
	m.indexMu.Unlock()
	m.Bytes = 0
	for _, e := range m.Entries {
		if e.Mode.IsRegular() {
			m.Bytes += e.Size
		}
	}
	if m.BaseDir != "" {
		return m.Save()
	}
	return nil
}

// overlayPath checks a change-list path and makes it OS-separated.
func overlayPath(p string) (string, error) {
	rel, err := relOK(p)
	if err != nil {
		return "", fmt.Errorf("overlay: %w", err)
	}
	return rel, nil
}
