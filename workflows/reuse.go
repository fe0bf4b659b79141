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
	for _, sr := range prior.runs {
		switch o := sr.outcome; {
		case o != nil && (o.AgentID != "" || o.ReusedFrom != ""):
			r.Runs[sr.label] = *o
		case o == nil && sr.merging != nil && sr.merging.AgentID != "":
			r.Runs[sr.label] = *sr.merging
			r.Merging[sr.label] = true
		}
	}
	return r, nil
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
