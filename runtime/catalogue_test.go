package runtime

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/prompt"
	"github.com/pixir-go/pixir/workflows"
)

func catalogueTemplate(t *testing.T, name, desc string) *workflows.Template {
	t.Helper()
	spec := map[string]any{"description": desc, "params": map[string]any{"issue": map[string]any{"type": "string"}},
		"steps": []any{map[string]any{"id": "a", "task": "do ${issue}"}}}
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	tpl, err := workflows.ParseTemplate(name, "test", raw)
	require.NoError(t, err)
	return tpl
}

func TestTheCatalogueNamesAgentsAndTemplates(t *testing.T) {
	builtins, err := workflows.LoadTemplates("", "")
	require.NoError(t, err)
	survey, ok := builtins.Get("survey")
	require.True(t, ok)
	text := catalogueText([]AgentSpec{
		{Name: "explorer", Description: "Reads.\nMore lines are left out.", ReadOnly: true},
		{Name: "make", Description: "Implements one task spec."},
	}, []*workflows.Template{catalogueTemplate(t, "review", "Review one issue."), survey})
	require.Equal(t, `Agents (spawn_agent's agent, or a workflow step's agent):
- explorer (read-only): Reads.
- make: Implements one task spec.

Workflow templates (run_workflow {"template": NAME, "args": {…}}; a ? marks a parameter with a default):
- review(issue: string): Review one issue.
- survey(question: string, report?: string): Two read-only explorers answer a question about the workspace; a writer puts the answer in a file.
`, text)
	require.Empty(t, catalogueText(nil, nil))
}

// A project with hundreds of agents and templates gets a catalogue of a
// bounded size that says how many it left out.
func TestTheCatalogueIsBounded(t *testing.T) {
	var agents []AgentSpec
	for i := range 500 {
		agents = append(agents, AgentSpec{Name: fmt.Sprintf("agent-%03d", i), Description: strings.Repeat("long ", 100)})
	}
	var templates []*workflows.Template
	for i := range 100 {
		templates = append(templates, catalogueTemplate(t, fmt.Sprintf("t%03d", i), strings.Repeat("wordy ", 100)))
	}
	text := catalogueText(agents, templates)
	require.Contains(t, text, "- … and 470 more agents (list_agents and `pixir agents` name them all)\n")
	require.Contains(t, text, "- … and 80 more templates (`pixir workflows` lists them all)\n")
	for line := range strings.SplitSeq(text, "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(line), maxCatalogueLine)
	}
	require.Less(t, len(text), prompt.MaxCatalogue)
}
