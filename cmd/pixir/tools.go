package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/tools/mcp"
	"github.com/pixir-go/pixir/workflows"
)

// catalogueEntry is one tool as a provider offers it to the model, with
// its posture, and for an MCP tool the server it comes from.
type catalogueEntry struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Posture     tools.Posture   `json:"posture"`
	Parameters  json.RawMessage `json:"parameters"`
	Server      string          `json:"server,omitempty"`
}

// runTools prints the built-in tools as the model sees them: a table, or
// with --json the whole catalogue with each tool's arguments schema. With
// --mcp it starts the MCP servers of config.toml, here, and lists theirs
// too.
func runTools(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pixir tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, "Usage: pixir tools [--json] [--mcp]\n\nLists the built-in tools as the model sees them.\n")
	asJSON := fs.Bool("json", false, "print the catalogue as JSON: [{name, description, posture, parameters, server}]")
	withMCP := fs.Bool("mcp", false, "also start the MCP servers of config.toml ([mcp_servers]) in the current directory and list their tools")
	if _, code, done := parseFlags(fs, args, false, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pixir tools: unexpected argument %q; usage: pixir tools [--json] [--mcp]\n", fs.Arg(0))
		return exitUsage
	}
	all := tools.NewRegistry(append(tools.Builtins(), workflows.Tools()...)...).All()
	code := exitOK
	if *withMCP {
		var extra []tools.Tool
		if extra, code = mcpCatalogue(stderr); code == exitUsage {
			return code
		}
		all = append(all, extra...)
	}
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
	return code
}

// mcpCatalogue starts config.toml's MCP servers, waits for them, and
// returns their tools. A server that does not start is reported on stderr
// and makes the exit code exitError: the catalogue is incomplete.
func mcpCatalogue(stderr io.Writer) ([]tools.Tool, int) {
	home, err := runtime.HomeDir()
	if err != nil {
		// No config.toml to read, so no server to list: as pixir agents
		// and workflows, a warning, not a usage error.
		fmt.Fprintf(stderr, "pixir: warning: %v; config.toml is not read, so there are no [mcp_servers] to list\n", err)
		return nil, exitOK
	}
	settings, err := runtime.LoadSettings(home)
	if err != nil {
		fmt.Fprintln(stderr, "pixir:", err)
		return nil, exitUsage
	}
	cfg, err := settings.MCPConfig(os.Getenv)
	code := exitOK
	if err != nil {
		fmt.Fprintln(stderr, "pixir:", err)
		code = exitError
	}
	if len(cfg.Servers) == 0 {
		if code == exitOK {
			fmt.Fprintf(stderr, "pixir: %s has no [mcp_servers] to list\n", filepath.Join(home, "config.toml"))
		}
		return nil, code
	}
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, "pixir:", err)
		return nil, exitUsage
	}
	ctx, stop := interruptible()
	defer stop()
	// Errors only: a server that did not start (or stopped) is said below,
	// once, with the others' state; the set's own warning said it twice.
	set := mcp.Start(cfg.WithDefaults(), mcp.Options{Dir: dir, Version: version, Logger: slog.New(newPersonHandler(stderr, slog.LevelError))})
	defer set.Close()
	if err := set.Ready(ctx); err != nil {
		fmt.Fprintln(stderr, "pixir: interrupted while the MCP servers started")
		return nil, exitError
	}
	var out []tools.Tool
	for _, st := range set.Status() {
		if st.State != mcp.StateRunning {
			fmt.Fprintf(stderr, "pixir: MCP server %q did not start: %s\n", st.Name, st.Error)
			code = exitError
		}
		out = append(out, st.Tools...)
	}
	return out, code
}

func writeCatalogueJSON(w io.Writer, all []tools.Tool) error {
	entries := make([]catalogueEntry, len(all))
	for i, t := range all {
		entries[i] = catalogueEntry{Name: t.Name(), Description: t.Description(), Posture: t.Posture(), Parameters: t.Schema()}
		if m, ok := t.(interface{ Server() string }); ok {
			entries[i].Server = m.Server()
		}
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
