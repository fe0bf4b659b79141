package workflows

import (
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

// Serialization records that a step (Conflict.Step) was runnable, its
// dependencies done, for Wave but was pushed later: by a conflict with a
// step of that wave, or because max_concurrency slots were full (Rule
// RuleMaxConcurrency, With empty). Each (step, with) pair is recorded once,
// at the first wave it held the step back.
type Serialization struct {
	Wave int `json:"wave"`
	Conflict
}

// DryRun is what run_workflow's dry run returns: the waves the scheduler
// would run if every step took the same time, and why it ordered them so.
type DryRun struct {
	MaxConcurrency int             `json:"max_concurrency"`
	FailurePolicy  FailurePolicy   `json:"failure_policy"`
	Waves          [][]string      `json:"waves"`
	Steps          []PlannedStep   `json:"steps"`
	Serialized     []Serialization `json:"serialized"`
	MergeRisks     []MergeRisk     `json:"merge_conflict_risk"`
	// Loops are the workflow's loops; MaxRuns the most step runs the
	// workflow can make (every loop to its bound, every fan-out to its
	// cap). Waves are those of the first iteration of every loop, each
	// fan-out counted as one run, every conditional step as if it ran.
	Loops   []PlannedLoop `json:"loops"`
	MaxRuns int           `json:"max_runs"`
}

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
func Waves(w *Workflow) (DryRun, error) {
	if err := Check(w); err != nil {
		return DryRun{}, err
	}
	return waves(w), nil
}

// waves is Waves of a checked workflow.
func waves(w *Workflow) DryRun {
	n := len(w.Steps)
	index := make(map[string]int, n)
	for i := range w.Steps {
		index[w.Steps[i].ID] = i
	}
	wave := make([]int, n) // 0: not started
	out := DryRun{
		MaxConcurrency: w.MaxConcurrency, FailurePolicy: w.FailurePolicy,
		Waves: [][]string{}, Serialized: []Serialization{}, MergeRisks: []MergeRisk{},
	}
	recorded := map[[2]string]bool{}
	overlap := memoOverlap()
	order := priorityOrder(w)
	// A step that depends on a loop's step waits for the whole loop (its
	// first iteration here): each loop's started steps and last wave.
	g := w.graph()
	loopStarted, loopLast := make([]int, len(g.loops)), make([]int, len(g.loops))
	for started := 0; started < n; {
		t := len(out.Waves) + 1
		var now []int
		for _, i := range order {
			if wave[i] != 0 || !depsDone(&w.Steps[i], index, wave, t) || !loopsDone(g, i, loopStarted, loopLast, t) {
				continue
			}
			s := &w.Steps[i]
			blocked := false
			for _, r := range now {
				if c, ok := conflicts(overlap, s, &w.Steps[r]); ok {
					blocked = true
					if key := [2]string{s.ID, c.With}; !recorded[key] {
						recorded[key] = true
						out.Serialized = append(out.Serialized, Serialization{Wave: t, Conflict: c})
					}
				}
			}
			if !blocked && len(now) >= w.MaxConcurrency {
				blocked = true
				if key := [2]string{s.ID, ""}; !recorded[key] {
					recorded[key] = true
					out.Serialized = append(out.Serialized, Serialization{Wave: t, Conflict: Conflict{
						Step: s.ID, Rule: RuleMaxConcurrency,
						Reason: fmt.Sprintf("%s was ready but all %d slots of max_concurrency were taken", s.ID, w.MaxConcurrency),
					}})
				}
			}
			if !blocked {
				now = append(now, i)
			}
		}
		if len(now) == 0 {
			// Unreachable for a checked (acyclic) workflow: some step with
			// all dependencies done always fits into an empty wave.
			panic(fmt.Sprintf("workflows: no step could start in wave %d of a checked workflow", t))
		}
		// A wave is a set: list it in declaration order, which people read.
		slices.Sort(now)
		ids := make([]string, len(now))
		for k, i := range now {
			wave[i] = t
			for l := g.loopOf[i]; l >= 0; l = g.loops[l].parent {
				loopStarted[l]++
				loopLast[l] = t
			}
			ids[k] = w.Steps[i].ID
		}
		out.Waves = append(out.Waves, ids)
		started += len(now)
	}
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
		if c := lp.Converge; c != nil {
			pl.Converge = c.Step + " " + c.Path
		}
		out.Loops = append(out.Loops, pl)
	}
	for i := range w.Steps {
		s := &w.Steps[i]
		ps := PlannedStep{
			ID: s.ID, Agent: s.Agent, Wave: wave[i], Posture: s.PermissionMode, WorkspaceMode: s.WorkspaceMode,
			DependsOn: nonNil(s.DependsOn), ReadSet: nonNil(s.ReadSet), WriteSet: []string{},
			When: conditionsText(s.When), MaxRuns: 1, Merge: w.MergePolicyOf(s),
		}
		if s.PermissionMode == Writer {
			ps.WriteSet = s.WriteSet // as written: a fan-out's bindings stay visible
		}
		if s.Join == JoinAny {
			ps.Join = JoinAny
		}
		if l := g.loopOf[i]; l >= 0 {
			ps.Loop = w.Loops[l].ID
		}
		for _, l := range g.loopChain(i) {
			ps.MaxRuns *= w.Loops[l].MaxIterations
		}
		if f := s.ForEach; f != nil {
			ps.ForEach, ps.MaxItems = f.Step+" "+f.Path, f.MaxItems
			ps.MaxRuns *= f.MaxItems
		}
		out.MaxRuns += ps.MaxRuns
		out.Steps = append(out.Steps, ps)
		for j := i + 1; j < n; j++ {
			if r, ok := mergeRisk(overlap, s, &w.Steps[j]); ok {
				out.MergeRisks = append(out.MergeRisks, r)
			}
		}
	}
	return out
}

// priorityOrder is the order in which the scheduler considers runnable
// steps: the longest chain of dependents first (critical path first, so a
// long tail does not start last), then declaration order. It is a pure
// function of the graph, so the dry run and the run agree.
func priorityOrder(w *Workflow) []int {
	n := len(w.Steps)
	index := make(map[string]int, n)
	for i := range w.Steps {
		index[w.Steps[i].ID] = i
	}
	dependents := make([][]int, n)
	for i := range w.Steps {
		for _, d := range w.Steps[i].DependsOn {
			dependents[index[d]] = append(dependents[index[d]], i)
		}
	}
	height := make([]int, n) // steps on the longest chain from i down
	var measure func(i int) int
	measure = func(i int) int {
		if height[i] == 0 {
			h := 0
			for _, d := range dependents[i] {
				h = max(h, measure(d))
			}
			height[i] = h + 1
		}
		return height[i]
	}
	order := make([]int, n)
	for i := range order {
		measure(i)
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return height[b] - height[a] })
	return order
}

// loopsDone reports whether every loop that step i's dependencies are in,
// and i is not, has run all its steps in waves before t.
func loopsDone(g *graph, i int, started, last []int, t int) bool {
	for _, d := range g.deps[i] {
		sc := g.commonScope(i, d)
		if m := g.memberIn(d, sc); isLoop(m) {
			l := loopOfMember(m)
			if started[l] < g.loops[l].size || last[l] >= t {
				return false
			}
		}
	}
	return true
}

// depsDone reports whether every dependency of s ran in a wave before t.
func depsDone(s *Step, index map[string]int, wave []int, t int) bool {
	for _, d := range s.DependsOn {
		if w := wave[index[d]]; w == 0 || w >= t {
			return false
		}
	}
	return true
}

// nonNil keeps empty lists as [] in JSON, which reads better than null.
func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
