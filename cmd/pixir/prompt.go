package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/pixir-go/pixir/runtime/prompt"
)

// promptReport is `pixir prompt --json`.
type promptReport struct {
	Workspace string `json:"workspace"`
	Agent     string `json:"agent,omitempty"`
	prompt.Prompt
}

// runPrompt prints the system prompt a session in a folder gets (or a child
// of an agent there), built from the same configuration pixir acp reads,
// and on stderr the files it was made of.
func runPromptCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pixir prompt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, "Usage: pixir prompt [--agent NAME] [--json] [--cwd DIR] [provider flags]\n\nPrints the system prompt a session in the folder gets (or a Subagent running as NAME).\n")
	var pf providerFlags
	pf.register(fs)
	cwd := fs.String("cwd", "", "the workspace (default: the current folder)")
	agent := fs.String("agent", "", "show the prompt of a Subagent running as this agent instead")
	asJSON := fs.Bool("json", false, `print {"workspace", "agent", "text", "sources", "repo"}`)
	if _, code, done := parseFlags(fs, args, false, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pixir prompt: unexpected argument %q; usage: pixir prompt [--cwd DIR] [--agent NAME] [--json]\n", fs.Arg(0))
		return exitUsage
	}
	dir, err := workspaceDir(*cwd)
	if err != nil {
		fmt.Fprintln(stderr, "pixir prompt:", err)
		return exitUsage
	}
	rt, err := newRuntime(pf, slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Fprintln(stderr, "pixir prompt:", err)
		return exitUsage
	}
	if w := noHome(); w != "" {
		fmt.Fprintln(stderr, "pixir prompt: warning:", w)
	}
	defer rt.Close()
	p, err := rt.SystemPrompt(dir, *agent)
	if err != nil {
		fmt.Fprintln(stderr, "pixir prompt:", err)
		return exitUsage
	}
	if *asJSON {
		if p.Sources == nil {
			p.Sources = []prompt.Source{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(promptReport{Workspace: dir, Agent: *agent, Prompt: p}); err != nil {
			fmt.Fprintln(stderr, "pixir:", err)
			return exitError
		}
		return exitOK
	}
	fmt.Fprint(stdout, p.Text)
	if len(p.Sources) == 0 {
		fmt.Fprintf(stderr, "pixir prompt: %d bytes; no AGENTS.md read\n", len(p.Text))
	} else {
		fmt.Fprintf(stderr, "pixir prompt: %d bytes, made with:\n", len(p.Text))
	}
	for _, s := range p.Sources {
		cut := ""
		if s.Truncated {
			cut = ", cut"
		}
		fmt.Fprintf(stderr, "  %s: %s (%d bytes%s)\n", s.Kind, s.Path, s.Bytes, cut)
	}
	return exitOK
}
