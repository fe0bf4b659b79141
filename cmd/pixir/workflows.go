package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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

// runWorkflows lists the workflow templates of a project: the project's,
// its skills', the user's and the built-ins, each with its parameters and
// source, then the warnings and errors. It exits 1 when a template file is
// broken, after printing everything else.
func runWorkflows(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pixir workflows", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, "Usage: pixir workflows [--json] [--cwd DIR]\n\nLists the workflow templates (built in, the project's, the user's, skills') with their parameters.\n")
	asJSON := fs.Bool("json", false, `print {"templates":[…],"warnings":[…],"errors":[…]}`)
	cwd := fs.String("cwd", "", "the project folder whose .pixir/workflows and skills are read (default: the current folder)")
	if _, code, done := parseFlags(fs, args, false, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pixir workflows: unexpected argument %q; usage: pixir workflows [--json] [--cwd DIR]\n", fs.Arg(0))
		return exitUsage
	}
	project, err := projectDir(*cwd)
	if err != nil {
		fmt.Fprintln(stderr, "pixir workflows:", err)
		return exitUsage
	}
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintf(stderr, "pixir workflows: warning: %v; ~/.pixir/workflows and the user's skills are not read\n", err)
		home = ""
	}
	reg, loadErr := workflows.LoadTemplates(project, home)
	report := templatesReport{Templates: []templateEntry{}, Warnings: reg.Warnings(), Errors: templateErrors(loadErr)}
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
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	} else {
		err = writeTemplates(stdout, report)
		for _, w := range report.Warnings {
			fmt.Fprintf(stderr, "pixir workflows: warning: %s\n", w)
		}
		for _, e := range report.Errors {
			fmt.Fprintf(stderr, "pixir workflows: error: %v\n", e)
		}
		if n := len(report.Errors); n > 0 {
			fmt.Fprintf(stderr, "pixir workflows: %d broken template %s left out until fixed\n", n, map[bool]string{true: "file is", false: "files are"}[n == 1])
		}
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

// templateErrors lists the problems in a LoadTemplates error, in order.
func templateErrors(err error) []*workflows.TemplateFileError {
	out := []*workflows.TemplateFileError{}
	if err == nil {
		return out
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		if fe, ok := errors.AsType[*workflows.TemplateFileError](e); ok {
			out = append(out, fe)
		} else {
			out = append(out, &workflows.TemplateFileError{Message: e.Error()})
		}
	}
	return out
}
