package tools

import (
	"context"
	_ "embed"
	"fmt"
)

//go:embed glob.md
var globDescription string

const (
	globDefaultResults = 200
	globMaxResults     = 2000
)

// GlobArgs are the arguments of glob.
type GlobArgs struct {
	Pattern    string `json:"pattern" jsonschema:"minLength=1" jsonschema_description:"Glob matched against file paths relative to path: **/*.go, src/**/*.{ts,tsx}, *_test.go (no slash: any depth), /*.md (only directly in path)."`
	Path       string `json:"path,omitempty" jsonschema_description:"Directory to search, relative to the workspace root. Default: the whole workspace."`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"minimum=1,maximum=2000" jsonschema_description:"Most paths to list. Default 200. Every match is still counted."`
}

// GlobOutput is what glob returns.
type GlobOutput struct {
	// Files are relative to the workspace root, in byte order.
	Files []string `json:"files"`
	// Total counts every matching file, listed or not.
	Total int `json:"total"`
	// Omitted is the number of matching files not listed.
	Omitted int `json:"omitted"`
	// Truncated, set when files were left out, says how many and how to
	// see them.
	Truncated string `json:"truncated,omitempty"`
	// Unreadable, set when folders could not be read for want of
	// permission, names them: the files in them are not listed.
	Unreadable string `json:"unreadable,omitempty"`
}

// GlobTool lists the files whose paths match a glob.
func GlobTool() Tool {
	return Define(Spec[GlobArgs]{
		Name:        "glob",
		Description: globDescription,
		Posture:     PostureRead,
		Kind:        KindSearch,
		Describe:    describeGlob,
		Run:         runGlob,
	})
}

func describeGlob(a GlobArgs) Presentation {
	if a.Pattern == "" {
		return Presentation{}
	}
	p := Presentation{Title: "Glob " + shorten(a.Pattern, patternRunes)}
	if where := shown(a.Path); where != "" {
		p.Title += " in " + where
		p.Locations = []Location{{Path: where}}
	}
	return p
}

func runGlob(ctx context.Context, env Env, a GlobArgs, dryRun bool) Result {
	w, t, f := openWalk(env, a.Path)
	if f != nil {
		return Failed(f)
	}
	defer w.Close()
	pattern, f := absolutePattern(a.Pattern, "pattern", t.abs, env.Workspace.Root())
	if f != nil {
		return Failed(f)
	}
	filter, f := newPathFilter(pattern, "pattern")
	if f != nil {
		return Failed(f)
	}
	if !w.startIsDir {
		return Fail(ErrInvalidArgs, "%s is a file, not a directory; give the directory to list as path, or read the file with read", t.rel)
	}
	if dryRun {
		return Preview("would list the files under %s that match %s", searchedPlace(t.rel), a.Pattern)
	}
	limit := globDefaultResults
	if a.MaxResults > 0 {
		limit = a.MaxResults
	}
	out := GlobOutput{Files: []string{}}
	err := w.run(ctx, func(file walkedFile) error {
		if filter.match(w.sub(file.rel)) {
			out.Total++
			if len(out.Files) < limit {
				out.Files = append(out.Files, file.rel)
			}
		}
		return nil
	})
	if err != nil {
		return Failed(AsFailure(err))
	}
	out.Unreadable = w.unreadableNote()
	out.Omitted = out.Total - len(out.Files)
	if out.Omitted > 0 {
		out.Truncated = fmt.Sprintf("[… %d of %d matching files not listed; narrow path or pattern, or raise max_results (at most %d)]",
			out.Omitted, out.Total, globMaxResults)
	}
	return OK(out)
}
