package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pixir-go/pixir/runtime/agents"
)

// agentEntry is one agent in `pixir agents --json`. Optional fields are
// always present: "" means the parent's model, effort or mode.
type agentEntry struct {
	Name                  string `json:"name"`
	Description           string `json:"description"`
	DeveloperInstructions string `json:"developer_instructions"`
	Model                 string `json:"model"`
	ModelReasoningEffort  string `json:"model_reasoning_effort"`
	SandboxMode           string `json:"sandbox_mode"`
	ReadOnly              bool   `json:"read_only"`
	// Network is "allow" or "deny"; Profile what its children may do.
	Network string         `json:"network"`
	Profile agents.Profile `json:"profile"`
	// Summary says the mode and profile in a few words, as the table does.
	Summary string `json:"summary"`
	Source  string `json:"source"`
}

// agentsReport is the whole of `pixir agents --json`.
type agentsReport struct {
	Agents   []agentEntry        `json:"agents"`
	Warnings []agents.Warning    `json:"warnings"`
	Errors   []*agents.FileError `json:"errors"`
}

// agentsCommand is `pixir agents`.
var agentsCommand = catalogueCommand{
	name:     "agents",
	about:    "Lists the agents a subagent can run as, each with its source, and the problems of agent files.",
	jsonHelp: `print {"agents":[…],"warnings":[…],"errors":[…]}`,
	cwdHelp:  "the project folder whose .pixir/agents and .codex/agents are read (default: the current folder)",
	noHome:   "~/.pixir/agents and ~/.codex/agents are not read",
}

// runAgents lists the agents a Subagent can run as in a project: the
// custom ones from TOML files and the built-ins, each with its source,
// then the warnings and errors. It exits 1 when some agent file is broken,
// after printing everything else.
func runAgents(args []string, stdout, stderr io.Writer) int {
	run, code, done := agentsCommand.parse(args, stdout, stderr)
	if done {
		return code
	}
	project, home := run.project, run.home
	reg, loadErr := agents.Load(project, home)
	report := agentsReport{Warnings: reg.Warnings(), Errors: fileProblems(loadErr, func(m string) *agents.FileError { return &agents.FileError{Message: m} })}
	if report.Warnings == nil {
		report.Warnings = []agents.Warning{}
	}
	configured, provider := configuredModels()
	for _, a := range reg.All() {
		if a.Model != "" && configured != nil && !slices.Contains(configured, a.Model) {
			report.Warnings = append(report.Warnings, agents.Warning{File: a.Source, Message: fmt.Sprintf(
				"model %q is not among the models configured for the %s provider (%s): spawning %s is refused until it is added to models in config.toml",
				a.Model, provider, strings.Join(configured, ", "), a.Name)})
		}
		network := agents.NetworkAllow
		if a.DenyNetwork() {
			network = agents.NetworkDeny
		}
		report.Agents = append(report.Agents, agentEntry{
			Name: a.Name, Description: a.Description, DeveloperInstructions: a.DeveloperInstructions,
			Model: a.Model, ModelReasoningEffort: a.ModelReasoningEffort, SandboxMode: a.SandboxMode,
			ReadOnly: a.ReadOnly(), Network: network, Profile: a.Profile, Summary: a.Summary(), Source: a.Source,
		})
	}
	return agentsCommand.finish(run, report, func() error {
		err := writeAgentsTable(stdout, report, project, home)
		writeAgentProblems(stderr, report)
		return err
	}, loadErr, stdout, stderr)
}

// configuredModels are the models a session may use under the
// configuration pixir acp would read (no flags), and its provider; nil when
// the configuration does not load (pixir doctor says why).
func configuredModels() ([]string, string) {
	_, _, c, err := loadChoice(providerFlags{})
	if err != nil {
		return nil, ""
	}
	models := slices.Clone(c.Settings.Models)
	if c.Model != "" && !slices.Contains(models, c.Model) {
		models = append([]string{c.Model}, models...)
	}
	return models, c.Name
}

// projectDir is dir made absolute, or the current folder; it must exist.
func projectDir(dir string) (string, error) {
	if dir == "" {
		return os.Getwd()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("--cwd: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("--cwd %s: not a folder", dir)
	}
	return abs, nil
}

// writeAgentsTable is the table of agents, one row each (NAME, SOURCE,
// MODEL, DESCRIPTION) cut to tableWidth like `pixir workflows`, and below
// it the agent's profile on an indented line, wrapped at spaces so that a
// long write set is shown whole: as a column it ran every row to ~280
// characters.
func writeAgentsTable(w io.Writer, r agentsReport, project, home string) error {
	type row struct{ name, source, model, profile, description string }
	rows := make([]row, 0, len(r.Agents))
	nameW, sourceW, modelW := len("NAME"), len("SOURCE"), len("MODEL")
	for _, a := range r.Agents {
		model := a.Model
		if model == "" {
			model = "inherit"
		}
		if a.ModelReasoningEffort != "" {
			model += " (" + a.ModelReasoningEffort + ")"
		}
		rw := row{a.Name, shortPath(a.Source, project, home), model, a.Summary, summary(a.Description)}
		nameW = max(nameW, utf8.RuneCountInString(rw.name))
		sourceW = max(sourceW, utf8.RuneCountInString(rw.source))
		modelW = max(modelW, utf8.RuneCountInString(rw.model))
		rows = append(rows, rw)
	}
	var b strings.Builder
	writeRow(&b, padCell("NAME", nameW)+padCell("SOURCE", sourceW)+padCell("MODEL", modelW)+"DESCRIPTION")
	for _, rw := range rows {
		writeRow(&b, padCell(rw.name, nameW)+padCell(rw.source, sourceW)+padCell(rw.model, modelW)+rw.description)
		for _, l := range wrapWords("profile: "+rw.profile, tableWidth-2, "         ") {
			b.WriteString("  " + l + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapWords breaks text at spaces into lines of at most width runes (a word
// longer than that stands alone), every line after the first starting
// with indent.
func wrapWords(text string, width int, indent string) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(text) {
		switch {
		case cur == "":
			cur = word
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(word) <= width:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = indent + word
		}
	}
	return append(lines, cur)
}

// writeAgentProblems prints the warnings and errors after the table.
func writeAgentProblems(w io.Writer, r agentsReport) {
	for _, wa := range r.Warnings {
		fmt.Fprintf(w, "pixir agents: warning: %s\n", wa)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "pixir agents: error: %v\n", e)
	}
	files := map[string]bool{}
	for _, e := range r.Errors {
		files[e.File] = true
	}
	switch len(files) {
	case 0:
	case 1:
		fmt.Fprintln(w, "pixir agents: 1 broken agent file is left out until it is fixed")
	default:
		fmt.Fprintf(w, "pixir agents: %d broken agent files are left out until they are fixed\n", len(files))
	}
}

// shortPath shows a path inside the project relative to it, and one in the
// home folder as ~/…; others as they are.
func shortPath(path, project, home string) string {
	if path == agents.SourceBuiltin {
		return path
	}
	for _, base := range []struct{ dir, prefix string }{{project, ""}, {home, "~" + string(filepath.Separator)}} {
		if base.dir == "" {
			continue
		}
		if rel, err := filepath.Rel(base.dir, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return base.prefix + rel
		}
	}
	return path
}
