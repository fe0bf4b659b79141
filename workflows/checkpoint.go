package workflows

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/tools"
)

//go:embed report_checkpoint.md
var reportCheckpointDescription string

// ReportCheckpointArgs are the arguments of report_checkpoint, the tool a
// workflow step's child calls to hand over its Checkpoint Bundle.
type ReportCheckpointArgs struct {
	Status           CheckpointStatus `json:"status" jsonschema:"enum=checkpoint_ready,enum=partial,enum=failed,enum=needs_orchestrator" jsonschema_description:"checkpoint_ready: dependents may build on your result; partial: useful but not enough to build on; failed: nothing usable; needs_orchestrator: you found an ambiguity or conflict the parent must decide."`
	Summary          string           `json:"summary" jsonschema:"minLength=1,maxLength=8000" jsonschema_description:"What you did and found, in a few sentences a dependent step can act on."`
	Produced         []string         `json:"produced,omitempty" jsonschema:"maxItems=50,maxLength=2000" jsonschema_description:"The contract or artifacts you produced: files, interfaces, decisions a dependent may rely on."`
	Verification     []string         `json:"verification,omitempty" jsonschema:"maxItems=50,maxLength=2000" jsonschema_description:"Evidence: the checks you ran (tests, builds, reads) and what they showed."`
	KnownLimitations []string         `json:"known_limitations,omitempty" jsonschema:"maxItems=50,maxLength=2000" jsonschema_description:"What is missing, unverified or risky."`
	DependentSafe    *bool            `json:"dependent_safe,omitempty" jsonschema_description:"Whether dependents may consume this result. Default: true exactly when status is checkpoint_ready; a contradiction is an error."`
	Payload          map[string]any   `json:"payload,omitempty" jsonschema_description:"The typed result. Required with checkpoint_ready when your task gives an output schema; it must match it."`
}

// ReportCheckpointOutput is what report_checkpoint answers.
type ReportCheckpointOutput struct {
	Recorded bool             `json:"recorded"`
	Status   CheckpointStatus `json:"status"`
	Message  string           `json:"message"`
}

// reportSlot is where one step's child leaves its checkpoint report.
type reportSlot struct {
	stepID string
	schema *tools.Schema // nil: the step has no output_schema
	verify []Verify      // run for a checkpoint_ready report (verify.go)

	mu       sync.Mutex
	report   *ReportCheckpointArgs // the last accepted report
	payload  json.RawMessage
	rejected []string // the problems of the last rejected payload
}

// reportCheckpoint is report_checkpoint bound to one step's slot: Run
// offers each step's child its own, all sharing one definition.
var reportCheckpoint = tools.DefineWith(tools.SpecWith[ReportCheckpointArgs, *reportSlot]{
	Name:        "report_checkpoint",
	Description: reportCheckpointDescription,
	// It changes nothing in the workspace, so read_only steps can report.
	Posture: tools.PostureRead,
	Kind:    tools.KindThink,
	Describe: func(a ReportCheckpointArgs) tools.Presentation {
		return tools.Presentation{Title: "Checkpoint: " + string(a.Status)}
	},
	Run: func(ctx context.Context, env tools.Env, slot *reportSlot, a ReportCheckpointArgs, dryRun bool) tools.Result {
		if slot == nil {
			return tools.Fail(tools.ErrPermissionDenied, "report_checkpoint is for the child of a workflow step, and this session is not one; answer in prose instead")
		}
		return slot.accept(ctx, env, a, dryRun)
	},
})

// accept checks a report and, unless dryRun, keeps it as the step's
// checkpoint. A rejected report changes nothing but is remembered, so the
// step's outcome can say why it has no typed payload.
func (s *reportSlot) accept(ctx context.Context, env tools.Env, a ReportCheckpointArgs, dryRun bool) tools.Result {
	ready := a.Status == CheckpointReady
	if a.DependentSafe != nil && *a.DependentSafe != ready {
		return tools.Fail(tools.ErrInvalidArgs, "dependent_safe is %t but status is %s: only a checkpoint_ready result is safe for dependents; change one of them", *a.DependentSafe, a.Status)
	}
	var payload json.RawMessage
	if a.Payload != nil {
		payload, _ = json.Marshal(a.Payload)
	}
	if s.schema != nil {
		var problems []string
		switch {
		case payload != nil:
			problems = s.schema.Validate(payload)
		case ready:
			problems = []string{"/: payload is missing; checkpoint_ready needs a payload that matches the output schema in your task"}
		}
		if len(problems) > 0 {
			s.mu.Lock()
			s.rejected = problems
			s.mu.Unlock()
			return tools.Result{Error: &tools.Failure{
				Kind:    tools.ErrInvalidArgs,
				Message: "payload does not match the step's output schema; fix it and call report_checkpoint again:\n" + strings.Join(problems, "\n"),
				Details: map[string]any{"problems": problems},
			}}
		}
	}
	if dryRun {
		return tools.Preview("would record the checkpoint of step %s as %s", s.stepID, a.Status)
	}
	if ready && len(s.verify) > 0 {
		evidence, problem := verified(ctx, env, s.verify, payload)
		if problem != "" {
			s.mu.Lock()
			s.rejected = []string{problem}
			s.mu.Unlock()
			return tools.Result{Error: &tools.Failure{Kind: tools.ErrInvalidArgs, Message: problem, Details: map[string]any{"problems": []string{problem}}}}
		}
		a.Verification = append(evidence, a.Verification...)
	}
	s.mu.Lock()
	s.report, s.payload, s.rejected = &a, payload, nil
	s.mu.Unlock()
	return tools.OK(ReportCheckpointOutput{
		Recorded: true, Status: a.Status,
		Message: fmt.Sprintf("checkpoint of step %s recorded as %s; end your turn now with a short summary", s.stepID, a.Status),
	})
}

// taken returns the last accepted report, its payload, and the problems
// of the last rejected one.
func (s *reportSlot) taken() (*ReportCheckpointArgs, json.RawMessage, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.report, s.payload, s.rejected
}

// markerPattern finds "checkpoint_status: <status>" on a line of its own
// in a child's final message: the fallback for a child that did not call
// report_checkpoint. Compiled on first use, not at every start of pixir.
var markerPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?mi)^[\s>*_` + "`" + `-]*checkpoint_status[*_` + "`" + `]*\s*:\s*[*_` + "`" + `]*\s*(checkpoint_ready|partial|failed|needs_orchestrator)\b`)
})

// marker returns the last checkpoint status line of text, if any.
func marker(text string) (CheckpointStatus, bool) {
	all := markerPattern().FindAllStringSubmatch(text, -1)
	if len(all) == 0 {
		return "", false
	}
	return CheckpointStatus(strings.ToLower(all[len(all)-1][1])), true
}

// decide turns a step's ended child into its Step Outcome (ADR 0014):
//
//   - a report_checkpoint report counts first, then a checkpoint_status
//     line in the final message, then the Subagent status alone
//     (completed means checkpoint_ready, anything else failed);
//   - a child that did not complete cannot be checkpoint_ready: what it
//     reported ready is downgraded to partial, since what it did after the
//     report is unknown;
//   - a step with an output_schema is checkpoint_ready only with a payload
//     that matched it;
//   - a step whose child changed files outside its write sets failed
//     (write_set_violation), whatever it reported: those changes must not
//     reach its dependents or the workspace.
func decide(st *Step, view tools.SubagentView, slot *reportSlot) StepOutcome {
	mode := st.WorkspaceMode
	if view.WorkspaceMode != "" {
		mode = WorkspaceMode(view.WorkspaceMode) // where it actually ran
	}
	out := StepOutcome{
		StepID: st.ID, Agent: view.Agent, AgentID: view.ID, ChildSessionID: view.ChildSessionID,
		Posture: st.PermissionMode, WorkspaceMode: mode, Workspace: view.Workspace,
		DependsOn: nonNil(st.DependsOn), SubagentStatus: view.Status, Summary: view.Summary,
		ElapsedMS: view.ElapsedMS, Error: view.Error, Changes: view.Changes, Usage: view.Usage,
		WriteSetViolation: view.WriteSetViolation,
	}
	bundle := &Bundle{
		Version: 1, StepID: st.ID, AgentID: view.ID, ChildSessionID: view.ChildSessionID,
		Summary: view.Summary, Produced: []string{}, Verification: []string{}, KnownLimitations: []string{},
		Changes: view.Changes,
	}
	if mode == Isolated {
		bundle.Workspace = view.Workspace
	}
	completed := view.Status == tools.SubagentCompleted
	report, payload, rejected := slot.taken()
	status, found := CheckpointStatus(""), false
	switch {
	case report != nil:
		status, found = report.Status, true
		bundle.Source = SourceReport
		bundle.Summary = report.Summary
		bundle.Produced = nonNil(report.Produced)
		bundle.Verification = nonNil(report.Verification)
		bundle.KnownLimitations = nonNil(report.KnownLimitations)
		bundle.Payload = payload
		// The report is written for dependents; the final message is
		// often just "done, reported".
		out.Summary = report.Summary
	case completed:
		bundle.Source = SourceSubagent
		status = CheckpointReady
		if m, ok := marker(view.Summary); ok {
			status, bundle.Source = m, SourceMarker
		}
		found = true
	}
	if v := view.WriteSetViolation; v != nil && found {
		// The run's error (view.Error) says so, unless it ended otherwise.
		status = CheckpointFailed
		bundle.KnownLimitations = append(bundle.KnownLimitations, fmt.Sprintf(
			"%s: the child changed %s, outside its write set; the step failed for it", tools.WriteSetViolationCode, strings.Join(v.Paths, ", ")))
	}
	if n := view.DeniedChanges; n > 0 && status == CheckpointReady && st.PermissionMode == Writer {
		// Partial work is reported as partial: a writer the user refused
		// every change to has not done the work it reports ready. Only
		// known changes can show that: a shared writer no check scans
		// (no write set) has unknown changes, and one denial among its
		// many allowed writes must not undo the step, so it keeps its
		// status with the denial said.
		switch {
		case view.Changes != nil && view.Changes.Empty():
			status = CheckpointPartial
			bundle.KnownLimitations = append(bundle.KnownLimitations, fmt.Sprintf(
				"the user denied %s the child asked to make, and no file of the step changed: it reported checkpoint_ready, but its work is not done", plural.Of(n, "change", "changes")))
		case view.Changes == nil:
			bundle.KnownLimitations = append(bundle.KnownLimitations, fmt.Sprintf(
				"the user denied %s the child asked to make; what the step changed is unknown (no write set to check it against), so check its work", plural.Of(n, "change", "changes")))
		default:
			bundle.KnownLimitations = append(bundle.KnownLimitations, fmt.Sprintf(
				"the user denied %s the child asked to make; the rest of its changes were made", plural.Of(n, "change", "changes")))
		}
	}
	if !completed && status == CheckpointReady {
		status = CheckpointPartial
		bundle.KnownLimitations = append(bundle.KnownLimitations,
			fmt.Sprintf("the child reported checkpoint_ready, then ended %s; what it did after the report is unverified", view.Status))
	}
	if status == CheckpointReady && len(slot.verify) > 0 && report == nil {
		status = CheckpointFailed
		msg := "the step requires verification (verify), which Pixir runs when the child reports checkpoint_ready with report_checkpoint, and no report passed it"
		details := map[string]any{}
		if len(rejected) > 0 {
			msg += "; its last report was refused:\n" + strings.Join(rejected, "\n")
			details["problems"] = rejected
		}
		out.Error = &tools.Failure{Kind: tools.ErrInvalidArgs, Message: msg, Details: details}
	}
	if status == CheckpointReady && slot.schema != nil && payload == nil {
		status = CheckpointFailed
		msg := "the step has an output_schema, and the child reported no payload that matches it"
		details := map[string]any{}
		if len(rejected) > 0 {
			msg += "; its last payload was rejected:\n" + strings.Join(rejected, "\n")
			details["problems"] = rejected
		}
		out.Error = &tools.Failure{Kind: tools.ErrInvalidArgs, Message: msg, Details: details}
	}
	if !found {
		// No report and no completion: nothing usable.
		out.CheckpointStatus = CheckpointFailed
		return out
	}
	bundle.Status = status
	bundle.DependentSafe = status == CheckpointReady
	out.CheckpointStatus = status
	out.Checkpoint = bundle
	return out
}
