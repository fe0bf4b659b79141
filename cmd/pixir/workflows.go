package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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

// writeTemplates is the table of templates, each followed by its
// parameters, one a line.
func writeTemplates(w io.Writer, r templatesReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tDESCRIPTION")
	for _, t := range r.Templates {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Source, summary(t.Description))
		for _, p := range t.Params {
			typ := p.Type
			if typ == "" {
				typ = "any"
			}
			line := "  --set " + p.Name + "=" + typ
			switch {
			case p.Required:
				line += " (required)"
			default:
				line += " (default " + string(p.Default) + ")"
			}
			fmt.Fprintf(tw, "%s\t\t%s\n", line, summary(p.Description))
		}
	}
	return tw.Flush()
}
