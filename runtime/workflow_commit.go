package runtime

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/pixir-go/pixir/workflows"
)

// gitCommitter is workflows.Committer for a session's workspace: the
// runtime's own git, never a child's (children cannot write .git). It
// commits exactly the paths it is given, with literal pathspecs, so a
// file name cannot widen the commit and whatever else is staged or
// changed in the repository stays as it is.
type gitCommitter struct {
	root string
	mode func() Mode
}

func (c gitCommitter) Commit(ctx context.Context, req workflows.CommitRequest) (workflows.CommitReport, error) {
	rep := workflows.CommitReport{Status: workflows.NotCommitted, Message: req.Message, Files: req.Paths}
	if c.mode() == ModeReadOnly {
		rep.Reason = "the session is read_only: nothing is committed"
		return rep, nil
	}
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"--literal-pathspecs"}, args...)...)
		cmd.Dir = c.root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return strings.TrimSpace(out.String()), err
	}
	if out, err := git("rev-parse", "--show-toplevel"); err != nil {
		rep.Reason = fmt.Sprintf("the workspace is not in a git repository (%v: %s)", err, firstLineOf(out))
		return rep, nil
	}
	paths := append([]string{"--"}, req.Paths...)
	if out, err := git(append([]string{"add", "--all"}, paths...)...); err != nil {
		rep.Reason = fmt.Sprintf("git add refused (%v): %s", err, out)
		return rep, nil
	}
	// --only (implied by the paths): only these paths' contents, whatever
	// else the index holds.
	if out, err := git(append([]string{"commit", "--quiet", "--only", "-m", req.Message}, paths...)...); err != nil {
		rep.Reason = fmt.Sprintf("git commit refused (%v): %s", err, out)
		return rep, nil
	}
	hash, err := git("rev-parse", "HEAD")
	if err != nil {
		rep.Reason = fmt.Sprintf("the commit was made, but its hash could not be read (%v): %s", err, hash)
		return rep, nil
	}
	rep.Status, rep.Commit = workflows.Committed, hash
	return rep, nil
}

// firstLineOf is the first line of s.
func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
