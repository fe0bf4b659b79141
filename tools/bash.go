package tools

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

//go:embed bash.md
var bashDescription string

const (
	bashDefaultTimeout = 120 * time.Second
	// bashOutputLimit bounds the output kept in memory and shown to the model.
	bashOutputLimit = 64 << 10
	// bashWaitDelay bounds how long descendants that escaped the process
	// group (or outlived a finished command) may hold the output pipe open
	// before the call returns anyway.
	bashWaitDelay = time.Second
	titleRunes    = 80
)

// BashArgs are the arguments of bash.
type BashArgs struct {
	Command   string `json:"command" jsonschema_description:"Shell command to run in the workspace root."`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"minimum=1,maximum=600000" jsonschema_description:"Time limit in milliseconds. Default 120000."`
}

// BashOutput is what bash returns. It is also the Details of a timeout or
// cancelled failure, with the output captured until then.
type BashOutput struct {
	ExitCode int    `json:"exit_code"`
	Output   string `json:"output"`
	TimedOut bool   `json:"timed_out"`
}

// BashTool runs a shell command in the workspace root.
func BashTool() Tool {
	return Define(Spec[BashArgs]{
		Name:        "bash",
		Description: bashDescription,
		Posture:     PostureMutation,
		Kind:        KindExecute,
		Describe:    describeBash,
		Run:         runBash,
	})
}

func describeBash(a BashArgs) Presentation {
	cmd := strings.TrimSpace(a.Command)
	if cmd == "" {
		return Presentation{}
	}
	first, _, more := strings.Cut(cmd, "\n")
	if more {
		first += " …"
	}
	return Presentation{Title: "Run " + shorten(first, titleRunes)}
}

// shorten cuts s to at most n runes, marking the cut with an ellipsis.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func runBash(ctx context.Context, env Env, a BashArgs, dryRun bool) Result {
	if strings.TrimSpace(a.Command) == "" {
		return Fail(ErrInvalidArgs, "command is empty; give the shell command to run")
	}
	if env.Workspace == nil {
		return Fail(ErrInternal, "this session has no workspace to run commands in; this is a bug in Pixir")
	}
	dir := env.Workspace.Root()
	timeout := bashDefaultTimeout
	if a.TimeoutMS > 0 {
		timeout = time.Duration(a.TimeoutMS) * time.Millisecond
	}
	shell := shellPath()
	if dryRun {
		return Preview("would run %q with %s in %s, with a %s time limit", a.Command, shell, dir, timeout)
	}
	if env.Terminals != nil {
		return runInTerminal(ctx, env, a.Command, dir, timeout)
	}

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, shell, "-c", a.Command)
	cmd.Dir = dir
	// Its own process group, so that stopping it also stops everything it
	// started; Stdin stays nil, which is /dev/null.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = bashWaitDelay
	// One writer for both streams: exec then shares one pipe, keeping the
	// interleaving the command produced.
	out := &headWriter{limit: bashOutputLimit}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()

	switch {
	case ctx.Err() != nil:
		return Failed(&Failure{
			Kind:    ErrCancelled,
			Message: "the command was cancelled and killed with every process it started; the output so far is in details",
			Details: BashOutput{ExitCode: -1, Output: out.String()},
		})
	case runCtx.Err() != nil:
		return Failed(&Failure{
			Kind: ErrTimeout,
			Message: fmt.Sprintf("the command did not finish within %s and was killed with every process it started; the output so far is in details. "+
				"Raise timeout_ms (at most 600000) if it needs longer, or run a server or watcher in the background with its output redirected to a file", timeout),
			Details: BashOutput{ExitCode: -1, Output: out.String(), TimedOut: true},
		})
	case cmd.ProcessState == nil:
		return Fail(ErrInternal, "could not start %s: %v", shell, err)
	}
	// Other errors are a non-zero exit, or leftover descendants that held
	// the output pipe past bashWaitDelay: the command itself finished.
	return OK(BashOutput{ExitCode: exitCode(cmd.ProcessState), Output: out.String()})
}

// runInTerminal runs the command in a terminal the editor owns, so the user
// watches it live inside the tool call; the outcome reads as a local run's.
func runInTerminal(ctx context.Context, env Env, command, dir string, timeout time.Duration) Result {
	tr, err := env.Terminals.Run(ctx, TerminalRequest{
		ToolCallID: env.ToolCallID, Command: command, Cwd: dir, OutputLimit: bashOutputLimit, Timeout: timeout,
	})
	output := tr.Output
	if tr.Truncated {
		output = "[… the terminal kept only its last bytes]\n" + output
	}
	code := -1
	if tr.ExitCode != nil {
		code = *tr.ExitCode
	} else if tr.Signal != "" {
		output += fmt.Sprintf("\n[killed by %s]", tr.Signal)
	}
	var res Result
	switch {
	case ctx.Err() != nil:
		res = Failed(&Failure{Kind: ErrCancelled, Message: "the command was cancelled and its terminal killed; the output so far is in details",
			Details: BashOutput{ExitCode: -1, Output: output}})
	case tr.TimedOut:
		res = Failed(&Failure{Kind: ErrTimeout, Message: fmt.Sprintf("the command did not finish within %s and its terminal was killed; the output so far is in details. "+
			"Raise timeout_ms (at most 600000) if it needs longer", timeout), Details: BashOutput{ExitCode: -1, Output: output, TimedOut: true}})
	case err != nil:
		res = Failed(AsFailure(err))
	default:
		res = OK(BashOutput{ExitCode: code, Output: output})
	}
	res.TerminalID = tr.TerminalID
	return res
}

// shellPath prefers bash, which the description promises, and falls back
// to sh on minimal systems.
func shellPath() string {
	if p, err := exec.LookPath("bash"); err == nil {
		return p
	}
	return "/bin/sh"
}

// exitCode reports death by signal N as 128+N, as shells do, rather than
// the -1 of os.ProcessState.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// headWriter keeps the first limit bytes written and counts the rest, so a
// command that prints gigabytes costs only limit bytes of memory.
type headWriter struct {
	head  []byte
	limit int
	total int
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.total += len(p)
	if room := w.limit - len(w.head); room > 0 {
		w.head = append(w.head, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *headWriter) String() string {
	if w.total > len(w.head) {
		return truncated(string(w.head), w.total)
	}
	return string(w.head)
}
