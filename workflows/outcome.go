package workflows

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/tools"
)

// CheckpointStatus is the workflow's judgement of a step (ADR 0014): a
// projection over the child's Subagent status, never a replacement for it.
type CheckpointStatus string

const (
	// CheckpointReady: the step produced a result dependents may consume.
	CheckpointReady CheckpointStatus = "checkpoint_ready"
	// CheckpointPartial: useful evidence, not enough to unblock dependents.
	CheckpointPartial CheckpointStatus = "partial"
	// CheckpointFailed: a terminal state with no usable checkpoint.
	CheckpointFailed CheckpointStatus = "failed"
	// CheckpointHeld: never started, because a dependency did not become
	// checkpoint_ready (or the workflow stopped first).
	CheckpointHeld CheckpointStatus = "held"
	// CheckpointNeedsOrchestrator: the step found an ambiguity or conflict
	// the workflow cannot resolve; the parent (or the user) must decide.
	CheckpointNeedsOrchestrator CheckpointStatus = "needs_orchestrator"
	// CheckpointSkipped: never started because its condition (when) was
	// false, or a step it needs was skipped. Not a failure: a branch the
	// workflow did not take.
	CheckpointSkipped CheckpointStatus = "skipped"
)

// Status is a workflow run's verdict: completed only when every step is
// checkpoint_ready; partial when some are; failed when none is.
type Status string

const (
	StatusCompleted Status = "completed"
	StatusPartial   Status = "partial"
	StatusFailed    Status = "failed"
)

// Reasons a workflow stopped starting steps before the graph was done, and
// reasons a step was held or closed early.
const (
	StoppedFailFast    = "fail_fast"
	StoppedTimeout     = "workflow_timeout"
	StoppedCancelled   = "cancelled"
	StoppedInterrupted = "interrupted" // the process ended mid-run (Rebuild)
	// StoppedBudget: the run's budget, the session's or the cap on
	// subagents was spent; what had not started is held, resumable.
	StoppedBudget = "budget_exhausted"

	HeldDependency = "dependency_not_checkpoint_ready"
)

// Bundle is a Checkpoint Bundle: the evidence that makes a step's result
// safe (or not) for dependents to consume.
type Bundle struct {
	Version        int              `json:"version"`
	StepID         string           `json:"step_id"`
	AgentID        string           `json:"agent_id"`
	ChildSessionID string           `json:"child_session_id,omitempty"`
	Status         CheckpointStatus `json:"status"`
	DependentSafe  bool             `json:"dependent_safe"`
	Summary        string           `json:"summary"`
	// Produced is the contract or the artifacts: files, interfaces,
	// decisions a dependent may rely on.
	Produced []string `json:"produced"`
	// Verification is the evidence: checks run and what they showed.
	Verification     []string `json:"verification"`
	KnownLimitations []string `json:"known_limitations"`
	// Payload is the typed output, valid against the step's output_schema.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Changes and Workspace say where an isolated writer's files are: its
	// snapshot (StepOutcome.Merge says whether they are in the workspace
	// too).
	Changes   *tools.FileChanges `json:"changes,omitempty"`
	Workspace string             `json:"workspace,omitempty"`
	// Source is how the checkpoint was learnt: report_checkpoint, a
	// "checkpoint_status:" line in the final message, or the Subagent
	// status alone.
	Source string `json:"source"`
}

// Bundle sources.
const (
	SourceReport   = "report_checkpoint"
	SourceMarker   = "final_message_marker"
	SourceSubagent = "subagent_status"
)

// StepOutcome is what became of one step run: a step, or for a step in a
// loop one iteration of it, for a fan-out one instance.
type StepOutcome struct {
	StepID string `json:"step_id"`
	// Run names the run: check-plan#2 (iteration 2 of its loop; #1.2 for
	// a loop in a loop), make[3] (the third instance of a fan-out), or the
	// step's id.
	Run string `json:"run,omitempty"`
	// Loop is the innermost loop the step repeats in; Iteration the
	// iteration of each loop holding it, outermost first.
	Loop      string `json:"loop,omitempty"`
	Iteration []int  `json:"iteration,omitempty"`
	// Item is the 1-based item of a fan-out instance.
	Item int `json:"item,omitempty"`
	// Superseded: a later iteration of its loop ran; the outcome's
	// verdict counts only each loop's last iteration.
	Superseded     bool           `json:"superseded,omitempty"`
	Agent          string         `json:"agent"`
	AgentID        string         `json:"agent_id,omitempty"`
	ChildSessionID string         `json:"child_session_id,omitempty"`
	Wave           int            `json:"wave,omitempty"`
	Posture        PermissionMode `json:"posture"`
	WorkspaceMode  WorkspaceMode  `json:"workspace_mode"`
	Workspace      string         `json:"workspace,omitempty"`
	DependsOn      []string       `json:"depends_on"`
	// SubagentStatus is the child's raw lifecycle status (not_started for
	// a step that never got one).
	SubagentStatus   tools.SubagentStatus `json:"subagent_status"`
	CheckpointStatus CheckpointStatus     `json:"checkpoint_status"`
	Summary          string               `json:"summary"`
	ElapsedMS        int64                `json:"elapsed_ms"`
	Error            *tools.Failure       `json:"error,omitempty"`
	// Reason says why a started step ended early by the workflow's hand
	// (fail_fast, workflow_timeout, cancelled).
	Reason string `json:"reason,omitempty"`
	// HeldReason and BlockedBy say why a held step never started.
	HeldReason string   `json:"held_reason,omitempty"`
	BlockedBy  []string `json:"blocked_by,omitempty"`
	// SkipReason says why a skipped run never started, Conditions what
	// its condition (when) saw, for every run that had one.
	SkipReason string          `json:"skip_reason,omitempty"`
	Conditions []ConditionSeen `json:"conditions,omitempty"`
	// ReusedFrom is the earlier run (resume_from) whose checkpoint this
	// step reuses instead of running again.
	ReusedFrom string `json:"reused_from,omitempty"`
	// Checkpoint is the step's bundle; nil when it has none.
	Checkpoint *Bundle            `json:"checkpoint,omitempty"`
	Changes    *tools.FileChanges `json:"changes,omitempty"`
	// Usage is what the step's child spent (for a reused step, what it
	// spent in the run it is reused from).
	Usage *budget.Usage `json:"usage,omitempty"`
	// Merge, for an isolated writer, says whether its changes are in the
	// workspace: merged, conflicted or not_merged (and why).
	Merge *StepMerge `json:"merge,omitempty"`
	// WriteSetViolation, when set, lists the changes outside the step's
	// write sets (its own and its agent's): the step failed for them, and
	// they must never be merged into the workspace.
	WriteSetViolation *tools.WriteSetViolation `json:"write_set_violation,omitempty"`
}

// StepMerge is what became of an isolated writer's changes: its policy
// and the merge-back's report.
type StepMerge struct {
	Policy MergePolicy `json:"policy"`
	// Tried is set when the run asked for the merge (on_ready, the step
	// ready): a not_merged merge that was tried was declined, refused or
	// failed; one that was not was never meant to happen (the step was
	// not ready, or the policy keeps it in the snapshot).
	Tried bool `json:"tried,omitempty"`
	tools.MergeReport
}

// NextAction is a safe thing the parent may do after a workflow that did
// not complete.
type NextAction struct {
	// Action is one of retry_failed_steps, rerun_held_steps, ask_user,
	// make_missed_commits, merge_again, resolve_then_merge,
	// keep_in_snapshot, discard, abort.
	Action  string   `json:"action"`
	StepIDs []string `json:"step_ids,omitempty"`
	// Args are run_workflow arguments that do it (resume_from).
	Args   map[string]string `json:"args,omitempty"`
	Reason string            `json:"reason"`
	// Loop, on an ask_user about a loop that holds its dependents, is that
	// loop, so each surface words the action its own way (Reason is the
	// model's words).
	Loop *HeldLoop `json:"loop,omitempty"`
}

// HeldLoop is a loop run that ended unresolved and holds its dependents
// (on_exhausted: hold). Resuming reuses its iterations and ends it the
// same way, so what to change comes before the command.
type HeldLoop struct {
	Run           string    `json:"run"`
	State         LoopState `json:"state"`
	Iterations    int       `json:"iterations"`
	MaxIterations int       `json:"max_iterations"`
	// Holds are the runs it holds that wait for nothing else; none: its
	// dependents.
	Holds []string `json:"holds,omitempty"`
}

// Situation is how the loop ended and what it holds: `loop plan ended
// exhausted after 2 of 2 iterations and holds ship (on_exhausted: hold)`.
func (h *HeldLoop) Situation() string {
	state := fmt.Sprintf("converged at iteration %d of %d", h.Iterations, h.MaxIterations)
	if h.State == LoopExhausted {
		state = fmt.Sprintf("exhausted after %d of %d iterations", h.Iterations, h.MaxIterations)
	}
	what := "its dependents"
	if len(h.Holds) > 0 {
		what = strings.Join(h.Holds, ", ")
	}
	return fmt.Sprintf("loop %s ended %s and holds %s (on_exhausted: hold)", h.Run, state, what)
}

// Change is what to change in the spec before resuming: its blockers
// settled in the workspace change nothing (the loop is decided again from
// the same checkpoints); proceed does, and for an exhausted loop more
// iterations (it goes on).
func (h *HeldLoop) Change() string {
	if h.State == LoopExhausted {
		return fmt.Sprintf("raise its max_iterations (it goes on with iteration %d) or set its on_exhausted to proceed (its dependents run, told its blockers)", h.Iterations+1)
	}
	return "set its on_exhausted to proceed (its dependents run, told its blockers)"
}

// LoopState is where a loop run is, or how it ended.
type LoopState string

const (
	LoopRunning LoopState = "running"
	// LoopSatisfied: its until held.
	LoopSatisfied LoopState = "satisfied"
	// LoopConverged: its converge value repeated; unresolved.
	LoopConverged LoopState = "converged"
	// LoopExhausted: max_iterations ran without its until; unresolved.
	LoopExhausted LoopState = "exhausted"
	// LoopHeld: nothing of an iteration could start (a dependency not
	// ready); LoopSkipped: all of it was skipped.
	LoopHeld    LoopState = "held"
	LoopSkipped LoopState = "skipped"
	// LoopStopped: the workflow stopped (fail_fast, timeout, cancel)
	// during it or before it; LoopInterrupted: the Log holds no end (the
	// process ended).
	LoopStopped     LoopState = "stopped"
	LoopInterrupted LoopState = "interrupted"
)

// LoopOutcome is what became of one loop run.
type LoopOutcome struct {
	Loop string `json:"loop"`
	// Run names it: the loop's id, or escalation#2 for its run inside
	// iteration 2 of an enclosing loop.
	Run           string    `json:"run"`
	Iterations    int       `json:"iterations"`
	MaxIterations int       `json:"max_iterations"`
	State         LoopState `json:"state"`
	// OnExhausted is its policy when unresolved: hold or proceed.
	OnExhausted ExhaustionPolicy `json:"on_exhausted"`
	// Blockers are what stayed unresolved (converged, exhausted): the
	// converge value's items, or the until's tests that failed with the
	// values seen.
	Blockers []string `json:"blockers"`
	// Superseded: it ran in an earlier iteration of an enclosing loop;
	// only the last iteration's loops count in the verdict.
	Superseded bool `json:"superseded,omitempty"`
}

// Unresolved reports whether the loop ended without its until holding.
func (l *LoopOutcome) Unresolved() bool {
	return l.State == LoopConverged || l.State == LoopExhausted
}

// Counts sums up an Outcome: steps are step runs; the buckets count each
// loop's last iteration only.
type Counts struct {
	Steps                  int `json:"steps"`
	Waves                  int `json:"waves"`
	CheckpointReadySteps   int `json:"checkpoint_ready_steps"`
	PartialSteps           int `json:"partial_steps"`
	FailedSteps            int `json:"failed_steps"`
	HeldSteps              int `json:"held_steps"`
	NeedsOrchestratorSteps int `json:"needs_orchestrator_steps"`
	SkippedSteps           int `json:"skipped_steps"`
	// SupersededRuns are runs of earlier iterations of a loop.
	SupersededRuns int `json:"superseded_runs"`
}

// Brief is the counts in short, as the verdict line counts them:
// `12/21 checkpoint_ready, 9 skipped; 6 runs of earlier iterations` (a
// loop's earlier iterations are not runs that were meant to end ready).
func (c *Counts) Brief() string {
	text := strconv.Itoa(c.CheckpointReadySteps) + "/" + strconv.Itoa(c.Steps-c.SupersededRuns) + " checkpoint_ready"
	if c.SkippedSteps > 0 {
		text += ", " + strconv.Itoa(c.SkippedSteps) + " skipped"
	}
	if c.SupersededRuns > 0 {
		text += "; " + plural.Of(c.SupersededRuns, "run", "runs") + " of earlier iterations"
	}
	return text
}

// Outcome is the result of run_workflow: a Partial Workflow Outcome
// whenever Status is not completed, with every step's outcome and
// everything that is still usable.
type Outcome struct {
	// Output is the outcome as a table a person reads at a glance.
	Output     string `json:"output"`
	Mode       string `json:"mode"` // run
	WorkflowID string `json:"workflow_id"`
	Name       string `json:"name,omitempty"`
	Status     Status `json:"status"`
	// StoppedBy says why the workflow stopped starting steps early.
	StoppedBy string        `json:"stopped_by,omitempty"`
	Waves     [][]string    `json:"waves"`
	Steps     []StepOutcome `json:"steps"`
	ElapsedMS int64         `json:"elapsed_ms"`
	// Buckets of step ids.
	UsableCheckpoints      []string `json:"usable_checkpoints"`
	PartialSteps           []string `json:"partial_steps"`
	FailedSteps            []string `json:"failed_steps"`
	TimeoutSteps           []string `json:"timeout_steps"`
	HeldSteps              []string `json:"held_steps"`
	NeedsOrchestratorSteps []string `json:"needs_orchestrator_steps"`
	// SkippedSteps were not taken: their condition was false, or a step
	// they need was skipped. Not failures.
	SkippedSteps []string `json:"skipped_steps"`
	// Loops is each loop run: its iterations, its state, its blockers.
	Loops []LoopOutcome `json:"loops"`
	// SeamObligations are the unresolved decisions needs_orchestrator
	// steps raised, and the blockers of loops that ended unresolved, for
	// the parent to settle.
	SeamObligations []string `json:"seam_obligations"`
	// KnownLimitations are what the outcome is known to lack: loops whose
	// dependents proceeded unresolved.
	KnownLimitations []string `json:"known_limitations"`
	// MergeConflictRisk names the first pairs of writers at merge risk;
	// MergeConflictRiskCount counts them.
	MergeConflictRisk      []MergeRisk  `json:"merge_conflict_risk"`
	MergeConflictRiskCount RiskCount    `json:"merge_conflict_risk_count"`
	SafeNextActions        []NextAction `json:"safe_next_actions"`
	// Commit is what became of the commit the spec asked for.
	Commit *CommitReport `json:"commit,omitempty"`
	// Commits are what became of each commit, when the spec asked for
	// several (commit.commits), in order.
	Commits []CommitReport `json:"commits,omitempty"`
	Summary Counts         `json:"summary"`
	// Usage is what this run's steps spent together (reused steps cost
	// this run nothing).
	Usage budget.Usage `json:"usage"`
	// Truncated is set in a result whose lists were cut (Bounded).
	Truncated *OutcomeTruncation `json:"truncated,omitempty"`
}
