package workflows

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/tools"
)

// IDPattern is the rule for step ids: a lowercase letter, then up to 63
// lowercase letters, digits, '_' or '-'. Ids become parts of file names,
// Log keys and ACP tool-call ids, so they must be safe in all three and
// must not differ only in case.
// Compiled on first use: every start of pixir links this package, and
// only workflows need it.
var IDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`) })

// Problem is one thing wrong with a workflow spec, structured so a model
// (or a test) can act on it without parsing Message.
type Problem struct {
	// Code is one of: malformed_spec empty_workflow missing_id unsafe_id
	// duplicate_id missing_task task_prompt_mismatch unknown_dependency
	// self_dependency cycle invalid_pattern read_only_write_set
	// invalid_output_schema invalid_enum invalid_number invalid_duration, and for the
	// control flow: unknown_step not_upstream not_in_loop invalid_condition
	// invalid_pointer no_output_schema invalid_value unbounded_loop
	// empty_loop loop_overlap loop_not_contiguous fan_out_not_array
	// nested_fan_out invalid_binding fan_out_self_conflict; merge_without_snapshot;
	// invalid_verify, invalid_commit; for templates: invalid_argument; from
	// DecodeAndCheck, unknown_field and unknown_agent; from a spec the
	// schema refused where no step can be spawned (max_depth, shutdown),
	// cannot_spawn; from DecodeAndCheckFile (and
	// a template's references), unknown_placeholder and invalid_placeholder.
	Code string `json:"code"`
	// Index is the step's position in steps; nil for workflow-level problems.
	Index *int   `json:"index,omitempty"`
	Step  string `json:"step,omitempty"`
	// Loop is the id of the loop the problem is in (loops[…]).
	Loop  string `json:"loop,omitempty"`
	Field string `json:"field,omitempty"`
	Value string `json:"value,omitempty"`
	// Cycle is the cycle's path, first step repeated at the end.
	Cycle   []string `json:"cycle,omitempty"`
	Message string   `json:"message"`
}

// ValidationDetails is the Details of an invalid_args Failure from Validate.
type ValidationDetails struct {
	Problems []Problem `json:"problems"`
	// MoreProblems counts the problems left out of Problems (and of the
	// message): beyond maxProblems a list helps nobody, and its size would
	// grow with the spec.
	MoreProblems int `json:"more_problems,omitempty"`
}

// Validate checks a normalised workflow before anything runs and returns
// nil or an invalid_args Failure whose Message has one line per problem.
// It reports every problem it can find in one pass, so a model fixes the
// spec in one retry instead of one per problem.
func Validate(w *Workflow) *tools.Failure {
	var v validator
	v.workflow(w)
	if len(v.problems) == 0 {
		return nil
	}
	return problemsFailure(v.problems)
}

// problemsFailure is the invalid_args Failure listing problems, one line
// each, the first maxProblems of them.
func problemsFailure(problems []Problem) *tools.Failure {
	d := ValidationDetails{Problems: problems}
	if len(problems) > maxProblems {
		d.Problems, d.MoreProblems = problems[:maxProblems], len(problems)-maxProblems
	}
	lines := make([]string, len(d.Problems), len(d.Problems)+1)
	for i, p := range d.Problems {
		lines[i] = p.Message
	}
	if d.MoreProblems > 0 {
		lines = append(lines, fmt.Sprintf("… and %s (details.more_problems); fix these and check again", plural.Of(d.MoreProblems, "more problem", "more problems")))
	}
	return &tools.Failure{Kind: tools.ErrInvalidArgs, Message: strings.Join(lines, "\n"), Details: d}
}

type validator struct {
	problems []Problem
	ids      string // knownIDs, made once
	nCycles  int    // cycles found, reported or not
}

func (v *validator) add(p Problem) { v.problems = append(v.problems, p) }

// stepProblem records a problem of steps[i], its message prefixed with the
// step's position and id so the model can find it.
func (v *validator) stepProblem(i int, s *Step, code, field, value, format string, args ...any) {
	label := fmt.Sprintf("steps[%d]", i)
	if s.ID != "" {
		label += fmt.Sprintf(" %q", s.ID)
	}
	v.add(Problem{
		Code: code, Index: &i, Step: s.ID, Field: field, Value: value,
		Message: label + ": " + fmt.Sprintf(format, args...),
	})
}

func (v *validator) workflow(w *Workflow) {
	v.ids = ""
	if w.MaxConcurrency < 1 {
		v.add(Problem{Code: "invalid_number", Field: "max_concurrency", Value: fmt.Sprint(w.MaxConcurrency),
			Message: fmt.Sprintf("max_concurrency: %d must be at least 1 (omit it for %d)", w.MaxConcurrency, DefaultMaxConcurrency)})
	}
	if b := w.Budget; b != nil && (b.Tokens < 0 || b.Cost < 0 || math.IsNaN(b.Cost) || math.IsInf(b.Cost, 0)) {
		v.add(Problem{Code: "invalid_number", Field: "budget", Value: fmt.Sprintf("tokens %d, cost %g", b.Tokens, b.Cost),
			Message: fmt.Sprintf("budget: tokens (%d) and cost (%g) must be positive, or 0 for no limit", b.Tokens, b.Cost)})
	}
	if w.TimeoutMS < 0 {
		v.add(Problem{Code: "invalid_number", Field: "timeout_ms", Value: fmt.Sprint(w.TimeoutMS),
			Message: fmt.Sprintf("timeout_ms: %d must be at least 1 (omit it for no workflow-wide limit)", w.TimeoutMS)})
	}
	if !validMerge(w.Merge) {
		v.add(Problem{Code: "invalid_enum", Field: "merge", Value: string(w.Merge),
			Message: fmt.Sprintf("merge: %q is not one of on_ready, manual, never", w.Merge)})
	}
	if w.FailurePolicy != KeepGoing && w.FailurePolicy != FailFast {
		v.add(Problem{Code: "invalid_enum", Field: "failure_policy", Value: string(w.FailurePolicy),
			Message: fmt.Sprintf("failure_policy: %q is not one of keep_going, fail_fast", w.FailurePolicy)})
	}
	if len(w.Steps) == 0 {
		v.add(Problem{Code: "empty_workflow", Field: "steps",
			Message: `steps: the workflow has no steps; give at least one {"id": ..., "task": ...}`})
		return
	}
	first := map[string]int{} // id -> index of its first declaration
	for i := range w.Steps {
		s := &w.Steps[i]
		switch j, dup := first[s.ID]; {
		case s.ID == "":
			v.stepProblem(i, s, "missing_id", "id", "", "id is missing; give a unique id matching %s", IDPattern())
		case !IDPattern().MatchString(s.ID):
			v.stepProblem(i, s, "unsafe_id", "id", s.ID, "id is unsafe; it must match %s (a lowercase letter, then lowercase letters, digits, _ or -, at most 64)", IDPattern())
		case dup:
			v.stepProblem(i, s, "duplicate_id", "id", s.ID, "id duplicates steps[%d]; ids must be unique", j)
		}
		if _, dup := first[s.ID]; !dup && s.ID != "" {
			first[s.ID] = i
		}
	}
	for i := range w.Steps {
		v.step(i, &w.Steps[i], first)
	}
	v.commit(w)
	v.cycles(w, first)
	v.control(w, first)
}

func (v *validator) step(i int, s *Step, ids map[string]int) {
	if strings.TrimSpace(s.Task) == "" {
		v.stepProblem(i, s, "missing_task", "task", "", "task is empty; say what the step must do (prompt is accepted as an alias)")
	}
	if s.Prompt != "" { // Normalize keeps it only when it differs from task
		v.stepProblem(i, s, "task_prompt_mismatch", "task", "", "task and prompt differ; prompt is an alias of task, give only one")
	}
	for _, d := range s.DependsOn {
		switch _, known := ids[d]; {
		case d == s.ID && s.ID != "":
			v.stepProblem(i, s, "self_dependency", "depends_on", d, "depends_on names the step itself; remove %q", d)
		case !known:
			if v.ids == "" {
				v.ids = knownIDs(ids)
			}
			v.stepProblem(i, s, "unknown_dependency", "depends_on", d, "depends_on %q is not a step id; known ids: %s", d, v.ids)
		}
	}
	switch s.PermissionMode {
	case ReadOnly, Writer:
	default:
		v.stepProblem(i, s, "invalid_enum", "permission_mode", string(s.PermissionMode), "permission_mode %q is not one of read_only, writer", s.PermissionMode)
	}
	switch s.WorkspaceMode {
	case Isolated, Shared:
	default:
		v.stepProblem(i, s, "invalid_enum", "workspace_mode", string(s.WorkspaceMode), "workspace_mode %q is not one of isolated, shared", s.WorkspaceMode)
	}
	switch {
	case !validMerge(s.Merge):
		v.stepProblem(i, s, "invalid_enum", "merge", string(s.Merge), "merge %q is not one of on_ready, manual, never", s.Merge)
	case s.Merge != "" && (s.PermissionMode != Writer || s.WorkspaceMode != Isolated):
		v.stepProblem(i, s, "merge_without_snapshot", "merge", string(s.Merge),
			"merge is %q, but only an isolated writer has changes to merge (this step is %s in the %s workspace); drop merge", s.Merge, s.PermissionMode, s.WorkspaceMode)
	}
	if s.PermissionMode == ReadOnly && len(s.WriteSet) > 0 {
		v.stepProblem(i, s, "read_only_write_set", "write_set", strings.Join(s.WriteSet, ","), "permission_mode is read_only but write_set is %q; drop write_set or make the step a writer", s.WriteSet)
	}
	for _, f := range []struct {
		field string
		set   []string
	}{{"read_set", s.ReadSet}, {"write_set", s.WriteSet}} {
		for _, p := range f.set {
			if why := patternProblem(p); why != "" {
				v.stepProblem(i, s, "invalid_pattern", f.field, p, "%s pattern %q is invalid: %s", f.field, p, why)
			}
		}
	}
	v.verify(i, s)
	if s.Estimate != "" {
		if _, err := parseEstimate(s.Estimate); err != nil {
			v.stepProblem(i, s, "invalid_duration", "estimate", s.Estimate, "estimate %q: %v; write a duration such as 90s, 10m or 1h30m (or drop it)", s.Estimate, err)
		}
	}
	if s.TimeoutMS < 0 {
		v.stepProblem(i, s, "invalid_number", "timeout_ms", fmt.Sprint(s.TimeoutMS), "timeout_ms %d must be at least 1 (omit it for %d)", s.TimeoutMS, DefaultStepTimeoutMS)
	}
	if len(s.OutputSchema) > 0 {
		if kind := jsonKind(s.OutputSchema); kind != "object" {
			v.stepProblem(i, s, "invalid_output_schema", "output_schema", kind, "output_schema must be a JSON object (a JSON Schema), got %s", kind)
		} else if _, err := tools.CompileSchema("output_schema", s.OutputSchema); err != nil {
			v.stepProblem(i, s, "invalid_output_schema", "output_schema", "", "%v", err)
		} else if t := rootType(s.OutputSchema); t != "" && t != "object" {
			// report_checkpoint's payload is an object.
			v.stepProblem(i, s, "invalid_output_schema", "output_schema", t, `output_schema must describe an object (the payload is a JSON object), not %s; wrap it: {"type":"object","properties":{"items":...}}`, t)
		}
	}
}

// validMerge reports whether m is a merge policy (or unset).
func validMerge(m MergePolicy) bool {
	switch m {
	case "", MergeOnReady, MergeManual, MergeNever:
		return true
	}
	return false
}

// rootType is the "type" keyword of a schema's root, as written.
func rootType(schema json.RawMessage) string {
	var root struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(schema, &root) != nil || root.Type == nil {
		return ""
	}
	if t, ok := root.Type.(string); ok {
		return t
	}
	return fmt.Sprint(root.Type)
}

// jsonKind names the JSON type of raw: object, array, string, number,
// boolean, null, or "invalid JSON".
func jsonKind(raw json.RawMessage) string {
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return "invalid JSON"
	}
	switch x.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

// knownIDs names the steps' ids in declaration order, the first
// maxNamedIDs of them.
func knownIDs(ids map[string]int) string {
	at := make([]int, 0, len(ids))
	for _, i := range ids {
		at = append(at, i)
	}
	slices.Sort(at)
	byIndex := make(map[int]string, len(ids))
	for id, i := range ids {
		byIndex[i] = id
	}
	var out []string
	for _, i := range at[:min(len(at), maxNamedIDs)] {
		out = append(out, byIndex[i])
	}
	s := strings.Join(out, ", ")
	if more := len(at) - len(out); more > 0 {
		s += fmt.Sprintf(" … and %d more", more)
	}
	return s
}

// cycles reports each dependency cycle once, as a path that starts at its
// earliest-declared step (a -> b -> c -> a). It follows only edges to known
// steps other than the step itself: those are reported on their own.
func (v *validator) cycles(w *Workflow, ids map[string]int) {
	const (
		white = iota
		grey
		black
	)
	n := len(w.Steps)
	color := make([]int, n)
	var stack []int
	seen := map[string]bool{}
	var visit func(i int)
	visit = func(i int) {
		color[i] = grey
		stack = append(stack, i)
		for _, d := range w.Steps[i].DependsOn {
			j, ok := ids[d]
			if !ok || j == i {
				continue
			}
			switch color[j] {
			case white:
				visit(j)
			case grey:
				v.cycle(w, stack, j, seen)
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
	}
	for i := range n {
		// Duplicate declarations are not nodes: their id resolves elsewhere.
		if color[i] == white && ids[w.Steps[i].ID] == i {
			visit(i)
		}
	}
}

// cycle records the cycle closed by an edge back to j, which is on stack.
// Edges point from a step to its dependency, so the path reads "a depends
// on b depends on ... a".
func (v *validator) cycle(w *Workflow, stack []int, j int, seen map[string]bool) {
	if v.nCycles++; v.nCycles > maxCycles {
		if v.nCycles == maxCycles+1 {
			v.add(Problem{Code: "cycle", Field: "depends_on",
				Message: fmt.Sprintf("cycle: more than %d cycles; fix these and check again", maxCycles)})
		}
		return
	}
	k := len(stack) - 1
	for stack[k] != j {
		k--
	}
	loop := append([]int(nil), stack[k:]...)
	// Rotate to start at the earliest-declared step so the same cycle is
	// always written the same way.
	m := 0
	for x := range loop {
		if loop[x] < loop[m] {
			m = x
		}
	}
	loop = append(loop[m:], loop[:m]...)
	path := make([]string, 0, len(loop)+1)
	for _, x := range loop {
		path = append(path, w.Steps[x].ID)
	}
	path = append(path, path[0])
	key := strings.Join(path, " -> ")
	if seen[key] {
		v.nCycles--
		return
	}
	seen[key] = true
	shown := key
	if len(path) > maxCycleSteps {
		half := maxCycleSteps / 2
		shown = fmt.Sprintf("%s -> … %d more … -> %s", strings.Join(path[:half], " -> "), len(path)-2*half, strings.Join(path[len(path)-half:], " -> "))
	}
	v.add(Problem{Code: "cycle", Field: "depends_on", Cycle: path,
		Message: "cycle: " + shown + " (each step depends on the next); remove one of these depends_on edges"})
}
