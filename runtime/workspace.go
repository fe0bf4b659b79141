package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pixir-go/pixir/tools"
)

// StateDir is the folder inside a workspace that holds Pixir's own state
// (Logs, snapshots). Tools may not touch it.
const StateDir = ".pixir"

// Workspace confines tool paths to one directory tree. It resolves symlinks
// on the way, so a link pointing outside is refused like "..".
type Workspace struct {
	root string // absolute, symlinks resolved
}

// NewWorkspace confines to dir, which must exist.
func NewWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", dir)
	}
	return &Workspace{root: real}, nil
}

// Root implements tools.Workspace.
func (w *Workspace) Root() string { return w.root }

// Resolve implements tools.Workspace.
func (w *Workspace) Resolve(path string) (string, error) {
	deny := func(format string, args ...any) error {
		return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: fmt.Sprintf(format, args...)}
	}
	if path == "" {
		return "", &tools.Failure{Kind: tools.ErrInvalidArgs, Message: "path is empty"}
	}
	if strings.ContainsRune(path, 0) {
		return "", deny("path %q contains a NUL byte", path)
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.root, p)
	}
	p = filepath.Clean(p)
	if !within(w.root, p) {
		return "", deny("%s is outside the workspace %s; use a path inside it", path, w.root)
	}
	real, err := resolveExisting(p)
	if err != nil {
		return "", deny("%s cannot be resolved: %v", path, err)
	}
	if !within(w.root, real) {
		return "", deny("%s leads outside the workspace %s through a symbolic link", path, w.root)
	}
	rel, _ := filepath.Rel(w.root, real)
	if rel == StateDir || strings.HasPrefix(rel, StateDir+string(filepath.Separator)) {
		return "", deny("%s is Pixir's state folder and cannot be used by tools", path)
	}
	return real, nil
}

// resolveExisting resolves symlinks in the longest existing prefix of p and
// appends the rest, so a path to a file not yet created resolves too.
func resolveExisting(p string) (string, error) {
	var rest []string
	cur := p
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			// cur exists, so its target does not: a dangling link could be
			// pointed anywhere later.
			return "", fmt.Errorf("%s is a dangling symbolic link", cur)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

func within(root, p string) bool {
	if p == root {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}
