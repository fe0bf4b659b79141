// Package workflows is run_workflow (ADR 0012, ADR 0014): the workflow
// spec and its validation, path-pattern overlap and the conflict rules,
// the use case every entry point calls (prepare.go: Prepare, then DryRun
// or Run), the dry run's waves, the event-driven scheduler (scheduler.go,
// driven by Run), checkpoint bundles and report_checkpoint, outcomes and
// their rebuilding from workflow_events, and resume_from. Nothing here
// starts a Session: every step is a Subagent of the runtime's Manager,
// reached through the ports this package declares (ports.go).
package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/pixir-go/pixir/budget"
	"github.com/pixir-go/pixir/tools"
)

// PermissionMode is a step's posture: what the child may do to the workspace.
type PermissionMode string

const (
	ReadOnly PermissionMode = "read_only"
	Writer   PermissionMode = "writer"
)

// WorkspaceMode says where a step's child works: on a snapshot of the
// workspace (isolated) or in the workspace itself (shared).
type WorkspaceMode string

const (
	Isolated WorkspaceMode = "isolated"
	Shared   WorkspaceMode = "shared"
)

// FailurePolicy says what the scheduler does with the rest of the graph when
// a step does not become checkpoint_ready.
type FailurePolicy string

const (
	KeepGoing FailurePolicy = "keep_going"
	FailFast  FailurePolicy = "fail_fast"
)

// MergePolicy says when an isolated writer's changes land in the
// workspace (merge-back).
type MergePolicy string

const (
	// MergeOnReady (the default): as soon as the step is checkpoint_ready,
	// before any dependent starts, so dependents and whatever follows the
	// run (a commit) see the work in the workspace itself. The work of a
	// writer that is not ready is never merged.
	MergeOnReady MergePolicy = "on_ready"
	// MergeManual: the changes stay in the step's snapshot; the parent
	// merges them when it decides (merge_agent with the step's agent id).
	MergeManual MergePolicy = "manual"
	// MergeNever: the changes are the step's dependents' alone (their
	// snapshots start with them) and never reach the workspace.
	MergeNever MergePolicy = "never"
)

// Defaults applied by Normalize. DefaultMaxConcurrency matches the Subagents
// Manager's max_threads, so a default workflow never queues inside the Manager.
const (
	DefaultMaxConcurrency = 6
	DefaultStepTimeoutMS  = 120000
)

// WholeWorkspace is the pattern a writer without a write set claims, and a
// step without a read set is taken to read (ADR 0012: be conservative).
const WholeWorkspace = "**/*"

// Step is one delegated task in a Workflow: the one type of a step, as
// run_workflow's schema describes it, as a spec file and the tool's
// arguments decode into, and as the scheduler runs it.
type Step struct {
	// ID must match IDPattern: lowercase only, so ids cannot collide on a
	// case-insensitive filesystem or in ACP tool-call ids derived from them.
	ID   string `json:"id" jsonschema:"pattern=^[a-z][a-z0-9_-]{0\\,63}$" jsonschema_description:"Unique step id: a lowercase letter, then lowercase letters, digits, _ or -."`
	Task string `json:"task,omitempty" jsonschema_description:"The child's whole assignment; it sees nothing else of this conversation. (prompt is accepted as an alias.)"`
	// Prompt is accepted as an alias of Task (models trained on Claude
	// Code's Task tool send prompt); Check moves it into Task.
	Prompt         string          `json:"prompt,omitempty" jsonschema_description:"Alias of task."`
	Agent          string          `json:"agent,omitempty" jsonschema_description:"default, worker, explorer or a custom agent. Default: default."`
	DependsOn      []string        `json:"depends_on,omitempty" jsonschema_description:"Ids of the steps whose checkpoint_ready results this step needs; it starts only after all of them."`
	PermissionMode PermissionMode  `json:"permission_mode,omitempty" jsonschema:"enum=read_only,enum=writer" jsonschema_description:"read_only (default unless write_set is given): reads and reports; writer: may change files."`
	ReadSet        []string        `json:"read_set,omitempty" jsonschema_description:"Path patterns (doublestar) the step reads. Default: everything. Spaces at either end go, a leading ./ is dropped, a trailing / means the folder's contents (src/ is src/**), and an empty, . or .. segment, a leading ~ or an absolute pattern is refused before the run starts."`
	WriteSet       []string        `json:"write_set,omitempty" jsonschema_description:"Path patterns (doublestar) a writer changes. Default for a writer: **/* (the whole workspace). Spaces at either end go, a leading ./ is dropped, a trailing / means the folder's contents (src/ is src/**), and an empty, . or .. segment, a leading ~ or an absolute pattern is refused before the run starts."`
	WorkspaceMode  WorkspaceMode   `json:"workspace_mode,omitempty" jsonschema:"enum=isolated,enum=shared" jsonschema_description:"isolated: a snapshot of the workspace (default for writers); shared: the workspace itself (default for read_only steps)."`
	TimeoutMS      int64           `json:"timeout_ms,omitempty" jsonschema:"minimum=1" jsonschema_description:"The step's time limit in milliseconds, from its start. Default 120000."`
	OutputSchema   json.RawMessage `json:"output_schema,omitempty" jsonschema:"type=object" jsonschema_description:"A JSON Schema the step's typed result (report_checkpoint payload) must match; it is checkpoint_ready only with a matching payload."`
	// MCPServers, when not nil, are the only MCP servers of the session the
	// step's child may use: [] allows none (omitzero keeps [] apart from
	// no key).
	MCPServers []string `json:"allowed_mcp_servers,omitzero" jsonschema_description:"The session's MCP servers this step's child may use ([] for none). Default: all of them."`
	// When is the step's condition on upstream checkpoints: false skips
	// the step (skipped is not a failure).
	When Conditions `json:"when,omitempty" jsonschema_description:"Run the step only if this holds once its dependencies are decided; otherwise it is skipped (not failed), and so are the steps that need it. A condition that names a dependency's status other than checkpoint_ready makes a failure branch: the step runs when that dependency ended not ready."`
	// Join says what a step with several dependencies waits for.
	Join JoinMode `json:"join,omitempty" jsonschema:"enum=all,enum=any" jsonschema_description:"all (default): every dependency must be checkpoint_ready, and a skipped one skips this step; any: run when at least one is checkpoint_ready once all are decided (the join of alternative branches)."`
	// ForEach makes the step a fan-out: one instance per item.
	ForEach *ForEach `json:"for_each,omitempty" jsonschema_description:"Run one instance of this step per item of an array in an upstream step's payload: {step, path, max_items}. In task, read_set and write_set, ${item}, ${item.field} and ${index} are replaced per instance (values as data: paths stay literal); dependents wait for every instance."`
	// Verify are commands Pixir runs when the child reports
	// checkpoint_ready, whose results the report needs (verify.go).
	Verify []Verify    `json:"verify,omitempty" jsonschema_description:"What a valid checkpoint means beyond its payload: commands Pixir runs itself in the child's workspace when it reports checkpoint_ready, each of which must exit as expected ({run, expect: pass|fail, means}); otherwise the report is refused with the output and the step is not checkpoint_ready until a report passes."`
	Merge  MergePolicy `json:"merge,omitempty" jsonschema:"enum=on_ready,enum=manual,enum=never" jsonschema_description:"For an isolated writer: when its changes land in the workspace. on_ready: as soon as it is checkpoint_ready, before its dependents start; manual: they stay in its snapshot until merge_agent; never: only its dependents see them. Default: the workflow's merge."`
	// Estimate is how long the step is expected to take (a Go duration:
	// 90s, 10m, 1h30m): a priority input of the scheduler, never a limit
	// (estimate.go).
	Estimate string `json:"estimate,omitempty" jsonschema_description:"How long the step is expected to take, e.g. 90s, 10m, 1h30m: the scheduler starts the steps with the longest estimated time still ahead of them first. Never a limit (timeout_ms is). Default: the median of the workflow's other estimates; in a workflow without any, every step counts the same."`

	// agentWrite is a writer's agent's write set (nil: none), set by
	// Prepare: the child may change only a file that matches both, so the
	// conflict rules (profiles.go) of the dry run and of the run read it.
	agentWrite []string
}

// UnmarshalJSON rejects unknown keys, so a misspelt field is an error the
// model sees instead of a silent default.
func (s *Step) UnmarshalJSON(b []byte) error {
	type plain Step // Step without this method
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode((*plain)(s)); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return err // the outer decoder prefixes the field with "steps."
		}
		return fmt.Errorf("a step has %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// Workflow is the run_workflow spec: ordered steps and workflow-wide knobs.
// Declaration order matters: it breaks every scheduling tie. It is the one
// type of a spec: run_workflow's arguments, a spec file, and what Check
// validates and the scheduler runs.
type Workflow struct {
	// ID is accepted in spec files, not from the model.
	ID   string `json:"id,omitempty" jsonschema:"-"`
	Name string `json:"name,omitempty" jsonschema_description:"A label for people."`
	// Template and Args call a workflow template by name instead of giving
	// steps (ResolveTemplate). On an instance they stay as its provenance:
	// the Log records which template made the steps, with which arguments.
	Template       string          `json:"template,omitempty" jsonschema_description:"The name of a workflow template to run instead of giving steps (the system prompt lists the templates of this workspace); its parameters are given in args."`
	Args           json.RawMessage `json:"args,omitempty" jsonschema:"type=object" jsonschema_description:"With template: the values of its parameters, e.g. {\"issue\": \"GAL-1\"}. Parameters with a default may be left out."`
	Steps          []Step          `json:"steps,omitempty" jsonschema:"minItems=1" jsonschema_description:"The steps (unless template is given). Among steps ready at the same time, the one with the longest chain of dependents starts first, then the earlier declared."`
	MaxConcurrency int             `json:"max_concurrency,omitempty" jsonschema:"minimum=1" jsonschema_description:"Most steps running at once. Default 6."`
	TimeoutMS      int64           `json:"timeout_ms,omitempty" jsonschema:"minimum=1" jsonschema_description:"Time limit of the whole workflow in milliseconds; at the limit running steps are stopped and the rest held. Default: none beyond each step's."` // 0: no workflow-wide limit beyond each step's
	FailurePolicy  FailurePolicy   `json:"failure_policy,omitempty" jsonschema:"enum=keep_going,enum=fail_fast" jsonschema_description:"keep_going (default): independent steps go on when one fails; fail_fast: stop everything at the first step that is not checkpoint_ready."`
	Merge          MergePolicy     `json:"merge,omitempty" jsonschema:"enum=on_ready,enum=manual,enum=never" jsonschema_description:"When isolated writers' changes land in the workspace: on_ready (default): each as soon as it is checkpoint_ready, three-way against the workspace as it is then, before its dependents start; manual: they stay in the snapshots (merge_agent merges one); never: only dependents see them. A step's merge overrides it."`
	DryRun         bool            `json:"dry_run,omitempty" jsonschema_description:"Validate and plan only: return the waves, conflicts and merge risks without starting anything."`
	// ValidateOnly is accepted as an alias of DryRun (prior art §6);
	// Check folds it into DryRun.
	ValidateOnly bool `json:"validate_only,omitempty" jsonschema_description:"Alias of dry_run."`
	// ResumeFrom names an earlier run in the same session whose
	// checkpoint_ready steps are reused instead of run again (Reusable).
	ResumeFrom string `json:"resume_from,omitempty" jsonschema_description:"The workflow_id of an earlier run in this session: its checkpoint_ready steps (same id, task, agent, sets and dependencies, all of them reused too) are reused, not run again; only the rest runs. This is how to retry failed steps only."`
	// Loops are the bounded groups of steps that repeat.
	// Commit, when set, commits a completed run's work (commit.go).
	Commit *CommitSpec `json:"commit,omitempty" jsonschema_description:"When the run ends completed, commit to the workspace's git repository exactly the files it brought into the workspace (merged by its writers), never .pixir/ nor what exclude names: {message, exclude}, or several commits in order: {commits: [{message, paths}], exclude}."`
	Loops  []Loop      `json:"loops,omitempty" jsonschema_description:"Groups of steps that repeat, bounded: {id, steps, max_iterations, until, converge, on_exhausted}."`
	// Budget bounds what the run's children may spend together; where it
	// is absent (or limits only one measure) the configuration's workflow
	// budget applies.
	Budget *budget.Limit `json:"budget,omitempty" jsonschema_description:"What the run's steps may spend together: tokens (input and output) and/or cost. At the limit no more steps start and running ones get no more model calls: the run ends partial, with the rest held (budget_exhausted); raise it and run again with resume_from. Default: the configuration's workflow budget, if any."`

	zeroConcurrency bool // max_concurrency was given as 0
	checked         bool // Check passed: nothing validates it again
	instantiated    bool // made by Template.Instantiate: Template is provenance
	g               *graph
}

// UnmarshalJSON rejects unknown keys and remembers an explicit
// max_concurrency of 0: a mistake for Validate to report, not a request
// for the default.
func (w *Workflow) UnmarshalJSON(b []byte) error {
	return w.decodeStrictly(json.NewDecoder(bytes.NewReader(b)))
}

// workflowFields is Workflow without UnmarshalJSON.
type workflowFields Workflow

// decodeStrictly is UnmarshalJSON's decoding of the value dec reads.
func (w *Workflow) decodeStrictly(dec *json.Decoder) error {
	return w.decodeStrictlyInto(dec, (*workflowFields)(w))
}

// decodeStrictlyInto is decodeStrictly decoding into v, which is w's
// fields or a value that holds them (decodePlainFile).
func (w *Workflow) decodeStrictlyInto(dec *json.Decoder, v any) error {
	// absent stays in MaxConcurrency when the spec does not give it.
	const absent = math.MinInt
	w.MaxConcurrency = absent
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	switch w.MaxConcurrency {
	case absent:
		w.MaxConcurrency = 0
	case 0:
		w.zeroConcurrency = true
	}
	return err
}

// Decode reads a spec (JSON) into a Workflow, strictly: unknown keys and
// anything after the spec object are errors. Every error is a
// *tools.Failure of kind invalid_args.
func Decode(raw json.RawMessage) (*Workflow, error) {
	var w Workflow
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&w); err != nil {
		return nil, decodeFailure(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, decodeFailure(errors.New("there is more after the spec object; send one JSON object"))
	}
	return &w, nil
}

// Parse decodes a spec and checks it (Check). Every error is a
// *tools.Failure of kind invalid_args, so the caller can hand it to the
// model as it is.
func Parse(raw json.RawMessage) (*Workflow, error) {
	w, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	if err := Check(w); err != nil {
		return nil, err
	}
	return w, nil
}

// Check fills w's defaults (Normalize) and validates it (Validate), once:
// a workflow that passed is not validated again, whoever asks (Prepare,
// Waves). It returns nil or the invalid_args *tools.Failure of Validate.
// Change nothing in w after it passed.
func Check(w *Workflow) error {
	if w.checked {
		return nil
	}
	w.Normalize()
	if f := Validate(w); f != nil {
		return f
	}
	w.checked = true
	w.g = compileGraph(w)
	return nil
}

// graph is the compiled structure of a checked workflow; a workflow read
// back from the Log (normalised and valid when it was recorded) is
// compiled on first use.
func (w *Workflow) graph() *graph {
	if w.g == nil {
		w.g = compileGraph(w)
	}
	return w.g
}

// decodeFailure turns a JSON decoding error into a one-line invalid_args
// failure that names the field when the decoder knows it.
func decodeFailure(err error) *tools.Failure {
	msg := err.Error()
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		field := te.Field
		if rest, ok := strings.CutPrefix(field, "steps."); ok {
			field = "steps[]." + rest
		}
		if field == "" {
			field = "the workflow"
		}
		msg = fmt.Sprintf("%s: got JSON %s, want %s", field, te.Value, jsonTypeName(te.Type))
	}
	msg = strings.TrimPrefix(msg, "json: ")
	p := Problem{Code: "malformed_spec", Message: "the workflow spec is not valid JSON of the expected shape: " + msg}
	return &tools.Failure{Kind: tools.ErrInvalidArgs, Message: p.Message, Details: ValidationDetails{Problems: []Problem{p}}}
}

// jsonTypeName names a Go type as the JSON the model should have sent.
func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "JSON value" // json.RawMessage
		}
		return "array"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Pointer:
		return jsonTypeName(t.Elem())
	}
	return t.String()
}

// Normalize fills defaults in place and folds the aliases (validate_only
// into dry_run, prompt into task). It does not judge: bad values are left
// for Validate to report. Posture is derived when omitted: a step that names
// a write set is a writer, any other is read_only (least privilege: a step
// that needed to write fails visibly instead of silently claiming the whole
// workspace). Writers default to isolated workspaces and read-only steps to
// shared (ADR 0012); a writer without a write set claims WholeWorkspace, and
// a step without a read set is taken to read everything.
func (w *Workflow) Normalize() {
	w.DryRun, w.ValidateOnly = w.DryRun || w.ValidateOnly, false
	if w.MaxConcurrency == 0 && !w.zeroConcurrency {
		w.MaxConcurrency = DefaultMaxConcurrency
	}
	if w.FailurePolicy == "" {
		w.FailurePolicy = KeepGoing
	}
	if w.Merge == "" {
		w.Merge = MergeOnReady
	}
	if w.Commit != nil { // a commit's paths and exclude read as write sets do: src/ is src/**
		if w.Commit.Exclude != nil {
			w.Commit.Exclude = normalizePatterns(w.Commit.Exclude)
		}
		if w.Commit.requiresWritten == nil { // as written, for Validate to quote
			w.Commit.requiresWritten = slices.Clone(w.Commit.Requires)
		}
		for k, p := range w.Commit.Requires { // a path: its trailing "/" stays the folder
			w.Commit.Requires[k] = trimPath(p)
		}
		for k := range w.Commit.Commits {
			if c := &w.Commit.Commits[k]; c.Paths != nil {
				c.Paths = normalizePatterns(c.Paths)
			}
		}
	}
	for i := range w.Loops {
		l := &w.Loops[i]
		l.ID = strings.TrimSpace(l.ID)
		if l.OnExhausted == "" {
			l.OnExhausted = Hold
		}
		for k := range l.Steps {
			l.Steps[k] = strings.TrimSpace(l.Steps[k])
		}
	}
	for i := range w.Steps {
		s := &w.Steps[i]
		s.ID = strings.TrimSpace(s.ID)
		if s.ForEach != nil && s.ForEach.MaxItems == 0 && !s.ForEach.zeroMaxItems {
			s.ForEach.MaxItems = DefaultMaxItems
		}
		switch { // prompt is an alias of task; a different one stays for Validate
		case s.Task == "":
			s.Task, s.Prompt = s.Prompt, ""
		case s.Prompt == s.Task:
			s.Prompt = ""
		}
		if s.PermissionMode == "" {
			s.PermissionMode = ReadOnly
			if len(s.WriteSet) > 0 {
				s.PermissionMode = Writer
			}
		}
		if s.WorkspaceMode == "" {
			s.WorkspaceMode = Shared
			if s.PermissionMode == Writer {
				s.WorkspaceMode = Isolated
			}
		}
		if s.PermissionMode == Writer && len(s.WriteSet) == 0 {
			s.WriteSet = []string{WholeWorkspace}
		}
		if len(s.ReadSet) == 0 {
			s.ReadSet = []string{WholeWorkspace}
		}
		s.ReadSet = normalizePatterns(s.ReadSet)
		s.WriteSet = normalizePatterns(s.WriteSet)
		s.DependsOn = dedupe(s.DependsOn)
		if s.TimeoutMS == 0 {
			s.TimeoutMS = DefaultStepTimeoutMS
		}
		for k := range s.Verify {
			if s.Verify[k].Expect == "" {
				s.Verify[k].Expect = VerifyPass
			}
		}
	}
}

// MergePolicyOf is step s's merge policy: its own merge, else the
// workflow's, for an isolated writer; "" for any other step, which has no
// changes of its own to merge.
func (w *Workflow) MergePolicyOf(s *Step) MergePolicy {
	switch {
	case s.PermissionMode != Writer || s.WorkspaceMode != Isolated:
		return ""
	case s.Merge != "":
		return s.Merge
	case w.Merge != "":
		return w.Merge
	}
	return MergeOnReady
}

// normalizePatterns strips a leading "./" (models write it; doublestar would
// not match it) and turns a trailing "/" into "/**" (a directory means its
// contents).
func normalizePatterns(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, normalizePattern(p))
	}
	return out
}

// normalizePattern is one pattern as normalizePatterns reads it.
func normalizePattern(p string) string {
	p = trimPath(p)
	if strings.HasSuffix(p, "/") && len(p) > 1 {
		p = strings.TrimRight(p, "/") + "/**"
	}
	return p
}

// trimPath is a path or pattern as written, read as meant: spaces at
// either end and a leading "./" go.
func trimPath(p string) string {
	return trimDotSlash(strings.TrimSpace(p))
}

// trimDotSlash drops a path's leading "./" (however many): models write
// it, and doublestar would not match it.
func trimDotSlash(p string) string {
	for strings.HasPrefix(p, "./") {
		p = p[len("./"):]
	}
	return p
}

func dedupe(ids []string) []string {
	if len(ids) == 0 {
		return ids
	}
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
