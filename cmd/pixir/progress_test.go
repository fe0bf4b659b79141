package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// The view reads a subagent_event's four members as a whole decode would,
// and refuses what a whole decode refuses.
func TestReadSubagentEventAgreesWithAWholeDecode(t *testing.T) {
	whole, err := json.Marshal(runtime.SubagentEventData{Event: tools.SubagentEventStarted, SubagentID: "sa-1", Name: "s\u00e9\"1",
		WorkspaceMode: "shared", Task: "a long task\nwith \"quotes\" and \\ escapes", Summary: "done"})
	require.NoError(t, err)
	for _, tt := range []struct {
		name string
		data string
		ok   bool
	}{
		{"an event as the runtime writes it", string(whole), true},
		{"a repeated member: the last counts", `{"name":"a","event":"queued","name":"b"}`, true},
		{"members missing", `{"event":"queued"}`, true},
		{"not an object", `["queued"]`, false},
		{"a member of the wrong type", `{"name":1}`, false},
		{"not JSON", `{"name":"a"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var want runtime.SubagentEventData
			wantErr := json.Unmarshal([]byte(tt.data), &want)
			got, ok := readSubagentEvent([]byte(tt.data))
			require.Equal(t, tt.ok, ok)
			require.Equal(t, wantErr == nil, ok)
			if ok {
				require.Equal(t, subagentFields{event: string(want.Event), subagentID: want.SubagentID, name: want.Name, workspaceMode: want.WorkspaceMode}, got)
			}
		})
	}
}

// A run's row goes below its step's last row: a step's placeholder
// becomes its first run's, and rows stay in the steps' order whatever
// order their runs show up in.
func TestViewRowsStayGroupedByStep(t *testing.T) {
	w := &workflows.Workflow{Steps: []workflows.Step{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	v := newWorkflowView(io.Discard, false, w)
	for _, run := range []string{"b[1]", "a", "a#2", "b[2]", "a#3", "b[3]"} {
		r := v.row(run, "")
		require.NotNil(t, r)
		r.state = rowReady // decided: the next run gets a row of its own
	}
	require.Nil(t, v.row("nope#2", ""), "a run of no step has no row")
	var ids []string
	v.eachRow(func(r *stepRow) { ids = append(ids, r.id) })
	require.Equal(t, []string{"a", "a#2", "a#3", "b[1]", "b[2]", "b[3]", "c"}, ids)
	require.Same(t, v.row("b[2]", ""), v.byID["b[2]"])
}

// TestAQuestionIsNotDrawnOver: while a question is on the terminal (a
// Subagent asks while the parent waits for its model) the waiting line is
// off it and stays off; it comes back once the question is answered.
func TestAQuestionIsNotDrawnOver(t *testing.T) {
	var stderr strings.Builder
	v := &turnView{out: newRunOutput(io.Discard, &stderr, false), titles: map[string]string{}}
	v.waiting, v.waitingSince = true, time.Now()
	v.drawWaiting()
	require.Contains(t, stderr.String(), "waiting for the model")

	stderr.Reset()
	resume := v.pause()
	require.Equal(t, "\r\033[K", stderr.String(), "the waiting line is taken off before the question")
	stderr.Reset()
	v.drawWaiting() // a tick while the question waits
	require.Empty(t, stderr.String(), "drawn over the question")

	resume()
	v.drawWaiting()
	require.Contains(t, stderr.String(), "waiting for the model")
}

// viewEvent is an event as the Log has it: its data as JSON only.
func viewEvent(t *testing.T, typ runtime.EventType, data any) runtime.Event {
	t.Helper()
	b, err := json.Marshal(data)
	require.NoError(t, err)
	return runtime.Event{Type: typ, Data: b}
}

// TestTheTerminalViewOfAHugeWorkflowIsAWindow: with 10,000 steps and
// loops, a frame is the terminal's height less one: the counts by status,
// the loops still running (as many as a third of it holds), the rows that
// ended last and every running one; the next frame moves up over exactly
// that many lines. While every row fits, every row is shown.
func TestTheTerminalViewOfAHugeWorkflowIsAWindow(t *testing.T) {
	const steps, height = 10000, 30
	w := &workflows.Workflow{Name: "huge"}
	for i := range steps {
		w.Steps = append(w.Steps, workflows.Step{ID: fmt.Sprintf("s%d", i)})
	}
	for i := range 40 {
		w.Loops = append(w.Loops, workflows.Loop{ID: fmt.Sprintf("loop%d", i), MaxIterations: 10})
	}
	var screen strings.Builder
	v := newWorkflowView(&screen, true, w)
	v.size = func() (int, int) { return 200, height }
	v.begin = v.now()
	event := func(kind, step string) {
		switch kind {
		case "queued", "started":
			v.observe(viewEvent(t, runtime.EventSubagent, runtime.SubagentEventData{Event: tools.SubagentEvent(kind), SubagentID: "sa-" + step, Name: step, WorkspaceMode: "shared"}))
		case "decided":
			v.observe(viewEvent(t, runtime.EventWorkflow, workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, StepID: step,
				Outcome: &workflows.StepOutcome{StepID: step, CheckpointStatus: workflows.CheckpointReady, SubagentStatus: "completed", Summary: "done " + step}}))
		}
	}
	for i := range 30 { // ten of the loops end
		v.observe(viewEvent(t, runtime.EventWorkflow, workflows.WorkflowEvent{Kind: workflows.EventIterationStarted, Loop: fmt.Sprintf("loop%d", i), Run: fmt.Sprintf("loop%d", i), Iteration: 1}))
	}
	for i := range 10 {
		v.observe(viewEvent(t, runtime.EventWorkflow, workflows.WorkflowEvent{Kind: workflows.EventLoopFinished, Loop: fmt.Sprintf("loop%d", i), Run: fmt.Sprintf("loop%d", i),
			LoopOutcome: &workflows.LoopOutcome{Loop: fmt.Sprintf("loop%d", i), Run: fmt.Sprintf("loop%d", i), Iterations: 1, MaxIterations: 10, State: workflows.LoopSatisfied}}))
	}
	const done, running = 6000, 8 // s0..s5999 decided, s6000..s6007 running, s6008 queued
	for i := range done + running {
		event("queued", w.Steps[i].ID)
		event("started", w.Steps[i].ID)
		if i >= running {
			event("decided", w.Steps[i-running].ID)
		}
	}
	event("queued", "s6008")

	v.draw()
	first := screen.String()
	frame := strings.Split(strings.TrimSuffix(first, "\x1b[K\n"), "\x1b[K\n")
	require.Len(t, frame, height-1, "a frame fills the terminal but for its last line:\n%s", first)
	require.Contains(t, frame[0], "Workflow huge — 6000/10000 checkpoint_ready")
	require.Equal(t, "  8 running · 1 queued · 3991 pending · 6000 checkpoint_ready", frame[1])
	loops := 0
	for _, l := range frame {
		if strings.Contains(l, "↻ loop ") {
			loops++
		}
	}
	require.Equal(t, height/3-2, loops, "the loops still running take a third of the room")
	require.Contains(t, first, "… 22 more loops (10 finished)")
	for i := done; i <= done+running; i++ {
		require.Regexp(t, fmt.Sprintf(`  . s%d +default`, i), first, "every running or queued row is shown")
	}
	last := strings.Index(first, "s6008")
	require.Regexp(t, `✓ s5999 +default .* done s5999`, first, "the newest ended row is shown")
	require.Less(t, strings.Index(first, "s5999"), strings.Index(first, "s6000"), "ended rows above the running ones")
	require.Less(t, strings.Index(first, "s6000"), last, "the running ones in the order they came")
	ended := regexp.MustCompile(`✓ s(\d+) `).FindAllStringSubmatch(first, -1)
	require.NotEmpty(t, ended)
	require.Equal(t, fmt.Sprint(done-len(ended)), ended[0][1], "the rows that ended last, oldest first")
	require.Equal(t, fmt.Sprintf("  … %d more rows", steps-len(ended)-running-1), frame[len(frame)-1])

	screen.Reset()
	v.draw()
	require.True(t, strings.HasPrefix(screen.String(), fmt.Sprintf("\x1b[%dF\x1b[J", height-1)), "the next frame replaces this one")

	// A terminal shorter than the running rows: the frame still fits.
	v.size = func() (int, int) { return 200, 8 }
	screen.Reset()
	v.draw()
	require.Len(t, strings.Split(strings.TrimSuffix(screen.String(), "\x1b[K\n"), "\x1b[K\n"), 7)
	require.Contains(t, screen.String(), "of them running or queued)")

	// Every row fits: every row, as before, in the steps' order.
	small := &workflows.Workflow{Name: "small", Steps: []workflows.Step{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	screen.Reset()
	v = newWorkflowView(&screen, true, small)
	v.size = func() (int, int) { return 200, height }
	v.observe(viewEvent(t, runtime.EventSubagent, runtime.SubagentEventData{Event: tools.SubagentEventQueued, SubagentID: "sa-b", Name: "b"}))
	v.draw()
	frame = strings.Split(strings.TrimSuffix(screen.String(), "\x1b[K\n"), "\x1b[K\n")
	require.Len(t, frame, 4)
	require.Regexp(t, `· a `, frame[1])
	require.Regexp(t, `. b +default .*queued`, frame[2])
	require.Regexp(t, `· c `, frame[3])
}

// A terminal resized below the live view's five rows while a workflow
// runs: the view stops drawing frames (a frame no longer fits, and its
// cursor moves would land above it) and says so, and what happens next is
// a plain line below the last frame.
func TestAViewResizedTooShortFallsBackToPlainLines(t *testing.T) {
	w := &workflows.Workflow{Name: "small", Steps: []workflows.Step{{ID: "a"}, {ID: "b"}}}
	var screen strings.Builder
	v := newWorkflowView(&screen, true, w)
	v.size = func() (int, int) { return 100, 24 }
	v.begin = v.now()
	v.draw()
	require.Contains(t, screen.String(), "\x1b[K\n")

	v.size = func() (int, int) { return 100, 4 }
	screen.Reset()
	v.draw()
	require.NotContains(t, screen.String(), "\x1b[")
	require.Contains(t, screen.String(), "the terminal has 4 rows, too few for the live view (5): plain lines from here on\n")
	screen.Reset()
	v.observe(viewEvent(t, runtime.EventSubagent, runtime.SubagentEventData{Event: tools.SubagentEventQueued, SubagentID: "sa-a", Name: "a"}))
	v.draw()
	require.NotContains(t, screen.String(), "\x1b[")
	require.Regexp(t, `^\d{4}-\d\d-\d\dT[0-9:.]+Z step a queued \(default, subagent sa-a\)\n$`, screen.String())
}

// The headless view's lines are built in buffers it reuses: each line
// written (or held) stays as it was when the next is built, and a
// summary from a model prints inert in it.
func TestHeadlessViewLinesStayWholeAndInert(t *testing.T) {
	var out bytes.Buffer
	w := &workflows.Workflow{Name: "wf", Steps: []workflows.Step{{ID: "a"}, {ID: "b"}}}
	v := newWorkflowView(&out, false, w)
	v.now = func() time.Time { return time.Date(2026, 11, 24, 16, 0, 0, 0, time.UTC) }
	held := newHeldLines(&out)
	for _, lines := range []*heldLines{nil, held} {
		out.Reset()
		v.held = lines
		v.workflowEvent(workflows.WorkflowEvent{Kind: workflows.EventWorkflowStarted, WorkflowID: "wf-1"})
		v.workflowEvent(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, StepID: "a", Outcome: &workflows.StepOutcome{
			StepID: "a", CheckpointStatus: workflows.CheckpointReady, SubagentStatus: tools.SubagentCompleted, Summary: "\x1b]0;pwned\x07done"}})
		v.workflowEvent(workflows.WorkflowEvent{Kind: workflows.EventFanOut, Run: "b", Items: 2, MaxItems: 5})
		held.Flush()
		require.Equal(t, "2026-11-24T16:00:00.000Z workflow wf-1 started: 2 steps\n"+
			"2026-11-24T16:00:00.000Z step a checkpoint_ready (subagent completed) in 0.0 s: ␛]0;pwned␇done\n"+
			"2026-11-24T16:00:00.000Z step b fans out over 2 items (max 5)\n", out.String())
	}
}

// A line's stamp, its date and time formatted once a second, is what the
// layout writes, across seconds, days, years and time zones.
func TestALinesStampIsItsTimeAsTheLayoutWritesIt(t *testing.T) {
	var c stampCache
	east := time.FixedZone("east", 5*3600+1800)
	start := time.Date(2026, 12, 31, 23, 59, 58, 998_999_999, time.UTC)
	var b []byte
	for _, step := range []time.Duration{0, 1, time.Microsecond, time.Millisecond, 7 * time.Millisecond, 999 * time.Millisecond, time.Second, 0, 1500 * time.Millisecond, -3 * time.Second, 24 * time.Hour} {
		start = start.Add(step)
		for _, at := range []time.Time{start, start.In(east)} {
			want := at.UTC().Format("2006-01-02T15:04:05.000Z")
			b = c.append(b[:0], at)
			require.Equal(t, want, string(b), "at %v", at)
		}
	}
	require.Equal(t, "x1969-12-31T23:59:59.500Z", string(c.append([]byte("x"), time.Unix(0, -500_000_000))))
}

// One item is one item, not "1 items".
func TestHeadlessViewCountsOneItem(t *testing.T) {
	var out bytes.Buffer
	v := newWorkflowView(&out, false, &workflows.Workflow{Name: "wf", Steps: []workflows.Step{{ID: "b"}}})
	v.now = func() time.Time { return time.Date(2026, 11, 24, 16, 0, 0, 0, time.UTC) }
	v.workflowEvent(workflows.WorkflowEvent{Kind: workflows.EventFanOut, Run: "b", Items: 1, MaxItems: 5})
	require.Equal(t, "2026-11-24T16:00:00.000Z step b fans out over 1 item (max 5)\n", out.String())
}

// Every frame counts a looped run as the outcome will: the runs of an
// earlier iteration are not steps, and the new iteration's are, pending
// until they show up. Mid-run the header said "2/3 checkpoint_ready" when
// the loop's second iteration began (its first iteration's runs counted
// ready), then "2/4", "3/5"; only the last frame, the outcome's, said
// "3/3 …; 2 runs of earlier iterations".
func TestEveryFrameCountsALoopAsTheOutcomeDoes(t *testing.T) {
	w, err := workflows.Parse(json.RawMessage(`{"name":"review loop","steps":[
		{"id":"draft","task":"d"},{"id":"review","task":"r","depends_on":["draft"]},{"id":"ship","task":"s","depends_on":["review"]}],
		"loops":[{"id":"plan","steps":["draft","review"],"max_iterations":3}]}`))
	require.NoError(t, err)
	var screen strings.Builder
	v := newWorkflowView(&screen, true, w)
	v.begin = v.now()
	head := func() string {
		h, _, _ := strings.Cut(v.frameLines(100)[0], " · ")
		return strings.TrimPrefix(h, "Workflow review loop — ")
	}
	ev := func(d workflows.WorkflowEvent) { v.observe(viewEvent(t, runtime.EventWorkflow, d)) }
	ready := func(step, run string) {
		ev(workflows.WorkflowEvent{Kind: workflows.EventStepScheduled, StepID: step, Run: run})
		ev(workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, StepID: step, Run: run,
			Outcome: &workflows.StepOutcome{StepID: step, Run: run, CheckpointStatus: workflows.CheckpointReady, SubagentStatus: "completed"}})
	}
	require.Equal(t, "0/3 checkpoint_ready", head())
	ev(workflows.WorkflowEvent{Kind: workflows.EventIterationStarted, Loop: "plan", Run: "plan", Iteration: 1})
	require.Equal(t, "0/3 checkpoint_ready", head())
	ready("draft", "draft#1")
	ready("review", "review#1")
	require.Equal(t, "2/3 checkpoint_ready", head())
	ev(workflows.WorkflowEvent{Kind: workflows.EventIterationStarted, Loop: "plan", Run: "plan", Iteration: 2})
	require.Equal(t, "0/3 checkpoint_ready; 2 runs of earlier iterations", head())
	ready("draft", "draft#2")
	require.Equal(t, "1/3 checkpoint_ready; 2 runs of earlier iterations", head())
	ready("review", "review#2")
	ev(workflows.WorkflowEvent{Kind: workflows.EventStepSkipped, StepID: "ship", Run: "ship", SkipReason: "skipped: no"})
	require.Equal(t, "2/3 checkpoint_ready, 1 skipped; 2 runs of earlier iterations", head())
	final := workflows.Counts{Steps: 5, CheckpointReadySteps: 2, SkippedSteps: 1, SupersededRuns: 2}
	require.Equal(t, final.Brief(), head(), "as the outcome counts")
	var rows []string
	v.eachRow(func(r *stepRow) { rows = append(rows, r.id+" "+string(r.state)) })
	require.Equal(t, []string{"draft#1 checkpoint_ready", "draft#2 checkpoint_ready", "review#1 checkpoint_ready", "review#2 checkpoint_ready", "ship skipped"}, rows, "one row per run")
}

// TestAFrameLineFitsTheTerminalsColumns: a row whose summary is Chinese
// is cut to the columns the terminal has, a wide character counting two,
// so no line wraps and the next frame's move up covers the whole frame;
// a terminal narrower than 20 columns gets lines its width too, not 100
// columns that wrap.
func TestAFrameLineFitsTheTerminalsColumns(t *testing.T) {
	require.Equal(t, "ab", cutToColumns("ab漢字", 3), "a wide character that does not fit is left out whole")
	require.Equal(t, "ab漢", cutToColumns("ab漢字", 4))
	require.Equal(t, "e\u0301té", cutToColumns("e\u0301té!", 3), "a combining mark takes no column")
	require.Equal(t, "✓ 🙂", cutToColumns("✓ 🙂x", 4))

	for _, cols := range []int{80, 12} {
		w := &workflows.Workflow{Name: "wf", Steps: []workflows.Step{{ID: "a"}, {ID: "b"}}}
		var screen strings.Builder
		v := newWorkflowView(&screen, true, w)
		v.size = func() (int, int) { return cols, 24 }
		v.begin = v.now()
		v.observe(viewEvent(t, runtime.EventSubagent, runtime.SubagentEventData{Event: tools.SubagentEventQueued, SubagentID: "sa-a", Name: "a"}))
		v.observe(viewEvent(t, runtime.EventSubagent, runtime.SubagentEventData{Event: tools.SubagentEventStarted, SubagentID: "sa-a", Name: "a", WorkspaceMode: "shared"}))
		v.observe(viewEvent(t, runtime.EventWorkflow, workflows.WorkflowEvent{Kind: workflows.EventCheckpointDecided, StepID: "a",
			Outcome: &workflows.StepOutcome{StepID: "a", CheckpointStatus: workflows.CheckpointReady, SubagentStatus: "completed", Summary: "已完成：读取了全部文件并总结了项目的结构和承诺"}}))
		v.draw()
		frame := strings.Split(strings.TrimSuffix(screen.String(), "\x1b[K\n"), "\x1b[K\n")
		require.Len(t, frame, 3)
		for _, l := range frame {
			n := 0
			for _, r := range l {
				n += runeColumns(r)
			}
			require.Less(t, n, cols, "%q takes %d columns of %d", l, n, cols)
		}
		if cols == 80 {
			require.Contains(t, frame[1], "已完成", "the summary is shown, as far as it fits")
		}
	}
}
