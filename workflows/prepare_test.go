package workflows

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
)

// Prepare is the one way in: it checks the spec, resolves every step's
// agent and, for resume_from, needs the session's evidence; what it refuses
// never starts anything.
func TestPrepareRefusesBeforeAnythingStarts(t *testing.T) {
	sim := newSim(durations(nil))
	for _, tt := range []struct {
		name, spec string
		ports      Ports
		kind       tools.ErrorKind
		code       string
		contains   string
	}{
		{"an invalid graph", `{"steps":[{"id":"a","task":"x","depends_on":["a"]}]}`, sim.ports(),
			tools.ErrInvalidArgs, "self_dependency", "depends_on names the step itself"},
		{"an unknown agent, on each step that names it", `{"steps":[{"id":"a","task":"x","agent":"nobody"},{"id":"b","task":"x"},{"id":"c","task":"x","agent":"nobody"}]}`, sim.ports(),
			tools.ErrInvalidArgs, "unknown_agent", "steps[0] \"a\": there is no agent named \"nobody\"; use one of: default\nsteps[2] \"c\": there is no agent named"},
		{"an unknown earlier run", `{"resume_from":"wf-nope","steps":[{"id":"a","task":"x"}]}`, sim.ports(),
			tools.ErrInvalidArgs, "unknown_workflow", `there is no workflow "wf-nope" in this session's Log`},
		{"resume_from with no session's Log", `{"resume_from":"wf-1","steps":[{"id":"a","task":"x"}]}`, Ports{Agents: sim},
			tools.ErrInvalidArgs, "", "pixir resume SESSION_ID --workflow FILE --resume-from WORKFLOW_ID"},
		{"no ports: a wiring bug", `{"steps":[{"id":"a","task":"x"}]}`, Ports{},
			tools.ErrInternal, "", "this session cannot run workflows"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Decode(json.RawMessage(tt.spec))
			require.NoError(t, err)
			p, err := Prepare(w, tt.ports)
			require.Nil(t, p)
			f := tools.AsFailure(err)
			require.Equal(t, tt.kind, f.Kind)
			require.Contains(t, f.Message, tt.contains)
			if tt.code != "" {
				d, ok := f.Details.(ValidationDetails)
				require.True(t, ok, "%T", f.Details)
				require.Equal(t, tt.code, d.Problems[0].Code)
			}
		})
	}
	require.Empty(t, sim.order, "nothing started")
	require.Empty(t, sim.events, "nothing recorded")
}

// A workflow is checked once: Parse checks it, and Prepare and Waves take
// the checked workflow as it is (the defaults are filled, the aliases
// folded).
func TestAWorkflowIsCheckedOnce(t *testing.T) {
	w, err := Decode(json.RawMessage(`{"validate_only":true,"steps":[{"id":"a","prompt":"look"}]}`))
	require.NoError(t, err)
	require.False(t, w.DryRun)
	require.NoError(t, Check(w))
	require.True(t, w.DryRun, "validate_only is folded into dry_run")
	require.Equal(t, "look", w.Steps[0].Task, "prompt is folded into task")
	require.Empty(t, w.Steps[0].Prompt)
	require.Equal(t, DefaultMaxConcurrency, w.MaxConcurrency)

	// Checked, it is taken as it is: checking again changes nothing.
	before, _ := json.Marshal(w)
	require.NoError(t, Check(w))
	_, err = Prepare(w, newSim(durations(nil)).ports())
	require.NoError(t, err)
	after, _ := json.Marshal(w)
	require.JSONEq(t, string(before), string(after))

	// A different prompt beside task is an error, not a silent choice.
	_, err = Parse(json.RawMessage(`{"steps":[{"id":"a","task":"one","prompt":"two"}]}`))
	require.Equal(t, "task_prompt_mismatch", tools.AsFailure(err).Details.(ValidationDetails).Problems[0].Code)
}

// run_workflow is bound to the ports of its call; an unbound one (the
// catalogue's) refuses with an internal failure instead of running.
func TestRunWorkflowToolRunsWithTheCallsPorts(t *testing.T) {
	sim := newSim(durations(nil))
	tool := RunWorkflowTool(sim.ports())
	spec := json.RawMessage(`{"name":"pair","steps":[{"id":"a","task":"x"},{"id":"b","task":"y","depends_on":["a"]}]}`)
	require.Equal(t, "Workflow pair (2 steps)", tool.Describe(spec).Title)

	res := tool.DryRun(context.Background(), tools.Env{ToolCallID: "call-1"}, spec)
	require.True(t, res.OK, "%+v", res.Error)
	require.Equal(t, [][]string{{"a"}, {"b"}}, res.Output.(DryRunOutcome).Waves)
	require.Empty(t, sim.order, "a dry run starts nothing")

	// A run, with children that end as soon as they start.
	now := &chainChildren{endedAt: map[string]time.Time{}, prev: map[string]string{}}
	res = RunWorkflowTool(Ports{Agents: now, Children: now, Evidence: now}).Run(context.Background(), tools.Env{ToolCallID: "call-1"}, spec)
	require.True(t, res.OK, "%+v", res.Error)
	out := res.Output.(Outcome)
	require.Equal(t, StatusCompleted, out.Status)
	require.Equal(t, [][]string{{"a"}, {"b"}}, out.Waves)

	unbound := Tools()[0]
	require.Equal(t, RunWorkflowName, unbound.Name())
	res = unbound.Run(context.Background(), tools.Env{}, spec)
	require.Equal(t, tools.ErrInternal, res.Error.Kind)
}
