package workflows

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

type fakeCommitter struct {
	reqs      []CommitRequest
	preflight []PreflightRequest
	problems  []string
}

func (f *fakeCommitter) Preflight(_ context.Context, req PreflightRequest) []string {
	f.preflight = append(f.preflight, req)
	return f.problems
}

func (f *fakeCommitter) Commit(_ context.Context, req CommitRequest) (CommitReport, error) {
	f.reqs = append(f.reqs, req)
	return CommitReport{Status: Committed, Commit: "0123456789abcdef", Files: req.Paths}, nil
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
		want     CommitReport
		commits  int
	}{
		{name: "completed", want: CommitReport{Status: Committed, Commit: "0123456789abcdef", Message: "feat(GAL-1): add", Files: []string{"src/a.go", "src/b.go"}}, commits: 1},
		{name: "partial", lookEnds: tools.SubagentFailed, want: CommitReport{Status: NotCommitted, Message: "feat(GAL-1): add", Files: []string{"src/a.go", "src/b.go"},
			Reason: "the workflow is partial, not completed: nothing is committed"}},
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
			p, err := Prepare(mustParse(t, spec), Ports{Agents: sim, Children: sim, Evidence: sim, Committer: fc})
			require.NoError(t, err)
			out := p.Run(context.Background(), RunOptions{WorkflowID: "wf-c", Now: fixedClock(), waiting: sim.waiting})
			require.Equal(t, &tt.want, out.Commit)
			require.Len(t, fc.reqs, tt.commits)
			if tt.commits > 0 {
				require.Equal(t, CommitRequest{Message: "feat(GAL-1): add", Paths: []string{"src/a.go", "src/b.go"}}, fc.reqs[0])
				require.Contains(t, out.Output, "Committed 0123456789ab (2 files): feat(GAL-1): add")
			} else {
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
}

func TestCommitIsValidated(t *testing.T) {
	_, err := Parse([]byte(`{"commit": {"message": " ", "exclude": ["../x"]}, "steps": [{"id": "a", "task": "t"}]}`))
	require.Error(t, err)
	require.Contains(t, err.Error(), "commit.message is empty")
	require.Contains(t, err.Error(), `commit.exclude[0] pattern "../x" is invalid`)
	_, err = Parse([]byte(`{"commit": {"msg": "x"}, "steps": [{"id": "a", "task": "t"}]}`))
	require.ErrorContains(t, err, `commit has unknown field "msg" (allowed: message, exclude, base, requires)`)
	_, err = Parse([]byte(`{"commit": {"message": "m", "base": "-x", "requires": ["../TODO/A.md", "/etc/passwd", "TODO/*.md"]}, "steps": [{"id": "a", "task": "t"}]}`))
	require.ErrorContains(t, err, `commit.base "-x" is not a branch name`)
	require.ErrorContains(t, err, `commit.requires[0] "../TODO/A.md" is not a file path inside the workspace`)
	require.ErrorContains(t, err, `commit.requires[1] "/etc/passwd" is not a file path inside the workspace`)
	require.ErrorContains(t, err, `commit.requires[2] "TODO/*.md" is not a file path inside the workspace`)
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
