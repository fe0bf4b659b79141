package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Changes compares the tree at dir (the child's workspace after it ran) with
// the manifest, under the same exclusion rule as Take, and lists the files
// and links Added, Changed (content or link target differs, or a file became
// a link or the reverse) and Deleted, each sorted, slash-separated and
// workspace-relative, and the regular files whose content is the same but
// whose permission bits changed (Mode). A file is read and fingerprinted
// unless it has the recorded size and modification time and a
// status-change time (ctime) before the manifest's Mark (see the package
// documentation); a file the process may no longer read counts as Changed.
// Sockets, FIFOs and devices are ignored, as Take skips them.
func (m *Manifest) Changes(ctx context.Context, dir string) (Changes, error) {
	var ch Changes
	if err := ctx.Err(); err != nil {
		return ch, err
	}
	byPath := m.index()
	index := make(map[string]*Entry, len(byPath))
	for p, i := range byPath {
		index[p] = &m.Entries[i]
	}
	seen := make(map[string]bool, len(m.Entries))
	d := &differ{ctx: ctx, m: m, root: dir, index: index, seen: seen, buf: make([]byte, bufSize), h: new(sum)}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ch, fmt.Errorf("changes: %w", err)
	}
	if err := d.walk("", entries, &ch); err != nil {
		return Changes{}, err
	}
	for _, e := range m.Entries {
		if !seen[e.Path] {
			ch.Deleted = append(ch.Deleted, e.Path)
		}
	}
	slices.Sort(ch.Added)
	slices.Sort(ch.Changed)
	slices.Sort(ch.Deleted)
	slices.Sort(ch.Mode)
	return ch, nil
}

type differ struct {
	ctx   context.Context
	m     *Manifest
	root  string
	index map[string]*Entry
	seen  map[string]bool
	buf   []byte
	h     *sum
}

func (d *differ) walk(rel string, entries []os.DirEntry, ch *Changes) error {
	for _, e := range entries {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		r := filepath.Join(rel, e.Name())
		if Excluded(r, e.IsDir()) {
			continue
		}
		p := filepath.Join(d.root, r)
		key := filepath.ToSlash(r)
		t := e.Type()
		switch {
		case t.IsDir():
			sub, err := os.ReadDir(p)
			if err != nil {
				return fmt.Errorf("changes: %w", err)
			}
			if taggedCache(p, sub) {
				continue
			}
			if err := d.walk(r, sub, ch); err != nil {
				return err
			}
		case t&fs.ModeSymlink != 0, t.IsRegular():
			old, ok := d.index[key]
			if !ok {
				ch.Added = append(ch.Added, key)
				continue
			}
			d.seen[key] = true
			same, mode, err := d.same(old, p, t)
			switch {
			case err != nil:
				return err
			case !same:
				ch.Changed = append(ch.Changed, key)
			case mode:
				ch.Mode = append(ch.Mode, key)
			}
		}
	}
	return nil
}

// same reports whether the file or link at p still has the content (or
// target) old recorded, and whether a regular file's permission bits
// changed.
func (d *differ) same(old *Entry, p string, t fs.FileMode) (same, mode bool, _ error) {
	if t&fs.ModeSymlink != 0 || old.Mode&fs.ModeSymlink != 0 {
		if t&fs.ModeSymlink == 0 || old.Mode&fs.ModeSymlink == 0 {
			return false, false, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return false, false, fmt.Errorf("changes: %w", err)
		}
		return target == old.Link, false, nil
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return false, false, fmt.Errorf("changes: %w", err)
	}
	mode = fi.Mode()&modeBits != old.Mode&modeBits
	if fi.Size() != old.Size {
		return false, mode, nil
	}
	if d.m.Mark != 0 && fi.ModTime().Equal(old.MTime) {
		// Untouched since the copy: every write and every new file after
		// Take has a ctime at or after Mark, and ctime cannot be set.
		if ctime, ok := ctimeOf(fi); ok && ctime < d.m.Mark {
			return true, mode, nil
		}
	}
	if old.Sum == "" || d.m.SumAlgorithm != SumAlgorithm {
		return false, mode, nil
	}
	f, err := os.OpenFile(p, os.O_RDONLY|openFlags, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return false, mode, nil
		}
		return false, mode, fmt.Errorf("changes: %w", err)
	}
	defer f.Close()
	d.h.reset()
	for {
		if err := d.ctx.Err(); err != nil {
			return false, mode, err
		}
		k, rerr := f.Read(d.buf)
		d.h.write(d.buf[:k])
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return false, mode, fmt.Errorf("changes: %w", rerr)
		}
	}
	return d.h.String() == old.Sum, mode, nil
}
