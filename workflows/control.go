package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// The control flow a workflow may carry beyond its dependency graph
// (issue 12): conditions on the checkpoints of upstream steps (when, and
// a loop's until), bounded loops over groups of steps, and fan-out of a
// step over an array in an upstream step's typed payload. The spec is
// checked before anything starts (validate_control.go); the scheduler
// decides every condition from the checkpoints it has seen alone
// (scheduler.go), and each decision is a workflow_event.

// Condition tests the checkpoints of steps upstream: a leaf names a step
// and tests its checkpoint status and/or a value of its typed payload (a
// JSON Pointer into it); all, any and not combine conditions. A leaf
// without a test is true when the step is checkpoint_ready.
type Condition struct {
	// Step is the step whose checkpoint is tested: upstream of the step
	// that carries the condition (or, in a loop's until, in the loop).
	Step string `json:"step,omitempty"`
	// Status lists the checkpoint statuses that make the leaf true.
	// Without it, the step must be checkpoint_ready.
	Status []CheckpointStatus `json:"status,omitempty"`
	// Path is a JSON Pointer into the step's payload (/verdict,
	// /findings/0/kind); with it, exactly one of Equals, In, Contains or
	// Exists.
	Path     string            `json:"path,omitempty"`
	Equals   json.RawMessage   `json:"equals,omitempty"`
	In       []json.RawMessage `json:"in,omitempty"`
	Contains json.RawMessage   `json:"contains,omitempty"`
	Exists   *bool             `json:"exists,omitempty"`

	All []Condition `json:"all,omitempty"`
	Any []Condition `json:"any,omitempty"`
	Not *Condition  `json:"not,omitempty"`
}

// UnmarshalJSON rejects unknown keys.
func (c *Condition) UnmarshalJSON(b []byte) error {
	type plain Condition
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode((*plain)(c)); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return err
		}
		return fmt.Errorf("a condition has %s (a condition has step, status, path, equals, in, contains, exists, all, any, not)", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// Conditions is one condition or a list of them, all of which must hold:
// `when: {step: review, path: /verdict, equals: ACCEPTABLE}` or
// `when: [{…}, {…}]`. Its schema for the model (an object or an array,
// without recursion or combinators, which some providers reject) is written
// by hand in schemas/generate (reflector).
type Conditions []Condition

// UnmarshalJSON accepts a single condition object or an array of them.
func (cs *Conditions) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var c Condition
		if err := json.Unmarshal(b, &c); err != nil {
			return err
		}
		*cs = Conditions{c}
		return nil
	}
	var list []Condition
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*cs = list
	return nil
}

// JoinMode says what a step with several dependencies waits for.
type JoinMode string

const (
	// JoinAll (the default): every dependency must be checkpoint_ready; a
	// skipped dependency skips the step.
	JoinAll JoinMode = "all"
	// JoinAny: the step runs when at least one dependency is
	// checkpoint_ready once all are decided (the others skipped or not
	// ready): the join of alternative branches.
	JoinAny JoinMode = "any"
)

// ForEach instantiates a step once per item of an array in an upstream
// step's payload.
type ForEach struct {
	Step string `json:"step" jsonschema_description:"The upstream step (with an output_schema) whose payload holds the array."`
	Path string `json:"path" jsonschema_description:"JSON Pointer to the array in that payload, e.g. /tasks."`
	// MaxItems caps the instances; an array longer than the cap fails the
	// step instead of starting more children than the spec allowed.
	MaxItems int `json:"max_items,omitempty" jsonschema:"minimum=1,maximum=1000" jsonschema_description:"Most items (instances); more fail the step. Default 10."`
	// zeroMaxItems: max_items was given as 0, which Validate refuses (not
	// the default an absent one gets).
	zeroMaxItems bool
}

// UnmarshalJSON rejects unknown keys.
func (f *ForEach) UnmarshalJSON(b []byte) error {
	type plain ForEach
	const absent = math.MinInt
	f.MaxItems = absent
	err := strictDecode(b, (*plain)(f), "for_each", "step, path, max_items")
	switch f.MaxItems {
	case absent:
		f.MaxItems = 0
	case 0:
		f.zeroMaxItems = true
	}
	return err
}

// DefaultMaxItems is a fan-out's cap when the spec gives none; MaxItemsLimit
// the largest cap a spec may ask for.
const (
	DefaultMaxItems = 10
	MaxItemsLimit   = 1000
)

// ExhaustionPolicy is what a loop that ends unresolved (its until never
// held: max_iterations reached, or converged) does to its dependents.
type ExhaustionPolicy string

const (
	// Hold (the default): the steps that depend on the loop are held, and
	// the workflow is partial.
	Hold ExhaustionPolicy = "hold"
	// Proceed: the dependents run on the last iteration's checkpoints; the
	// loop's unresolved blockers become seam obligations and known
	// limitations of the outcome.
	Proceed ExhaustionPolicy = "proceed"
)

// MaxIterationsLimit is the largest max_iterations a loop may have.
const MaxIterationsLimit = 100

// Loop is a group of steps that repeats, bounded: each iteration runs
// the group's steps again (each run its own child, checkpoint and events;
// an iteration's steps receive the previous iteration's checkpoints) until
// its until condition holds, its converge value repeats, or
// max_iterations is reached. Loops are groups within the DAG, never free
// cycles; a loop may hold another loop (all of whose steps it holds).
type Loop struct {
	ID            string           `json:"id" jsonschema:"pattern=^[a-z][a-z0-9_-]{0\\,63}$" jsonschema_description:"Unique loop id (distinct from step ids)."`
	Steps         []string         `json:"steps" jsonschema:"minItems=1" jsonschema_description:"The ids of the steps that repeat together. Steps outside that depend on them wait for the loop's end and see its last iteration."`
	MaxIterations int              `json:"max_iterations,omitempty" jsonschema:"minimum=1,maximum=100" jsonschema_description:"Most iterations; required: the runtime enforces it."`
	Until         Conditions       `json:"until,omitempty" jsonschema_description:"The loop ends satisfied when this holds at the end of an iteration. Default: every step of the iteration that ran is checkpoint_ready."`
	Converge      Converges        `json:"converge,omitempty" jsonschema_description:"Stop early when a payload value repeats: {step, path: JSON Pointer into that step's payload}, or a list of them that must all repeat (e.g. both reviewers' findings); each compared canonically with the previous iteration's (key order and array order do not matter)."`
	OnExhausted   ExhaustionPolicy `json:"on_exhausted,omitempty" jsonschema:"enum=hold,enum=proceed" jsonschema_description:"When the loop ends unresolved (max_iterations reached, or converged): hold (default) holds its dependents and the workflow is partial; proceed lets them run and reports the blockers."`
}

// UnmarshalJSON rejects unknown keys.
func (l *Loop) UnmarshalJSON(b []byte) error {
	type plain Loop
	return strictDecode(b, (*plain)(l), "a loop", "id, steps, max_iterations, until, converge, on_exhausted")
}

// Converge names the payload value whose repetition ends a loop early.
type Converge struct {
	Step string `json:"step" jsonschema_description:"A step of the loop with an output_schema."`
	Path string `json:"path" jsonschema_description:"JSON Pointer into its payload, e.g. /findings."`
}

// UnmarshalJSON rejects unknown keys.
func (c *Converge) UnmarshalJSON(b []byte) error {
	type plain Converge
	return strictDecode(b, (*plain)(c), "converge", "step, path")
}

// text is the value as people read it: `check-plan /findings`.
func (c Converge) text() string { return c.Step + " " + c.Path }

// Converges is one converge value or a list of them: `converge: {step:
// check-plan, path: /findings}` or `converge: [{…}, {…}]`. With a list the
// loop converges only when every value is the same as in the previous
// iteration (both reviewers repeat their findings). Its schema for the
// model (an object or an array) is written by hand in schemas/generate
// (reflector).
type Converges []Converge

// UnmarshalJSON accepts a single converge object or an array of them.
func (cs *Converges) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '{' {
		var c Converge
		if err := json.Unmarshal(b, &c); err != nil {
			return err
		}
		*cs = Converges{c}
		return nil
	}
	var list []Converge
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	if list == nil {
		list = Converges{} // converge: [] is given (and refused), not absent
	}
	*cs = list
	return nil
}

// MarshalJSON writes one value as the object it was written as, so a
// spec with a single converge reads (and hashes) as before lists.
func (cs Converges) MarshalJSON() ([]byte, error) {
	if len(cs) == 1 {
		return json.Marshal(cs[0])
	}
	return json.Marshal([]Converge(cs))
}

// text is the values as people read them: `check-plan /findings, simplify-plan /findings`.
func (cs Converges) text() string {
	parts := make([]string, len(cs))
	for k, c := range cs {
		parts[k] = c.text()
	}
	return strings.Join(parts, ", ")
}

// strictDecode decodes b into v rejecting unknown keys, naming what and
// the keys it allows.
func strictDecode(b []byte, v any, what, keys string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return err
		}
		return fmt.Errorf("%s has %s (allowed: %s)", what, strings.TrimPrefix(err.Error(), "json: "), keys)
	}
	return nil
}
