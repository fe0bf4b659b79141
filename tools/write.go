package tools

import (
	"context"
	_ "embed"
	"errors"
	"io"
	"io/fs"
	"syscall"
)

//go:embed write.md
var writeDescription string

// WriteArgs are the arguments of write.
type WriteArgs struct {
	Path    string `json:"path" jsonschema_description:"File to write, relative to the workspace root. Parent directories are created."`
	Content string `json:"content" jsonschema_description:"The complete new content of the file."`
}

// WriteOutput is what write returns.
type WriteOutput struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created"`
}

// WriteTool creates or overwrites a whole file.
func WriteTool() Tool {
	return Define(Spec[WriteArgs]{
		Name:        "write",
		Description: writeDescription,
		Posture:     PostureMutation,
		Kind:        KindEdit,
		Describe:    describeWrite,
		Run:         runWrite,
	})
}

func describeWrite(a WriteArgs) Presentation { return fileCall("Write", a.Path) }

func runWrite(ctx context.Context, env Env, a WriteArgs, dryRun bool) Result {
	t, f := resolveFile(env, a.Path)
	if f != nil {
		return Failed(f)
	}
	old, known, f := textBeforeWrite(ctx, env, t)
	if f != nil {
		return Failed(f)
	}
	diff := Diff{Path: t.abs, OldText: old, NewText: a.Content}
	var res Result
	switch {
	case dryRun && !known:
		res = Preview("would write %s (%d bytes)", t.rel, len(a.Content))
	case dryRun && old == nil:
		res = Preview("would create %s (%d bytes)", t.rel, len(a.Content))
	case dryRun:
		res = Preview("would overwrite %s (%d bytes, was %d)", t.rel, len(a.Content), len(*old))
	default:
		if f := writeText(ctx, env, t, a.Content); f != nil {
			return Failed(f)
		}
		res = OK(WriteOutput{Path: t.rel, Bytes: len(a.Content), Created: known && old == nil})
	}
	if known {
		res.Diffs = []Diff{diff}
	}
	res.Locations = []Location{{Path: t.abs}}
	return res
}

// textBeforeWrite is the file's text before a write, for its diff: nil
// when there is no file yet. The write replaces the whole file, so a text
// that cannot be read (an editor whose fs/read_text_file fails, a file too
// large to show) does not stop it: known is then false, and no diff is
// shown. What would make the write fail too (a directory there, a path
// outside the workspace) fails it now, with the reason.
func textBeforeWrite(ctx context.Context, env Env, t target) (old *string, known bool, f *Failure) {
	fsys, f := files(env)
	if f != nil {
		return nil, false, f
	}
	r, err := fsys.Open(ctx, t.abs)
	var failure *Failure
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, true, nil
	case errors.Is(err, ErrIsDir), errors.Is(err, ErrNotRegular), errors.Is(err, syscall.ENOTDIR):
		return nil, false, fileFailure(err, t.rel, "check the path")
	case errors.As(err, &failure) && failure.Kind != ErrInternal:
		return nil, false, failure
	case err != nil:
		return nil, false, nil
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, editLimit+1))
	if err != nil || len(b) > editLimit {
		return nil, false, nil
	}
	text := string(b)
	return &text, true, nil
}
