package workflows

import (
	"encoding/json"
	"slices"
	"strings"
)

// graph is a checked workflow's structure, compiled once (Check): step
// indices and dependency edges, the loops as a tree of scopes whose
// members (steps and inner loops) form a DAG of their own, the compiled
// conditions and fan-outs. The scheduler, the dry run, Rebuild and
// resume_from read it; nothing changes it.
type graph struct {
	index      map[string]int // step id -> index
	deps       [][]int        // each step's dependencies
	dependents [][]int
	rank       []int // position in priorityOrder

	loops     []loopNode
	loopIndex map[string]int
	loopOf    []int // each step's innermost loop, -1 outside every loop
	// scopes[0] is the workflow; scopes[l+1] is loop l's body.
	scopes []scopeNode
	// local is each member's position in its scope's members: steps at
	// their index, loops at len(steps)+loop.
	local []int

	when      [][]cond // each step's conditions (all must hold)
	tolerated [][]bool // per step, per dependency (as deps): its not-ready status is tested
	fan       []*fanOut
	// paired, per step, per dependency (as deps): the dependency is a
	// fan-out over the same items that the step's condition tests, so each
	// instance is gated on, and tests, the dependency's instance of its
	// own item (write-tests[2] → test-review[2]).
	paired [][]bool
	// perInstance: the step is a fan-out whose condition tests a fan-out
	// over the same items; it is decided per instance, each against the
	// paired instance's checkpoint.
	perInstance []bool
	until       [][]cond // each loop's until
}

// loopNode is one loop of the tree.
type loopNode struct {
	def    *Loop
	parent int // enclosing loop, -1 for none
	depth  int // 1 for a loop in no loop
	size   int // steps at any depth
	// converge are the step and pointer of each convergence value.
	converge []convergeValue
}

// convergeValue is one value of a loop's converge, compiled.
type convergeValue struct {
	step int
	path []string
	text string // check-plan /findings
	// blocks: its items are the loop's blockers when it ends unresolved.
	// With several values, only those of steps the until names: a
	// reviewer the until does not wait for is advisory.
	blocks bool
}

// scopeNode is the body of a loop (or the workflow): its direct members
// and the dependency edges between them.
type scopeNode struct {
	loop       int   // -1 for the workflow
	members    []int // member ids: a step's index, or loopMember(l)
	deps       [][]int
	dependents [][]int
	// paired, per member, per dependent (as dependents): every edge from
	// the dependent (or the steps inside it) to the member is a paired
	// one (graph.paired), so the dependent is gated once the member's
	// instances are made, not once they are all decided: each of its
	// instances waits only for its own item's (write-tests[1] → make[1]
	// while write-tests[3] still runs).
	paired [][]bool
}

// fanOut is a step's compiled for_each.
type fanOut struct {
	source   int
	path     []string
	maxItems int
}

// loopMember encodes loop l as a member id; isLoop and loopOfMember
// decode it.
func loopMember(l int) int         { return -l - 1 }
func isLoop(m int) bool            { return m < 0 }
func loopOfMember(m int) int       { return -m - 1 }
func (g *graph) scopeOf(l int) int { return l + 1 }

// localOf is a member's position in its scope.
func (g *graph) localOf(m int) int {
	if isLoop(m) {
		return g.local[len(g.deps)+loopOfMember(m)]
	}
	return g.local[m]
}

// memberIn is the member of scope sc that holds step s (s itself, or the
// loop directly in sc that holds it); s must be inside sc.
func (g *graph) memberIn(s, sc int) int {
	l := g.loopOf[s]
	if l == g.scopes[sc].loop {
		return s
	}
	for g.loops[l].parent != g.scopes[sc].loop {
		l = g.loops[l].parent
	}
	return loopMember(l)
}

// inScope reports whether step s is inside scope sc (at any depth).
func (g *graph) inScope(s, sc int) bool {
	want := g.scopes[sc].loop
	if want < 0 {
		return true
	}
	for l := g.loopOf[s]; l >= 0; l = g.loops[l].parent {
		if l == want {
			return true
		}
	}
	return false
}

// loopChain is the loops holding step s, outermost first.
func (g *graph) loopChain(s int) []int {
	var chain []int
	for l := g.loopOf[s]; l >= 0; l = g.loops[l].parent {
		chain = append(chain, l)
	}
	slices.Reverse(chain)
	return chain
}

// nestLoops arranges loops into a tree: each loop's parent is the
// smallest loop that holds all its steps. It returns each loop's parent
// and each step's innermost loop, and reports loops that overlap without
// one holding the other, or that are the same group twice. Unknown step
// ids in a loop are skipped (Validate reports them). It is linear in the
// loops' sizes.
func nestLoops(loops []Loop, index map[string]int, n int, report func(l int, code, format string, args ...any)) (parent, loopOf []int) {
	parent = make([]int, len(loops))
	loopOf = make([]int, n)
	for i := range loopOf {
		loopOf[i] = -1
	}
	members := make([][]int, len(loops))
	for l := range loops {
		seen := map[int]bool{}
		for _, id := range loops[l].Steps {
			if s, ok := index[id]; ok && !seen[s] {
				seen[s] = true
				members[l] = append(members[l], s)
			}
		}
	}
	order := make([]int, len(loops))
	for i := range order {
		order[i] = i
	}
	// Larger loops first, so a loop's parent is placed before it.
	slices.SortStableFunc(order, func(a, b int) int { return len(members[b]) - len(members[a]) })
	size := func(l int) int {
		if l < 0 {
			return -1
		}
		return len(members[l])
	}
	for _, l := range order {
		parent[l] = -1
		if len(members[l]) == 0 {
			continue
		}
		p := loopOf[members[l][0]]
		ok := true
		for _, s := range members[l][1:] {
			if loopOf[s] != p {
				ok = false
				break
			}
		}
		switch {
		case !ok:
			var others []string
			seen := map[int]bool{}
			for _, s := range members[l] {
				if q := loopOf[s]; q >= 0 && !seen[q] {
					seen[q] = true
					others = append(others, loops[q].ID)
				}
			}
			report(l, "loop_overlap", "its steps are partly in loop %s; loops must be disjoint, or one must hold all the steps of the other", strings.Join(others, ", "))
			continue
		case p >= 0 && size(p) == len(members[l]):
			report(l, "loop_overlap", "it has the same steps as loop %q; give the group one loop", loops[p].ID)
			continue
		}
		parent[l] = p
		for _, s := range members[l] {
			loopOf[s] = l
		}
	}
	return parent, loopOf
}

// compileGraph builds the graph of a normalised workflow that passed
// Validate.
func compileGraph(w *Workflow) *graph {
	n := len(w.Steps)
	g := &graph{index: make(map[string]int, n), deps: make([][]int, n), dependents: make([][]int, n), loopIndex: map[string]int{}}
	for i := range w.Steps {
		g.index[w.Steps[i].ID] = i
	}
	for i := range w.Steps {
		for _, d := range w.Steps[i].DependsOn {
			j := g.index[d]
			g.deps[i] = append(g.deps[i], j)
			g.dependents[j] = append(g.dependents[j], i)
		}
	}
	g.rank = make([]int, n)
	for r, i := range priorityOrder(w) {
		g.rank[i] = r
	}
	parent, loopOf := nestLoops(w.Loops, g.index, n, func(int, string, string, ...any) {})
	g.loopOf = loopOf
	g.loops = make([]loopNode, len(w.Loops))
	for l := range w.Loops {
		g.loopIndex[w.Loops[l].ID] = l
		g.loops[l] = loopNode{def: &w.Loops[l], parent: parent[l]}
	}
	for l := range g.loops {
		d := 1
		for p := g.loops[l].parent; p >= 0; p = g.loops[p].parent {
			d++
		}
		g.loops[l].depth = d
	}
	for s := range n {
		for l := loopOf[s]; l >= 0; l = g.loops[l].parent {
			g.loops[l].size++
		}
	}
	// Scopes and their members, in declaration order of their first step.
	g.scopes = make([]scopeNode, len(w.Loops)+1)
	g.scopes[0].loop = -1
	for l := range w.Loops {
		g.scopes[l+1].loop = l
	}
	g.local = make([]int, n+len(w.Loops))
	placed := make([]bool, len(w.Loops))
	for s := range n {
		// s is a direct member of its innermost loop's scope; each loop
		// on its chain not yet placed is a member of its parent's scope.
		chain := g.loopChain(s)
		for _, l := range chain {
			if !placed[l] {
				placed[l] = true
				sc := g.scopeOf(g.loops[l].parent)
				g.local[n+l] = len(g.scopes[sc].members)
				g.scopes[sc].members = append(g.scopes[sc].members, loopMember(l))
			}
		}
		sc := g.scopeOf(loopOf[s])
		g.local[s] = len(g.scopes[sc].members)
		g.scopes[sc].members = append(g.scopes[sc].members, s)
	}
	for sc := range g.scopes {
		m := len(g.scopes[sc].members)
		g.scopes[sc].deps, g.scopes[sc].dependents = make([][]int, m), make([][]int, m)
	}
	for s := range n {
		for _, d := range g.deps[s] {
			sc := g.commonScope(s, d)
			a, b := g.localOf(g.memberIn(s, sc)), g.localOf(g.memberIn(d, sc))
			if a == b || slices.Contains(g.scopes[sc].deps[a], b) {
				continue
			}
			g.scopes[sc].deps[a] = append(g.scopes[sc].deps[a], b)
			g.scopes[sc].dependents[b] = append(g.scopes[sc].dependents[b], a)
		}
	}
	// Conditions, fan-outs, loops' until and converge.
	g.when = make([][]cond, n)
	g.tolerated = make([][]bool, n)
	g.fan = make([]*fanOut, n)
	for s := range w.Steps {
		st := &w.Steps[s]
		g.when[s] = g.compileConds(st.When)
		g.tolerated[s] = make([]bool, len(g.deps[s]))
		for k, d := range g.deps[s] {
			g.tolerated[s][k] = tolerates(g.when[s], d, false)
		}
		if f := st.ForEach; f != nil {
			tokens, _ := parsePointer(f.Path)
			g.fan[s] = &fanOut{source: g.index[f.Step], path: tokens, maxItems: f.MaxItems}
		}
	}
	g.paired = make([][]bool, n)
	g.perInstance = make([]bool, n)
	for s := range w.Steps {
		g.paired[s] = make([]bool, len(g.deps[s]))
		g.perInstance[s] = g.fan[s] != nil && g.testsPaired(s, g.when[s])
		if w.Steps[s].Join == JoinAny {
			continue // a join of alternatives waits for the steps as wholes
		}
		for k, d := range g.deps[s] {
			g.paired[s][k] = g.pairs(s, d) && names(g.when[s], d)
		}
	}
	g.pairScopeEdges()
	g.until = make([][]cond, len(w.Loops))
	for l := range w.Loops {
		g.until[l] = g.compileConds(w.Loops[l].Until)
		conv := w.Loops[l].Converge
		named := map[string]bool{}
		namedSteps(w.Loops[l].Until, named)
		for _, c := range conv {
			path, _ := parsePointer(c.Path)
			blocks := len(conv) == 1 || len(w.Loops[l].Until) == 0 || named[c.Step]
			g.loops[l].converge = append(g.loops[l].converge, convergeValue{step: g.index[c.Step], path: path, text: c.text(), blocks: blocks})
		}
	}
	return g
}

// pairScopeEdges marks the scope edges made of paired edges alone: from
// a member to a fan-out step of the same scope that every step behind the
// edge pairs with (and tests per instance). Any other edge into the
// member (an unpaired dependency, a join of alternatives, a fan-out
// inside a loop) keeps the edge a join: it waits for every instance.
func (g *graph) pairScopeEdges() {
	type edge struct{ sc, a, b int }
	joins := map[edge]bool{}
	for s := range g.deps {
		for k, d := range g.deps[s] {
			sc := g.commonScope(s, d)
			a, b := g.localOf(g.memberIn(s, sc)), g.localOf(g.memberIn(d, sc))
			if a != b && (!g.paired[s][k] || g.memberIn(d, sc) != d) {
				joins[edge{sc, a, b}] = true
			}
		}
	}
	for sc := range g.scopes {
		node := &g.scopes[sc]
		node.paired = make([][]bool, len(node.members))
		for b, dependents := range node.dependents {
			node.paired[b] = make([]bool, len(dependents))
			for j, a := range dependents {
				node.paired[b][j] = !joins[edge{sc, a, b}]
			}
		}
	}
}

// namedSteps adds the steps that conditions test, at any depth.
func namedSteps(cs []Condition, into map[string]bool) {
	for i := range cs {
		c := &cs[i]
		if c.Step != "" {
			into[c.Step] = true
		}
		namedSteps(c.All, into)
		namedSteps(c.Any, into)
		if c.Not != nil {
			namedSteps([]Condition{*c.Not}, into)
		}
	}
}

// commonScope is the innermost scope holding both steps.
func (g *graph) commonScope(a, b int) int {
	la, lb := g.loopOf[a], g.loopOf[b]
	depth := func(l int) int {
		if l < 0 {
			return 0
		}
		return g.loops[l].depth
	}
	for depth(la) > depth(lb) {
		la = g.loops[la].parent
	}
	for depth(lb) > depth(la) {
		lb = g.loops[lb].parent
	}
	for la != lb {
		la, lb = g.loops[la].parent, g.loops[lb].parent
	}
	return g.scopeOf(la)
}

// pairs reports whether steps s and d fan out over the same items, so
// that s's instance of an item pairs with d's instance of the same item.
func (g *graph) pairs(s, d int) bool {
	a, b := g.fan[s], g.fan[d]
	return a != nil && b != nil && s != d && a.source == b.source && slices.Equal(a.path, b.path)
}

// testsPaired reports whether conds test a fan-out that pairs with step s.
func (g *graph) testsPaired(s int, conds []cond) bool {
	for k := range conds {
		if c := &conds[k]; (c.op == "leaf" && g.pairs(s, c.step)) || g.testsPaired(s, c.subs) {
			return true
		}
	}
	return false
}

// pairedNames are the ids of the fan-outs that step s's condition tests
// and that pair with it, in the order the condition names them.
func (g *graph) pairedNames(w *Workflow, s int) []string {
	var out []string
	var walk func(conds []cond)
	walk = func(conds []cond) {
		for k := range conds {
			c := &conds[k]
			if id := w.Steps[c.step].ID; c.op == "leaf" && g.pairs(s, c.step) && !slices.Contains(out, id) {
				out = append(out, id)
			}
			walk(c.subs)
		}
	}
	walk(g.when[s])
	return out
}

// names reports whether conds test step d anywhere.
func names(conds []cond, d int) bool {
	for k := range conds {
		if c := &conds[k]; (c.op == "leaf" && c.step == d) || names(c.subs, d) {
			return true
		}
	}
	return false
}

// cond is a compiled Condition.
type cond struct {
	op     string // leaf, all, any, not
	step   int
	status []CheckpointStatus // nil: checkpoint_ready
	path   []string
	// pointer is path as written (for evidence: what a test that found
	// nothing looked at).
	pointer string
	text    string // the condition as written, for evidence
	test    string // equals, in, contains, exists, ""
	values  []string
	exists  bool
	subs    []cond
}

func (g *graph) compileConds(cs Conditions) []cond {
	out := make([]cond, 0, len(cs))
	for k := range cs {
		out = append(out, g.compileCond(&cs[k]))
	}
	return out
}

func (g *graph) compileCond(c *Condition) cond {
	switch {
	case len(c.All) > 0:
		return cond{op: "all", subs: g.compileConds(c.All), text: conditionText(c)}
	case len(c.Any) > 0:
		return cond{op: "any", subs: g.compileConds(c.Any), text: conditionText(c)}
	case c.Not != nil:
		return cond{op: "not", subs: []cond{g.compileCond(c.Not)}, text: conditionText(c)}
	}
	out := valueTest(c)
	out.op, out.step, out.status, out.text = "leaf", g.index[c.Step], c.Status, conditionText(c)
	return out
}

// valueTest is the value test of a leaf condition: its path and what it
// tests there (op, step and status are the caller's to fill in).
func valueTest(c *Condition) cond {
	var out cond
	if c.Path != "" {
		out.path, _ = parsePointer(c.Path)
		out.pointer = c.Path
	}
	switch {
	case c.Equals != nil:
		out.test, out.values = "equals", []string{canonicalRaw(c.Equals)}
	case c.In != nil:
		out.test = "in"
		for _, v := range c.In {
			out.values = append(out.values, canonicalRaw(v))
		}
	case c.Contains != nil:
		out.test, out.values = "contains", []string{canonicalRaw(c.Contains)}
	case c.Exists != nil:
		out.test, out.exists = "exists", *c.Exists
	}
	return out
}

// tolerates reports whether conds test step d's status in a way that
// admits it not being checkpoint_ready: a status list naming another
// status, or a test under not. Such a dependency does not hold the step
// when it ends not ready: the condition decides (a failure branch).
func tolerates(conds []cond, d int, negated bool) bool {
	for k := range conds {
		c := &conds[k]
		switch c.op {
		case "leaf":
			if c.step != d {
				continue
			}
			if negated {
				return true
			}
			for _, st := range c.status {
				if st != CheckpointReady {
					return true
				}
			}
		case "not":
			if tolerates(c.subs, d, !negated) {
				return true
			}
		default:
			if tolerates(c.subs, d, negated) {
				return true
			}
		}
	}
	return false
}

// conditionText is a condition as people read it in evidence and plans:
// `check-plan /verdict in ["ACCEPTABLE"]`, `make status in [partial]`.
func conditionText(c *Condition) string {
	join := func(cs []Condition, sep string) string {
		parts := make([]string, len(cs))
		for i := range cs {
			parts[i] = conditionText(&cs[i])
		}
		return "(" + strings.Join(parts, sep) + ")"
	}
	switch {
	case len(c.All) > 0:
		return join(c.All, " and ")
	case len(c.Any) > 0:
		return join(c.Any, " or ")
	case c.Not != nil:
		return "not " + conditionText(c.Not)
	}
	var parts []string
	if len(c.Status) > 0 {
		st := make([]string, len(c.Status))
		for i, s := range c.Status {
			st[i] = string(s)
		}
		parts = append(parts, "status in ["+strings.Join(st, ", ")+"]")
	}
	if c.Path != "" {
		switch {
		case c.Equals != nil:
			parts = append(parts, c.Path+" = "+compactJSON(c.Equals))
		case c.In != nil:
			vs := make([]string, len(c.In))
			for i, v := range c.In {
				vs[i] = compactJSON(v)
			}
			parts = append(parts, c.Path+" in ["+strings.Join(vs, ", ")+"]")
		case c.Contains != nil:
			parts = append(parts, c.Path+" contains "+compactJSON(c.Contains))
		case c.Exists != nil && *c.Exists:
			parts = append(parts, c.Path+" exists")
		case c.Exists != nil:
			parts = append(parts, c.Path+" is absent")
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "is checkpoint_ready")
	}
	if c.Step == "" { // a verify entry's when: the step's own payload
		return strings.Join(parts, " and ")
	}
	return c.Step + " " + strings.Join(parts, " and ")
}

func compactJSON(raw json.RawMessage) string {
	v, err := decodeValue(raw)
	if err != nil {
		return string(raw)
	}
	return canonical(v, false)
}

// conditionsText is a list of conditions (all must hold) as one line.
func conditionsText(cs Conditions) string {
	parts := make([]string, len(cs))
	for i := range cs {
		parts[i] = conditionText(&cs[i])
	}
	return strings.Join(parts, " and ")
}
