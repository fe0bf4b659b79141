package tools

import (
	"context"
	_ "embed"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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

func describeWrite(a WriteArgs) Presentation {
	p := shown(a.Path)
	if p == "" {
		return Presentation{}
	}
	return Presentation{Title: "Write " + p, Locations: []Location{{Path: p}}}
}

func runWrite(_ context.Context, env Env, a WriteArgs, dryRun bool) Result {
	t, f := resolve(env, a.Path)
	if f != nil {
		return Failed(f)
	}
	old, f := currentText(t)
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
		if err := os.MkdirAll(filepath.Dir(t.abs), 0o755); err != nil {
			return Failed(fileFailure(err, filepath.Dir(t.rel), "check the path"))
		}
		// WriteFile keeps the mode of an existing file; 0o644 is for new ones.
		if err := os.WriteFile(t.abs, []byte(a.Content), 0o644); err != nil {
			return Failed(fileFailure(err, t.rel, "check the path"))
		}
		res = OK(WriteOutput{Path: t.rel, Bytes: len(a.Content), Created: old == nil})
	}
	res.Diffs = []Diff{diff}
	res.Locations = []Location{{Path: t.abs}}
	return res
}

// currentText is the content of the file at t, or nil when there is none
// yet. Anything there that is not a plain file is refused.
func currentText(t target) (*string, *Failure) {
	info, err := os.Stat(t.abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fileFailure(err, t.rel, "check the path")
	}
	if f := regularFile(info, t.rel); f != nil {
		return nil, f
	}
	b, err := os.ReadFile(t.abs)
	if err != nil {
		return nil, fileFailure(err, t.rel, "check the path")
	}
	s := string(b)
	return &s, nil
}
