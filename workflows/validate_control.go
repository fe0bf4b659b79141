package workflows

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Validation of the control flow (control.go): conditions, loops and
// fan-outs, before anything starts, every problem at once with its
// location. It runs after the graph's own checks and is near-linear in
// the spec's size: upstream questions walk the dependencies from the
// asking step and stop at the first answer.

// controlCheck carries what the checks share.
type controlCheck struct {
	v       *validator
	w       *Workflow
	index   map[string]int // first declaration of each id
	schemas []any          // each step's output_schema, decoded; nil without
	loopOf  []int
	parent  []int
	// seen and stamp are the visited marks of upstream walks, reused.
	seen  []int
	stamp int
}

func (v *validator) control(w *Workflow, index map[string]int) {
	n := len(w.Steps)
	c := &controlCheck{v: v, w: w, index: index, schemas: make([]any, n), seen: make([]int, n)}
	for i := range w.Steps {
		if raw := w.Steps[i].OutputSchema; len(raw) > 0 {
			var s any
			if json.Unmarshal(raw, &s) == nil {
				c.schemas[i] = s
			}
		}
	}
	c.loops()
	for i := range w.Steps {
		c.step(i)
	}
}

// loopProblem records a problem of loops[l].
func (c *controlCheck) loopProblem(l int, code, field, value, format string, args ...any) {
	lp := &c.w.Loops[l]
	label := fmt.Sprintf("loops[%d]", l)
	if lp.ID != "" {
		label += fmt.Sprintf(" %q", lp.ID)
	}
	c.v.add(Problem{Code: code, Loop: lp.ID, Field: field, Value: value, Message: label + ": " + fmt.Sprintf(format, args...)})
}

func (c *controlCheck) loops() {
	w := c.w
	seen := map[string]int{}
	for l := range w.Loops {
		lp := &w.Loops[l]
		switch j, dup := seen[lp.ID]; {
		case lp.ID == "":
			c.loopProblem(l, "missing_id", "id", "", "id is missing; give the loop a unique id matching %s", IDPattern())
		case !IDPattern().MatchString(lp.ID):
			c.loopProblem(l, "unsafe_id", "id", lp.ID, "id is unsafe; it must match %s", IDPattern())
		case dup:
			c.loopProblem(l, "duplicate_id", "id", lp.ID, "id duplicates loops[%d]; loop ids must be unique", j)
		default:
			if _, step := c.index[lp.ID]; step {
				c.loopProblem(l, "duplicate_id", "id", lp.ID, "id is also a step id; a loop needs an id of its own")
			}
			seen[lp.ID] = l
		}
		if len(lp.Steps) == 0 {
			c.loopProblem(l, "empty_loop", "steps", "", "steps is empty; name the steps that repeat together")
		}
		dupStep := map[string]bool{}
		for k, id := range lp.Steps {
			if _, ok := c.index[id]; !ok {
				c.loopProblem(l, "unknown_step", fmt.Sprintf("steps[%d]", k), id, "steps names %q, which is not a step id; known ids: %s", id, knownIDs(c.index))
			}
			if dupStep[id] {
				c.loopProblem(l, "duplicate_id", fmt.Sprintf("steps[%d]", k), id, "steps names %q twice", id)
			}
			dupStep[id] = true
		}
		switch {
		case lp.MaxIterations == 0:
			c.loopProblem(l, "unbounded_loop", "max_iterations", "", "max_iterations is missing or 0; every loop needs a bound (1 to %d) the runtime enforces", MaxIterationsLimit)
		case lp.MaxIterations < 1 || lp.MaxIterations > MaxIterationsLimit:
			c.loopProblem(l, "invalid_number", "max_iterations", fmt.Sprint(lp.MaxIterations), "max_iterations %d must be between 1 and %d", lp.MaxIterations, MaxIterationsLimit)
		}
		if lp.OnExhausted != Hold && lp.OnExhausted != Proceed {
			c.loopProblem(l, "invalid_enum", "on_exhausted", string(lp.OnExhausted), "on_exhausted %q is not one of hold, proceed", lp.OnExhausted)
		}
	}
	c.parent, c.loopOf = nestLoops(w.Loops, c.index, len(w.Steps), func(l int, code, format string, args ...any) {
		c.loopProblem(l, code, "steps", "", format, args...)
	})
	for l := range w.Loops {
		lp := &w.Loops[l]
		inLoop := func(s int) bool {
			for q := c.loopOf[s]; q >= 0; q = c.parent[q] {
				if q == l {
					return true
				}
			}
			return false
		}
		allowed := func(s int) string {
			if inLoop(s) || c.upstreamOfLoop(s, l, inLoop) {
				return ""
			}
			return "it is neither a step of the loop nor upstream of it"
		}
		c.conditions(lp.Until, "until", allowed, nil, func(code, field, value, format string, args ...any) {
			c.loopProblem(l, code, field, value, format, args...)
		})
		if lp.Converge != nil && len(lp.Converge) == 0 {
			c.loopProblem(l, "invalid_condition", "converge", "", "converge is an empty list; name at least one {step, path} whose value must repeat, or leave converge out")
		}
		seenConv := map[Converge]int{}
		for k, cv := range lp.Converge {
			field := "converge"
			if len(lp.Converge) > 1 {
				field = fmt.Sprintf("converge[%d]", k)
			}
			if j, dup := seenConv[cv]; dup && cv.Step != "" {
				c.loopProblem(l, "duplicate_id", field, cv.text(), "%s repeats converge[%d] (%s); name each value once", field, j, cv.text())
				continue
			}
			seenConv[cv] = k
			s, ok := c.index[cv.Step]
			switch {
			case cv.Step == "":
				c.loopProblem(l, "invalid_condition", field+".step", "", "%s.step is missing; name the step of the loop whose payload value must repeat", field)
			case !ok:
				c.loopProblem(l, "unknown_step", field+".step", cv.Step, "%s.step %q is not a step id; known ids: %s", field, cv.Step, knownIDs(c.index))
			case !inLoop(s):
				c.loopProblem(l, "not_in_loop", field+".step", cv.Step, "%s.step %q is not a step of the loop", field, cv.Step)
			case c.w.Steps[s].ForEach != nil:
				c.loopProblem(l, "nested_fan_out", field+".step", cv.Step, "%s.step %q is a fan-out; converge on the step that makes its items, or on a review after it", field, cv.Step)
			default:
				c.pointer(s, cv.Path, field+".path", func(code, field, value, format string, args ...any) {
					c.loopProblem(l, code, field, value, format, args...)
				})
			}
		}
	}
	c.contiguous()
}

// contiguous reports a loop whose body a dependency path leaves and
// re-enters (a step outside it both depends on it and is depended on by
// it): then the loop is not a group within the DAG, and its iterations
// could not run as one.
func (c *controlCheck) contiguous() {
	w := c.w
	if len(w.Loops) == 0 {
		return
	}
	// The member of each step in the scope of loop l (or the workflow,
	// l = -1): the step, or the outermost loop below l holding it.
	memberIn := func(s, l int) int {
		q := c.loopOf[s]
		if q == l {
			return s
		}
		for c.parent[q] != l {
			q = c.parent[q]
		}
		return loopMember(q)
	}
	depth := make([]int, len(w.Loops))
	for l := range w.Loops {
		for p := l; p >= 0; p = c.parent[p] {
			depth[l]++
		}
	}
	common := func(a, b int) int {
		la, lb := c.loopOf[a], c.loopOf[b]
		d := func(l int) int {
			if l < 0 {
				return 0
			}
			return depth[l]
		}
		for d(la) > d(lb) {
			la = c.parent[la]
		}
		for d(lb) > d(la) {
			lb = c.parent[lb]
		}
		for la != lb {
			la, lb = c.parent[la], c.parent[lb]
		}
		return la
	}
	byScope := map[int]map[int][]int{}
	for s := range w.Steps {
		if c.index[w.Steps[s].ID] != s {
			continue
		}
		for _, id := range w.Steps[s].DependsOn {
			d, ok := c.index[id]
			if !ok || d == s {
				continue
			}
			sc := common(s, d)
			a, b := memberIn(s, sc), memberIn(d, sc)
			if a == b {
				continue
			}
			if byScope[sc] == nil {
				byScope[sc] = map[int][]int{}
			}
			byScope[sc][a] = append(byScope[sc][a], b)
		}
	}
	name := func(m int) string {
		if isLoop(m) {
			return "loop " + w.Loops[loopOfMember(m)].ID
		}
		return w.Steps[m].ID
	}
	reported := map[int]bool{}
	scopes := make([]int, 0, len(byScope))
	for sc := range byScope {
		scopes = append(scopes, sc)
	}
	slices.Sort(scopes)
	for _, sc := range scopes {
		edges := byScope[sc]
		state := map[int]int{} // 0 white, 1 grey, 2 black
		var stack []int
		var visit func(m int)
		visit = func(m int) {
			state[m] = 1
			stack = append(stack, m)
			for _, d := range edges[m] {
				switch state[d] {
				case 0:
					visit(d)
				case 1:
					k := len(stack) - 1
					for stack[k] != d {
						k--
					}
					cyc := stack[k:]
					for _, x := range cyc {
						if isLoop(x) && !reported[x] {
							reported[x] = true
							path := make([]string, 0, len(cyc)+1)
							for _, y := range cyc {
								path = append(path, name(y))
							}
							path = append(path, name(cyc[0]))
							c.loopProblem(loopOfMember(x), "loop_not_contiguous", "steps", "",
								"its body is not one group of the graph: %s (each depends on the next); put the steps between them into the loop, or take them out of it", strings.Join(path, " -> "))
						}
					}
				}
			}
			stack = stack[:len(stack)-1]
			state[m] = 2
		}
		keys := make([]int, 0, len(edges))
		for m := range edges {
			keys = append(keys, m)
		}
		slices.Sort(keys)
		for _, m := range keys {
			if state[m] == 0 {
				visit(m)
			}
		}
	}
}

// upstream reports whether step u is upstream of step s: s depends on it,
// directly or not. It walks s's dependencies and stops at u.
func (c *controlCheck) upstream(s, u int) bool {
	for _, id := range c.w.Steps[s].DependsOn {
		if id == c.w.Steps[u].ID {
			return true
		}
	}
	c.stamp++
	stack := []int{s}
	c.seen[s] = c.stamp
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, id := range c.w.Steps[x].DependsOn {
			d, ok := c.index[id]
			if !ok || c.seen[d] == c.stamp {
				continue
			}
			if d == u {
				return true
			}
			c.seen[d] = c.stamp
			stack = append(stack, d)
		}
	}
	return false
}

// upstreamOfLoop reports whether step u, outside loop l, is upstream of
// one of its steps.
func (c *controlCheck) upstreamOfLoop(u, l int, inLoop func(int) bool) bool {
	for s := range c.w.Steps {
		if inLoop(s) && c.upstream(s, u) {
			return true
		}
	}
	return false
}

// problemAt reports a problem at a field of whatever carries a condition.
type problemAt func(code, field, value, format string, args ...any)

// conditions checks a list of conditions; allowed says why a step may not
// be tested there ("" when it may); paired says whether a fan-out's
// payload may be tested there because the condition is decided per
// instance against the paired instance (nil where it never is).
func (c *controlCheck) conditions(cs Conditions, field string, allowed func(s int) string, paired func(s int) bool, report problemAt) {
	for k := range cs {
		c.condition(&cs[k], fmt.Sprintf("%s[%d]", field, k), allowed, paired, report)
	}
}

var validStatuses = []CheckpointStatus{CheckpointReady, CheckpointPartial, CheckpointFailed, CheckpointNeedsOrchestrator, CheckpointHeld, CheckpointSkipped}

func (c *controlCheck) condition(cd *Condition, field string, allowed func(s int) string, paired func(s int) bool, report problemAt) {
	combinators := 0
	for _, has := range []bool{len(cd.All) > 0 || cd.All != nil, len(cd.Any) > 0 || cd.Any != nil, cd.Not != nil} {
		if has {
			combinators++
		}
	}
	leaf := cd.Step != "" || cd.Status != nil || cd.Path != "" || cd.Equals != nil || cd.In != nil || cd.Contains != nil || cd.Exists != nil
	switch {
	case combinators > 1 || (combinators == 1 && leaf):
		report("invalid_condition", field, "", "%s mixes all, any, not and a test of a step; give each its own condition", field)
		return
	case combinators == 1:
		switch {
		case cd.All != nil:
			if len(cd.All) == 0 {
				report("invalid_condition", field+".all", "", "%s.all is empty", field)
			}
			c.conditions(cd.All, field+".all", allowed, paired, report)
		case cd.Any != nil:
			if len(cd.Any) == 0 {
				report("invalid_condition", field+".any", "", "%s.any is empty", field)
			}
			c.conditions(cd.Any, field+".any", allowed, paired, report)
		default:
			c.condition(cd.Not, field+".not", allowed, paired, report)
		}
		return
	}
	s, known := c.index[cd.Step]
	switch {
	case cd.Step == "":
		report("invalid_condition", field+".step", "", "%s.step is missing; say which step's checkpoint it tests", field)
		return
	case !known:
		report("unknown_step", field+".step", cd.Step, "%s.step %q is not a step id; known ids: %s", field, cd.Step, knownIDs(c.index))
		return
	}
	if why := allowed(s); why == selfStep {
		report("not_upstream", field+".step", cd.Step, "%s.step %q: %s; a condition tests what an upstream step found, never the step's own checkpoint", field, cd.Step, why)
	} else if why != "" {
		report("not_upstream", field+".step", cd.Step, "%s.step %q: %s; add it to depends_on (directly or through another step)", field, cd.Step, why)
	}
	for _, st := range cd.Status {
		if !slices.Contains(validStatuses, st) {
			report("invalid_enum", field+".status", string(st), "%s.status %q is not one of checkpoint_ready, partial, failed, needs_orchestrator, held, skipped", field, st)
		}
	}
	tests := 0
	for _, has := range []bool{cd.Equals != nil, cd.In != nil, cd.Contains != nil, cd.Exists != nil} {
		if has {
			tests++
		}
	}
	switch {
	case cd.Path == "" && tests > 0:
		report("invalid_condition", field+".path", "", "%s has a value test but no path; give the JSON Pointer of the payload value it tests (e.g. /verdict)", field)
		return
	case cd.Path == "":
		return
	case tests == 0:
		report("invalid_condition", field+".path", cd.Path, "%s.path needs one test: equals, in, contains or exists", field)
	case tests > 1:
		report("invalid_condition", field+".path", cd.Path, "%s has more than one of equals, in, contains, exists; split it into conditions", field)
	case cd.In != nil && len(cd.In) == 0:
		report("invalid_condition", field+".in", "", "%s.in is empty; it could never hold", field)
	}
	if c.w.Steps[s].ForEach != nil && (paired == nil || !paired(s)) {
		report("nested_fan_out", field+".path", cd.Path, "%s tests the payload of %q, a fan-out with one payload per instance; test its status, or the payload of a step after it, or fan this step out over the same items (for_each: {step: %s, path: %s}) so that each instance tests its own", field, cd.Step, c.w.Steps[s].ForEach.Step, c.w.Steps[s].ForEach.Path)
		return
	}
	node, ok := c.pointer(s, cd.Path, field+".path", report)
	if !ok || node == nil {
		return
	}
	check := func(what string, raw json.RawMessage, n map[string]any) {
		if why := valueAllowed(n, raw); why != "" {
			report("invalid_value", field+"."+what, compactJSON(raw), "%s.%s %s can never match %s of %q: %s", field, what, compactJSON(raw), cd.Path, cd.Step, why)
		}
	}
	switch {
	case cd.Equals != nil:
		check("equals", cd.Equals, node)
	case cd.In != nil:
		for _, v := range cd.In {
			check("in", v, node)
		}
	case cd.Contains != nil:
		if ts := schemaTypes(node); len(ts) > 0 && !slices.Contains(ts, "array") {
			report("invalid_condition", field+".contains", "", "%s.contains tests an array, and %s of %q is %s", field, cd.Path, cd.Step, strings.Join(ts, " or "))
			return
		}
		items, _ := node["items"].(map[string]any)
		check("contains", cd.Contains, items)
	}
}

// pointer checks a JSON Pointer into step s's payload: s needs an
// output_schema, and the schema must allow something there. It returns
// the schema node there (nil when the schema does not say) and whether
// the pointer is usable.
func (c *controlCheck) pointer(s int, path, field string, report problemAt) (map[string]any, bool) {
	id := c.w.Steps[s].ID
	if path == "" {
		report("invalid_pointer", field, "", "%s is missing; give a JSON Pointer into %q's payload (e.g. /findings)", field, id)
		return nil, false
	}
	tokens, err := parsePointer(path)
	if err != nil {
		report("invalid_pointer", field, path, "%s: %v", field, err)
		return nil, false
	}
	if len(c.w.Steps[s].OutputSchema) == 0 {
		report("no_output_schema", field, path, "%s %s points into the payload of %q, which has no output_schema; give %q an output_schema that declares it", field, path, id, id)
		return nil, false
	}
	node, why := schemaAt(c.schemas[s], tokens)
	if why != "" {
		report("invalid_pointer", field, path, "%s %s cannot be in the payload of %q: %s", field, path, id, why)
		return nil, false
	}
	return node, true
}

// sameItems reports whether two fan-outs are over the same items (the
// same step and path): their instances pair up, item by item.
func sameItems(a, b *ForEach) bool {
	if a == nil || b == nil || a.Step != b.Step {
		return false
	}
	pa, errA := parsePointer(a.Path)
	pb, errB := parsePointer(b.Path)
	return errA == nil && errB == nil && slices.Equal(pa, pb)
}

// bindingPattern finds ${…} in a fan-out step's text; itemBinding is the
// syntax of the ones it replaces.
var (
	bindingPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([^}]*)\}`) })
	itemBinding    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(index|item(\.[A-Za-z0-9_-]+)*)$`)
	})
	// badBinding is what looks meant as an item binding and is not one.
	badBinding = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(item|index)\b`) })
)

// bindings are the item bindings of a step's task, read_set and write_set
// (${item}, ${item.a.b}, ${index}), with the field each is in; other ${…}
// are not Pixir's and stay as they are.
func bindings(st *Step) (found []binding, bad []binding) {
	scan := func(field, text string) {
		for _, m := range bindingPattern().FindAllStringSubmatch(text, -1) {
			inner := strings.TrimSpace(m[1])
			b := binding{field: field, text: m[0], expr: inner}
			switch {
			case itemBinding().MatchString(inner):
				found = append(found, b)
			case badBinding().MatchString(inner):
				bad = append(bad, b)
			}
		}
	}
	scan("task", st.Task)
	for k, p := range st.ReadSet {
		scan(fmt.Sprintf("read_set[%d]", k), p)
	}
	for k, p := range st.WriteSet {
		scan(fmt.Sprintf("write_set[%d]", k), p)
	}
	return found, bad
}

type binding struct{ field, text, expr string }

// selfStep is why a step's condition cannot name the step itself.
const selfStep = "it is this step itself"

func (c *controlCheck) step(i int) {
	w := c.w
	st := &w.Steps[i]
	v := c.v
	report := func(code, field, value, format string, args ...any) {
		v.stepProblem(i, st, code, field, value, format, args...)
	}
	switch st.Join {
	case "", JoinAll, JoinAny:
	default:
		report("invalid_enum", "join", string(st.Join), "join %q is not one of all, any", st.Join)
	}
	c.conditions(st.When, "when", func(s int) string {
		if s == i {
			return selfStep
		}
		if !c.upstream(i, s) {
			return "it is not upstream of this step"
		}
		return ""
	}, func(s int) bool { return sameItems(st.ForEach, w.Steps[s].ForEach) }, report)
	c.verifyWhen(i, report)

	found, bad := bindings(st)
	for _, b := range bad {
		report("invalid_binding", b.field, b.text, "%s has %s; the bindings are ${item}, ${item.field} (fields joined by .) and ${index}", b.field, b.text)
	}
	f := st.ForEach
	if f == nil {
		for _, b := range found {
			report("invalid_binding", b.field, b.text, "%s binds %s, but the step has no for_each; add for_each: {step, path} or remove the binding", b.field, b.text)
		}
		return
	}
	src, known := c.index[f.Step]
	switch {
	case f.Step == "":
		report("invalid_condition", "for_each.step", "", "for_each.step is missing; name the upstream step whose payload holds the array")
		return
	case !known:
		report("unknown_step", "for_each.step", f.Step, "for_each.step %q is not a step id; known ids: %s", f.Step, knownIDs(c.index))
		return
	case src == i:
		report("not_upstream", "for_each.step", f.Step, "for_each.step %q is this step itself; fan out over the payload of an upstream step", f.Step)
	case !c.upstream(i, src):
		report("not_upstream", "for_each.step", f.Step, "for_each.step %q is not upstream of this step; add it to depends_on", f.Step)
	case w.Steps[src].ForEach != nil:
		report("nested_fan_out", "for_each.step", f.Step, "for_each.step %q is itself a fan-out (one payload per instance); fan out over the step that makes the list", f.Step)
		return
	}
	if f.MaxItems < 1 || f.MaxItems > MaxItemsLimit {
		report("invalid_number", "for_each.max_items", fmt.Sprint(f.MaxItems), "for_each.max_items %d must be between 1 and %d (omit it for %d)", f.MaxItems, MaxItemsLimit, DefaultMaxItems)
	}
	node, ok := c.pointer(src, f.Path, "for_each.path", report)
	var items map[string]any
	if ok && node != nil {
		if why := notArray(node); why != "" {
			report("fan_out_not_array", "for_each.path", f.Path, "for_each.path %s of %q %s in its output_schema; fan out over an array", f.Path, f.Step, why)
			ok = false
		}
		items, _ = node["items"].(map[string]any)
	}
	for _, b := range found {
		fields := strings.Split(b.expr, ".")[1:]
		if b.expr == "index" || len(fields) == 0 || !ok || items == nil {
			continue
		}
		if _, why := schemaAt(items, fields); why != "" {
			report("invalid_binding", b.field, b.text, "%s binds %s, which an item of %s %s cannot have: %s", b.field, b.text, f.Step, f.Path, why)
		}
	}
	if st.PermissionMode == Writer {
		boundWrite := false
		for _, b := range found {
			if strings.HasPrefix(b.field, "write_set") && strings.HasPrefix(b.expr, "item") {
				boundWrite = true
			}
		}
		if !boundWrite {
			report("fan_out_self_conflict", "write_set", strings.Join(st.WriteSet, ","), "every instance of this writer would write %s, so its instances conflict with each other; bind each instance to its item's files, e.g. write_set: [\"${item.files}\"]", strings.Join(st.WriteSet, ", "))
		}
	}
}
