package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// childPrompt is a step's whole assignment: its task, the checkpoint
// bundles of its dependencies (a child sees nothing else of the parent's
// conversation), and how to hand over its own checkpoint.
func childPrompt(w *Workflow, st *Step, deps []*StepOutcome, inherit []Inherited) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(st.Task))
	fmt.Fprintf(&b, "\n\n---\nYou are step %q of a workflow", st.ID)
	if w.Name != "" {
		fmt.Fprintf(&b, " (%s)", w.Name)
	}
	if st.PermissionMode == ReadOnly {
		b.WriteString(". Your posture is read_only: read and report, do not change files.")
	} else {
		fmt.Fprintf(&b, ". You may write only: %s.", strings.Join(st.WriteSet, ", "))
		if st.WorkspaceMode == Isolated {
			b.WriteString(" You work on a snapshot of the workspace; list what you changed in your checkpoint.")
		}
	}
	b.WriteString("\n")
	inherited := map[string]bool{}
	if len(inherit) > 0 {
		b.WriteString("\nYour workspace already holds what these earlier steps changed in their own snapshots:\n")
		for _, in := range inherit {
			inherited[in.StepID] = true
			fmt.Fprintf(&b, "- %s: added %s; changed %s; deleted %s\n", in.StepID,
				orNone(in.Changes.Added), orNone(in.Changes.Changed), orNone(in.Changes.Deleted))
		}
	}
	if len(deps) > 0 {
		b.WriteString("\nCheckpoints of the steps you depend on (they are checkpoint_ready; build on them):\n")
		for _, d := range deps {
			writeBundle(&b, d, inherited[d.StepID])
		}
	}
	b.WriteString("\nWhen you are done, call report_checkpoint with status checkpoint_ready, partial, failed or needs_orchestrator, " +
		"a summary, what you produced, how you verified it and its known limitations; then end your turn with a short summary. " +
		"If you cannot call it, end your final message with a line `checkpoint_status: <status>`.\n")
	if len(st.OutputSchema) > 0 {
		var pretty bytes.Buffer
		if json.Indent(&pretty, st.OutputSchema, "", "  ") != nil {
			pretty.Write(st.OutputSchema)
		}
		fmt.Fprintf(&b, "\nYour checkpoint_ready report must carry a payload that matches this JSON Schema:\n```json\n%s\n```\n", pretty.String())
	}
	return b.String()
}

// writeBundle renders one dependency's checkpoint for a dependent's prompt.
func writeBundle(b *strings.Builder, d *StepOutcome, inherited bool) {
	fmt.Fprintf(b, "\n### %s (%s, subagent %s)\n", d.StepID, d.CheckpointStatus, d.AgentID)
	c := d.Checkpoint
	if c == nil {
		fmt.Fprintf(b, "%s\n", d.Summary)
		return
	}
	fmt.Fprintf(b, "Summary: %s\n", strings.TrimSpace(c.Summary))
	list := func(title string, xs []string) {
		if len(xs) == 0 {
			return
		}
		fmt.Fprintf(b, "%s:\n", title)
		for _, x := range xs {
			fmt.Fprintf(b, "- %s\n", x)
		}
	}
	list("Produced", c.Produced)
	list("Verification", c.Verification)
	list("Known limitations", c.KnownLimitations)
	if len(c.Payload) > 0 {
		fmt.Fprintf(b, "Payload: %s\n", c.Payload)
	}
	if ch := c.Changes; ch != nil && len(ch.Added)+len(ch.Changed)+len(ch.Deleted) > 0 {
		where := "they are in your workspace"
		if !inherited {
			where = "in its own snapshot, not in your workspace"
		}
		fmt.Fprintf(b, "Files it changed (%s): added %s; changed %s; deleted %s\n",
			where, orNone(ch.Added), orNone(ch.Changed), orNone(ch.Deleted))
	}
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
