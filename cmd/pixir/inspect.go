package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/inspect"
)

// runSessions is `pixir sessions [--json] [--cwd DIR]`: the sessions of a
// workspace, newest first.
func runSessions(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pixir sessions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, "Usage: pixir sessions [--json] [--cwd DIR]\n\nLists the sessions of a workspace, newest first.\n")
	asJSON := fs.Bool("json", false, "print a JSON array of {session_id, workspace, title, mode, model, provider?, created_at, updated_at, turns, log, last_stop_reason?}")
	cwd := fs.String("cwd", "", "the workspace whose sessions are listed (default: the current directory)")
	if _, code, done := parseFlags(fs, args, false, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pixir sessions: unexpected argument %q; usage: pixir sessions [--json] [--cwd DIR]\n", fs.Arg(0))
		return exitUsage
	}
	dir, err := projectDir(*cwd)
	if err != nil {
		fmt.Fprintln(stderr, "pixir sessions:", err)
		return exitUsage
	}
	list, err := inspect.List(dir)
	if err != nil {
		fmt.Fprintln(stderr, "pixir sessions:", err)
		return exitError
	}
	if *asJSON {
		err = writeJSON(stdout, list)
	} else if len(list) == 0 {
		fmt.Fprintf(stderr, "pixir sessions: no sessions in %s (pixir run, or an editor through pixir acp, starts one)\n", dir)
	} else {
		err = inspect.RenderList(stdout, list, time.Local)
	}
	if err != nil {
		fmt.Fprintln(stderr, "pixir sessions:", err)
		return exitError
	}
	return exitOK
}

// runInspect is `pixir inspect SESSION_ID [--json] [--events] [--cwd DIR]`:
// a session's turns, tool calls, Subagents and Workflows, from its Log.
func runInspect(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pixir inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, "Usage: pixir inspect [--json | --events] [--cwd DIR] SESSION_ID\n\nShows what a session did, from its Log alone. SESSION_ID may be a unique start of\nthe id, or a Subagent's id (sa-…) as pixir inspect shows it.\n")
	asJSON := fs.Bool("json", false, "print the tree as JSON")
	events := fs.Bool("events", false, "print the Log's events, one JSON object per line")
	cwd := fs.String("cwd", "", "the workspace of the session (default: the current directory)")
	rest, code, done := parseFlags(fs, args, true, stdout, stderr)
	if done {
		return code
	}
	switch {
	case len(rest) != 1:
		fmt.Fprintln(stderr, "pixir inspect: give one session id: pixir inspect [--json] [--events] [--cwd DIR] SESSION_ID (pixir sessions lists them)")
		return exitUsage
	case *asJSON && *events:
		fmt.Fprintln(stderr, "pixir inspect: choose one of --json (the tree) and --events (the raw events)")
		return exitUsage
	}
	dir, err := projectDir(*cwd)
	if err != nil {
		fmt.Fprintln(stderr, "pixir inspect:", err)
		return exitUsage
	}
	found, err := inspect.Locate(dir, rest[0])
	if err != nil {
		fmt.Fprintln(stderr, "pixir inspect:", err)
		if errors.Is(err, runtime.ErrSessionNotFound) || errors.Is(err, inspect.ErrAmbiguous) {
			return exitUsage
		}
		return exitError
	}
	sess, evs, err := inspect.Load(found)
	if err != nil {
		fmt.Fprintln(stderr, "pixir inspect:", err)
		return exitError
	}
	switch {
	case *events:
		warnLoad(stderr, sess.Load)
		err = writeEvents(stdout, evs)
	case *asJSON:
		warnLoad(stderr, sess.Load)
		err = writeJSON(stdout, sess)
	default:
		err = inspect.Render(stdout, sess, inspect.RenderOptions{Location: time.Local})
	}
	if err != nil {
		fmt.Fprintln(stderr, "pixir inspect:", err)
		return exitError
	}
	return exitOK
}

// warnLoad says on stderr what the Log lost, when stdout is for scripts:
// what the tree's header says.
func warnLoad(stderr io.Writer, l inspect.LoadInfo) {
	for _, w := range inspect.LoadWarnings(l) {
		fmt.Fprintln(stderr, "pixir inspect: warning: "+w)
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeEvents prints events as the Log holds them: one per line.
func writeEvents(w io.Writer, events []runtime.Event) error {
	for i := range events {
		line, err := json.Marshal(&events[i])
		if err != nil {
			return err
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return nil
}
