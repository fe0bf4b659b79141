package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/workflows"
)

// The control flow of issue 12 through the binary, on the offline
// scripted provider: review loops that pass, converge or exhaust, a
// fan-out held to its items' files, an escalation that recovers, and a
// loop killed mid-way and resumed.

// reviewLoop is a plan written and reviewed until the reviewer accepts
// it, at most 3 times; the reviewer's findings decide convergence.
const reviewLoop = `name: review loop
steps:
  - id: draft
    task: "[draft] Write plan.md."
    write_set: [plan.md]
  - id: review
    agent: explorer
    task: "[review] Review plan.md."
    depends_on: [draft]
    output_schema:
      type: object
      required: [verdict, findings]
      properties:
        verdict: {enum: [ACCEPTABLE, NEEDS WORK]}
        findings: {type: array, items: {type: string}}
  - id: ship
    task: "[ship] Summarize what was decided."
    depends_on: [review]
loops:
  - id: plan
    steps: [draft, review]
    max_iterations: 3
    until: {step: review, path: /verdict, equals: ACCEPTABLE}
    converge: {step: review, path: /findings}
    on_exhausted: proceed
`

// drafter writes plan.md: it reads what the previous iteration wrote
// (its snapshot inherits it), then writes its own.
const drafter = `
[[rule]]
name = "the drafter"
match = '\A\[draft\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "read"
  arguments = { path = "plan.md" }
  [[rule.reply]]
  text = "{{if ok .ToolResult}}revising: {{output .ToolResult | oneline}}{{else}}a first draft{{end}}"
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "plan.md", content = "the plan, revised\n" }
  [[rule.reply]]
  text = "written"

[[rule]]
name = "the summary"
match = '\A\[ship\]'
  [[rule.reply]]
  text = "shipped"
`

// reviewer is the reviewer's rule for one iteration: it reports a typed
// verdict. The iteration is in its prompt ("This is iteration N of at
// most 3 of loop …").
func reviewer(iteration, verdict string, findings ...string) string {
	f, _ := json.Marshal(append([]string{}, findings...))
	args, _ := json.Marshal(map[string]any{"status": "checkpoint_ready", "summary": verdict, "payload": map[string]any{"verdict": verdict, "findings": json.RawMessage(f)}})
	return `
[[rule]]
name = "the reviewer, iteration ` + iteration + `"
match = '(?s)\A\[review\].*This is iteration ` + iteration + ` of'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '` + string(args) + `'
  [[rule.reply]]
  text = "reviewed"
`
}

// runOutcome decodes pixir run --json's outcome.
func runOutcome(t *testing.T, stdout string) workflows.Outcome {
	t.Helper()
	env := validEnvelope(t, stdout, "run_workflow_output.json")
	var out workflows.Outcome
	require.NoError(t, json.Unmarshal(mustJSON(t, env["output"]), &out))
	return out
}

func runOf(t *testing.T, out workflows.Outcome, run string) workflows.StepOutcome {
	t.Helper()
	for _, s := range out.Steps {
		if s.Run == run {
			return s
		}
	}
	t.Fatalf("no run %q in the outcome:\n%s", run, out.Output)
	return workflows.StepOutcome{}
}

func sessionOf(t *testing.T, ws, stderr string) string {
	t.Helper()
	// The run's last line names it by a unique start of its id, which
	// pixir resume and inspect take.
	sid := regexp.MustCompile(`pixir: session ([0-9a-f-]{8,}) `).FindStringSubmatch(stderr)
	require.NotNil(t, sid, stderr)
	logs, err := filepath.Glob(filepath.Join(ws, ".pixir", "sessions", sid[1]+"*.ndjson"))
	require.NoError(t, err)
	require.Len(t, logs, 1, "%s is the start of one session's id", sid[1])
	return strings.TrimSuffix(filepath.Base(logs[0]), ".ndjson")
}

func TestReviewLoopsThroughTheBinary(t *testing.T) {
	cases := []struct {
		name      string
		reviewers string
		runs      []string
		loop      workflows.LoopOutcome
		shipSees  string
	}{{
		name:      "two iterations, then it passes",
		reviewers: reviewer("1", "NEEDS WORK", "name the owner") + reviewer("2", "ACCEPTABLE"),
		runs:      []string{"draft#1", "review#1", "draft#2", "review#2", "ship"},
		loop:      workflows.LoopOutcome{Loop: "plan", Run: "plan", Iterations: 2, MaxIterations: 3, State: workflows.LoopSatisfied, OnExhausted: workflows.Proceed, Blockers: []string{}},
	}, {
		name:      "the same finding twice: converged, stopped early",
		reviewers: reviewer("1", "NEEDS WORK", "name the owner") + reviewer("2", "NEEDS WORK", "name the owner") + reviewer("3", "ACCEPTABLE"),
		runs:      []string{"draft#1", "review#1", "draft#2", "review#2", "ship"},
		loop:      workflows.LoopOutcome{Loop: "plan", Run: "plan", Iterations: 2, MaxIterations: 3, State: workflows.LoopConverged, OnExhausted: workflows.Proceed, Blockers: []string{"name the owner"}},
		shipSees:  "- name the owner",
	}, {
		name:      "exhausted at 3, proceeding with its blockers",
		reviewers: reviewer("1", "NEEDS WORK", "a") + reviewer("2", "NEEDS WORK", "b") + reviewer("3", "NEEDS WORK", "c", "d"),
		runs:      []string{"draft#1", "review#1", "draft#2", "review#2", "draft#3", "review#3", "ship"},
		loop:      workflows.LoopOutcome{Loop: "plan", Run: "plan", Iterations: 3, MaxIterations: 3, State: workflows.LoopExhausted, OnExhausted: workflows.Proceed, Blockers: []string{"c", "d"}},
		shipSees:  "- c\n- d\n",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newRunEnv(t)
			script := e.file("script.toml", drafter+c.reviewers)
			wf := e.file("wf.yaml", reviewLoop)
			stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
			require.Equal(t, exitOK, code, stderr)
			out := runOutcome(t, stdout)
			require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)
			var runs []string
			for _, s := range out.Steps {
				runs = append(runs, s.Run)
			}
			require.Equal(t, c.runs, runs)
			require.Equal(t, []workflows.LoopOutcome{c.loop}, out.Loops)
			// Each iteration's runs are their own children, with their own logs.
			d2 := runOf(t, out, "draft#2")
			require.NotEqual(t, runOf(t, out, "draft#1").AgentID, d2.AgentID)
			drafted := childLog(t, e.ws, d2)
			prompt := firstUserText(t, drafted)
			require.Contains(t, prompt, `This is iteration 2 of at most 3 of loop "plan".`)
			require.Contains(t, prompt, "The previous iteration (1) of loop \"plan\" ended with these checkpoints")
			require.Contains(t, logText(drafted), "revising: the plan, revised", "the second draft starts from the first one's file")
			if c.shipSees != "" {
				shipped := firstUserText(t, childLog(t, e.ws, runOf(t, out, "ship")))
				require.Contains(t, shipped, c.shipSees, "the blockers reach the dependent that proceeds")
				require.Contains(t, out.KnownLimitations[0], "its dependents proceeded with")
			}
			// The live view's lines, and the Log rebuilds the outcome.
			require.Contains(t, stderr, "loop plan: iteration 2 of 3 started")
			require.Contains(t, stderr, "step review#2 checkpoint_ready")
			events := readLog(t, e.ws, sessionOf(t, e.ws, stderr))
			rebuilt := workflows.Rebuild(workflowEvents(t, events))
			require.Len(t, rebuilt, 1)
			want, _ := json.Marshal(out)
			got, _ := json.Marshal(rebuilt[0])
			require.JSONEq(t, string(want), string(got))
		})
	}
}

// logText is every text of a child's Log, for searching.
func logText(events []logEvent) string {
	var b strings.Builder
	for _, ev := range events {
		b.Write(ev.Data)
		b.WriteByte('\n')
	}
	return strings.ReplaceAll(b.String(), `\n`, "\n")
}

func TestFanOutHoldsEachInstanceToItsFiles(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
name = "the split"
match = '\A\[split\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"three tasks","payload":{"tasks":[{"id":"t1","file":"src/one.go"},{"id":"t2","file":"src/two.go"},{"id":"t3","file":"docs/three.md"}]}}'
  [[rule.reply]]
  text = "split"

[[rule]]
name = "task 2 tries a file of task 1 first"
match = '(?s)\A\[make\].*your item: \{"file":"src/two.go"'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "src/one.go", content = "not mine\n" }
  [[rule.reply]]
  text = "{{output .ToolResult | oneline}}"
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "src/two.go", content = "two\n" }
  [[rule.reply]]
  text = "done"

[[rule]]
name = "task 1"
match = '(?s)\A\[make\].*your item: \{"file":"src/one.go"'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "src/one.go", content = "one\n" }
  [[rule.reply]]
  text = "done"

[[rule]]
name = "task 3"
match = '(?s)\A\[make\].*your item: \{"file":"docs/three.md"'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "docs/three.md", content = "three\n" }
  [[rule.reply]]
  text = "done"

[[rule]]
name = "the join"
match = '\A\[join\]'
  [[rule.reply]]
  text = "all three are in"
`)
	wf := e.file("wf.yaml", `steps:
  - id: split
    task: "[split] Split the work into tasks."
    output_schema:
      type: object
      required: [tasks]
      properties:
        tasks: {type: array, items: {type: object, required: [id, file], properties: {id: {type: string}, file: {type: string}}}}
  - id: make
    task: "[make] Do task ${item.id}: change ${item.file} only."
    depends_on: [split]
    for_each: {step: split, path: /tasks, max_items: 5}
    write_set: ["${item.file}"]
  - id: join
    task: "[join] Check that every task is done."
    depends_on: [make]
`)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
	require.Equal(t, exitOK, code, stderr)
	out := runOutcome(t, stdout)
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)
	require.Equal(t, [][]string{{"split"}, {"make[1]", "make[2]", "make[3]"}, {"join"}}, out.Waves, "disjoint files: the instances run side by side")
	two := runOf(t, out, "make[2]")
	require.Equal(t, 2, two.Item)
	require.Equal(t, []string{"src/two.go"}, two.Changes.Added)
	require.Contains(t, logText(childLog(t, e.ws, two)), "src/one.go is outside this workflow step's write_set (src/two.go)")
	// Its refused write left nothing: src/one.go is in its snapshot only
	// when make[1] had merged before it started (whole, then: a copy waits
	// for a merge), with make[1]'s content.
	if b, err := os.ReadFile(filepath.Join(e.ws, ".pixir", "subagents", two.AgentID, "workspace", "src", "one.go")); err == nil {
		require.Equal(t, "one\n", string(b), "make[2]'s refused write reached its workspace")
	} else {
		require.ErrorIs(t, err, fs.ErrNotExist)
	}
	merged, err := os.ReadFile(filepath.Join(e.ws, "src", "one.go"))
	require.NoError(t, err)
	require.Equal(t, "one\n", string(merged), "make[1]'s file, not make[2]'s")
	require.Equal(t, []string{"docs/three.md"}, runOf(t, out, "make[3]").Changes.Added)
	joined := firstUserText(t, childLog(t, e.ws, runOf(t, out, "join")))
	for _, r := range []string{"make[1]", "make[2]", "make[3]"} {
		require.Contains(t, joined, "### "+r+" (checkpoint_ready")
	}
	require.Contains(t, stderr, "step make fans out over 3 items (max 5)")
}

func TestAnEscalationBranchRecovers(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
name = "make, first attempt: stuck"
match = '(?s)\A\[make\].*This is iteration 1 of'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"partial","summary":"stuck: the test wants an impossible signature","known_limitations":["escalate: test_design"]}'
  [[rule.reply]]
  text = "stuck"

[[rule]]
name = "make, after the redesign"
match = '\A\[make\]'
  [[rule.reply]]
  text = "GREEN"

[[rule]]
name = "check diagnoses"
match = '\A\[diagnose\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"the test is at fault","payload":{"test_design_error":true}}'
  [[rule.reply]]
  text = "diagnosed"

[[rule]]
name = "test redesigns"
match = '\A\[redesign\]'
  [[rule.reply]]
  text = "tests redesigned"

[[rule]]
name = "review"
match = '\A\[review\]'
  [[rule.reply]]
  text = "fine"
`)
	wf := e.file("wf.yaml", `steps:
  - id: make
    task: "[make] Implement the task."
  - id: diagnose
    task: "[diagnose] make is stuck: is the test at fault?"
    depends_on: [make]
    when: {step: make, status: [partial, needs_orchestrator]}
    output_schema: {type: object, required: [test_design_error], properties: {test_design_error: {type: boolean}}}
  - id: redesign
    task: "[redesign] Redesign the test."
    depends_on: [diagnose]
    when: {step: diagnose, path: /test_design_error, equals: true}
  - id: review
    task: "[review] Review the change."
    depends_on: [make]
loops:
  - id: escalation
    steps: [make, diagnose, redesign]
    max_iterations: 2
    until: {step: make}
`)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
	require.Equal(t, exitOK, code, stderr)
	out := runOutcome(t, stdout)
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)
	var runs []string
	for _, s := range out.Steps {
		runs = append(runs, s.Run+":"+string(s.CheckpointStatus))
	}
	require.Equal(t, []string{"make#1:partial", "diagnose#1:checkpoint_ready", "redesign#1:checkpoint_ready",
		"make#2:checkpoint_ready", "diagnose#2:skipped", "redesign#2:skipped", "review:checkpoint_ready"}, runs)
	require.True(t, runOf(t, out, "make#1").Superseded)
	require.Equal(t, []string{"diagnose#2", "redesign#2"}, out.SkippedSteps)
	require.Contains(t, firstUserText(t, childLog(t, e.ws, runOf(t, out, "make#2"))), "redesign#1 (checkpoint_ready")
	require.Contains(t, out.Output, "- escalation: satisfied at iteration 2 of 2")

	// pixir inspect tells the same story from the Log.
	text, errOut, code := e.pixir("inspect", sessionOf(t, e.ws, stderr))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, text, "loop escalation: satisfied at iteration 2 of 2")
	require.Contains(t, text, "step make#1 default")
	require.Contains(t, text, "step diagnose#2 default")
	require.Contains(t, text, "skipped: its condition was false: make status in [partial, needs_orchestrator] (saw checkpoint_ready): false")
}

// loopStoppedInReview2 runs reviewLoop headless with a reviewer that never
// answers in iteration 2, and sends sig to pixir once review#2 runs: what
// it printed, how it exited, and the workflow file.
func loopStoppedInReview2(t *testing.T, e *runEnv, sig os.Signal) (stdout, stderr string, exit *exec.ExitError, wf string) {
	t.Helper()
	hung := e.file("hung.toml", drafter+reviewer("1", "NEEDS WORK", "name the owner")+`
[[rule]]
name = "the reviewer, iteration 2, never answers"
match = '(?s)\A\[review\].*This is iteration 2 of'
  [[rule.reply]]
  hang = true
`)
	wf = e.file("wf.yaml", reviewLoop)
	cmd := e.command("run", "--script", hung, "--workflow", wf, "--json")
	var out bytes.Buffer
	errOut := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = &out, errOut
	require.NoError(t, cmd.Start())
	errOut.waitFor("step review#2 running")
	require.NoError(t, cmd.Process.Signal(sig))
	require.True(t, errors.As(cmd.Wait(), &exit))
	return out.String(), errOut.String(), exit, wf
}

// A loop killed mid-way (kill -9) and resumed: the iterations that ended
// and the ready runs of the one under way are reused; only what was not
// decided runs.
func TestALoopKilledMidwayResumesWhereItStopped(t *testing.T) {
	e := newRunEnv(t)
	_, _, _, wf := loopStoppedInReview2(t, e, syscall.SIGKILL)
	// The session id is printed at the end, which never came: the Log
	// is the one session of the workspace.
	sid := onlySession(t, e.ws)
	var wfID string
	for _, ev := range workflowEvents(t, readLog(t, e.ws, sid)) {
		wfID = ev.WorkflowID
	}
	rebuilt := workflows.Rebuild(workflowEvents(t, readLog(t, e.ws, sid)))
	require.Equal(t, workflows.StoppedInterrupted, rebuilt[0].StoppedBy)
	require.Equal(t, workflows.LoopInterrupted, rebuilt[0].Loops[0].State)

	good := e.file("good.toml", drafter+reviewer("1", "NEEDS WORK", "name the owner")+reviewer("2", "ACCEPTABLE"))
	out2, err2, code := e.pixir("resume", sid, "--script", good, "--workflow", wf, "--resume-from", wfID, "--json")
	require.Equal(t, exitOK, code, err2)
	out := runOutcome(t, out2)
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)
	for _, r := range []string{"draft#1", "review#1", "draft#2"} {
		require.Equal(t, wfID, runOf(t, out, r).ReusedFrom, "%s ran before the kill: reused", r)
	}
	require.Empty(t, runOf(t, out, "review#2").ReusedFrom)
	require.Equal(t, 2, out.Loops[0].Iterations)
	// Only review#2 and ship got children in the resumed run.
	var started []string
	for _, d := range subagentEvents(t, readLog(t, e.ws, sid)) {
		if d.Event == "started" && d.Name != "" {
			started = append(started, d.Name)
		}
	}
	require.Equal(t, []string{"draft#1", "review#1", "draft#2", "review#2", "review#2", "ship"}, started)
}

// loopedACPWorkflow is run_workflow's arguments for the ACP plan test: a
// review loop that passes at its second iteration, a fix branch that is
// skipped, and a fan-out over two tasks.
const loopedACPWorkflow = `{"name": "looped", "steps": [
  {"id": "draft", "task": "[draft] Write plan.md.", "write_set": ["plan.md"]},
  {"id": "review", "agent": "explorer", "task": "[review] Review plan.md.", "depends_on": ["draft"],
   "output_schema": {"type": "object", "required": ["verdict", "findings"], "properties": {"verdict": {"enum": ["ACCEPTABLE", "NEEDS WORK", "BLOCK"]}, "findings": {"type": "array", "items": {"type": "string"}}}}},
  {"id": "fix", "task": "[fix] Answer the block.", "depends_on": ["review"], "when": {"step": "review", "path": "/verdict", "equals": "BLOCK"}},
  {"id": "split", "task": "[split] Split the plan.", "depends_on": ["review"],
   "output_schema": {"type": "object", "required": ["tasks"], "properties": {"tasks": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}}}},
  {"id": "work", "task": "[work] Do task ${item.id}.", "depends_on": ["split"], "for_each": {"step": "split", "path": "/tasks", "max_items": 4}}],
 "loops": [{"id": "plan", "steps": ["draft", "review"], "max_iterations": 3,
   "until": {"step": "review", "path": "/verdict", "equals": "ACCEPTABLE"}, "on_exhausted": "proceed"}]}`

// The ACP plan of a looped run shows each iteration's runs (review#2),
// the loop's state, a skipped branch and each fan-out instance; the
// final table has them too.
func TestACPPlanShowsIterationsSkipsInstancesAndLoops(t *testing.T) {
	t.Parallel()
	args, err := json.Marshal(json.RawMessage(loopedACPWorkflow))
	require.NoError(t, err)
	e := newEnv(t, `
[[rule]]
name = "the parent"
match = '^cf looped$'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "run_workflow"
  arguments_json = '''`+string(args)+`'''
  [[rule.reply]]
  text = 'The workflow ended {{field "output.status" .ToolResult}}.'
`+loopScript+reviewer("1", "NEEDS WORK", "name the owner")+reviewer("2", "ACCEPTABLE"))
	a := e.start()
	a.initialize()
	sid := a.newSession()
	m, before := a.call(2, "session/prompt", promptParams(sid, "cf looped"))
	require.Equal(t, "end_turn", stopReason(t, m))
	ups := updates(t, before)

	var last []string
	var statuses []string
	for _, u := range ups {
		if u["sessionUpdate"] != "plan" {
			continue
		}
		last, statuses = nil, nil
		for _, e := range u["entries"].([]any) {
			entry := e.(map[string]any)
			last = append(last, entry["content"].(string))
			statuses = append(statuses, entry["status"].(string))
		}
	}
	require.Equal(t, []string{
		"loop plan: satisfied at iteration 2 of 3",
		"draft#1: [draft] Write plan.md. — checkpoint_ready",
		"draft#2: [draft] Write plan.md. — checkpoint_ready",
		"review#1: [review] Review plan.md. — checkpoint_ready",
		"review#2: [review] Review plan.md. — checkpoint_ready",
		"fix: [fix] Answer the block. — skipped",
		"split: [split] Split the plan. — checkpoint_ready",
		"work[1]: [work] Do task t1. — checkpoint_ready",
		"work[2]: [work] Do task t2. — checkpoint_ready",
	}, last, "the last plan the editor got")
	for i, s := range statuses {
		require.Equal(t, "completed", s, last[i])
	}
	end := lastUpdateOf(t, ups, workflowCallID(t, ups, "Workflow looped"))
	require.Equal(t, "completed", end["status"])
	table := toolCallText(t, end)
	for _, want := range []string{"| review#2 | explorer |", "| fix | default | – | not_started | skipped |", "| work[2] | default |", "- plan: satisfied at iteration 2 of 3"} {
		require.Contains(t, table, want)
	}
}

// The dry run of a looped workflow shows each loop's bound, each fan-out's
// cap, the worst case of step runs and the first iteration's waves.
func TestDryRunShowsLoopsFanOutsAndTheWorstCase(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	wf := e.file("wf.json", loopedACPWorkflow)
	stdout, stderr, code := e.pixir("run", "--workflow", wf, "--dry-run")
	require.Equal(t, exitOK, code, stderr)
	for _, want := range []string{
		"Dry run: 5 steps in 4 waves",
		"At most 12 step runs (every loop to its max_iterations, every fan-out to its max_items)",
		"Wave 1: draft\nWave 2: review\nWave 3: fix, split\nWave 4: work\n",
		"| work | read_only | shared | split | – | – | – | – | split /tasks (max 4) | 4 |",
		`| fix | read_only | shared | review | – | – | – | review /verdict = "BLOCK" | – | 1 |`,
		`- plan [draft, review]: at most 3 iterations; until review /verdict = "ACCEPTABLE"; unresolved: proceed`,
	} {
		require.Contains(t, stdout, want)
	}
}

// pixir inspect counts a looped run as its outcome does: the runs of
// earlier iterations are not steps that were meant to end ready (a
// completed run showed "3/5 checkpoint_ready", as if two had failed).
func TestInspectCountsALoopsLastIterationAsTheOutcomeDoes(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", drafter+reviewer("1", "NEEDS WORK", "name the owner")+reviewer("2", "ACCEPTABLE"))
	wf := e.file("wf.yaml", reviewLoop)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "COMPLETED — 3 of 3 steps checkpoint_ready; 2 runs of earlier iterations")
	tree, errOut, code := e.pixir("inspect", sessionOf(t, e.ws, stderr))
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, tree, `"review loop" [completed] 3/3 checkpoint_ready; 2 runs of earlier iterations · `)
}

// A loop that converges and holds its dependents: the next steps do not
// offer "run only what is left" (a resume reuses the loop and holds them
// again), they say what to change first, then the command.
func TestAHoldingLoopsNextStepsSayWhatToChange(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", drafter+reviewer("1", "NEEDS WORK", "name the owner")+reviewer("2", "NEEDS WORK", "name the owner"))
	wf := e.file("wf.yaml", strings.Replace(reviewLoop, "on_exhausted: proceed", "on_exhausted: hold", 1))
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf)
	require.Equal(t, exitPartial, code, stderr)
	require.Contains(t, stdout, "| ship | default | – | not_started | held | ")
	require.Contains(t, stdout, "not started: its dependencies [loop plan] did not become checkpoint_ready")
	require.NotContains(t, stdout, "ship never started")
	require.Regexp(t, `- loop plan ended converged at iteration 2 of 3 and holds ship \(on_exhausted: hold\): resuming reuses its iterations and ends it the same way; set its on_exhausted to proceed \(its dependents run, told its blockers\), then:
    pixir resume --script \S+script.toml [0-9a-f]{8} --workflow \S+wf.yaml --resume-from wf-[0-9a-f]{12}
`, stdout)
}

// A problem in a condition, a fan-out or a loop's until is located at its
// own line in the file, not at the step's or the loop's first line.
func TestControlFlowProblemsAreLocatedAtTheirKeys(t *testing.T) {
	e := newRunEnv(t)
	wf := e.file("bad.yaml", `name: bad
steps:
  - id: a
    task: x
    output_schema:
      type: object
      properties:
        verdict: {type: string}
        tasks: {type: array, items: {type: object, properties: {f: {type: string}}}}
  - id: b
    task: y
    depends_on: [a]
    when:
      - {step: a, path: /verdict, equals: OK}
      - {step: a, path: /verdikt, equals: OK}
  - id: c
    task: "${item.f}"
    depends_on: [a]
    for_each:
      step: a
      path: /tasks
      max_items: 5000
loops:
  - id: l
    steps: [a]
    max_iterations: 2
    until:
      step: zz
`)
	_, stderr, code := e.pixir("run", "--workflow", wf)
	require.Equal(t, exitUsage, code, stderr)
	for _, want := range []string{
		`bad.yaml:15:19: steps[1] "b": when[1].path /verdikt cannot be in the payload of "a"`,
		`bad.yaml:22:7: steps[2] "c": for_each.max_items 5000 must be between 1 and 1000`,
		`bad.yaml:28:7: loops[0] "l": until[0].step "zz" is not a step id`,
	} {
		require.Contains(t, stderr, want)
	}
}

// A file is refused before anything starts, every problem with its place,
// where a fan-out's path cannot hold an array though its schema has no
// type (an enum), and where a task has a placeholder that is none of
// Pixir's (${itm.title} for ${item.title}): the first was refused only at
// run time, the second run as written.
func TestAFileWithAFanOutOverNoArrayOrAnUnknownPlaceholderIsRefusedBeforeStart(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	// Its description is no problem: a file may have one (a ${x.y} in it
	// included: it is never substituted).
	spec := `description: fan out over ${x.y}
steps:
  - id: split
    task: split the work
    output_schema: {type: object, properties: {kind: {enum: [small, large]}, tasks: {type: array, items: {type: object, properties: {title: {type: string}}}}}}
  - id: each
    task: do it
    depends_on: [split]
    for_each: {step: split, path: /kind}
  - id: work
    task: "work on ${itm.title}"
    depends_on: [split]
    for_each: {step: split, path: /tasks}
`
	wf := e.file("wf.yaml", spec)
	for _, args := range [][]string{{"--dry-run"}, {}} {
		stdout, stderr, code := e.pixir(append([]string{"run", "--workflow", wf}, args...)...)
		require.Equal(t, exitUsage, code, stdout+stderr)
		require.Contains(t, stderr, "wf.yaml has 2 problems:\n")
		require.Contains(t, stderr, `wf.yaml:9:29: steps[1] "each": for_each.path /kind of "split" can only be "small", "large" (its enum) in its output_schema; fan out over an array`)
		require.Contains(t, stderr, `wf.yaml:11:5: steps[2].task uses ${itm.title}, which is not a declared parameter (declared: none); did you mean ${item.title}?`)
		_, err := os.Stat(filepath.Join(e.ws, ".pixir", "sessions"))
		require.ErrorIs(t, err, fs.ErrNotExist, "nothing started")
	}
	// The placeholder alone is reported as well.
	wf = e.file("fixed.yaml", strings.Replace(spec, "path: /kind", "path: /tasks", 1))
	_, stderr, code := e.pixir("run", "--workflow", wf, "--dry-run")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, `steps[2].task uses ${itm.title}, which is not a declared parameter (declared: none); did you mean ${item.title}?`)
}

// A Log written before a condition's test recorded its path (ConditionSeen
// "path") still inspects and resumes as one written now: the resumed run
// reuses the loop, holds ship again and says so in the same words.
func TestALogWithoutConditionPathsStillInspectsAndResumes(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", drafter+reviewer("1", "NEEDS WORK", "name the owner")+reviewer("2", "NEEDS WORK", "name the owner"))
	wf := e.file("wf.yaml", strings.Replace(reviewLoop, "on_exhausted: proceed", "on_exhausted: hold", 1))
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf)
	require.Equal(t, exitPartial, code, stderr)
	sid := sessionOf(t, e.ws, stderr)
	wfID := regexp.MustCompile(`--resume-from (wf-[0-9a-f]{12})`).FindStringSubmatch(stdout)
	require.NotNil(t, wfID, stdout)
	before, _, code := e.pixir("inspect", sid)
	require.Equal(t, exitOK, code)

	// The Log as the previous version wrote it: no "path" in what a
	// condition saw.
	logFile := filepath.Join(e.ws, ".pixir", "sessions", sid+".ndjson")
	b, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Contains(t, string(b), `"path":"/verdict",`)
	old := strings.ReplaceAll(string(b), `"path":"/verdict",`, "")
	require.NoError(t, os.WriteFile(logFile, []byte(old), 0o644))

	after, errOut, code := e.pixir("inspect", sid)
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, before, after)
	stdout, stderr, code = e.pixir("resume", sid, "--script", script, "--workflow", wf, "--resume-from", wfID[1])
	require.Equal(t, exitPartial, code, stderr)
	require.Contains(t, stdout, "| ship | default | – | not_started | held | ")
	require.Contains(t, stdout, "- loop plan ended converged at iteration 2 of 3 and holds ship (on_exhausted: hold): resuming reuses its iterations and ends it the same way; set its on_exhausted to proceed (its dependents run, told its blockers), then:\n    pixir resume ")
}

// A loop cancelled mid-iteration (Ctrl-C; as session/cancel or the
// workflow's timeout_ms) is resumed where it stopped, as one killed is:
// the iteration the cancel cut short was not decided by the loop, so its
// cancelled run is run again, not kept as the loop's history. It was: the
// resumed run reused review#2 (cancelled, failed) and went on to
// iteration 3 (with max_iterations 2, ended exhausted at once, and each
// resume the same, though its next action said to retry review#2; found
// by qa30p).
func TestALoopCancelledMidwayResumesTheIterationItStopped(t *testing.T) {
	e := newRunEnv(t)
	stdout, stderr, exit, wf := loopStoppedInReview2(t, e, os.Interrupt)
	require.Equal(t, exitPartial, exit.ExitCode(), stderr)
	first := runOutcome(t, stdout)
	require.Equal(t, workflows.StoppedCancelled, first.StoppedBy)
	sid := sessionOf(t, e.ws, stderr)

	good := e.file("good.toml", drafter+reviewer("1", "NEEDS WORK", "name the owner")+reviewer("2", "ACCEPTABLE"))
	out2, err2, code := e.pixir("resume", sid, "--script", good, "--workflow", wf, "--resume-from", first.WorkflowID, "--json")
	require.Equal(t, exitOK, code, err2)
	out := runOutcome(t, out2)
	require.Equal(t, workflows.StatusCompleted, out.Status, out.Output)
	for _, r := range []string{"draft#1", "review#1", "draft#2"} {
		require.Equal(t, first.WorkflowID, runOf(t, out, r).ReusedFrom, "%s was decided before the cancel: reused", r)
	}
	require.Empty(t, runOf(t, out, "review#2").ReusedFrom, "the cancelled review runs again")
	require.Equal(t, workflows.CheckpointReady, runOf(t, out, "review#2").CheckpointStatus)
	require.Equal(t, 2, out.Loops[0].Iterations, "no iteration 3: iteration 2 was not over")
	require.Equal(t, workflows.LoopSatisfied, out.Loops[0].State)
}
