package smoke

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider/scripted"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// Options configure the offline smoke.
type Options struct {
	// DryRun does only what needs no run: validation and the planned
	// waves. It starts no runtime and writes nothing.
	DryRun bool
	// Keep keeps the scratch workspace (Report.Workspace says where).
	Keep bool
	// TempDir is where the scratch workspace is made; "" is the system's.
	TempDir string
	// Subagents wires the Subagents Manager (agents, snapshots). The
	// checks need max_threads of 2 at least; zero limits are the defaults.
	Subagents runtime.SubagentConfig
	// Logger receives the runtime's logs; nil discards them.
	Logger *slog.Logger
}

// Workflows runs the offline smoke of the workflow contract and reports
// every check. It never returns an error: what went wrong is a failed
// check.
func Workflows(ctx context.Context, opt Options) *Report {
	start := time.Now()
	var c checks
	validationChecks(&c)
	planChecks(&c)
	r := &Report{Mode: ModeDryRun}
	if !opt.DryRun {
		r.Mode = ModeRun
		r.Workspace = runChecks(ctx, &c, opt)
	}
	r.Checks = c.list
	r.OK = allPass(r.Checks)
	r.ElapsedMS = time.Since(start).Milliseconds()
	return r
}

// validationChecks parses each invalid spec: each must be an invalid_args
// failure with its problem code, and give no workflow to run.
func validationChecks(c *checks) {
	for _, s := range invalidSpecs {
		w, err := workflows.Parse(json.RawMessage(s.spec))
		var p problems
		ev := map[string]any{"spec": json.RawMessage(s.spec), "want_code": s.code, "started": w != nil}
		p.expect(w == nil, "the spec was accepted; nothing refused it")
		if err != nil {
			f := tools.AsFailure(err)
			codes, cycle := problemCodes(f.Details)
			ev["kind"], ev["codes"], ev["message"] = f.Kind, codes, f.Message
			p.expect(f.Kind == tools.ErrInvalidArgs, "kind %s, want invalid_args", f.Kind)
			p.expect(slices.Contains(codes, s.code), "problem codes %v, want %s among them", codes, s.code)
			if s.code == "cycle" {
				ev["cycle"] = cycle
				p.expect(slices.Equal(cycle, wantCycle), "cycle path %v, want %v", cycle, wantCycle)
			}
		}
		c.add(s.name, s.about+" (invalid_args, code "+s.code+"), nothing started", ev, p...)
	}
}

// plans are the waves of the specs the smoke runs, as the dry run plans
// them (its agents are all the default one; no runtime is needed).
func plans() (map[string]workflows.DryRun, error) {
	out := map[string]workflows.DryRun{}
	for _, s := range runSpecs {
		w, err := workflows.Parse(json.RawMessage(s.spec))
		if err != nil {
			return nil, fmt.Errorf("the smoke's own %s workflow is invalid: %w", s.name, err)
		}
		plan, err := workflows.Waves(w)
		if err != nil {
			return nil, fmt.Errorf("planning the %s workflow: %w", s.name, err)
		}
		out[s.name] = plan
	}
	return out, nil
}

// planChecks checks the waves the dry run promises: read-only steps fan
// out, overlapping writers serialize (and say why), dependents come after
// their dependencies.
func planChecks(c *checks) {
	all, err := plans()
	if err != nil {
		c.add("plan", "the smoke's workflows plan", nil, err.Error())
		return
	}
	contract := all["contract"]
	wave := func(id string) int { return waveOf(contract.Waves, id) }

	var p problems
	p.expect(wave("survey") == 1 && wave("tests") == 1, "survey in wave %d and tests in wave %d, want both in wave 1", wave("survey"), wave("tests"))
	c.add("plan_parallel_read_only", "the dry run puts two read-only steps in the same wave",
		map[string]any{"workflow": "contract", "waves": contract.Waves, "max_concurrency": contract.MaxConcurrency}, p...)

	p = nil
	var why *workflows.Serialization
	for i := range contract.Serialized {
		if s := &contract.Serialized[i]; s.Step == "w2" && s.With == "w1" {
			why = s
		}
	}
	// A wave is a dependency level: the writers share one, and the plan
	// says that, within it, w2 runs after w1.
	p.expect(wave("w1") > 0 && wave("w2") == wave("w1"), "w1 in wave %d and w2 in wave %d, want both in the same wave", wave("w1"), wave("w2"))
	ev := map[string]any{"workflow": "contract", "waves": contract.Waves, "serialized": contract.Serialized, "merge_conflict_risk": contract.MergeRisks}
	if why == nil {
		p.addf("the plan does not say why w2 waits for w1")
	} else {
		p.expect(why.Rule == workflows.RuleWriteOverlap, "w2 waits for w1 by rule %s, want %s", why.Rule, workflows.RuleWriteOverlap)
	}
	c.add("plan_serialized_writers", "the dry run serializes two writers whose write sets overlap, and says why", ev, p...)

	p = nil
	p.expect(wave("use") > wave("survey"), "use in wave %d, survey in wave %d: a dependent must come after its dependency", wave("use"), wave("survey"))
	c.add("plan_dependency_order", "the dry run starts a dependent after its dependency",
		map[string]any{"workflow": "contract", "waves": contract.Waves}, p...)

	p = nil
	ev = map[string]any{}
	for _, s := range runSpecs {
		ev[s.name] = all[s.name].Waves
	}
	for _, dep := range []struct{ workflow, step, on string }{{"timeout", "after", "stuck"}, {"checkpoints", "next", "half"}} {
		waves := all[dep.workflow].Waves
		p.expect(waveOf(waves, dep.step) > waveOf(waves, dep.on), "%s: %s in wave %d, %s in wave %d", dep.workflow, dep.step, waveOf(waves, dep.step), dep.on, waveOf(waves, dep.on))
	}
	p.expect(len(all["typed"].Waves) == 1, "typed: waves %v, want its two independent steps in one", all["typed"].Waves)
	c.add("plan_checkpoint_scenarios", "the ADR 0014 scenarios plan: dependents after their dependencies, independent steps together", ev, p...)
}

// runChecks runs the smoke's workflows in a scratch workspace on the
// embedded script and checks their evidence. It returns the workspace
// when it is kept.
func runChecks(ctx context.Context, c *checks, opt Options) string {
	ws, err := os.MkdirTemp(opt.TempDir, "pixir-smoke-")
	if err != nil {
		c.add("workspace", "a scratch workspace is made", nil, err.Error())
		return ""
	}
	kept := ""
	if opt.Keep {
		kept = ws
	} else {
		defer os.RemoveAll(ws)
	}
	if err := seed(ws, map[string]string{"README.md": "# The smoke's workspace\n", "src/main.go": "package main\n\nfunc main() {}\n"}); err != nil {
		c.add("workspace", "a scratch workspace is made", nil, err.Error())
		return kept
	}
	script, err := Script()
	if err != nil {
		c.add("script", "the smoke's script loads", nil, err.Error())
		return kept
	}
	rt := runtime.New(runtime.Config{
		Provider:  scripted.New(script),
		Model:     "scripted",
		Tools:     tools.Builtins(),
		Workflows: true,
		Subagents: opt.Subagents,
		Logger:    opt.Logger,
	})
	defer rt.Close()

	results := map[string]*runResult{}
	for _, s := range runSpecs {
		res := runWorkflow(ctx, rt, ws, s.spec)
		res.name = s.name
		results[s.name] = res
		if res.err != nil {
			c.add("run_"+s.name, "the "+s.name+" workflow runs", res.evidence(), res.err.Error())
		}
	}
	ok := func(name string) *runResult {
		if r := results[name]; r.err == nil {
			return r
		}
		return nil
	}
	if r := ok("contract"); r != nil {
		parallelCheck(c, r, "survey", "tests")
		serializedCheck(c, r)
		dependencyCheck(c, r, "survey", "use")
		lifecycleCheck(c, r)
		allReadyCheck(c, r)
	}
	if r := ok("timeout"); r != nil {
		timeoutCheck(c, r)
	}
	if t, k := ok("timeout"), ok("checkpoints"); t != nil && k != nil {
		heldCheck(c, t, k)
	}
	if r := ok("checkpoints"); r != nil {
		partialNeedsCheck(c, r)
	}
	if r := ok("typed"); r != nil {
		typedCheck(c, r)
	}
	var ran []*runResult
	for _, s := range runSpecs {
		if r := ok(s.name); r != nil {
			ran = append(ran, r)
		}
	}
	rebuildCheck(c, ran)
	toolChecks(ctx, c, rt, ws)
	return kept
}

// seed makes dir with files (slash-separated relative paths).
func seed(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// runResult is one workflow run with its evidence.
type runResult struct {
	name    string
	w       *workflows.Workflow
	out     workflows.Outcome
	sess    *runtime.Session
	log     *sessionLog
	elapsed time.Duration
	err     error
}

func (r *runResult) root() string { return r.sess.Workspace().Root() }

func (r *runResult) evidence() map[string]any {
	ev := map[string]any{"workflow": r.name}
	if r.sess != nil {
		ev["session_id"] = r.sess.ID()
		ev["log"] = relTo(r.root(), logPath(r.sess))
	}
	if r.out.WorkflowID != "" {
		ev["workflow_id"], ev["status"] = r.out.WorkflowID, r.out.Status
	}
	return ev
}

// runWorkflow runs one spec in a new session of rt, as runWorkflowSpec.
func runWorkflow(ctx context.Context, rt *runtime.Runtime, ws, spec string) *runResult {
	w, err := workflows.Decode(json.RawMessage(spec))
	if err != nil {
		return &runResult{err: err}
	}
	return runWorkflowSpec(ctx, rt, ws, w)
}

// runWorkflowSpec runs a workflow in a new session of rt, straight
// through the workflow use case and the session's workflow ports (no
// model in the parent), and reads the session's Log.
func runWorkflowSpec(ctx context.Context, rt *runtime.Runtime, ws string, w *workflows.Workflow) *runResult {
	res := &runResult{w: w}
	sess, err := rt.NewSession(ws)
	if err != nil {
		res.err = fmt.Errorf("starting a session: %w", err)
		return res
	}
	res.sess = sess
	p, err := workflows.Prepare(w, sess.WorkflowPorts(nil))
	if err != nil {
		res.err = err
		return res
	}
	start := time.Now()
	res.out = p.Run(ctx, workflows.RunOptions{WorkflowID: workflows.NewWorkflowID()})
	res.elapsed = time.Since(start)
	if ctx.Err() != nil {
		res.err = fmt.Errorf("the run was interrupted: %w", ctx.Err())
		return res
	}
	res.log, res.err = readLog(logPath(sess))
	return res
}
