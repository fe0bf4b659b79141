package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Errors of Dir, for callers to explain.
var (
	// ErrSymlink: the path crosses a symbolic link at the moment of use.
	// Paths given to Dir are resolved already, so a link there was swapped
	// in since.
	ErrSymlink = errors.New("crosses a symbolic link")
	// ErrHardLink: the file has more than one name, and another of them
	// may be outside the directory (or in Pixir's state), so its identity
	// is not the path's.
	ErrHardLink = errors.New("is a hard link")
	// ErrReadOnly: the file has no write permission for anyone. Replacing
	// it (a new file renamed over it) needs none, but its owner made it
	// read-only to keep it as it is.
	ErrReadOnly = errors.New("is read-only")
	// ErrChanged: ReplaceFile found the file at the path is no longer the
	// one the caller read (another file, size or modification time), just
	// before it would have replaced it.
	ErrChanged = errors.New("changed since it was read")
	// ErrNotWritable: the file is writable, but not by this process (it
	// belongs to another user, or its owner's own bits leave out
	// writing). Renaming a new file over it needs only the folder's
	// permission, which would take another user's file for this one.
	ErrNotWritable = errors.New("is not writable by you")
)

// checkRel refuses a path that is absolute or climbs out.
func checkRel(rel string) (string, error) {
	clean := filepath.Clean(rel)
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", &fs.PathError{Op: "open", Path: rel, Err: fmt.Errorf("path escapes from parent")}
	}
	return clean, nil
}
