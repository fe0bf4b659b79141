//go:build !linux

package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Dir opens files beneath one directory. Without openat2 the check is
// weaker than on Linux: every component of the path is checked with Lstat
// just before the open through an os.Root, which keeps the open inside the
// directory; a link swapped in between the two is still followed, within
// the directory only. A regular file with more than one name is refused.
type Dir struct {
	root *os.Root
	path string
}

// OpenDir opens the directory at path.
func OpenDir(path string) (*Dir, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &Dir{root: r, path: path}, nil
}

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

func (d *Dir) checkLinks(rel string) error {
	cur := ""
	for _, p := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, p)
		info, err := d.root.Lstat(cur)
		if err != nil {
			return nil // the open reports it
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return &fs.PathError{Op: "open", Path: rel, Err: ErrSymlink}
		}
	}
	return nil
}

// OpenFile opens rel with flags, refusing links on the way and hard links.
func (d *Dir) OpenFile(rel string, flags int) (*os.File, error) {
	clean, err := checkRel(rel)
	if err != nil {
		return nil, err
	}
	if err := d.checkLinks(clean); err != nil {
		return nil, err
	}
	f, err := d.root.OpenFile(clean, flags, 0)
	if err != nil {
		return nil, err
	}
	if err := refuseHardLink(f, rel); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Stat describes rel without following a link on its way.
func (d *Dir) Stat(rel string) (fs.FileInfo, error) {
	clean, err := checkRel(rel)
	if err != nil {
		return nil, err
	}
	if err := d.checkLinks(clean); err != nil {
		return nil, err
	}
	return d.root.Lstat(clean)
}

// WriteFile writes a new file beside rel and renames it over the old one,
// keeping the old one's permissions.
func (d *Dir) WriteFile(rel string, data []byte, perm os.FileMode) error {
	return d.writeFile(rel, data, perm, nil)
}

// ReplaceFile is WriteFile over the file read as was: just before the
// rename it checks that the file at rel is still that one, and if not it
// leaves it as it is and says ErrChanged.
func (d *Dir) ReplaceFile(rel string, data []byte, was fs.FileInfo) error {
	return d.writeFile(rel, data, 0o644, was)
}

func (d *Dir) writeFile(rel string, data []byte, perm os.FileMode, was fs.FileInfo) error {
	clean, err := checkRel(rel)
	if err != nil {
		return err
	}
	if err := d.checkLinks(clean); err != nil {
		return err
	}
	if dir := filepath.Dir(clean); dir != "." {
		if err := d.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if info, err := d.root.Lstat(clean); err == nil {
		if !info.Mode().IsRegular() {
			return &fs.PathError{Op: "write", Path: rel, Err: fmt.Errorf("not a regular file")}
		}
		if info.Mode().Perm()&0o222 == 0 {
			return &fs.PathError{Op: "write", Path: rel, Err: ErrReadOnly}
		}
		perm = info.Mode().Perm()
	}
	tmp := filepath.Join(filepath.Dir(clean), "."+filepath.Base(clean)+".pixir-tmp")
	if err := d.root.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if was != nil {
		if now, err := d.root.Lstat(clean); err != nil || !sameVersion(was, now) {
			_ = d.root.Remove(tmp)
			return &fs.PathError{Op: "write", Path: rel, Err: ErrChanged}
		}
	}
	if err := d.root.Rename(tmp, clean); err != nil {
		_ = d.root.Remove(tmp)
		return err
	}
	return nil
}

// sameVersion says whether now is the file was: the same file, size and
// modification time.
func sameVersion(was, now fs.FileInfo) bool {
	return os.SameFile(was, now) && was.Size() == now.Size() && was.ModTime().Equal(now.ModTime())
}
