package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/internal/jsonraw"
	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/internal/termtext"
	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// runOutput is where pixir run and pixir resume print their result:
// people get text, scripts (--json) get one envelope on stdout, shaped
// like a tool result ({"ok":…,"output":…} or {"ok":false,"error":…}).
type runOutput struct {
	stdout, stderr io.Writer
	json           bool
}

func newRunOutput(stdout, stderr io.Writer, asJSON bool) *runOutput {
	return &runOutput{stdout: stdout, stderr: stderr, json: asJSON}
}

func (o *runOutput) envelope(r tools.Result) {
	enc := json.NewEncoder(o.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		fmt.Fprintln(o.stderr, "pixir:", err)
	}
}

// usage reports invalid input: exit 64.
func (o *runOutput) usage(err error) int {
	return o.invalid(&tools.Failure{Kind: tools.ErrInvalidArgs, Message: err.Error()})
}

// openFailed reports a session that could not be opened: one another
// process has open is a conflict (exit 1: it can be tried again once that
// process closes it), anything else invalid input (exit 64).
func (o *runOutput) openFailed(err error) int {
	if errors.Is(err, runtime.ErrSessionInUse) {
		return o.refuse(&tools.Failure{Kind: tools.ErrConflict, Message: err.Error()})
	}
	return o.usage(err)
}

// invalid reports an invalid spec or argument: exit 64.
func (o *runOutput) invalid(f *tools.Failure) int {
	fmt.Fprintln(o.stderr, "pixir:", f.Message)
	if o.json {
		o.envelope(tools.Failed(f))
	}
	return exitUsage
}

// failure reports a refusal of the workflow use case: invalid input (an
// invalid_args failure) exits 64, anything else 1.
func (o *runOutput) failure(err error) int {
	if f := tools.AsFailure(err); f.Kind != tools.ErrInvalidArgs {
		return o.refuse(f)
	}
	return o.invalid(tools.AsFailure(err))
}

// refuse reports a run that cannot happen as asked: exit 1.
func (o *runOutput) refuse(f *tools.Failure) int {
	fmt.Fprintf(o.stderr, "pixir: %s: %s\n", f.Kind, f.Message)
	if o.json {
		o.envelope(tools.Failed(f))
	}
	return exitError
}

func (o *runOutput) dryRun(d workflows.DryRunOutcome) int {
	if o.json {
		o.envelope(tools.OK(d))
	} else {
		fmt.Fprint(o.stdout, d.Output)
	}
	return exitOK
}

// workflow prints a workflow's outcome; its status is the exit code.
// The table's "Next:" list is written for the model (run_workflow's
// arguments); a person gets the commands that do the same.
func (o *runOutput) workflow(out workflows.Outcome, next sessionNext) int {
	if o.json {
		o.envelope(tools.Result{OK: out.Status == workflows.StatusCompleted, Output: out})
	} else {
		table, _, _ := strings.Cut(out.Output, "\nNext:\n")
		fmt.Fprint(o.stdout, table)
		if !strings.HasSuffix(table, "\n") {
			fmt.Fprintln(o.stdout)
		}
		next.actions(o.stdout, out)
	}
	switch out.Status {
	case workflows.StatusCompleted:
		return exitOK
	case workflows.StatusPartial:
		return exitPartial
	}
	if out.StoppedBy == workflows.StoppedCancelled {
		// A cancel (a signal) is exit 2 as a cancelled turn's is, even
		// with no step ready: not a failure.
		return exitPartial
	}
	return exitError
}

// turn prints a turn's end (its text was streamed); its status is the
// exit code.
func (o *runOutput) turn(res runtime.TurnOutcome, next sessionNext) int {
	if o.json {
		o.envelope(tools.Result{OK: res.Status == runtime.TurnCompleted, Output: res})
	} else if res.Text != "" && !strings.HasSuffix(res.Text, "\n") {
		fmt.Fprintln(o.stdout)
	}
	if res.Error != nil {
		fmt.Fprintf(o.stderr, "pixir: %s: %s\n", res.Error.Kind, res.Error.Message)
	}
	if !res.Usage.IsZero() {
		fmt.Fprintf(o.stderr, "pixir: usage: %s\n", res.Usage)
	}
	if res.Status == runtime.TurnPartial {
		fmt.Fprintf(o.stderr, "pixir: the turn ended %s\n", res.StopReason)
	}
	next.print(o.stderr)
	switch res.Status {
	case runtime.TurnCompleted:
		return exitOK
	case runtime.TurnPartial:
		return exitPartial
	}
	return exitError
}

// sessionNext is the last line of pixir run and pixir resume: the
// session's id, shortened to what a person types, and the commands that
// go on with it, ready to paste.
type sessionNext struct {
	short    string   // the id's shortest unique start (inspect.ShortID)
	cwd      string   // the --cwd the run was given, repeated in the commands
	workflow string   // the --workflow file, for a retry
	sets     []string // its --set name=value arguments (a template's), repeated in a retry
	// model is the flags that chose the model (providerFlags.repeat),
	// repeated in every resume: without them a pasted resume runs on
	// whatever the environment and config.toml choose, the offline
	// scripted model when they choose nothing.
	model string
}

func (n sessionNext) print(w io.Writer) {
	if n.short == "" {
		return
	}
	fmt.Fprintf(w, "pixir: session %s · go on: pixir resume%s%s %s \"…\" · see what it did: pixir inspect%s %s\n", n.short, n.cwdFlag(), n.model, n.short, n.cwdFlag(), n.short)
}

func (n sessionNext) cwdFlag() string {
	if n.cwd == "" {
		return ""
	}
	return " --cwd " + shellQuote(n.cwd)
}

// actions prints a workflow's safe next actions as a person does them:
// a retry is the pixir resume command to paste.
func (n sessionNext) actions(w io.Writer, out workflows.Outcome) {
	if len(out.SafeNextActions) == 0 {
		return
	}
	var sets strings.Builder
	for _, set := range n.sets {
		sets.WriteString(" --set " + shellQuote(set))
	}
	retry := fmt.Sprintf("pixir resume%s%s %s --workflow %s%s --resume-from %s", n.cwdFlag(), n.model, n.short, shellQuote(n.workflow), sets.String(), out.WorkflowID)
	fmt.Fprintln(w, "\nNext:")
	retried := false
	for _, a := range out.SafeNextActions {
		steps := ""
		if len(a.StepIDs) > 0 {
			ids := a.StepIDs[:min(len(a.StepIDs), 10)]
			steps = strings.Join(ids, ", ")
			if more := len(a.StepIDs) - len(ids); more > 0 {
				steps += fmt.Sprintf(" … and %d more", more)
			}
		}
		switch a.Action {
		case "retry_failed_steps":
			retried = true
			if out.StoppedBy == workflows.StoppedBudget {
				fmt.Fprintf(w, "- the budget was spent while the run went on: raise it (the run's: budget in %s, or workflow_tokens or workflow_cost in [budget] of config.toml; the session's: session_tokens or session_cost there), then retry %s, reusing the checkpoint_ready steps:\n    %s\n", n.workflow, steps, retry)
				break
			}
			fmt.Fprintf(w, "- retry %s, reusing the checkpoint_ready steps (fix what made them fail first):\n    %s\n", steps, retry)
		case "rerun_held_steps":
			switch {
			case out.StoppedBy == workflows.StoppedBudget:
				fmt.Fprintf(w, "- the budget was spent before %s started: raise it (the run's: budget in %s, or workflow_tokens or workflow_cost in [budget] of config.toml; the session's: session_tokens or session_cost there), then run only what is left:\n    %s\n", steps, n.workflow, retry)
			case strings.HasPrefix(out.StoppedBy, workflows.StoppedPreflight):
				fmt.Fprintf(w, "- no step started: the checks before the first one failed (said above); fix what they found, then run it:\n    %s\n", retry)
			case retried:
				fmt.Fprintf(w, "- %s never started: the same command runs them once what they wait for is checkpoint_ready\n", steps)
			default:
				fmt.Fprintf(w, "- %s never started; run only what is left:\n    %s\n", steps, retry)
			}
		case workflows.ActionMakeMissedCommits:
			retried = true
			fmt.Fprintf(w, "- every step is done, but a commit was not made (why is said above): settle that, then make only the missing commits:\n    %s\n", retry)
		case "ask_user":
			if l := a.Loop; l != nil {
				// A loop that holds its dependents: resuming alone decides
				// the same, so the command comes after what to change.
				fmt.Fprintf(w, "- %s: resuming reuses its iterations and ends it the same way; %s, then:\n    %s\n", l.Situation(), l.Change(), retry)
				break
			}
			if steps == "" { // about the run as a whole (its Log could not all be written)
				fmt.Fprintf(w, "- %s\n", a.Reason)
				break
			}
			fmt.Fprintf(w, "- decide about %s: they need a decision (needs_orchestrator) or gave only partial evidence; pixir inspect%s %s shows what they reported\n", steps, n.cwdFlag(), n.short)
		case "abort":
			fmt.Fprintf(w, "- or stop here: %s stands as it is; isolated writers' changes that were not merged stay in their snapshots (pixir inspect shows where)\n", out.What())
		default:
			if steps != "" {
				steps = " [" + steps + "]"
			}
			fmt.Fprintf(w, "- %s%s: %s\n", a.Action, steps, a.Reason)
		}
	}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@,+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// turnView shows a headless turn: the answer streams to stdout (unless
// --json), each tool call and Subagent is a line on stderr.
type turnView struct {
	out *runOutput

	stamp bool // timestamp progress lines: stderr is not a terminal

	mu      sync.Mutex
	text    strings.Builder
	midLine bool // stdout's last line is not ended, on the terminal stderr is on
	// shared: stdout and stderr are terminals (one, as a rule): a line on
	// stderr ends the answer's line first. Otherwise stdout holds the
	// answer byte for byte: a file, a pipe.
	shared   bool
	newMsg   bool // the next text starts another message
	calls    int
	failed   int
	titles   map[string]string
	turnFail *tools.Failure
	running  int // tool calls without a result

	// On a terminal (and without --json), a line on stderr says the
	// model is being waited for while it is silent, with the seconds
	// since it was asked; it is cleared when anything else is written.
	waiting      bool
	waitingSince time.Time
	shown        bool // the waiting line is on the terminal
	paused       int  // questions on the screen: no waiting line
	stopTicker   chan struct{}
	tickerDone   chan struct{}
	done         bool // outcome was called: the turn's end is being written
}

func newTurnView(out *runOutput) *turnView {
	v := &turnView{out: out, titles: map[string]string{}, stamp: !isTerminal(out.stderr)}
	v.shared = !v.stamp && isTerminal(out.stdout)
	if !out.json && !v.stamp {
		v.stopTicker, v.tickerDone = make(chan struct{}), make(chan struct{})
		go v.tick()
	}
	return v
}

// tick redraws the waiting line every second until outcome.
func (v *turnView) tick() {
	defer close(v.tickerDone)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-v.stopTicker:
			return
		case <-t.C:
			v.mu.Lock()
			v.drawWaiting()
			v.mu.Unlock()
		}
	}
}

// modelAsked starts the waiting line: the model was just asked.
func (v *turnView) modelAsked() {
	if v.stopTicker != nil {
		v.waiting, v.waitingSince = true, time.Now()
	}
}

func (v *turnView) drawWaiting() {
	if !v.waiting || v.midLine || v.paused > 0 {
		return
	}
	// Its own control sequences: stderr's writer makes those of models and
	// tools inert.
	fmt.Fprintf(termtext.Raw(v.out.stderr), "\r\033[K  … waiting for the model · %d s", int(time.Since(v.waitingSince).Seconds()))
	v.shown = true
}

// pause takes the waiting line off the terminal and keeps it off until
// the returned function is called: a question asked there (a Subagent's
// permission, while the parent waits for its model) must not be drawn
// over.
func (v *turnView) pause() (resume func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clearWaiting()
	v.paused++
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.paused--
	}
}

// writeAbove writes a line that is not the view's (a warning of the
// runtime's log) on the terminal: the waiting line is cleared first, the
// answer's line ended, and the waiting line drawn again below it.
func (v *turnView) writeAbove(write func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.done {
		write()
		return
	}
	v.clearWaiting()
	defer v.drawWaiting()
	if v.midLine {
		fmt.Fprintln(v.out.stdout)
		v.midLine = false
	}
	write()
}

// clearWaiting takes the waiting line off the terminal.
func (v *turnView) clearWaiting() {
	if v.shown {
		fmt.Fprint(termtext.Raw(v.out.stderr), "\r\033[K")
		v.shown = false
	}
}

func (v *turnView) observe(ev runtime.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	// The waiting line is cleared before anything is written and drawn
	// again after, while the model is still silent.
	v.clearWaiting()
	defer v.drawWaiting()
	switch ev.Type {
	case runtime.EventUserMessage:
		v.modelAsked()
	case runtime.EventToolCall:
		v.running++
		v.waiting = false
	case runtime.EventToolResult:
		if v.running = max(0, v.running-1); v.running == 0 {
			v.modelAsked() // the results go back to the model
		}
	case runtime.EventTextDelta, runtime.EventReasoningDelta, runtime.EventAssistantMessage, runtime.EventTurnFailed:
		v.waiting = false
	}
	switch ev.Type {
	case runtime.EventTextDelta:
		var d runtime.TextDeltaData
		if json.Unmarshal(ev.Data, &d) == nil {
			if v.newMsg && v.text.Len() > 0 {
				v.write("\n\n")
			}
			v.newMsg = false
			v.write(d.Text)
		}
	case runtime.EventAssistantMessage:
		v.newMsg = true
	case runtime.EventToolCall:
		var d runtime.ToolCallData
		if json.Unmarshal(ev.Data, &d) == nil {
			v.calls++
			v.titles[d.ToolCallID] = titleLine(d.Title)
			v.note("  ⚙ %s\n", v.titles[d.ToolCallID])
		}
	case runtime.EventToolResult:
		var d runtime.ToolResultData
		if json.Unmarshal(ev.Data, &d) == nil {
			mark, note := "✓", ""
			if !d.Result.OK {
				v.failed++
				mark = "✗"
				if d.Result.Error != nil {
					note = fmt.Sprintf(" — %s: %s", d.Result.Error.Kind, oneLine(d.Result.Error.Message, 160))
				}
			}
			v.note("  %s %s%s\n", mark, v.titles[d.ToolCallID], note)
		}
	case runtime.EventSubagent:
		var d runtime.SubagentEventData
		if json.Unmarshal(ev.Data, &d) == nil {
			who := d.Agent
			if d.Name != "" {
				who = "step " + d.Name + ", " + d.Agent
			}
			v.note("    ↳ subagent %s (%s): %s%s%s\n", d.SubagentID, who, d.Event, tokensNote(d.Usage), snapshotNote(d))
		}
	case runtime.EventWorkflow:
		var d workflows.WorkflowEvent
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		run := d.Run
		if run == "" {
			run = d.StepID
		}
		switch d.Kind {
		case workflows.EventCheckpointDecided:
			if o := d.Outcome; o != nil {
				v.note("    ↳ step %s: %s (subagent %s%s)\n", run, o.CheckpointStatus, o.SubagentStatus, tokensNote(o.Usage))
			}
		case workflows.EventStepHeld:
			v.note("    ↳ step %s: held, %s %v\n", run, d.HeldReason, d.BlockedBy)
		case workflows.EventStepSkipped:
			v.note("    ↳ step %s: %s\n", run, d.SkipReason)
		case workflows.EventIterationStarted:
			v.note("    ↳ loop %s: iteration %d\n", d.Run, d.Iteration)
		case workflows.EventLoopFinished:
			if o := d.LoopOutcome; o != nil {
				v.note("    ↳ loop %s: %s\n", d.Run, workflows.LoopStateText(o))
			}
		case workflows.EventWorkflowFinished:
			v.note("    ↳ workflow %s: %s\n", d.WorkflowID, d.Status)
		}
	case runtime.EventCompaction:
		var d runtime.CompactionData
		if json.Unmarshal(ev.Data, &d) == nil {
			v.note("  ⇣ compacted the conversation (%s, by the %s): %d messages summarized, %d kept, about %s → %s tokens\n",
				d.Reason, d.Method, d.Replaced, d.Kept, budget.Count(d.TokensBefore), budget.Count(d.TokensAfter))
		}
	case runtime.EventTurnFailed:
		var d runtime.TurnFailedData
		if json.Unmarshal(ev.Data, &d) == nil {
			v.turnFail = &tools.Failure{Kind: d.Kind, Message: d.Message}
		}
	case runtime.EventNotice:
		if line, ok := noticeLine(ev); ok {
			v.note("  %s\n", line)
		}
	}
}

// noticeLine is a notice the user should read on stderr (a budget past
// its soft limit), as one line. An MCP server's notice is left out: the
// runtime's warning log, which pixir run shows, says it already.
func noticeLine(ev runtime.Event) (string, bool) {
	var d runtime.NoticeData
	if json.Unmarshal(ev.Data, &d) != nil || d.Source == "mcp" {
		return "", false
	}
	line := "! " + d.Title
	if detail := strings.TrimSpace(d.Detail); detail != "" {
		line += ": " + oneLine(detail, 400)
	}
	return line, true
}

// write adds answer text, streaming it to stdout unless --json.
func (v *turnView) write(s string) {
	v.text.WriteString(s)
	if !v.out.json {
		fmt.Fprint(v.out.stdout, s)
		v.midLine = v.shared && !strings.HasSuffix(s, "\n")
	}
}

// note writes a progress line on stderr, after ending the answer's line
// on a shared terminal.
func (v *turnView) note(format string, args ...any) {
	if v.midLine {
		fmt.Fprintln(v.out.stdout)
		v.midLine = false
	}
	if v.stamp {
		fmt.Fprint(v.out.stderr, time.Now().UTC().Format("2006-01-02T15:04:05.000Z "))
	}
	fmt.Fprintf(v.out.stderr, format, args...)
}

// outcome is the turn's result once Prompt returned.
func (v *turnView) outcome(sessionID string, stop runtime.StopReason, err error) runtime.TurnOutcome {
	if v.stopTicker != nil {
		close(v.stopTicker)
		<-v.tickerDone
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.waiting = false
	v.clearWaiting()
	v.done = true
	res := runtime.TurnOutcome{SessionID: sessionID, StopReason: stop, Text: v.text.String(),
		ToolCalls: v.calls, FailedToolCalls: v.failed, Error: v.turnFail}
	switch {
	case err != nil:
		res.Status, res.Error = runtime.TurnFailed, tools.AsFailure(err)
	case stop == runtime.StopMaxTokens:
		// A budget, or the token limit of one answer, stopped it: the
		// work so far stands, as at the limit of model calls.
		res.Status = runtime.TurnPartial
	case v.turnFail != nil:
		// The provider failed: the turn did not stop for a reason ACP
		// names (the editor is told end_turn after the error's text), and
		// the envelope said "stop_reason": "end_turn" beside "failed". Its
		// error says why it ended.
		res.Status, res.StopReason = runtime.TurnFailed, ""
	case stop == runtime.StopEndTurn:
		res.Status = runtime.TurnCompleted
	default:
		res.Status = runtime.TurnPartial
	}
	return res
}

// titleLine is a tool call's title on one progress line: its first line,
// with " …" when more follow (a task, a path or a pattern that holds line
// ends). Printed whole, the rest broke the line: it read as lines of their
// own, with no mark of the call they belong to.
func titleLine(title string) string {
	first, _, more := strings.Cut(strings.TrimSpace(title), "\n")
	first = strings.TrimRight(first, " \t\r")
	if more {
		first += " …"
	}
	return first
}

func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > limit {
		s = string(r[:limit-1]) + "…"
	}
	return s
}

// stepRow is one step run as the live view shows it: a step, or one
// iteration of a step in a loop (check-plan#2), or one instance of a
// fan-out (make[3]).
type stepRow struct {
	id, step, agent, activity string
	state                     rowState
	started, ended            time.Time
	made                      int // the order rows were made in: active rows are shown in it
	endedAs                   int // the view's count of ends when this row last ended (see recent)
	// superseded: a later iteration of its loop has started (the
	// outcome's Superseded): it no longer counts among the steps.
	superseded bool
}

// rowState is what a step's row shows: pending until its child is queued,
// then its child's status while it runs, then its checkpoint status.
type rowState string

const (
	rowPending = rowState("pending")
	rowQueued  = rowState(tools.SubagentQueued)
	rowRunning = rowState(tools.SubagentRunning)
	rowReady   = rowState(workflows.CheckpointReady)
	rowHeld    = rowState(workflows.CheckpointHeld)
	rowSkipped = rowState(workflows.CheckpointSkipped)
)

// loopRow is a loop run's line: its iteration, or how it ended.
type loopRow struct {
	run  string
	text string
	done bool
}

// workflowView shows a running workflow on stderr: in a terminal, a
// compact view of every step run (status, agent, elapsed time, last
// activity) and every loop's state, redrawn in place; otherwise one
// timestamped line per change.
type workflowView struct {
	w   io.Writer
	tty bool
	// held, when set (headless), takes the lines to write them together.
	held  *heldLines
	name  string
	now   func() time.Time
	begin time.Time
	wf    *workflows.Workflow

	mu       sync.Mutex
	steps    []string              // step ids in declaration order
	runs     map[string][]*stepRow // a step's rows, its runs in the order they showed up
	byID     map[string]*stepRow   // by run label
	agents   map[string]string     // step id -> agent
	loops    []*loopRow
	byLoop   map[string]*loopRow
	children map[string]string // subagent id -> run label
	// What a frame shows of thousands of rows, kept as rows change so a
	// frame costs the terminal's height, not the number of rows.
	made   int              // rows made so far
	counts map[rowState]int // rows by state
	// iters follows the loops' iterations; superseded counts the rows of
	// earlier iterations by state (in counts too), outdated their number.
	iters      *workflows.Iterations
	superseded map[rowState]int
	outdated   int
	loopSteps  map[string][]string   // a loop's steps (Iterations.Steps), asked once
	current    map[string]int        // per step, its first row not superseded
	active     map[*stepRow]struct{} // queued or running
	recent     []endedRow            // rows in the order they ended, newest last
	ends       int                   // ends so far
	// size is the terminal's width and height (0 when unknown).
	size   func() (width, height int)
	drawn  int // lines of the last frame
	paused int // questions on the screen: no drawing
	frame  int
	status workflows.Status
	// final is the outcome's counts, for the last frame: the rows count
	// a loop's earlier iterations among the runs.
	final *workflows.Counts
	stop  chan struct{}
	done  chan struct{}
	// msgBuf and lineBuf are line's, reused (guarded by mu).
	msgBuf, lineBuf []byte
	stamps          stampCache // line's time stamps (guarded by mu)
}

// stampCache appends a line's time stamp (2006-01-02T15:04:05.000Z, UTC)
// formatting the date and time once a second: thousands of lines a second
// share them, and only their milliseconds differ.
type stampCache struct {
	second int64  // the Unix second of prefix
	prefix []byte // its "2006-01-02T15:04:05." (nil: none yet)
}

// append appends t's stamp to b, as t.UTC().AppendFormat(b,
// "2006-01-02T15:04:05.000Z") does.
func (c *stampCache) append(b []byte, t time.Time) []byte {
	t = t.UTC()
	if sec := t.Unix(); c.prefix == nil || sec != c.second {
		c.second, c.prefix = sec, t.AppendFormat(c.prefix[:0], "2006-01-02T15:04:05.")
	}
	ms := t.Nanosecond() / int(time.Millisecond) // truncated, as the layout's .000
	return append(append(b, c.prefix...), byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

func newWorkflowView(w io.Writer, tty bool, wf *workflows.Workflow) *workflowView {
	v := &workflowView{w: w, tty: tty, name: wf.Name, now: time.Now, wf: wf, runs: map[string][]*stepRow{}, byID: map[string]*stepRow{},
		agents: map[string]string{}, byLoop: map[string]*loopRow{}, children: map[string]string{},
		counts: map[rowState]int{}, active: map[*stepRow]struct{}{}, size: terminalSize(w),
		iters: workflows.NewIterations(wf), superseded: map[rowState]int{}, loopSteps: map[string][]string{}, current: map[string]int{}}
	for _, st := range wf.Steps {
		agent := st.Agent
		if agent == "" {
			agent = "default"
		}
		v.agents[st.ID] = agent
		r := v.newRow(st.ID, st.ID, agent)
		if len(st.DependsOn) > 0 {
			r.activity = "waits for " + strings.Join(st.DependsOn, ", ")
		}
		v.steps = append(v.steps, st.ID)
		v.runs[st.ID] = []*stepRow{r}
		v.byID[st.ID] = r
	}
	return v
}

// minLiveViewRows is the height the live view needs: its head, the
// counts, one row, the line saying what is left out, and the cursor's
// line below the frame. On a shorter terminal the frame scrolls off the
// top, and the cursor moves that redraw it in place land on what was
// above it.
const minLiveViewRows = 5

// liveViewFits reports whether the terminal w writes to is tall enough
// for the live view (true when its height is unknown).
func liveViewFits(w io.Writer) bool {
	_, height := terminalSize(w)()
	return height <= 0 || height >= minLiveViewRows
}

// terminalSize is the size of the terminal w writes to, asked at each
// frame (it can be resized); 0, 0 when w is not one.
func terminalSize(w io.Writer) func() (int, int) {
	return func() (int, int) {
		if f, ok := w.(*os.File); ok {
			if width, height, err := term.GetSize(int(f.Fd())); err == nil {
				return width, height
			}
		}
		return 0, 0
	}
}

// newRow makes a pending row.
func (v *workflowView) newRow(id, step, agent string) *stepRow {
	v.made++
	v.counts[rowPending]++
	return &stepRow{id: id, step: step, agent: agent, state: rowPending, made: v.made}
}

// row is the row of a run, made when the run first shows up: the step's
// pending row becomes its first run's, later runs go below the step's
// last row.
func (v *workflowView) row(run, step string) *stepRow {
	if r := v.byID[run]; r != nil {
		return r
	}
	if step == "" {
		step = stepOfRun(run)
	}
	if v.runs[step] == nil {
		return nil
	}
	if first := v.byID[step]; first != nil && first.id == step && first.state == rowPending && run != step {
		// The step's placeholder row becomes its first run's.
		delete(v.byID, step)
		first.id, first.activity = run, ""
		v.byID[run] = first
		return first
	}
	if iteration, _, ok := strings.Cut(run, "["); ok {
		if pending := v.byID[iteration]; pending != nil && pending.state == rowPending {
			// An iteration's pending row of a fan-out becomes its first
			// instance's.
			delete(v.byID, iteration)
			pending.id = run
			v.byID[run] = pending
			return pending
		}
	}
	r := v.newRow(run, step, v.agents[step])
	v.runs[step] = append(v.runs[step], r) // below the step's last row
	v.byID[run] = r
	if v.iters.Superseded(step, run) {
		v.supersede(r)
	}
	return r
}

// supersede counts r as a run of an earlier iteration of its loop, as the
// outcome will.
func (v *workflowView) supersede(r *stepRow) {
	if r.superseded {
		return
	}
	r.superseded = true
	v.superseded[r.state]++
	v.outdated++
}

// iterationStarted records a loop's new iteration: the rows of its
// earlier ones no longer count among the steps.
func (v *workflowView) iterationStarted(loop, run string, iteration int) {
	v.iters.Started(loop, run, iteration)
	steps, ok := v.loopSteps[loop]
	if !ok {
		steps = v.iters.Steps(loop)
		v.loopSteps[loop] = steps
	}
	for _, step := range steps {
		// A step's rows are in the order its runs showed up, so those of
		// earlier iterations come first: past the last row superseded.
		rows := v.runs[step]
		k := v.current[step]
		for k < len(rows) && (rows[k].superseded || v.iters.Superseded(step, rows[k].id)) {
			v.supersede(rows[k])
			k++
		}
		v.current[step] = k
	}
	// The iteration's runs, pending until they show up: the outcome
	// counts them among the steps (a step's own pending row is its first
	// run's).
	for _, ir := range v.iters.Runs(loop, run, iteration) {
		if first := v.byID[ir.Step]; first != nil && first.id == ir.Step && first.state == rowPending {
			continue
		}
		v.row(ir.Run, ir.Step)
	}
}

// brief is the counts of the rows as the outcome's verdict line counts
// them (Counts.Brief): a loop's earlier iterations are not steps.
func (v *workflowView) brief() string {
	c := workflows.Counts{
		Steps:                v.made,
		CheckpointReadySteps: v.counts[rowReady] - v.superseded[rowReady],
		SkippedSteps:         v.counts[rowSkipped] - v.superseded[rowSkipped],
		SupersededRuns:       v.outdated,
	}
	return c.Brief()
}

// eachRow calls f with every row, in the order they are shown: steps in
// their declaration order, each step's runs in the order they showed up.
// (The rows are kept by step: a run of a fan-out or a loop used to be
// inserted in the middle of one list, a copy of it for each of thousands
// of runs.)
func (v *workflowView) eachRow(f func(*stepRow)) {
	for _, step := range v.steps {
		for _, r := range v.runs[step] {
			f(r)
		}
	}
}

// stepOfRun is the step of a run's label: check-plan#2 → check-plan,
// make[3] → make.
func stepOfRun(run string) string {
	if i := strings.IndexAny(run, "#["); i >= 0 {
		return run[:i]
	}
	return run
}

// start begins redrawing (in a terminal) ten times a second.
func (v *workflowView) start() {
	v.begin = v.now()
	if !v.tty {
		return
	}
	v.stop, v.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(v.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				v.mu.Lock()
				v.draw()
				v.mu.Unlock()
			case <-v.stop:
				return
			}
		}
	}()
}

// finish draws the last frame, headed by the outcome's counts, and
// leaves it on the screen.
func (v *workflowView) finish(final *workflows.Counts) {
	if v.stop != nil {
		close(v.stop)
		<-v.done
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.tty {
		if v.held != nil {
			v.held.Flush()
		}
		return
	}
	v.final = final
	v.draw()
}

// observe follows the parent session's events: Subagent lifecycle and
// activity, and the workflow's decisions.
func (v *workflowView) observe(ev runtime.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch ev.Type {
	case runtime.EventSubagent:
		d, ok := subagentEventOf(ev)
		if !ok {
			return
		}
		r := v.row(d.name, "")
		if r == nil {
			return
		}
		v.children[d.subagentID] = r.id
		switch tools.SubagentEvent(d.event) {
		case tools.SubagentEventQueued:
			v.setState(r, rowQueued)
			v.text("step ", r.id, " queued (", r.agent, ", subagent ", d.subagentID, ")")
		case tools.SubagentEventStarted:
			v.setState(r, rowRunning)
			r.started, r.activity = v.now(), "started in the "+d.workspaceMode+" workspace"
			v.text("step ", r.id, " running (", r.agent, ", ", d.workspaceMode, " workspace)")
		}
	case runtime.EventStatus:
		d, ok := ev.Value().(runtime.SubagentProgressData)
		if !ok && json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		if d.SubagentID == "" {
			return
		}
		if r := v.byID[v.children[d.SubagentID]]; r != nil && r.state == rowRunning {
			r.activity = oneLine(d.Activity, 80)
			v.text("step ", r.id, ": ", r.activity)
		}
	case runtime.EventNotice:
		line, ok := noticeLine(ev)
		switch {
		case !ok:
		case v.tty:
			// The frame has no place for it (a budget past its soft limit):
			// a line above the frame.
			v.above(func() {
				_, _ = v.w.Write(append(termtext.AppendInert([]byte("  "), []byte(line)), '\n'))
			})
		default:
			v.text(line)
		}
	case runtime.EventWorkflow:
		if d, ok := ev.Value().(workflows.WorkflowEvent); ok {
			v.workflowEvent(d)
			return
		}
		var d workflows.WorkflowEvent
		if json.Unmarshal(ev.Data, &d) == nil {
			v.workflowEvent(d)
		}
	}
}

// subagentEventOf reads the members of a subagent_event the view needs:
// from the data it was emitted with when the event has it, or else from
// its JSON.
func subagentEventOf(ev runtime.Event) (subagentFields, bool) {
	if d, ok := ev.Value().(runtime.SubagentEventData); ok {
		return subagentFields{event: string(d.Event), subagentID: d.SubagentID, name: d.Name, workspaceMode: d.WorkspaceMode}, true
	}
	return readSubagentEvent(ev.Data)
}

// subagentFields are the members of a subagent_event the view reads.
type subagentFields struct{ event, subagentID, name, workspaceMode string }

// readSubagentEvent reads them without decoding the rest (the task, the
// summary, the usage): the view sees three of these events for each step
// of runs of thousands, and decoding each whole cost more than all else
// it does.
func readSubagentEvent(data []byte) (subagentFields, bool) {
	_, members, err := jsonraw.Scan(data)
	if err != nil || members == nil {
		return subagentFields{}, false
	}
	var f subagentFields
	for _, m := range members {
		var to *string
		switch m.Key {
		case "event":
			to = &f.event
		case "subagent_id":
			to = &f.subagentID
		case "name":
			to = &f.name
		case "workspace_mode":
			to = &f.workspaceMode
		default:
			continue
		}
		if json.Unmarshal(m.Value, to) != nil {
			return subagentFields{}, false
		}
	}
	return f, true
}

func (v *workflowView) workflowEvent(d workflows.WorkflowEvent) {
	run := d.Run
	if run == "" {
		run = d.StepID
	}
	switch d.Kind {
	case workflows.EventWorkflowStarted:
		v.line("workflow %s started: %s", d.WorkflowID, plural.Of(len(v.steps), "step", "steps"))
	case workflows.EventStepScheduled:
		v.row(run, d.StepID)
		v.children[d.SubagentID] = run
	case workflows.EventCheckpointDecided:
		o := d.Outcome
		r := v.row(run, d.StepID)
		if r == nil || o == nil {
			return
		}
		v.setState(r, rowState(o.CheckpointStatus))
		r.ended = v.now()
		if r.started.IsZero() {
			r.started = r.ended
		}
		r.activity = oneLine(o.Summary, 80)
		if o.Error != nil && o.CheckpointStatus != workflows.CheckpointReady {
			r.activity = string(o.Error.Kind) + ": " + oneLine(o.Error.Message, 70)
		}
		if o.ReusedFrom != "" {
			r.activity = "reused from " + o.ReusedFrom
		}
		if o.Merge != nil {
			r.activity = o.Merge.Brief() + "; " + r.activity
		}
		v.text("step ", r.id, " ", string(o.CheckpointStatus), " (subagent ", string(o.SubagentStatus), tokensNote(o.Usage), ") in ", seconds(o.ElapsedMS), ": ", r.activity)
	case workflows.EventStepHeld:
		r := v.row(run, d.StepID)
		if r == nil {
			return
		}
		v.setState(r, rowHeld)
		r.activity = d.HeldReason
		if len(d.BlockedBy) > 0 {
			r.activity += " (blocked by " + strings.Join(d.BlockedBy, ", ") + ")"
		}
		v.line("step %s held: %s", r.id, r.activity)
	case workflows.EventStepSkipped:
		r := v.row(run, d.StepID)
		if r == nil {
			return
		}
		v.setState(r, rowSkipped)
		r.activity = oneLine(strings.TrimPrefix(d.SkipReason, "skipped: "), 100)
		v.line("step %s skipped: %s", r.id, r.activity)
	case workflows.EventFanOut:
		items := "items"
		if d.Items == 1 {
			items = "item"
		}
		v.line("step %s fans out over %d %s (max %d)", run, d.Items, items, d.MaxItems)
	case workflows.EventIterationStarted:
		v.iterationStarted(d.Loop, d.Run, d.Iteration)
		l := v.loopRow(d.Run)
		l.text = fmt.Sprintf("iteration %d of %d", d.Iteration, v.maxIterations(d.Loop))
		v.line("loop %s: %s started", d.Run, l.text)
	case workflows.EventIterationFinished:
		if d.Decision == "next" {
			v.line("loop %s: iteration %d ended; another iteration follows", d.Run, d.Iteration)
		}
	case workflows.EventLoopFinished:
		if o := d.LoopOutcome; o != nil {
			l := v.loopRow(d.Run)
			l.text, l.done = workflows.LoopStateText(o), true
			v.line("loop %s: %s", d.Run, l.text)
		}
	case workflows.EventWorkflowFinished:
		v.status = d.Status
		v.line("workflow %s %s in %s", d.WorkflowID, d.Status, seconds(d.ElapsedMS))
	}
}

// loopRow is a loop run's line, made when it first shows up.
func (v *workflowView) loopRow(run string) *loopRow {
	l := v.byLoop[run]
	if l == nil {
		l = &loopRow{run: run}
		v.byLoop[run] = l
		v.loops = append(v.loops, l)
	}
	return l
}

func (v *workflowView) maxIterations(loop string) int {
	for _, l := range v.wf.Loops {
		if l.ID == loop {
			return l.MaxIterations
		}
	}
	return 0
}

// line writes a timestamped line when stderr is not a terminal.
func (v *workflowView) line(format string, args ...any) {
	if v.tty {
		return
	}
	// Both buffers are the view's, reused line after line (v.mu is held):
	// Hold and Write copy or write the line before returning.
	v.msgBuf = fmt.Appendf(v.msgBuf[:0], format, args...)
	v.writeLine()
}

// text is line of the message made of parts, without fmt: the four
// lines of every step (queued, running, its activity, its end) are
// written this way, no part boxed in an interface.
func (v *workflowView) text(parts ...string) {
	if v.tty {
		return
	}
	v.msgBuf = v.msgBuf[:0]
	for _, p := range parts {
		v.msgBuf = append(v.msgBuf, p...)
	}
	v.writeLine()
}

// writeLine writes the message in msgBuf as a line: its time stamp, the
// message made inert for a terminal.
func (v *workflowView) writeLine() {
	b := v.stamps.append(v.lineBuf[:0], v.now())
	b = append(termtext.AppendInert(append(b, ' '), v.msgBuf), '\n')
	v.lineBuf = b
	if v.held != nil {
		v.held.Hold(b)
		return
	}
	_, _ = v.w.Write(b)
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// pause stops drawing until the returned function is called: a question
// asked on the terminal goes below the last frame, and drawing resumes
// below the answer instead of moving up over it.
func (v *workflowView) pause() (resume func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.held != nil {
		v.held.Flush() // what happened so far, before the run waits on someone
	}
	v.paused++
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.paused--
		v.drawn = 0
	}
}

// writeAbove writes a line that is not the frame's (a warning of the
// runtime's log) on the terminal, above the frame: see above.
func (v *workflowView) writeAbove(write func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.above(write)
}

// above writes a line above the frame: the frame is erased, the line
// written where it began and the frame drawn again below it. Written
// below the frame, a line was erased by the next frame, which moves up
// over as many lines as it drew, and the old frame's head stayed above.
// Once the last frame is drawn, or while a question is on the screen, the
// line goes below them.
func (v *workflowView) above(write func()) {
	if v.final != nil || v.paused > 0 {
		write()
		return
	}
	if v.drawn > 0 {
		fmt.Fprintf(v.w, "\x1b[%dF\x1b[J", v.drawn)
		v.drawn = 0
	}
	write()
	if v.stop != nil { // drawing has started
		v.draw()
	}
}

// snapshotNote is where an isolated child that is no workflow step
// left its changes, "; 2 files changed in its snapshot /ws/.pixir/…":
// they are there and nowhere else until merge_agent merges them (a
// step's are merged by its workflow, which says so). Nothing otherwise.
func snapshotNote(d runtime.SubagentEventData) string {
	if d.Name != "" || d.WorkspaceMode != string(workflows.Isolated) || d.Changes == nil || d.Changes.Empty() || d.Workspace == "" {
		return ""
	}
	c := d.Changes
	n := len(c.Added) + len(c.Changed) + len(c.Deleted) + len(c.Mode)
	return fmt.Sprintf("; %s changed in its snapshot %s, not in the workspace until merge_agent merges %s",
		plural.Of(n, "file", "files"), d.Workspace, plural.Word(n, "it", "them"))
}

// tokensNote is ", 1,234 tokens" for what a child spent, or nothing.
func tokensNote(u *budget.Usage) string {
	if u == nil {
		return ""
	}
	return ", " + budget.Count(u.Tokens()) + " tokens"
}

func seconds(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s" // as %.1f
}
