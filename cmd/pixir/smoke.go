package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/agents"
	"github.com/pixir-go/pixir/runtime/provider/anthropic"
	"github.com/pixir-go/pixir/runtime/provider/openai"
	"github.com/pixir-go/pixir/smoke"
)

const smokeUsage = `Usage:
  pixir smoke workflows [--dry-run] [--json] [--keep]
      check the workflow contract offline, on a scripted model in a scratch
      workspace (removed afterwards unless --keep); --dry-run only validates
      and plans: it starts nothing and writes nothing
  pixir smoke workflows-real --scenario micro_parallel|dependency|writer_controlled
                             [--dry-run] [--json] [--timeout-ms N] [--cwd DIR]
                             [--provider P] [--profile NAME] [--model M] [--base-url URL]
      run one small workflow against the configured model provider and keep
      the evidence under DIR/.pixir/smoke/workflows-real/; --dry-run checks
      the configuration and prints the plan, offline, writing nothing

Exit codes: 0 every check passes, 1 a check failed or a known failure
(printed with what to do), 64 invalid usage or configuration.
`

// offlineSmokeTimeout bounds the offline smoke; it takes about a second.
const offlineSmokeTimeout = 2 * time.Minute

// runSmoke is `pixir smoke workflows` and `pixir smoke workflows-real`.
func runSmoke(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, smokeUsage)
		return exitUsage
	}
	switch args[0] {
	case "workflows":
		return runSmokeWorkflows(args[1:], stdout, stderr)
	case "workflows-real":
		return runSmokeWorkflowsReal(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, smokeUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "pixir smoke: unknown smoke %q", args[0])
	if near := nearest(args[0], []string{"workflows", "workflows-real"}); near != "" {
		fmt.Fprintf(stderr, "; did you mean %q?", near)
	}
	fmt.Fprintf(stderr, "\n\n%s", smokeUsage)
	return exitUsage
}

func smokeFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), smokeUsage+"\nFlags of "+name+":\n")
		fs.PrintDefaults()
	}
	return fs
}

// runSmokeWorkflows is `pixir smoke workflows`.
func runSmokeWorkflows(args []string, stdout, stderr io.Writer) int {
	fs := smokeFlags("pixir smoke workflows", stderr)
	dryRun := fs.Bool("dry-run", false, "only validate and plan the smoke's workflows: start nothing, write nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	keep := fs.Bool("keep", false, "keep the scratch workspace and say where it is")
	verbose := fs.Bool("verbose", false, "log debug details on stderr")
	if _, code, done := parseFlags(fs, args, false, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pixir smoke workflows: unexpected argument %q\n\n", fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	logger := runLogger(stderr, *verbose)
	// Hermetic: default limits and the built-in agents only, whatever the
	// user's configuration says; snapshots are the real ones.
	sub := subagentConfig(runtime.SubagentLimits{}, logger)
	sub.Agents = builtinAgents
	ctx, stop := interruptible()
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, offlineSmokeTimeout)
	defer cancel()
	r := smoke.Workflows(ctx, smoke.Options{DryRun: *dryRun, Keep: *keep, Subagents: sub, Logger: logger})
	write := r.WriteText
	if *asJSON {
		write = r.WriteJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintln(stderr, "pixir:", err)
		return exitError
	}
	if !r.OK {
		return exitError
	}
	return exitOK
}

// builtinAgents is the catalogue of the built-in agents alone.
func builtinAgents(string) (runtime.AgentCatalog, error) {
	reg, err := agents.Load("", "")
	return catalog{reg}, err
}

// runSmokeWorkflowsReal is `pixir smoke workflows-real`.
func runSmokeWorkflowsReal(args []string, stdout, stderr io.Writer) int {
	fs := smokeFlags("pixir smoke workflows-real", stderr)
	var pf providerFlags
	pf.register(fs)
	scenario := fs.String("scenario", "", "the workflow to run: micro_parallel, dependency or writer_controlled")
	dryRun := fs.Bool("dry-run", false, "check the configuration and print the plan, offline: start nothing, write nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeoutMS := fs.Int64("timeout-ms", 0, "each step's timeout_ms (default 120000)")
	cwd := fs.String("cwd", "", "the folder whose .pixir/smoke/workflows-real/ keeps the evidence (default: the current one)")
	verbose := fs.Bool("verbose", false, "log debug details on stderr")
	if _, code, done := parseFlags(fs, args, false, stdout, stderr); done {
		return code
	}
	usageErr := func(err error) int {
		if *asJSON {
			_ = (&smoke.RealReport{Mode: smokeMode(*dryRun), Scenario: smoke.Scenario(*scenario), Checks: []smoke.Check{},
				Error: &smoke.Failure{Kind: "invalid_args", Message: err.Error(), Fix: "see pixir smoke --help"}}).WriteJSON(stdout)
		}
		fmt.Fprintf(stderr, "pixir smoke workflows-real: %v\n\n", err)
		fs.Usage()
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		return usageErr(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	case *scenario == "":
		return usageErr(errors.New("--scenario is required: micro_parallel, dependency or writer_controlled"))
	case *timeoutMS < 0:
		return usageErr(fmt.Errorf("--timeout-ms %d must be positive", *timeoutMS))
	}
	sc, err := smoke.ParseScenario(*scenario)
	if err != nil {
		return usageErr(err)
	}
	dir, err := workspaceDir(*cwd)
	if err != nil {
		return usageErr(err)
	}
	_, _, c, err := loadChoice(pf)
	if err != nil {
		r := &smoke.RealReport{Mode: smokeMode(*dryRun), Scenario: sc, Checks: []smoke.Check{},
			Error: &smoke.Failure{Kind: smoke.KindInvalidConfig, Message: err.Error(), Fix: "correct the flags, the environment or config.toml; `pixir doctor` checks them"}}
		return printReal(r, *asJSON, stdout, stderr)
	}
	logger := runLogger(stderr, *verbose)
	ctx, stop := interruptible()
	defer stop()
	r := smoke.Real(ctx, smoke.RealOptions{
		Scenario: sc, Dir: dir, DryRun: *dryRun, StepTimeoutMS: *timeoutMS,
		Provider: smoke.Provider{
			Name: c.Name, Profile: c.Profile, Model: c.Model, BaseURL: c.Settings.BaseURL,
			KeyEnv: c.KeyEnv, KeySet: c.APIKey != "", KeyRequired: keyRequired(c),
		},
		NewRuntime: func() (*runtime.Runtime, error) { return newRuntime(pf, logger) },
	})
	return printReal(r, *asJSON, stdout, stderr)
}

// printReal prints a real smoke's report; its exit code is 0 when it
// passed, 64 for a configuration to correct, 1 otherwise.
func printReal(r *smoke.RealReport, asJSON bool, stdout, stderr io.Writer) int {
	write := r.WriteText
	if asJSON {
		write = r.WriteJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintln(stderr, "pixir:", err)
		return exitError
	}
	switch {
	case r.OK:
		return exitOK
	case r.Error != nil && r.Error.Kind == smoke.KindInvalidConfig:
		return exitUsage
	}
	return exitError
}

func smokeMode(dryRun bool) string {
	if dryRun {
		return smoke.ModeDryRun
	}
	return smoke.ModeRun
}

// keyRequired says whether the chosen provider cannot work without an API
// key: Anthropic's API and OpenAI's own; a local server needs none.
func keyRequired(c providerChoice) bool {
	switch c.Name {
	case anthropic.ProviderName:
		return true
	case openai.ProviderName:
		u, err := url.Parse(c.Settings.BaseURL)
		return err == nil && u.Hostname() == "api.openai.com"
	}
	return false
}
