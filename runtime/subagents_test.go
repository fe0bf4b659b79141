package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/merge"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/sandbox"
	"github.com/pixir-go/pixir/tools"
)

// childProvider answers by the latest user text, so parent and children
// can share it: "hang" blocks until cancelled, "panic" panics, "fail" is a
// provider failure, "write NAME" writes a file, "call TOOL …" calls TOOL
// with {}, anything else echoes.
type childProvider struct{}

func (childProvider) Name() string { return "child" }

func (childProvider) Generate(ctx context.Context, req provider.ModelRequest, _ func(provider.Delta)) (*provider.ModelResponse, error) {
	var user string
	calls := 0
	for _, m := range req.Messages {
		switch m.Role {
		case provider.RoleUser:
			user, calls = m.Text, 0
		case provider.RoleAssistant:
			calls++
		}
	}
	switch {
	case strings.HasPrefix(user, "hang"):
		<-ctx.Done()
		return nil, ctx.Err()
	case user == "panic":
		panic("child exploded")
	case user == "fail":
		return nil, context.DeadlineExceeded
	case strings.HasPrefix(user, "write ") && calls == 0:
		args, _ := json.Marshal(map[string]string{"path": strings.TrimPrefix(user, "write "), "content": "x"})
		return &provider.ModelResponse{ToolCalls: []provider.ToolCall{{ID: "w1", Name: "write", Arguments: args}}}, nil
	case strings.HasPrefix(user, "bash ") && calls == 0:
		args, _ := json.Marshal(map[string]string{"command": strings.TrimPrefix(user, "bash ")})
		return &provider.ModelResponse{ToolCalls: []provider.ToolCall{{ID: "b1", Name: "bash", Arguments: args}}}, nil
	case strings.HasPrefix(user, "call ") && calls == 0:
		return &provider.ModelResponse{ToolCalls: []provider.ToolCall{{ID: "t1", Name: strings.Fields(user)[1], Arguments: json.RawMessage(`{}`)}}}, nil
	}
	return &provider.ModelResponse{Text: "did: " + user}, nil
}

// snapshotCopy is a plain recursive copy standing in for runtime/snapshot.
type snapshotCopy struct {
	files map[string]string
	root  string
}

func (s snapshotCopy) Changes(_ context.Context, dir string) (tools.FileChanges, error) {
	var ch tools.FileChanges
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && d.Name() == StateDir {
				return filepath.SkipDir
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if _, ok := s.files[rel]; !ok {
			ch.Added = append(ch.Added, rel)
		}
		return nil
	})
	return ch, err
}

// Overlay copies from's added and changed files in, as the baseline
// (runtime/snapshot does the same, with deletions and links).
func (s snapshotCopy) Overlay(_ context.Context, from string, ch tools.FileChanges) error {
	for _, rel := range append(append([]string(nil), ch.Added...), ch.Changed...) {
		b, err := os.ReadFile(filepath.Join(from, rel))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(s.root, rel)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(s.root, rel), b, 0o644); err != nil {
			return err
		}
		s.files[rel] = string(b)
	}
	return nil
}

// Merge is not what these tests look at; the real one is in
// subagents_merge_test.go.
func (s snapshotCopy) Merge(context.Context, merge.Request) (tools.MergeReport, error) {
	return tools.MergeReport{}, errors.New("snapshotCopy does not merge")
}

func takeCopy(_ context.Context, src, dst string) (Snapshot, error) {
	files := map[string]string{}
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == StateDir {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = string(b)
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	return snapshotCopy{files: files, root: dst}, err
}

type collector struct {
	mu     sync.Mutex
	events []SubagentEventData
	// grew is closed, and replaced, whenever an event arrives.
	grew chan struct{}
}

func newCollector() *collector { return &collector{grew: make(chan struct{})} }

func (c *collector) observe(ev Event) {
	if ev.Type != EventSubagent {
		return
	}
	var d SubagentEventData
	_ = json.Unmarshal(ev.Data, &d)
	c.mu.Lock()
	c.events = append(c.events, d)
	close(c.grew)
	c.grew = make(chan struct{})
	c.mu.Unlock()
}

// await blocks until subagent id has recorded event: an awaited event,
// not a deadline, so a busy machine only makes it slower.
func (c *collector) await(id string, event tools.SubagentEvent) {
	for {
		c.mu.Lock()
		for _, d := range c.events {
			if d.SubagentID == id && d.Event == event {
				c.mu.Unlock()
				return
			}
		}
		grew := c.grew
		c.mu.Unlock()
		<-grew
	}
}

func (c *collector) of(id string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, d := range c.events {
		if d.SubagentID == id {
			out = append(out, string(d.Event))
		}
	}
	return out
}

type managerFixture struct {
	rt     *Runtime
	parent *Session
	b      binding
	events *collector
}

func newManagerFixture(t *testing.T, cfg SubagentConfig) *managerFixture {
	t.Helper()
	return newManagerFixtureWith(t, cfg, childProvider{})
}

func newManagerFixtureWith(t *testing.T, cfg SubagentConfig, p provider.Provider) *managerFixture {
	t.Helper()
	return newManagerFixtureSandboxed(t, cfg, p, nil)
}

// newManagerFixtureSandboxed is newManagerFixtureWith whose commands run in
// sbx (nil: the default sandbox).
func newManagerFixtureSandboxed(t *testing.T, cfg SubagentConfig, p provider.Provider, sbx *sandbox.Sandbox) *managerFixture {
	t.Helper()
	if cfg.Snapshot == nil {
		cfg.Snapshot = takeCopy
	}
	rt := New(Config{Home: t.TempDir(), Provider: p, Model: "m", Tools: tools.Builtins(), Subagents: cfg, Sandbox: sbx})
	t.Cleanup(rt.Close)
	parent, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	c := newCollector()
	parent.SetObserver(c.observe)
	return &managerFixture{rt: rt, parent: parent, b: binding{m: rt.subagents, parent: parent, toolCallID: "call-1"}, events: c}
}

// session is the session of the child id, made again if its Manager let
// it go when its run ended (as a next run would).
func (f *managerFixture) session(t *testing.T, id string) *Session {
	t.Helper()
	f.rt.subagents.mu.Lock()
	sa := f.rt.subagents.byID[id]
	f.rt.subagents.mu.Unlock()
	s, err := f.rt.subagents.prepare(context.Background(), sa)
	require.NoError(t, err)
	return s
}

func (f *managerFixture) spawn(t *testing.T, task string) tools.SubagentView {
	t.Helper()
	v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Task: task})
	require.NoError(t, err)
	return v
}

// noHorizon is a wait that waits for the children, however busy the
// machine: a test that never sees them end fails on go test's own timeout,
// with every goroutine's stack.
const noHorizon = 24 * time.Hour

func (f *managerFixture) wait(t *testing.T, ids ...string) tools.WaitOutcome {
	t.Helper()
	out, err := f.b.Wait(context.Background(), tools.WaitRequest{IDs: ids, Timeout: noHorizon})
	require.NoError(t, err)
	require.False(t, out.Incomplete, "children did not end: %+v", out)
	return out
}

func TestSubagentRunsInAnIsolatedSnapshotAndReportsChanges(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	require.NoError(t, os.WriteFile(filepath.Join(f.parent.workspace.Root(), "seed.txt"), []byte("s"), 0o644))
	v := f.spawn(t, "write new.txt")
	require.Equal(t, tools.SubagentQueued, v.Status)
	out := f.wait(t, v.ID)
	got := out.Agents[0]
	require.Equal(t, tools.SubagentCompleted, got.Status, "%+v", got.Error)
	require.Equal(t, "did: write new.txt", got.Summary)
	require.Equal(t, []string{"new.txt"}, got.Changes.Added)
	require.NotEmpty(t, got.ChildSessionID)
	require.FileExists(t, filepath.Join(got.Workspace, "new.txt"))
	require.NoFileExists(t, filepath.Join(f.parent.workspace.Root(), "new.txt"), "an isolated child never writes the parent's workspace")
	require.Equal(t, []string{"queued", "started", "finished"}, f.events.of(v.ID))

	// The child's details stay in its own Log, beside its snapshot.
	childLog := filepath.Join(filepath.Dir(got.Workspace), got.ChildSessionID+".ndjson")
	events, _, err := ReadLog(childLog)
	require.NoError(t, err)
	require.Contains(t, eventTypesOf(events), EventToolCall)
	require.NoDirExists(t, filepath.Join(got.Workspace, StateDir), "the snapshot holds only the child's work")

	// Closing releases the snapshot; the Log stays as evidence.
	closed, err := f.b.Close(context.Background(), v.ID)
	require.NoError(t, err)
	require.Equal(t, tools.SubagentClosed, closed.Status)
	require.NoDirExists(t, got.Workspace)
	require.FileExists(t, childLog)
	require.Equal(t, []string{"queued", "started", "finished", "closed"}, f.events.of(v.ID))
}

func eventTypesOf(events []Event) []EventType {
	var out []EventType
	for _, ev := range events {
		out = append(out, ev.Type)
	}
	return out
}

func TestMaxThreadsQueuesInOrder(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{MaxThreads: 2})
	a, b, c := f.spawn(t, "hang a"), f.spawn(t, "hang b"), f.spawn(t, "quick c")
	f.events.await(a.ID, tools.SubagentEventStarted)
	f.events.await(b.ID, tools.SubagentEventStarted)
	views, _ := f.b.List(context.Background())
	require.Equal(t, tools.SubagentRunning, views[0].Status)
	require.Equal(t, tools.SubagentRunning, views[1].Status)
	require.Equal(t, tools.SubagentQueued, views[2].Status, "the third waits for a slot")

	// Capacity frees: the queued child starts.
	_, err := f.b.Close(context.Background(), a.ID)
	require.NoError(t, err)
	out := f.wait(t, c.ID)
	require.Equal(t, tools.SubagentCompleted, out.Agents[0].Status)
	_, err = f.b.Close(context.Background(), b.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"queued", "started", "cancelled", "closed"}, f.events.of(a.ID))
}

// max_threads is each user session's: one editor tab whose children fill
// its slots does not queue another tab's child. Before, the slots were the
// whole process's.
func TestMaxThreadsIsEachSessions(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{MaxThreads: 1})
	a := f.spawn(t, "hang a")
	f.events.await(a.ID, tools.SubagentEventStarted)
	queued := f.spawn(t, "quick queued")

	other, err := f.rt.NewSession(t.TempDir())
	require.NoError(t, err)
	events := newCollector()
	other.SetObserver(events.observe)
	ob := binding{m: f.rt.subagents, parent: other, toolCallID: "call-9"}
	v, err := ob.Spawn(context.Background(), tools.SpawnRequest{Task: "quick other"})
	require.NoError(t, err)
	out, err := ob.Wait(context.Background(), tools.WaitRequest{IDs: []string{v.ID}, Timeout: noHorizon})
	require.NoError(t, err)
	require.Equal(t, tools.SubagentCompleted, out.Agents[0].Status, "the other session's child ran while the first's slot was taken")
	views, _ := f.b.List(context.Background())
	require.Equal(t, tools.SubagentQueued, views[1].Status, "the first session's second child waits for its own slot")

	_, err = f.b.Close(context.Background(), a.ID)
	require.NoError(t, err)
	require.Equal(t, tools.SubagentCompleted, f.wait(t, queued.ID).Agents[0].Status)
}

func TestASharedChildIsNotListedAsAUserSession(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Task: "quick", WorkspaceMode: WorkspaceShared})
	require.NoError(t, err)
	out := f.wait(t, v.ID)
	require.Equal(t, f.parent.workspace.Root(), out.Agents[0].Workspace)
	list, err := f.rt.ListSessions(f.parent.workspace.Root())
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, f.parent.ID(), list[0].ID)
}

func TestCloseAQueuedChild(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{MaxThreads: 1})
	running, queued := f.spawn(t, "hang here"), f.spawn(t, "never runs")
	v, err := f.b.Close(context.Background(), queued.ID)
	require.NoError(t, err)
	require.Equal(t, tools.SubagentClosed, v.Status)
	require.Equal(t, []string{"queued", "cancelled", "closed"}, f.events.of(queued.ID))
	_, err = f.b.Close(context.Background(), running.ID)
	require.NoError(t, err)
	_, err = f.b.Close(context.Background(), "sa-nope")
	var fail *tools.Failure
	require.ErrorAs(t, err, &fail)
	require.Equal(t, tools.ErrNotFound, fail.Kind)
}

func TestDepthIsEnforced(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{MaxDepth: 1})
	child, err := f.rt.newChildSession("", t.TempDir(), t.TempDir(), f.parent, 1, ModeAuto, "m", AgentSpec{Name: "default"}, f.parent.accounts)
	require.NoError(t, err)
	defer child.close()
	_, err = binding{m: f.rt.subagents, parent: child}.Spawn(context.Background(), tools.SpawnRequest{Task: "x"})
	var fail *tools.Failure
	require.ErrorAs(t, err, &fail)
	require.Equal(t, tools.ErrPermissionDenied, fail.Kind)
	require.Contains(t, fail.Message, "max_depth is 1")
}

func TestTimeoutPanicAndFailureBecomeStatuses(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	hung, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Task: "hang forever", Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	crashed := f.spawn(t, "panic")
	failed := f.spawn(t, "fail")
	out := f.wait(t, hung.ID, crashed.ID, failed.ID)
	byID := map[string]tools.SubagentView{}
	for _, v := range out.Agents {
		byID[v.ID] = v
	}
	require.Equal(t, tools.SubagentTimedOut, byID[hung.ID].Status)
	require.Equal(t, tools.ErrTimeout, byID[hung.ID].Error.Kind)
	require.Equal(t, tools.SubagentFailed, byID[crashed.ID].Status)
	require.Contains(t, byID[crashed.ID].Error.Message, "child exploded")
	require.Equal(t, tools.SubagentFailed, byID[failed.ID].Status)
	require.Equal(t, tools.ErrProviderError, byID[failed.ID].Error.Kind)
	require.Equal(t, []string{"queued", "started", "timed_out"}, f.events.of(hung.ID))
}

// deadlineProvider is childProvider that says, on deadlines, the
// deadline of each call's context.
type deadlineProvider struct {
	childProvider
	deadlines chan time.Time
}

func (p deadlineProvider) Generate(ctx context.Context, req provider.ModelRequest, d func(provider.Delta)) (*provider.ModelResponse, error) {
	if at, ok := ctx.Deadline(); ok {
		select {
		case p.deadlines <- at:
		default: // the first call's is enough
		}
	}
	return p.childProvider.Generate(ctx, req, d)
}

// A run that timed out has run its whole timeout: its deadline is counted
// from the start its elapsed time is. The deadline was armed from one
// reading of the clock and started taken from a later one; under load
// (63 ms apart once) a workflow step stopped at its timeout_ms of 300
// said it had run 237 ms.
func TestATimedOutRunsElapsedIsItsWholeTimeout(t *testing.T) {
	p := deadlineProvider{deadlines: make(chan time.Time, 1)}
	f := newManagerFixtureWith(t, SubagentConfig{}, p)
	// On a busy machine a short timeout can run out before the child's
	// first model call, which is where its deadline is seen: then the
	// same run is made again with twice the timeout, until one is seen.
	for timeout := 50 * time.Millisecond; ; timeout *= 2 {
		hung, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Task: "hang forever", Timeout: timeout})
		require.NoError(t, err)
		v := f.wait(t, hung.ID).Agents[0]
		require.Equal(t, tools.SubagentTimedOut, v.Status)
		var deadline time.Time
		select {
		case deadline = <-p.deadlines: // sent before the call, so before the run ended
		default:
			require.Less(t, timeout, time.Minute, "no run reached its model call before its timeout")
			t.Logf("the run of %s timed out before its model call: again with twice the timeout", timeout)
			continue
		}

		m := f.rt.subagents
		m.mu.Lock()
		started, ended := m.byID[hung.ID].started, m.byID[hung.ID].ended
		m.mu.Unlock()
		require.True(t, deadline.Equal(started.Add(timeout)), "deadline %s is not started %s + %s", deadline, started, timeout)
		require.False(t, ended.Before(deadline), "it ended at %s, before its deadline %s", ended, deadline)
		require.GreaterOrEqual(t, v.ElapsedMS, timeout.Milliseconds())
		return
	}
}

func TestWaitHorizonIsAnOutcomeNotAnError(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	v := f.spawn(t, "hang on")
	out, err := f.b.Wait(context.Background(), tools.WaitRequest{IDs: []string{v.ID}, Timeout: 50 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, out.Incomplete)
	require.Equal(t, []string{v.ID}, out.Pending)
	views, _ := f.b.List(context.Background())
	require.Equal(t, tools.SubagentRunning, views[0].Status, "reaching the horizon never cancels a child")

	quick := f.spawn(t, "quick")
	out, err = f.b.Wait(context.Background(), tools.WaitRequest{Any: true, Timeout: noHorizon})
	require.NoError(t, err)
	require.False(t, out.Incomplete)
	require.Equal(t, []string{quick.ID}, out.Finished)

	_, err = f.b.Wait(context.Background(), tools.WaitRequest{IDs: []string{"nope"}})
	var fail *tools.Failure
	require.ErrorAs(t, err, &fail)
	require.Equal(t, tools.ErrNotFound, fail.Kind)
}

func TestSendInput(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{})
	running := f.spawn(t, "hang there")
	f.events.await(running.ID, tools.SubagentEventStarted)
	_, err := f.b.SendInput(context.Background(), running.ID, "hello")
	var fail *tools.Failure
	require.ErrorAs(t, err, &fail)
	require.Equal(t, tools.ErrPermissionDenied, fail.Kind)
	require.Contains(t, fail.Message, "wait for it with wait_agent")

	done := f.spawn(t, "first")
	f.wait(t, done.ID)
	_, err = f.b.SendInput(context.Background(), done.ID, "second")
	require.NoError(t, err)
	out := f.wait(t, done.ID)
	require.Equal(t, "did: second", out.Agents[0].Summary)
	require.Equal(t, []string{"queued", "started", "finished", "queued", "input", "finished"}, f.events.of(done.ID))

	_, err = f.b.Close(context.Background(), done.ID)
	require.NoError(t, err)
	_, err = f.b.SendInput(context.Background(), done.ID, "third")
	require.ErrorAs(t, err, &fail)
	require.Contains(t, fail.Message, "is closed")
}

func TestCancelCascadesToEveryRunningChild(t *testing.T) {
	f := newManagerFixture(t, SubagentConfig{MaxThreads: 1})
	a, b := f.spawn(t, "hang one"), f.spawn(t, "hang two")
	f.events.await(a.ID, tools.SubagentEventStarted)
	f.parent.CancelAsync()
	out := f.wait(t, a.ID, b.ID)
	for _, v := range out.Agents {
		require.Equal(t, tools.SubagentCancelled, v.Status, v.ID)
	}
	require.Equal(t, []string{"queued", "started", "cancelled"}, f.events.of(a.ID))
	require.Equal(t, []string{"queued", "cancelled"}, f.events.of(b.ID))
}

func TestReloadedSessionReportsUnfinishedChildrenDetached(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	cfg := Config{Home: home, Provider: childProvider{}, Model: "m", Tools: tools.Builtins(), Subagents: SubagentConfig{Snapshot: takeCopy}}
	rt := New(cfg)
	parent, err := rt.NewSession(ws)
	require.NoError(t, err)
	events := newCollector()
	parent.SetObserver(events.observe)
	b := binding{m: rt.subagents, parent: parent}
	done, err := b.Spawn(context.Background(), tools.SpawnRequest{Task: "finish me"})
	require.NoError(t, err)
	_, err = b.Wait(context.Background(), tools.WaitRequest{IDs: []string{done.ID}, Timeout: noHorizon})
	require.NoError(t, err)
	hung, err := b.Spawn(context.Background(), tools.SpawnRequest{Task: "hang forever"})
	require.NoError(t, err)
	events.await(hung.ID, tools.SubagentEventStarted)
	// The process "dies": its Log ends with the hung child running. (The
	// running child is then stopped so the test leaks nothing; its events
	// after this point are cut from the Log below.)
	logFile := logPath(parent.workspace.Root(), parent.ID())
	snapshot, err := os.ReadFile(logFile)
	require.NoError(t, err)
	rt.Close()
	require.NoError(t, os.WriteFile(logFile, snapshot, 0o644))

	rt2 := New(cfg)
	defer rt2.Close()
	reopened, _, err := rt2.OpenSession(parent.ID(), ws, nil)
	require.NoError(t, err)
	views, err := binding{m: rt2.subagents, parent: reopened}.List(context.Background())
	require.NoError(t, err)
	require.Len(t, views, 2)
	require.Equal(t, tools.SubagentCompleted, views[0].Status)
	require.Equal(t, "did: finish me", views[0].Summary, "a completed child's summary is intact")
	require.Equal(t, tools.SubagentDetached, views[1].Status, "never reported as completed")
	require.Equal(t, hung.ID, reopened.DetachedSubagents()[0].SubagentID)
	out, err := binding{m: rt2.subagents, parent: reopened}.Wait(context.Background(), tools.WaitRequest{Timeout: time.Second})
	require.NoError(t, err)
	require.False(t, out.Incomplete, "waiting on a detached child returns at once")
	rt2.Close()

	// The first reopening recorded the detached end in the Log: a second
	// one finds it there, records nothing, and lists it the same.
	events1, _, err := ReadLog(logFile)
	require.NoError(t, err)
	rt3 := New(cfg)
	defer rt3.Close()
	again, _, err := rt3.OpenSession(parent.ID(), ws, nil)
	require.NoError(t, err)
	require.Empty(t, again.DetachedSubagents(), "nothing found detached anew")
	events2, _, err := ReadLog(logFile)
	require.NoError(t, err)
	require.Equal(t, events1, events2, "nothing recorded again")
	views, err = binding{m: rt3.subagents, parent: again}.List(context.Background())
	require.NoError(t, err)
	require.Equal(t, tools.SubagentDetached, views[1].Status)
	require.Equal(t, tools.ErrDetached, views[1].Error.Kind)
}

// A child's task is written once in its parent's Log, on the queued event
// of its spawn (a workflow step's task is its whole prompt, and its
// started, finished and queued events each repeated it, started twice):
// a started event has neither task nor input, send_input's events carry
// their input. A reopened session knows the task from the spawn, and a
// Log written before, with the task on every event, reads the same.
func TestAChildsTaskIsWrittenOnceAndReadFromItsSpawn(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	cfg := Config{Home: home, Provider: childProvider{}, Model: "m", Tools: tools.Builtins(), Subagents: SubagentConfig{Snapshot: takeCopy}}
	rt := New(cfg)
	parent, err := rt.NewSession(ws)
	require.NoError(t, err)
	b := binding{m: rt.subagents, parent: parent}
	const task = "Do <part> 1.\nReport \"back\"."
	v, err := b.Spawn(context.Background(), tools.SpawnRequest{Task: task})
	require.NoError(t, err)
	_, err = b.Wait(context.Background(), tools.WaitRequest{IDs: []string{v.ID}, Timeout: noHorizon})
	require.NoError(t, err)
	_, err = b.SendInput(context.Background(), v.ID, "second")
	require.NoError(t, err)
	_, err = b.Wait(context.Background(), tools.WaitRequest{IDs: []string{v.ID}, Timeout: noHorizon})
	require.NoError(t, err)
	rt.Close()

	logFile := logPath(ws, parent.ID())
	events, _, err := ReadLog(logFile)
	require.NoError(t, err)
	var seen []string
	for _, ev := range events {
		if ev.Type != EventSubagent {
			continue
		}
		var d map[string]any
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		seen = append(seen, fmt.Sprintf("%s task=%v input=%v", d["event"], d["task"], d["input"]))
	}
	require.Equal(t, []string{
		"queued task=" + task + " input=<nil>", "started task=<nil> input=<nil>", "finished task=<nil> input=<nil>",
		"queued task=<nil> input=second", "input task=<nil> input=second", "finished task=<nil> input=<nil>",
	}, seen)

	reopen := func(t *testing.T) tools.SubagentView {
		rt := New(cfg)
		defer rt.Close()
		s, _, err := rt.OpenSession(parent.ID(), ws, nil)
		require.NoError(t, err)
		views, err := binding{m: rt.subagents, parent: s}.List(context.Background())
		require.NoError(t, err)
		require.Len(t, views, 1)
		return views[0]
	}
	now := reopen(t)
	require.Equal(t, task, now.Task)
	require.Equal(t, tools.SubagentCompleted, now.Status)
	require.Equal(t, "did: second", now.Summary)

	// The same Log as written before: the task on every event, and a
	// first run's input on its started event.
	raw, err := os.ReadFile(logFile)
	require.NoError(t, err)
	var old []byte
	for line := range bytes.Lines(raw) {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(line, &ev))
		if d, ok := ev["data"].(map[string]any); ok && ev["type"] == string(EventSubagent) {
			d["task"] = task
			if d["event"] == "started" {
				d["input"] = task
			}
		}
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		old = append(append(old, b...), '\n')
	}
	require.NoError(t, os.WriteFile(logFile, old, 0o644))
	require.Equal(t, now, reopen(t))
}

// childCancelledWhileQueuedThenSentInput runs a child that is cancelled
// while still queued (behind a child that holds the one thread) and then
// sent input ("THE MESSAGE"), to its end.
func childCancelledWhileQueuedThenSentInput(t *testing.T) (*managerFixture, tools.SubagentView) {
	t.Helper()
	f := newManagerFixture(t, SubagentConfig{MaxThreads: 1})
	running, queued := f.spawn(t, "hang here"), f.spawn(t, "THE TASK")
	f.rt.subagents.mu.Lock()
	sa := f.rt.subagents.byID[queued.ID]
	f.rt.subagents.mu.Unlock()
	f.rt.subagents.stop(sa, false)
	_, err := f.b.SendInput(context.Background(), queued.ID, "THE MESSAGE")
	require.NoError(t, err)
	_, err = f.b.Close(context.Background(), running.ID) // frees the one thread
	require.NoError(t, err)
	out := f.wait(t, queued.ID)
	require.Equal(t, "did: THE MESSAGE", out.Agents[0].Summary)
	return f, queued
}

// A child cancelled while still queued and then sent input never ran its
// task: its first run's prompt is the input, and its started event says
// so (only a started event whose prompt is the task leaves it out).
func TestAChildCancelledWhileQueuedStartsWithItsInput(t *testing.T) {
	f, queued := childCancelledWhileQueuedThenSentInput(t)
	var seen []string
	f.events.mu.Lock()
	for _, d := range f.events.events {
		if d.SubagentID == queued.ID {
			seen = append(seen, fmt.Sprintf("%s task=%q input=%q", d.Event, d.Task, d.Input))
		}
	}
	f.events.mu.Unlock()
	require.Equal(t, []string{
		`queued task="THE TASK" input=""`, `cancelled task="" input=""`,
		`queued task="" input="THE MESSAGE"`, `started task="" input="THE MESSAGE"`, `finished task="" input=""`,
	}, seen)
}

func TestKeepEndsKeepsTheConclusion(t *testing.T) {
	long := strings.Repeat("é", 3000) + "\ncheckpoint_status: partial"
	got := keepEnds(long, 4096)
	require.True(t, utf8.ValidString(got))
	require.True(t, strings.HasPrefix(got, "éé"))
	require.True(t, strings.HasSuffix(got, "\ncheckpoint_status: partial"))
	require.Contains(t, got, "bytes omitted")
	require.Less(t, len(got), 4096+100)
}

// summariesNaming counts the subagent_summaries events of a Log that name
// the child id.
func summariesNaming(t *testing.T, logFile, id string) int {
	t.Helper()
	events, _, err := ReadLog(logFile)
	require.NoError(t, err)
	n := 0
	for _, ev := range events {
		var d SubagentSummariesData
		if ev.Type == EventSubagentSummaries && json.Unmarshal(ev.Data, &d) == nil && slices.Contains(d.SubagentIDs, id) {
			n++
		}
	}
	return n
}

// A child a crash left running is recorded detached by the next opening;
// when that process ends before any model call (the user opened the
// session and closed it), its end is still news at the next opening, and
// is told once: at the model call after it, not again after that. Before,
// the second opening read the recorded end as told, and the model never
// heard the child had ended.
func TestADetachedEndIsNewsUntilTheModelIsTold(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	cfg := Config{Home: home, Provider: childProvider{}, Model: "m", Tools: tools.Builtins(), Subagents: SubagentConfig{Snapshot: takeCopy}}
	rt := New(cfg)
	parent, err := rt.NewSession(ws)
	require.NoError(t, err)
	events := newCollector()
	parent.SetObserver(events.observe)
	hung, err := binding{m: rt.subagents, parent: parent}.Spawn(context.Background(), tools.SpawnRequest{Task: "hang forever"})
	require.NoError(t, err)
	events.await(hung.ID, tools.SubagentEventStarted)
	logFile := logPath(parent.workspace.Root(), parent.ID())
	crashed, err := os.ReadFile(logFile)
	require.NoError(t, err)
	rt.Close()
	require.NoError(t, os.WriteFile(logFile, crashed, 0o644))

	// Opened and closed without a model call: the end is recorded, not told.
	openInANewProcess(t, cfg, parent.ID(), ws, "")
	require.Zero(t, summariesNaming(t, logFile, hung.ID))

	openInANewProcess(t, cfg, parent.ID(), ws, "hello")
	require.Equal(t, 1, summariesNaming(t, logFile, hung.ID), "told at the first model call after it")

	openInANewProcess(t, cfg, parent.ID(), ws, "hello again")
	require.Equal(t, 1, summariesNaming(t, logFile, hung.ID), "told once")
}

// openInANewProcess opens session id of workspace ws in a Runtime of its
// own, as a new process would, sends it prompt (none when ""), and closes
// that Runtime.
func openInANewProcess(t *testing.T, cfg Config, id, ws, prompt string) {
	t.Helper()
	rt := New(cfg)
	defer rt.Close()
	s, _, err := rt.OpenSession(id, ws, nil)
	require.NoError(t, err)
	if prompt != "" {
		_, err = s.Prompt(context.Background(), Prompt{Text: prompt}, TurnOptions{})
		require.NoError(t, err)
	}
}

// Two records of the detached ends at once (the session's opening, and a
// turn an editor started meanwhile) write each end once, and leave none
// unrecorded. Before, each took the whole list and dropped entries by
// position: ends were written twice.
func TestDetachedEndsRecordedAtOnceAreWrittenOnce(t *testing.T) {
	rt := New(Config{Home: t.TempDir(), Provider: childProvider{}, Model: "m"})
	defer rt.Close()
	for range 5 {
		s, err := rt.NewSession(t.TempDir())
		require.NoError(t, err)
		var ends []SubagentEventData
		for i := range 200 {
			ends = append(ends, SubagentEventData{SubagentID: fmt.Sprintf("sa-%d", i), Event: tools.SubagentEventFailed, Status: tools.SubagentDetached})
		}
		s.mu.Lock()
		s.unrecorded = slices.Clone(ends)
		s.mu.Unlock()
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 2 {
			wg.Go(func() {
				<-start
				require.NoError(t, s.recordDetached())
			})
		}
		close(start)
		wg.Wait()
		events, _, err := ReadLog(logPath(s.workspace.Root(), s.ID()))
		require.NoError(t, err)
		n := 0
		for _, ev := range events {
			if ev.Type == EventSubagent {
				n++
			}
		}
		require.Equal(t, len(ends), n, "each end written once")
		s.mu.Lock()
		require.Empty(t, s.unrecorded)
		s.mu.Unlock()
	}
}

// A child that ended well while its parent was not waiting for it, in a
// process that ended before the parent's next model call, is news to the
// parent's model at the next opening, told once, as a detached one is.
// Before, every child a Log showed ended counted as told when the session
// was opened again, and the model never heard it had finished.
func TestAnEndTheModelWasNotToldIsNewsAfterTheProcessEnds(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	cfg := Config{Home: home, Provider: childProvider{}, Model: "m", Tools: tools.Builtins(), Subagents: SubagentConfig{Snapshot: takeCopy}}
	rt := New(cfg)
	parent, err := rt.NewSession(ws)
	require.NoError(t, err)
	events := newCollector()
	parent.SetObserver(events.observe)
	told, err := binding{m: rt.subagents, parent: parent}.Spawn(context.Background(), tools.SpawnRequest{Task: "told"})
	require.NoError(t, err)
	awaitEnded(rt.subagents, told.ID)
	// This one the model is told of: the next call's summaries name it.
	_, err = parent.Prompt(context.Background(), Prompt{Text: "hello"}, TurnOptions{})
	require.NoError(t, err)
	quiet, err := binding{m: rt.subagents, parent: parent}.Spawn(context.Background(), tools.SpawnRequest{Task: "quiet"})
	require.NoError(t, err)
	awaitEnded(rt.subagents, quiet.ID)
	logFile := logPath(parent.workspace.Root(), parent.ID())
	rt.Close()
	require.Equal(t, 1, summariesNaming(t, logFile, told.ID))
	require.Zero(t, summariesNaming(t, logFile, quiet.ID))

	// Opened and closed without a model call: still news.
	openInANewProcess(t, cfg, parent.ID(), ws, "")

	openInANewProcess(t, cfg, parent.ID(), ws, "hello again")
	require.Equal(t, 1, summariesNaming(t, logFile, quiet.ID), "told at the first model call after it")
	require.Equal(t, 1, summariesNaming(t, logFile, told.ID), "what the model was told is not told again")

	openInANewProcess(t, cfg, parent.ID(), ws, "and again")
	require.Equal(t, 1, summariesNaming(t, logFile, quiet.ID), "told once")
}
