package runtime

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// steps starts workflow steps and records each end callback, with what the
// parent's Log and List said at the moment it was called.
type steps struct {
	f      *managerFixture
	mu     sync.Mutex
	calls  map[string]int
	views  map[string]tools.SubagentView
	logged map[string]tools.SubagentEvent  // the child's last subagent_event in the Log
	listed map[string]tools.SubagentStatus // the child's status in List
	called chan struct{}                   // closed, and replaced, at every callback
}

func newSteps(f *managerFixture) *steps {
	return &steps{f: f, calls: map[string]int{}, views: map[string]tools.SubagentView{}, logged: map[string]tools.SubagentEvent{}, listed: map[string]tools.SubagentStatus{},
		called: make(chan struct{})}
}

func (s *steps) ended(v tools.SubagentView) {
	var logged tools.SubagentEvent
	var listed tools.SubagentStatus
	if events, _, err := s.f.parent.Events(); err == nil {
		for _, ev := range events {
			var d SubagentEventData
			if ev.Type == EventSubagent && json.Unmarshal(ev.Data, &d) == nil && d.SubagentID == v.ID {
				logged = d.Event
			}
		}
	}
	views, _ := s.f.b.List(context.Background()) // deadlocks if called under m.mu
	for _, l := range views {
		if l.ID == v.ID {
			listed = l.Status
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[v.ID]++
	s.views[v.ID], s.logged[v.ID], s.listed[v.ID] = v, logged, listed
	close(s.called)
	s.called = make(chan struct{})
}

func (s *steps) start(t *testing.T, req workflows.StepRequest) tools.SubagentView {
	t.Helper()
	v, err := s.f.b.StartStep(context.Background(), req, s.ended)
	require.NoError(t, err)
	return v
}

func (s *steps) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[id]
}

// await waits for id's callback and checks it came after the Log and the
// status knew of the end.
func (s *steps) await(t *testing.T, id string) tools.SubagentView {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.calls[id] == 0 {
		called := s.called
		s.mu.Unlock()
		<-called
		s.mu.Lock()
	}
	v := s.views[id]
	require.True(t, v.Status.Ended(), "the callback sees the final view: %+v", v)
	require.Equal(t, v.Status, s.listed[id], "the status is visible before the callback")
	require.Contains(t, []tools.SubagentEvent{tools.SubagentEventFinished, tools.SubagentEventFailed, tools.SubagentEventTimedOut, tools.SubagentEventCancelled}, s.logged[id], "the end is in the Log before the callback")
	return v
}

// childLog is the path of a child's own Log, from its events.
func (f *managerFixture) childLog(id string) string {
	f.events.mu.Lock()
	defer f.events.mu.Unlock()
	for _, d := range f.events.events {
		if d.SubagentID == id && d.ChildLog != "" {
			return d.ChildLog
		}
	}
	return ""
}

// childEvents reads a child's Log, keeping events of type typ.
func childEvents[D any](t *testing.T, path string, typ EventType) []D {
	t.Helper()
	events, _, err := ReadLog(path)
	require.NoError(t, err)
	var out []D
	for _, ev := range events {
		if ev.Type == typ {
			var d D
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			out = append(out, d)
		}
	}
	return out
}

func TestStepReadOnlyRunsTheChildReadOnly(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	st := newSteps(f)
	require.Equal(t, ModeAuto, f.parent.Mode())
	v := st.start(t, workflows.StepRequest{Name: "look", Task: "write x.txt", ReadOnly: true, WorkspaceMode: WorkspaceShared})
	got := st.await(t, v.ID)
	require.Equal(t, tools.SubagentCompleted, got.Status, "%+v", got.Error)
	require.NoFileExists(t, filepath.Join(f.parent.workspace.Root(), "x.txt"))
	f.rt.subagents.mu.Lock()
	child := f.rt.subagents.byID[v.ID].child
	f.rt.subagents.mu.Unlock()
	require.Equal(t, ModeReadOnly, child.Mode())
	decisions := childEvents[PermissionDecisionData](t, f.childLog(v.ID), EventPermissionDecision)
	require.Len(t, decisions, 1)
	require.Equal(t, "denied", decisions[0].Decision)
	require.Equal(t, ModeReadOnly, decisions[0].Mode)

	// The step's name is in its events; a step without ReadOnly writes.
	f.events.mu.Lock()
	require.Equal(t, "look", f.events.events[0].Name)
	f.events.mu.Unlock()
	w := st.start(t, workflows.StepRequest{Name: "make", Task: "write y.txt", WorkspaceMode: WorkspaceShared})
	require.Equal(t, tools.SubagentCompleted, st.await(t, w.ID).Status)
	require.FileExists(t, filepath.Join(f.parent.workspace.Root(), "y.txt"))
}

func TestStepWritesStayInTheWriteSet(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	st := newSteps(f)
	inSrc := func(rel string) bool { return strings.HasPrefix(rel, "src/") }
	v := st.start(t, workflows.StepRequest{Name: "out", Task: "write docs/x.md", WorkspaceMode: WorkspaceShared, MayWrite: inSrc, WriteSet: []string{"src/**"}})
	require.Equal(t, tools.SubagentCompleted, st.await(t, v.ID).Status)
	require.NoFileExists(t, filepath.Join(f.parent.workspace.Root(), "docs", "x.md"))
	results := childEvents[ToolResultData](t, f.childLog(v.ID), EventToolResult)
	require.Len(t, results, 1)
	require.Equal(t, tools.ErrPermissionDenied, results[0].Result.Error.Kind)
	require.Contains(t, results[0].Result.Error.Message, "docs/x.md is outside this workflow step's write_set (src/**)")

	in := st.start(t, workflows.StepRequest{Name: "in", Task: "write src/y.go", WorkspaceMode: WorkspaceShared, MayWrite: inSrc, WriteSet: []string{"src/**"}})
	require.Equal(t, tools.SubagentCompleted, st.await(t, in.ID).Status)
	require.FileExists(t, filepath.Join(f.parent.workspace.Root(), "src", "y.go"))
}

func TestStepSnapshotInheritsItsAncestorsChanges(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	st := newSteps(f)
	w := st.start(t, workflows.StepRequest{Name: "w", Task: "write src/made.txt", WorkspaceMode: WorkspaceIsolated})
	wv := st.await(t, w.ID)
	require.Equal(t, tools.SubagentCompleted, wv.Status)
	require.Equal(t, []string{"src/made.txt"}, wv.Changes.Added)

	d := st.start(t, workflows.StepRequest{Name: "d", Task: "look", WorkspaceMode: WorkspaceIsolated,
		Inherit: []workflows.Inherited{{StepID: "w", Workspace: wv.Workspace, Changes: *wv.Changes}}})
	dv := st.await(t, d.ID)
	require.Equal(t, tools.SubagentCompleted, dv.Status)
	require.FileExists(t, filepath.Join(dv.Workspace, "src", "made.txt"), "the dependent works on its dependency's files")
	require.Empty(t, dv.Changes.Added, "inherited files are not the dependent's changes")
	require.NoFileExists(t, filepath.Join(f.parent.workspace.Root(), "src", "made.txt"), "the workspace is untouched")
}

// offeredTools records the tools each conversation was offered, by its
// first prompt.
type offeredTools struct {
	childProvider
	mu   sync.Mutex
	seen map[string][]string
}

func (p *offeredTools) Generate(ctx context.Context, req provider.ModelRequest, sink func(provider.Delta)) (*provider.ModelResponse, error) {
	var names []string
	for _, spec := range req.Tools {
		names = append(names, spec.Name)
	}
	p.mu.Lock()
	p.seen[req.Messages[0].Text] = names
	p.mu.Unlock()
	return p.childProvider.Generate(ctx, req, sink)
}

func (p *offeredTools) of(prompt string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[prompt]
}

func probeTool(name string, runs *atomic.Int32) tools.Tool {
	return tools.Define(tools.Spec[struct{}]{
		Name: name, Description: "counts its calls", Posture: tools.PostureRead,
		Run: func(context.Context, tools.Env, struct{}, bool) tools.Result {
			runs.Add(1)
			return tools.OK("probed")
		},
	})
}

func TestStepToolsAreOfferedToThatChildOnly(t *testing.T) {
	p := &offeredTools{seen: map[string][]string{}}
	f := newManagerFixtureWith(t, SubagentConfig{}, p)
	st := newSteps(f)
	var probes, shadows atomic.Int32
	extra := []tools.Tool{probeTool("probe", &probes), probeTool("write", &shadows)}
	a := st.start(t, workflows.StepRequest{Name: "a", Task: "call probe from a", Tools: extra})
	b := st.start(t, workflows.StepRequest{Name: "b", Task: "call probe from b"})
	c := st.start(t, workflows.StepRequest{Name: "c", Task: "write z.txt", Tools: extra, WorkspaceMode: WorkspaceShared})
	st.await(t, a.ID)
	st.await(t, b.ID)
	st.await(t, c.ID)

	offered := p.of("call probe from a")
	require.Contains(t, offered, "probe")
	require.Equal(t, 1, countOf(offered, "write"), "an extra never shadows a built-in")
	require.Equal(t, len(tools.Builtins())+1, len(offered))
	require.NotContains(t, p.of("call probe from b"), "probe")
	results := childEvents[ToolResultData](t, f.childLog(a.ID), EventToolResult)
	require.True(t, results[0].Result.OK, "%+v", results[0].Result.Error)
	results = childEvents[ToolResultData](t, f.childLog(b.ID), EventToolResult)
	require.Equal(t, tools.ErrUnknownTool, results[0].Result.Error.Kind)

	// The built-in write ran for c, not the extra named like it.
	require.FileExists(t, filepath.Join(f.parent.workspace.Root(), "z.txt"))
	require.Zero(t, shadows.Load())

	// Nor does the parent see or run it.
	var rec recorder
	_, err := f.parent.Prompt(context.Background(), Prompt{Text: "call probe from parent"}, TurnOptions{Observe: rec.observe})
	require.NoError(t, err)
	require.NotContains(t, p.of("call probe from parent"), "probe")
	for _, ev := range rec.events {
		if ev.Type == EventToolResult {
			var d ToolResultData
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			require.Equal(t, tools.ErrUnknownTool, d.Result.Error.Kind)
		}
	}
	require.Equal(t, int32(1), probes.Load(), "only child a ran the probe")
}

func countOf(names []string, name string) int {
	n := 0
	for _, s := range names {
		if s == name {
			n++
		}
	}
	return n
}

func TestStepEndedIsCalledOnceWhateverEndsTheRun(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{MaxThreads: 1})
	st := newSteps(f)
	hung := st.start(t, workflows.StepRequest{Name: "hung", Task: "hang on", Timeout: 200 * time.Millisecond})
	queued := st.start(t, workflows.StepRequest{Name: "queued", Task: "never runs"})
	require.Equal(t, tools.SubagentQueued, queued.Status)
	f.b.StopStep(queued.ID)
	require.Equal(t, 1, st.count(queued.ID), "StopStep returns after the callback")
	quick := st.start(t, workflows.StepRequest{Name: "quick", Task: "quick"})

	require.Equal(t, tools.SubagentCancelled, st.await(t, queued.ID).Status)
	require.Equal(t, tools.SubagentTimedOut, st.await(t, hung.ID).Status)
	got := st.await(t, quick.ID)
	require.Equal(t, tools.SubagentCompleted, got.Status)
	require.Equal(t, "did: quick", got.Summary)
	require.Equal(t, []string{"queued", "cancelled"}, f.events.of(queued.ID))
	require.Equal(t, []string{"queued", "started", "timed_out"}, f.events.of(hung.ID))
	require.Equal(t, []string{"queued", "started", "finished"}, f.events.of(quick.ID))

	// Stopping an ended or unknown step does nothing; a later run of the
	// child (send_input) is not the step's and calls nothing.
	f.b.StopStep(quick.ID)
	f.b.StopStep("sa-unknown")
	_, err := f.b.SendInput(context.Background(), quick.ID, "again")
	require.NoError(t, err)
	f.rt.subagents.mu.Lock()
	done := f.rt.subagents.byID[quick.ID].done
	f.rt.subagents.mu.Unlock()
	<-done
	for _, id := range []string{hung.ID, queued.ID, quick.ID} {
		require.Equal(t, 1, st.count(id), id)
	}
}

// It runs in a synctest bubble: "StopStep has not returned" is then a fact
// (every goroutine is blocked when the bubble's clock moves), not a guess
// made after some real milliseconds.
func TestStopStepReturnsAfterTheCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newManagerFixture(t, SubagentConfig{})
		var heard atomic.Bool
		v, err := f.b.StartStep(context.Background(), workflows.StepRequest{Name: "s", Task: "hang here"}, func(tools.SubagentView) {
			time.Sleep(50 * time.Millisecond)
			heard.Store(true)
		})
		require.NoError(t, err)
		f.events.await(v.ID, tools.SubagentEventStarted)

		// Another session's binding cannot stop it.
		other, err := f.rt.NewSession(t.TempDir())
		require.NoError(t, err)
		binding{m: f.rt.subagents, parent: other}.StopStep(v.ID)
		views, _ := f.b.List(context.Background())
		require.Equal(t, tools.SubagentRunning, views[0].Status)

		f.b.StopStep(v.ID)
		require.True(t, heard.Load())
		views, _ = f.b.List(context.Background())
		require.Equal(t, tools.SubagentCancelled, views[0].Status)

		// A child that ended by itself, its callback still running: StopStep
		// waits for the callback too.
		entered, release := make(chan struct{}), make(chan struct{})
		q, err := f.b.StartStep(context.Background(), workflows.StepRequest{Name: "q", Task: "quick"}, func(tools.SubagentView) {
			close(entered)
			<-release
		})
		require.NoError(t, err)
		<-entered
		stopped := make(chan struct{})
		go func() {
			f.b.StopStep(q.ID)
			close(stopped)
		}()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("StopStep returned while the callback ran")
		default:
		}
		close(release)
		<-stopped
	})
}

func TestStartStepRefusals(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	never := func(tools.SubagentView) { t.Error("the callback of a step that never started was called") }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.b.StartStep(ctx, workflows.StepRequest{Name: "s", Task: "quick"}, never)
	var fail *tools.Failure
	require.ErrorAs(t, err, &fail)
	require.Equal(t, tools.ErrCancelled, fail.Kind)
	_, err = f.b.StartStep(context.Background(), workflows.StepRequest{Name: "s", Agent: "nobody", Task: "quick"}, never)
	require.ErrorAs(t, err, &fail)
	require.Equal(t, tools.ErrNotFound, fail.Kind)
	_, err = f.b.StartStep(context.Background(), workflows.StepRequest{Name: "s", Task: " "}, never)
	require.ErrorAs(t, err, &fail)
	require.Equal(t, tools.ErrInvalidArgs, fail.Kind)
	views, _ := f.b.List(context.Background())
	require.Empty(t, views)
}

func TestWorkflowEventsAndPlanReachTheParent(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	var rec recorder
	f.parent.SetObserver(rec.observe)
	d := workflows.WorkflowEvent{
		Kind: workflows.EventStepHeld, WorkflowID: "wf-1", ToolCallID: "call-1",
		StepID: "b", HeldReason: "dependency a failed", BlockedBy: []string{"a"},
	}
	require.NoError(t, f.b.RecordWorkflowEvent(d))
	plan := []tools.PlanEntry{{Content: "a", Priority: "medium", Status: "completed"}, {Content: "b", Priority: "medium", Status: "pending"}}
	f.b.ShowPlan(plan)

	require.Equal(t, []EventType{EventWorkflow, EventPlan}, rec.types())
	var shown PlanData
	require.NoError(t, json.Unmarshal(rec.events[1].Data, &shown))
	require.Equal(t, plan, shown.Entries)

	events, _, err := f.parent.Events()
	require.NoError(t, err)
	require.Len(t, events, 1, "the plan is ephemeral")
	require.Equal(t, EventWorkflow, events[0].Type)
	require.Positive(t, events[0].Seq)
	var logged workflows.WorkflowEvent
	require.NoError(t, json.Unmarshal(events[0].Data, &logged))
	require.Equal(t, d, logged)

	// resume_from reads them back from the Log.
	back, err := f.b.WorkflowEvents()
	require.NoError(t, err)
	require.Equal(t, []workflows.WorkflowEvent{d}, back)
}

// changeArgs are those of a mutation tool that knows dry runs.
type changeArgs struct {
	Path         string `json:"path"`
	DryRun       bool   `json:"dry_run,omitempty"`
	ValidateOnly bool   `json:"validate_only,omitempty"`
}

func changeTool(runs, dryRuns *atomic.Int32) tools.Tool {
	return tools.Define(tools.Spec[changeArgs]{
		Name: "change", Description: "changes a file", Posture: tools.PostureMutation,
		Run: func(_ context.Context, _ tools.Env, a changeArgs, dry bool) tools.Result {
			if dry {
				dryRuns.Add(1)
				return tools.Preview("would change %s", a.Path)
			}
			runs.Add(1)
			return tools.OK("changed")
		},
	})
}

func TestDryRunOfAMutationIsAllowedInEveryMode(t *testing.T) {
	tests := []struct {
		name     string
		mode     Mode
		args     string
		dry      bool
		decision string
		source   string
	}{
		{"read_only, dry_run", ModeReadOnly, `{"path":"a","dry_run":true}`, true, "allowed", "dry_run"},
		{"ask without a client, validate_only", ModeAsk, `{"path":"a", "validate_only" : true }`, true, "allowed", "dry_run"},
		{"auto, dry_run", ModeAuto, `{"path":"a","dry_run":true}`, true, "allowed", "dry_run"},
		{"read_only, dry_run false", ModeReadOnly, `{"path":"a","dry_run":false}`, false, "denied", "mode"},
		{"read_only, dry_run a string", ModeReadOnly, `{"path":"a","dry_run":"true"}`, false, "denied", "mode"},
		{"read_only, nested dry_run", ModeReadOnly, `{"path":"a","x":{"dry_run":true}}`, false, "denied", "mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs, dryRuns atomic.Int32
			p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
				calls(provider.ToolCall{ID: "c1", Name: "change", Arguments: json.RawMessage(tt.args)}), text("ok"),
			}}
			rt := New(Config{Home: t.TempDir(), Provider: p, Model: "m", Tools: append(tools.Builtins(), changeTool(&runs, &dryRuns))})
			t.Cleanup(rt.Close)
			s, err := rt.NewSession(t.TempDir())
			require.NoError(t, err)
			require.NoError(t, s.SetMode(tt.mode))
			var rec recorder
			_, err = s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Observe: rec.observe})
			require.NoError(t, err)
			require.Zero(t, runs.Load(), "Run never runs here")
			var decision PermissionDecisionData
			var result ToolResultData
			for _, ev := range rec.events {
				switch ev.Type {
				case EventPermissionDecision:
					require.NoError(t, json.Unmarshal(ev.Data, &decision))
				case EventToolResult:
					require.NoError(t, json.Unmarshal(ev.Data, &result))
				}
			}
			require.Equal(t, PermissionDecisionData{ToolCallID: "c1", Tool: "change", Mode: tt.mode, Decision: tt.decision, Source: tt.source, Reason: decision.Reason}, decision)
			if tt.dry {
				require.Equal(t, int32(1), dryRuns.Load())
				require.True(t, result.Result.OK)
				require.Contains(t, modelText(result.Result), `"dry_run":true`)
				require.Empty(t, decision.Reason)
				require.True(t, slices.Contains(rec.types(), EventStatus))
			} else {
				require.Zero(t, dryRuns.Load())
				require.Equal(t, tools.ErrPermissionDenied, result.Result.Error.Kind)
			}
		})
	}
}

// A read tool's dry_run is its own business: the turn runs it as usual.
func TestDryRunFlagOnAReadToolChangesNothing(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		calls(provider.ToolCall{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt","dry_run":true}`)}), text("ok"),
	}}
	s := newTestSession(t, p)
	require.NoError(t, os.WriteFile(filepath.Join(s.Workspace().Root(), "a.txt"), []byte("hi"), 0o644))
	require.NoError(t, s.SetMode(ModeReadOnly))
	var rec recorder
	_, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Observe: rec.observe})
	require.NoError(t, err)
	require.NotContains(t, rec.types(), EventPermissionDecision)
}
