package workflows

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/tools"
)

// assemble builds a run's Outcome from its step runs' and loop runs'
// outcomes. It is a pure function of its arguments (it orders them
// itself), so the Outcome rebuilt from the Log (Rebuild) equals the one
// Run returned.
func assemble(w *Workflow, id string, steps []StepOutcome, loops []LoopOutcome, stoppedBy string, elapsedMS int64) Outcome {
	g := w.graph()
	sortRuns(g, steps)
	sortLoops(g, loops)
	markSuperseded(g, steps, loops)
	out := Outcome{
		Mode: "run", WorkflowID: id, Name: w.Name, StoppedBy: stoppedBy, Steps: steps, ElapsedMS: elapsedMS,
		Waves: [][]string{}, UsableCheckpoints: []string{}, PartialSteps: []string{}, FailedSteps: []string{},
		TimeoutSteps: []string{}, HeldSteps: []string{}, NeedsOrchestratorSteps: []string{}, SkippedSteps: []string{},
		Loops: nonNilLoops(loops), SeamObligations: []string{}, KnownLimitations: []string{},
		MergeConflictRisk: []MergeRisk{}, SafeNextActions: []NextAction{},
	}
	final, superseded := 0, 0
	for i := range steps {
		s := &steps[i]
		label := runName(s)
		if s.Wave > 0 {
			for len(out.Waves) < s.Wave {
				out.Waves = append(out.Waves, []string{})
			}
			out.Waves[s.Wave-1] = append(out.Waves[s.Wave-1], label)
		}
		if s.Usage != nil && s.ReusedFrom == "" {
			out.Usage = out.Usage.Add(*s.Usage)
		}
		if s.Superseded {
			superseded++
			continue
		}
		final++
		switch s.CheckpointStatus {
		case CheckpointReady:
			out.UsableCheckpoints = append(out.UsableCheckpoints, label)
		case CheckpointPartial:
			out.PartialSteps = append(out.PartialSteps, label)
		case CheckpointFailed:
			out.FailedSteps = append(out.FailedSteps, label)
		case CheckpointHeld:
			out.HeldSteps = append(out.HeldSteps, label)
		case CheckpointSkipped:
			out.SkippedSteps = append(out.SkippedSteps, label)
		case CheckpointNeedsOrchestrator:
			out.NeedsOrchestratorSteps = append(out.NeedsOrchestratorSteps, label)
			out.SeamObligations = append(out.SeamObligations, seamObligation(s))
		}
		if s.SubagentStatus == tools.SubagentTimedOut || s.Reason == StoppedTimeout {
			out.TimeoutSteps = append(out.TimeoutSteps, label)
		}
	}
	loopHolds := false
	for i := range loops {
		l := &loops[i]
		if !l.Unresolved() || l.Superseded {
			continue
		}
		for _, b := range l.Blockers {
			out.SeamObligations = append(out.SeamObligations, fmt.Sprintf("loop %s (%s): %s", l.Run, l.State, b))
		}
		if l.OnExhausted == Hold {
			loopHolds = true
			continue
		}
		limitation := fmt.Sprintf("loop %s ended %s after %d of %d iterations; its dependents proceeded with %s",
			l.Run, l.State, l.Iterations, l.MaxIterations, plural.Of(len(l.Blockers), "unresolved blocker", "unresolved blockers"))
		if len(l.Blockers) > 0 {
			limitation += ": " + strings.Join(l.Blockers, "; ")
		}
		out.KnownLimitations = append(out.KnownLimitations, limitation)
	}
	// The pairs at merge risk are counted, and the first named
	// (mergeRisks): a list of every pair grows with the square of the
	// writers. A count is bounded in time, so there is no error to meet.
	out.MergeConflictRisk, out.MergeConflictRiskCount, _ = mergeRisks(context.Background(), riskSteps(w.Steps), newOverlapCache(), maxListed)
	// Dispatch rounds are numbered across the run, and a round whose only
	// step failed to start still counts; keep no empty wave.
	out.Waves = slices.DeleteFunc(out.Waves, func(w []string) bool { return len(w) == 0 })
	out.Summary = Counts{
		Steps: len(steps), Waves: len(out.Waves), CheckpointReadySteps: len(out.UsableCheckpoints),
		PartialSteps: len(out.PartialSteps), FailedSteps: len(out.FailedSteps), HeldSteps: len(out.HeldSteps),
		NeedsOrchestratorSteps: len(out.NeedsOrchestratorSteps), SkippedSteps: len(out.SkippedSteps), SupersededRuns: superseded,
	}
	settled := len(out.UsableCheckpoints) + len(out.SkippedSteps)
	switch {
	case settled == final && !loopHolds && (len(out.UsableCheckpoints) > 0 || final == len(out.SkippedSteps)):
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

// runName is a run's label; outcomes from before runs had one are their
// step's.
func runName(s *StepOutcome) string {
	if s.Run != "" {
		return s.Run
	}
	return s.StepID
}

func nonNilLoops(ls []LoopOutcome) []LoopOutcome {
	if ls == nil {
		return []LoopOutcome{}
	}
	return ls
}

// runKey places a run among the others: the workflow's members in
// declaration order of their first step, a loop's iterations in order and
// within each its own members, then the instances of a fan-out. Runs read
// like the story of the run: plan#1, check-plan#1, plan#2, check-plan#2.
func runKey(g *graph, s *StepOutcome) []int {
	step, ok := g.index[s.StepID]
	if !ok {
		return []int{len(g.local)}
	}
	var key []int
	sc := 0
	chain := g.loopChain(step)
	for depth := 0; ; depth++ {
		m := g.memberIn(step, sc)
		key = append(key, g.localOf(m))
		if !isLoop(m) {
			break
		}
		l := loopOfMember(m)
		it := 0
		if depth < len(s.Iteration) && depth < len(chain) {
			it = s.Iteration[depth]
		}
		key = append(key, it)
		sc = g.scopeOf(l)
	}
	return append(key, s.Item)
}

func sortRuns(g *graph, steps []StepOutcome) {
	keys := make(map[*StepOutcome][]int, len(steps))
	for i := range steps {
		keys[&steps[i]] = runKey(g, &steps[i])
	}
	// Sort indices, then permute: keys are taken by address.
	idx := make([]int, len(steps))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return slices.Compare(keys[&steps[a]], keys[&steps[b]]) })
	sorted := make([]StepOutcome, len(steps))
	for k, i := range idx {
		sorted[k] = steps[i]
	}
	copy(steps, sorted)
}

// sortLoops orders loop runs as the runs are ordered (runKey): a loop
// where its first step's runs are, an enclosing loop before the loops it
// holds, each loop's runs in the order of the iterations that hold them.
func sortLoops(g *graph, loops []LoopOutcome) {
	key := func(l *LoopOutcome) []int {
		li, ok := g.loopIndex[l.Loop]
		if !ok {
			return []int{len(g.local)}
		}
		first := -1
		for s := range g.loopOf {
			if slices.Contains(g.loopChain(s), li) {
				first = s
				break
			}
		}
		outer := itersOf(l.Run)
		var k []int
		sc := 0
		for depth := 0; first >= 0; depth++ {
			m := g.memberIn(first, sc)
			k = append(k, g.localOf(m))
			if m == loopMember(li) || !isLoop(m) {
				break
			}
			it := 0
			if depth < len(outer) {
				it = outer[depth]
			}
			k = append(k, it)
			sc = g.scopeOf(loopOfMember(m))
		}
		return k
	}
	keys := make([][]int, len(loops))
	for i := range loops {
		keys[i] = key(&loops[i])
	}
	idx := make([]int, len(loops))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return slices.Compare(keys[a], keys[b]) })
	sorted := make([]LoopOutcome, len(loops))
	for k, i := range idx {
		sorted[k] = loops[i]
	}
	copy(loops, sorted)
}

// itersOf reads the iterations in a run's label (x#1.2[3] → 1, 2).
func itersOf(label string) []int {
	_, rest, ok := strings.Cut(label, "#")
	if !ok {
		return nil
	}
	rest, _, _ = strings.Cut(rest, "[")
	var out []int
	for part := range strings.SplitSeq(rest, ".") {
		n, _ := strconv.Atoi(part)
		out = append(out, n)
	}
	return out
}

// markSuperseded marks the runs of every iteration that is not its loop's
// last (at any level), and the loop runs inside such iterations.
func markSuperseded(g *graph, steps []StepOutcome, loops []LoopOutcome) {
	it := &Iterations{g: g, last: map[string]int{}}
	for i := range steps {
		if step, ok := g.index[steps[i].StepID]; ok {
			it.saw(g.loopChain(step), steps[i].Iteration)
		}
	}
	for i := range steps {
		steps[i].Superseded = it.superseded(steps[i].StepID, steps[i].Iteration)
	}
	for i := range loops {
		l := &loops[i]
		li, ok := g.loopIndex[l.Loop]
		if !ok {
			continue
		}
		l.Superseded = it.earlier(g.outerLoops(li), itersOf(l.Run))
	}
}

// Iterations are the last iterations a run's loops reached, each loop's
// by the iterations of the loops around it: a step run of an earlier
// iteration than its loop's last, at any level, is a run the outcome does
// not count among its steps (Superseded). The outcome finds them from its
// runs; the live view from the iterations as they start, so that a frame
// mid-run counts as the outcome will.
type Iterations struct {
	g    *graph
	w    *Workflow // for Runs; nil in markSuperseded
	last map[string]int
}

// NewIterations follows the loops of w, a checked workflow.
func NewIterations(w *Workflow) *Iterations {
	return &Iterations{g: w.graph(), w: w, last: map[string]int{}}
}

// Started records that iteration of loop began in its loop run labelled
// run (an iteration_started event's Loop, Run and Iteration).
func (it *Iterations) Started(loop, run string, iteration int) {
	li, ok := it.g.loopIndex[loop]
	if !ok {
		return
	}
	k := loopIterKey(li, itersOf(run))
	it.last[k] = max(it.last[k], iteration)
}

// IterationRun is a step run an iteration will have: its step and label.
type IterationRun struct{ Step, Run string }

// Runs are the step runs of an iteration of loop in its loop run labelled
// run, one for each step of the loop that no loop inside it holds (a
// fan-out's as one), labelled as the run labels them (draft#2), in
// declaration order.
func (it *Iterations) Runs(loop, run string, iteration int) []IterationRun {
	li, ok := it.g.loopIndex[loop]
	if !ok || it.w == nil {
		return nil
	}
	iters := strconv.Itoa(iteration)
	if outer := itersOf(run); len(outer) > 0 {
		iters = joinInts(outer) + "." + iters
	}
	var runs []IterationRun
	for s, l := range it.g.loopOf {
		if l == li {
			id := it.w.Steps[s].ID
			runs = append(runs, IterationRun{id, id + "#" + iters})
		}
	}
	return runs
}

// Steps are the steps a loop repeats, its inner loops' included, in
// declaration order.
func (it *Iterations) Steps(loop string) []string {
	li, ok := it.g.loopIndex[loop]
	if !ok || it.w == nil {
		return nil
	}
	var steps []string
	for s := range it.w.Steps {
		if slices.Contains(it.g.loopChain(s), li) {
			steps = append(steps, it.w.Steps[s].ID)
		}
	}
	return steps
}

// Superseded says whether the run of step labelled run (check-plan#1) is
// of an earlier iteration of one of its loops than the last recorded.
func (it *Iterations) Superseded(step, run string) bool {
	return it.superseded(step, itersOf(run))
}

func (it *Iterations) superseded(step string, iters []int) bool {
	s, ok := it.g.index[step]
	if !ok {
		return false
	}
	return it.earlier(it.g.loopChain(s), iters)
}

// saw records the iterations of a run in the loops of chain.
func (it *Iterations) saw(chain, iters []int) {
	for d, l := range chain {
		if d >= len(iters) {
			break
		}
		k := loopIterKey(l, iters[:d])
		it.last[k] = max(it.last[k], iters[d])
	}
}

func (it *Iterations) earlier(chain, iters []int) bool {
	for d, l := range chain {
		if d < len(iters) && iters[d] < it.last[loopIterKey(l, iters[:d])] {
			return true
		}
	}
	return false
}

func loopIterKey(loop int, outer []int) string { return strconv.Itoa(loop) + "#" + joinInts(outer) }

// outerLoops are the loops holding loop li, outermost first.
func (g *graph) outerLoops(li int) []int {
	var chain []int
	for p := g.loops[li].parent; p >= 0; p = g.loops[p].parent {
		chain = append(chain, p)
	}
	slices.Reverse(chain)
	return chain
}

// riskSteps are the steps whose write sets the merge risks pair: all but
// the fan-outs whose write sets depend on their items (boundWrites).
func riskSteps(steps []Step) []Step {
	if !slices.ContainsFunc(steps, func(s Step) bool { return boundWrites(&s) }) {
		return steps
	}
	return slices.DeleteFunc(slices.Clone(steps), func(s Step) bool { return boundWrites(&s) })
}

// boundWrites reports whether a writer's write set depends on its items:
// which files its instances write is known only as they run (they are
// serialized where they overlap), so it is left out of the merge risks,
// which pair the spec's writers.
func boundWrites(s *Step) bool {
	for _, p := range s.WriteSet {
		if strings.Contains(p, "${") {
			return true
		}
	}
	return false
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
	return runName(s) + ": " + strings.TrimSpace(text)
}

// holdingLoops are the loops that ended unresolved and hold their
// dependents (on_exhausted: hold), and the held runs that wait for
// nothing else.
func holdingLoops(o *Outcome) ([]*LoopOutcome, map[string]bool) {
	var loops []*LoopOutcome
	holding := map[string]bool{}
	for i := range o.Loops {
		if l := &o.Loops[i]; !l.Superseded && l.Unresolved() && l.OnExhausted != Proceed {
			loops = append(loops, l)
			holding["loop "+l.Run] = true
		}
	}
	held := map[string]bool{}
	if len(loops) == 0 {
		return nil, held
	}
	for k := range o.Steps {
		s := &o.Steps[k]
		if s.Superseded || s.CheckpointStatus != CheckpointHeld || s.HeldReason != HeldDependency || len(s.BlockedBy) == 0 {
			continue
		}
		if !slices.ContainsFunc(s.BlockedBy, func(b string) bool { return !holding[b] }) {
			held[runName(s)] = true
		}
	}
	return loops, held
}

// nextActions are the safe moves after an outcome that is not completed.
func nextActions(o *Outcome) []NextAction {
	acts := []NextAction{}
	if o.Status == StatusCompleted {
		return acts
	}
	resume := map[string]string{"resume_from": o.WorkflowID}
	if len(o.FailedSteps) > 0 {
		reason := "call run_workflow again with the same steps and resume_from: the checkpoint_ready steps are reused, only these (and what waits for them) run again"
		if o.StoppedBy == StoppedBudget {
			reason = "the budget was spent while the run went on (a step whose model call it refused failed): raise it (budget of run_workflow, or [budget] in config.toml), then " + reason
		}
		acts = append(acts, NextAction{Action: "retry_failed_steps", StepIDs: o.FailedSteps, Args: resume, Reason: reason})
	}
	loops, heldByLoops := holdingLoops(o)
	if held := slices.DeleteFunc(slices.Clone(o.HeldSteps), func(label string) bool { return heldByLoops[label] }); len(held) > 0 {
		reason := "these never started; they run in a resume_from run once the steps they wait for (blocked_by) are checkpoint_ready"
		if o.StoppedBy == StoppedBudget {
			reason = "the budget was spent before these started: raise it (budget of run_workflow, or [budget] in config.toml), then call run_workflow again with resume_from to run only what is left"
		}
		acts = append(acts, NextAction{Action: "rerun_held_steps", StepIDs: held, Args: resume, Reason: reason})
	}
	for _, l := range loops {
		// Resuming reuses the loop's iterations and ends it the same way:
		// what it holds runs only once the spec or the work changes.
		h := &HeldLoop{Run: l.Run, State: l.State, Iterations: l.Iterations, MaxIterations: l.MaxIterations}
		for k := range o.Steps {
			if s := &o.Steps[k]; heldByLoops[runName(s)] && slices.Contains(s.BlockedBy, "loop "+l.Run) {
				h.Holds = append(h.Holds, runName(s))
			}
		}
		acts = append(acts, NextAction{Action: "ask_user", Args: resume, Loop: h,
			Reason: h.Situation() + ": a resume_from run reuses its iterations and ends it the same way; " + h.Change() + ", then call run_workflow again with resume_from"})
	}
	if ask := append(slices.Clone(o.NeedsOrchestratorSteps), o.PartialSteps...); len(ask) > 0 {
		acts = append(acts, NextAction{Action: "ask_user", StepIDs: ask,
			Reason: "these steps need a decision (needs_orchestrator) or produced only partial evidence; settle them before building on them"})
	}
	acts = append(acts, mergeActions(o.Steps)...)
	acts = append(acts, NextAction{Action: "abort",
		Reason: "stop here and report " + o.What() + " as it is; isolated writers' changes that were not merged stay in their snapshots"})
	return acts
}

// What names a run that is not completed, as its abort action and pixir
// run's list of next steps say it: "this failed run", or "this partial
// outcome".
func (o *Outcome) What() string {
	if o.Status == StatusFailed {
		return "this failed run"
	}
	return "this partial outcome"
}

// planEntry shows one step run as an ACP plan entry: its run's label, its
// task's first line, and what became of it.
func planEntry(label, task string, running bool, out *StepOutcome) tools.PlanEntry {
	e := tools.PlanEntry{Content: label + ": " + firstLine(task), Priority: tools.PlanPriorityMedium, Status: tools.PlanPending}
	switch {
	case out != nil && out.CheckpointStatus == CheckpointHeld:
		e.Content += " — held (" + out.HeldReason + ")"
	case out != nil && out.CheckpointStatus == CheckpointSkipped:
		e.Status = tools.PlanCompleted
		e.Content += " — skipped"
	case out != nil:
		e.Status = tools.PlanCompleted
		e.Content += " — " + string(out.CheckpointStatus)
		if out.CheckpointStatus != CheckpointReady && out.SubagentStatus != tools.SubagentCompleted {
			e.Content += " (" + string(out.SubagentStatus) + ")"
		}
		if out.ReusedFrom != "" {
			e.Content += " (reused)"
		}
	case running:
		e.Status = tools.PlanInProgress
	}
	return e
}

// loopEntry shows a loop run as an ACP plan entry: iteration 2 of 3;
// converged; exhausted → proceeding with 2 blockers.
func loopEntry(l *LoopOutcome) tools.PlanEntry {
	e := tools.PlanEntry{Content: "loop " + l.Run + ": " + LoopStateText(l), Priority: tools.PlanPriorityMedium, Status: tools.PlanInProgress}
	if l.State != LoopRunning {
		e.Status = tools.PlanCompleted
	}
	return e
}

// LoopStateText says where a loop run is, for people: "iteration 2 of 3",
// "satisfied at iteration 2 of 3", "exhausted after 3 of 3 iterations →
// proceeding with 2 blockers".
func LoopStateText(l *LoopOutcome) string {
	switch l.State {
	case LoopRunning, LoopInterrupted:
		text := fmt.Sprintf("iteration %d of %d", l.Iterations, l.MaxIterations)
		if l.State == LoopInterrupted {
			text += ", interrupted"
		}
		return text
	case LoopSatisfied:
		return fmt.Sprintf("satisfied at iteration %d of %d", l.Iterations, l.MaxIterations)
	case LoopConverged, LoopExhausted:
		text := fmt.Sprintf("converged at iteration %d of %d", l.Iterations, l.MaxIterations)
		if l.State == LoopExhausted {
			text = fmt.Sprintf("exhausted after %d of %d iterations", l.Iterations, l.MaxIterations)
		}
		blockers := fmt.Sprintf("%d blocker", len(l.Blockers))
		if len(l.Blockers) != 1 {
			blockers += "s"
		}
		if l.OnExhausted == Proceed {
			return text + " → proceeding with " + blockers
		}
		return text + " → holding its dependents (" + blockers + ")"
	case LoopHeld:
		return fmt.Sprintf("held at iteration %d: nothing could start", l.Iterations)
	case LoopSkipped:
		return fmt.Sprintf("skipped at iteration %d", l.Iterations)
	case LoopStopped:
		if l.Iterations == 0 {
			return "stopped before it started"
		}
		return fmt.Sprintf("stopped at iteration %d of %d", l.Iterations, l.MaxIterations)
	}
	return string(l.State)
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
	final := c.Steps - c.SupersededRuns
	fmt.Fprintf(&b, " — %d of %s checkpoint_ready", c.CheckpointReadySteps, plural.Of(final, "step", "steps"))
	for _, part := range []struct {
		n    int
		what CheckpointStatus
	}{{c.PartialSteps, CheckpointPartial}, {c.NeedsOrchestratorSteps, CheckpointNeedsOrchestrator}, {c.FailedSteps, CheckpointFailed}, {c.HeldSteps, CheckpointHeld}, {c.SkippedSteps, CheckpointSkipped}} {
		if part.n > 0 {
			fmt.Fprintf(&b, ", %d %s", part.n, part.what)
		}
	}
	if c.SupersededRuns > 0 {
		fmt.Fprintf(&b, "; %s of earlier iterations", plural.Of(c.SupersededRuns, "run", "runs"))
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
		switch {
		case s.CheckpointStatus == CheckpointSkipped:
			summary = s.SkipReason
		case s.Error != nil && s.CheckpointStatus != CheckpointReady:
			summary = string(s.Error.Kind) + ": " + s.Error.Message
		}
		if s.Superseded {
			summary = "(earlier iteration) " + summary
		}
		checkpoint := string(s.CheckpointStatus)
		if merges {
			checkpoint += " | " + mergeCell(s.Merge)
		}
		tokens := "–"
		if s.Usage != nil {
			tokens = budget.Count(s.Usage.Tokens())
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", runName(&s), s.Agent, wave, s.SubagentStatus,
			checkpoint, seconds(s.ElapsedMS), tokens, cell(summary))
	}
	if hidden := len(o.Steps) - len(shown); hidden > 0 {
		gap := ""
		if merges {
			gap = " |"
		}
		// The table shows the runs that are not checkpoint_ready, skipped
		// or superseded first.
		fmt.Fprintf(&b, "| … | | | | |%s | | | %s (checkpoint_ready, skipped, or earlier iterations): see steps |\n", gap, plural.Of(hidden, "more step", "more steps"))
	}
	if len(o.Loops) > 0 {
		b.WriteString("\nLoops:\n")
		listed := min(len(o.Loops), maxRenderedLines)
		for i := range o.Loops[:listed] {
			l := &o.Loops[i]
			fmt.Fprintf(&b, "- %s: %s", l.Run, LoopStateText(l))
			if l.Superseded {
				b.WriteString(" (earlier iteration)")
			}
			if l.Unresolved() && len(l.Blockers) > 0 {
				fmt.Fprintf(&b, ": %s", cell(strings.Join(l.Blockers, "; ")))
			}
			b.WriteString("\n")
		}
		if more := len(o.Loops) - listed; more > 0 {
			fmt.Fprintf(&b, "- … and %s: see loops\n", plural.Of(more, "more loop run", "more loop runs"))
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
			fmt.Fprintf(&b, "; … and %s%s", atLeast(r.AtLeast), plural.Of(more, "more pair", "more pairs"))
		}
		b.WriteString("\n")
	}
	writeConflicts(&b, o.Steps)
	if o.Commit != nil {
		b.WriteString("\n" + CommitLines(o.Commit, nil)[0] + "\n")
	}
	if len(o.Commits) > 0 {
		b.WriteString("\n" + strings.Join(CommitLines(nil, o.Commits), "\n") + "\n")
	}
	if files := Uncommitted(o); len(files) > 0 {
		b.WriteString(UncommittedLine(files) + "\n")
	}
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

// UncommittedLine is an outcome's line naming the files its run left in
// the workspace uncommitted (Uncommitted), as the outcome and pixir
// inspect show it.
func UncommittedLine(files []string) string {
	listed := files[:min(len(files), maxRenderedLines)]
	line := fmt.Sprintf("In the workspace, not committed (%s the run changed): %s", plural.Of(len(files), "file", "files"), strings.Join(listed, ", "))
	if more := len(files) - len(listed); more > 0 {
		line += fmt.Sprintf(" … and %d more: see steps", more)
	}
	return line
}

// Uncommitted are, of a run whose commit (or one of its commits) was not
// made, the files its steps brought into the workspace, sorted: those
// the commit would have taken, and the changes of its shared writers
// that were not ready (partial work, which no commit takes). They are in
// the workspace all the same, uncommitted: the outcome names them, so a
// partial run does not leave the user to find its work with git status.
// None when every commit was made, or found its files committed already.
func Uncommitted(o *Outcome) []string {
	seen := map[string]bool{}
	for _, c := range o.Commits {
		if c.Status != Committed && !c.Unchanged {
			for _, p := range c.Files {
				seen[p] = true
			}
		}
	}
	if c := o.Commit; c != nil && c.Status != Committed && !c.Unchanged {
		for _, p := range c.Files {
			seen[p] = true
		}
	}
	if len(seen) == 0 && (o.Status == StatusCompleted || (o.Commit == nil && len(o.Commits) == 0)) {
		return nil
	}
	for i := range o.Steps {
		s := &o.Steps[i]
		if s.WorkspaceMode != Shared || s.Posture != Writer || s.CheckpointStatus == CheckpointReady || s.Changes == nil {
			continue
		}
		for _, p := range slices.Concat(s.Changes.Added, s.Changes.Changed, s.Changes.Deleted, s.Changes.Mode) {
			if p != ".pixir" && !strings.HasPrefix(p, ".pixir/") {
				seen[p] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
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
			st := steps[k].CheckpointStatus
			if fine := st == CheckpointReady || st == CheckpointSkipped || steps[k].Superseded; fine == (pass == 1) {
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
