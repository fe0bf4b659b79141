// Package workflows is run_workflow (ADR 0012, ADR 0014): the workflow
// spec and its validation, path-pattern overlap and the conflict rules,
// the dry run's waves, the event-driven scheduler (scheduler.go, driven by
// Run), checkpoint bundles and report_checkpoint, outcomes and their
// rebuilding from workflow_events, and resume_from. Nothing here starts a
// Session: every step is a Subagent of the runtime's Manager, reached
// through the Spawner interface.
package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

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

// Defaults applied by Normalize. DefaultMaxConcurrency matches the Subagents
// Manager's max_threads, so a default workflow never queues inside the Manager.
const (
	DefaultMaxConcurrency = 6
	DefaultStepTimeoutMS  = 120000
)

// WholeWorkspace is the pattern a writer without a write set claims, and a
// step without a read set is taken to read (ADR 0012: be conservative).
const WholeWorkspace = "**/*"

// Step is one delegated task in a Workflow.
type Step struct {
	// ID must match IDPattern: lowercase only, so ids cannot collide on a
	// case-insensitive filesystem or in ACP tool-call ids derived from them.
	ID             string          `json:"id"`
	Task           string          `json:"task"`
	Agent          string          `json:"agent,omitempty"`
	DependsOn      []string        `json:"depends_on,omitempty"`
	PermissionMode PermissionMode  `json:"permission_mode,omitempty"`
	ReadSet        []string        `json:"read_set,omitempty"`
	WriteSet       []string        `json:"write_set,omitempty"`
	WorkspaceMode  WorkspaceMode   `json:"workspace_mode,omitempty"`
	TimeoutMS      int64           `json:"timeout_ms,omitempty"`
	OutputSchema   json.RawMessage `json:"output_schema,omitempty"`

	// taskPromptClash records that the input gave both task and its alias
	// prompt with different texts, so Validate can report it.
	taskPromptClash bool
}

// stepWire is Step as it arrives, with prompt accepted as an alias of task
// (models trained on Claude Code's Task tool send prompt).
type stepWire struct {
	ID             string          `json:"id"`
	Task           string          `json:"task"`
	Prompt         string          `json:"prompt"`
	Agent          string          `json:"agent"`
	DependsOn      []string        `json:"depends_on"`
	PermissionMode PermissionMode  `json:"permission_mode"`
	ReadSet        []string        `json:"read_set"`
	WriteSet       []string        `json:"write_set"`
	WorkspaceMode  WorkspaceMode   `json:"workspace_mode"`
	TimeoutMS      int64           `json:"timeout_ms"`
	OutputSchema   json.RawMessage `json:"output_schema"`
}

// UnmarshalJSON accepts prompt as an alias of task and rejects unknown keys,
// so a misspelt field is an error the model sees instead of a silent default.
func (s *Step) UnmarshalJSON(b []byte) error {
	var w stepWire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return err // the outer decoder prefixes the field with "steps."
		}
		return fmt.Errorf("a step has %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	*s = Step{
		ID: w.ID, Task: w.Task, Agent: w.Agent, DependsOn: w.DependsOn,
		PermissionMode: w.PermissionMode, ReadSet: w.ReadSet, WriteSet: w.WriteSet,
		WorkspaceMode: w.WorkspaceMode, TimeoutMS: w.TimeoutMS, OutputSchema: w.OutputSchema,
	}
	switch {
	case s.Task == "":
		s.Task = w.Prompt
	case w.Prompt != "" && w.Prompt != s.Task:
		s.taskPromptClash = true
	}
	return nil
}

// Workflow is the run_workflow spec: ordered steps and workflow-wide knobs.
// Declaration order matters: it breaks every scheduling tie.
type Workflow struct {
	ID             string        `json:"id,omitempty"`
	Name           string        `json:"name,omitempty"`
	Steps          []Step        `json:"steps"`
	MaxConcurrency int           `json:"max_concurrency,omitempty"`
	TimeoutMS      int64         `json:"timeout_ms,omitempty"` // 0: no workflow-wide limit beyond each step's
	FailurePolicy  FailurePolicy `json:"failure_policy,omitempty"`
	DryRun         bool          `json:"dry_run,omitempty"`
	// ResumeFrom names an earlier run in the same session whose
	// checkpoint_ready steps are reused instead of run again (Reusable).
	ResumeFrom string `json:"resume_from,omitempty"`

	zeroConcurrency bool // max_concurrency was given as 0
}

// workflowWire accepts validate_only as an alias of dry_run (prior art §6).
type workflowWire struct {
	ID             string        `json:"id"`
	Name           string        `json:"name"`
	Steps          []Step        `json:"steps"`
	MaxConcurrency *int          `json:"max_concurrency"`
	TimeoutMS      int64         `json:"timeout_ms"`
	FailurePolicy  FailurePolicy `json:"failure_policy"`
	DryRun         bool          `json:"dry_run"`
	ValidateOnly   bool          `json:"validate_only"`
	ResumeFrom     string        `json:"resume_from"`
}

// Parse decodes a run_workflow spec, fills its defaults (Normalize) and
// validates it (Validate). Every error is a *tools.Failure of kind
// invalid_args, so the caller can hand it to the model as it is.
func Parse(raw json.RawMessage) (*Workflow, error) {
	var w workflowWire
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, decodeFailure(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, decodeFailure(errors.New("there is more after the spec object; send one JSON object"))
	}
	wf := &Workflow{
		ID: w.ID, Name: w.Name, Steps: w.Steps, TimeoutMS: w.TimeoutMS,
		FailurePolicy: w.FailurePolicy, DryRun: w.DryRun || w.ValidateOnly, ResumeFrom: w.ResumeFrom,
	}
	if w.MaxConcurrency != nil {
		wf.MaxConcurrency = *w.MaxConcurrency
		// An explicit 0 is a mistake for Validate to report, not a
		// request for the default.
		wf.zeroConcurrency = wf.MaxConcurrency == 0
	}
	wf.Normalize()
	if f := Validate(wf); f != nil {
		return nil, f
	}
	return wf, nil
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

// Normalize fills defaults in place. It does not judge: bad values are left
// for Validate to report. Posture is derived when omitted: a step that names
// a write set is a writer, any other is read_only (least privilege: a step
// that needed to write fails visibly instead of silently claiming the whole
// workspace). Writers default to isolated workspaces and read-only steps to
// shared (ADR 0012); a writer without a write set claims WholeWorkspace, and
// a step without a read set is taken to read everything.
func (w *Workflow) Normalize() {
	if w.MaxConcurrency == 0 && !w.zeroConcurrency {
		w.MaxConcurrency = DefaultMaxConcurrency
	}
	if w.FailurePolicy == "" {
		w.FailurePolicy = KeepGoing
	}
	for i := range w.Steps {
		s := &w.Steps[i]
		s.ID = strings.TrimSpace(s.ID)
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
	}
}

// normalizePatterns strips a leading "./" (models write it; doublestar would
// not match it) and turns a trailing "/" into "/**" (a directory means its
// contents).
func normalizePatterns(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		p = strings.TrimSpace(p)
		for strings.HasPrefix(p, "./") {
			p = strings.TrimPrefix(p, "./")
		}
		if strings.HasSuffix(p, "/") && len(p) > 1 {
			p = strings.TrimRight(p, "/") + "/**"
		}
		out = append(out, p)
	}
	return out
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
