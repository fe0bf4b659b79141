package workflows

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pixir-go/pixir/tools"
)

// Reuse is what a run may take over from an earlier run of the same
// session (resume_from): the outcomes of the earlier run's step runs, by
// run label, and the loop iterations it finished.
type Reuse struct {
	From string
	// Runs are the step runs that ran (or were reused) there.
	Runs map[string]StepOutcome
	// Finished are its finished iterations (iterationKey).
	Finished map[string]bool
	// Steps are its steps, by id, as it ran them.
	Steps map[string]*Step
	// Merging are the runs whose merge began and was never decided (the
	// process ended mid-merge): their Runs outcome is the one before the
	// merge, and reusing them merges their child again.
	Merging map[string]bool
	// Before is the record of the user's work when that run started
	// (its workflow_started's): nil when it made none.
	Before *BeforeRun
	// Started says that run started (or reused) a step: only then can
	// its work be in the workspace, so that a resume of it takes its
	// Before, or, finding none, commits nothing of the user's; a resume of
	// a run that started nothing records the user's work again
	// (recordBefore).
	Started bool
	// undecided are the shared writers' runs with a start and no
	// decision (undecidedWriters).
	undecided []undecidedRun
}

// Reusable finds, in a session's workflow events, the run w resumes from.
// Which of its runs are reused is decided run by run as w runs
// (runner.reusable); an unknown run is an invalid_args failure.
func Reusable(events []WorkflowEvent, w *Workflow) (*Reuse, error) {
	runs := fold(events)
	var prior *foldedRun
	var known []string
	for i := range runs {
		known = append(known, runs[i].id)
		if runs[i].id == w.ResumeFrom {
			prior = &runs[i]
		}
	}
	if prior == nil {
		p := Problem{Code: "unknown_workflow", Field: "resume_from", Value: w.ResumeFrom,
			Message: fmt.Sprintf("resume_from: there is no workflow %q in this session's Log; earlier runs: %s", w.ResumeFrom, orNone(known))}
		return nil, &tools.Failure{Kind: tools.ErrInvalidArgs, Message: p.Message, Details: ValidationDetails{Problems: []Problem{p}}}
	}
	r := &Reuse{From: prior.id, Runs: map[string]StepOutcome{}, Finished: prior.iterDone, Steps: prior.stepsByID, Merging: map[string]bool{}, Before: prior.before}
	r.Started = startedDown(prior, runs)
	for _, sr := range prior.runs {
		switch o := sr.outcome; {
		case o != nil && (o.AgentID != "" || o.ReusedFrom != ""):
			r.Runs[sr.label] = *o
		case o == nil && sr.merging != nil && sr.merging.AgentID != "":
			r.Runs[sr.label] = *sr.merging
			r.Merging[sr.label] = true
		case o == nil && sr.merging == nil && sr.held == nil && sr.skipped == nil && sr.agent != "":
			if st := prior.stepsByID[sr.stepID]; st != nil && st.WorkspaceMode == Shared && st.PermissionMode == Writer {
				r.undecided = append(r.undecided, undecidedRun{label: sr.label, stepID: sr.stepID, agent: sr.agent})
			}
		}
	}
	return r, nil
}

// startedDown reports whether run, or a run its record of the user's work
// was carried from, started a step: a resume cancelled before its first
// step carries its prior's record, and its own resume must carry it on
// too, or the prior's work in the workspace is taken for the user's
// (review33c #2). A chain is followed only through runs that carried a
// record (a run that made its own resumed one that started nothing).
func startedDown(run *foldedRun, runs []foldedRun) bool {
	for seen := 0; run != nil && seen <= len(runs); seen++ {
		for _, sr := range run.runs {
			if sr.agent != "" || (sr.outcome != nil && (sr.outcome.AgentID != "" || sr.outcome.ReusedFrom != "")) {
				return true
			}
		}
		if run.before == nil || run.w == nil || run.w.ResumeFrom == "" {
			return false
		}
		from := run.w.ResumeFrom
		run = nil
		for i := range runs {
			if runs[i].id == from {
				run = &runs[i]
			}
		}
	}
	return false
}

// undecidedRun is a shared writer's run of the run resumed from that
// started and has no decision: its process ended first.
type undecidedRun struct{ label, stepID, agent string }

// undecidedWriters refuses a resume that would run again a shared writer
// whose child completed (ends: the children whose end the Log records) while
// its checkpoint was never decided (the process ended in between): its
// changes are in the workspace already, and a run on top of them would
// make them twice. A step w changes (its task, say) is a new step, run
// as the user asks; a child with no end in the Log runs again as after
// any kill (what it did is its own retry's to see).
func (r *Reuse) undecidedWriters(w *Workflow, ends map[string]tools.SubagentStatus) error {
	var problems []Problem
	for _, u := range r.undecided {
		if ends[u.agent] != tools.SubagentCompleted {
			// Not ended, or ended without its work done (failed, timed
			// out, cancelled): its decision would not have been ready,
			// and a resumed run retries it, as any step not ready.
			continue
		}
		var now *Step
		for i := range w.Steps {
			if w.Steps[i].ID == u.stepID {
				now = &w.Steps[i]
			}
		}
		if now == nil || !sameStep(now, r.Steps[u.stepID]) {
			continue
		}
		problems = append(problems, Problem{Code: "undecided_shared_writer", Field: "resume_from", Value: u.label, Message: fmt.Sprintf(
			"step run %s of %s: its shared writer %s completed and the process ended before its checkpoint was decided; "+
				"what it changed is in the workspace already, and running it again would apply it twice", u.label, r.From, u.agent)})
	}
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Message
	}
	return &tools.Failure{Kind: tools.ErrConflict, Message: "resume_from would run again work that is done: " + strings.Join(msgs, "; ") +
		". See what it did (pixir inspect shows the step's subagent, its summary and files), then run the workflow without resume_from, " +
		"or with that step changed (its task) or left out, so that whatever runs again is what you chose.",
		Details: ValidationDetails{Problems: problems}}
}

// reusable decides whether a run takes its checkpoint from the run resumed
// from, and returns it. It does when that run has the same run (label) of
// the same step (task, agent, posture, sets, dependencies, conditions,
// output_schema; a new timeout does not matter), nothing it builds on was
// run again (its inputs and the earlier iterations of its loops are
// reused too: the same checkpoints went in), and its checkpoint was ready,
// or it is history: a run of a loop iteration that earlier run finished,
// whose failure that loop already answered. So a resumed loop goes on
// where it stopped, and no iteration that ended is run again.
func (r *runner) reusable(run *stepRun) (StepOutcome, bool) {
	if r.prior == nil || run.fresh {
		return StepOutcome{}, false
	}
	p, ok := r.prior.Runs[run.label]
	st := &r.w.Steps[run.step]
	if !ok || r.prior.Steps[st.ID] == nil || !sameStep(st, r.prior.Steps[st.ID]) {
		return StepOutcome{}, false
	}
	if p.CheckpointStatus != CheckpointReady {
		f := run.frame
		if f.loop == nil || !r.prior.Finished[iterationKey(f.loop.label, f.iter)] {
			return StepOutcome{}, false
		}
	}
	out := reusedOutcome(p, r.prior.From)
	if seen, ok := r.conditions[run.label]; ok {
		out.Conditions = seen
	}
	return out, true
}

// sameStep reports whether two normalised steps do the same work. They
// are compared as canonical JSON (object keys sorted, numbers in one
// form): an output_schema is kept as it was written, and the same schema
// from a model (its keys in the order it wrote them) and from a file
// (decoded, keys sorted) is the same step.
func sameStep(a, b *Step) bool {
	x, y := *a, *b
	x.TimeoutMS, y.TimeoutMS = 0, 0
	ja, err1 := json.Marshal(x)
	jb, err2 := json.Marshal(y)
	return err1 == nil && err2 == nil && canonicalRaw(ja) == canonicalRaw(jb)
}

// reusedOutcome is a prior outcome as this run records it.
func reusedOutcome(prior StepOutcome, from string) StepOutcome {
	out := prior
	out.Wave, out.ReusedFrom, out.Reason = 0, from, ""
	if !strings.HasPrefix(out.Summary, "reused") {
		out.Summary = "reused from " + from + ": " + out.Summary
	}
	return out
}
