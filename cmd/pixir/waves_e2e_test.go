package main

import (
	"encoding/json"
	"testing"

	"github.com/pixir-go/pixir/workflows"
	"github.com/stretchr/testify/require"
)

// loopScript answers loopedACPWorkflow's children but its reviewer: the
// split gives two tasks, the others just answer.
const loopScript = `
[[rule]]
name = "the split"
match = '\A\[split\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"two tasks","payload":{"tasks":[{"id":"t1"},{"id":"t2"}]}}'
  [[rule.reply]]
  text = "split"

[[rule]]
name = "the others"
match = '\A\[(draft|work|fix)\]'
  [[rule.reply]]
  text = "done"
`

// demoPlanWorkflow is the demo's "plan a workflow" graph: summary and
// index both write Markdown, so one runs after the other, but both are
// wave 2: a wave is a dependency level, not a dispatch round.
const demoPlanWorkflow = `{"name": "survey and summarize", "steps": [
  {"id": "survey", "agent": "explorer", "task": "List the files of the workspace and say what the project is."},
  {"id": "notes", "agent": "explorer", "task": "Read hello.txt if it exists and summarize it."},
  {"id": "summary", "task": "Write SUMMARY.md from your dependencies' checkpoints.", "depends_on": ["survey", "notes"], "write_set": ["SUMMARY.md"]},
  {"id": "index", "task": "Add a line for SUMMARY.md to INDEX.md.", "depends_on": ["notes"], "write_set": ["*.md"]}]}`

// dryRunWaves is each step's wave in pixir run --dry-run --json.
func dryRunWaves(t *testing.T, e *runEnv, wf string) map[string]int {
	t.Helper()
	stdout, stderr, code := e.pixir("run", "--workflow", wf, "--dry-run", "--json")
	require.Equal(t, exitOK, code, stderr)
	env := validEnvelope(t, stdout, "run_workflow_dry_run_output.json")
	var plan workflows.DryRunOutcome
	require.NoError(t, json.Unmarshal(mustJSON(t, env["output"]), &plan))
	waves := map[string]int{}
	for _, s := range plan.Steps {
		waves[s.ID] = s.Wave
	}
	for k, ids := range plan.Waves {
		for _, id := range ids {
			require.Equal(t, k+1, waves[id], "%s is listed in wave %d", id, k+1)
		}
	}
	return waves
}

// TestDryRunAndRunAgreeOnWaves: the dry run and a real run of the same
// workflow, through the built binary, give every step the same wave (a
// loop's first iteration, a fan-out's first instance), and the dry run
// says who runs after whom within a wave.
func TestDryRunAndRunAgreeOnWaves(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, spec, script string
		waves              map[string]int
		firstRun           map[string]string // step -> the run label compared ("": none)
		later              map[string]int    // later runs' waves, which go on from the first
	}{
		{"the demo's four steps", demoPlanWorkflow, `
[[rule]]
match = '.'
  [[rule.reply]]
  text = 'Done as asked.'
`, map[string]int{"survey": 1, "notes": 1, "summary": 2, "index": 2}, nil, nil},
		{"a loop of one iteration and a fan-out", loopedACPWorkflow, loopScript + reviewer("1", "ACCEPTABLE"),
			map[string]int{"draft": 1, "review": 2, "fix": 3, "split": 3, "work": 4},
			map[string]string{"draft": "draft#1", "review": "review#1", "work": "work[1]"},
			map[string]int{"work[2]": 4}},
		{"a loop of two iterations and a fan-out", loopedACPWorkflow, loopScript + reviewer("1", "NEEDS WORK", "name the owner") + reviewer("2", "ACCEPTABLE"),
			map[string]int{"draft": 1, "review": 2, "fix": 3, "split": 3, "work": 4},
			// The first iteration is the dry run's; split and work wait
			// for the whole loop, so they are compared below, not here.
			map[string]string{"draft": "draft#1", "review": "review#1", "split": "", "work": ""},
			// The second iteration goes on from the first's last wave.
			map[string]int{"draft#2": 3, "review#2": 4, "split": 5, "work[1]": 6, "work[2]": 6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t)
			wf := e.file("wf.json", c.spec)
			planned := dryRunWaves(t, e, wf)
			require.Equal(t, c.waves, planned, "the dry run's waves are dependency levels")

			script := e.file("script.toml", c.script)
			stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
			require.Equal(t, exitOK, code, stderr)
			out := runOutcome(t, stdout)
			ran := map[string]int{}
			compared := 0
			for _, s := range out.Steps {
				label := s.Run
				if label == "" {
					label = s.StepID
				}
				ran[label] = s.Wave
			}
			for _, s := range out.Steps {
				want, ok := c.firstRun[s.StepID]
				if !ok {
					want = s.StepID
				}
				label := s.Run
				if label == "" {
					label = s.StepID
				}
				if want == "" || label != want {
					continue // a later run, or one compared below
				}
				if s.CheckpointStatus == workflows.CheckpointSkipped {
					continue // a skipped step runs no child and has no wave
				}
				require.Equal(t, planned[s.StepID], s.Wave, "%s: the run's wave is the dry run's", s.StepID)
				compared++
			}
			require.GreaterOrEqual(t, compared, 2, "the runs compared with the dry run")
			for label, w := range c.later {
				require.Equal(t, w, ran[label], "%s", label)
			}
		})
	}
}

// TestDryRunSaysWhoRunsAfterWhomWithinAWave: holding a writer back behind
// an overlapping one is not a later wave; the dry run says so in words.
func TestDryRunSaysWhoRunsAfterWhomWithinAWave(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	wf := e.file("wf.json", demoPlanWorkflow)
	stdout, stderr, code := e.pixir("run", "--workflow", wf, "--dry-run")
	require.Equal(t, exitOK, code, stderr)
	for _, want := range []string{
		"Dry run: 4 steps in 2 waves",
		"Wave 1: survey, notes\nWave 2: summary, index\n",
		"Serialized (1 step held back; each keeps its wave and waits for another step or a slot):\n- within wave 2, index runs after summary: ",
	} {
		require.Contains(t, stdout, want)
	}
}
