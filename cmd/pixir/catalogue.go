package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// catalogueCommand is what `pixir agents` and `pixir workflows` share: both
// list what a project can use (agents, templates) from the same places
// (the project folder, the user's home), as a table or as JSON, and exit 1
// when a file is broken, after printing everything else.
type catalogueCommand struct {
	name     string // "agents"
	about    string // the usage's second line
	jsonHelp string // what --json prints
	cwdHelp  string // what --cwd reads
	noHome   string // what is not read when the home folder is unknown
}

// catalogueRun is one invocation's parsed arguments.
type catalogueRun struct {
	project, home string
	asJSON        bool
}

// parse reads the flags and finds the project and home folders; done
// means the command ends now with code (help, a usage error).
func (c catalogueCommand) parse(args []string, stdout, stderr io.Writer) (run catalogueRun, code int, done bool) {
	usage := fmt.Sprintf("pixir %s [--json] [--cwd DIR]", c.name)
	fs := flag.NewFlagSet("pixir "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, "Usage: "+usage+"\n\n"+c.about+"\n")
	asJSON := fs.Bool("json", false, c.jsonHelp)
	cwd := fs.String("cwd", "", c.cwdHelp)
	if _, code, done := parseFlags(fs, args, false, stdout, stderr); done {
		return run, code, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pixir %s: unexpected argument %q; usage: %s\n", c.name, fs.Arg(0), usage)
		return run, exitUsage, true
	}
	project, err := projectDir(*cwd)
	if err != nil {
		fmt.Fprintf(stderr, "pixir %s: %v\n", c.name, err)
		return run, exitUsage, true
	}
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintf(stderr, "pixir %s: warning: %v; %s\n", c.name, err, c.noHome)
		home = ""
	}
	return catalogueRun{project: project, home: home, asJSON: *asJSON}, exitOK, false
}

// finish prints the report, as JSON on stdout or through writeText, and
// says how the command exits: 1 when printing failed or a file was broken.
func (c catalogueCommand) finish(run catalogueRun, report any, writeText func() error, loadErr error, stdout, stderr io.Writer) int {
	var err error
	if run.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	} else {
		err = writeText()
	}
	if err != nil {
		fmt.Fprintln(stderr, "pixir:", err)
		return exitError
	}
	if loadErr != nil {
		return exitError
	}
	return exitOK
}

// fileProblems lists the problems in a loader's error, in order: each file
// error as it is, anything else as a problem with only a message.
func fileProblems[E error](err error, fromMessage func(string) E) []E {
	out := []E{}
	if err == nil {
		return out
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		if fe, ok := errors.AsType[E](e); ok {
			out = append(out, fe)
		} else {
			out = append(out, fromMessage(e.Error()))
		}
	}
	return out
}
