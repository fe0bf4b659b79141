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
	before, f := textBeforeWrite(ctx, env, t)
	if f != nil {
		return Failed(f)
	}
	if before.exists {
		if f := staleWrite(env, t, before.seen); f != nil {
			return Failed(f)
		}
	}
	old, known := before.text, before.known
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
		res.Seen = seenText(t.abs, a.Content)
	}
	if known {
		res.Diffs = []Diff{diff}
	}
	res.Locations = []Location{{Path: t.abs}}
	return res
}

// beforeWrite is what a write finds at its path.
type beforeWrite struct {
	// text is the file's text, for the diff: nil when there is no file
	// yet (known) or it could not be read whole (not known).
	text  *string
	known bool
	// exists says there is a file: one was opened.
	exists bool
	// seen is the file's content as a Seen, nil when it was not hashed
	// (a failed read, a file too large with nothing to check it against).
	seen *Seen
}

// textBeforeWrite is the file's text before a write, for its diff, and
// its hash, to check it against what the model has seen. The write
// replaces the whole file, so a text that cannot be read (an editor whose
// fs/read_text_file fails, a file too large to show) does not stop it:
// known is then false, and no diff is shown. What would make the write
// fail too (a directory there, a path outside the workspace) fails it now,
// with the reason. A file larger than editLimit is read on to its end for
// its hash only when a Seen of it is there to compare it with.
func textBeforeWrite(ctx context.Context, env Env, t target) (beforeWrite, *Failure) {
	fsys, f := files(env)
	if f != nil {
		return beforeWrite{}, f
	}
	r, err := fsys.Open(ctx, t.abs)
	var failure *Failure
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return beforeWrite{known: true}, nil
	case errors.Is(err, ErrIsDir), errors.Is(err, ErrNotRegular), errors.Is(err, syscall.ENOTDIR):
		return beforeWrite{}, fileFailure(err, t.rel, "check the path")
	case errors.As(err, &failure) && failure.Kind != ErrInternal:
		return beforeWrite{}, failure
	case err != nil:
		return beforeWrite{}, nil
	}
	defer r.Close()
	before := beforeWrite{exists: true}
	h := newSeenHash()
	b, err := io.ReadAll(io.TeeReader(io.LimitReader(r, editLimit+1), h))
	if err != nil {
		return before, nil
	}
	if len(b) > editLimit {
		if was, ok := seenFile(env, t.abs); ok && was.SHA256 != "" {
			if _, err := io.Copy(h, r); err == nil {
				before.seen = h.seen(t.abs)
			}
		}
		return before, nil
	}
	text := string(b)
	before.text, before.known, before.seen = &text, true, h.seen(t.abs)
	return before, nil
}

// seenFile is what the session's model has seen of the file at path.
func seenFile(env Env, path string) (Seen, bool) {
	if env.Seen == nil {
		return Seen{}, false
	}
	return env.Seen.SeenFile(path)
}
