package workflows

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// ConflictRule names the ADR 0012 rule that makes two steps unable to run
// at the same time.
type ConflictRule string

const (
	// RuleWriteOverlap: two writers whose write sets overlap serialize,
	// whatever their workspaces, because without merge-back the second
	// must see (or at least not race) the first's files.
	RuleWriteOverlap ConflictRule = "write_sets_overlap"
	// RuleSharedWriteRead: a writer in the shared workspace conflicts with
	// any other step whose read set overlaps its write set, since that step
	// would read files while they change (an isolated reader too: its
	// snapshot is taken from the live workspace).
	RuleSharedWriteRead ConflictRule = "shared_writer_read_overlap"
	// RuleMaxConcurrency is not a conflict between two steps: the step was
	// runnable but every slot was taken.
	RuleMaxConcurrency ConflictRule = "max_concurrency"
)

// Conflict says why two steps may not run at the same time: the rule and
// the pair of patterns that overlap (the first from Step, the second from
// With). For RuleMaxConcurrency, With and Patterns are empty.
type Conflict struct {
	Step     string       `json:"step"`
	With     string       `json:"with,omitempty"`
	Rule     ConflictRule `json:"rule"`
	Patterns []string     `json:"patterns,omitempty"`
	Reason   string       `json:"reason"`
}

// MergeRisk is a pair of writers, at least one isolated, whose write sets
// overlap. They are serialized, but an isolated writer's changes reach the
// workspace only when merged, so bringing both back into the workspace may
// conflict: the parent should know before it runs them.
type MergeRisk struct {
	Steps    []string `json:"steps"`
	Patterns []string `json:"patterns"`
	Reason   string   `json:"reason"`
}

// effectiveWrite is what a step may write: nothing for a read-only step,
// the whole workspace for a writer that named nothing.
func effectiveWrite(s *Step) []string {
	if s.PermissionMode != Writer {
		return nil
	}
	if len(s.WriteSet) == 0 {
		return []string{WholeWorkspace}
	}
	return unbound(s.WriteSet)
}

// effectiveRead is what a step may read: everything unless it said.
func effectiveRead(s *Step) []string {
	if len(s.ReadSet) == 0 {
		return []string{WholeWorkspace}
	}
	return unbound(s.ReadSet)
}

// unbound reads a fan-out's patterns before its items are known: an item
// binding (${item.files}) may be any path, so it counts as **.
func unbound(patterns []string) []string {
	for k, p := range patterns {
		if strings.Contains(p, "${") {
			out := slices.Clone(patterns[:k])
			for _, q := range patterns[k:] {
				out = append(out, bindingPattern().ReplaceAllString(q, "**"))
			}
			return out
		}
	}
	return patterns
}

// firstOverlap returns the first pair (in declaration order) of patterns
// from xs and ys that overlap.
func firstOverlap(overlap func(a, b string) bool, xs, ys []string) ([]string, bool) {
	for _, x := range xs {
		for _, y := range ys {
			if overlap(x, y) {
				return []string{x, y}, true
			}
		}
	}
	return nil, false
}

// Conflicts applies the conflict rules of ADR 0012 to two steps and says
// whether they must not run at the same time, and why. Read-only steps
// never conflict with each other; isolated writers never block readers
// (they mutate a snapshot). The result does not depend on the argument
// order except for which step is named first.
func Conflicts(a, b *Step) (Conflict, bool) { return conflicts(Overlap, a, b) }

func conflicts(overlap func(a, b string) bool, a, b *Step) (Conflict, bool) {
	wa, wb := effectiveWrite(a), effectiveWrite(b)
	if len(wa) > 0 && len(wb) > 0 {
		if p, ok := firstOverlap(overlap, wa, wb); ok {
			return Conflict{Step: a.ID, With: b.ID, Rule: RuleWriteOverlap, Patterns: p,
				Reason: fmt.Sprintf("both write: %s writes %q and %s writes %q, which overlap", a.ID, p[0], b.ID, p[1])}, true
		}
	}
	if a.WorkspaceMode == Shared && len(wa) > 0 {
		if p, ok := firstOverlap(overlap, wa, effectiveRead(b)); ok {
			return Conflict{Step: a.ID, With: b.ID, Rule: RuleSharedWriteRead, Patterns: p,
				Reason: fmt.Sprintf("%s writes %q in the shared workspace while %s reads %q", a.ID, p[0], b.ID, p[1])}, true
		}
	}
	if b.WorkspaceMode == Shared && len(wb) > 0 {
		if p, ok := firstOverlap(overlap, effectiveRead(a), wb); ok {
			return Conflict{Step: a.ID, With: b.ID, Rule: RuleSharedWriteRead, Patterns: p,
				Reason: fmt.Sprintf("%s reads %q while %s writes %q in the shared workspace", a.ID, p[0], b.ID, p[1])}, true
		}
	}
	return Conflict{}, false
}

// MergeRiskOf reports two writers, at least one of them isolated, whose
// write sets overlap.
func MergeRiskOf(a, b *Step) (MergeRisk, bool) { return mergeRisk(Overlap, a, b) }

func mergeRisk(overlap func(a, b string) bool, a, b *Step) (MergeRisk, bool) {
	wa, wb := effectiveWrite(a), effectiveWrite(b)
	if len(wa) == 0 || len(wb) == 0 || (a.WorkspaceMode != Isolated && b.WorkspaceMode != Isolated) {
		return MergeRisk{}, false
	}
	p, ok := firstOverlap(overlap, wa, wb)
	if !ok {
		return MergeRisk{}, false
	}
	return MergeRisk{Steps: []string{a.ID, b.ID}, Patterns: p,
		Reason: fmt.Sprintf("%s writes %q and %s writes %q, which overlap; they run one after the other, and unless the first is merged (merge: on_ready) before the second starts, merging both back may conflict", a.ID, p[0], b.ID, p[1])}, true
}

// PlannedStep is one step as the dry run will run it.
type PlannedStep struct {
	ID            string         `json:"id"`
	Agent         string         `json:"agent,omitempty"`
	Wave          int            `json:"wave"` // 1-based
	Posture       PermissionMode `json:"posture"`
	WorkspaceMode WorkspaceMode  `json:"workspace_mode"`
	DependsOn     []string       `json:"depends_on"`
	ReadSet       []string       `json:"read_set"`
	WriteSet      []string       `json:"write_set"`
	// AgentWriteSet is the write set of the step's agent, when it has
	// one: a writer may change only a file that matches both.
	AgentWriteSet []string `json:"agent_write_set,omitempty"`
	// Loop is the innermost loop the step repeats in.
	Loop string `json:"loop,omitempty"`
	// When is the step's condition as text; Join is any when it is.
	When string   `json:"when,omitempty"`
	Join JoinMode `json:"join,omitempty"`
	// ForEach says what the step fans out over: "split /tasks".
	ForEach  string `json:"for_each,omitempty"`
	MaxItems int    `json:"max_items,omitempty"`
	// MaxRuns is the most runs of the step: the product of its loops'
	// max_iterations and its fan-out's cap.
	MaxRuns int `json:"max_runs"`
	// Merge is an isolated writer's merge policy.
	Merge MergePolicy `json:"merge,omitempty"`
	// Verify are the step's verify entries as text, each with the
	// payload values it applies to when it has a when.
	Verify []string `json:"verify,omitempty"`
}

// PlannedLoop is a loop as the dry run shows it.
type PlannedLoop struct {
	ID            string           `json:"id"`
	Steps         []string         `json:"steps"`
	Within        string           `json:"within,omitempty"` // the enclosing loop
	MaxIterations int              `json:"max_iterations"`
	Until         string           `json:"until"`
	Converge      string           `json:"converge,omitempty"`
	OnExhausted   ExhaustionPolicy `json:"on_exhausted"`
}

// Serialization records that a step (Conflict.Step) of wave Wave, its
// dependencies done, would not start with them: it runs after a step it
// conflicts with (With, of wave WithWave: the first such step), or waits
// for a slot because every max_concurrency one was taken (Rule
// RuleMaxConcurrency, With empty). A wave is a dependency level; being
// held back does not move a step to a later wave. Each step held back is
// recorded once.
type Serialization struct {
	Wave int `json:"wave"`
	// WithWave is the wave of With, the step it runs after (0 when it
	// waits for a slot).
	WithWave int `json:"with_wave,omitempty"`
	Conflict
	// tick is when, every step taking the same time, it became ready
	// (for the tests of the scheduler).
	tick int
}

// DryRun is what run_workflow's dry run returns: the waves (dependency
// levels: a step's wave is 1 + the largest wave of what it waits for, as
// in a run) and which steps the scheduler holds back behind others.
//
// Its size is bounded whatever the workflow: Serialized and MergeRisks name
// the first maxListed (Summary and MergeRiskCount count them all), and the
// dry run a model reads (Prepared.DryRun) lists the first maxListedSteps
// steps and step placements of the waves. Truncated says what a list leaves
// out. Nothing is lost: a plan is a pure function of its spec, which is in
// the Log, and Waves gives the whole of it.
type DryRun struct {
	MaxConcurrency int           `json:"max_concurrency"`
	FailurePolicy  FailurePolicy `json:"failure_policy"`
	Waves          [][]string    `json:"waves"`
	Steps          []PlannedStep `json:"steps"`
	// Serialized names the first steps held back (Summary counts them).
	Serialized []Serialization `json:"serialized"`
	// MergeRisks names the first pairs of writers at merge risk;
	// MergeRiskCount counts them.
	MergeRisks     []MergeRisk `json:"merge_conflict_risk"`
	MergeRiskCount RiskCount   `json:"merge_conflict_risk_count"`
	// Loops are the workflow's loops; MaxRuns the most step runs the
	// workflow can make (every loop to its bound, every fan-out to its
	// cap). Waves are those of the first iteration of every loop, each
	// fan-out counted as one run, every conditional step as if it ran.
	Loops   []PlannedLoop `json:"loops"`
	MaxRuns int           `json:"max_runs"`
	// Summary counts the whole plan, whatever the lists leave out.
	Summary PlanSummary `json:"summary"`
	// Incomplete, when set, says why the plan stops before its last wave
	// (maxPlanWork) and what that means.
	Incomplete string `json:"incomplete,omitempty"`
	// Truncated is set when a list above leaves something out.
	Truncated *Truncation `json:"truncated,omitempty"`

	// order is what the scheduler starts together when every step takes
	// the same time, tick by tick: how the tests see its choices.
	order [][]string
}

// PlanSummary counts a dry run's plan.
type PlanSummary struct {
	Steps int `json:"steps"`
	Waves int `json:"waves"`
	// SerializedSteps counts the steps held back behind another of
	// their wave, or for a slot (Serialized names the first).
	SerializedSteps int `json:"serialized_steps"`
	// UnplacedSteps counts the steps an incomplete plan did not reach in
	// its search for held-back steps (their waves are exact).
	UnplacedSteps int `json:"unplaced_steps,omitempty"`
}

// Truncation says how much of each list a result leaves out, and where
// the rest is.
type Truncation struct {
	Waves      int    `json:"waves,omitempty"` // waves not listed, or not in full
	Steps      int    `json:"steps,omitempty"`
	Serialized int    `json:"serialized,omitempty"`
	MergeRisks int    `json:"merge_conflict_risk,omitempty"`
	Note       string `json:"note"`
}

// maxPlanWork bounds the work of one dry run: the profiles the scheduler
// looks at, and the pattern overlaps searched, each worth
// overlapSearchCost looks. Workflows of distinct sets that mostly conflict
// (thousands of writers of "**/a1.go", "**/a2.go", …) cost the square of
// their steps to plan; a dry run, allowed in every mode without asking,
// must not: at most about a second of planning, whatever the input. The
// 10,000 steps of BenchmarkDryRun10000 use a quarter of it.
var maxPlanWork = 1 << 22 // a variable for the tests

const overlapSearchCost = 16

// dryRunNote is Truncation.Note of a dry run.
const dryRunNote = "lists are cut to keep the result bounded; the counts are whole. The plan is a pure function of the spec: " +
	"dry-run a part of the workflow to see the rest of its lists"

// Waves validates w and simulates the greedy deterministic scheduler with
// every step taking one unit of time: at each tick the steps whose
// dependencies are all done are considered in priority order (critical
// path first, then declaration order: priorityOrder), and each
// starts if a slot is free and it conflicts with no step already started in
// this tick (with equal durations, those are exactly the running steps).
// The real scheduler is event-driven; with equal durations it makes the
// same choices, so these waves are what a dry run can honestly promise.
// w is checked first (Check: a workflow that already passed is not
// validated again); an invalid w yields the *tools.Failure of Validate.
// Waves and Steps are whole; Serialized and MergeRisks are the first
// maxListed.
func Waves(w *Workflow) (DryRun, error) {
	if err := Check(w); err != nil {
		return DryRun{}, err
	}
	return waves(context.Background(), w)
}

// waves is Waves of a checked workflow: the real scheduler driven one tick
// at a time, every step of a wave ending before the next. It stops with
// ctx's error when ctx ends.
func waves(ctx context.Context, w *Workflow) (DryRun, error) {
	n := len(w.Steps)
	g := w.graph()
	patterns := newOverlapCache()
	s := newScheduler(w, patterns)
	s.track = true // which steps become runnable, for the held-back ones
	out := DryRun{
		MaxConcurrency: w.MaxConcurrency, FailurePolicy: w.FailurePolicy,
		Waves: [][]string{}, Serialized: []Serialization{},
	}
	wave := g.levels(n)
	started := make([]bool, n)
	var ready []int // the steps that became runnable at this tick
	for i := range w.Steps {
		if s.unmet[i] == 0 {
			ready = append(ready, i)
		}
	}
	blockedAt := make([]int, s.index.profiles()) // the last wave a profile was blocked in
	blockedBy := make([]int, s.index.profiles())
	var held []int
	for tick, placedSteps := 0, 0; placedSteps < n; {
		if err := ctx.Err(); err != nil {
			return DryRun{}, err
		}
		if work := s.examined + overlapSearchCost*patterns.searches; work > maxPlanWork {
			out.Incomplete = fmt.Sprintf("the search for held-back steps stopped after %d of %d steps: their read and write sets conflict in too many distinct ways "+
				"to order them all in bounded time; the waves are exact, but the %d steps not yet reached may be held back behind others of their wave",
				placedSteps, n, n-placedSteps)
			out.Summary.UnplacedSteps = n - placedSteps
			break
		}
		tick++
		t := tick
		now := s.next()
		if len(now) == 0 {
			// Unreachable for a checked (acyclic) workflow: some step with
			// all dependencies done always fits into an empty wave.
			panic(fmt.Sprintf("workflows: no step could start in wave %d of a checked workflow", t))
		}
		for _, b := range s.blocked {
			blockedAt[b.id], blockedBy[b.id] = t, b.by
		}
		for _, i := range now {
			started[i] = true
		}
		// The steps that became runnable for this tick and did not start.
		held = held[:0]
		for _, i := range ready {
			if !started[i] {
				held = append(held, i)
			}
		}
		out.Summary.SerializedSteps += len(held)
		if room := maxListed - len(out.Serialized); room > 0 && len(held) > 0 {
			slices.SortFunc(held, func(a, b int) int { return s.rank[a] - s.rank[b] }) // the order next looked at them
			for _, i := range held[:min(room, len(held))] {
				out.Serialized = append(out.Serialized, s.heldBack(i, t, blockedAt, blockedBy, wave))
			}
		}
		// The scheduler's order with equal durations, for the tests of
		// the scheduler; listed in declaration order.
		names := make([]string, len(now))
		for k, i := range slices.Sorted(slices.Values(now)) {
			names[k] = w.Steps[i].ID
		}
		out.order = append(out.order, names)
		placedSteps += len(now)
		// Every step of the wave ends before the next one.
		for _, i := range now {
			s.finish(i, true)
		}
		ready = s.takeBecame()
	}
	// A wave is a dependency level, listed in declaration order, which
	// people read.
	for i := range w.Steps {
		for len(out.Waves) < wave[i] {
			out.Waves = append(out.Waves, []string{})
		}
		out.Waves[wave[i]-1] = append(out.Waves[wave[i]-1], w.Steps[i].ID)
	}
	out.Summary.Steps, out.Summary.Waves = n, len(out.Waves)
	out.Loops = []PlannedLoop{}
	for l := range w.Loops {
		lp := &w.Loops[l]
		pl := PlannedLoop{ID: lp.ID, Steps: lp.Steps, MaxIterations: lp.MaxIterations, OnExhausted: lp.OnExhausted,
			Until: "every step of the iteration that ran is checkpoint_ready"}
		if p := g.loops[l].parent; p >= 0 {
			pl.Within = w.Loops[p].ID
		}
		if len(lp.Until) > 0 {
			pl.Until = conditionsText(lp.Until)
		}
		pl.Converge = lp.Converge.text()
		out.Loops = append(out.Loops, pl)
	}
	out.Steps = make([]PlannedStep, n)
	for i := range w.Steps {
		st := &w.Steps[i]
		ps := PlannedStep{
			ID: st.ID, Agent: st.Agent, Wave: wave[i], Posture: st.PermissionMode, WorkspaceMode: st.WorkspaceMode,
			DependsOn: nonNil(st.DependsOn), ReadSet: nonNil(st.ReadSet), WriteSet: []string{},
			When: conditionsText(st.When), MaxRuns: 1, Merge: w.MergePolicyOf(st),
		}
		for _, c := range st.Verify {
			ps.Verify = append(ps.Verify, plannedVerify(c))
		}
		if g.perInstance[i] {
			ps.When += " (each instance against the same item's " + strings.Join(g.pairedNames(w, i), ", ") + ")"
		}
		if st.PermissionMode == Writer {
			ps.WriteSet = st.WriteSet // as written: a fan-out's bindings stay visible
		}
		if st.Join == JoinAny {
			ps.Join = JoinAny
		}
		if l := g.loopOf[i]; l >= 0 {
			ps.Loop = w.Loops[l].ID
		}
		for _, l := range g.loopChain(i) {
			ps.MaxRuns *= w.Loops[l].MaxIterations
		}
		if f := st.ForEach; f != nil {
			ps.ForEach, ps.MaxItems = f.Step+" "+f.Path, f.MaxItems
			ps.MaxRuns *= f.MaxItems
		}
		out.MaxRuns += ps.MaxRuns
		out.Steps[i] = ps
	}
	var err error
	if out.MergeRisks, out.MergeRiskCount, err = mergeRisks(ctx, riskSteps(w.Steps), patterns, maxListed); err != nil {
		return DryRun{}, err
	}
	out.truncate(len(out.Serialized), len(out.MergeRisks))
	return out, nil
}

// heldBack says why step i, runnable at tick t of the simulation, did not
// start then; the Serialization is placed at i's wave.
func (s *scheduler) heldBack(i, t int, blockedAt, blockedBy, wave []int) Serialization {
	st := &s.w.Steps[i]
	q := s.profile[i]
	by, blocked := blockedBy[q], blockedAt[q] == t
	if !blocked {
		// next stopped before it looked at i's profile (the slots were
		// full), or i waited behind a step of its own profile that
		// started: it is held back by a conflict with the wave if it has
		// one, by max_concurrency otherwise.
		by, blocked = s.conflictsWithRunning(q)
	}
	if blocked {
		if c, ok := conflicts(s.index.patterns.overlap, st, &s.w.Steps[by]); ok {
			return Serialization{Wave: wave[i], WithWave: wave[by], Conflict: c, tick: t}
		}
	}
	return Serialization{Wave: wave[i], tick: t, Conflict: Conflict{
		Step: st.ID, Rule: RuleMaxConcurrency,
		Reason: fmt.Sprintf("%s was ready but all %d slots of max_concurrency were taken", st.ID, s.w.MaxConcurrency),
	}}
}

// truncate records what the lists leave out, given how many of the
// serialized steps and merge risks are listed.
func (d *DryRun) truncate(serialized, risks int) {
	t := Truncation{Serialized: d.Summary.SerializedSteps - serialized, MergeRisks: d.MergeRiskCount.Pairs - risks}
	_, t.Waves = cutWaves(d.Waves, maxListedSteps)
	t.Steps = max(0, len(d.Steps)-maxListedSteps)
	if t == (Truncation{}) {
		d.Truncated = nil
		return
	}
	t.Note = dryRunNote
	d.Truncated = &t
}

// bounded is d with its lists cut as Truncated says.
func (d DryRun) bounded() DryRun {
	if d.Truncated == nil {
		return d
	}
	d.Waves, _ = cutWaves(d.Waves, maxListedSteps)
	d.Steps = d.Steps[:min(len(d.Steps), maxListedSteps)]
	return d
}

// priorityOrder is the order in which the scheduler considers runnable
// steps: the longest chain of dependents first (critical path first, so a
// long tail does not start last), then declaration order. A step in a
// loop counts as many times as its loops may run it (each iteration runs
// the body again), and a loop's steps have behind them everything that
// waits for the loop's end. A chain is measured in steps, or with
// estimates (estimate.go) in expected time. It is a pure function of the
// spec, so the dry run and the run agree.
func priorityOrder(w *Workflow) []int {
	n := len(w.Steps)
	height := make([]int64, n)
	newHeightPlan(w).eval(staticWeights(w), height, make([]int64, len(w.Loops)))
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(height[b], height[a]) })
	return order
}

// nonNil keeps empty lists as [] in JSON, which reads better than null.
func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// levels is each step's wave: its dependency level. A member of a scope
// (the workflow, a loop's body) waits for the members it depends on and
// for what its scope waited for; a step's wave is one more than the
// largest wave of those, a loop ends at the largest wave of its steps.
// The real run numbers its runs the same way (runsched.go), so the
// dry run's waves are the first iteration's and instance's of a run.
func (g *graph) levels(n int) []int {
	wave := make([]int, n)
	var walk func(sc, base int) int
	walk = func(sc, base int) int {
		scope := &g.scopes[sc]
		end := make([]int, len(scope.members)) // 0: not yet walked
		var endOf func(k int) int
		endOf = func(k int) int {
			if end[k] > 0 {
				return end[k]
			}
			b := base
			for _, d := range scope.deps[k] {
				b = max(b, endOf(d))
			}
			if m := scope.members[k]; isLoop(m) {
				end[k] = max(b, walk(g.scopeOf(loopOfMember(m)), b))
			} else {
				wave[m] = b + 1
				end[k] = b + 1
			}
			return end[k]
		}
		last := base
		for k := range scope.members {
			last = max(last, endOf(k))
		}
		return last
	}
	walk(0, 0)
	return wave
}

// plannedVerify is a verify entry as the dry run shows it.
func plannedVerify(c Verify) string {
	text := verifyText(c)
	if len(c.When) > 0 {
		text += ", only when the payload has " + conditionsText(c.When)
	}
	return text
}
