// Command pixir is the Pixir agent runtime: `pixir acp` serves the Agent
// Client Protocol on stdin/stdout for editors and scripts.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/google/uuid"

	"github.com/pixir-go/pixir/acp"
	"github.com/pixir-go/pixir/internal/termtext"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 64
)

const usage = `pixir — a supervised runtime for coding-agent work, spoken to over ACP

Usage:
  pixir acp [flags]     serve the Agent Client Protocol on stdin/stdout
  pixir demo [flags]    run a short scripted session through a real ACP client
  pixir tools [--json]  list the built-in tools as the model sees them
  pixir agents [--json] list the agents a subagent can run as, and where each comes from
  pixir run "prompt"    run one turn in the current directory and stream the answer
  pixir run --workflow FILE|TEMPLATE [--set name=value]…
                        run a workflow (a file, JSON or YAML, or a template by
                        name) without a model in the parent
  pixir workflows [--json]
                        list the workflow templates, their parameters and sources
  pixir resume ID "prompt"
                        run one more turn of a session
  pixir resume ID --workflow FILE [--resume-from WF]
                        run a workflow in a session, reusing WF's ready steps
  pixir sessions        list the sessions of the current directory
  pixir inspect ID      show a session's turns, tool calls, Subagents and Workflows
  pixir gc [--dry-run]  remove old session Logs and Subagent snapshots, and say what it freed
  pixir smoke workflows check the workflow contract offline (--dry-run, --json)
  pixir smoke workflows-real --scenario NAME
                        the same against the configured real provider, with evidence
  pixir doctor [flags]  check the configured model provider; --json for scripts
  pixir prompt [--agent NAME]
                        show the system prompt a session (or a subagent) gets here
  pixir version         print the version

Run "pixir <command> -h" for a command's flags.
`

func main() {
	if os.Getenv("PIXIR_MEMPROFILE") != "" {
		// One sample per 4 KiB allocated rather than per 512 KiB: counts
		// of what a step allocates that hold from run to run.
		runtime.MemProfileRate = 4096
	}
	// Every Log line has an id (a UUIDv7, random bits from crypto/rand):
	// drawn from a pool filled 256 at a time rather than a read (and an
	// allocation) each, ~1 % of a workflow run's CPU. Before any id is
	// made, as the pool requires. No secret is a UUID here.
	uuid.EnableRandPool()
	stop := startCPUProfile(os.Getenv("PIXIR_CPUPROFILE"), os.Stderr)
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	writeAllocProfile(os.Getenv("PIXIR_MEMPROFILE"), os.Stderr)
	os.Exit(code)
}

// writeAllocProfile writes the process's allocation profile to path when
// it is set (PIXIR_MEMPROFILE: every allocation since the start, sampled
// as the runtime samples them, and what was still live at the last
// collection), for counting what a run allocates per step.
func writeAllocProfile(path string, stderr io.Writer) {
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(stderr, "pixir: PIXIR_MEMPROFILE:", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintln(stderr, "pixir: PIXIR_MEMPROFILE:", err)
	}
}

// startCPUProfile writes a CPU profile of the whole process to path when
// it is set (PIXIR_CPUPROFILE, for finding where a run's time goes: the
// benchmarks pass it through), and returns what ends it.
func startCPUProfile(path string, stderr io.Writer) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(stderr, "pixir: PIXIR_CPUPROFILE:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(stderr, "pixir: PIXIR_CPUPROFILE:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "acp", "run", "resume", "gc":
		outliveClosedPipes()
	}
	if args[0] == "acp" { // stdout carries the protocol, not text for people
		return runACP(args[1:], stdin, stdout, stderr)
	}
	// Everything else prints for people, text from models, tools, files
	// and sessions among it: its control characters are made inert, so no
	// answer can retitle the terminal, clear it or write the clipboard.
	// (JSON passes unchanged in meaning: see termtext.)
	out, errOut := termtext.NewWriter(stdout), termtext.NewWriter(stderr)
	defer out.Flush()
	defer errOut.Flush()
	return runPrinting(args, stdin, out, errOut)
}

func runPrinting(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch args[0] {
	case "demo":
		return runDemo(args[1:], stdout, stderr)
	case "tools":
		return runTools(args[1:], stdout, stderr)
	case "workflows":
		return runWorkflows(args[1:], stdout, stderr)
	case "agents":
		return runAgents(args[1:], stdout, stderr)
	case "doctor":
		return runDoctor(args[1:], stdout, stderr)
	case "prompt":
		return runPromptCommand(args[1:], stdout, stderr)
	case "run":
		return runRun(args[1:], stdin, stdout, stderr)
	case "resume":
		return runResume(args[1:], stdin, stdout, stderr)
	case "sessions":
		return runSessions(args[1:], stdout, stderr)
	case "inspect":
		return runInspect(args[1:], stdout, stderr)
	case "gc":
		return runGC(args[1:], stdout, stderr)
	case "smoke":
		return runSmoke(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		if len(args) == 2 && (args[1] == "-h" || args[1] == "--help") {
			fmt.Fprint(stdout, "Usage: pixir version\n\nPrints the version.\n")
			return exitOK
		}
		if code, done := noArguments("pixir version", "pixir version", args[1:], stderr); done {
			return code
		}
		fmt.Fprintln(stdout, "pixir", version)
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	return unknownCommand(args[0], stderr)
}

func runACP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pixir acp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var pf providerFlags
	pf.register(fs)
	logFile := fs.String("log-file", "", "also write logs to this file")
	verbose := fs.Bool("verbose", false, "log debug details")
	fs.Usage = usageFunc(fs, "Usage: pixir acp [flags]\n\nServes the Agent Client Protocol (v1) on stdin/stdout, for editors and scripts.\n")
	rest, code, done := parseFlags(fs, args, false, stdout, stderr)
	if done {
		return code
	}
	if code, done := noArguments("pixir acp", "pixir acp [flags]", rest, stderr); done {
		return code
	}
	logger, closeLog, err := newLogger(stderr, *logFile, *verbose)
	if err != nil {
		fmt.Fprintln(stderr, "pixir:", err)
		return exitUsage
	}
	defer closeLog()
	rt, err := newRuntime(pf, logger)
	if err != nil {
		fmt.Fprintln(stderr, "pixir:", err)
		return exitUsage
	}
	defer rt.Close()
	srv := acp.NewServer(rt, acp.Options{Version: version, Logger: logger})
	// Watch before serving: a SIGTERM that lands once a turn can run must
	// cancel it, not kill the process outright.
	ended, stop := stopSignals()
	defer stop()
	conn := srv.Serve(stdin, stdout, nil)
	select {
	case <-conn.Done():
	case <-ended:
		// An editor quitting, a bot's supervisor or a CI job's end: the
		// turns running are cancelled and recorded, their clients
		// answered, as when the input ends. A second signal kills.
		conn.Interrupt()
	}
	return exitOK
}

// newLogger writes text logs to stderr (never stdout: it carries the
// protocol) and, when asked, to a file too.
func newLogger(stderr io.Writer, path string, verbose bool) (*slog.Logger, func(), error) {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	out := stderr
	closeFn := func() {}
	if path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("opening log file: %w", err)
		}
		out = io.MultiWriter(stderr, f)
		closeFn = func() { f.Close() }
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level})), closeFn, nil
}
