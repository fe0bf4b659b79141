package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pixir-go/pixir/tools"
)

// Reuse is what a run takes over from an earlier run of the same session
// (resume_from): the checkpoint_ready outcomes of the steps it need not
// run again.
type Reuse struct {
	From  string
	Steps map[string]StepOutcome
}

// Reusable finds, in a session's workflow events, the run w resumes from
// and the steps of w that can reuse its checkpoints: a step that was
// checkpoint_ready there, is the same step here (task, agent, posture,
// sets, dependencies, output_schema; a new timeout does not matter), and
// whose dependencies are all reused too, since a dependent built on a
// checkpoint that is produced again must run again. An unknown run is an
// invalid_args failure.
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
	before := map[string]int{}
	for i := range prior.w.Steps {
		before[prior.w.Steps[i].ID] = i
	}
	candidate := make([]bool, len(w.Steps))
	for i := range w.Steps {
		j, ok := before[w.Steps[i].ID]
		candidate[i] = ok && prior.steps[j] != nil && prior.steps[j].CheckpointStatus == CheckpointReady &&
			sameStep(&w.Steps[i], &prior.w.Steps[j])
	}
	index := map[string]int{}
	for i := range w.Steps {
		index[w.Steps[i].ID] = i
	}
	// Drop candidates whose dependencies are not all reused, until none
	// changes: at most one pass per step.
	for changed := true; changed; {
		changed = false
		for i := range w.Steps {
			if !candidate[i] {
				continue
			}
			for _, d := range w.Steps[i].DependsOn {
				if !candidate[index[d]] {
					candidate[i], changed = false, true
					break
				}
			}
		}
	}
	r := &Reuse{From: prior.id, Steps: map[string]StepOutcome{}}
	for i := range w.Steps {
		if candidate[i] {
			r.Steps[w.Steps[i].ID] = *prior.steps[before[w.Steps[i].ID]]
		}
	}
	return r, nil
}

// sameStep reports whether two normalised steps do the same work.
func sameStep(a, b *Step) bool {
	x, y := *a, *b
	x.TimeoutMS, y.TimeoutMS = 0, 0
	ja, err1 := json.Marshal(x)
	jb, err2 := json.Marshal(y)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
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
