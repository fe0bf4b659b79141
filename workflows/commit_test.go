package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

type fakeCommitter struct {
	reqs      []CommitRequest // each without its Since, which since keeps
	since     []map[string]time.Time
	preflight []PreflightRequest
	problems  []string
	refuse    string // a message whose commit git refuses
	unchanged string // a message whose files HEAD has already (committed by a run resumed)
	hashless  string // a message whose commit is made but its hash not read after it
}

func (f *fakeCommitter) Preflight(_ context.Context, req PreflightRequest) []string {
	f.preflight = append(f.preflight, req)
	return f.problems
}

func (f *fakeCommitter) Commit(_ context.Context, req CommitRequest) (CommitReport, error) {
	f.since = append(f.since, req.Since)
	req.Since = nil
	f.reqs = append(f.reqs, req)
	if req.Message == f.refuse {
		return CommitReport{Status: NotCommitted, Files: req.Paths, Reason: "git commit refused: a hook said no"}, nil
	}
	if req.Message == f.hashless { // as runtime's gitCommitter reports it (TestGitCommitterReportsACommitWhoseHashIsUnreadableAsMade)
		return CommitReport{Status: Committed, Files: req.Paths, Reason: "the commit was made, but its hash could not be read (exit status 128: fatal: bad revision); git log shows it"}, nil
	}
	if req.Message == f.unchanged {
		return CommitReport{Status: NotCommitted, Files: req.Paths, Reason: "committed already: nothing to commit", Unchanged: true}, nil
	}
	return CommitReport{Status: Committed, Commit: fmt.Sprintf("%016x", len(f.reqs)), Files: req.Paths}, nil
}

// A completed run commits exactly the files it brought into the
// workspace, never .pixir/ nor what the spec excludes; a run that is not
// completed commits nothing and says why; the Log rebuilds both.
func TestARunCommitsOnlyItsWork(t *testing.T) {
	const spec = `{"commit": {"message": "feat(GAL-1): add", "exclude": [".workflow/**"]}, "steps": [
	  {"id": "code", "task": "t", "write_set": ["src/**"], "workspace_mode": "shared"},
	  {"id": "notes", "task": "t", "write_set": [".workflow/**"], "workspace_mode": "shared"},
	  {"id": "look", "task": "t", "depends_on": ["code"]}]}`
	for _, tt := range []struct {
		name     string
		lookEnds tools.SubagentStatus
		refuse   bool
		hashless bool
		want     CommitReport
		commits  int
		status   Status
	}{
		{name: "completed", want: CommitReport{Status: Committed, Commit: "0000000000000001", Message: "feat(GAL-1): add", Files: []string{"src/a.go", "src/b.go"}}, commits: 1, status: StatusCompleted},
		{name: "partial", lookEnds: tools.SubagentFailed, want: CommitReport{Status: NotCommitted, Message: "feat(GAL-1): add", Files: []string{"src/a.go", "src/b.go"},
			Reason: "the workflow is partial, not completed: nothing is committed"}, status: StatusPartial},
		{name: "refused by git: partial, never success", refuse: true, want: CommitReport{Status: NotCommitted, Message: "feat(GAL-1): add", Files: []string{"src/a.go", "src/b.go"},
			Reason: "git commit refused: a hook said no", Missed: true}, commits: 1, status: StatusPartial},
		{name: "made, its hash unknown: completed", hashless: true, want: CommitReport{Status: Committed, Message: "feat(GAL-1): add", Files: []string{"src/a.go", "src/b.go"},
			Reason: "the commit was made, but its hash could not be read (exit status 128: fatal: bad revision); git log shows it"}, commits: 1, status: StatusCompleted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sim := newSim(func(step string) childPlan {
				switch step {
				case "code":
					return childPlan{dur: 5, changes: &tools.FileChanges{Added: []string{"src/b.go", ".pixir/sessions/x.ndjson"}, Changed: []string{"src/a.go"}}}
				case "notes":
					return childPlan{dur: 5, changes: &tools.FileChanges{Added: []string{".workflow/run-GAL-1/plan.md"}}}
				}
				return childPlan{dur: 5, status: tt.lookEnds}
			})
			fc := &fakeCommitter{}
			if tt.refuse {
				fc.refuse = "feat(GAL-1): add"
			}
			if tt.hashless {
				fc.hashless = "feat(GAL-1): add"
			}
			p, err := Prepare(mustParse(t, spec), Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
			require.NoError(t, err)
			out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-c", Now: fixedClock(), waiting: sim.waiting})
			require.Equal(t, &tt.want, out.Commit)
			require.Equal(t, tt.status, out.Status)
			require.Len(t, fc.reqs, tt.commits)
			switch {
			case tt.refuse:
				require.Contains(t, out.Output, "Not committed: git commit refused: a hook said no")
				require.Contains(t, out.Output, "PARTIAL")
			case tt.hashless:
				require.Contains(t, out.Output, "Committed (2 files): feat(GAL-1): add; its hash is unknown: the commit was made, but its hash could not be read")
				require.Empty(t, out.SafeNextActions)
			case tt.commits > 0:
				require.Equal(t, CommitRequest{Message: "feat(GAL-1): add", Paths: []string{"src/a.go", "src/b.go"}}, fc.reqs[0])
				require.Contains(t, out.Output, "Committed 000000000000 (2 files): feat(GAL-1): add")
			default:
				require.Contains(t, out.Output, "Not committed: the workflow is partial, not completed")
			}
			rebuilt := Rebuild(sim.events)
			require.Len(t, rebuilt, 1)
			want, _ := json.Marshal(out)
			got, _ := json.Marshal(rebuilt[0])
			require.JSONEq(t, string(want), string(got))
		})
	}
}

// A resumed run commits what the whole workflow brought in: the work of
// the steps it reuses from the run it resumes (which, partial, committed
// nothing) with its own.
func TestAResumedRunCommitsTheReusedWorkToo(t *testing.T) {
	const spec = `{"commit": {"message": "feat: add"}, "steps": [
	  {"id": "code", "task": "t", "write_set": ["src/**"], "workspace_mode": "shared"},
	  {"id": "look", "task": "t", "depends_on": ["code"]},
	  {"id": "docs", "task": "t", "write_set": ["docs/**"], "workspace_mode": "shared", "depends_on": ["look"]}]}`
	lookFails := true
	sim := newSim(func(step string) childPlan {
		switch {
		case step == "code":
			return childPlan{dur: 5, changes: &tools.FileChanges{Added: []string{"src/b.go"}, Changed: []string{"src/a.go"}}}
		case step == "docs":
			return childPlan{dur: 5, changes: &tools.FileChanges{Added: []string{"docs/a.md"}}}
		case step == "look" && lookFails:
			return childPlan{dur: 5, status: tools.SubagentFailed}
		}
		return childPlan{dur: 5}
	})
	fc := &fakeCommitter{}
	p, err := Prepare(mustParse(t, spec), Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
	require.NoError(t, err)
	first := p.Run(context.Background(), RunOptions{WorkflowID: "wf-1", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusPartial, first.Status)
	require.Empty(t, fc.reqs)

	lookFails = false
	w := mustParse(t, spec)
	w.ResumeFrom = "wf-1"
	p, err = Prepare(w, Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
	require.NoError(t, err)
	second := p.Run(context.Background(), RunOptions{WorkflowID: "wf-2", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusCompleted, second.Status, second.Output)
	require.Equal(t, "wf-1", second.Steps[0].ReusedFrom)
	require.Equal(t, []CommitRequest{{Message: "feat: add", Paths: []string{"docs/a.md", "src/a.go", "src/b.go"}}}, fc.reqs)
	// Each file with when the run last changed it: a reused step's work
	// when the resumed run reused it, so an edit after that is seen.
	require.Len(t, fc.since, 1)
	require.ElementsMatch(t, []string{"docs/a.md", "src/a.go", "src/b.go"}, slices.Collect(maps.Keys(fc.since[0])))
	require.False(t, fc.since[0]["docs/a.md"].Before(fc.since[0]["src/a.go"]), "docs was decided after the reused code")
}

func TestCommitIsValidated(t *testing.T) {
	_, err := Parse([]byte(`{"commit": {"message": " ", "exclude": ["../x"]}, "steps": [{"id": "a", "task": "t"}]}`))
	require.Error(t, err)
	require.Contains(t, err.Error(), "commit.message is empty")
	require.Contains(t, err.Error(), `commit.exclude[0] pattern "../x" is invalid`)
	_, err = Parse([]byte(`{"commit": {"msg": "x"}, "steps": [{"id": "a", "task": "t"}]}`))
	require.ErrorContains(t, err, `commit has unknown field "msg" (allowed: message, commits, exclude, base, requires)`)
	_, err = Parse([]byte(`{"commit": {"message": "m", "base": "-x", "requires": ["../TODO/A.md", "/etc/passwd", "TODO/*.md"]}, "steps": [{"id": "a", "task": "t"}]}`))
	require.ErrorContains(t, err, `commit.base "-x" is not a branch name`)
	require.ErrorContains(t, err, `commit.requires[0] "../TODO/A.md" is not a file path inside the workspace`)
	require.ErrorContains(t, err, `commit.requires[1] "/etc/passwd" is not a file path inside the workspace`)
	require.ErrorContains(t, err, `commit.requires[2] "TODO/*.md" is not a file path inside the workspace`)
}

// commit.requires reads as commit paths, exclude and write sets do (one
// rule): spaces at either end and a leading "./" go, a folder's trailing
// "/" stays; an empty, "." or ".." segment is refused with its location,
// as in a pattern. "TODO//GAL-1.md" and "a/../b.md" were accepted (git
// and the file system read them, but no pattern would have).
func TestCommitRequiresReadsAsPathsDo(t *testing.T) {
	w := mustParse(t, `{"commit": {"message": "m", "requires": ["./TODO/GAL-1.md", " TODO/GAL-2.md ", "././docs/", "TODO/GAL-3.md"]}, "steps": [{"id": "a", "task": "t"}]}`)
	require.Equal(t, []string{"TODO/GAL-1.md", "TODO/GAL-2.md", "docs/", "TODO/GAL-3.md"}, w.Commit.Requires)

	_, err := Parse([]byte(`{"commit": {"message": "m", "requires": ["TODO//A.md", "TODO/./A.md", "a/../b.md", " ", ".", "./", " ./TODO//", "ok.md"]}, "steps": [{"id": "a", "task": "t"}]}`))
	f := tools.AsFailure(err)
	require.Equal(t, tools.ErrInvalidArgs, f.Kind, err)
	got, values := map[string]string{}, map[string]string{}
	for _, p := range f.Details.(ValidationDetails).Problems {
		got[p.Field], values[p.Field] = p.Message, p.Value
	}
	// Each is quoted as written, and with what it read as when that
	// differs: " " was reported as "", which the spec does not hold.
	require.Equal(t, " ", values["commit.requires[3]"])
	require.Equal(t, " ./TODO//", values["commit.requires[6]"])
	const give = "; give a relative path without wildcards, e.g. TODO/GAL-1.md"
	require.Equal(t, map[string]string{
		"commit.requires[0]": `commit.requires[0] "TODO//A.md" is not a file path inside the workspace: it has an empty path segment (// or a leading / inside braces)` + give,
		"commit.requires[1]": `commit.requires[1] "TODO/./A.md" is not a file path inside the workspace: it has a . segment; write the path without it` + give,
		"commit.requires[2]": `commit.requires[2] "a/../b.md" is not a file path inside the workspace: it climbs out of the workspace with ..; paths stay inside the workspace` + give,
		"commit.requires[3]": `commit.requires[3] " " (read as "") is not a file path inside the workspace: it is empty` + give,
		"commit.requires[4]": `commit.requires[4] "." is not a file path inside the workspace: it has a . segment; write the path without it` + give,
		"commit.requires[5]": `commit.requires[5] "./" (read as "") is not a file path inside the workspace: it is empty` + give,
		"commit.requires[6]": `commit.requires[6] " ./TODO//" (read as "TODO//") is not a file path inside the workspace: it has an empty path segment (// or a leading / inside braces)` + give,
	}, got)
}

// commit.exclude reads as write sets and commits' paths do (one rule,
// normalizePatterns): a leading "./" goes, a trailing "/" is the folder's
// contents, spaces at either end go; so ".workflow/" keeps the run's
// artifacts out of the commit (it matched nothing, and they were
// committed), "./.workflow/**" is not refused for its "." segment, and
// a write set the exclude takes needs no commit.
func TestCommitExcludeReadsAsWriteSetsDo(t *testing.T) {
	for _, exclude := range []string{".workflow/**", "./.workflow/**", ".workflow/", "./.workflow/", " .workflow/** "} {
		t.Run(exclude, func(t *testing.T) {
			excl, _ := json.Marshal(exclude)
			spec := `{"commit": {"message": "feat: add", "exclude": [` + string(excl) + `]}, "steps": [
			  {"id": "code", "task": "t", "write_set": ["src/**", ".workflow/**"], "workspace_mode": "shared"}]}`
			sim := newSim(func(string) childPlan {
				return childPlan{dur: 5, changes: &tools.FileChanges{Added: []string{"src/a.go", ".workflow/run-GAL-1/plan.md"}}}
			})
			fc := &fakeCommitter{}
			w := mustParse(t, spec)
			require.Equal(t, []string{".workflow/**"}, w.Commit.Exclude)
			p, err := Prepare(w, Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
			require.NoError(t, err)
			out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-x", Now: fixedClock(), waiting: sim.waiting})
			require.Equal(t, StatusCompleted, out.Status, out.Output)
			require.Equal(t, []CommitRequest{{Message: "feat: add", Paths: []string{"src/a.go"}}}, fc.reqs, "the artifacts stay out of the commit")

			// With a list of commits, a write set only the exclude takes
			// is in no commit, rightly: nothing to refuse.
			_, err = Parse([]byte(`{"commit": {"commits": [{"message": "work", "paths": ["src/**"]}], "exclude": [` + string(excl) + `]}, "steps": [
			  {"id": "code", "task": "t", "write_set": ["src/**", ".workflow/**"], "workspace_mode": "shared"}]}`))
			require.NoError(t, err)
		})
	}
	_, err := Parse([]byte(`{"commit": {"message": "m", "exclude": ["./ok/", "x//y", " ../up "]}, "steps": [{"id": "a", "task": "t"}]}`))
	f := tools.AsFailure(err)
	require.Equal(t, tools.ErrInvalidArgs, f.Kind, err)
	got := map[string]string{}
	for _, p := range f.Details.(ValidationDetails).Problems {
		got[p.Field] = p.Message
	}
	require.Equal(t, map[string]string{
		"commit.exclude[1]": `commit.exclude[1] pattern "x//y" is invalid: it has an empty path segment (// or a leading / inside braces)`,
		"commit.exclude[2]": `commit.exclude[2] pattern "../up" is invalid: it climbs out of the workspace with ..; paths stay inside the workspace`,
	}, got)
}

// A workflow whose commit names a base or required files is checked
// before any step starts: the checks' problems stop it failed, every
// step held naming them, no child started; the Log rebuilds it.
func TestARunThatFailsItsPreflightStartsNothing(t *testing.T) {
	const spec = `{"commit": {"message": "m", "base": "main", "requires": ["TODO/GAL-1.md"]}, "steps": [
	  {"id": "code", "task": "t", "write_set": ["src/**"], "workspace_mode": "shared"},
	  {"id": "look", "task": "t", "depends_on": ["code"]}]}`
	for _, tt := range []struct {
		name     string
		problems []string
		status   Status
	}{
		{name: "sound", status: StatusCompleted},
		{name: "not sound", problems: []string{"HEAD is detached (at 0123abc); switch to a branch", "TODO/GAL-1.md does not exist"}, status: StatusFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sim := newSim(func(string) childPlan { return childPlan{dur: 5} })
			fc := &fakeCommitter{problems: tt.problems}
			p, err := Prepare(mustParse(t, spec), Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
			require.NoError(t, err)
			out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-p", Now: fixedClock(), waiting: sim.waiting})
			require.Equal(t, []PreflightRequest{{Base: "main", Files: []string{"TODO/GAL-1.md"}}}, fc.preflight)
			require.Equal(t, tt.status, out.Status, out.Output)
			rebuiltEquals(t, sim, out)
			if tt.problems == nil {
				return
			}
			require.Empty(t, sim.order, "no child started")
			why := "preflight_failed: HEAD is detached (at 0123abc); switch to a branch; TODO/GAL-1.md does not exist"
			require.Equal(t, why, out.StoppedBy)
			require.Equal(t, []string{"code", "look"}, out.HeldSteps)
			require.Contains(t, out.Output, "stopped early: "+why)
			require.Empty(t, fc.reqs, "nothing committed")
		})
	}
}

// A spec may ask for several commits (commit.commits): made in order at
// the end of a completed run, each taking the run's files its paths
// match (the one without paths the rest), each recorded with its id; a
// file no commit takes, a partial run, or a commit git refuses leave the
// later ones unmade; the Log rebuilds them all.
func TestARunMakesItsCommitsInOrderEachWithItsFiles(t *testing.T) {
	const spec = `{"commit": {"commits": [{"message": "GAL-1: the work"}, {"message": "chore(todo): GAL-1 done", "paths": ["TODO/**"]}],
	  "exclude": [".workflow/**"]}, "steps": [
	  {"id": "start", "task": "t", "write_set": ["TODO/**"], "workspace_mode": "shared"},
	  {"id": "code", "task": "t", "write_set": ["src/**", ".workflow/**"], "workspace_mode": "shared", "depends_on": ["start"]},
	  {"id": "finish", "task": "t", "write_set": ["TODO/**"], "workspace_mode": "shared", "depends_on": ["code"]}]}`
	work := CommitRequest{Message: "GAL-1: the work", Paths: []string{"src/a.go", "src/b.go"}}
	todo := CommitRequest{Message: "chore(todo): GAL-1 done", Paths: []string{"TODO/GAL-1-1.md", "TODO/GAL-1.md"}}
	for _, tt := range []struct {
		name       string
		spec       string
		finishEnds tools.SubagentStatus
		refuse     string
		unchanged  string
		hashless   string
		reqs       []CommitRequest
		want       []CommitReport
		output     []string
		missed     bool // a commit of a completed run not made: the run is partial
	}{{
		name: "completed: the work, then TODO/",
		reqs: []CommitRequest{work, todo},
		want: []CommitReport{
			{Status: Committed, Commit: "0000000000000001", Message: work.Message, Files: work.Paths},
			{Status: Committed, Commit: "0000000000000002", Message: todo.Message, Files: todo.Paths},
		},
		output: []string{"Committed 000000000000 (2 files): GAL-1: the work\nCommitted 000000000000 (2 files): chore(todo): GAL-1 done\n"},
	}, {
		name: "partial: nothing", finishEnds: tools.SubagentFailed,
		want: []CommitReport{
			{Status: NotCommitted, Message: work.Message, Files: work.Paths, Reason: "the workflow is partial, not completed: nothing is committed"},
			{Status: NotCommitted, Message: todo.Message, Files: []string{"TODO/GAL-1.md"}, Reason: "the workflow is partial, not completed: nothing is committed"},
		},
		output: []string{"Not committed (GAL-1: the work): the workflow is partial, not completed: nothing is committed\nNot committed (chore(todo): GAL-1 done): the workflow is partial",
			// What the run left in the workspace: its ready writers' work
			// and the failed finish's changes.
			"\nIn the workspace, not committed (4 files the run changed): TODO/GAL-1-1.md, TODO/GAL-1.md, src/a.go, src/b.go\n"},
	}, {
		name: "the first commit refused: the second is not made", refuse: work.Message,
		reqs: []CommitRequest{work},
		want: []CommitReport{
			{Status: NotCommitted, Message: work.Message, Files: work.Paths, Reason: "git commit refused: a hook said no", Missed: true},
			{Status: NotCommitted, Message: todo.Message, Files: todo.Paths, Reason: "not made: the commit before it (GAL-1: the work) was not made", Missed: true},
		},
		output: []string{"\nIn the workspace, not committed (4 files the run changed): TODO/GAL-1-1.md, TODO/GAL-1.md, src/a.go, src/b.go\n"},
		missed: true,
	}, {
		name: "the first committed already (a run resumed after a kill between the two): the second is made", unchanged: work.Message,
		reqs: []CommitRequest{work, todo},
		want: []CommitReport{
			{Status: NotCommitted, Message: work.Message, Files: work.Paths, Reason: "committed already: nothing to commit", Unchanged: true},
			{Status: Committed, Commit: "0000000000000002", Message: todo.Message, Files: todo.Paths},
		},
	}, {
		// The committer is the port the runtime's git stands behind; that
		// git reports a commit it made whose hash it could not read this
		// way is shown against a real repository in runtime's tests.
		name: "the first made, its hash unknown: made, the second is made", hashless: work.Message,
		reqs: []CommitRequest{work, todo},
		want: []CommitReport{
			{Status: Committed, Message: work.Message, Files: work.Paths, Reason: "the commit was made, but its hash could not be read (exit status 128: fatal: bad revision); git log shows it"},
			{Status: Committed, Commit: "0000000000000002", Message: todo.Message, Files: todo.Paths},
		},
		output: []string{"Committed (2 files): GAL-1: the work; its hash is unknown: the commit was made, but its hash could not be read (exit status 128: fatal: bad revision); git log shows it\nCommitted 000000000000 (2 files): chore(todo): GAL-1 done\n"},
	}, {
		name: "a file no commit takes: nothing is committed",
		spec: strings.Replace(spec, `{"message": "GAL-1: the work"}`, `{"message": "GAL-1: the work", "paths": ["src/a.go"]}`, 1),
		want: []CommitReport{
			{Status: NotCommitted, Message: work.Message, Files: []string{"src/a.go"}, Reason: "no commit takes src/b.go: nothing is committed; add it to a commit's paths (or leave out the paths of one commit so it takes the rest), or to exclude", Missed: true},
			{Status: NotCommitted, Message: todo.Message, Files: todo.Paths, Reason: "no commit takes src/b.go: nothing is committed; add it to a commit's paths (or leave out the paths of one commit so it takes the rest), or to exclude", Missed: true},
		},
		missed: true,
	}, {
		name: "a directory path takes what is beneath it",
		spec: strings.Replace(spec, `"TODO/**"]}],`, `"./TODO/"]}],`, 1),
		reqs: []CommitRequest{work, todo},
		want: []CommitReport{
			{Status: Committed, Commit: "0000000000000001", Message: work.Message, Files: work.Paths},
			{Status: Committed, Commit: "0000000000000002", Message: todo.Message, Files: todo.Paths},
		},
	}, {
		name: "a commit no file is for: the others are made",
		spec: strings.Replace(spec, `"TODO/**"]}],`, `"TODO/**"]}, {"message": "docs", "paths": ["docs/**"]}],`, 1),
		reqs: []CommitRequest{work, todo},
		want: []CommitReport{
			{Status: Committed, Commit: "0000000000000001", Message: work.Message, Files: work.Paths},
			{Status: Committed, Commit: "0000000000000002", Message: todo.Message, Files: todo.Paths},
			{Status: NotCommitted, Message: "docs", Files: []string{}, Reason: "the run brought no file this commit takes: nothing to commit"},
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			sim := newSim(func(step string) childPlan {
				switch step {
				case "start":
					return childPlan{dur: 5, changes: &tools.FileChanges{Changed: []string{"TODO/GAL-1.md"}}}
				case "code":
					return childPlan{dur: 5, changes: &tools.FileChanges{Added: []string{"src/b.go", ".workflow/run-GAL-1/plan.md"}, Changed: []string{"src/a.go"}}}
				}
				return childPlan{dur: 5, status: tt.finishEnds, changes: &tools.FileChanges{Added: []string{"TODO/GAL-1-1.md"}, Changed: []string{"TODO/GAL-1.md"}}}
			})
			fc := &fakeCommitter{refuse: tt.refuse, unchanged: tt.unchanged, hashless: tt.hashless}
			w := spec
			if tt.spec != "" {
				w = tt.spec
			}
			p, err := Prepare(mustParse(t, w), Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
			require.NoError(t, err)
			out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-c", Now: fixedClock(), waiting: sim.waiting})
			require.Equal(t, tt.reqs, fc.reqs)
			require.Nil(t, out.Commit, "several commits are reported in commits")
			require.Equal(t, tt.want, out.Commits)
			if !tt.missed && tt.finishEnds == "" {
				require.NotContains(t, out.Output, "In the workspace, not committed", "every file committed")
			}
			switch {
			case tt.finishEnds != "":
				require.Equal(t, StatusPartial, out.Status)
			case tt.missed:
				require.Equal(t, StatusPartial, out.Status, "every step is done, but not the commits asked for: never success")
				require.Equal(t, []string{ActionMakeMissedCommits, "abort"}, nextActionNames(out.SafeNextActions))
				require.Equal(t, map[string]string{"resume_from": "wf-c"}, out.SafeNextActions[0].Args)
			default:
				require.Equal(t, StatusCompleted, out.Status)
			}
			for _, o := range tt.output {
				require.Contains(t, out.Output, o)
			}
			var recorded []CommitReport
			for _, ev := range sim.events {
				if ev.Kind == EventCommitted {
					recorded = append(recorded, *ev.Commit)
				}
			}
			require.Equal(t, tt.want, recorded, "each commit is recorded in the Log")
			rebuilt := Rebuild(sim.events)
			require.Len(t, rebuilt, 1)
			want, _ := json.Marshal(out)
			got, _ := json.Marshal(rebuilt[0])
			require.JSONEq(t, string(want), string(got))
		})
	}
}

// A list of commits is checked before the run starts, every problem at
// once with its location: an invalid_args error, nothing run.
func TestSeveralCommitsAreValidatedBeforeStart(t *testing.T) {
	const step = `"steps": [{"id": "a", "task": "t"}]`
	for _, tt := range []struct {
		name string
		spec string
		want map[string]string // field: message
	}{{
		name: "both message and commits",
		spec: `{"commit": {"message": "m", "commits": [{"message": "a"}]}, ` + step + `}`,
		want: map[string]string{"commit.commits": "commit has both message and commits; give message for one commit, or commits (each with its message) for several"},
	}, {
		name: "an empty list",
		spec: `{"commit": {"commits": []}, ` + step + `}`,
		want: map[string]string{"commit.commits": "commit.commits is empty; give at least one {message, paths}, or use commit.message"},
	}, {
		name: "every problem at once",
		spec: `{"commit": {"commits": [{"message": "a"}, {"message": " "}, {"message": "c", "paths": []}, {"message": "d", "paths": ["src/**", "[x"]},
		  {"message": "e", "paths": ["src/a/*.go"]}, {"message": "f", "paths": ["TODO/**", "../up"]}]}, ` + step + `}`,
		want: map[string]string{
			"commit.commits[1].message":  `commit.commits[1].message is empty; give the commit message`,
			"commit.commits[1].paths":    `commit.commits[1].paths is missing, as is commit.commits[0].paths; only one commit may take the rest: give the others their paths`,
			"commit.commits[2].paths":    `commit.commits[2].paths is empty; give the patterns of the files it takes, or leave paths out to take the rest`,
			"commit.commits[3].paths[1]": `commit.commits[3].paths[1] pattern "[x" is invalid`,
			"commit.commits[4].paths":    `commit.commits[4].paths "src/a/*.go" and commit.commits[3].paths "src/**" can match the same file; every file goes in exactly one commit: make the patterns disjoint`,
			"commit.commits[5].paths[1]": `commit.commits[5].paths[1] pattern "../up" is invalid: it climbs out of the workspace`,
		},
	}, {
		name: "a write set no commit takes",
		spec: `{"commit": {"commits": [{"message": "work", "paths": ["src/**"]}, {"message": "todo", "paths": ["TODO/**"]}], "exclude": [".workflow/**"]}, "steps": [
		  {"id": "a", "task": "t", "write_set": ["src/**", ".workflow/**", "docs/*.md"]}, {"id": "b", "task": "t", "write_set": ["**/*.md"]}, {"id": "c", "task": "t"}]}`,
		want: map[string]string{"write_set[2]": `steps[0] "a": write_set "docs/*.md" meets no commit's paths: a file it writes would be in no commit; add it to a commit's paths, leave out the paths of one commit so it takes the rest, or add it to commit.exclude`},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.spec))
			f := tools.AsFailure(err)
			require.Equal(t, tools.ErrInvalidArgs, f.Kind, err)
			got := map[string]string{}
			for _, p := range f.Details.(ValidationDetails).Problems {
				got[p.Field] = p.Message
			}
			require.Len(t, got, len(tt.want), err.Error())
			for field, msg := range tt.want {
				require.Contains(t, got[field], msg, field)
			}
		})
	}
	_, err := Parse([]byte(`{"commit": {"commits": [{"message": "a", "path": ["x"]}]}, "steps": [{"id": "a", "task": "t"}]}`))
	require.ErrorContains(t, err, `a commit has unknown field "path" (allowed: message, paths)`)
	_, err = Parse([]byte(`{"commit": {"commits": [{"message": "a"}, {"message": "b", "paths": ["TODO/**"]}]}, "steps": [{"id": "a", "task": "t", "write_set": ["docs/**"]}]}`))
	require.NoError(t, err, "one commit without paths takes the rest")

	// An isolated writer whose work is never merged brings no file into
	// the workspace: no commit needs to take its write set.
	const commits = `"commit": {"commits": [{"message": "work", "paths": ["src/**"]}, {"message": "todo", "paths": ["TODO/**"]}]}`
	_, err = Parse([]byte(`{` + commits + `, "steps": [{"id": "a", "task": "t", "write_set": ["scratch/**"], "merge": "never"},
	  {"id": "b", "task": "t", "write_set": ["notes/**"], "merge": "manual"}]}`))
	require.NoError(t, err)
	_, err = Parse([]byte(`{` + commits + `, "merge": "manual", "steps": [{"id": "a", "task": "t", "write_set": ["scratch/**"]}]}`))
	require.NoError(t, err)
	_, err = Parse([]byte(`{` + commits + `, "merge": "never", "steps": [{"id": "a", "task": "t", "write_set": ["scratch/**"], "merge": "on_ready"}]}`))
	require.ErrorContains(t, err, `write_set "scratch/**" meets no commit's paths`, "merged on ready: its files reach the workspace")
	_, err = Parse([]byte(`{` + commits + `, "steps": [{"id": "a", "task": "t", "write_set": ["scratch/**"], "workspace_mode": "shared"}]}`))
	require.ErrorContains(t, err, `write_set "scratch/**" meets no commit's paths`, "a shared writer writes the workspace itself")
}

func nextActionNames(acts []NextAction) []string {
	names := make([]string, len(acts))
	for i, a := range acts {
		names[i] = a.Action
	}
	return names
}

// The record of the user's work a run's commit takes its part from holds
// only what a commit of the run could take: not .pixir/, nor what the
// spec excludes (the runtime neither reads nor copies the rest).
func TestTheRecordBeforeARunReachesWhatItsCommitCanTake(t *testing.T) {
	spec := &CommitSpec{Message: "m", Exclude: []string{".workflow/**", "*.log"}}
	for path, want := range map[string]bool{"code.go": true, "a/b.go": true, ".pixir": false, ".pixir/x.json": false, ".workflow/plan.md": false, "run.log": false, "a/run.log": true} {
		require.Equal(t, want, spec.reaches(path), path)
	}
}

// recordingCommitter is a fakeCommitter that records the user's work at a
// run's start (BeforeRecorder): rec, each time it is asked.
type recordingCommitter struct {
	fakeCommitter
	rec   BeforeRun
	asked int
}

func (f *recordingCommitter) Before(context.Context, func(string) bool, func(string) bool) BeforeRun {
	f.asked++
	return f.rec
}

// A run resumed after its process was killed commits with the record of
// the user's work made when the run it resumes started, read from the Log
// (its workflow_started): a record made at the resume would take the
// reused steps' work for the user's, and none was made, so a file the
// user had changed was committed whole, their edits with the run's. A
// resume of the resumed run finds it too; a run resumed from one that
// kept no record (an older Pixir's Log) commits nothing of the user's.
func TestAResumedRunCommitsWithTheRecordOfTheRunItResumes(t *testing.T) {
	const spec = `{"commit": {"message": "feat: add"}, "steps": [
	  {"id": "code", "task": "t", "write_set": ["src/**"], "workspace_mode": "shared"},
	  {"id": "look", "task": "t", "depends_on": ["code"]}]}`
	lookFails := true
	sim := newSim(func(step string) childPlan {
		switch {
		case step == "code":
			return childPlan{dur: 5, changes: &tools.FileChanges{Changed: []string{"src/a.go"}}}
		case step == "look" && lookFails:
			return childPlan{dur: 5, status: tools.SubagentFailed}
		}
		return childPlan{dur: 5}
	})
	// The Log as a new process reads it: written and read back.
	reload := func() {
		for k, ev := range sim.events {
			b, err := ev.AppendJSON(nil)
			require.NoError(t, err)
			var back WorkflowEvent
			require.NoError(t, json.Unmarshal(b, &back))
			sim.events[k] = back
		}
	}
	atStart := BeforeRun{"src/a.go": "1111111111111111111111111111111111111111", "src/new.go": BeforeUnknown}
	fc := &recordingCommitter{rec: atStart}
	p, err := Prepare(mustParse(t, spec), Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
	require.NoError(t, err)
	first := p.Run(context.Background(), RunOptions{WorkflowID: "wf-1", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusPartial, first.Status)
	require.Equal(t, 1, fc.asked)
	require.Equal(t, &atStart, sim.events[0].Before, "kept in the run's workflow_started")

	lookFails = false
	for k, id := range []string{"wf-2", "wf-3"} {
		reload()
		fc.rec = BeforeRun{"src/a.go": "2222222222222222222222222222222222222222"} // the run's work, taken for the user's
		w := mustParse(t, spec)
		w.ResumeFrom = []string{"wf-1", "wf-2"}[k]
		p, err = Prepare(w, Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
		require.NoError(t, err)
		out := p.Run(context.Background(), RunOptions{WorkflowID: id, Now: fixedClock(), waiting: sim.waiting})
		require.Equal(t, StatusCompleted, out.Status, out.Output)
		require.Equal(t, 1, fc.asked, "no record made at the resume")
		require.Equal(t, CommitRequest{Message: "feat: add", Paths: []string{"src/a.go"}, Before: atStart}, fc.reqs[len(fc.reqs)-1], id)
	}

	// A run resumed from one that kept no record: the record says so.
	sim.events[0].Before = nil
	reload()
	w := mustParse(t, spec)
	w.ResumeFrom = "wf-1"
	p, err = Prepare(w, Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
	require.NoError(t, err)
	p.Run(context.Background(), RunOptions{WorkflowID: "wf-4", Now: fixedClock(), waiting: sim.waiting})
	why, failed := fc.reqs[len(fc.reqs)-1].Before.Failed()
	require.True(t, failed)
	require.Contains(t, why, "the run this one resumes (wf-1) kept no record")
}

// A run its preflight stopped started nothing and changed nothing: it
// makes no record (git status and hashing for a run that starts nothing),
// and its resume, once the user fixed what the checks found, records the
// user's work then. One record kept from the stopped run took the user's
// edits made since (src/a.go a1 → a2) for the run's, and committed them.
func TestAResumeOfARunItsPreflightStoppedRecordsTheUsersWorkAgain(t *testing.T) {
	const spec = `{"commit": {"message": "feat: add", "requires": ["TODO/x.md"]}, "steps": [
	  {"id": "code", "task": "t", "write_set": ["src/**"], "workspace_mode": "shared"}]}`
	sim := newSim(func(string) childPlan {
		return childPlan{dur: 5, changes: &tools.FileChanges{Changed: []string{"src/a.go"}}}
	})
	fc := &recordingCommitter{rec: BeforeRun{"src/a.go": "1111111111111111111111111111111111111111"}}
	fc.problems = []string{"TODO/x.md does not exist"}
	p, err := Prepare(mustParse(t, spec), Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
	require.NoError(t, err)
	first := p.Run(context.Background(), RunOptions{WorkflowID: "wf-1", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusFailed, first.Status)
	require.Equal(t, 0, fc.asked, "no record for a run that starts nothing")
	require.Nil(t, sim.events[0].Before)

	fc.problems = nil
	now := BeforeRun{"src/a.go": "2222222222222222222222222222222222222222"}
	fc.rec = now
	w := mustParse(t, spec)
	w.ResumeFrom = "wf-1"
	p, err = Prepare(w, Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
	require.NoError(t, err)
	out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-2", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusCompleted, out.Status, out.Output)
	require.Equal(t, 1, fc.asked, "recorded at the resume")
	require.Equal(t, CommitRequest{Message: "feat: add", Paths: []string{"src/a.go"}, Before: now}, fc.reqs[len(fc.reqs)-1])
}

// A run that made its record of the user's work and then started no step
// (cancelled, or killed, before its first) changed nothing: its resume
// records the user's work again, as the user may have edited a file since
// (src/a.go a1 → a2), and that edit is theirs. The record kept from the
// run that started nothing took it for the run's work, and committed it
// (review32c #6).
func TestAResumeOfARunThatStartedNoStepRecordsTheUsersWorkAgain(t *testing.T) {
	const spec = `{"commit": {"message": "feat: add"}, "steps": [
	  {"id": "code", "task": "t", "write_set": ["src/**"], "workspace_mode": "shared"}]}`
	sim := newSim(func(string) childPlan {
		return childPlan{dur: 5, changes: &tools.FileChanges{Changed: []string{"src/a.go"}}}
	})
	atStart := BeforeRun{"src/a.go": "1111111111111111111111111111111111111111"}
	fc := &recordingCommitter{rec: atStart}
	p, err := Prepare(mustParse(t, spec), Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	first := p.Run(ctx, RunOptions{WorkflowID: "wf-1", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StoppedCancelled, first.StoppedBy)
	require.Empty(t, sim.order, "nothing started")
	require.Equal(t, &atStart, sim.events[0].Before, "the record was made")

	now := BeforeRun{"src/a.go": "2222222222222222222222222222222222222222"} // the user's edit since
	fc.rec = now
	w := mustParse(t, spec)
	w.ResumeFrom = "wf-1"
	p, err = Prepare(w, Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
	require.NoError(t, err)
	out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-2", Now: fixedClock(), waiting: sim.waiting})
	require.Equal(t, StatusCompleted, out.Status, out.Output)
	require.Equal(t, 2, fc.asked, "recorded again at the resume")
	require.Equal(t, CommitRequest{Message: "feat: add", Paths: []string{"src/a.go"}, Before: now}, fc.reqs[len(fc.reqs)-1])
}

// The record copies only the files a step may write (its write set): a
// commit takes nothing else. Every file when a fan-out's write set
// depends on its items.
func TestTheRecordCopiesWhatAStepMayWrite(t *testing.T) {
	w := mustParse(t, `{"commit": {"message": "m"}, "steps": [
	  {"id": "code", "task": "t", "write_set": ["src/**"], "workspace_mode": "shared"},
	  {"id": "docs", "task": "t", "write_set": ["docs/*.md"], "depends_on": ["code"]},
	  {"id": "look", "task": "t", "depends_on": ["docs"]}]}`)
	writable := w.writable()
	for path, want := range map[string]bool{"src/a.go": true, "src/x/y.go": true, "docs/a.md": true, "docs/x/a.md": false, "README.md": false, "a.go": false} {
		require.Equal(t, want, writable(path), path)
	}
	w = mustParse(t, `{"commit": {"message": "m"}, "steps": [
	  {"id": "split", "task": "t", "output_schema": {"type": "object", "properties": {"tasks": {"type": "array", "items": {"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}}}}}}}},
	  {"id": "make", "task": "do it", "depends_on": ["split"], "for_each": {"step": "split", "path": "/tasks"}, "write_set": ["${item.files}"]}]}`)
	require.Nil(t, w.writable(), "a write set known only as the fan-out runs")
}

// A resume cancelled before its first step carries its prior's record of
// the user's work, and a resume of it carries that record on: the first
// run's changes in the workspace are the run's, not the user's. It made
// a fresh record, which took them for the user's (review33c #2).
func TestAResumeOfAResumeThatStartedNothingCarriesTheFirstRecord(t *testing.T) {
	const spec = `{"commit": {"message": "feat: add"}, "steps": [
	  {"id": "code", "task": "t", "write_set": ["src/**"], "workspace_mode": "shared"}]}`
	sim := newSim(func(string) childPlan {
		return childPlan{dur: 5, status: tools.SubagentFailed, changes: &tools.FileChanges{Changed: []string{"src/a.go"}}}
	})
	atStart := BeforeRun{"src/a.go": "1111111111111111111111111111111111111111"}
	fc := &recordingCommitter{rec: atStart}
	p, err := Prepare(mustParse(t, spec), Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
	require.NoError(t, err)
	first := p.Run(context.Background(), RunOptions{WorkflowID: "wf-1", Now: fixedClock(), waiting: sim.waiting})
	require.NotEqual(t, StatusCompleted, first.Status)
	require.Equal(t, 1, fc.asked)

	fc.rec = BeforeRun{"src/a.go": "2222222222222222222222222222222222222222"} // wf-1's change, on disk
	for _, run := range []struct{ id, from string }{{"wf-2", "wf-1"}, {"wf-3", "wf-2"}} {
		w := mustParse(t, spec)
		w.ResumeFrom = run.from
		p, err = Prepare(w, Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		if run.id == "wf-2" {
			cancel() // before its first step
		}
		p.Run(ctx, RunOptions{WorkflowID: run.id, Now: fixedClock(), waiting: sim.waiting})
		cancel()
	}
	require.Equal(t, 1, fc.asked, "the first run's record is carried down the chain, never made again")
}
