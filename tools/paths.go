package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// resolveFile is resolve for the path of a file (read, write, edit). A
// path that ends with a slash names a directory: cleaned, "notes/" would
// be the file notes, and write made a file where a folder was meant.
func resolveFile(env Env, path string) (target, *Failure) {
	if strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator)) {
		return target{}, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"%s ends with a slash, so it names a directory, not a file; name a file in it (%sNAME), or list it with glob", path, path)}
	}
	return resolve(env, path)
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

// fileCall presents a call that changes one file: "Write src/a.go", with
// the file as its location.
func fileCall(verb, path string) Presentation {
	p := shown(path)
	if p == "" {
		return Presentation{}
	}
	return Presentation{Title: verb + " " + p, Locations: []Location{{Path: p}}}
}

// fileFailure explains a failed filesystem call on the file the model
// named; hint says what to do when the file does not exist.
func fileFailure(err error, rel, hint string) *Failure {
	switch {
	case errors.Is(err, ErrIsDir):
		return &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf("%s is a directory, not a file; list it with glob or bash (ls) instead", rel)}
	case errors.Is(err, ErrNotRegular):
		return &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf("%s is not a regular file; only plain files can be read or edited", rel)}
	case errors.Is(err, syscall.ENOTDIR):
		return &Failure{Kind: ErrNotFound, Message: fmt.Sprintf("a parent of %s is a file, not a directory; %s", rel, hint)}
	case errors.Is(err, fs.ErrNotExist):
		return &Failure{Kind: ErrNotFound, Message: fmt.Sprintf("there is no file at %s; %s", rel, hint)}
	case errors.Is(err, ErrEditorRefused):
		return &Failure{Kind: ErrPermissionDenied, Message: fmt.Sprintf("%s: %v; this is the editor's answer, not a missing file: check the path, or ask the user why the editor will not give it",
			rel, strings.TrimSuffix(err.Error(), ": "+ErrEditorRefused.Error()))}
	case errors.Is(err, fs.ErrPermission):
		return &Failure{Kind: ErrPermissionDenied, Message: fmt.Sprintf("the filesystem denies access to %s; choose another file or check its permissions with bash (ls -l)", rel)}
	}
	return &Failure{Kind: ErrInternal, Message: fmt.Sprintf("%s: %v", rel, err)}
}

// editLimit bounds the files write and edit read whole (for the diff and
// the replacement).
const editLimit = 64 << 20

// files is env.Files; the runtime always sets it. Without it no file can be
// touched safely, so nothing is.
func files(env Env) (Files, *Failure) {
	if env.Files == nil {
		return nil, &Failure{Kind: ErrInternal, Message: "this session has no file access; this is a bug in Pixir"}
	}
	return env.Files, nil
}

// openFailure explains an Open or WriteFile error: a refusal from the
// runtime or the editor keeps its kind, anything else is described.
func openFailure(err error, rel, hint string) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	return fileFailure(err, rel, hint)
}

// currentText is the content of the file at t, or nil when there is none
// yet, and what the file read was (its Stat, for a Replacer), nil when the
// reader does not say (the editor's). Anything there that is not a plain
// file is refused.
func currentText(ctx context.Context, env Env, t target) (*string, fs.FileInfo, *Failure) {
	fsys, f := files(env)
	if f != nil {
		return nil, nil, f
	}
	r, err := fsys.Open(ctx, t.abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, openFailure(err, t.rel, "check the path")
	}
	defer r.Close()
	var info fs.FileInfo
	if st, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		info, _ = st.Stat()
	}
	b, err := io.ReadAll(io.LimitReader(r, editLimit+1))
	if err != nil {
		return nil, nil, fileFailure(err, t.rel, "check the path")
	}
	if len(b) > editLimit {
		return nil, nil, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf("%s is larger than %d MiB, too large to rewrite in one call; change it with bash (sed, patch) instead", t.rel, editLimit>>20)}
	}
	s := string(b)
	return &s, info, nil
}

// testBeforeReplace, set by tests only, runs between edit's read of a file
// and its write: where a save by the user would fall.
var testBeforeReplace func(path string)

// replaceText writes text over the file at t that was read as old (info
// its Stat, when known) if it is still so: through a Replacer, which
// checks just before it replaces the file, or else by reading the file
// again just before the write. A file changed meanwhile is left as it is.
func replaceText(ctx context.Context, env Env, t target, text, old string, info fs.FileInfo) *Failure {
	fsys, f := files(env)
	if f != nil {
		return f
	}
	if testBeforeReplace != nil {
		testBeforeReplace(t.abs)
	}
	err := errors.ErrUnsupported
	if r, ok := fsys.(Replacer); ok && info != nil {
		err = r.ReplaceFile(ctx, t.abs, []byte(text), info)
	}
	if errors.Is(err, errors.ErrUnsupported) {
		now, _, f := currentText(ctx, env, t)
		switch {
		case f != nil:
			return f
		case now == nil || *now != old:
			err = ErrChanged
		default:
			err = fsys.WriteFile(ctx, t.abs, []byte(text))
		}
	}
	if errors.Is(err, ErrChanged) {
		return &Failure{Kind: ErrConflict, Message: fmt.Sprintf(
			"%s changed while the edit was being made (it was saved, or changed by someone else, after the edit read it), so it was left as it is; run the edit again: it applies to the file as it is now",
			t.rel)}
	}
	if err != nil {
		return openFailure(err, t.rel, "check the path")
	}
	return nil
}

// writeText writes the whole file through env.Files.
func writeText(ctx context.Context, env Env, t target, text string) *Failure {
	fsys, f := files(env)
	if f != nil {
		return f
	}
	if err := fsys.WriteFile(ctx, t.abs, []byte(text)); err != nil {
		return openFailure(err, t.rel, "check the path")
	}
	return nil
}
