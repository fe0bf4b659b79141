package workflows

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

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
		title := fmt.Sprintf("Workflow of %d steps", len(a.Steps))
		if a.Name != "" {
			title = "Workflow " + a.Name + fmt.Sprintf(" (%d steps)", len(a.Steps))
		}
		if a.DryRun || a.ValidateOnly {
			title = "Plan: " + title
		}
		return tools.Presentation{Title: title}
	},
	Run: runWorkflowTool,
})

func runWorkflowTool(ctx context.Context, env tools.Env, ports Ports, a Workflow, dryRun bool) tools.Result {
	p, err := Prepare(&a, ports)
	if err != nil {
		return tools.Failed(tools.AsFailure(err))
	}
	if dryRun || p.Workflow().DryRun {
		return tools.OK(p.DryRun())
	}
	out := p.Run(ctx, RunOptions{WorkflowID: NewWorkflowID(), ToolCallID: env.ToolCallID})
	if out.Status == StatusCompleted {
		return tools.OK(out)
	}
	// Partial work is not success: the call is not ok, yet it is no tool
	// error either. The outcome is the output, for the model to act on.
	return tools.Result{OK: false, Output: out}
}

// RenderPlan is a dry run as a person reads it.
func RenderPlan(p *DryRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Dry run: %d steps in %d waves (max_concurrency %d, %s); nothing was started.\n",
		len(p.Steps), len(p.Waves), p.MaxConcurrency, p.FailurePolicy)
	control := len(p.Loops) > 0
	for _, s := range p.Steps {
		control = control || s.When != "" || s.ForEach != "" || s.Join != ""
	}
	if control {
		fmt.Fprintf(&b, "At most %d step runs (every loop to its max_iterations, every fan-out to its max_items); the waves are those of the first iteration, each fan-out one run, every conditional step as if it ran.\n", p.MaxRuns)
	}
	for i, wave := range p.Waves {
		fmt.Fprintf(&b, "\nWave %d: %s", i+1, strings.Join(wave, ", "))
	}
	if !control {
		b.WriteString("\n\n| step | posture | workspace | depends on | writes | merge |\n|---|---|---|---|---|---|\n")
		for _, s := range p.Steps {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", s.ID, s.Posture, s.WorkspaceMode,
				orDash(s.DependsOn), orDash(s.WriteSet), orDashString(string(s.Merge)))
		}
	} else {
		b.WriteString("\n\n| step | posture | workspace | depends on | writes | merge | loop | runs if | fans out over | max runs |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range p.Steps {
			when := s.When
			if s.Join == JoinAny {
				when = strings.TrimSpace("join any " + when)
			}
			over := s.ForEach
			if over != "" {
				over += fmt.Sprintf(" (max %d)", s.MaxItems)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", s.ID, s.Posture, s.WorkspaceMode,
				orDash(s.DependsOn), orDash(s.WriteSet), orDashString(string(s.Merge)), orDashString(s.Loop), orDashString(cell(when)), orDashString(over), s.MaxRuns)
		}
	}
	if len(p.Loops) > 0 {
		b.WriteString("\nLoops:\n")
		for _, l := range p.Loops {
			fmt.Fprintf(&b, "- %s [%s]: at most %d iterations", l.ID, strings.Join(l.Steps, ", "), l.MaxIterations)
			if l.Within != "" {
				fmt.Fprintf(&b, ", within loop %s", l.Within)
			}
			fmt.Fprintf(&b, "; until %s", l.Until)
			if l.Converge != "" {
				fmt.Fprintf(&b, "; stops early when %s repeats", l.Converge)
			}
			fmt.Fprintf(&b, "; unresolved: %s\n", l.OnExhausted)
		}
	}
	if len(p.Serialized) > 0 {
		b.WriteString("\nSerialized:\n")
		for _, s := range p.Serialized {
			fmt.Fprintf(&b, "- wave %d: %s\n", s.Wave, s.Reason)
		}
	}
	if len(p.MergeRisks) > 0 {
		b.WriteString("\nMerge risks:\n")
		for _, m := range p.MergeRisks {
			fmt.Fprintf(&b, "- %s\n", m.Reason)
		}
	}
	return b.String()
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
