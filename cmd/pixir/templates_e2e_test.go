package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/workflows"
)

// Workflow templates through the binary: pixir workflows lists what the
// project, its skills, the user and the built-ins hold; pixir run
// --workflow NAME --set runs one on the embedded offline provider.

const reviewTemplateFile = `description: Review one issue, then write the report.
params:
  issue:
    type: string
    pattern: "^[A-Z]+-[0-9]+$"
    description: The issue id.
  report:
    type: string
    default: REVIEW.md
steps:
  - id: check
    agent: explorer
    task: Review the change for ${issue}.
  - id: write
    task: Write ${report} from the review of ${issue}.
    depends_on: [check]
    write_set: ["${report}"]
`

// templateEnv is a run environment whose home folder (~) is its own.
func templateEnv(t *testing.T) (*runEnv, string) {
	e := newRunEnv(t)
	home := filepath.Join(filepath.Dir(e.ws), "user")
	put := func(base, rel, content string) {
		p := filepath.Join(base, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	put(e.ws, ".pixir/workflows/review.yaml", reviewTemplateFile)
	put(e.ws, ".claude/skills/triage/workflows/triage.yaml", "description: Triage.\nsteps: [{id: a, task: look}]\n")
	put(e.ws, ".pixir/workflows/broken.yaml", "steps: [{id: a, task: \"${nope}\"}]\n")
	put(home, ".pixir/workflows/review.yaml", reviewTemplateFile)
	return e, home
}

func (e *runEnv) pixirAtHome(home string, args ...string) (string, string, int) {
	e.t.Helper()
	cmd := e.command(args...)
	cmd.Env = append(cmd.Env, "HOME="+home)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}
	return out.String(), errOut.String(), 0
}

func TestPixirWorkflowsListsTemplatesWithParamsSourcesAndProblems(t *testing.T) {
	e, home := templateEnv(t)
	stdout, stderr, code := e.pixirAtHome(home, "workflows", "--json")
	require.Equal(t, 1, code, "a broken template file: %s", stderr)
	var report struct {
		Templates []struct {
			Name, Description, Usage, Source string
			Params                           []struct {
				Name, Type string
				Required   bool
				Default    json.RawMessage
				Schema     map[string]any
			}
		}
		Warnings []struct{ File, Message string }
		Errors   []struct{ File, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &report), stdout)
	var names []string
	for _, tpl := range report.Templates {
		names = append(names, tpl.Name+" "+tpl.Source)
	}
	require.Equal(t, []string{"practice built-in", "review .pixir/workflows/review.yaml", "survey built-in",
		"triage .claude/skills/triage/workflows/triage.yaml"}, names)
	review := report.Templates[1]
	require.Equal(t, "pixir run --workflow review --set issue=ISSUE", review.Usage)
	require.Len(t, review.Params, 2)
	require.Equal(t, "issue", review.Params[0].Name)
	require.True(t, review.Params[0].Required)
	require.Equal(t, "^[A-Z]+-[0-9]+$", review.Params[0].Schema["pattern"])
	require.JSONEq(t, `"REVIEW.md"`, string(review.Params[1].Default))
	require.Len(t, report.Warnings, 1)
	require.Equal(t, filepath.Join(home, ".pixir/workflows/review.yaml"), report.Warnings[0].File)
	require.Contains(t, report.Warnings[0].Message, "is also defined in "+filepath.Join(e.ws, ".pixir/workflows/review.yaml"))
	require.Len(t, report.Errors, 1)
	require.Contains(t, report.Errors[0].Message, "steps[0].task uses ${nope}, which is not a declared parameter")

	stdout, stderr, code = e.pixirAtHome(home, "workflows")
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "  --set issue=string (required)")
	require.Contains(t, stdout, `  --set report=string (default "REVIEW.md")`)
	require.Contains(t, stderr, "pixir workflows: warning: "+filepath.Join(home, ".pixir/workflows/review.yaml"))
	require.Contains(t, stderr, "pixir workflows: 1 broken template file is left out until fixed")
}

func TestPixirRunATemplateByNameWithSet(t *testing.T) {
	e, home := templateEnv(t)
	stdout, stderr, code := e.pixirAtHome(home, "run", "--workflow", "review", "--set", "issue=GAL-1", "--set", "report=docs/GAL-1.md", "--json")
	require.Equal(t, 0, code, "stdout %s\nstderr %s", stdout, stderr)
	var env struct {
		OK     bool
		Output struct {
			Status string
			Steps  []struct {
				StepID string `json:"step_id"`
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &env))
	require.Equal(t, "completed", env.Output.Status)
	require.Len(t, env.Output.Steps, 2)

	// The Log holds the instance: the tasks with the values, the write set
	// with the path, and which template made it with which arguments.
	sessions, err := filepath.Glob(filepath.Join(e.ws, ".pixir", "sessions", "*.ndjson"))
	require.NoError(t, err)
	require.Len(t, sessions, 1)
	sid := strings.TrimSuffix(filepath.Base(sessions[0]), ".ndjson")
	var started struct {
		Kind     string
		Workflow struct {
			Template string
			Args     map[string]string
			Steps    []struct {
				Task     string
				WriteSet []string `json:"write_set"`
			}
		}
	}
	for _, ev := range readLog(t, e.ws, sid) {
		if ev.Type == "workflow_event" && strings.Contains(string(ev.Data), `"workflow_started"`) {
			require.NoError(t, json.Unmarshal(ev.Data, &started))
		}
	}
	require.Equal(t, "review", started.Workflow.Template)
	require.Equal(t, map[string]string{"issue": "GAL-1", "report": "docs/GAL-1.md"}, started.Workflow.Args)
	require.Equal(t, "Review the change for GAL-1.", started.Workflow.Steps[0].Task)
	require.Equal(t, []string{"docs/GAL-1.md"}, started.Workflow.Steps[1].WriteSet)
}

func TestPixirRunTemplateRefusesBadArguments(t *testing.T) {
	e, home := templateEnv(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--workflow", "review"}, "/: missing property 'issue'\n(give the parameters with --set name=value; pixir workflows lists them)"},
		{[]string{"--workflow", "review", "--set", "issue=gal-1"}, "/issue: 'gal-1' does not match pattern '^[A-Z]+-[0-9]+$'"},
		{[]string{"--workflow", "review", "--set", "issue=GAL-1", "--set", "report=../../etc/passwd"},
			`/report: makes steps[1].write_set[0] the path pattern "../../etc/passwd", which is not allowed: it climbs out of the workspace`},
		{[]string{"--workflow", "review", "--set", "isue=GAL-1"}, `--set isue=GAL-1: template review has no parameter "isue"; did you mean "issue"? Its parameters: review(issue, report?)`},
		{[]string{"--workflow", "review", "--set", "issue"}, `invalid value "issue" for flag -set: "issue" is not name=value`},
		{[]string{"--workflow", "nope"}, `there is no workflow file or template named "nope"; the templates here: practice, review, survey, triage`},
		{[]string{"--set", "issue=x", "do it"}, "--set gives a template's parameters: it goes with --workflow NAME"},
	} {
		_, stderr, code := e.pixirAtHome(home, append([]string{"run", "--dry-run"}, tt.args...)...)
		if tt.args[0] == "--set" {
			_, stderr, code = e.pixirAtHome(home, append([]string{"run"}, tt.args...)...)
		}
		require.Equal(t, exitUsage, code, "%v: %s", tt.args, stderr)
		require.Contains(t, stderr, tt.want, tt.args)
	}
	// Nothing ran: no session was made.
	sessions, _ := filepath.Glob(filepath.Join(e.ws, ".pixir", "sessions", "*.ndjson"))
	require.Empty(t, sessions)

	// A path still works, and wins over a name.
	stdout, stderr, code := e.pixirAtHome(home, "run", "--dry-run", "--workflow", filepath.Join(e.ws, ".pixir/workflows/review.yaml"), "--set", "issue=GAL-2")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "Wave 1: check")
}

// A folder given with its trailing / (models and people write "notes/")
// is the folder in "${dir}/**", never "notes//**", which was refused.
func TestPixirRunATemplateTakesAFolderWithItsTrailingSlash(t *testing.T) {
	e, home := templateEnv(t)
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, ".pixir/workflows/notes.yaml"),
		[]byte("params: {dir: {type: string}}\nsteps: [{id: write, task: \"Write notes into ${dir}.\", write_set: [\"${dir}/**\"]}]\n"), 0o644))
	for _, dir := range []string{"notes", "notes/", "./notes/"} {
		stdout, stderr, code := e.pixirAtHome(home, "run", "--dry-run", "--workflow", "notes", "--set", "dir="+dir, "--json")
		require.Equal(t, 0, code, "dir %q: %s", dir, stderr)
		var env struct {
			Output struct {
				Steps []struct {
					WriteSet []string `json:"write_set"`
				}
			}
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &env))
		require.Len(t, env.Output.Steps, 1)
		require.Equal(t, []string{"notes/**"}, env.Output.Steps[0].WriteSet, "dir %q", dir)
	}
	_, stderr, code := e.pixirAtHome(home, "run", "--dry-run", "--workflow", "notes", "--set", "dir=notes//")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, `/dir: is "notes//" in the path pattern steps[0].write_set[0], which has an empty or "." segment`)
}

// A folder value goes into commit.requires by the same rule: the run's
// sanity check looks for notes/PLAN.md, whichever way the folder is
// written (it looked for "notes//PLAN.md"); "notes//" is refused naming
// where it went, before any step.
func TestPixirRunATemplateRequiresAFileInAFolderWithItsTrailingSlash(t *testing.T) {
	e, home := templateEnv(t)
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, ".pixir/workflows/planned.yaml"),
		[]byte("params: {dir: {type: string}}\ncommit: {message: notes, requires: [\"${dir}/PLAN.md\"]}\nsteps: [{id: write, task: \"Write notes into ${dir}.\", write_set: [\"${dir}/**\"]}]\n"), 0o644))
	for _, dir := range []string{"notes", "notes/", "./notes/"} {
		stdout, stderr, code := e.pixirAtHome(home, "run", "--workflow", "planned", "--set", "dir="+dir, "--json")
		require.Equal(t, exitError, code, "dir %q: %s", dir, stderr)
		out := runOutcome(t, stdout)
		require.Equal(t, workflows.StatusFailed, out.Status, out.Output)
		require.Equal(t, workflows.StoppedPreflight+": notes/PLAN.md does not exist in the workspace ("+e.ws+"); create it, or name an existing one", out.StoppedBy, "dir %q", dir)
	}
	_, stderr, code := e.pixirAtHome(home, "run", "--workflow", "planned", "--set", "dir=notes//")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, `/dir: is "notes//" in the path commit.requires[0], which has an empty or "." segment`)
}

// TestRunABrokenOverrideOfABuiltinTemplate: pixir run --workflow survey
// in a project whose survey.yaml does not load reports that file's
// problems, each at its line, and runs nothing: not the built-in survey
// in its place, as it did without a word.
func TestRunABrokenOverrideOfABuiltinTemplate(t *testing.T) {
	e := newRunEnv(t)
	require.NoError(t, os.MkdirAll(filepath.Join(e.ws, ".pixir", "workflows"), 0o755))
	e.file(".pixir/workflows/survey.yaml", "name: my survey\nsteps:\n  - id: a\n    task: look\n    dependson: [b]\n")
	stdout, stderr, code := e.pixir("run", "--workflow", "survey", "--dry-run")
	require.Equal(t, exitUsage, code, stderr)
	require.Empty(t, stdout, "nothing planned, the built-in survey least of all")
	require.Contains(t, stderr, "survey.yaml:5:5: steps[0] \"a\": unknown key \"dependson\"; did you mean \"depends_on\"?")
}

// The table a user scans fits an 80-column terminal: a template's
// parameters are its own indented lines, not rows of the NAME column, and a
// description too long for the line is cut (--json holds it whole).
func TestPixirWorkflowsFitsEightyColumns(t *testing.T) {
	e, home := templateEnv(t)
	stdout, _, code := e.pixirAtHome(home, "workflows")
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "practice")
	for _, line := range strings.Split(strings.TrimRight(stdout, "\n"), "\n") {
		require.LessOrEqual(t, len([]rune(line)), 80, "line %q", line)
	}
	require.Regexp(t, `(?m)^NAME +SOURCE +DESCRIPTION$`, stdout)
	require.Regexp(t, `(?m)^practice +built-in +The multi-agent practice`, stdout)
	require.Regexp(t, "(?m)^  --set issue=string \\(required\\)\n      The issue id; its file is TODO/<issue>\\.md\\.$", stdout)
	// The name column is as wide as the longest name, not the longest --set line.
	require.Regexp(t, `(?m)^review +\.pixir/workflows/review\.yaml +Review one issue`, stdout)
}

// The command a partial template run prints to go on with it repeats its
// --set arguments: it was `pixir resume ID --workflow planned --resume-from
// WF`, which the template refused for its missing parameter (exit 64). A
// run stopped by the checks before its first step says to fix what they
// found (found by qa32w).
func TestTheResumeCommandOfATemplateRunRepeatsItsArguments(t *testing.T) {
	e, home := templateEnv(t)
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, ".pixir/workflows/planned.yaml"),
		[]byte("params: {dir: {type: string}, note: {type: string, default: x}}\ncommit: {message: notes, requires: [\"${dir}/PLAN.md\"]}\nsteps: [{id: write, task: \"Write notes into ${dir}.\", write_set: [\"${dir}/**\"]}]\n"), 0o644))
	stdout, stderr, code := e.pixirAtHome(home, "run", "--workflow", "planned", "--set", "dir=notes", "--set", "note=two words")
	require.Equal(t, exitError, code, stderr)
	require.Contains(t, stdout, "- no step started: the checks before the first one failed (said above); fix what they found, then run it:\n")
	var resume string
	for l := range strings.Lines(stdout) {
		if strings.HasPrefix(l, "    pixir resume ") {
			resume = strings.TrimSpace(l)
		}
	}
	require.Contains(t, resume, " --workflow planned --set dir=notes --set 'note=two words' --resume-from wf-", stdout)

	require.NoError(t, os.MkdirAll(filepath.Join(e.ws, "notes"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, "notes", "PLAN.md"), []byte("plan\n"), 0o644))
	args := strings.Fields(strings.Replace(strings.TrimPrefix(resume, "pixir "), "'note=two words'", "note=two\x00words", 1))
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], "\x00", " ")
	}
	stdout, stderr, code = e.pixirAtHome(home, args...)
	require.NotEqual(t, exitUsage, code, stderr)
	require.Contains(t, stdout, "| write |", stdout+stderr)
}

// The problems of a template with params name its file and their lines:
// those of its decoding and its instance's (every one at once), and those
// of its instance when it is run by name.
func TestTemplateProblemsNameTheirLines(t *testing.T) {
	e, home := templateEnv(t)
	file := filepath.Join(e.ws, ".pixir/workflows/review.yaml")
	require.NoError(t, os.WriteFile(file, []byte(reviewTemplateFile+"  - id: z\n    tsk: y\n    max_items: 3\n"), 0o644))
	_, stderr, code := e.pixirAtHome(home, "run", "--dry-run", "--workflow", file, "--set", "issue=GAL-1")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, file+" has 3 problems:\n", stderr)
	require.Contains(t, stderr, "  "+file+`:19:5: steps[2] "z": unknown key "tsk"; did you mean "task"?`, stderr)
	require.Contains(t, stderr, "  "+file+`:20:5: steps[2] "z": unknown key "max_items"`, stderr)
	// and, in the same go, what the step lacks without it (a plain file
	// says the same)
	require.Contains(t, stderr, "  "+file+`:18:5: steps[2] "z": task is empty`, stderr)

	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(reviewTemplateFile, "depends_on: [check]", "depends_on: [chek]", 1)), 0o644))
	_, stderr, code = e.pixirAtHome(home, "run", "--dry-run", "--workflow", "review", "--set", "issue=GAL-1")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "pixir: "+file+`:16:5: steps[1] "write": depends_on "chek" is not a step id`, stderr)
}

// A template that does not decode (an unknown key, a value of the wrong
// type) says every other problem it has in the same go, each at its
// line: an undeclared ${…} and what its instance's check finds (an
// unknown dependency). They came only once the first two were fixed.
func TestATemplateThatDoesNotDecodeSaysItsOtherProblemsToo(t *testing.T) {
	e, home := templateEnv(t)
	file := filepath.Join(e.ws, ".pixir/workflows/broken.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`params:
  issue: {type: string}
steps:
  - id: a
    task: Review ${issue}.
    colour: red
  - id: b
    task: Write ${reprt}.
    timeout_ms: soon
    depends_on: [nope]
`), 0o644))
	_, stderr, code := e.pixirAtHome(home, "run", "--dry-run", "--workflow", file, "--set", "issue=GAL-1")
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, file+" has 4 problems:\n", stderr)
	require.Contains(t, stderr, "  "+file+`:6:5: steps[0] "a": unknown key "colour"`, stderr)
	require.Contains(t, stderr, "  "+file+`:9:17: steps[1] "b": timeout_ms: got JSON string, want integer`, stderr)
	require.Contains(t, stderr, "${reprt}", stderr)
	require.Contains(t, stderr, "  "+file+`:10:5: steps[1] "b": depends_on "nope" is not a step id`, stderr)
}
