package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pixir-go/pixir/sandbox"
	"github.com/pixir-go/pixir/tools"
	"golang.org/x/text/unicode/norm"
)

// StateDir is the folder inside a workspace that holds Pixir's own state
// (Logs, snapshots). Tools may not touch it.
const StateDir = ".pixir"

// Workspace confines tool paths to one directory tree. Resolve refuses a
// path that leads outside, through "..", an absolute path or a symbolic link
// anywhere on its way; Files then does every read and write through a
// sandbox.Dir, which checks again at the moment of use: the resolved path
// must hold no symbolic link at all (one swapped in after Resolve, toward
// .pixir/ or out, fails the open), and a file with more than one name (a
// hard link, perhaps to a file outside or to a Log) is not opened.
type Workspace struct {
	root string       // absolute, symlinks resolved
	fs   *sandbox.Dir // opened on root
}

// WorkspaceRoot is the absolute path, symbolic links resolved, of the
// workspace dir names: where its sessions' paths start.
func WorkspaceRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", dir, err)
	}
	return real, nil
}

// NewWorkspace confines to dir, which must exist.
func NewWorkspace(dir string) (*Workspace, error) {
	real, err := WorkspaceRoot(dir)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		// A path error, as a missing directory's is: the caller's bad
		// input (an ACP cwd: -32602), not Pixir's fault.
		return nil, &fs.PathError{Op: "workspace", Path: dir, Err: syscall.ENOTDIR}
	}
	fsys, err := sandbox.OpenDir(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	return &Workspace{root: real, fs: fsys}, nil
}

// Close releases the workspace's directory handle.
func (w *Workspace) Close() error { return w.fs.Close() }

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
	real, err := resolveNormalized(p)
	if errors.Is(err, syscall.ENOTDIR) {
		// The user's file where the path needs a folder: a wrong path,
		// as a missing one is, not a refusal.
		return "", &tools.Failure{Kind: tools.ErrNotFound, Message: fmt.Sprintf(
			"a parent of %s is a file, not a directory; check the path, or find the file with glob", path)}
	}
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

// resolveNormalized is resolveExisting, and when a name on the way is
// missing but its folder holds exactly one name that is the same text in
// another Unicode form (é as one code point, NFC, or as e and a combining
// accent, NFD, as macOS writes names), the path goes on through that one.
// A model writes names in NFC whatever glob showed it, and the two forms
// look alike: "there is no file at café.txt" beside a café.txt left it no
// way on, and a write made a second café.txt.
func resolveNormalized(p string) (string, error) {
	for range strings.Count(p, string(filepath.Separator)) + 1 {
		existing, missing, err := resolveExisting(p)
		if err != nil {
			return "", err
		}
		if len(missing) == 0 {
			return existing, nil
		}
		alt := sameNameInOtherForm(existing, missing[0])
		if alt == "" {
			return filepath.Join(append([]string{existing}, missing...)...), nil
		}
		p = filepath.Join(append([]string{existing, alt}, missing[1:]...)...)
	}
	existing, missing, err := resolveExisting(p)
	return filepath.Join(append([]string{existing}, missing...)...), err
}

// sameNameInOtherForm is the one entry of dir whose name is name in
// another Unicode normalization form, or "".
func sameNameInOtherForm(dir, name string) string {
	if isASCII(name) {
		return ""
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	want, found := norm.NFC.String(name), ""
	for _, e := range entries {
		if e.Name() != name && !isASCII(e.Name()) && norm.NFC.String(e.Name()) == want {
			if found != "" {
				return ""
			}
			found = e.Name()
		}
	}
	return found
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// resolveExisting resolves symlinks in the longest existing prefix of p and
// appends the rest, so a path to a file not yet created resolves too.
// It returns the two apart: the existing prefix resolved, and the names
// after it, not there yet.
func resolveExisting(p string) (existing string, missing []string, err error) {
	var rest []string
	cur := p
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return real, rest, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", nil, err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			// cur exists, so its target does not: a dangling link could be
			// pointed anywhere later.
			return "", nil, fmt.Errorf("%s is a dangling symbolic link", cur)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", nil, err
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

// Files returns local file access confined to the workspace.
func (w *Workspace) Files() tools.Files { return localFiles{w} }

// localFiles implements tools.Files on the local disk through the
// workspace's sandbox.Dir.
type localFiles struct{ w *Workspace }

// rel turns an absolute path from Resolve into one relative to the root,
// refusing Pixir's state folder.
func (l localFiles) rel(path string) (string, error) {
	rel, err := filepath.Rel(l.w.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", &tools.Failure{Kind: tools.ErrPermissionDenied, Message: fmt.Sprintf("%s is outside the workspace %s", path, l.w.root)}
	}
	if rel == StateDir || strings.HasPrefix(rel, StateDir+string(filepath.Separator)) {
		return "", &tools.Failure{Kind: tools.ErrPermissionDenied, Message: fmt.Sprintf("%s is Pixir's state folder and cannot be used by tools", path)}
	}
	return rel, nil
}

// confined turns the Dir's refusals into the failures the model reads.
func (l localFiles) confined(path string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sandbox.ErrSymlink):
		return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: fmt.Sprintf(
			"%s now leads through a symbolic link that was not there when the path was checked; it is not followed. Check the path again", path)}
	case errors.Is(err, sandbox.ErrHardLink):
		return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: fmt.Sprintf(
			"%s is a hard link: the same file has another name, perhaps outside the workspace or in Pixir's state, so file tools do not open it. "+
				"Replace it with a copy of its own (cp --remove-destination) if it belongs to the workspace", path)}
	case errors.Is(err, sandbox.ErrReadOnly):
		return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: fmt.Sprintf(
			"%s is read-only (no write permission for anyone), so it was left as it is; if it is meant to change, make it writable first with bash (chmod u+w)", path)}
	case errors.Is(err, sandbox.ErrNotWritable):
		why := sandbox.ErrNotWritable.Error()
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			why = pe.Err.Error()
		}
		return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: fmt.Sprintf(
			"%s %s, so it was left as it is: it belongs to another user, or its mode leaves its owner out. Ask its owner, or make it writable first with bash (chmod u+w) if it is yours", path, why)}
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("%s: %w", path, tools.ErrIsDir)
	case errors.Is(err, sandbox.ErrChanged):
		return fmt.Errorf("%s: %w", path, tools.ErrChanged)
	}
	return err
}

// Open implements tools.Files. It refuses anything but a regular file:
// reading a FIFO or a device could block or never end.
func (l localFiles) Open(_ context.Context, path string) (io.ReadCloser, error) {
	rel, err := l.rel(path)
	if err != nil {
		return nil, err
	}
	f, err := l.w.fs.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return nil, l.confined(path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, tools.ErrIsDir)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s (%s): %w", path, st.Mode().Type(), tools.ErrNotRegular)
	}
	return f, nil
}

// WriteFile implements tools.Files: it replaces the file whole (a new file
// renamed over the old one), keeping an existing file's mode, so a write
// never goes through a hard link into another name's content. A new file
// is 0666 less the user's umask, as an editor's or a shell's is.
func (l localFiles) WriteFile(_ context.Context, path string, data []byte) error {
	rel, err := l.rel(path)
	if err != nil {
		return err
	}
	return l.confined(path, l.w.fs.WriteFile(rel, data, 0o666))
}

// ReplaceFile implements tools.Replacer: WriteFile, left undone when the
// file is no longer the one read as was, checked just before the rename.
func (l localFiles) ReplaceFile(_ context.Context, path string, data []byte, was fs.FileInfo) error {
	rel, err := l.rel(path)
	if err != nil {
		return err
	}
	return l.confined(path, l.w.fs.ReplaceFile(rel, data, was))
}

func within(root, p string) bool {
	if p == root {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// stateIgnore is the .gitignore Pixir writes into a workspace's state
// folder: its Logs, snapshots and merge journals are never committed by a
// `git add -A`, while project agent files (.pixir/agents/), which people
// write and share, stay visible to git.
const stateIgnore = `# Written by Pixir: its Logs, snapshots and merge journals stay out of git.
# Agent definitions (agents/) are yours to commit.
*
!agents/
!agents/**
`

// EnsureStateDir makes <root>/.pixir if needed and gives it a .gitignore
// when it has none (Pixir made the folder, or an older Pixir did; one of
// the user's own is left alone).
func EnsureStateDir(root string) error {
	dir := filepath.Join(root, StateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &StateDirError{Dir: dir, Err: err}
	}
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return &StateDirError{Dir: dir, Err: err}
	}
	_, err = f.WriteString(stateIgnore)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// StateDirError is a workspace whose state folder Pixir cannot make or
// write: it says which folder, why, and what the user can do, since a
// session cannot start there.
type StateDirError struct {
	Dir string // <workspace>/.pixir
	// File, when set, is the file in the folder that could not be created
	// or opened for writing (a session's Log): the folder is there, but
	// this process may not write in it (a read-only file system, or a
	// folder another user made, as a pixir run under sudo does).
	File string
	Err  error
	// Readable: the Log at File (or, for a Log not made yet, its folder)
	// opens for reading, so pixir inspect and pixir sessions still read
	// what is there.
	Readable bool
}

// logFileError is the failure to create or open for writing the Log at
// path of the workspace root: a read-only file system or a permission
// refused is said as a StateDirError, with what to do; others are wrapped
// with what was being done.
func logFileError(root, path, doing string, err error) error {
	if errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission) {
		return &StateDirError{Dir: filepath.Join(root, StateDir), File: path, Err: err, Readable: opensForReading(path)}
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// opensForReading reports whether the Log at path, or its folder when it
// is not there, can be opened for reading.
func opensForReading(path string) bool {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.Open(filepath.Dir(path))
	}
	if err != nil {
		return false
	}
	_ = f.Close()
	return true
}

func (e *StateDirError) Error() string {
	if e.File != "" {
		return e.fileError()
	}
	root := filepath.Dir(e.Dir)
	reason, fix := e.Err.Error(), "work in a folder you can write"
	switch {
	case errors.Is(e.Err, syscall.ENOTDIR) || errors.Is(e.Err, syscall.EEXIST):
		reason = "a file named " + StateDir + " is in the way"
		fix = "rename or remove that file, or work in another folder"
	case errors.Is(e.Err, syscall.EROFS):
		reason = "the file system is read-only"
		fix = "work in a folder on a writable file system"
	case errors.Is(e.Err, fs.ErrPermission):
		reason = "permission denied"
		fix = "make " + root + " writable for you, or work in a folder you can write"
	}
	return fmt.Sprintf("cannot create %s, where Pixir keeps this workspace's session Logs: %s; %s (pixir run --cwd DIR, or open another folder in the editor)", e.Dir, reason, fix)
}

// fileError says that a file in the state folder cannot be written.
func (e *StateDirError) fileError() string {
	dir := filepath.Dir(e.File)
	reason, fix := e.Err.Error(), "work in a folder you can write"
	switch {
	case errors.Is(e.Err, syscall.EROFS):
		reason = "the file system is read-only"
		fix = "work in a folder on a writable file system"
	case errors.Is(e.Err, fs.ErrPermission):
		reason = "permission denied"
		fix = "make " + dir + " and its files writable for you (another user made them, as a pixir run under sudo does), or work in a folder you can write"
	}
	msg := fmt.Sprintf("cannot write %s, where Pixir keeps this workspace's session Logs: %s; %s (pixir run --cwd DIR, or open another folder in the editor)",
		e.File, reason, fix)
	if e.Readable {
		msg += "; pixir inspect and pixir sessions still read what is there"
	}
	return msg
}

func (e *StateDirError) Unwrap() error { return e.Err }
