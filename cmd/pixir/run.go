package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/term"

	"github.com/pixir-go/pixir/internal/termtext"
	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/inspect"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// Exit codes of pixir run and pixir resume, besides exitOK (completed),
// exitError (failed) and exitUsage (invalid input).
const exitPartial = 2

// runOptions are the flags of pixir run and pixir resume.
type runOptions struct {
	pf         providerFlags
	workflow   string
	sets       setFlags
	resumeFrom string
	asJSON     bool
	dryRun     bool
	mode       string
	cwd        string
	verbose    bool
}

func (o *runOptions) register(fs *flag.FlagSet, resume bool) {
	o.pf.register(fs)
	fs.StringVar(&o.workflow, "workflow", "", "run a workflow instead of a prompt, no model in the parent: a template's name (pixir workflows lists them) or a file (JSON or YAML)")
	fs.Var(&o.sets, "set", "with --workflow: give a template parameter, name=value (repeat it for each)")
	if resume {
		fs.StringVar(&o.resumeFrom, "resume-from", "", "with --workflow: an earlier run of this session (its workflow_id) whose checkpoint_ready steps are reused; only the rest runs")
	} else {
		fs.BoolVar(&o.dryRun, "dry-run", false, "with --workflow: validate it and print the waves it would run; start nothing, write nothing")
	}
	fs.BoolVar(&o.asJSON, "json", false, "print the final result envelope as JSON on stdout")
	if resume {
		fs.StringVar(&o.mode, "mode", "", "permission mode: auto, ask (the terminal asks y/n/always) or read_only (default: the session's own, as it was left)")
	} else {
		fs.StringVar(&o.mode, "mode", "auto", "permission mode: auto, ask (the terminal asks y/n/always) or read_only")
	}
	fs.StringVar(&o.cwd, "cwd", "", "the workspace (default: the current directory)")
	fs.BoolVar(&o.verbose, "verbose", false, "log debug details on stderr")
}

// parseInterleaved parses flags placed before or after the positional
// arguments (pixir run "fix it" --json), which flag.Parse alone stops at.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// runCommand is what pixir run and pixir resume share: their flags, the
// positional arguments, where their result goes, and the mode.
type runCommand struct {
	o    runOptions
	rest []string
	out  *runOutput
	mode runtime.Mode
}

// parseRunCommand parses a run or resume command line; done means the
// command ends there with code (help was shown, or the line was refused
// and said why).
func parseRunCommand(name, usage string, resume bool, args []string, stdout, stderr io.Writer) (c runCommand, code int, done bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, usage+"\nExit codes: 0 completed, 2 partial, 1 failed, 64 invalid input.\n")
	c.o.register(fs, resume)
	rest, code, done := parseFlags(fs, args, true, stdout, stderr)
	if done {
		return c, code, true
	}
	var err error
	c.rest, c.out = rest, newRunOutput(stdout, stderr, c.o.asJSON)
	if resume && !flagGiven(fs, "mode") {
		return c, exitOK, false // the session's own mode, as it was left (openSession)
	}
	if c.mode, err = parseMode(c.o.mode); err != nil {
		return c, c.out.usage(err), true
	}
	return c, exitOK, false
}

// runRun is `pixir run "prompt"` and `pixir run --workflow FILE`.
func runRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, code, done := parseRunCommand("pixir run", "Usage: pixir run [flags] \"prompt\"   (- reads the prompt from stdin)\n       pixir run [flags] --workflow FILE|TEMPLATE [--set name=value]…\n", false, args, stdout, stderr)
	if done {
		return code
	}
	switch {
	case c.o.workflow != "" && len(c.rest) > 0:
		return c.out.usage(errors.New("give either a prompt or --workflow FILE, not both"))
	case c.o.workflow == "" && c.o.dryRun:
		return c.out.usage(errors.New("--dry-run goes with --workflow FILE"))
	case c.o.workflow == "" && len(c.o.sets) > 0:
		return c.out.usage(errors.New("--set gives a template's parameters: it goes with --workflow NAME"))
	case c.o.workflow != "":
		return runWorkflowFile(c.o, c.mode, "", stdin, c.out)
	case len(c.rest) != 1 || strings.TrimSpace(c.rest[0]) == "":
		return c.out.usage(errors.New(`give the prompt as one argument, in quotes: pixir run "what to do"`))
	}
	prompt, err := promptArgument(c.rest[0], stdin, c.out.stderr)
	if err != nil {
		return c.out.usage(err)
	}
	return runPrompt(c.o, c.mode, "", prompt, stdin, c.out)
}

// promptArgument is the prompt a command line gives: the argument, or
// with "-" what stdin holds to its end, as a script passes a prompt longer
// than one argument may be (128 KiB on Linux: a diff, a log) or one it
// does not want in the process table. "-" was sent to the model as the
// prompt.
func promptArgument(arg string, stdin io.Reader, stderr io.Writer) (string, error) {
	if arg != "-" {
		return arg, nil
	}
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		// A person typing: say how the prompt ends, rather than wait
		// silently for an end of input nobody knows is awaited.
		fmt.Fprintln(stderr, "pixir: type the prompt, then Ctrl-D on a line of its own to send it")
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxStdinPrompt+1))
	if err != nil {
		return "", fmt.Errorf("reading the prompt from standard input (\"-\"): %w", err)
	}
	if len(b) > maxStdinPrompt {
		return "", fmt.Errorf(`the prompt "-" read from standard input is over %d MiB, more than any model's context holds: give the model a file's path to read instead`, maxStdinPrompt>>20)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", errors.New(`the prompt "-" is read from standard input, and it held none: pipe it in (pixir run - < prompt.txt), or give it as one argument, in quotes`)
	}
	return string(b), nil
}

// maxStdinPrompt bounds a prompt read from standard input: /dev/zero or a
// runaway pipe must not grow memory without end.
const maxStdinPrompt = 16 << 20

// runResume is `pixir resume ID "prompt"` and `pixir resume ID --workflow
// FILE [--resume-from WORKFLOW_ID]`.
func runResume(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c, code, done := parseRunCommand("pixir resume", "Usage: pixir resume [flags] SESSION_ID \"prompt\"\n       pixir resume [flags] SESSION_ID --workflow FILE|TEMPLATE [--set name=value]… [--resume-from WORKFLOW_ID]\n", true, args, stdout, stderr)
	if done {
		return code
	}
	switch {
	case c.o.workflow != "" && len(c.rest) == 1:
		return runWorkflowFile(c.o, c.mode, c.rest[0], stdin, c.out)
	case c.o.workflow == "" && c.o.resumeFrom != "":
		return c.out.usage(errors.New("--resume-from goes with --workflow FILE"))
	case c.o.workflow != "" || len(c.rest) != 2 || strings.TrimSpace(c.rest[1]) == "":
		return c.out.usage(errors.New(`give the session id and a prompt, or a workflow: pixir resume SESSION_ID "what next", or pixir resume SESSION_ID --workflow FILE (pixir sessions lists the ids)`))
	}
	prompt, err := promptArgument(c.rest[1], stdin, c.out.stderr)
	if err != nil {
		return c.out.usage(err)
	}
	return runPrompt(c.o, c.mode, c.rest[0], prompt, stdin, c.out)
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) (given bool) {
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func parseMode(s string) (runtime.Mode, error) {
	switch m := runtime.Mode(s); m {
	case runtime.ModeAuto, runtime.ModeAsk, runtime.ModeReadOnly:
		return m, nil
	}
	modes := []string{string(runtime.ModeAuto), string(runtime.ModeAsk), string(runtime.ModeReadOnly)}
	if near := nearest(strings.ReplaceAll(s, "-", "_"), modes); near != "" {
		return "", fmt.Errorf("--mode %q is not one of auto, ask, read_only; did you mean %s?", s, near)
	}
	return "", fmt.Errorf("--mode %q is not one of auto, ask, read_only", s)
}

// workspaceDir is the workspace of run and resume: --cwd, or the current
// folder. A --cwd that is not a folder is refused here, first: a
// dry run planned a workflow in a workspace that does not exist and said
// nothing.
func workspaceDir(cwd string) (string, error) { return projectDir(cwd) }

// interruptible is a context cancelled by the first stop signal (see
// stopSignals): the run stops its children, records their end and prints
// what it has. A second signal kills the process at once, as usual.
func interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ended, stop := stopSignals()
	go func() {
		// stop ends the watch without closing ended: ctx's end lets this
		// goroutine go too, or each call would leave one behind.
		select {
		case <-ended:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		stop()
		cancel()
	}
}

// stopSignals returns a channel closed by the first Ctrl-C, SIGTERM or
// SIGHUP (a closed terminal or ssh session, a CI runner hanging up), after
// which the signals are left to their defaults: a second one kills. A
// SIGHUP the process was started ignoring (nohup) stays ignored: catching
// it would undo nohup. stop ends the watch; the channel is then never
// closed.
func stopSignals() (<-chan struct{}, func()) {
	caught := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		caught = append(caught, syscall.SIGHUP)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, caught...)
	ended, done := make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case <-sigs:
			signal.Reset(caught...)
			close(ended)
		case <-done:
		}
	}()
	return ended, func() {
		close(done)
		signal.Stop(sigs)
	}
}

// TurnOutput is the output of `pixir run "prompt" --json` and of
// `pixir resume --json`: one turn, run headless.
type TurnOutput = runtime.TurnOutcome

// runPrompt runs one turn in a new session (or, with id, in that one),
// streaming the answer to stdout and tool calls to stderr.
func runPrompt(o runOptions, mode runtime.Mode, id, prompt string, stdin io.Reader, out *runOutput) int {
	// Watched from the start: a signal while the provider, the MCP servers
	// and the session are set up cancels the turn like one during it
	// (exit 2, its stop in the Log, every server stopped), not the process.
	ctx, stop := interruptible()
	defer stop()
	dir, err := workspaceDir(o.cwd)
	if err != nil {
		return out.usage(err)
	}
	pf, kept := o.pf, ""
	if id != "" { // it goes on with the model it had
		pf, kept = resumeFlags(o.pf, dir, id)
	}
	if err := requireKey(pf); err != nil {
		return out.usage(keptFailed(id, kept, err))
	}
	logs := &logSink{w: out.stderr}
	rt, err := newRuntime(pf, runLogger(logs, o.verbose))
	if err != nil {
		return out.usage(keptFailed(id, kept, err))
	}
	defer rt.Close()
	sess, err := openSession(rt, id, dir, mode, out.stderr)
	if err != nil {
		return out.openFailed(err)
	}

	view := newTurnView(out)
	detach := func() {}
	if view.stopTicker != nil { // the waiting line is drawn
		detach = logs.through(view)
	}
	sess.SetObserver(view.observe)
	before := sess.Usage()
	asker := newTerminalAsker(stdin, out.stderr)
	asker.pause = view.pause // a question must not be drawn over
	stopReason, err := sess.Prompt(ctx, runtime.Prompt{Text: prompt}, runtime.TurnOptions{Observe: view.observe, Ask: asker})
	sess.SetObserver(nil)
	res := view.outcome(sess.ID(), stopReason, err)
	detach()
	res.Usage = sess.Usage().Sub(before)
	return out.turn(res, sessionNext{short: inspect.ShortID(dir, sess.ID()), cwd: o.cwd, model: o.pf.repeat()})
}

// openSession starts a session in dir, or reopens session id there, in
// mode; a reopened session without one (pixir resume without --mode) keeps
// its own, which stderr names when it is not auto: a session left
// read_only (by --mode or an editor's session/set_mode) must not be
// widened by a resume that did not ask. Damage found in a reopened
// session's Log is said on stderr.
func openSession(rt *runtime.Runtime, id, dir string, mode runtime.Mode, stderr io.Writer) (*runtime.Session, error) {
	var sess *runtime.Session
	var err error
	if id == "" {
		sess, err = rt.NewSession(dir)
	} else {
		// Any unique start of the id will do, as for pixir inspect.
		found, lerr := inspect.Locate(dir, id)
		switch {
		case lerr != nil:
			return nil, lerr
		case found.Child:
			return nil, fmt.Errorf("%w: %s is a Subagent's session, which its parent runs; resume the parent session instead (pixir sessions lists them; pixir inspect %s shows the Subagent)", runtime.ErrSessionNotFound, id, id)
		}
		id = found.ID
		var report runtime.LoadReport
		sess, report, err = rt.OpenSession(id, dir, nil)
		switch {
		case errors.Is(err, runtime.ErrSessionNotFound):
			err = fmt.Errorf("%w (pixir sessions lists the sessions of %s)", err, dir)
		case err == nil && !report.Intact():
			fmt.Fprintf(stderr, "pixir: warning: part of session %s's Log is damaged and was skipped: %s\n", id, report)
		}
	}
	if err != nil {
		return nil, err
	}
	if mode == "" {
		if m := sess.Mode(); m != runtime.ModeAuto {
			fmt.Fprintf(stderr, "pixir: session %s is in %s mode, as it was left; --mode auto (or ask) changes it\n", inspect.ShortID(dir, sess.ID()), m)
		}
		return sess, nil
	}
	return sess, sess.SetMode(mode)
}

// runLogger keeps the runtime's info logs off the terminal the answer and
// the progress go to: warnings only, unless --verbose.
func runLogger(stderr io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(newPersonHandler(stderr, level))
}

// liveView is a view drawn in place on a terminal (the turn's waiting
// line, the workflow's frame): a line written to the terminal while it is
// drawn goes through writeAbove, which takes the view off the screen
// first and draws it again below the line.
type liveView interface {
	writeAbove(write func())
}

// logSink is where pixir run's log lines go: to stderr, and while a live
// view is drawn there, through it. Written straight, a warning was glued
// to the waiting line, or written below the workflow's frame, which the
// next frame erased a tenth of a second later.
type logSink struct {
	mu   sync.Mutex // one line at a time; held while view is used
	w    io.Writer
	view liveView
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.view == nil {
		return s.w.Write(p)
	}
	var n int
	var err error
	s.view.writeAbove(func() { n, err = s.w.Write(p) })
	return n, err
}

// through sends the lines through v until the returned function is
// called; past its end, v writes a line as it comes.
func (s *logSink) through(v liveView) (detach func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.view = v
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.view = nil
	}
}

// runWorkflowFile is `pixir run --workflow FILE` and `pixir resume ID
// --workflow FILE`: the workflow use case (workflows.Prepare, then DryRun
// or Run) through the Subagents Manager of a new session (or of session
// id), no model in the parent. The spec is checked before anything else,
// so an invalid one makes no session.
func runWorkflowFile(o runOptions, mode runtime.Mode, id string, stdin io.Reader, out *runOutput) int {
	startHeap(runStartHeap)
	// Watched from the start, as for a turn (runPrompt).
	ctx, stop := interruptible()
	defer stop()
	dir, err := workspaceDir(o.cwd)
	if err != nil {
		return out.usage(err)
	}
	// Headless, the live view's lines are held and written together;
	// everything else on stderr goes through the same writer, after them.
	// A terminal too short for the live view gets the same lines.
	tty := isTerminal(out.stderr) && liveViewFits(termtext.Raw(out.stderr))
	var held *heldLines
	if !tty {
		held = newHeldLines(termtext.Raw(out.stderr))
		defer held.Flush()
		out = holdingStderr(out, held)
	}
	pf, kept := o.pf, ""
	if id != "" { // its Subagents go on with the model it had
		pf, kept = resumeFlags(o.pf, dir, id)
	}
	logs := &logSink{w: out.stderr}
	rt, err := newRuntime(pf, runLogger(logs, o.verbose))
	if err != nil {
		return out.usage(keptFailed(id, kept, err))
	}
	defer rt.Close()
	// Every problem of the file at once, unknown agents among them, before
	// a session is made.
	w, err := instantiateWorkflow(o.workflow, dir, o.sets, rt.AgentChecker(dir))
	if err != nil {
		return out.failure(err)
	}
	if o.resumeFrom != "" {
		w.ResumeFrom = o.resumeFrom
	}
	dryRun := o.dryRun || w.DryRun
	if !dryRun && w.ResumeFrom != "" && id == "" {
		return out.usage(errors.New("resume_from names a run of an earlier session: pixir resume SESSION_ID --workflow FILE --resume-from WORKFLOW_ID"))
	}
	readOnly := &tools.Failure{Kind: tools.ErrPermissionDenied,
		Message: "a workflow starts Subagents, which read_only mode does not allow; use --dry-run to plan it, or --mode auto or ask"}
	if !dryRun && mode == runtime.ModeReadOnly {
		return out.refuse(readOnly)
	}
	if !dryRun {
		if err := requireKey(pf); err != nil {
			return out.usage(keptFailed(id, kept, err))
		}
	}
	if dryRun {
		// Nothing starts and nothing is written: agents are resolved as
		// the runtime would, and no session is made.
		p, err := workflows.Prepare(w, workflows.Ports{Agents: rt.AgentChecker(dir), Budgets: rt.WorkflowBudgets()})
		if err != nil {
			return out.failure(err)
		}
		plan, err := p.DryRun(ctx) // planning 10,000 steps takes a moment
		if err != nil {
			return out.refuse(tools.AsFailure(err))
		}
		return out.dryRun(plan)
	}
	sess, err := openSession(rt, id, dir, mode, out.stderr)
	if err != nil {
		return out.openFailed(err)
	}
	if sess.Mode() == runtime.ModeReadOnly { // a resumed session's own
		return out.refuse(readOnly)
	}
	// The live view draws with control sequences of its own, so it writes
	// to the terminal itself; it makes what it shows inert.
	view := newWorkflowView(termtext.Raw(out.stderr), tty, w)
	view.held = held
	asker := newTerminalAsker(stdin, out.stderr)
	asker.pause = view.pause // a question must not be redrawn over
	p, err := workflows.Prepare(w, sess.WorkflowPorts(asker))
	if err != nil {
		return out.failure(err)
	}
	title := "workflow " + filepath.Base(o.workflow)
	if w.Template != "" {
		title = "workflow " + w.Template
	}
	if w.Name != "" {
		title = "workflow " + w.Name
	}
	if id != "" {
		title = sess.Meta().Title // a resumed session keeps its name
	}
	if err := sess.SetTitle(title); err != nil {
		return out.refuse(tools.AsFailure(err))
	}

	sess.SetObserver(view.observe)
	view.start()
	detach := func() {}
	if tty {
		detach = logs.through(view)
	}
	// The view draws its rows from the events; it never reads a plan.
	outcome := p.Run(ctx, workflows.RunOptions{WorkflowID: workflows.NewWorkflowID(), NoPlan: true})
	view.finish(&outcome.Summary)
	detach()
	sess.SetObserver(nil)
	if err := sess.SetTitle(title); err != nil { // and its update time
		fmt.Fprintln(out.stderr, "pixir: recording the session's metadata:", err)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(out.stderr, "pixir: interrupted: the running steps were cancelled and recorded; here is the partial outcome")
	}
	if !outcome.Usage.IsZero() {
		fmt.Fprintf(out.stderr, "pixir: usage: %s\n", outcome.Usage)
	}
	next := sessionNext{short: inspect.ShortID(dir, sess.ID()), cwd: o.cwd, workflow: o.workflow, sets: o.sets, model: o.pf.repeat()}
	code := out.workflow(outcome, next)
	next.print(out.stderr)
	return code
}

// instantiateWorkflow is the workflow --workflow names, with the --set
// arguments: a file if one is there, else a template found by name from
// the project dir (pixir workflows lists them). A file is a template too
// (one without params takes no --set).
//
// The workflow is checked with every problem at once (agents too, when
// given), before anything is made.
func instantiateWorkflow(ref, dir string, sets setFlags, agents workflows.Agents) (*workflows.Workflow, error) {
	var tpl *workflows.Template
	if fi, statErr := os.Stat(ref); statErr == nil && !fi.IsDir() || !workflows.IsTemplateName(ref) {
		t, err := workflows.ReadTemplateFile(ref)
		if err != nil {
			if all := everyProblem(ref, sets, agents); all != nil {
				return nil, all
			}
			if f, ok := errors.AsType[*tools.Failure](err); ok {
				return nil, &tools.Failure{Kind: f.Kind, Message: ref + ": " + f.Message, Details: f.Details}
			}
			if statErr != nil && !strings.ContainsAny(ref, `/\.`) {
				return nil, fmt.Errorf("%s is neither a workflow file nor a template name: %w", ref, statErr)
			}
			return nil, &tools.Failure{Kind: tools.ErrInvalidArgs, Message: err.Error()}
		}
		tpl = t
	} else {
		home, _ := os.UserHomeDir()
		reg, loadErr := workflows.LoadTemplates(dir, home)
		t, ok := reg.Get(ref)
		if fe, broken := reg.Broken(ref); broken {
			// The file that defines ref does not load: its problems, as
			// --workflow FILE reports them, not a template further down.
			return instantiateWorkflow(fe.File, dir, sets, agents)
		}
		if !ok {
			msg := fmt.Sprintf("there is no workflow file or template named %q; the templates here: %s (pixir workflows lists them)", ref, strings.Join(reg.Names(), ", "))
			if loadErr != nil {
				msg += "; some template files do not load: " + strings.ReplaceAll(loadErr.Error(), "\n", "; ")
			}
			return nil, &tools.Failure{Kind: tools.ErrInvalidArgs, Message: msg}
		}
		tpl = t
	}
	args := map[string]any{}
	for _, set := range sets {
		name, text, _ := strings.Cut(set, "=")
		v, err := tpl.ParseArgValue(name, text)
		if err != nil {
			return nil, &tools.Failure{Kind: tools.ErrInvalidArgs, Message: "--set " + set + ": " + err.Error()}
		}
		args[name] = v
	}
	w, err := tpl.InstantiateChecked(args, agents)
	if f, ok := errors.AsType[*tools.Failure](err); ok && strings.Contains(f.Message, "do not match its parameters") {
		f.Message += "\n(give the parameters with --set name=value; pixir workflows lists them)"
		return nil, f
	}
	if err != nil {
		if tpl.Source != workflows.SourceBuiltin {
			ref = tpl.Source // found by name: its file has the lines
		}
		return nil, inFile(ref, err)
	}
	return w, nil
}

// everyProblem is the report of every problem of a workflow file that did
// not read, when it can be made: reading a template stops at its first
// decoding problem. A template's (a file with params) are those of its
// decoding and, with them, what else can be found (with the --set values
// sets).
func everyProblem(path string, sets []string, agents workflows.Agents) error {
	var raw json.RawMessage
	b, readErr := os.ReadFile(path)
	if readErr == nil {
		raw, readErr = workflows.DecodeFile(path, b)
	}
	var keys map[string]json.RawMessage
	plain := readErr == nil && json.Unmarshal(raw, &keys) == nil && keys["params"] == nil
	if !plain {
		if readErr == nil {
			// A template's spec before it has arguments: what keeps it
			// from decoding, each problem at its line.
			args := map[string]string{}
			for _, set := range sets {
				name, text, _ := strings.Cut(set, "=")
				args[name] = text
			}
			if err := workflows.TemplateDecodeProblems(raw, args, agents); err != nil {
				return inFile(path, err)
			}
		}
		return nil // the template reader's message says it
	}
	if _, err := workflows.DecodeAndCheckFile(raw, agents); err != nil && tools.AsFailure(err).Kind == tools.ErrInvalidArgs {
		return inFile(path, err)
	}
	return nil
}

// inFile names the file (or template) an invalid spec came from, one
// problem a line.
func inFile(ref string, err error) error {
	f := tools.AsFailure(err)
	if f.Kind != tools.ErrInvalidArgs {
		return err
	}
	lines := strings.Split(f.Message, "\n")
	places := problemPlaces(ref, f, len(lines))
	g := *f
	if len(lines) == 1 {
		g.Message = places[0] + ": " + f.Message
	} else {
		for i, l := range lines {
			if places[i] != ref {
				lines[i] = places[i] + ": " + l
			}
		}
		g.Message = fmt.Sprintf("%s has %d problems:\n  %s", ref, len(lines), strings.Join(lines, "\n  "))
	}
	return &g
}

// problemPlaces is, for each of the n lines of an invalid spec's message,
// ref:line:col where the file holds its problem, or ref.
func problemPlaces(ref string, f *tools.Failure, n int) []string {
	places := make([]string, n)
	for i := range places {
		places[i] = ref
	}
	d, ok := f.Details.(workflows.ValidationDetails)
	if !ok {
		return places
	}
	b, err := os.ReadFile(ref)
	if err != nil {
		return places // a template found by name
	}
	for i, p := range d.Problems[:min(n, len(d.Problems))] {
		if line, col, ok := workflows.ProblemPosition(b, p); ok {
			places[i] = fmt.Sprintf("%s:%d:%d", ref, line, col)
		}
	}
	return places
}

// setFlags are the --set name=value flags, in order.
type setFlags []string

func (s *setFlags) String() string { return strings.Join(*s, " ") }

// Set takes one name=value.
func (s *setFlags) Set(v string) error {
	name, _, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("%q is not name=value", v)
	}
	if slices.ContainsFunc(*s, func(prev string) bool { return strings.HasPrefix(prev, name+"=") }) {
		return fmt.Errorf("%s is given twice", name)
	}
	*s = append(*s, v)
	return nil
}

// isTerminal reports whether w is a terminal that pixir may redraw in
// place (the live view, the waiting line). A terminal that says it cannot
// move the cursor (TERM=dumb: Emacs' shell and compilation buffers) is
// written to as a pipe is, in timestamped lines: it would print the escape
// sequences as text.
func isTerminal(w io.Writer) bool {
	f, ok := termtext.Raw(w).(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}

// terminalAsker answers permission requests in ask mode: on a terminal it
// asks y/n/always; without one it denies, and says so.
type terminalAsker struct {
	mu     sync.Mutex // one question at a time, from parallel children too
	stdin  io.Reader
	tty    bool
	stderr io.Writer
	warned bool

	readOnce sync.Once
	lines    chan string // stdin's lines, read by one goroutine

	// pause, when set, stops a live view from drawing while a question is
	// on the screen; it returns what resumes it.
	pause func() (resume func())
}

// noOneToAsk denies a change no one could be asked about, and tells the
// model so: nobody rejected it, and the user allows changes with a mode.
func noOneToAsk(why string) error {
	return &runtime.NoOneToAsk{Reason: "the session is in ask mode and no one could be asked (" + why +
		"), so the change was not made; do not retry it: tell the user, who can allow changes with --mode auto or answer the question at a terminal"}
}

func newTerminalAsker(stdin io.Reader, stderr io.Writer) *terminalAsker {
	f, ok := stdin.(*os.File)
	return &terminalAsker{stdin: stdin, tty: ok && term.IsTerminal(int(f.Fd())), stderr: stderr}
}

// readLines feeds a.lines until stdin ends; the goroutine ends with it.
func (a *terminalAsker) readLines() {
	a.lines = make(chan string)
	go func() {
		defer close(a.lines)
		sc := bufio.NewScanner(a.stdin)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
	}()
}

// AskPermission implements runtime.Asker.
func (a *terminalAsker) AskPermission(ctx context.Context, req runtime.PermissionRequest) (runtime.PermissionOutcome, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.tty {
		if !a.warned {
			a.warned = true
			fmt.Fprintln(a.stderr, "pixir: ask mode, but standard input is not a terminal: every change is denied (use --mode auto to allow them)")
		}
		fmt.Fprintf(a.stderr, "pixir: denied: %s\n", req.Title)
		return "", noOneToAsk("pixir run's standard input is not a terminal")
	}
	a.readOnce.Do(a.readLines)
	if a.pause != nil {
		defer a.pause()()
	}
	for {
		fmt.Fprintf(a.stderr, "\nAllow %s? [y]es, [n]o, [a]lways for %s: ", req.Title, req.Tool)
		var line string
		select {
		case l, ok := <-a.lines:
			if !ok {
				return "", noOneToAsk("pixir run's standard input ended before an answer")
			}
			line = l
		case <-ctx.Done():
			fmt.Fprintln(a.stderr)
			return runtime.PermissionCancelled, nil
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return runtime.AllowOnce, nil
		case "a", "always":
			return runtime.AllowAlways, nil
		case "n", "no":
			return runtime.RejectOnce, nil
		}
	}
}
