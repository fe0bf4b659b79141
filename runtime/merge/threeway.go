package merge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/tools"
)

// Labels of the three sides in conflict markers.
const (
	labelWorkspace = "workspace"
	labelBase      = "base"
)

// threeWay is the result of merging one text file.
type threeWay struct {
	merged    []byte // clean, or with conflict markers
	conflicts []tools.ConflictHunk
}

// errNoGit says the three-way merge could not be run.
var errNoGit = errors.New("git, which Pixir merges files with, is not installed (or not on PATH)")

// mergeText merges ours and theirs against base with `git merge-file`
// (diff3-style markers, so a person resolving a conflict sees the base
// too), in tmp. label names the child's side.
func mergeText(ctx context.Context, tmp string, ours, base, theirs []byte, label string) (threeWay, error) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return threeWay{}, errNoGit
	}
	dir, err := os.MkdirTemp(tmp, threeWayPrefix+"*")
	if err != nil {
		return threeWay{}, err
	}
	defer os.RemoveAll(dir)
	names := [3]string{"workspace", "base", "child"}
	for i, data := range [3][]byte{ours, base, theirs} {
		if err := os.WriteFile(filepath.Join(dir, names[i]), data, 0o600); err != nil {
			return threeWay{}, err
		}
	}
	size := markerSize(ours, base, theirs)
	cmd := exec.CommandContext(ctx, gitBin, "merge-file", "-p", "--diff3", fmt.Sprintf("--marker-size=%d", size),
		"-L", labelWorkspace, "-L", labelBase, "-L", label, names[0], names[1], names[2])
	cmd.Dir = dir
	cmd.Env = gitEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return threeWay{merged: out.Bytes()}, nil
	case errors.As(err, &exit) && exit.ExitCode() > 0 && exit.ExitCode() < 128:
		// The exit code counts the conflicts.
		hunks := parseConflicts(out.Bytes(), size)
		if len(hunks) == 0 {
			return threeWay{}, fmt.Errorf("git merge-file reported %s that its output does not show", plural.Of(exit.ExitCode(), "conflict", "conflicts"))
		}
		return threeWay{merged: out.Bytes(), conflicts: hunks}, nil
	}
	return threeWay{}, fmt.Errorf("git merge-file: %w: %s", err, strings.TrimSpace(errb.String()))
}

// gitEnv is Pixir's environment without the GIT_ variables that could
// point git elsewhere.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1")
}

// markerSize is the shortest conflict marker (7, as git's, then longer)
// that no line of the three versions starts with, so the markers in the
// result are unambiguous.
func markerSize(texts ...[]byte) int {
	for size := 7; ; size += 4 {
		clash := false
		for _, t := range texts {
			for _, c := range []byte{'<', '>', '=', '|'} {
				m := append([]byte{'\n'}, bytes.Repeat([]byte{c}, size)...)
				if bytes.HasPrefix(t, m[1:]) || bytes.Contains(t, m) {
					clash = true
				}
			}
		}
		if !clash {
			return size
		}
	}
}

// hunkTextLimit bounds each side's text in a reported hunk.
const hunkTextLimit = 2000

// parseConflicts finds the conflict regions of a diff3-style merge: each
// runs from a "<<<<<<< workspace" line through "||||||| base" and
// "=======" to ">>>>>>> child", markers of the given size.
func parseConflicts(merged []byte, size int) []tools.ConflictHunk {
	start := strings.Repeat("<", size) + " " + labelWorkspace
	mid := strings.Repeat("|", size) + " " + labelBase
	sep := strings.Repeat("=", size)
	end := strings.Repeat(">", size) + " "
	var hunks []tools.ConflictHunk
	lines := strings.SplitAfter(string(merged), "\n")
	var cur *tools.ConflictHunk
	var part *strings.Builder
	var ours, base, theirs strings.Builder
	for i, raw := range lines {
		line := strings.TrimRight(raw, "\n")
		switch {
		case cur == nil && line == start:
			cur = &tools.ConflictHunk{Lines: tools.LineRange{Start: i + 1}}
			ours.Reset()
			base.Reset()
			theirs.Reset()
			part = &ours
		case cur != nil && line == mid:
			part = &base
		case cur != nil && line == sep:
			part = &theirs
		case cur != nil && strings.HasPrefix(line, end):
			cur.Lines.Count = i + 2 - cur.Lines.Start
			cur.Workspace, cur.Base, cur.Child = bounded(ours.String()), bounded(base.String()), bounded(theirs.String())
			hunks = append(hunks, *cur)
			cur = nil
		case cur != nil:
			part.WriteString(raw)
		}
	}
	return hunks
}

// bounded shortens a hunk's text for a report.
func bounded(s string) string {
	if len(s) <= hunkTextLimit {
		return s
	}
	return tools.Truncate(s, hunkTextLimit)
}

// hasMarkers reports whether text still holds a conflict region a merge
// wrote: a line starting with the workspace side's marker.
func hasMarkers(text []byte) bool {
	for _, line := range bytes.Split(text, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("<<<<<<<")) && bytes.HasSuffix(bytes.TrimRight(line, "\r"), []byte(" "+labelWorkspace)) {
			return true
		}
	}
	return false
}
