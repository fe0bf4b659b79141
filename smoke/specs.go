package smoke

import (
	_ "embed"
	"fmt"
	"sync"

	"github.com/pixir-go/pixir/runtime/provider/scripted"
)

//go:embed script.toml
var scriptTOML []byte

// ScriptName is the name the smoke's script reports in messages.
const ScriptName = "smoke/script.toml (embedded)"

var smokeScript = sync.OnceValues(func() (*scripted.Script, error) {
	return scripted.Parse(ScriptName, scriptTOML)
})

// Script is the scripted model of the offline smoke (script.toml): its
// rules key each step's child on a bracketed tag in the step's task.
func Script() (*scripted.Script, error) {
	s, err := smokeScript()
	if err != nil {
		return nil, fmt.Errorf("the smoke's embedded script is invalid: %w", err)
	}
	return s, nil
}

// invalidSpec is a workflow that validation must refuse with code.
type invalidSpec struct {
	name, code, about, spec string
}

// invalidSpecs are the structural errors of ADR 0012, each with the
// problem code it must produce. The same specs are sent through
// run_workflow in a turn by the script's [tool-invalid] rule.
var invalidSpecs = []invalidSpec{
	{"validate_unknown_dependency", "unknown_dependency", "a dependency on an unknown step is refused",
		`{"steps":[{"id":"a","task":"[ready] t","depends_on":["ghost"]}]}`},
	{"validate_cycle", "cycle", "a dependency cycle is refused, with its path",
		`{"steps":[{"id":"a","task":"[ready] t","depends_on":["c"]},{"id":"b","task":"[ready] t","depends_on":["a"]},{"id":"c","task":"[ready] t","depends_on":["b"]}]}`},
	{"validate_duplicate_id", "duplicate_id", "two steps with one id are refused",
		`{"steps":[{"id":"a","task":"[ready] t"},{"id":"a","task":"[ready] t"}]}`},
	{"validate_empty_workflow", "empty_workflow", "a workflow without steps is refused",
		`{"steps":[]}`},
	{"validate_invalid_pattern", "invalid_pattern", "a path pattern that leaves the workspace is refused",
		`{"steps":[{"id":"a","task":"[ready] t","write_set":["../outside/**"]}]}`},
	{"validate_invalid_output_schema", "invalid_output_schema", "an output_schema Pixir cannot check is refused",
		`{"steps":[{"id":"a","task":"[ready] t","output_schema":{"type":"object","if":{"required":["x"]}}}]}`},
}

// wantCycle is the path the cycle of validate_cycle must be reported
// with: from its earliest-declared step, each depending on the next.
var wantCycle = []string{"a", "c", "b", "a"}

// The workflows the offline smoke runs. Their tasks' tags pick each
// child's behaviour in script.toml.
const (
	// contractSpec: two slow read-only steps that must fan out, two
	// writers whose write sets overlap and must serialize, and a step
	// that depends on one of the readers. Every step becomes ready.
	// merge: never keeps the writers' files in their snapshots, where the
	// check looks for them (workflows-real checks a merge).
	contractSpec = `{"name": "smoke contract", "merge": "never", "steps": [
  {"id": "survey", "task": "[wait] Survey the workspace.", "read_set": ["**/*"]},
  {"id": "tests", "task": "[wait] List the tests."},
  {"id": "w1", "task": "[write] Write out/smoke.txt.", "write_set": ["out/**"]},
  {"id": "w2", "task": "[write] Write out/smoke.txt too.", "write_set": ["out/*.txt"]},
  {"id": "use", "task": "[ready] Build on the survey.", "depends_on": ["survey"]}]}`

	// timeoutSpec: one step times out while another is ready; the
	// timed-out step's dependent is held.
	timeoutSpec = `{"name": "smoke timeout", "steps": [
  {"id": "quick", "task": "[ready] Answer at once."},
  {"id": "stuck", "task": "[hang] Never answer.", "timeout_ms": 300},
  {"id": "after", "task": "[ready] Build on stuck.", "depends_on": ["stuck"]}]}`

	// checkpointsSpec: a partial report, a needs_orchestrator report, a
	// partial by a final-message marker, a ready step, and a dependent of
	// the partial step (held).
	checkpointsSpec = `{"name": "smoke checkpoints", "steps": [
  {"id": "done", "task": "[ready] Answer at once."},
  {"id": "half", "task": "[partial] Check every file."},
  {"id": "unsure", "task": "[needs] Settle the return type of Load."},
  {"id": "noted", "task": "[marker] List the modules."},
  {"id": "next", "task": "[ready] Build on half.", "depends_on": ["half"]}]}`

	// typedSpec: two steps with an output_schema: one reports a matching
	// payload, the other one that does not match.
	typedSpec = `{"name": "smoke typed", "steps": [
  {"id": "typed", "task": "[typed] List the files to change.", "output_schema": ` + filesSchema + `},
  {"id": "bad", "task": "[badpayload] List the files to change.", "output_schema": ` + filesSchema + `}]}`

	filesSchema = `{"type": "object", "required": ["files"], "properties": {"files": {"type": "array", "items": {"type": "string"}}}}`
)

// runSpec is a workflow the offline smoke plans and runs.
type runSpec struct{ name, spec string }

var runSpecs = []runSpec{
	{"contract", contractSpec},
	{"timeout", timeoutSpec},
	{"checkpoints", checkpointsSpec},
	{"typed", typedSpec},
}
