package tools

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/pixir-go/pixir/sandbox"
)

//go:embed bash.md
var bashDescription string

const (
	bashDefaultTimeout = 120 * time.Second
	// bashOutputLimit bounds the output kept in memory and shown to the model.
	bashOutputLimit = 64 << 10
	// bashWaitDelay bounds how long descendants that outlived a finished
	// command (where the kernel cannot end them with it) may hold the
	// output pipe open before the call returns anyway.
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
	// Sandbox says what held the command: "read-only" (it could write only
	// its private temporary directory), "write-set" (only beneath the
	// directories it may write), or empty when nothing was asked.
	Sandbox string `json:"sandbox,omitempty"`
	// SandboxNotice says, once, that the kernel could not give the
	// confinement asked for, and why.
	SandboxNotice string `json:"sandbox_notice,omitempty"`
}

// BashTool runs a shell command in the workspace root.
func BashTool() Tool {
	return bashTool{Define(Spec[BashArgs]{
		Name:        "bash",
		Description: bashDescription,
		Posture:     PostureMutation,
		Kind:        KindExecute,
		Describe:    describeBash,
		Run:         runBash,
	})}
}

// bashTool is bash: every effect it has goes through the command it runs.
type bashTool struct{ Tool }

func (bashTool) SandboxedCommands() {}

// Arguments is the argument type the schema generator reflects (the
// embedded Tool's method is not promoted through the interface).
func (bashTool) Arguments() any { return new(BashArgs) }

func describeBash(a BashArgs) Presentation {
	cmd := strings.TrimSpace(a.Command)
	if cmd == "" {
		return Presentation{}
	}
	first, _, more := strings.Cut(cmd, "\n")
	if more {
		first += " …"
	}
	return Presentation{Title: "Run " + shorten(first, titleRunes), Command: cmd}
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
	// A command that may write nothing (a read_only session's, a read-only
	// shell's) runs only where the kernel can hold it so. Its call was
	// refused for that already, but the session may have been switched to
	// read_only since the call was allowed.
	if p := env.Commands; p.Confine && len(p.Writable) == 0 {
		if sup := env.Sandbox.Support(); !sup.Landlock {
			return Fail(ErrPermissionDenied, "this command may not write (the session is in read_only mode, or its agent's shell is read-only), and no kernel sandbox can hold it to read-only here (%s); ask the user to switch the mode to auto or ask", sup.LandlockProblem)
		}
	}
	// A command the sandbox must hold never runs in the editor's terminal,
	// which the sandbox cannot reach.
	if env.Terminals != nil && !env.Commands.Restricts() {
		return runInTerminal(ctx, env, a.Command, dir, timeout)
	}

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// One writer for both streams: exec then shares one pipe, keeping the
	// interleaving the command produced. Stdin is /dev/null.
	out := &headWriter{limit: bashOutputLimit}
	o, err := env.Sandbox.Run(runCtx, sandbox.Command{
		Path: shell, Args: []string{shell, "-c", a.Command}, Dir: dir, Output: out,
		Policy: env.Commands, WaitDelay: bashWaitDelay,
	})
	result := func() BashOutput {
		r := BashOutput{ExitCode: -1, Output: out.String(), SandboxNotice: env.SandboxNotice}
		if env.SandboxNotice != "" {
			// Also in the output, which is what an editor shows.
			r.Output = "[" + env.SandboxNotice + "]\n" + r.Output
		}
		if o.Confined {
			r.Sandbox = "write-set"
			if len(env.Commands.Writable) == 0 {
				r.Sandbox = "read-only"
			}
		}
		if o.State != nil && runCtx.Err() == nil {
			r.ExitCode = exitCode(o.State)
		}
		if o.Confined && env.Commands.Execute != nil && r.ExitCode == 126 {
			// The kernel refused to start a program: say why, once.
			r.Output += "\n[Pixir: this agent's commands may start only the programs its agent lists in shell; a program that is not listed is refused with \"Permission denied\"]"
		}
		return r
	}
	killed := "killed with every process it started"
	if env.Sandbox.Support().Contain != "pid-namespace" {
		killed = "killed with its process group"
	}
	switch {
	case ctx.Err() != nil:
		return Failed(&Failure{
			Kind:    ErrCancelled,
			Message: "the command was cancelled and " + killed + "; the output so far is in details",
			Details: result(),
		})
	case runCtx.Err() != nil:
		r := result()
		r.TimedOut = true
		return Failed(&Failure{
			Kind: ErrTimeout,
			Message: fmt.Sprintf("the command did not finish within %s and was %s; the output so far is in details. "+
				"Raise timeout_ms (at most 600000) if it needs longer", timeout, killed),
			Details: r,
		})
	case o.State == nil:
		return Fail(ErrInternal, "could not start %s: %v", shell, err)
	}
	// Other errors are a non-zero exit, or leftover descendants that held
	// the output pipe past bashWaitDelay: the command itself finished.
	return OK(result())
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
	if i := binaryAt(w.head); i >= 0 {
		// Binary output is noise to a model (every byte that is not
		// UTF-8 a U+FFFD): the text before it stays, up to its last line.
		text := w.head[:bytes.LastIndexByte(w.head[:i], '\n')+1]
		return fmt.Sprintf("%s[… binary output not shown (%d bytes): pipe it through xxd | head, strings or file - to see a part of it]",
			text, w.total-len(text))
	}
	if w.total > len(w.head) {
		return truncated(string(w.head), w.total)
	}
	return string(w.head)
}

// binaryAt says where binary output starts in b (its first byte that is
// not text: not UTF-8, or a control byte no text uses, NUL among them), or
// -1 when b reads as text: at most a third of it is not, so Latin-1 text
// with its accents, or NUL-separated names (find -print0), stay text. NUL
// is valid UTF-8: an executable, a library or a database file, mostly
// NULs, passed for text when only invalid UTF-8 was counted.
func binaryAt(b []byte) int {
	first, notText := -1, 0
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if (r == utf8.RuneError && n <= 1) || (r < 0x20 && !textControl(byte(r))) {
			if first < 0 {
				first = i
			}
			notText++
			n = 1
		}
		i += n
	}
	if notText*3 <= len(b) {
		return -1
	}
	return first
}

// textControl says whether control byte c is one text uses: tab, line
// and page ends, backspace (man's bold), escape (colours).
func textControl(c byte) bool {
	switch c {
	case '\t', '\n', '\r', '\f', '\v', '\b', 0x1b:
		return true
	}
	return false
}
