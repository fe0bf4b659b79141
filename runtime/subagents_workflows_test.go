package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// steps starts workflow steps through the workflow ports of the
// fixture's parent, each with its own Ended channel.
type steps struct {
	f        *managerFixture
	children workflows.Children
	ends     map[string]chan tools.SubagentView
}

func newSteps(f *managerFixture) *steps {
	return &steps{f: f, children: f.b.workflowPorts().Children, ends: map[string]chan tools.SubagentView{}}
}

// start starts a step whose end goes to a channel with room for one.
func (s *steps) start(t *testing.T, req workflows.StepRequest) tools.SubagentView {
	t.Helper()
	ch := make(chan tools.SubagentView, 1)
	req.Ended = ch
	v, err := s.children.Start(context.Background(), req)
	require.NoError(t, err)
	s.ends[v.ID] = ch
	return v
}

// await takes id's end and checks that the parent's Log and List knew of
// it before it was sent.
func (s *steps) await(t *testing.T, id string) tools.SubagentView {
	t.Helper()
	v := <-s.ends[id]
	require.Equal(t, id, v.ID)
	require.True(t, v.Status.Ended(), "the end carries the final view: %+v", v)
	views, err := s.f.b.List(context.Background())
	require.NoError(t, err)
	for _, l := range views {
		if l.ID == id {
			require.Equal(t, v.Status, l.Status, "the status is visible once the end is sent")
		}
	}
	var logged tools.SubagentEvent
	events, _, err := s.f.parent.Events()
	require.NoError(t, err)
	for _, ev := range events {
		var d SubagentEventData
		if ev.Type == EventSubagent && json.Unmarshal(ev.Data, &d) == nil && d.SubagentID == id {
			logged = d.Event
		}
	}
	require.Contains(t, []tools.SubagentEvent{tools.SubagentEventFinished, tools.SubagentEventFailed, tools.SubagentEventTimedOut, tools.SubagentEventCancelled}, logged, "the end is in the Log before it is sent")
	return v
}

// noMoreEnds checks that nothing more was sent for id.
func (s *steps) noMoreEnds(t *testing.T, id string) {
	t.Helper()
	select {
	case v := <-s.ends[id]:
		t.Fatalf("a second end was sent for %s: %+v", id, v)
	default:
	}
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
	child := f.session(t, v.ID)
	require.Equal(t, ModeReadOnly, child.Mode())
	// It is not offered write: a call to it anyway is an unknown tool.
	_, offered := child.registry().Get("write")
	require.False(t, offered)
	results := childEvents[ToolResultData](t, f.childLog(v.ID), EventToolResult)
	require.Len(t, results, 1)
	require.Equal(t, tools.ErrUnknownTool, results[0].Result.Error.Kind)

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
		Schema: json.RawMessage(`{"additionalProperties":false,"type":"object"}`),
		Name:   name, Description: "counts its calls", Posture: tools.PostureRead,
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
	require.Equal(t, tools.SubagentCompleted, st.await(t, a.ID).Status)
	require.Equal(t, tools.SubagentCompleted, st.await(t, b.ID).Status)
	// c writes the shared workspace: only once a's and b's snapshots of it
	// are taken.
	c := st.start(t, workflows.StepRequest{Name: "c", Task: "write z.txt", Tools: extra, WorkspaceMode: WorkspaceShared})
	require.Equal(t, tools.SubagentCompleted, st.await(t, c.ID).Status)

	offered := p.of("call probe from a")
	require.Contains(t, offered, "probe")
	require.Equal(t, 1, countOf(offered, "write"), "an extra never shadows a built-in")
	// At the maximum depth (1), the agent tools are not offered.
	require.Equal(t, []string{"read", "write", "edit", "bash", "grep", "glob", "update_plan", "probe"}, offered)
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

func TestStepEndIsSentOnceWhateverEndsTheRun(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{MaxThreads: 1})
	st := newSteps(f)
	hung := st.start(t, workflows.StepRequest{Name: "hung", Task: "hang on", Timeout: 200 * time.Millisecond})
	queued := st.start(t, workflows.StepRequest{Name: "queued", Task: "never runs"})
	require.Equal(t, tools.SubagentQueued, queued.Status)
	st.children.Stop(queued.ID)
	require.Len(t, st.ends[queued.ID], 1, "Stop returns after the end is sent")
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
	// child (send_input) is not the step's and sends nothing.
	st.children.Stop(quick.ID)
	st.children.Stop("sa-unknown")
	_, err := f.b.SendInput(context.Background(), quick.ID, "again")
	require.NoError(t, err)
	f.rt.subagents.mu.Lock()
	done := f.rt.subagents.byID[quick.ID].done
	f.rt.subagents.mu.Unlock()
	<-done
	for _, id := range []string{hung.ID, queued.ID, quick.ID} {
		st.noMoreEnds(t, id)
	}
}

// Stop returns only once the end is on the step's channel, whoever ends
// the run: Stop itself, or the child a moment before. It runs in a
// synctest bubble: "Stop has not returned" is then a fact (every goroutine
// is blocked when synctest.Wait returns), not a guess made after some real
// milliseconds.
func TestStopReturnsAfterTheEndIsSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newManagerFixture(t, SubagentConfig{})
		st := newSteps(f)
		v := st.start(t, workflows.StepRequest{Name: "s", Task: "hang here"})
		f.events.await(v.ID, tools.SubagentEventStarted)

		// Another session's ports cannot stop it.
		other, err := f.rt.NewSession(t.TempDir())
		require.NoError(t, err)
		other.WorkflowPorts(nil).Children.Stop(v.ID)
		views, _ := f.b.List(context.Background())
		require.Equal(t, tools.SubagentRunning, views[0].Status)
		require.Empty(t, st.ends[v.ID])

		st.children.Stop(v.ID)
		require.Len(t, st.ends[v.ID], 1, "the end is sent before Stop returns")
		require.Equal(t, tools.SubagentCancelled, st.await(t, v.ID).Status)

		// A child that ended by itself, its end not yet taken (a channel
		// without room): Stop waits until the workflow has it.
		ends := make(chan tools.SubagentView)
		q, err := st.children.Start(context.Background(), workflows.StepRequest{Name: "q", Task: "quick", Ended: ends})
		require.NoError(t, err)
		f.events.await(q.ID, tools.SubagentEventFinished)
		stopped := make(chan struct{})
		go func() {
			st.children.Stop(q.ID)
			close(stopped)
		}()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Stop returned before the end was sent")
		default:
		}
		require.Equal(t, q.ID, (<-ends).ID)
		<-stopped
	})
}

func TestStartRefusals(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	children := f.b.workflowPorts().Children
	never := make(chan tools.SubagentView, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := children.Start(ctx, workflows.StepRequest{Name: "s", Task: "quick", Ended: never})
	var fail *tools.Failure
	require.ErrorAs(t, err, &fail)
	require.Equal(t, tools.ErrCancelled, fail.Kind)
	_, err = children.Start(context.Background(), workflows.StepRequest{Name: "s", Agent: "nobody", Task: "quick", Ended: never})
	require.ErrorAs(t, err, &fail)
	require.Equal(t, tools.ErrNotFound, fail.Kind)
	_, err = children.Start(context.Background(), workflows.StepRequest{Name: "s", Task: " ", Ended: never})
	require.ErrorAs(t, err, &fail)
	require.Equal(t, tools.ErrInvalidArgs, fail.Kind)
	views, _ := f.b.List(context.Background())
	require.Empty(t, views)
	require.Empty(t, never, "a step that never started sends no end")
}

// The agent lookup is one: the agent tools, the workflow ports and the
// sessionless check of a dry run accept and refuse alike, in the same
// words.
func TestAgentLookupIsOneForToolsWorkflowsAndDryRuns(t *testing.T) {
	cat := catalogOf{"default": {Name: "default"}, "worker": {Name: "worker"}, "picky": {Name: "picky", Model: "elsewhere", Source: "picky.toml"}}
	f := newManagerFixture(t, SubagentConfig{Agents: func(string) (AgentCatalog, error) { return cat, nil }})
	for _, tt := range []struct {
		agent string
		want  *tools.Failure
	}{
		{"worker", nil},
		{"nobody", &tools.Failure{Kind: tools.ErrNotFound, Message: `there is no agent named "nobody"; use one of: default, picky, worker`}},
		{"picky", &tools.Failure{Kind: tools.ErrInvalidArgs, Message: `agent "picky" asks for the model "elsewhere" (model in picky.toml), which is not among the models configured for the child provider (m); ` +
			"tell the user to add it to models in config.toml if the provider serves it, or to remove model from the agent; meanwhile spawn another agent"}},
	} {
		req := tools.SpawnRequest{Agent: tt.agent, Task: "t"}
		_, viaTools := f.b.Preview(req)
		viaPorts := f.b.workflowPorts().Agents.CheckSpawn(req)
		viaDryRun := f.rt.AgentChecker(f.parent.workspace.Root()).CheckSpawn(req)
		if tt.want == nil {
			require.NoError(t, viaTools, tt.agent)
			require.NoError(t, viaPorts, tt.agent)
			require.NoError(t, viaDryRun, tt.agent)
			continue
		}
		require.Equal(t, tt.want, viaTools, tt.agent)
		require.Equal(t, tt.want, viaPorts, tt.agent)
		require.Equal(t, tt.want, viaDryRun, tt.agent)
	}
}

// A workflow run reads the agent catalogue once, at its check: its steps
// run the agents it checked, and a thousand steps do not read the agent
// files a thousand times. Another run, and a spawn by the agent tools,
// read it again.
func TestAWorkflowRunReadsItsAgentsOnce(t *testing.T) {
	var loads atomic.Int32
	cat := catalogOf{"default": {Name: "default"}, "worker": {Name: "worker"}}
	f := newManagerFixture(t, SubagentConfig{Agents: func(string) (AgentCatalog, error) {
		loads.Add(1)
		return cat, nil
	}})
	w := &workflows.Workflow{Name: "once", Steps: []workflows.Step{
		{ID: "a", Agent: "worker", Task: "quick"}, {ID: "b", Task: "quick"},
		{ID: "c", Agent: "worker", Task: "quick", DependsOn: []string{"a", "b"}},
	}}
	for run := int32(1); run <= 2; run++ {
		p, err := workflows.Prepare(w, f.b.workflowPorts())
		require.NoError(t, err)
		out := p.Run(context.Background(), workflows.RunOptions{WorkflowID: fmt.Sprintf("wf-%d", run)})
		require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)
		require.Equal(t, run, loads.Load(), "run %d", run)
	}
	v := f.spawn(t, "quick")
	f.wait(t, v.ID)
	require.Equal(t, int32(3), loads.Load(), "a spawn by the agent tools reads the agents it is given now")
}

func TestWorkflowEventsAndPlanReachTheParent(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	var rec recorder
	f.parent.SetObserver(rec.observe)
	evidence := f.b.workflowPorts().Evidence
	d := workflows.WorkflowEvent{
		Kind: workflows.EventStepHeld, WorkflowID: "wf-1", ToolCallID: "call-1",
		StepID: "b", HeldReason: "dependency a failed", BlockedBy: []string{"a"},
	}
	require.NoError(t, evidence.Record(d))
	plan := []tools.PlanEntry{{Content: "a", Priority: "medium", Status: "completed"}, {Content: "b", Priority: "medium", Status: "pending"}}
	evidence.ShowPlan(plan)

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
	back, err := evidence.WorkflowEvents()
	require.NoError(t, err)
	require.Equal(t, []workflows.WorkflowEvent{d}, back)
}

// catalogOf is an agent catalogue of these agents, by name.
type catalogOf map[string]AgentSpec

func (c catalogOf) Agent(name string) (AgentSpec, bool) {
	a, ok := c[name]
	return a, ok
}

func (c catalogOf) Names() []string { return slices.Sorted(maps.Keys(c)) }

// A step's step_scheduled event is written in one append with its child's
// queued event: both, in that order, or neither (the child runs all the
// same, and the workflow is told the write failed).
func TestAStepsScheduledEventIsWrittenWithItsQueuing(t *testing.T) {
	scheduled := func() *workflows.Scheduled {
		return &workflows.Scheduled{Event: workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, WorkflowID: "wf-1", ToolCallID: "call-1", StepID: "a", Run: "a", Wave: 1}}
	}
	t.Run("one append", func(t *testing.T) {
		f := newManagerFixture(t, SubagentConfig{})
		var groups [][]EventType
		f.parent.log.writeGroup = func(file *os.File, evs []*Event) (int, error) {
			var types []EventType
			for _, ev := range evs {
				types = append(types, ev.Type)
			}
			groups = append(groups, types) // under the Log's lock
			return writeEventLines(file, evs)
		}
		s := newSteps(f)
		sched := scheduled()
		v := s.start(t, workflows.StepRequest{Task: "quick", Name: "a", Scheduled: sched})
		s.await(t, v.ID)
		require.NoError(t, sched.Err)
		require.Equal(t, [][]EventType{{EventSubagent, EventWorkflow}}, groups, "the queuing and the scheduling, one write")

		events, _, err := f.parent.Events()
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(events), 2)
		var queued SubagentEventData
		require.NoError(t, json.Unmarshal(events[0].Data, &queued))
		require.Equal(t, tools.SubagentEventQueued, queued.Event)
		var logged workflows.WorkflowEvent
		require.NoError(t, json.Unmarshal(events[1].Data, &logged))
		want := sched.Event
		want.SubagentID = v.ID
		require.Equal(t, want, logged, "scheduled right after its queuing, naming the child")
		require.Equal(t, events[0].Seq+1, events[1].Seq)
		var started SubagentEventData
		require.NoError(t, json.Unmarshal(events[2].Data, &started))
		require.Equal(t, tools.SubagentEventStarted, started.Event, "the child starts after both")
	})
	t.Run("a failed write", func(t *testing.T) {
		f := newManagerFixture(t, SubagentConfig{})
		f.parent.log.writeGroup = func(*os.File, []*Event) (int, error) {
			return 0, &os.PathError{Op: "write", Path: f.parent.log.Path(), Err: syscall.ENOSPC}
		}
		s := newSteps(f)
		sched := scheduled()
		v := s.start(t, workflows.StepRequest{Task: "quick", Name: "a", Scheduled: sched})
		require.ErrorIs(t, sched.Err, ErrLogWrite)
		require.ErrorIs(t, sched.Err, syscall.ENOSPC)
		s.await(t, v.ID)
		events, report, err := f.parent.Events()
		require.NoError(t, err)
		require.True(t, report.Intact())
		require.Zero(t, countType(events, EventWorkflow), "neither half of the group is in the Log")
		require.Equal(t, []string{"queued", "started", "finished"}, f.events.of(v.ID), "the watcher saw the child through")
	})
}
