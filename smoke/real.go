package smoke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider/scripted"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// Scenario is a workflow the real-provider smoke runs.
type Scenario string

// The scenarios of `pixir smoke workflows-real`.
const (
	// MicroParallel: two tiny read-only steps, in parallel.
	MicroParallel Scenario = "micro_parallel"
	// Dependency: a step, and a dependent that must use its checkpoint.
	Dependency Scenario = "dependency"
	// WriterControlled: one writer with a narrow write_set, in an
	// isolated snapshot.
	WriterControlled Scenario = "writer_controlled"
)

// Scenarios lists the scenarios, in the order they are documented.
var Scenarios = []Scenario{MicroParallel, Dependency, WriterControlled}

// ParseScenario checks a scenario name.
func ParseScenario(s string) (Scenario, error) {
	if slices.Contains(Scenarios, Scenario(s)) {
		return Scenario(s), nil
	}
	names := make([]string, len(Scenarios))
	for i, sc := range Scenarios {
		names[i] = string(sc)
	}
	return "", fmt.Errorf("unknown scenario %q: choose one of %s", s, strings.Join(names, ", "))
}

// EvidenceRoot is where, under the current folder, each real run keeps
// its evidence, in a folder of its own.
var EvidenceRoot = filepath.Join(runtime.StateDir, "smoke", "workflows-real")

// Kinds of the known failures of a real run: each comes with what to do.
const (
	KindNoRealProvider = "no_real_provider"
	KindMissingModel   = "missing_model"
	KindMissingAPIKey  = "missing_api_key"
	KindInvalidConfig  = "invalid_config"
	KindProviderError  = "provider_error"
	KindTimeout        = "timeout"
	KindInterrupted    = "interrupted"
	KindInternal       = "internal"
)

// Failure is a known failure of a real run, for a person or a script to
// act on.
type Failure struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Fix says what to do about it.
	Fix string `json:"fix"`
	// Env is the variable of a missing API key.
	Env string `json:"env,omitempty"`
	// BaseURL is the server a provider failure came from.
	BaseURL string `json:"base_url,omitempty"`
	// Steps are the steps that failed so (timeouts, provider failures).
	Steps []string `json:"steps,omitempty"`
}

// Provider is the model provider a real run uses, as configured.
type Provider struct {
	Name    string `json:"name"`
	Profile string `json:"profile,omitempty"`
	Model   string `json:"model"`
	BaseURL string `json:"base_url,omitempty"`
	// KeyEnv names the variable of the API key; KeySet says whether it
	// holds one (the key itself is never reported).
	KeyEnv string `json:"key_env,omitempty"`
	KeySet bool   `json:"key_set"`
	// KeyRequired says the provider cannot work without a key (Anthropic,
	// OpenAI's own API); a local server needs none.
	KeyRequired bool `json:"key_required"`
}

// RealOptions configure a real-provider smoke run.
type RealOptions struct {
	Scenario Scenario
	// Dir is the folder under which the evidence is kept
	// (Dir/EvidenceRoot/<UTC timestamp>-<scenario>/).
	Dir string
	// DryRun checks the configuration and plans the scenario, offline: it
	// writes nothing and starts nothing.
	DryRun   bool
	Provider Provider
	// NewRuntime builds the runtime of the configured provider; it is
	// called only for a run whose configuration passed.
	NewRuntime func() (*runtime.Runtime, error)
	// StepTimeoutMS is each step's timeout_ms; 0 is the default.
	StepTimeoutMS int64
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// RealReport is the outcome of `pixir smoke workflows-real`.
type RealReport struct {
	OK       bool                `json:"ok"`
	Mode     string              `json:"mode"`
	Scenario Scenario            `json:"scenario"`
	Provider Provider            `json:"provider"`
	Workflow *workflows.Workflow `json:"workflow,omitempty"`
	Plan     *workflows.DryRun   `json:"plan,omitempty"`
	Checks   []Check             `json:"checks"`
	// Error is the known failure that stopped or spoilt the run.
	Error *Failure `json:"error,omitempty"`
	// EvidenceDir holds report.json and the run's workspace, whose
	// .pixir/ has the session's Log (Log) and its children's.
	EvidenceDir string             `json:"evidence_dir,omitempty"`
	SessionID   string             `json:"session_id,omitempty"`
	Log         string             `json:"log,omitempty"`
	Outcome     *workflows.Outcome `json:"outcome,omitempty"`
	ElapsedMS   int64              `json:"elapsed_ms"`
}

// The seeded workspace of a real run: two notes, each with a code word the
// steps must find and pass on.
var (
	codeWords = map[string]string{"notes/alpha.txt": "heliotrope", "notes/beta.txt": "marzipan"}
	realFiles = map[string]string{
		"README.md":       "# Pixir smoke workspace\n\nA scratch workspace of `pixir smoke workflows-real`.\n",
		"notes/alpha.txt": "Smoke test note A.\nThe code word is: heliotrope\n",
		"notes/beta.txt":  "Smoke test note B.\nThe code word is: marzipan\n",
	}
)

// Files the writer_controlled scenario writes, and what.
const (
	writerFile    = "out/result.txt"
	writerContent = "smoke ok"
)

func readTask(file string) string {
	return fmt.Sprintf("Read the file %s with the read tool and find the code word in it. "+
		"Then call report_checkpoint with status checkpoint_ready and a summary that says: The code word is <the word>. "+
		"This is a tiny smoke test: do nothing else.", file)
}

// realSpec is the workflow of a scenario, each step limited to timeoutMS.
func realSpec(sc Scenario, timeoutMS int64) workflows.Workflow {
	step := func(s workflows.Step) workflows.Step {
		s.TimeoutMS = timeoutMS
		return s
	}
	w := workflows.Workflow{Name: "smoke " + string(sc)}
	switch sc {
	case MicroParallel:
		w.Steps = []workflows.Step{
			step(workflows.Step{ID: "alpha", Agent: "explorer", Task: readTask("notes/alpha.txt"), ReadSet: []string{"notes/alpha.txt"}}),
			step(workflows.Step{ID: "beta", Agent: "explorer", Task: readTask("notes/beta.txt"), ReadSet: []string{"notes/beta.txt"}}),
		}
	case Dependency:
		w.Steps = []workflows.Step{
			step(workflows.Step{ID: "find", Agent: "explorer", Task: readTask("notes/alpha.txt"), ReadSet: []string{"notes/alpha.txt"}}),
			step(workflows.Step{ID: "use", DependsOn: []string{"find"}, ReadSet: []string{"notes/alpha.txt"},
				Task: "Do not read any file and call no tool but report_checkpoint. The checkpoint of the step find, given below, names a code word. " +
					"Call report_checkpoint with status checkpoint_ready and a summary that gives that code word in capital letters."}),
		}
	case WriterControlled:
		w.Steps = []workflows.Step{
			step(workflows.Step{ID: "write", Agent: "worker", WriteSet: []string{writerFile},
				Task: fmt.Sprintf("Create the file %s whose whole content is the single line: %s. Use the write tool and change no other file. "+
					"Then call report_checkpoint with status checkpoint_ready and %s in produced.", writerFile, writerContent, writerFile)}),
		}
	}
	w.Normalize()
	return w
}

// Real runs one scenario of the real-provider smoke, or in a dry run
// plans it. A known failure is the report's Error, never a Go error.
func Real(ctx context.Context, opt RealOptions) *RealReport {
	start := time.Now()
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.StepTimeoutMS <= 0 {
		opt.StepTimeoutMS = workflows.DefaultStepTimeoutMS
	}
	r := &RealReport{Mode: ModeRun, Scenario: opt.Scenario, Provider: opt.Provider}
	if opt.DryRun {
		r.Mode = ModeDryRun
	}
	var c checks
	timed := false
	finish := func() {
		r.Checks = append([]Check{}, c.list...)
		r.OK = r.Error == nil && allPass(c.list)
		if !timed { // report.json and the printed report agree
			r.ElapsedMS, timed = time.Since(start).Milliseconds(), true
		}
	}
	defer finish()

	w := realSpec(opt.Scenario, opt.StepTimeoutMS)
	r.Workflow = &w
	if len(w.Steps) == 0 {
		r.Error = &Failure{Kind: KindInternal, Message: fmt.Sprintf("no scenario %q", opt.Scenario), Fix: "choose one of micro_parallel, dependency, writer_controlled"}
		return r
	}
	plan, err := workflows.Waves(&w)
	if err != nil {
		r.Error = &Failure{Kind: KindInternal, Message: "the scenario's workflow does not plan: " + err.Error(), Fix: "this is a bug in Pixir; please report it"}
		return r
	}
	r.Plan = &plan
	if f := preflight(opt.Provider); f != nil {
		c.add("provider_configured", "the provider is a real one, with a model and the key it needs", map[string]any{"provider": opt.Provider}, f.Message)
		r.Error = f
	} else {
		c.add("provider_configured", "the provider is a real one, with a model and the key it needs", map[string]any{"provider": opt.Provider})
	}
	planCheck(&c, opt.Scenario, &plan)
	if opt.DryRun || r.Error != nil {
		return r
	}

	rt, err := opt.NewRuntime()
	if err != nil {
		r.Error = &Failure{Kind: KindInvalidConfig, Message: err.Error(), Fix: "correct the configuration; `pixir doctor` checks it"}
		return r
	}
	defer rt.Close()
	dir, err := evidenceDir(opt.Dir, opt.Now(), opt.Scenario)
	if err != nil {
		r.Error = &Failure{Kind: KindInternal, Message: "making the evidence folder: " + err.Error(), Fix: "make the current folder writable, or run from another one"}
		return r
	}
	r.EvidenceDir = dir
	defer func() {
		finish()
		if err := writeReport(filepath.Join(dir, "report.json"), r); err != nil {
			c.add("evidence_written", "report.json is written", map[string]any{"evidence_dir": dir}, err.Error())
		}
	}()
	ws := filepath.Join(dir, "workspace")
	if err := seed(ws, realFiles); err != nil {
		r.Error = &Failure{Kind: KindInternal, Message: "seeding the workspace: " + err.Error(), Fix: "check the disk"}
		return r
	}
	res := runWorkflowSpec(ctx, rt, ws, &w)
	res.name = string(opt.Scenario)
	if res.sess != nil {
		r.SessionID, r.Log = res.sess.ID(), logPath(res.sess)
	}
	if res.out.WorkflowID != "" {
		r.Outcome = &res.out
	}
	if res.err != nil {
		if ctx.Err() != nil {
			r.Error = &Failure{Kind: KindInterrupted, Message: res.err.Error(), Fix: "run it again and let it finish; the partial outcome is in the report"}
		} else {
			r.Error = &Failure{Kind: KindInternal, Message: res.err.Error(), Fix: "see the session's Log"}
		}
		return r
	}
	r.Error = knownFailure(&res.out, opt)
	completedCheck(&c, res)
	lifecycleCheck(&c, res)
	switch opt.Scenario {
	case MicroParallel:
		parallelCheck(&c, res, "alpha", "beta")
		codeWordCheck(&c, res, map[string]string{"alpha": codeWords["notes/alpha.txt"], "beta": codeWords["notes/beta.txt"]}, "each step found its note's code word")
	case Dependency:
		dependencyCheck(&c, res, "find", "use")
		codeWordCheck(&c, res, map[string]string{"find": codeWords["notes/alpha.txt"], "use": codeWords["notes/alpha.txt"]}, "the dependent passed on the code word it was given in its dependency's checkpoint")
	case WriterControlled:
		writerCheck(&c, res)
	}
	return r
}

// preflight finds, without the network, the failures a run would meet at
// once: no real provider, no model, no key where one is needed.
func preflight(p Provider) *Failure {
	switch {
	case p.Name == scripted.ProviderName:
		return &Failure{Kind: KindNoRealProvider,
			Message: "workflows-real runs against a real model, and the configured provider is the offline scripted one",
			Fix:     "choose a provider with --provider openai|anthropic (or PIXIR_PROVIDER, or provider in config.toml); `pixir smoke workflows` is the offline smoke"}
	case p.Model == "":
		return &Failure{Kind: KindMissingModel, Message: fmt.Sprintf("the %s provider has no model configured", p.Name),
			Fix: "set --model, PIXIR_MODEL or model in config.toml (`pixir doctor` lists the models the server serves)"}
	case p.KeyRequired && !p.KeySet:
		return &Failure{Kind: KindMissingAPIKey, Env: p.KeyEnv, BaseURL: p.BaseURL,
			Message: fmt.Sprintf("the %s provider at %s needs an API key, and %s is not set", p.Name, p.BaseURL, p.KeyEnv),
			Fix:     fmt.Sprintf("export %s=<your key> (or name another variable with api_key_env in config.toml), then run `pixir doctor` to check it", p.KeyEnv)}
	}
	return nil
}

// knownFailure names what spoilt a run that did happen: a provider
// failure first (nothing else can be judged), else steps that timed out.
func knownFailure(out *workflows.Outcome, opt RealOptions) *Failure {
	var provider []string
	var first *tools.Failure
	for i := range out.Steps {
		if s := &out.Steps[i]; s.Error != nil && s.Error.Kind == tools.ErrProviderError {
			provider = append(provider, s.StepID)
			if first == nil {
				first = s.Error
			}
		}
	}
	if first != nil {
		return &Failure{Kind: KindProviderError, Steps: provider, BaseURL: opt.Provider.BaseURL,
			Message: fmt.Sprintf("the provider failed in step %s: %s", provider[0], first.Message),
			Fix:     "run `pixir doctor` with the same --provider, --profile, --base-url and --model to check the key, the server and the model"}
	}
	if len(out.TimeoutSteps) > 0 {
		return &Failure{Kind: KindTimeout, Steps: out.TimeoutSteps,
			Message: fmt.Sprintf("step(s) %s did not finish within their timeout_ms of %d ms", strings.Join(out.TimeoutSteps, ", "), opt.StepTimeoutMS),
			Fix:     fmt.Sprintf("raise each step's timeout_ms with --timeout-ms (e.g. --timeout-ms %d), or use a faster model", 2*opt.StepTimeoutMS)}
	}
	return nil
}

// planCheck checks the scenario's waves: what the run will do.
func planCheck(c *checks, sc Scenario, plan *workflows.DryRun) {
	var p problems
	ev := map[string]any{"waves": plan.Waves, "steps": plan.Steps, "serialized": plan.Serialized}
	switch sc {
	case MicroParallel:
		p.expect(fmt.Sprint(plan.Waves) == "[[alpha beta]]", "waves %v, want alpha and beta together", plan.Waves)
	case Dependency:
		p.expect(fmt.Sprint(plan.Waves) == "[[find] [use]]", "waves %v, want find, then use", plan.Waves)
	case WriterControlled:
		p.expect(len(plan.Steps) == 1 && plan.Steps[0].WorkspaceMode == workflows.Isolated && slices.Equal(plan.Steps[0].WriteSet, []string{writerFile}),
			"steps %+v, want one isolated writer of %s", plan.Steps, writerFile)
	}
	c.add("plan", "the scenario plans as intended", ev, p...)
}

// evidenceDir makes the run's own evidence folder.
func evidenceDir(base string, now time.Time, sc Scenario) (string, error) {
	root := filepath.Join(base, EvidenceRoot)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	name := now.UTC().Format("20060102T150405Z") + "-" + string(sc)
	for i := 1; ; i++ {
		dir := filepath.Join(root, name)
		if i > 1 {
			dir += fmt.Sprintf("-%d", i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return "", err
		}
	}
}

func writeReport(path string, r *RealReport) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeJSON(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// completedCheck: every step checkpoint_ready; else each step's status.
func completedCheck(c *checks, r *runResult) {
	ev := r.evidence()
	var p problems
	steps := map[string]any{}
	for _, s := range r.out.Steps {
		e := map[string]any{"subagent_id": s.AgentID, "subagent_status": s.SubagentStatus, "checkpoint_status": s.CheckpointStatus, "elapsed_ms": s.ElapsedMS, "summary": s.Summary}
		if s.Error != nil {
			e["error"] = s.Error
		}
		steps[s.StepID] = e
		if s.CheckpointStatus != workflows.CheckpointReady {
			msg := fmt.Sprintf("%s is %s (subagent %s)", s.StepID, s.CheckpointStatus, s.SubagentStatus)
			if s.Error != nil {
				msg += ": " + string(s.Error.Kind) + ": " + s.Error.Message
			}
			p.addf("%s", msg)
		}
	}
	ev["steps"] = steps
	p.expect(r.out.Status == workflows.StatusCompleted, "the workflow is %s, want completed", r.out.Status)
	c.add("workflow_completed", "every step is checkpoint_ready", ev, p...)
}

// codeWordCheck: each step's checkpoint gives the code word it was after:
// the model did the work, not only the plumbing.
func codeWordCheck(c *checks, r *runResult, want map[string]string, about string) {
	ev := r.evidence()
	var p problems
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s := stepOf(&r.out, id)
		if s == nil {
			p.addf("no outcome for %s", id)
			continue
		}
		found := strings.Contains(strings.ToLower(s.Summary), want[id])
		ev[id] = map[string]any{"code_word": want[id], "summary": s.Summary, "found": found}
		p.expect(found, "%s's summary %q does not give the code word %q", id, s.Summary, want[id])
	}
	c.add("code_words", about, ev, p...)
}

// writerCheck: the writer wrote its file in its own snapshot, only inside
// its write_set, and the run merged it into the workspace (merge-back).
func writerCheck(c *checks, r *runResult) {
	ev := r.evidence()
	var p problems
	s := stepOf(&r.out, "write")
	if s == nil {
		p.addf("no outcome for the write step")
		c.add("writer_isolated_in_write_set", "the writer wrote only its write_set, in its own snapshot", ev, p...)
		return
	}
	ev["workspace_mode"], ev["workspace"], ev["changes"] = s.WorkspaceMode, s.Workspace, s.Changes
	p.expect(s.WorkspaceMode == workflows.Isolated, "the writer ran in a %s workspace, want isolated", s.WorkspaceMode)
	snapRoot := filepath.Join(r.root(), runtime.StateDir, "subagents")
	p.expect(s.Workspace != "" && strings.HasPrefix(s.Workspace, snapRoot), "the writer's workspace %q is not a snapshot under %s", s.Workspace, snapRoot)
	if ch := s.Changes; ch == nil {
		p.addf("the writer's outcome lists no changes")
	} else {
		p.expect(slices.Contains(ch.Added, writerFile) || slices.Contains(ch.Changed, writerFile), "the changes %+v do not list %s", *ch, writerFile)
		for _, f := range slices.Concat(ch.Added, ch.Changed, ch.Deleted) {
			ok, _ := doublestar.Match(writerFile, f)
			p.expect(ok, "the writer changed %s, outside its write_set %s", f, writerFile)
		}
	}
	if s.Workspace != "" {
		b, err := os.ReadFile(filepath.Join(s.Workspace, filepath.FromSlash(writerFile)))
		ev["snapshot_file"] = filepath.Join(s.Workspace, filepath.FromSlash(writerFile))
		ev["snapshot_content"] = string(b)
		merged := s.Merge != nil && s.Merge.Status == tools.MergeMerged
		if errors.Is(err, fs.ErrNotExist) && merged {
			// A step whose work was merged whole has its snapshot removed
			// (in the background, once decided): the changes listed and the
			// workspace's file below are the evidence then.
			ev["snapshot_removed"] = true
		} else {
			p.expect(err == nil && strings.Contains(string(b), writerContent), "the snapshot's %s holds %q (%v), want %q", writerFile, b, err, writerContent)
		}
	}
	b, err := os.ReadFile(filepath.Join(r.root(), filepath.FromSlash(writerFile)))
	ev["workspace_has_file"] = err == nil
	ev["merge"] = s.Merge
	p.expect(err == nil && strings.Contains(string(b), writerContent), "the workspace's %s holds %q (%v): the writer's work was not merged", writerFile, b, err)
	p.expect(s.Merge != nil && s.Merge.Status == tools.MergeMerged, "the writer's merge is %+v, want merged", s.Merge)
	c.add("writer_isolated_in_write_set", "the writer wrote only its write_set, in its own snapshot, and the run merged it into the workspace", ev, p...)
}

// WriteJSON prints the report as one indented JSON object.
func (r *RealReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteText prints the report for a person.
func (r *RealReport) WriteText(w io.Writer) error {
	var b strings.Builder
	verdict := "PASS"
	if !r.OK {
		verdict = "FAIL"
	}
	mode := ""
	if r.Mode == ModeDryRun {
		mode = ", dry run: nothing started, nothing written"
	}
	fmt.Fprintf(&b, "pixir smoke workflows-real %s: %s (%.1f s%s)\n", r.Scenario, verdict, float64(r.ElapsedMS)/1000, mode)
	p := r.Provider
	fmt.Fprintf(&b, "provider %s", p.Name)
	if p.Profile != "" {
		fmt.Fprintf(&b, " (profile %q)", p.Profile)
	}
	if p.Model != "" {
		fmt.Fprintf(&b, ", model %s", p.Model)
	}
	if p.BaseURL != "" {
		fmt.Fprintf(&b, ", %s", p.BaseURL)
	}
	if p.KeyEnv != "" {
		state := "not set"
		if p.KeySet {
			state = "set"
		}
		fmt.Fprintf(&b, ", key %s %s", p.KeyEnv, state)
	}
	b.WriteString("\n")
	if r.Mode == ModeDryRun && r.Plan != nil {
		b.WriteString("\n" + workflows.RenderPlan(r.Plan))
	}
	if r.Outcome != nil {
		b.WriteString("\n" + r.Outcome.Output)
	}
	b.WriteString("\n")
	writeChecks(&b, r.Checks)
	if f := r.Error; f != nil {
		fmt.Fprintf(&b, "\nerror (%s): %s\nfix: %s\n", f.Kind, f.Message, f.Fix)
	}
	if r.EvidenceDir != "" {
		fmt.Fprintf(&b, "\nevidence: %s\n", filepath.Join(r.EvidenceDir, "report.json"))
	}
	if r.SessionID != "" {
		fmt.Fprintf(&b, "session %s, Log %s\n", r.SessionID, r.Log)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
