package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/pixir-go/pixir/workflows"
)

// templateEntry is one template in `pixir workflows --json`.
type templateEntry struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Params      []workflows.Param `json:"params"`
	// Usage is the command that runs it, required parameters filled with
	// placeholders.
	Usage  string `json:"usage"`
	Source string `json:"source"`
}

// templatesReport is the whole of `pixir workflows --json`.
type templatesReport struct {
	Templates []templateEntry                `json:"templates"`
	Warnings  []workflows.TemplateWarning    `json:"warnings"`
	Errors    []*workflows.TemplateFileError `json:"errors"`
}

// workflowsCommand is `pixir workflows`.
var workflowsCommand = catalogueCommand{
	name:     "workflows",
	about:    "Lists the workflow templates (built in, the project's, the user's, skills') with their parameters.",
	jsonHelp: `print {"templates":[…],"warnings":[…],"errors":[…]}`,
	cwdHelp:  "the project folder whose .pixir/workflows and skills are read (default: the current folder)",
	noHome:   "~/.pixir/workflows and the user's skills are not read",
}

// runWorkflows lists the workflow templates of a project: the project's,
// its skills', the user's and the built-ins, each with its parameters and
// source, then the warnings and errors. It exits 1 when a template file is
// broken, after printing everything else.
func runWorkflows(args []string, stdout, stderr io.Writer) int {
	run, code, done := workflowsCommand.parse(args, stdout, stderr)
	if done {
		return code
	}
	project, home := run.project, run.home
	reg, loadErr := workflows.LoadTemplates(project, home)
	report := templatesReport{Templates: []templateEntry{}, Warnings: reg.Warnings(), Errors: fileProblems(loadErr, func(m string) *workflows.TemplateFileError { return &workflows.TemplateFileError{Message: m} })}
	if report.Warnings == nil {
		report.Warnings = []workflows.TemplateWarning{}
	}
	for _, t := range reg.All() {
		params := t.Params
		if params == nil {
			params = []workflows.Param{}
		}
		report.Templates = append(report.Templates, templateEntry{Name: t.Name, Description: t.Description, Params: params,
			Usage: templateUsage(t), Source: shortPath(t.Source, project, home)})
	}
	return workflowsCommand.finish(run, report, func() error {
		err := writeTemplates(stdout, report)
		for _, w := range report.Warnings {
			fmt.Fprintf(stderr, "pixir workflows: warning: %s\n", w)
		}
		for _, e := range report.Errors {
			fmt.Fprintf(stderr, "pixir workflows: error: %v\n", e)
		}
		if n := len(report.Errors); n > 0 {
			fmt.Fprintf(stderr, "pixir workflows: %d broken template %s left out until fixed\n", n, map[bool]string{true: "file is", false: "files are"}[n == 1])
		}
		return err
	}, loadErr, stdout, stderr)
}

// templateUsage is the command line that runs t.
func templateUsage(t *workflows.Template) string {
	parts := []string{"pixir run --workflow " + t.Name}
	for _, p := range t.Params {
		if p.Required {
			parts = append(parts, "--set "+p.Name+"="+strings.ToUpper(p.Name))
		}
	}
	return strings.Join(parts, " ")
}

// tableWidth is the width `pixir workflows` keeps its lines within: a
// terminal's default. A description that does not fit is cut with "…";
// --json holds it whole.
const tableWidth = 80

// writeTemplates is the table of templates, each followed by its
// parameters: a parameter is an indented line (--set name=type, required
// or its default) and its description a line indented further below it.
// The NAME column is as wide as the longest name, and every line is cut to
// tableWidth.
func writeTemplates(w io.Writer, r templatesReport) error {
	nameW, sourceW := len("NAME"), len("SOURCE")
	for _, t := range r.Templates {
		nameW = max(nameW, utf8.RuneCountInString(t.Name))
		sourceW = max(sourceW, utf8.RuneCountInString(t.Source))
	}
	var b strings.Builder
	writeRow(&b, padCell("NAME", nameW)+padCell("SOURCE", sourceW)+"DESCRIPTION")
	for _, t := range r.Templates {
		writeRow(&b, padCell(t.Name, nameW)+padCell(t.Source, sourceW)+summary(t.Description))
		for _, p := range t.Params {
			typ := p.Type
			if typ == "" {
				typ = "any"
			}
			set := "  --set " + p.Name + "=" + typ
			switch {
			case p.Required:
				set += " (required)"
			default:
				set += " (default " + string(p.Default) + ")"
			}
			writeRow(&b, set)
			if d := summary(p.Description); d != "" {
				writeRow(&b, "      "+d)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// padCell is s and the spaces that bring it to width, then the two that
// part it from the next column.
func padCell(s string, width int) string {
	return s + strings.Repeat(" ", width-utf8.RuneCountInString(s)+2)
}

// writeRow writes a table's line to b, its trailing spaces dropped and
// cut to tableWidth.
func writeRow(b *strings.Builder, s string) {
	b.WriteString(fitLine(strings.TrimRight(s, " "), tableWidth) + "\n")
}

// fitLine cuts line to width runes, its last one "…" when cut.
func fitLine(line string, width int) string {
	if utf8.RuneCountInString(line) <= width {
		return line
	}
	return strings.TrimRight(string([]rune(line)[:width-1]), " ") + "…"
}
