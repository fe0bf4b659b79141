package tools

import (
	"context"
	_ "embed"
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
	t, f := resolve(env, a.Path)
	if f != nil {
		return Failed(f)
	}
	old, f := currentText(ctx, env, t)
	if f != nil {
		return Failed(f)
	}
	diff := Diff{Path: t.abs, OldText: old, NewText: a.Content}
	var res Result
	switch {
	case dryRun && old == nil:
		res = Preview("would create %s (%d bytes)", t.rel, len(a.Content))
	case dryRun:
		res = Preview("would overwrite %s (%d bytes, was %d)", t.rel, len(a.Content), len(*old))
	default:
		if f := writeText(ctx, env, t, a.Content); f != nil {
			return Failed(f)
		}
		res = OK(WriteOutput{Path: t.rel, Bytes: len(a.Content), Created: old == nil})
	}
	res.Diffs = []Diff{diff}
	res.Locations = []Location{{Path: t.abs}}
	return res
}
