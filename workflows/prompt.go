package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// childPrompt is a run's whole assignment: its task, the checkpoint
// bundles of its dependencies (a child sees nothing else of the parent's
// conversation), where it stands in its loops and fan-out, what the
// previous iteration of its loops found, and how to hand over its own
// checkpoint.
func (r *runner) childPrompt(run *stepRun, deps []*StepOutcome, inherit []Inherited) string {
	w, st := r.w, run.spec
	closing := r.closing(run)
	var b strings.Builder
	// Sized once for the common prompt (the task, who it is, a bundle a
	// dependency, the closing) instead of grown a few times per run.
	b.Grow(len(st.Task) + len(run.label) + len(w.Name) + 256 + 128*len(deps) + len(closing))
	b.WriteString(strings.TrimSpace(st.Task))
	b.WriteString("\n\n---\nYou are step ")
	b.WriteString(strconv.Quote(run.label))
	b.WriteString(" of a workflow")
	if w.Name != "" {
		b.WriteString(" (")
		b.WriteString(w.Name)
		b.WriteByte(')')
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
	if run.item >= 0 {
		item := canonical(run.itemVal, false)
		if r := []rune(item); len(r) > 4000 {
			item = string(r[:3999]) + "…"
		}
		fmt.Fprintf(&b, "You are instance %d of %d of step %q, one per item of %s %s; your item: %s\n",
			run.item+1, run.items, w.Steps[run.step].ID, w.Steps[run.step].ForEach.Step, w.Steps[run.step].ForEach.Path, item)
	}
	for f := run.frame; f.loop != nil; f = f.loop.parent {
		def := f.loop.def(w)
		fmt.Fprintf(&b, "This is iteration %d of at most %d of loop %q.\n", f.iter, def.MaxIterations, def.ID)
	}
	var inherited map[string]bool
	if len(inherit) > 0 {
		inherited = make(map[string]bool, len(inherit))
		b.WriteString("\nYour workspace already holds what these earlier steps changed in their own snapshots:\n")
		for _, in := range inherit {
			inherited[in.StepID] = true
			fmt.Fprintf(&b, "- %s: added %s; changed %s; deleted %s\n", in.StepID,
				orNone(in.Changes.Added), orNone(in.Changes.Changed), orNone(in.Changes.Deleted))
		}
	}
	if len(deps) > 0 {
		allReady := true
		for _, d := range deps {
			allReady = allReady && d.CheckpointStatus == CheckpointReady
		}
		if allReady {
			b.WriteString("\nCheckpoints of the steps you depend on (they are checkpoint_ready; build on them):\n")
		} else {
			b.WriteString("\nCheckpoints of the steps you depend on (each with its status: you run because your condition tests it):\n")
		}
		for _, d := range deps {
			writeBundle(&b, d, inherited[runName(d)])
		}
	}
	for _, lr := range r.proceededLoops(run) {
		o := lr.outcome
		fmt.Fprintf(&b, "\nLoop %s ended %s without meeting its until; you proceed on its last iteration. Its unresolved blockers (known limitations to carry):\n", o.Run, LoopStateText(o))
		for _, bl := range o.Blockers {
			fmt.Fprintf(&b, "- %s\n", bl)
		}
	}
	for f := run.frame; f.loop != nil; f = f.loop.parent {
		if f.prev == nil {
			continue
		}
		var prior []*StepOutcome
		var collect func(p *frame)
		collect = func(p *frame) {
			for _, x := range p.runs {
				if o := x.outcome; o != nil && (o.AgentID != "" || o.ReusedFrom != "") {
					prior = append(prior, o)
				}
			}
			for _, in := range p.inner {
				collect(in)
			}
		}
		collect(f.prev)
		if len(prior) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nThe previous iteration (%d) of loop %q ended with these checkpoints; what you do now should answer them:\n", f.prev.iter, f.loop.def(w).ID)
		for _, o := range prior {
			writeBundle(&b, o, inherited[runName(o)])
		}
	}
	b.WriteString(closing)
	return b.String()
}

// reportClosing is how every step's prompt closes: how to report.
const reportClosing = "\nWhen you are done, call report_checkpoint with status checkpoint_ready, partial, failed or needs_orchestrator, " +
	"a summary, what you produced, how you verified it and its known limitations; then end your turn with a short summary. " +
	"If you cannot call it, end your final message with a line `checkpoint_status: <status>`.\n"

// closing is the end of a run's prompt, which depends on its step alone:
// how to report, the output schema the payload must match, what Pixir
// verifies. Made once per step (a fan-out instance's spec, its bindings
// replaced, gets its own each time).
func (r *runner) closing(run *stepRun) string {
	s := run.step
	if run.spec != &r.w.Steps[s] {
		return closingOf(run.spec)
	}
	if r.closings == nil {
		r.closings = make([]string, len(r.w.Steps))
	}
	if r.closings[s] == "" {
		r.closings[s] = closingOf(run.spec)
	}
	return r.closings[s]
}

func closingOf(st *Step) string {
	if len(st.OutputSchema) == 0 && len(st.Verify) == 0 {
		return reportClosing // one string for all such steps, not a copy each
	}
	var b strings.Builder
	b.WriteString(reportClosing)
	if len(st.OutputSchema) > 0 {
		var pretty bytes.Buffer
		if json.Indent(&pretty, st.OutputSchema, "", "  ") != nil {
			pretty.Write(st.OutputSchema)
		}
		fmt.Fprintf(&b, "\nYour checkpoint_ready report must carry a payload that matches this JSON Schema:\n```json\n%s\n```\n", pretty.String())
	}
	b.WriteString(verifyPrompt(st))
	return b.String()
}

// verifyPrompt tells a step's child what Pixir checks when it reports
// checkpoint_ready ("" without verify entries).
func verifyPrompt(st *Step) string {
	if len(st.Verify) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nWhen you report checkpoint_ready, Pixir itself runs these commands in your workspace, and refuses the report (with their output) unless each exits as required:\n")
	for _, c := range st.Verify {
		if c.Exists != "" {
			if c.ForEach != "" {
				fmt.Fprintf(&b, "- for each item of your payload's %s, `%s` must exist (Pixir checks it)", c.ForEach, c.Exists)
			} else {
				fmt.Fprintf(&b, "- `%s` must exist (Pixir checks it)", c.Exists)
			}
			if c.Means != "" {
				b.WriteString(": " + c.Means)
			}
			b.WriteString(onlyWhen(c) + "\n")
			continue
		}
		want := "exit 0 (pass)"
		if c.Expect == VerifyFail {
			want = "exit non-zero (fail)"
		}
		fmt.Fprintf(&b, "- `%s` must %s", c.Run, want)
		if c.Means != "" {
			b.WriteString(": " + c.Means)
		}
		b.WriteString(onlyWhen(c) + "\n")
	}
	return b.String()
}

// onlyWhen says when a verify entry applies, for the child's prompt
// ("" when always).
func onlyWhen(c Verify) string {
	if len(c.When) == 0 {
		return ""
	}
	return " (only when your payload has " + conditionsText(c.When) + ")"
}

// proceededLoops are the loops a run's inputs come out of that ended
// unresolved and let their dependents proceed.
func (r *runner) proceededLoops(run *stepRun) []*loopRun {
	if !slices.ContainsFunc(run.inputs, func(in *stepRun) bool { return in.frame.loop != nil }) {
		return nil // no input comes out of a loop (most runs): no maps to make
	}
	holding := map[*loopRun]bool{}
	for f := run.frame; f.loop != nil; f = f.loop.parent {
		holding[f.loop] = true
	}
	var out []*loopRun
	seen := map[*loopRun]bool{}
	for _, in := range run.inputs {
		for f := in.frame; f.loop != nil; f = f.loop.parent {
			lr := f.loop
			if holding[lr] || seen[lr] || lr.outcome == nil || !lr.outcome.Unresolved() {
				continue
			}
			seen[lr] = true
			out = append(out, lr)
		}
	}
	return out
}

// writeBundle renders one dependency's checkpoint for a dependent's prompt.
func writeBundle(b *strings.Builder, d *StepOutcome, inherited bool) {
	for _, s := range [...]string{"\n### ", runName(d), " (", string(d.CheckpointStatus), ", subagent ", d.AgentID, ")\n"} {
		b.WriteString(s)
	}
	c := d.Checkpoint
	if c == nil {
		b.WriteString(d.Summary)
		b.WriteByte('\n')
		return
	}
	b.WriteString("Summary: ")
	b.WriteString(strings.TrimSpace(c.Summary))
	b.WriteByte('\n')
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
