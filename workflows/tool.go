package workflows

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/tools"
)

//go:embed run_workflow.md
var runWorkflowDescription string

// RunWorkflowName is the name of the run_workflow tool.
const RunWorkflowName = "run_workflow"

// RunWorkflowTool is run_workflow bound to the ports its calls run with:
// the runtime makes one for each call, bound to the calling session and
// tool call. It is a mutation (it starts Subagents): denied in read_only,
// asked in ask; its dry run is allowed everywhere. Its arguments are a
// Workflow, validated once (Prepare).
func RunWorkflowTool(ports Ports) tools.Tool { return runWorkflow(ports) }

var runWorkflow = tools.DefineWith(tools.SpecWith[Workflow, Ports]{
	Name:        RunWorkflowName,
	Description: runWorkflowDescription,
	Posture:     tools.PostureMutation,
	Kind:        tools.KindThink,
	Describe: func(a Workflow) tools.Presentation {
		title := "Workflow of " + plural.Of(len(a.Steps), "step", "steps")
		if a.Template != "" {
			title = "Workflow template " + a.Template
		} else if a.Name != "" {
			title = "Workflow " + a.Name + " (" + plural.Of(len(a.Steps), "step", "steps") + ")"
		}
		if a.DryRun || a.ValidateOnly {
			title = "Plan: " + title
		}
		return tools.Presentation{Title: title}
	},
	Run:     runWorkflowTool,
	Refused: refusedSpec,
})

// refusedSpec is every problem of a spec the schema refused, at once: what
// a spec file's check finds (DecodeAndCheck: unknown keys with the nearest
// known one, values of the wrong type, the graph's problems, unknown
// agents), and the schema's lines that say something it did not, each
// with its location. A template call is checked by its template once its
// schema problems are fixed.
func refusedSpec(ports Ports, raw json.RawMessage, schema []string) *tools.Failure {
	var problems []Problem
	var call struct {
		Template json.RawMessage `json:"template"`
	}
	if json.Unmarshal(raw, &call) == nil && call.Template == nil {
		_, found, err := specProblems(raw, ports.Agents, nil)
		if f := tools.AsFailure(err); err != nil && f.Kind != tools.ErrInvalidArgs {
			// The agents could not be checked (depth, shutdown): the
			// spec's own problems still are, and that failure is one
			// more, so the model does not fix the spec only to learn
			// then that nothing can be spawned here.
			_, found, _ = specProblems(raw, nil, nil)
			found = append(found, Problem{Code: "cannot_spawn", Message: f.Message})
		}
		problems = found
	}
	problems = append(problems, schemaProblems(raw, schema, problems)...)
	if len(problems) == 0 {
		return nil
	}
	return problemsFailure(inFileOrder(problems))
}

func runWorkflowTool(ctx context.Context, env tools.Env, ports Ports, a Workflow, dryRun bool) tools.Result {
	w, err := ResolveTemplate(&a, ports.Templates)
	if err != nil {
		return tools.Failed(tools.AsFailure(err))
	}
	p, err := Prepare(w, ports)
	if err != nil {
		return tools.Failed(tools.AsFailure(err))
	}
	if dryRun || p.Workflow().DryRun {
		plan, err := p.DryRun(ctx)
		if err != nil {
			return tools.Failed(tools.AsFailure(err))
		}
		return tools.OK(plan)
	}
	out := p.Run(ctx, RunOptions{WorkflowID: NewWorkflowID(), ToolCallID: env.ToolCallID})
	// The model, the Log and the editor get the outcome's lists bounded;
	// the Log keeps every step's outcome in its own event.
	if out.Status == StatusCompleted {
		return tools.OK(out.Bounded())
	}
	// Partial work is not success: the call is not ok, yet it is no tool
	// error either. The outcome is the output, for the model to act on.
	return tools.Result{OK: false, Output: out.Bounded()}
}

// writesOf is what a planned step may change: its write set, and its
// agent's when that narrows it (a file must match both).
func writesOf(s PlannedStep) string {
	if len(s.AgentWriteSet) == 0 {
		return orDash(s.WriteSet)
	}
	agent := s.Agent
	if agent == "" {
		agent = "default"
	}
	if len(s.WriteSet) == 0 {
		return "agent " + agent + ": " + strings.Join(s.AgentWriteSet, ", ")
	}
	return orDash(s.WriteSet) + " ∩ agent " + agent + ": " + strings.Join(s.AgentWriteSet, ", ")
}

// RenderPlan is a dry run as a person reads it, bounded whatever the size
// of the workflow: the first waves, steps, serialized steps and merge
// risks, each list saying how many more there are.
func RenderPlan(p *DryRun) string {
	var b strings.Builder
	sum := p.Summary
	fmt.Fprintf(&b, "Dry run: %s in %s (max_concurrency %d, %s); nothing was started.\n",
		plural.Of(sum.Steps, "step", "steps"), plural.Of(sum.Waves, "wave", "waves"), p.MaxConcurrency, p.FailurePolicy)
	if p.Incomplete != "" {
		fmt.Fprintf(&b, "Incomplete: %s.\n", p.Incomplete)
	}
	control := len(p.Loops) > 0
	for _, s := range p.Steps {
		control = control || s.When != "" || s.ForEach != "" || s.Join != ""
	}
	if control {
		fmt.Fprintf(&b, "At most %d step runs (every loop to its max_iterations, every fan-out to its max_items); the waves are dependency levels of the first iteration (a later one goes on from its last wave), each fan-out one run, every conditional step as if it ran.\n", p.MaxRuns)
	}
	shown := 0
	for i, wave := range p.Waves {
		if i == maxRenderedWaves {
			break
		}
		ids := wave[:min(len(wave), maxRenderedIDs)]
		fmt.Fprintf(&b, "\nWave %d: %s", i+1, strings.Join(ids, ", "))
		if more := len(wave) - len(ids); more > 0 {
			fmt.Fprintf(&b, " … and %d more", more)
		}
		shown++
	}
	if more := sum.Waves - shown; more > 0 {
		fmt.Fprintf(&b, "\n… and %s", plural.Of(more, "more wave", "more waves"))
	}
	rows := p.Steps[:min(len(p.Steps), maxTableRows)]
	if !control {
		b.WriteString("\n\n| step | posture | workspace | depends on | writes | merge |\n|---|---|---|---|---|---|\n")
		for _, s := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", s.ID, s.Posture, s.WorkspaceMode,
				cell(orDash(s.DependsOn)), cell(writesOf(s)), orDashString(string(s.Merge)))
		}
		if more := sum.Steps - len(rows); more > 0 {
			fmt.Fprintf(&b, "| … | | | | | %s |\n", plural.Of(more, "more step", "more steps"))
		}
	} else {
		b.WriteString("\n\n| step | posture | workspace | depends on | writes | merge | loop | runs if | fans out over | max runs |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range rows {
			when := s.When
			if s.Join == JoinAny {
				when = strings.TrimSpace("join any " + when)
			}
			over := s.ForEach
			if over != "" {
				over += fmt.Sprintf(" (max %d)", s.MaxItems)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", s.ID, s.Posture, s.WorkspaceMode,
				cell(orDash(s.DependsOn)), cell(writesOf(s)), orDashString(string(s.Merge)), orDashString(s.Loop), orDashString(cell(when)), orDashString(cell(over)), s.MaxRuns)
		}
		if more := sum.Steps - len(rows); more > 0 {
			fmt.Fprintf(&b, "| … | | | | | | | | | %s |\n", plural.Of(more, "more step", "more steps"))
		}
	}
	if len(p.Loops) > 0 {
		b.WriteString("\nLoops:\n")
		listed := p.Loops[:min(len(p.Loops), maxRenderedLines)]
		for _, l := range listed {
			fmt.Fprintf(&b, "- %s [%s]: at most %s", l.ID, cell(strings.Join(l.Steps, ", ")), plural.Of(l.MaxIterations, "iteration", "iterations"))
			if l.Within != "" {
				fmt.Fprintf(&b, ", within loop %s", l.Within)
			}
			fmt.Fprintf(&b, "; until %s", cell(l.Until))
			switch {
			case strings.Contains(l.Converge, ", "):
				fmt.Fprintf(&b, "; stops early when %s all repeat", l.Converge)
			case l.Converge != "":
				fmt.Fprintf(&b, "; stops early when %s repeats", l.Converge)
			}
			fmt.Fprintf(&b, "; unresolved: %s\n", l.OnExhausted)
		}
		if more := len(p.Loops) - len(listed); more > 0 {
			fmt.Fprintf(&b, "- … and %s\n", plural.Of(more, "more loop", "more loops"))
		}
	}
	var verify []string
	for _, s := range p.Steps {
		for _, v := range s.Verify {
			verify = append(verify, s.ID+": "+v)
		}
	}
	if len(verify) > 0 {
		b.WriteString("\nVerified by Pixir when a step reports checkpoint_ready:\n")
		listed := verify[:min(len(verify), maxRenderedLines)]
		for _, v := range listed {
			fmt.Fprintf(&b, "- %s\n", v)
		}
		if more := len(verify) - len(listed); more > 0 {
			fmt.Fprintf(&b, "- … and %d more\n", more)
		}
	}
	if sum.SerializedSteps > 0 {
		fmt.Fprintf(&b, "\nSerialized (%d %s held back; each keeps its wave and waits for another step or a slot):\n", sum.SerializedSteps, plural.Word(sum.SerializedSteps, "step", "steps"))
		listed := p.Serialized[:min(len(p.Serialized), maxRenderedLines)]
		for _, s := range listed {
			fmt.Fprintf(&b, "- %s: %s\n", s.order(), s.Reason)
		}
		if more := sum.SerializedSteps - len(listed); more > 0 {
			fmt.Fprintf(&b, "- … and %d more\n", more)
		}
	}
	if c := p.MergeRiskCount; c.Pairs > 0 {
		fmt.Fprintf(&b, "\nMerge risks (%s):\n", riskPairs(c))
		listed := p.MergeRisks[:min(len(p.MergeRisks), maxRenderedLines)]
		for _, m := range listed {
			fmt.Fprintf(&b, "- %s\n", m.Reason)
		}
		if more := c.Pairs - len(listed); more > 0 {
			fmt.Fprintf(&b, "- … and %s more pairs\n", atLeast(c.AtLeast)+fmt.Sprint(more))
		}
	}
	return b.String()
}

// order says what a held-back step waits for: "within wave 2, index runs
// after summary", naming the other step's wave when it is another.
func (s Serialization) order() string {
	switch {
	case s.With == "":
		return fmt.Sprintf("within wave %d, %s waits for a free slot", s.Wave, s.Step)
	case s.WithWave != s.Wave:
		return fmt.Sprintf("in wave %d, %s runs after %s (wave %d)", s.Wave, s.Step, s.With, s.WithWave)
	}
	return fmt.Sprintf("within wave %d, %s runs after %s", s.Wave, s.Step, s.With)
}

// riskPairs says how many pairs of writers are at merge risk.
func riskPairs(c RiskCount) string {
	return fmt.Sprintf("%s%d %s of writers", atLeast(c.AtLeast), c.Pairs, plural.Word(c.Pairs, "pair", "pairs"))
}

func atLeast(yes bool) string {
	if yes {
		return "at least "
	}
	return ""
}

func orDashString(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func orDash(xs []string) string {
	if len(xs) == 0 {
		return "–"
	}
	return strings.Join(xs, ", ")
}

// Tools are this package's tools, unbound, for catalogues and schemas:
// run_workflow, which the runtime offers every session (binding each call
// to its ports), and report_checkpoint, which only a step's child is
// offered (bound to its step by Run). Their calls fail: they have no ports
// and no step.
func Tools() []tools.Tool {
	return []tools.Tool{RunWorkflowTool(Ports{}), reportCheckpoint(nil)}
}
