package runtime

import (
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/workflows"
)

// The catalogue a parent model reads in its system prompt: the agents it
// can spawn and the workflow templates it can run, one line each, so it
// chooses among them by name. It is bounded whatever the project holds:
// at most maxCatalogueAgents agents and maxCatalogueTemplates templates,
// each line cut to maxCatalogueLine runes, the rest counted: together
// under prompt.MaxCatalogue, which the prompt would cut at, so the
// templates are never crowded out by the agents.
const (
	maxCatalogueAgents    = 30
	maxCatalogueTemplates = 20
	maxCatalogueLine      = 150
)

// catalogue is the catalogue of the agents and templates of project.
func (r *Runtime) catalogue(project string) string {
	var agents []AgentSpec
	if r.cfg.Subagents.Agents != nil {
		if cat, err := r.cfg.Subagents.Agents(project); err == nil {
			for _, name := range cat.Names() {
				if a, ok := cat.Agent(name); ok {
					agents = append(agents, a)
				}
			}
		}
	}
	home, _ := os.UserHomeDir()
	// A broken template file is left out here; pixir workflows and a
	// run_workflow that names it say why.
	reg, _ := workflows.LoadTemplates(project, home)
	return catalogueText(agents, reg.All())
}

// catalogueText renders the catalogue.
func catalogueText(agents []AgentSpec, templates []*workflows.Template) string {
	var b strings.Builder
	if len(agents) > 0 {
		b.WriteString("Agents (spawn_agent's agent, or a workflow step's agent):\n")
		for i, a := range agents {
			if i == maxCatalogueAgents {
				fmt.Fprintf(&b, "- … and %s (list_agents and `pixir agents` name them all)\n", plural.Of(len(agents)-i, "more agent", "more agents"))
				break
			}
			name := a.Name
			if a.ReadOnly {
				name += " (read-only)"
			}
			b.WriteString(catalogueLine(name, a.Description))
		}
	}
	if len(templates) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(`Workflow templates (run_workflow {"template": NAME, "args": {…}}; a ? marks a parameter with a default):` + "\n")
		for i, t := range templates {
			if i == maxCatalogueTemplates {
				fmt.Fprintf(&b, "- … and %s (`pixir workflows` lists them all)\n", plural.Of(len(templates)-i, "more template", "more templates"))
				break
			}
			b.WriteString(catalogueLine(templateCall(t), t.Description))
		}
	}
	return b.String()
}

// templateCall is a template's name and typed parameters:
// review(issue: string, report?: string).
func templateCall(t *workflows.Template) string {
	parts := make([]string, len(t.Params))
	for i, p := range t.Params {
		parts[i] = p.Name
		if !p.Required {
			parts[i] += "?"
		}
		if p.Type != "" {
			parts[i] += ": " + p.Type
		}
	}
	return t.Name + "(" + strings.Join(parts, ", ") + ")"
}

// catalogueLine is "- name: the first line of desc", cut to
// maxCatalogueLine runes.
func catalogueLine(name, desc string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(desc), "\n")
	line = "- " + name + ": " + strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > maxCatalogueLine {
		line = string([]rune(line)[:maxCatalogueLine-1]) + "…"
	}
	return line + "\n"
}
