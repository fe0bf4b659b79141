package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// catalogueEntry is one tool as a provider offers it to the model, with
// its posture.
type catalogueEntry struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Posture     tools.Posture   `json:"posture"`
	Parameters  json.RawMessage `json:"parameters"`
}

// runTools prints the built-in tools as the model sees them: a table, or
// with --json the whole catalogue with each tool's arguments schema.
func runTools(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pixir tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the catalogue as JSON: [{name, description, posture, parameters}]")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pixir tools: unexpected argument %q; usage: pixir tools [--json]\n", fs.Arg(0))
		return exitUsage
	}
	all := tools.NewRegistry(append(tools.Builtins(), workflows.Tools()...)...).All()
	var err error
	if *asJSON {
		err = writeCatalogueJSON(stdout, all)
	} else {
		err = writeCatalogueTable(stdout, all)
	}
	if err != nil {
		fmt.Fprintln(stderr, "pixir:", err)
		return exitError
	}
	return exitOK
}

func writeCatalogueJSON(w io.Writer, all []tools.Tool) error {
	entries := make([]catalogueEntry, len(all))
	for i, t := range all {
		entries[i] = catalogueEntry{Name: t.Name(), Description: t.Description(), Posture: t.Posture(), Parameters: t.Schema()}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(entries)
}

// summaryRunes bounds the description shown in the table.
const summaryRunes = 90

func writeCatalogueTable(w io.Writer, all []tools.Tool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPOSTURE\tDESCRIPTION")
	for _, t := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name(), t.Posture(), summary(t.Description()))
	}
	return tw.Flush()
}

// summary is the first line of a description, cut to summaryRunes.
func summary(desc string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(desc), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > summaryRunes {
		line = string([]rune(line)[:summaryRunes-1]) + "…"
	}
	return line
}
