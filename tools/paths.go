package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
)

// target is a path argument after workspace confinement: abs is for the
// filesystem and the editor, rel is what the model and the titles show.
type target struct {
	abs, rel string
}

// resolve confines a path argument through env.Workspace. Confinement is
// the runtime's job; a refusal from it reaches the model with its kind.
func resolve(env Env, path string) (target, *Failure) {
	if env.Workspace == nil {
		return target{}, &Failure{Kind: ErrInternal, Message: "this session has no workspace, so no path can be used; this is a bug in Pixir"}
	}
	abs, err := env.Workspace.Resolve(path)
	if err != nil {
		return target{}, AsFailure(err)
	}
	return target{abs: abs, rel: relative(env.Workspace.Root(), abs)}, nil
}

// relative shows abs relative to root when it is inside it.
func relative(root, abs string) string {
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return abs
	}
	return rel
}

// shown is a path argument as a title shows it before it is resolved.
func shown(path string) string {
	if path == "" {
		return ""
	}
	return filepath.Clean(path)
}

// fileFailure explains a failed filesystem call on the file the model
// named; hint says what to do when the file does not exist.
func fileFailure(err error, rel, hint string) *Failure {
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return &Failure{Kind: ErrNotFound, Message: fmt.Sprintf("a parent of %s is a file, not a directory; %s", rel, hint)}
	case errors.Is(err, fs.ErrNotExist):
		return &Failure{Kind: ErrNotFound, Message: fmt.Sprintf("there is no file at %s; %s", rel, hint)}
	case errors.Is(err, fs.ErrPermission):
		return &Failure{Kind: ErrPermissionDenied, Message: fmt.Sprintf("the filesystem denies access to %s; choose another file or check its permissions with bash (ls -l)", rel)}
	}
	return &Failure{Kind: ErrInternal, Message: fmt.Sprintf("%s: %v", rel, err)}
}

// regularFile checks that a path the model wants to read or change is a
// plain file: reading a FIFO or a device would block or never end.
func regularFile(info fs.FileInfo, rel string) *Failure {
	switch {
	case info.IsDir():
		return &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf("%s is a directory, not a file; list it with bash (ls) instead", rel)}
	case !info.Mode().IsRegular():
		return &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf("%s is not a regular file (%s); only plain files can be read or edited", rel, info.Mode().Type())}
	}
	return nil
}
