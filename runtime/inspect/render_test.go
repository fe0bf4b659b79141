package inspect

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./runtime/inspect -update to create it")
	require.Equal(t, string(want), string(got))
}

// richLog has a turn of every ending, a child under its spawn_agent, a
// finished and an interrupted workflow run, and a run outside any turn.
func richLog(t *testing.T) []runtime.Event {
	long := strings.Repeat("All of this is one long answer that goes on and on. ", 6)
	return logOf(t,
		user("create a file"), say("I'll create `hello.txt`.", "call_1_1"), call("call_1_1", "write"), allowed("call_1_1", "write"),
		result("call_1_1", "write", tools.OK("ok"), 3), say(long),
		ev{runtime.EventProviderUsage, runtime.ProviderUsageData{Provider: "scripted", Model: "m", Usage: provider.Usage{InputTokens: 1200, OutputTokens: 80},
			Cost: 0.0036, Currency: "USD"}},

		user("delegate it\nto a subagent"), say("Handing it over.", "call_1_1", "call_1_2"),
		call("call_1_1", "spawn_agent"), child("queued", "sa-1", "call_1_1", "queued"),
		result("call_1_1", "spawn_agent", tools.OK("queued"), 1),
		call("call_1_2", "spawn_agent"), child("queued", "sa-2", "call_1_2", "queued"),
		result("call_1_2", "spawn_agent", tools.OK("queued"), 1),
		child("started", "sa-1", "call_1_1", "running"),
		child("finished", "sa-1", "call_1_1", "completed", func(d *runtime.SubagentEventData) {
			d.Summary = "Here is what ls shows:\n\nhello.txt"
			d.Usage = &budget.Usage{InputTokens: 3000, OutputTokens: 250, ModelCalls: 2, Cost: 0.0128, Currency: "USD"}
		}),
		child("started", "sa-2", "call_1_2", "running"),
		say("", "call_2_1"), call("call_2_1", "wait_agent"), result("call_2_1", "wait_agent", tools.OK("done"), 2400),
		say("The first one finished."),

		ev{runtime.EventSubagentSummaries, runtime.SubagentSummariesData{SubagentIDs: []string{"sa-2"}, Text: "[Pixir, not the user] …"}},
		say("The second one finished too."),

		user("read it in read_only"),
		ev{runtime.EventCompaction, runtime.CompactionData{CompactionID: "cmp-1", Reason: runtime.CompactionThreshold, Method: runtime.SummarizerModel,
			Summary: "The user had a file created and delegated.", Kept: 4, Replaced: 12, TokensBefore: 104000, TokensAfter: 38000, Window: 128000}},
		say("", "call_1_1"), call("call_1_1", "bash"),
		ev{runtime.EventPermissionDecision, runtime.PermissionDecisionData{ToolCallID: "call_1_1", Tool: "bash", Mode: runtime.ModeReadOnly, Decision: "denied", Source: "mode", Reason: "bash changes the workspace and the session is in read_only mode"}},
		result("call_1_1", "bash", tools.Fail(tools.ErrPermissionDenied, "bash changes the workspace and the session is in read_only mode"), 0),
		ev{runtime.EventTurnFailed, runtime.TurnFailedData{Kind: tools.ErrProviderError, Message: "the scripted provider was told to fail"}},

		user("slow"), ev{runtime.EventAssistantMessage, runtime.AssistantMessageData{Text: "Here is a deliberately", Partial: true}},

		user("run a workflow"), say("Running it.", "call_1_1"), call("call_1_1", "run_workflow"), allowed("call_1_1", "run_workflow"),
		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-1", ToolCallID: "call_1_1", Workflow: twoSteps}),
		child("queued", "sa-a", "call_1_1", "queued", func(d *runtime.SubagentEventData) { d.Name = "a" }),
		wf(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", ToolCallID: "call_1_1", StepID: "a", Wave: 1, SubagentID: "sa-a"}),
		child("started", "sa-a", "call_1_1", "running", func(d *runtime.SubagentEventData) { d.Name = "a" }),
		wf(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-1", ToolCallID: "call_1_1", StepID: "a", Outcome: ready("a", "sa-a", 1)}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", ToolCallID: "call_1_1", StepID: "b", Wave: 2, SubagentID: "sa-b"}),
		child("started", "sa-b", "call_1_1", "running", func(d *runtime.SubagentEventData) { d.Name = "b" }),

		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-2", Workflow: twoSteps}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-2", StepID: "a", Outcome: spent(ready("a", "sa-c", 1), 4321)}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-2", StepID: "b", Outcome: ready("b", "sa-d", 2)}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowFinished, WorkflowID: "wf-2", Status: "completed", ElapsedMS: 1234}),
	)
}

func TestInspectRenderTree(t *testing.T) {
	s := Fold(richLog(t))
	created := t0.Add(-time.Minute)
	s.Workspace, s.Log, s.Mode, s.Model, s.CreatedAt = "/ws", "/ws/.pixir/sessions/s1.ndjson", "auto", "scripted", &created
	s.Load.TornBytes = 57
	var b bytes.Buffer
	require.NoError(t, Render(&b, s, RenderOptions{}))
	golden(t, "tree.golden", b.Bytes())
}

func TestInspectRenderEmptySession(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Render(&b, Fold(nil), RenderOptions{Location: time.UTC}))
	require.Equal(t, "session : (untitled)\n\n(no turns, Subagents or Workflows in the Log)\n", b.String())
}

func TestInspectRenderList(t *testing.T) {
	list := []Listed{
		{Meta: runtime.Meta{ID: "01b", Title: "run a workflow", Mode: runtime.ModeAsk, UpdatedAt: t0}, Turns: 3},
		{Meta: runtime.Meta{ID: "01a"}, Turns: -1},
	}
	var b bytes.Buffer
	require.NoError(t, RenderList(&b, list, time.UTC))
	require.Equal(t, ""+
		"ID   UPDATED           MODE  TURNS  TITLE\n"+
		"01b  2026-03-14 09:26  ask   3      run a workflow\n"+
		"01a  -                 -     ?      (untitled)\n", b.String())
}

func TestInspectShortening(t *testing.T) {
	cases := []struct {
		fn    func(string, int) string
		name  string
		in    string
		width int
		want  string
	}{
		{oneLine, "oneLine", "a  b\n\tc", 10, "a b c"},
		{oneLine, "oneLine", "abcdefghij", 5, "abcd…"},
		{firstLine, "firstLine", "\n  first line\nsecond", 20, "first line …"},
		{firstLine, "firstLine", "only\n\n", 20, "only"},
		{firstLine, "firstLine", "abcdefghij\nmore", 5, "abcd…"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.fn(c.in, c.width), "%s(%q, %d)", c.name, c.in, c.width)
	}
	require.Equal(t, "999 ms", elapsed(999))
	require.Equal(t, "2.4 s", elapsed(2400))
}

// spent gives a step's outcome the usage of a child that spent tokens.
func spent(o *workflows.StepOutcome, tokens int64) *workflows.StepOutcome {
	o.Usage = &budget.Usage{InputTokens: tokens, ModelCalls: 1}
	return o
}

func TestShortIDsAreUniqueStarts(t *testing.T) {
	short := ShortIDs([]string{
		"3f2a9c1e-0000-4000-8000-000000000001",
		"3f2a9c1e-0000-4000-8000-000000000002", // shares 35 characters with the first
		"9b0c1d2e-aaaa-4bbb-8ccc-dddddddddddd",
		"01a20b2b-5239-7587-a0a6-5cbf366fff7b", // time-ordered ids of older sessions
		"01a20b2b-51a6-7c24-93a1-8f49fabd084a",
		"abc", // shorter than MinShortID: whole
	})
	require.Equal(t, map[string]string{
		"3f2a9c1e-0000-4000-8000-000000000001": "3f2a9c1e-0000-4000-8000-000000000001",
		"3f2a9c1e-0000-4000-8000-000000000002": "3f2a9c1e-0000-4000-8000-000000000002",
		"9b0c1d2e-aaaa-4bbb-8ccc-dddddddddddd": "9b0c1d2e",
		"01a20b2b-5239-7587-a0a6-5cbf366fff7b": "01a20b2b-52",
		"01a20b2b-51a6-7c24-93a1-8f49fabd084a": "01a20b2b-51",
		"abc":                                  "abc",
	}, short)
}

// A pixir run --workflow session: no prompt, a budget warning, a writer
// that failed (its work not merged) and one the process left running.
// The warning is no turn of the model's (it said "[incomplete]", "no
// final answer in the Log"), and each writer's snapshot, where its work
// is and nowhere else, is shown (pixir run sends the user here for it).
func TestInspectRenderAWorkflowSession(t *testing.T) {
	writers := &workflows.Workflow{Name: "writers", Steps: []workflows.Step{
		{ID: "a", Task: "write a", WriteSet: []string{"a/**"}},
		{ID: "b", Task: "write b", WriteSet: []string{"b/**"}},
	}}
	failed := &workflows.StepOutcome{StepID: "a", Agent: "default", AgentID: "sa-a", Wave: 1, DependsOn: []string{},
		WorkspaceMode: workflows.Isolated, Workspace: "/ws/.pixir/subagents/sa-a/workspace",
		SubagentStatus: "failed", CheckpointStatus: workflows.CheckpointFailed, ElapsedMS: 7,
		Error: &tools.Failure{Kind: "budget_exhausted", Message: "the budget of workflow wf-1 is spent"},
		Merge: &workflows.StepMerge{Policy: workflows.MergeOnReady, MergeReport: tools.MergeReport{Status: tools.MergeNotMerged, Reason: "the step is failed"}}}
	isolated := func(d *runtime.SubagentEventData) {
		d.Workspace = "/ws/.pixir/subagents/" + d.SubagentID + "/workspace"
	}
	s := Fold(logOf(t,
		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-1", Workflow: writers}),
		child("queued", "sa-a", "", "queued", func(d *runtime.SubagentEventData) { d.Name = "a" }),
		wf(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", StepID: "a", Wave: 1, SubagentID: "sa-a"}),
		child("queued", "sa-b", "", "queued", func(d *runtime.SubagentEventData) { d.Name = "b" }),
		wf(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", StepID: "b", Wave: 1, SubagentID: "sa-b"}),
		child("started", "sa-a", "", "running", isolated),
		child("started", "sa-b", "", "running", isolated),
		ev{runtime.EventNotice, runtime.NoticeData{Source: "budget", Severity: "warning", Title: "Workflow wf-1 has spent 132% of its budget"}},
		child("failed", "sa-a", "", "failed", isolated),
		wf(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-1", StepID: "a", Outcome: failed}),
	))
	var b bytes.Buffer
	require.NoError(t, Render(&b, s, RenderOptions{Location: time.UTC}))
	out := b.String()
	require.Contains(t, out, "before the first prompt\n")
	require.NotContains(t, out, "[incomplete]")
	require.NotContains(t, out, "no final answer")
	require.Contains(t, out, "notice (warning): Workflow wf-1 has spent 132% of its budget")
	require.Contains(t, out, "snapshot (its work not merged into the workspace): /ws/.pixir/subagents/sa-a/workspace")
	require.Contains(t, out, "snapshot (its work not merged into the workspace): /ws/.pixir/subagents/sa-b/workspace", "the step the process left running")
}

// A step's child closed after its run (close_agent discards its work, or
// its session closed): its snapshot is deleted, so inspect names no
// folder that is gone.
func TestInspectRenderAClosedStepNamesNoSnapshot(t *testing.T) {
	w := &workflows.Workflow{Name: "w", Steps: []workflows.Step{{ID: "a", Task: "write a", WriteSet: []string{"a/**"}}}}
	declined := &workflows.StepOutcome{StepID: "a", Agent: "default", AgentID: "sa-a", Wave: 1, DependsOn: []string{},
		WorkspaceMode: workflows.Isolated, Workspace: "/ws/.pixir/subagents/sa-a/workspace",
		SubagentStatus: "completed", CheckpointStatus: workflows.CheckpointNeedsOrchestrator, ElapsedMS: 7,
		Merge: &workflows.StepMerge{Policy: workflows.MergeOnReady, Tried: true, MergeReport: tools.MergeReport{Status: tools.MergeNotMerged, Reason: "the user declined the merge"}}}
	isolated := func(d *runtime.SubagentEventData) {
		d.Workspace = "/ws/.pixir/subagents/" + d.SubagentID + "/workspace"
		d.WorkspaceMode = "isolated"
	}
	events := []ev{
		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-1", Workflow: w}),
		child("queued", "sa-a", "", "queued", func(d *runtime.SubagentEventData) { d.Name = "a" }),
		wf(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", StepID: "a", Wave: 1, SubagentID: "sa-a"}),
		child("started", "sa-a", "", "running", isolated),
		child("finished", "sa-a", "", "completed", isolated),
		wf(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-1", StepID: "a", Outcome: declined}),
	}
	render := func(evs ...ev) string {
		var b bytes.Buffer
		require.NoError(t, Render(&b, Fold(logOf(t, evs...)), RenderOptions{Location: time.UTC}))
		return b.String()
	}
	require.Contains(t, render(events...), "snapshot (its work not merged into the workspace): /ws/.pixir/subagents/sa-a/workspace")
	out := render(append(events, child("closed", "sa-a", "", "closed", isolated))...)
	require.NotContains(t, out, "/ws/.pixir/subagents/sa-a/workspace")
	require.Contains(t, out, "snapshot deleted when the subagent was closed")
}

// An isolated step whose work the run did not merge, and that a later
// merge_agent merged, or whose snapshot pixir gc removed since: inspect
// says where the work is now. It named the snapshot as the one place of
// the work after merge_agent had brought it into the workspace, and a
// folder gc had removed.
func TestInspectSaysWhereAStepsUnmergedWorkIsNow(t *testing.T) {
	ws := t.TempDir()
	snap := filepath.Join(ws, ".pixir", "subagents", "sa-a", "workspace")
	require.NoError(t, os.MkdirAll(snap, 0o755))
	w := &workflows.Workflow{Name: "w", Steps: []workflows.Step{{ID: "a", Task: "write a", WriteSet: []string{"a/**"}}}}
	conflicted := &workflows.StepOutcome{StepID: "a", Agent: "default", AgentID: "sa-a", Wave: 1, DependsOn: []string{},
		WorkspaceMode: workflows.Isolated, Workspace: snap,
		SubagentStatus: "completed", CheckpointStatus: workflows.CheckpointNeedsOrchestrator, ElapsedMS: 7,
		Merge: &workflows.StepMerge{Policy: workflows.MergeOnReady, Tried: true, MergeReport: tools.MergeReport{Status: tools.MergeConflicted,
			Applied: tools.MergeFiles{Added: []string{"a/x"}}, Conflicts: []tools.MergeConflict{{Path: "a/y", Kind: tools.ConflictContent, Message: "both sides changed the same lines in 1 place"}}}}}
	isolated := func(d *runtime.SubagentEventData) {
		d.Workspace = snap
		d.WorkspaceMode = "isolated"
	}
	mergeCall := func(id string, dry bool) ev {
		args, err := json.Marshal(tools.MergeAgentArgs{ID: "sa-a", DryRun: dry})
		require.NoError(t, err)
		return ev{runtime.EventToolCall, runtime.ToolCallData{ToolCallID: id, Name: "merge_agent", Arguments: args, Title: "Merge sa-a into the workspace", Posture: tools.PostureMutation}}
	}
	merged := func(id string, rep tools.MergeReport) ev {
		return result(id, "merge_agent", tools.Result{OK: rep.Status == tools.MergeMerged, Output: rep}, 3)
	}
	events := []ev{
		user("run it"), say("", "call_1"), call("call_1", "run_workflow"),
		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-1", Workflow: w, ToolCallID: "call_1"}),
		child("queued", "sa-a", "", "queued", func(d *runtime.SubagentEventData) { d.Name = "a" }),
		wf(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", StepID: "a", Wave: 1, SubagentID: "sa-a"}),
		child("started", "sa-a", "", "running", isolated),
		child("finished", "sa-a", "", "completed", isolated),
		wf(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-1", StepID: "a", Outcome: conflicted}),
		result("call_1", "run_workflow", tools.OK("partial"), 9), say("The step needs you."),
		user("fix it and merge"),
	}
	inspect := func(evs ...ev) (string, *Session) {
		dir := t.TempDir()
		log := filepath.Join(dir, "s1.ndjson")
		var b bytes.Buffer
		for _, e := range logOf(t, evs...) {
			line, err := json.Marshal(e)
			require.NoError(t, err)
			b.Write(append(line, '\n'))
		}
		require.NoError(t, os.WriteFile(log, b.Bytes(), 0o644))
		s, _, err := Load(Found{ID: "s1", Workspace: ws, Log: log})
		require.NoError(t, err)
		b.Reset()
		require.NoError(t, Render(&b, s, RenderOptions{Location: time.UTC}))
		return b.String(), s
	}
	out, _ := inspect(events...)
	require.Contains(t, out, "snapshot (its work not merged into the workspace): "+snap)

	// A dry run merges nothing; a conflicted merge leaves the rest there.
	out, _ = inspect(append(events, say("", "call_2"), mergeCall("call_2", true), merged("call_2", tools.MergeReport{Status: tools.MergeMerged, DryRun: true}),
		say("", "call_3"), mergeCall("call_3", false), merged("call_3", tools.MergeReport{Status: tools.MergeConflicted, Applied: tools.MergeFiles{Updated: []string{"a/z"}},
			Conflicts: []tools.MergeConflict{{Path: "a/y"}}}))...)
	require.Contains(t, out, "merge_agent call_3 at ")
	require.Contains(t, out, ": conflicted (1 file merged, 1 file conflicting)")
	require.Contains(t, out, "snapshot (its work not merged into the workspace): "+snap)
	require.NotContains(t, out, "call_2 at")

	later := append(events, say("", "call_4"), mergeCall("call_4", false), merged("call_4", tools.MergeReport{Status: tools.MergeMerged, Applied: tools.MergeFiles{Updated: []string{"a/y"}}}))
	out, s := inspect(later...)
	require.Contains(t, out, "its work merged into the workspace since: merge_agent call_4 at ")
	require.Contains(t, out, " (1 file)\n")
	require.NotContains(t, out, "snapshot (its work not merged")
	step := func(s *Session) *Step {
		for _, it := range s.Turns[0].Items {
			if it.ToolCall != nil && len(it.ToolCall.Workflows) > 0 {
				return it.ToolCall.Workflows[0].Steps[0]
			}
		}
		t.Fatal("no step")
		return nil
	}
	st := step(s)
	require.Equal(t, tools.MergeMerged, st.MergedLater.Status)

	// pixir gc removed the snapshot (the session's Log says nothing of it).
	require.NoError(t, os.RemoveAll(snap))
	out, s = inspect(events...)
	require.Contains(t, out, "snapshot removed since (by pixir gc, or by hand), with its work not merged into the workspace: the work is gone")
	require.NotContains(t, out, "snapshot (its work not merged")
	require.True(t, step(s).SnapshotRemoved)
}

// A session without prompts (pixir run --workflow) whose MCP server
// stopped mid-run: the notice shows the end of the server's stderr, which
// the Log keeps in its detail, and is no turn that missed an answer.
func TestInspectRenderAStoppedServersNoticeWithItsStderr(t *testing.T) {
	notice := ev{runtime.EventNotice, runtime.NoticeData{Source: "mcp", Server: "t", Severity: "error",
		Title: `MCP server "t" stopped (it exited: exit status 3); its 4 tools are withdrawn`, Detail: "it exited: exit status 3\nboom: crashing now"}}
	s := Fold(logOf(t,
		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-2", Workflow: twoSteps}),
		notice,
		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowFinished, WorkflowID: "wf-2", Status: "failed", ElapsedMS: 5}),
	))
	var b bytes.Buffer
	require.NoError(t, Render(&b, s, RenderOptions{Location: time.UTC}))
	out := b.String()
	require.NotContains(t, out, "no final answer")
	require.Contains(t, out, "\nbefore the first prompt\n└─ notice (error): MCP server \"t\" stopped (it exited: exit status 3); its 4 tools are withdrawn\n      boom: crashing now\n")
}

// TestLoadWarningsCountWithTheirNouns: what a load left out is said with
// its count and its noun agreeing ("1 line(s) of the Log are not events"
// before), the same in the tree's header and on stderr with --json or
// --events, where events whose data does not decode were not said at all.
func TestLoadWarningsCountWithTheirNouns(t *testing.T) {
	for _, tc := range []struct {
		load LoadInfo
		want []string
	}{
		{LoadInfo{}, nil},
		{LoadInfo{SkippedLines: 1, UndecodedEvents: 1}, []string{
			"1 line of the Log is not an event; it is left out",
			"1 event this Pixir cannot read (data that does not decode, or a type it does not know); it is left out",
		}},
		{LoadInfo{TornBytes: 7, SkippedLines: 2, UndecodedEvents: 3}, []string{
			"the Log's last line is torn (7 bytes, cut off mid-write by a crash); it is left out",
			"2 lines of the Log are not events; they are left out",
			"3 events this Pixir cannot read (data that does not decode, or a type it does not know); they are left out",
		}},
	} {
		require.Equal(t, tc.want, LoadWarnings(tc.load), "%+v", tc.load)
	}
}

// Who decided, in words: "allowed by remembered (allow_always)" read as if
// "remembered" were someone.
func TestPermissionSaysWhoDecided(t *testing.T) {
	for _, tt := range []struct {
		p    Permission
		want string
	}{
		{Permission{Decision: "allowed", Source: "mode", Mode: "auto"}, "allowed by mode auto"},
		{Permission{Decision: "allowed", Source: "user", Option: "allow_once"}, "allowed by user (allow_once)"},
		{Permission{Decision: "denied", Source: "user", Option: "reject_once"}, "denied by user (reject_once)"},
		{Permission{Decision: "cancelled", Source: "user"}, "cancelled by user"},
		{Permission{Decision: "allowed", Source: "remembered", Option: "allow_always"}, "allowed by the user before (allow_always, remembered)"},
		{Permission{Decision: "allowed", Source: "sandbox", Mode: "read_only"}, "allowed in the read-only sandbox"},
		{Permission{Decision: "allowed", Source: "dry_run", Mode: "ask"}, "allowed as a dry run"},
	} {
		require.Equal(t, tt.want, permission(&tt.p))
	}
}

// The commit a run's spec asked for is shown under the run, as its table
// says it: committed with its hash and files, or not and why (one line
// each of several). It was in the Log (committed events) and in
// workflows.Rebuild's outcome, but neither the tree nor --json said
// whether the work was committed (found by qa32w).
func TestInspectShowsWhatBecameOfARunsCommit(t *testing.T) {
	spec := &workflows.Workflow{Name: "w", Steps: []workflows.Step{{ID: "a", Task: "write a", WriteSet: []string{"a/**"}}},
		Commit: &workflows.CommitSpec{Message: "a: the work"}}
	committed := &workflows.CommitReport{Status: workflows.Committed, Commit: "1376af5be9bd0123456789", Message: "a: the work", Files: []string{"a/x"}}
	s := Fold(logOf(t,
		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-1", Workflow: spec}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", StepID: "a", Wave: 1, SubagentID: "sa-a"}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-1", StepID: "a", Outcome: ready("a", "sa-a", 1)}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventCommitted, WorkflowID: "wf-1", Commit: committed}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowFinished, WorkflowID: "wf-1", Status: workflows.StatusCompleted}),
	))
	var b bytes.Buffer
	require.NoError(t, Render(&b, s, RenderOptions{Location: time.UTC}))
	require.Contains(t, b.String(), "Committed 1376af5be9bd (1 file): a: the work")
	require.Len(t, s.Workflows, 1)
	require.NotNil(t, s.Workflows[0].Commit)
	require.Equal(t, "1376af5be9bd0123456789", s.Workflows[0].Commit.Commit)
	j, err := json.Marshal(s.Workflows[0])
	require.NoError(t, err)
	require.Contains(t, string(j), `"commit":{"status":"committed","commit":"1376af5be9bd0123456789"`)
}

// A run whose commit was not made names, in inspect as in its outcome,
// the files it left in the workspace uncommitted.
func TestInspectNamesTheFilesARunLeftUncommitted(t *testing.T) {
	spec := &workflows.Workflow{Name: "w", Steps: []workflows.Step{{ID: "a", Task: "write a", WriteSet: []string{"a/**"}}},
		Commit: &workflows.CommitSpec{Message: "a: the work"}}
	refused := &workflows.CommitReport{Status: workflows.NotCommitted, Message: "a: the work", Files: []string{"a/x", "a/y"}, Reason: "git commit refused: a hook said no", Missed: true}
	s := Fold(logOf(t,
		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-1", Workflow: spec}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", StepID: "a", Wave: 1, SubagentID: "sa-a"}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, WorkflowID: "wf-1", StepID: "a", Outcome: ready("a", "sa-a", 1)}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventCommitted, WorkflowID: "wf-1", Commit: refused}),
		wf(workflows.WorkflowEvent{Kind: workflows.EventWorkflowFinished, WorkflowID: "wf-1", Status: workflows.StatusPartial}),
	))
	var b bytes.Buffer
	require.NoError(t, Render(&b, s, RenderOptions{Location: time.UTC}))
	require.Contains(t, b.String(), "Not committed: git commit refused: a hook said no")
	require.Contains(t, b.String(), "In the workspace, not committed (2 files the run changed): a/x, a/y")
	require.Len(t, s.Workflows, 1)
	require.Equal(t, []string{"a/x", "a/y"}, s.Workflows[0].Uncommitted)
}
