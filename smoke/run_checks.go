package smoke

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// stepEvidence is a step's lifecycle in the Log and its outcome.
func stepEvidence(r *runResult, lc *lifecycle, id string) map[string]any {
	ev := map[string]any{}
	if lc != nil {
		ev["subagent_id"] = lc.id
		for name, e := range lc.events {
			ev[string(name)] = seqTS(e)
		}
		if st, ok := lc.events[tools.SubagentEventStarted]; ok {
			ev["workspace_mode"] = st.D.WorkspaceMode
			if st.D.ChildLog != "" {
				ev["child_log"] = relTo(r.root(), st.D.ChildLog)
			}
		}
	}
	if s := stepOf(&r.out, id); s != nil {
		ev["subagent_status"], ev["checkpoint_status"], ev["wave"] = s.SubagentStatus, s.CheckpointStatus, s.Wave
	}
	return ev
}

// parallelCheck: read-only steps ran at the same time: all started before
// any ended, by the seqs of their subagent_events.
func parallelCheck(c *checks, r *runResult, ids ...string) {
	lcs := r.log.lifecycles()
	ev := r.evidence()
	var p problems
	var starts, ends []int64
	for _, id := range ids {
		lc := lcs[id]
		ev[id] = stepEvidence(r, lc, id)
		if lc == nil {
			p.addf("no subagent_event for step %s in the Log", id)
			continue
		}
		st, started := lc.events[tools.SubagentEventStarted]
		end, ended := lc.end()
		if !started || !ended {
			p.addf("step %s has no started or no end event (%v)", id, lc.order)
			continue
		}
		starts, ends = append(starts, st.Seq), append(ends, end.Seq)
		p.expect(st.D.WorkspaceMode == runtime.WorkspaceShared, "step %s ran in a %s workspace, want shared (a read-only step)", id, st.D.WorkspaceMode)
	}
	if len(starts) == len(ids) {
		p.expect(slices.Max(starts) < slices.Min(ends),
			"the last read-only step started (seq %d) after the first ended (seq %d): they did not run in parallel (is max_threads 1?)", slices.Max(starts), slices.Min(ends))
	}
	c.add("parallel_read_only_steps", "read-only steps all started before any of them ended", ev, p...)
}

// serializedCheck: two writers whose write sets overlap never ran at the
// same time, each in its own snapshot, and neither wrote the workspace.
func serializedCheck(c *checks, r *runResult) {
	lcs := r.log.lifecycles()
	ev := r.evidence()
	var p problems
	type span struct {
		id         string
		start, end subEvent
	}
	var spans []span
	for _, id := range []string{"w1", "w2"} {
		lc := lcs[id]
		e := stepEvidence(r, lc, id)
		ev[id] = e
		if lc == nil {
			p.addf("no subagent_event for step %s in the Log", id)
			continue
		}
		st, started := lc.events[tools.SubagentEventStarted]
		end, ended := lc.end()
		if !started || !ended {
			p.addf("step %s has no started or no end event (%v)", id, lc.order)
			continue
		}
		spans = append(spans, span{id, st, end})
		e["workspace"] = relTo(r.root(), st.D.Workspace)
		e["changes"] = end.D.Changes
		p.expect(st.D.WorkspaceMode == runtime.WorkspaceIsolated, "writer %s ran in a %s workspace, want isolated", id, st.D.WorkspaceMode)
		p.expect(end.D.Changes != nil && slices.Contains(end.D.Changes.Added, "out/smoke.txt"),
			"writer %s's changes %v do not list out/smoke.txt as added in its snapshot", id, end.D.Changes)
		if s := stepOf(&r.out, id); s != nil {
			p.expect(s.CheckpointStatus == workflows.CheckpointReady, "writer %s is %s, want checkpoint_ready", id, s.CheckpointStatus)
		}
	}
	if len(spans) == 2 {
		first, second := spans[0], spans[1]
		if second.start.Seq < first.start.Seq {
			first, second = second, first
		}
		ev["order"] = []string{first.id, second.id}
		p.expect(second.start.Seq > first.end.Seq,
			"writer %s started (seq %d) before writer %s ended (seq %d): overlapping write sets ran together", second.id, second.start.Seq, first.id, first.end.Seq)
	}
	_, err := os.Stat(filepath.Join(r.root(), "out", "smoke.txt"))
	ev["workspace_has_out_smoke_txt"] = err == nil
	p.expect(os.IsNotExist(err), "out/smoke.txt is in the parent workspace: an isolated writer's file must stay in its snapshot")
	c.add("serialized_overlapping_writers", "the second of two overlapping writers started only after the first ended; each wrote in its own snapshot", ev, p...)
}

// dependencyCheck: the dependent's child was given its dependency's
// checkpoint summary, and started only after that checkpoint was decided.
func dependencyCheck(c *checks, r *runResult, depID, useID string) {
	lcs := r.log.lifecycles()
	ev := r.evidence()
	var p problems
	dep, use := stepOf(&r.out, depID), stepOf(&r.out, useID)
	if dep == nil || use == nil || dep.Checkpoint == nil {
		p.addf("the outcome lacks %s's checkpoint or the %s step", depID, useID)
		c.add("dependency_summary_collected", "a dependent's child receives its dependency's checkpoint summary", ev, p...)
		return
	}
	summary := strings.TrimSpace(dep.Checkpoint.Summary)
	ev["dependency"] = map[string]any{"step": depID, "subagent_id": dep.AgentID, "summary": summary}
	lc := lcs[useID]
	ev["dependent"] = stepEvidence(r, lc, useID)
	var childLog string
	if lc != nil {
		childLog = lc.events[tools.SubagentEventStarted].D.ChildLog
	}
	if childLog == "" {
		p.addf("the Log names no child Log for step %s", useID)
	} else {
		l, err := readLog(childLog)
		if err != nil {
			p.addf("%v", err)
		} else {
			msgs, evs := ofType[runtime.UserMessageData](l, runtime.EventUserMessage)
			found := -1
			for i, m := range msgs {
				if strings.Contains(m.Text, summary) && strings.Contains(m.Text, "subagent "+dep.AgentID) {
					found = i
					break
				}
			}
			if found < 0 {
				p.addf("no user_message of %s carries %s's checkpoint summary %q", relTo(r.root(), childLog), depID, summary)
			} else {
				ev["user_message"] = map[string]any{"log": relTo(r.root(), childLog), "seq": evs[found].Seq}
			}
		}
	}
	var decided, scheduled int64
	for _, e := range r.log.workflowEvents() {
		switch {
		case e.D.Kind == workflows.EventCheckpointDecided && e.D.StepID == depID:
			decided = e.Seq
		case e.D.Kind == workflows.EventStepScheduled && e.D.StepID == useID:
			scheduled = e.Seq
		}
	}
	ev["dependency_checkpoint_decided_seq"], ev["dependent_step_scheduled_seq"] = decided, scheduled
	p.expect(decided > 0 && scheduled > decided, "%s was scheduled at seq %d, %s's checkpoint decided at seq %d: the dependent must start after", useID, scheduled, depID, decided)
	c.add("dependency_summary_collected", "a dependent's child Log has a user_message with its dependency's checkpoint summary", ev, p...)
}

// lifecycleCheck: every step's subagent_events and workflow_events are in
// the Log, in order.
func lifecycleCheck(c *checks, r *runResult) {
	lcs := r.log.lifecycles()
	wf := r.log.workflowEvents()
	ev := r.evidence()
	var p problems
	if len(wf) < 2 || wf[0].D.Kind != workflows.EventWorkflowStarted || wf[len(wf)-1].D.Kind != workflows.EventWorkflowFinished {
		kinds := make([]string, len(wf))
		for i, e := range wf {
			kinds[i] = e.D.Kind
		}
		p.addf("workflow_events %v: want workflow_started first and workflow_finished last", kinds)
		c.add("lifecycle_evidence", "each step's lifecycle is in the Log, in order", ev, p...)
		return
	}
	started, finished := wf[0], wf[len(wf)-1]
	ev["workflow_started"] = map[string]any{"seq": started.Seq, "ts": started.TS}
	ev["workflow_finished"] = map[string]any{"seq": finished.Seq, "ts": finished.TS, "status": finished.D.Status}
	steps := map[string]any{}
	for i := range r.w.Steps {
		id := r.w.Steps[i].ID
		lc := lcs[id]
		e := stepEvidence(r, lc, id)
		steps[id] = e
		if lc == nil {
			p.addf("%s: no subagent_event", id)
			continue
		}
		q, okQ := lc.events[tools.SubagentEventQueued]
		s, okS := lc.events[tools.SubagentEventStarted]
		f, okF := lc.events[tools.SubagentEventFinished]
		if !okQ || !okS || !okF {
			p.addf("%s: subagent_events %v, want queued, started, finished", id, lc.order)
			continue
		}
		var sched, decided int64
		for _, w := range wf {
			switch {
			case w.D.Kind == workflows.EventStepScheduled && w.D.StepID == id:
				sched = w.Seq
				p.expect(w.D.SubagentID == lc.id, "%s: step_scheduled names subagent %s, the Log's events %s", id, w.D.SubagentID, lc.id)
			case w.D.Kind == workflows.EventCheckpointDecided && w.D.StepID == id:
				decided = w.Seq
			}
		}
		e["step_scheduled"], e["checkpoint_decided"] = sched, decided
		order := []int64{started.Seq, q.Seq, s.Seq, f.Seq, decided, finished.Seq}
		p.expect(sched > 0 && decided > 0, "%s: step_scheduled at seq %d, checkpoint_decided at seq %d: want both", id, sched, decided)
		p.expect(slices.IsSorted(order) && !slices.Contains(order, 0), "%s: workflow_started, queued, started, finished, checkpoint_decided, workflow_finished at seqs %v: want increasing", id, order)
		p.expect(q.Seq < sched && sched < decided, "%s: queued %d, step_scheduled %d, checkpoint_decided %d: want increasing", id, q.Seq, sched, decided)
	}
	ev["steps"] = steps
	c.add("lifecycle_evidence", "each step: subagent_event queued, started, finished, and workflow_event workflow_started, step_scheduled, checkpoint_decided, workflow_finished, in order", ev, p...)
}

// allReadyCheck: ADR 0014, every step checkpoint_ready: the workflow is
// completed and offers no next action.
func allReadyCheck(c *checks, r *runResult) {
	ev := r.evidence()
	var p problems
	statuses := map[string]string{}
	for _, s := range r.out.Steps {
		statuses[s.StepID] = string(s.CheckpointStatus)
		p.expect(s.CheckpointStatus == workflows.CheckpointReady && s.SubagentStatus == tools.SubagentCompleted,
			"%s is %s (subagent %s), want checkpoint_ready (completed)", s.StepID, s.CheckpointStatus, s.SubagentStatus)
	}
	ev["steps"], ev["usable_checkpoints"], ev["safe_next_actions"] = statuses, r.out.UsableCheckpoints, r.out.SafeNextActions
	p.expect(r.out.Status == workflows.StatusCompleted, "status %s, want completed", r.out.Status)
	p.expect(len(r.out.UsableCheckpoints) == len(r.w.Steps), "%d usable checkpoints of %d steps", len(r.out.UsableCheckpoints), len(r.w.Steps))
	p.expect(len(r.out.SafeNextActions) == 0, "a completed workflow offers next actions %v", r.out.SafeNextActions)
	c.add("all_steps_ready", "every step checkpoint_ready makes the workflow completed", ev, p...)
}

// timeoutCheck: ADR 0014, one step times out while another is ready: the
// workflow is partial, never completed.
func timeoutCheck(c *checks, r *runResult) {
	ev := r.evidence()
	var p problems
	quick, stuck := stepOf(&r.out, "quick"), stepOf(&r.out, "stuck")
	lcs := r.log.lifecycles()
	ev["quick"], ev["stuck"] = stepEvidence(r, lcs["quick"], "quick"), stepEvidence(r, lcs["stuck"], "stuck")
	ev["timeout_steps"] = r.out.TimeoutSteps
	p.expect(r.out.Status == workflows.StatusPartial, "status %s, want partial", r.out.Status)
	p.expect(quick != nil && quick.CheckpointStatus == workflows.CheckpointReady, "quick is not checkpoint_ready")
	if stuck != nil {
		ev["stuck_elapsed_ms"] = stuck.ElapsedMS
		p.expect(stuck.SubagentStatus == tools.SubagentTimedOut, "stuck's subagent is %s, want timed_out", stuck.SubagentStatus)
		p.expect(stuck.CheckpointStatus == workflows.CheckpointFailed, "stuck is %s, want failed", stuck.CheckpointStatus)
		p.expect(stuck.Error != nil && stuck.Error.Kind == tools.ErrTimeout, "stuck's error %v, want kind timeout", stuck.Error)
		// Its clock starts a hair after its deadline is set: allow for it.
		p.expect(stuck.ElapsedMS >= 250, "stuck ran %d ms, well short of its timeout_ms 300", stuck.ElapsedMS)
	} else {
		p.addf("no outcome for stuck")
	}
	p.expect(slices.Contains(r.out.TimeoutSteps, "stuck"), "timeout_steps %v lacks stuck", r.out.TimeoutSteps)
	if lc := lcs["stuck"]; lc != nil {
		_, ok := lc.events[tools.SubagentEventTimedOut]
		p.expect(ok, "the Log has no timed_out subagent_event for stuck (%v)", lc.order)
	}
	c.add("timeout_is_partial", "one step times out while another is ready: the workflow is partial", ev, p...)
}

// heldCheck: ADR 0014, dependents of a step that is not checkpoint_ready
// never start: they are held, with the reason and what blocked them.
func heldCheck(c *checks, timeout, cps *runResult) {
	ev := map[string]any{}
	var p problems
	for _, h := range []struct {
		r           *runResult
		step, on    string
		description string
	}{{timeout, "after", "stuck", "timed out"}, {cps, "next", "half", "partial"}} {
		s := stepOf(&h.r.out, h.step)
		e := h.r.evidence()
		ev[h.r.name] = e
		if s == nil {
			p.addf("%s: no outcome for %s", h.r.name, h.step)
			continue
		}
		e["step"], e["checkpoint_status"], e["held_reason"], e["blocked_by"] = h.step, s.CheckpointStatus, s.HeldReason, s.BlockedBy
		e["held_steps"] = h.r.out.HeldSteps
		p.expect(s.CheckpointStatus == workflows.CheckpointHeld, "%s is %s, want held (its dependency %s %s)", h.step, s.CheckpointStatus, h.on, h.description)
		p.expect(s.HeldReason == workflows.HeldDependency, "%s held for %q, want %s", h.step, s.HeldReason, workflows.HeldDependency)
		p.expect(slices.Equal(s.BlockedBy, []string{h.on}), "%s blocked by %v, want [%s]", h.step, s.BlockedBy, h.on)
		p.expect(s.SubagentStatus == tools.SubagentNotStarted, "%s's subagent is %s, want not_started", h.step, s.SubagentStatus)
		_, ran := h.r.log.lifecycles()[h.step]
		p.expect(!ran, "%s has subagent_events in the Log: a held step must not start", h.step)
		var heldSeq int64
		for _, w := range h.r.log.workflowEvents() {
			if w.D.Kind == workflows.EventStepHeld && w.D.StepID == h.step {
				heldSeq = w.Seq
			}
		}
		e["step_held_seq"] = heldSeq
		p.expect(heldSeq > 0, "%s: no step_held workflow_event in the Log", h.step)
		var rerun []string
		for _, a := range h.r.out.SafeNextActions {
			if a.Action == "rerun_held_steps" {
				rerun = a.StepIDs
			}
		}
		p.expect(slices.Contains(rerun, h.step), "%s: rerun_held_steps next action %v lacks %s", h.r.name, rerun, h.step)
	}
	c.add("dependents_held", "the dependents of a timed-out and of a partial step are held, never started", ev, p...)
}

// partialNeedsCheck: ADR 0014, partial (reported, and by a final-message
// marker) and needs_orchestrator steps: the workflow is partial, the seam
// is an obligation for the parent, and asking the user is a next action.
func partialNeedsCheck(c *checks, r *runResult) {
	ev := r.evidence()
	var p problems
	want := []struct {
		id     string
		status workflows.CheckpointStatus
		source string
	}{
		{"done", workflows.CheckpointReady, workflows.SourceReport},
		{"half", workflows.CheckpointPartial, workflows.SourceReport},
		{"unsure", workflows.CheckpointNeedsOrchestrator, workflows.SourceReport},
		{"noted", workflows.CheckpointPartial, workflows.SourceMarker},
	}
	steps := map[string]any{}
	for _, w := range want {
		s := stepOf(&r.out, w.id)
		if s == nil || s.Checkpoint == nil {
			p.addf("%s has no checkpoint", w.id)
			continue
		}
		steps[w.id] = map[string]any{"checkpoint_status": s.CheckpointStatus, "source": s.Checkpoint.Source, "dependent_safe": s.Checkpoint.DependentSafe, "subagent_id": s.AgentID}
		p.expect(s.CheckpointStatus == w.status, "%s is %s, want %s", w.id, s.CheckpointStatus, w.status)
		p.expect(s.Checkpoint.Source == w.source, "%s's checkpoint came from %s, want %s", w.id, s.Checkpoint.Source, w.source)
		p.expect(s.Checkpoint.DependentSafe == (w.status == workflows.CheckpointReady), "%s: dependent_safe %t with status %s", w.id, s.Checkpoint.DependentSafe, w.status)
	}
	ev["steps"] = steps
	ev["partial_steps"], ev["needs_orchestrator_steps"], ev["seam_obligations"] = r.out.PartialSteps, r.out.NeedsOrchestratorSteps, r.out.SeamObligations
	p.expect(r.out.Status == workflows.StatusPartial, "status %s, want partial", r.out.Status)
	p.expect(slices.Equal(r.out.NeedsOrchestratorSteps, []string{"unsure"}), "needs_orchestrator_steps %v, want [unsure]", r.out.NeedsOrchestratorSteps)
	p.expect(len(r.out.SeamObligations) == 1 && strings.HasPrefix(r.out.SeamObligations[0], "unsure: "), "seam_obligations %v, want one of unsure", r.out.SeamObligations)
	var ask []string
	for _, a := range r.out.SafeNextActions {
		if a.Action == "ask_user" {
			ask = a.StepIDs
		}
	}
	ev["ask_user"] = ask
	for _, id := range []string{"unsure", "half", "noted"} {
		p.expect(slices.Contains(ask, id), "the ask_user next action %v lacks %s", ask, id)
	}
	c.add("partial_and_needs_orchestrator", "partial and needs_orchestrator steps make the workflow partial, with a seam obligation and ask_user", ev, p...)
}

// typedCheck: a payload that matches the step's output_schema is kept; one
// that does not is refused to the child, and the step is not ready.
func typedCheck(c *checks, r *runResult) {
	ev := r.evidence()
	var p problems
	typed, bad := stepOf(&r.out, "typed"), stepOf(&r.out, "bad")
	if typed == nil || bad == nil {
		p.addf("the outcome lacks typed or bad")
		c.add("typed_payload_rejected", "a payload that does not match its output_schema is refused", ev, p...)
		return
	}
	if typed.Checkpoint != nil {
		ev["typed"] = map[string]any{"checkpoint_status": typed.CheckpointStatus, "payload": typed.Checkpoint.Payload}
		p.expect(string(typed.Checkpoint.Payload) == `{"files":["smoke/a.go","smoke/b.go"]}`, "typed's payload %s, want the one it reported", typed.Checkpoint.Payload)
	}
	p.expect(typed.CheckpointStatus == workflows.CheckpointReady, "typed is %s, want checkpoint_ready (its payload matches)", typed.CheckpointStatus)
	p.expect(bad.CheckpointStatus == workflows.CheckpointFailed, "bad is %s, want failed (its payload was refused)", bad.CheckpointStatus)
	be := map[string]any{"checkpoint_status": bad.CheckpointStatus, "subagent_status": bad.SubagentStatus, "error": bad.Error}
	ev["bad"] = be
	p.expect(bad.Error != nil && bad.Error.Kind == tools.ErrInvalidArgs && strings.Contains(bad.Error.Message, "/files"),
		"bad's error %v, want invalid_args naming /files", bad.Error)
	if lc := r.log.lifecycles()["bad"]; lc != nil && lc.events[tools.SubagentEventStarted].D.ChildLog != "" {
		childLog := lc.events[tools.SubagentEventStarted].D.ChildLog
		be["child_log"] = relTo(r.root(), childLog)
		if l, err := readLog(childLog); err != nil {
			p.addf("%v", err)
		} else {
			results, evs := ofType[runtime.ToolResultData](l, runtime.EventToolResult)
			refused := int64(0)
			for i, res := range results {
				if res.Name == "report_checkpoint" && !res.Result.OK && res.Result.Error != nil && res.Result.Error.Kind == tools.ErrInvalidArgs {
					refused = evs[i].Seq
				}
			}
			be["refused_report_seq"] = refused
			p.expect(refused > 0, "the child Log of bad has no refused report_checkpoint")
		}
	} else {
		p.addf("the Log names no child Log for bad")
	}
	p.expect(r.out.Status == workflows.StatusPartial, "status %s, want partial", r.out.Status)
	c.add("typed_payload_rejected", "a payload that does not match its output_schema is refused to the child, and its step is failed, not ready", ev, p...)
}

// rebuildCheck: workflows.Rebuild over the workflow_events of each run's
// Log gives back the outcome Run returned, exactly.
func rebuildCheck(c *checks, runs []*runResult) {
	ev := map[string]any{}
	var p problems
	for _, r := range runs {
		wf := r.log.workflowEvents()
		data := make([]workflows.WorkflowEvent, len(wf))
		for i := range wf {
			data[i] = wf[i].D
		}
		rebuilt := workflows.Rebuild(data)
		e := r.evidence()
		e["workflow_events"] = len(data)
		ev[r.name] = e
		if len(rebuilt) != 1 {
			p.addf("%s: the Log rebuilds %d outcomes, want 1", r.name, len(rebuilt))
			continue
		}
		want, err1 := json.Marshal(r.out)
		got, err2 := json.Marshal(rebuilt[0])
		if err1 != nil || err2 != nil {
			p.addf("%s: encoding the outcomes: %v %v", r.name, err1, err2)
			continue
		}
		diff := firstDiff(want, got)
		e["equal"] = diff == ""
		p.expect(diff == "", "%s: the outcome rebuilt from the Log differs from the one returned at %s", r.name, diff)
	}
	p.expect(len(runs) > 0, "no run to rebuild")
	c.add("outcome_rebuilt_from_log", "workflows.Rebuild over the Log's workflow_events equals the outcome each run returned", ev, p...)
}

// theDecision is the one permission decision and the one tool result of
// a turn of a single tool call, the decision also as evidence.
func theDecision(p *problems, l *sessionLog, ev map[string]any) (runtime.PermissionDecisionData, runtime.ToolResultData, bool) {
	decisions, devs := ofType[runtime.PermissionDecisionData](l, runtime.EventPermissionDecision)
	results, _ := ofType[runtime.ToolResultData](l, runtime.EventToolResult)
	if len(decisions) != 1 || len(results) != 1 {
		p.addf("%d permission decisions and %d results, want 1 of each", len(decisions), len(results))
		return runtime.PermissionDecisionData{}, runtime.ToolResultData{}, false
	}
	d := decisions[0]
	ev["permission_decision"] = map[string]any{"seq": devs[0].Seq, "tool": d.Tool, "mode": d.Mode, "decision": d.Decision, "source": d.Source}
	return d, results[0], true
}

// untouched reports the subagent and workflow events of a turn: there
// must be none when run_workflow was refused.
func untouched(p *problems, l *sessionLog, what string) {
	subs, wfs := l.subagents(), l.workflowEvents()
	p.expect(len(subs) == 0 && len(wfs) == 0, "%s, yet the Log has %d subagent_events and %d workflow_events", what, len(subs), len(wfs))
}

// toolChecks drive run_workflow through a turn of the parent's model:
// invalid specs are refused before anything starts; a run is denied in
// read_only mode while its dry run is allowed there; in auto it runs.
func toolChecks(ctx context.Context, c *checks, rt *runtime.Runtime, ws string) {
	sess, err := rt.NewSession(ws)
	if err != nil {
		c.add("run_workflow_turn", "a session for run_workflow through a turn", nil, err.Error())
		return
	}
	path := logPath(sess)
	base := func() map[string]any {
		return map[string]any{"session_id": sess.ID(), "log": relTo(sess.Workspace().Root(), path)}
	}
	turn := func(mode runtime.Mode, prompt string) (*sessionLog, error) {
		if err := sess.SetMode(mode); err != nil {
			return nil, err
		}
		before, err := readLog(path)
		if err != nil {
			return nil, err
		}
		if _, err := sess.Prompt(ctx, runtime.Prompt{Text: prompt}, runtime.TurnOptions{}); err != nil {
			return nil, err
		}
		after, err := readLog(path)
		if err != nil {
			return nil, err
		}
		return after.after(before.lastSeq()), nil
	}

	// Invalid specs through the tool: every one refused, nothing started.
	ev := base()
	var p problems
	if l, err := turn(runtime.ModeAuto, "[tool-invalid] Send the invalid workflows."); err != nil {
		p.addf("%v", err)
	} else {
		calls, _ := ofType[runtime.ToolCallData](l, runtime.EventToolCall)
		results, evs := ofType[runtime.ToolResultData](l, runtime.EventToolResult)
		p.expect(len(results) == len(invalidSpecs) && len(calls) == len(invalidSpecs), "%d calls and %d results, want %d", len(calls), len(results), len(invalidSpecs))
		var seen []any
		for i := 0; i < len(results) && i < len(calls) && i < len(invalidSpecs); i++ {
			s, res := invalidSpecs[i], results[i]
			if d := firstDiff([]byte(s.spec), calls[i].Arguments); d != "" {
				p.addf("call %d's arguments differ from the %s spec at %s", i+1, s.name, d)
			}
			e := map[string]any{"spec": s.name, "tool_call_id": res.ToolCallID, "seq": evs[i].Seq, "ok": res.Result.OK}
			if f := res.Result.Error; f != nil {
				codes, _ := problemCodes(f.Details)
				e["kind"], e["codes"] = f.Kind, codes
				p.expect(f.Kind == tools.ErrInvalidArgs, "%s: kind %s, want invalid_args", s.name, f.Kind)
				// The tool's argument schema refuses an empty steps list
				// before the workflow's own validation sees it.
				p.expect(slices.Contains(codes, s.code) || (s.code == "empty_workflow" && strings.Contains(f.Message, "/steps")),
					"%s: codes %v (%s), want %s", s.name, codes, f.Message, s.code)
			} else {
				p.addf("%s: run_workflow answered ok", s.name)
			}
			seen = append(seen, e)
		}
		ev["results"] = seen
		untouched(&p, l, "every workflow was invalid")
	}
	c.add("validation_through_run_workflow", "invalid workflows sent to run_workflow in a turn are refused with invalid_args, and nothing starts", ev, p...)

	// read_only: the run is denied, its dry run allowed.
	ev, p = base(), nil
	if l, err := turn(runtime.ModeReadOnly, "[tool-run] Run the workflow."); err != nil {
		p.addf("%v", err)
	} else {
		if d, res, ok := theDecision(&p, l, ev); ok {
			ev["result"] = res.Result.Error
			p.expect(d.Tool == "run_workflow" && d.Decision == "denied" && d.Source == "mode" && d.Mode == runtime.ModeReadOnly,
				"decision %+v, want run_workflow denied by the read_only mode", d)
			p.expect(!res.Result.OK && res.Result.Error != nil && res.Result.Error.Kind == tools.ErrPermissionDenied, "result %+v, want permission_denied", res.Result.Error)
		}
		untouched(&p, l, "run_workflow was denied")
	}
	c.add("run_workflow_denied_in_read_only", "run_workflow in a read_only session is denied, and nothing starts", ev, p...)

	ev, p = base(), nil
	if l, err := turn(runtime.ModeReadOnly, "[tool-dry] Plan the workflow."); err != nil {
		p.addf("%v", err)
	} else {
		if d, res, ok := theDecision(&p, l, ev); ok {
			p.expect(d.Decision == "allowed" && d.Source == "dry_run" && d.Mode == runtime.ModeReadOnly, "decision %+v, want allowed as a dry run in read_only", d)
			var out workflows.DryRunOutcome
			b, _ := json.Marshal(res.Result.Output)
			if !res.Result.OK || json.Unmarshal(b, &out) != nil {
				p.addf("the dry run answered %s", b)
			} else {
				ev["mode"], ev["waves"] = out.Mode, out.Waves
				p.expect(out.Mode == "dry_run", "mode %q, want dry_run", out.Mode)
				p.expect(fmt.Sprint(out.Waves) == "[[look peek] [note]]", "waves %v, want [[look peek] [note]]", out.Waves)
			}
		}
		untouched(&p, l, "it was a dry run")
	}
	c.add("run_workflow_dry_run_in_read_only", "run_workflow's dry run is allowed in read_only mode, plans the waves and starts nothing", ev, p...)

	// auto: the same call runs, and its evidence names the tool call.
	ev, p = base(), nil
	if l, err := turn(runtime.ModeAuto, "[tool-run] Run the workflow."); err != nil {
		p.addf("%v", err)
	} else {
		results, _ := ofType[runtime.ToolResultData](l, runtime.EventToolResult)
		if len(results) != 1 {
			p.addf("%d results, want 1", len(results))
		} else {
			res := results[0]
			call := res.ToolCallID
			ev["tool_call_id"] = call
			var out workflows.Outcome
			b, _ := json.Marshal(res.Result.Output)
			if !res.Result.OK || json.Unmarshal(b, &out) != nil {
				p.addf("run_workflow answered ok=%t: %s", res.Result.OK, short(res.Result))
			} else {
				ev["workflow_id"], ev["status"], ev["waves"] = out.WorkflowID, out.Status, out.Waves
				p.expect(out.Status == workflows.StatusCompleted, "status %s, want completed", out.Status)
			}
			subs, wfs := l.subagents(), l.workflowEvents()
			ev["subagent_events"], ev["workflow_events"] = len(subs), len(wfs)
			p.expect(len(subs) >= 9 && len(wfs) >= 8, "%d subagent_events and %d workflow_events, want the lifecycle of 3 steps", len(subs), len(wfs))
			for _, s := range subs {
				p.expect(s.D.ParentToolCallID == call, "subagent_event %d names tool call %q, want %q", s.Seq, s.D.ParentToolCallID, call)
			}
			for _, w := range wfs {
				p.expect(w.D.ToolCallID == call, "workflow_event %d names tool call %q, want %q", w.Seq, w.D.ToolCallID, call)
			}
		}
	}
	c.add("run_workflow_runs_through_a_turn", "run_workflow called by the model in auto mode runs the steps; its events name the tool call", ev, dedupe(p)...)
}

// dedupe drops repeated problems (one per event would drown the first).
func dedupe(p problems) problems {
	var out problems
	for _, x := range p {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
