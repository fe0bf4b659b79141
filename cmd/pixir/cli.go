package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pixir-go/pixir/internal/suggest"
	"github.com/pixir-go/pixir/tools"
)

// commands are the command names pixir accepts, for "did you mean".
var commands = []string{"acp", "demo", "tools", "workflows", "agents", "doctor", "prompt", "run", "resume", "sessions", "inspect", "gc", "smoke", "version", "help"}

// parseFlags parses a command's flags the way every pixir command does:
// -h and --help print the command's usage on stdout and exit 0; a flag that
// is not defined, or a bad value, is one line on stderr that names the
// command, suggests the nearest flag, and says how to see them all (exit
// 64). With interleaved, flags may also follow the positional arguments
// (pixir run "fix it" --json). done reports that the command must end with
// code.
func parseFlags(fs *flag.FlagSet, args []string, interleaved bool, stdout, stderr io.Writer) (rest []string, code int, done bool) {
	usage := fs.Usage
	fs.SetOutput(io.Discard) // the flag package's own messages are replaced below
	fs.Usage = func() {}
	var err error
	if interleaved {
		rest, err = parseInterleaved(fs, args)
	} else {
		err = fs.Parse(args)
		rest = fs.Args()
	}
	fs.Usage = usage
	switch {
	case err == nil:
		fs.SetOutput(stderr)
		return rest, exitOK, false
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return nil, exitOK, true
	}
	fmt.Fprintf(stderr, "%s: %s\nRun \"%s -h\" for its flags.\n", fs.Name(), flagProblem(fs, err), fs.Name())
	if (fs.Name() == "pixir run" || fs.Name() == "pixir resume") && asksForJSON(args) {
		// A script that asked for the envelope reads stdout: it gets the
		// one of invalid input there, as for every other invalid input.
		newRunOutput(stdout, io.Discard, true).envelope(tools.Failed(
			&tools.Failure{Kind: tools.ErrInvalidArgs, Message: flagProblem(fs, err)}))
	}
	return nil, exitUsage, true
}

// asksForJSON reports whether the command line, which the flag package
// could not parse to its end, sets --json before any "--": the last
// setting wins, in every spelling the flag package takes (-json,
// --json=1, --json=TRUE; strconv.ParseBool's).
func asksForJSON(args []string) bool {
	on := false
	for _, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if name != "json" || !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue {
			on = true
			continue
		}
		set, err := strconv.ParseBool(value)
		on = err == nil && set
	}
	return on
}

// flagProblem rewrites the flag package's error for a person: "unknown
// flag --jsn; did you mean --json?".
func flagProblem(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if near := nearest(name, names); near != "" {
			return fmt.Sprintf("unknown flag --%s; did you mean --%s?", name, near)
		}
		if name == "resume-from" && fs.Name() == "pixir run" {
			// A run in a new session has no earlier run to reuse: resume_from
			// names a run of the session it resumes.
			return "unknown flag --resume-from: it belongs to pixir resume, which reuses an earlier run of the same session: pixir resume SESSION --workflow FILE --resume-from WORKFLOW_ID (a partial run prints that command)"
		}
		return fmt.Sprintf("unknown flag --%s", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return fmt.Sprintf("flag --%s needs a value", strings.TrimLeft(name, "-"))
	}
	return msg
}

// unknownCommand is the message for a command pixir does not have.
func unknownCommand(name string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "pixir: unknown command %q", name)
	if near := nearest(name, commands); near != "" {
		fmt.Fprintf(stderr, "; did you mean %q?", near)
	} else if strings.HasPrefix(name, "-") {
		fmt.Fprint(stderr, "; flags go after the command, e.g. pixir run --json \"prompt\"")
	}
	fmt.Fprint(stderr, "\nRun \"pixir -h\" for the commands.\n")
	return exitUsage
}

// nearest is the candidate s was probably meant to be, or "".
func nearest(s string, candidates []string) string { return suggest.Nearest(s, candidates) }

func editDistance(a, b string) int { return suggest.EditDistance(a, b) }

// usageFunc is a FlagSet's usage: the text, then its flags, written where
// the FlagSet writes (stdout for -h, stderr otherwise).
func usageFunc(fs *flag.FlagSet, text string) func() {
	return func() {
		fmt.Fprint(fs.Output(), text)
		if !strings.HasSuffix(text, "\n") {
			fmt.Fprintln(fs.Output())
		}
		fmt.Fprint(fs.Output(), "\nFlags:\n")
		fs.PrintDefaults()
	}
}

// noArguments refuses what is left after a command's flags when the
// command takes no argument: "pixir doctor openai" checked the configured
// provider and said every check passed, and "pixir demo x" ran the demo,
// as if the word had been understood. A provider's name gets its flag.
func noArguments(name, usage string, rest []string, stderr io.Writer) (code int, done bool) {
	if len(rest) == 0 {
		return exitOK, false
	}
	fmt.Fprintf(stderr, "%s: unexpected argument %q; usage: %s", name, rest[0], usage)
	switch rest[0] {
	case "scripted", "openai", "anthropic":
		fmt.Fprintf(stderr, " (a provider is chosen with --provider %s)", rest[0])
	}
	fmt.Fprintln(stderr)
	return exitUsage, true
}
