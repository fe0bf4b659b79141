package merge

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/pixir-go/pixir/runtime/snapshot"
)

// kind is what a path is on one side.
type kind byte

const (
	absent kind = iota
	file
	link
	other // a folder, or anything but a file or a link
)

// side is one version of a path: the workspace's now, the child's, or the
// base's.
type side struct {
	kind   kind
	mode   fs.FileMode // a file's permission bits
	size   int64
	sum    string
	data   []byte // a file's content, unless larger than snapshot.MaxBaseSize (or a base that was not kept)
	binary bool
	target string // a link's
	// stat is a file's identity and times as Lstat saw them: at the
	// apply, an unchanged stat says the file is as planned without
	// reading it again (a process cannot set ctime).
	stat string
}

// text says whether the side's content is text that is at hand.
func (s side) text() bool { return s.kind == file && s.data != nil && !s.binary }

// sameContent reports whether two sides have the same type and content
// (or target): permission bits aside.
func sameContent(a, b side) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case file:
		return a.size == b.size && a.sum == b.sum
	case link:
		return a.target == b.target
	}
	return true
}

// state is a side as the journal records it: enough to tell whether a
// path still holds what the plan saw, or already what it will write.
func (s side) state() string {
	switch s.kind {
	case absent:
		return ""
	case file:
		return fmt.Sprintf("f:%s:%d:%o", s.sum, s.size, s.mode)
	case link:
		return "l:" + s.target
	}
	return "d"
}

// readSide reads the path as it is on disk: no link is followed, a file's
// content is kept when it is not too large.
func readSide(path string) (side, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrInvalid):
		return side{}, nil
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(pe.Err, errNotDir) {
			return side{}, nil // a parent is a file now
		}
		return side{}, err
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(path)
		if err != nil {
			return side{}, err
		}
		return side{kind: link, target: t}, nil
	case !fi.Mode().IsRegular():
		return side{kind: other}, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return side{}, err
	}
	defer f.Close()
	s := side{kind: file, mode: fi.Mode() & fs.ModePerm, size: fi.Size(), stat: statOf(fi)}
	if fi.Size() <= snapshot.MaxBaseSize {
		// Sized for what Lstat saw, and one byte more to see the end.
		buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+1))
		if _, err := buf.ReadFrom(f); err != nil {
			return side{}, err
		}
		s.data = buf.Bytes()
		s.size, s.sum, s.binary = int64(len(s.data)), snapshot.Fingerprint(s.data), snapshot.IsBinary(s.data)
		return s, nil
	}
	// Too large to hold: fingerprint it as it streams by.
	sum, n, binary, err := streamSum(f)
	if err != nil {
		return side{}, err
	}
	s.size, s.sum, s.binary = n, sum, binary
	return s, nil
}

// baseSide is the base's version of a path (absent when the snapshot did
// not have it).
func baseSide(r *snapshot.BaseReader, path string) (side, error) {
	b, err := r.Base(path)
	if err != nil || b == nil {
		return side{}, err
	}
	switch {
	case b.Mode&fs.ModeSymlink != 0:
		return side{kind: link, target: b.Link}, nil
	case !b.Mode.IsRegular():
		return side{kind: other}, nil
	}
	s := side{kind: file, mode: b.Mode & fs.ModePerm, size: b.Size, sum: b.Sum}
	if b.Kept {
		s.data = b.Content
	} else if b.Size <= snapshot.MaxBaseSize {
		s.binary = true // not kept, not too large: it was not text
	}
	return s, nil
}
