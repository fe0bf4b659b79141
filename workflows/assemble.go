package workflows

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/tools"
)

// assemble builds a run's Outcome from its steps' outcomes, in
// declaration order. It is a pure function of its arguments, so the
// Outcome rebuilt from the Log (Rebuild) equals the one Run returned.
func assemble(w *Workflow, id string, steps []StepOutcome, stoppedBy string, elapsedMS int64) Outcome {
	out := Outcome{
		Mode: "run", WorkflowID: id, Name: w.Name, StoppedBy: stoppedBy, Steps: steps, ElapsedMS: elapsedMS,
		Waves: [][]string{}, UsableCheckpoints: []string{}, PartialSteps: []string{}, FailedSteps: []string{},
		TimeoutSteps: []string{}, HeldSteps: []string{}, NeedsOrchestratorSteps: []string{},
		SeamObligations: []string{}, MergeConflictRisk: []MergeRisk{}, SafeNextActions: []NextAction{},
	}
	for i := range steps {
		s := &steps[i]
		if s.Wave > 0 {
			for len(out.Waves) < s.Wave {
				out.Waves = append(out.Waves, []string{})
			}
			out.Waves[s.Wave-1] = append(out.Waves[s.Wave-1], s.StepID)
		}
		switch s.CheckpointStatus {
		case CheckpointReady:
			out.UsableCheckpoints = append(out.UsableCheckpoints, s.StepID)
		case CheckpointPartial:
			out.PartialSteps = append(out.PartialSteps, s.StepID)
		case CheckpointFailed:
			out.FailedSteps = append(out.FailedSteps, s.StepID)
		case CheckpointHeld:
			out.HeldSteps = append(out.HeldSteps, s.StepID)
		case CheckpointNeedsOrchestrator:
			out.NeedsOrchestratorSteps = append(out.NeedsOrchestratorSteps, s.StepID)
			out.SeamObligations = append(out.SeamObligations, seamObligation(s))
		}
		if s.SubagentStatus == tools.SubagentTimedOut || s.Reason == StoppedTimeout {
			out.TimeoutSteps = append(out.TimeoutSteps, s.StepID)
		}
		if s.Usage != nil && s.ReusedFrom == "" {
			out.Usage = out.Usage.Add(*s.Usage)
		}
	}
	// The pairs at merge risk are counted, and the first named
	// (mergeRisks): a list of every pair grows with the square of the
	// writers. A count is bounded in time, so there is no error to meet.
	out.MergeConflictRisk, out.MergeConflictRiskCount, _ = mergeRisks(context.Background(), w.Steps, newOverlapCache(), maxListed)
	// Dispatch rounds are numbered across the run, and a round whose only
	// step failed to start still counts; keep no empty wave.
	out.Waves = slices.DeleteFunc(out.Waves, func(w []string) bool { return len(w) == 0 })
	out.Summary = Counts{
		Steps: len(steps), Waves: len(out.Waves), CheckpointReadySteps: len(out.UsableCheckpoints),
		PartialSteps: len(out.PartialSteps), FailedSteps: len(out.FailedSteps), HeldSteps: len(out.HeldSteps),
		NeedsOrchestratorSteps: len(out.NeedsOrchestratorSteps),
	}
	switch {
	case len(out.UsableCheckpoints) == len(steps):
		out.Status = StatusCompleted
	case len(out.UsableCheckpoints) > 0:
		out.Status = StatusPartial
	default:
		out.Status = StatusFailed
	}
	out.SafeNextActions = nextActions(&out)
	out.Output = Render(&out)
	return out
}

// seamObligation is what a needs_orchestrator step leaves the parent to
// settle.
func seamObligation(s *StepOutcome) string {
	text := s.Summary
	if c := s.Checkpoint; c != nil {
		text = c.Summary
		if len(c.KnownLimitations) > 0 {
			text += " (" + strings.Join(c.KnownLimitations, "; ") + ")"
		}
	}
	return s.StepID + ": " + strings.TrimSpace(text)
}

// nextActions are the safe moves after an outcome that is not completed.
func nextActions(o *Outcome) []NextAction {
	acts := []NextAction{}
	if o.Status == StatusCompleted {
		return acts
	}
	resume := map[string]string{"resume_from": o.WorkflowID}
	if len(o.FailedSteps) > 0 {
		acts = append(acts, NextAction{Action: "retry_failed_steps", StepIDs: o.FailedSteps, Args: resume,
			Reason: "call run_workflow again with the same steps and resume_from: the checkpoint_ready steps are reused, only these (and what waits for them) run again"})
	}
	if len(o.HeldSteps) > 0 {
		reason := "these never started; they run in a resume_from run once the steps they wait for (blocked_by) are checkpoint_ready"
		if o.StoppedBy == StoppedBudget {
			reason = "the budget was spent before these started: raise it (budget of run_workflow, or [budget] in config.toml), then call run_workflow again with resume_from to run only what is left"
		}
		acts = append(acts, NextAction{Action: "rerun_held_steps", StepIDs: o.HeldSteps, Args: resume, Reason: reason})
	}
	if ask := append(slices.Clone(o.NeedsOrchestratorSteps), o.PartialSteps...); len(ask) > 0 {
		acts = append(acts, NextAction{Action: "ask_user", StepIDs: ask,
			Reason: "these steps need a decision (needs_orchestrator) or produced only partial evidence; settle them before building on them"})
	}
	acts = append(acts, mergeActions(o.Steps)...)
	acts = append(acts, NextAction{Action: "abort",
		Reason: "stop here and report this partial outcome as it is; isolated writers' changes that were not merged stay in their snapshots"})
	return acts
}

// planEntry shows one step as an ACP plan entry.
func planEntry(st *Step, state stepState, out *StepOutcome) tools.PlanEntry {
	e := tools.PlanEntry{Content: st.ID + ": " + firstLine(st.Task), Priority: tools.PlanPriorityMedium, Status: tools.PlanPending}
	switch {
	case out != nil && out.CheckpointStatus == CheckpointHeld:
		e.Content += " — held (" + out.HeldReason + ")"
	case out != nil:
		e.Status = tools.PlanCompleted
		e.Content += " — " + string(out.CheckpointStatus)
		if out.CheckpointStatus != CheckpointReady && out.SubagentStatus != tools.SubagentCompleted {
			e.Content += " (" + string(out.SubagentStatus) + ")"
		}
	case state == stateRunning:
		e.Status = tools.PlanInProgress
	}
	return e
}

// firstLine is a task's first line, shortened for a title or a table.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(line); len(r) > 72 {
		line = string(r[:71]) + "…"
	}
	return line
}

// Render is an Outcome as a person reads it: a verdict line, one table row
// per step, and what to do next.
func Render(o *Outcome) string {
	var b strings.Builder
	c := o.Summary
	fmt.Fprintf(&b, "Workflow %s: %s", o.WorkflowID, strings.ToUpper(string(o.Status)))
	fmt.Fprintf(&b, " — %d of %d steps checkpoint_ready", c.CheckpointReadySteps, c.Steps)
	for _, part := range []struct {
		n    int
		what CheckpointStatus
	}{{c.PartialSteps, CheckpointPartial}, {c.NeedsOrchestratorSteps, CheckpointNeedsOrchestrator}, {c.FailedSteps, CheckpointFailed}, {c.HeldSteps, CheckpointHeld}} {
		if part.n > 0 {
			fmt.Fprintf(&b, ", %d %s", part.n, part.what)
		}
	}
	fmt.Fprintf(&b, " (%s)", seconds(o.ElapsedMS))
	if o.StoppedBy != "" {
		fmt.Fprintf(&b, "; stopped early: %s", o.StoppedBy)
	}
	if !o.Usage.IsZero() {
		fmt.Fprintf(&b, "\nUsage: %s", o.Usage)
	}
	merges := slices.ContainsFunc(o.Steps, func(s StepOutcome) bool { return s.Merge != nil })
	if merges {
		b.WriteString("\n\n| step | agent | wave | subagent | checkpoint | merge | time | tokens | summary |\n|---|---|---|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("\n\n| step | agent | wave | subagent | checkpoint | time | tokens | summary |\n|---|---|---|---|---|---|---|---|\n")
	}
	shown := tableRows(o.Steps)
	for k, s := range o.Steps {
		if !shown[k] {
			continue
		}
		wave := "–"
		if s.Wave > 0 {
			wave = fmt.Sprint(s.Wave)
		}
		summary := s.Summary
		if s.ReusedFrom != "" {
			wave = "reused"
		}
		if s.Error != nil && s.CheckpointStatus != CheckpointReady {
			summary = string(s.Error.Kind) + ": " + s.Error.Message
		}
		checkpoint := string(s.CheckpointStatus)
		if merges {
			checkpoint += " | " + mergeCell(s.Merge)
		}
		tokens := "–"
		if s.Usage != nil {
			tokens = budget.Count(s.Usage.Tokens())
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", s.StepID, s.Agent, wave, s.SubagentStatus,
			checkpoint, seconds(s.ElapsedMS), tokens, cell(summary))
	}
	if hidden := len(o.Steps) - len(shown); hidden > 0 {
		gap := ""
		if merges {
			gap = " |"
		}
		// The table shows the steps that are not checkpoint_ready first.
		if notReady := max(0, c.Steps-c.CheckpointReadySteps-maxTableRows); notReady == 0 {
			fmt.Fprintf(&b, "| … | | | | |%s | | | %d more checkpoint_ready steps: see steps |\n", gap, hidden)
		} else {
			fmt.Fprintf(&b, "| … | | | | |%s | | | %d more steps (%d of them not checkpoint_ready): see steps |\n", gap, hidden, notReady)
		}
	}
	if r := o.MergeConflictRiskCount; r.Pairs > 0 {
		fmt.Fprintf(&b, "\nMerge risk (%s): ", riskPairs(r))
		listed := o.MergeConflictRisk[:min(len(o.MergeConflictRisk), maxRenderedLines)]
		for i, m := range listed {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s write overlapping files (%s)", strings.Join(m.Steps, " and "), strings.Join(m.Patterns, " ~ "))
		}
		if more := r.Pairs - len(listed); more > 0 {
			fmt.Fprintf(&b, "; … and %s%d more pairs", atLeast(r.AtLeast), more)
		}
		b.WriteString("\n")
	}
	writeConflicts(&b, o.Steps)
	if len(o.SafeNextActions) > 0 {
		b.WriteString("\nNext:\n")
		for _, a := range o.SafeNextActions {
			fmt.Fprintf(&b, "- %s", a.Action)
			if len(a.StepIDs) > 0 {
				ids := a.StepIDs[:min(len(a.StepIDs), maxRenderedIDs)]
				fmt.Fprintf(&b, " [%s", strings.Join(ids, ", "))
				if more := len(a.StepIDs) - len(ids); more > 0 {
					fmt.Fprintf(&b, " … and %d more", more)
				}
				b.WriteString("]")
			}
			fmt.Fprintf(&b, ": %s\n", a.Reason)
		}
	}
	return b.String()
}

// tableRows picks the steps the table shows: every step when they fit,
// otherwise those that are not checkpoint_ready first, then ready ones.
func tableRows(steps []StepOutcome) map[int]bool { return tableRowsOf(steps, maxTableRows) }

// tableRowsOf picks up to limit steps: those that are not
// checkpoint_ready first, then ready ones, each in declaration order.
func tableRowsOf(steps []StepOutcome, limit int) map[int]bool {
	shown := map[int]bool{}
	for pass := range 2 {
		for k := range steps {
			if len(shown) == limit {
				return shown
			}
			if ready := steps[k].CheckpointStatus == CheckpointReady; ready == (pass == 1) {
				shown[k] = true
			}
		}
	}
	return shown
}

// cell makes text fit one table cell: one line, no pipes, bounded.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:119]) + "…"
	}
	return s
}

func seconds(ms int64) string { return fmt.Sprintf("%.1f s", float64(ms)/1000) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
