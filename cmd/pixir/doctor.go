package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pixir-go/pixir/runtime/provider/doctor"
	"github.com/pixir-go/pixir/runtime/provider/scripted"
	"github.com/pixir-go/pixir/sandbox"
)

// doctorTimeout bounds all the checks together.
const doctorTimeout = 30 * time.Second

// checker is a provider that can check its configuration and server.
type checker interface {
	Check(ctx context.Context, model string) []doctor.Check
}

// runDoctor checks the configured provider and prints what to fix: exit 0
// when every check passes, 1 otherwise.
func runDoctor(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pixir doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, "Usage: pixir doctor [--json] [provider flags]\n\nChecks the model provider that pixir run and pixir acp would use, and the command sandbox.\nExit codes: 0 every check passed, 1 something to fix, 64 invalid flags.\n")
	var pf providerFlags
	pf.register(fs)
	asJSON := fs.Bool("json", false, "print a machine-readable report")
	rest, code, done := parseFlags(fs, args, false, stdout, stderr)
	if done {
		return code
	}
	if code, done := noArguments("pixir doctor", "pixir doctor [--json] [provider flags]", rest, stderr); done {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), doctorTimeout)
	defer cancel()
	r := diagnose(ctx, pf)
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

func diagnose(ctx context.Context, pf providerFlags) *doctor.Report {
	r := &doctor.Report{}
	home, settings, c, err := loadChoice(pf)
	// Last, whatever the provider checks say: commands run either way.
	defer func() { r.Add(sandboxCheck(ctx, settings.Sandbox)) }()
	if err != nil {
		r.Provider = firstOf(pf.provider, os.Getenv("PIXIR_PROVIDER"))
		r.Add(doctor.Check{Name: "config", Status: doctor.Fail, Detail: err.Error(), Fix: "correct the configuration"})
		return r
	}
	r.Provider, r.Profile, r.Model = c.Name, c.Profile, c.Model
	if c.Name != scripted.ProviderName {
		r.BaseURL = c.Settings.BaseURL
	}
	if settings.Path != "" {
		detail := settings.Path
		if c.Profile != "" {
			detail += fmt.Sprintf(", profile %q", c.Profile)
		}
		r.Add(doctor.Check{Name: "config", Status: doctor.OK, Detail: detail})
	} else {
		r.Add(doctor.Check{Name: "config", Status: doctor.OK, Detail: fmt.Sprintf("no %s; flags, environment and defaults only", filepath.Join(home, "config.toml"))})
	}
	// Retries would only delay the verdict.
	c.Settings.MaxRetries = new(int)
	provider, err := buildProvider(c, slog.New(slog.DiscardHandler))
	if err != nil {
		r.Add(doctor.Check{Name: "script", Status: doctor.Fail, Detail: err.Error(), Fix: "correct the script, or unset --script, PIXIR_SCRIPT and [scripted] script to use the embedded one"})
		return r
	}
	if ch, ok := provider.(checker); ok {
		checks := ch.Check(ctx, c.Model)
		if err := c.modelProblem(); err != nil {
			// pixir run and pixir acp refuse this setup whatever the
			// server says: so does the doctor.
			checks = slices.DeleteFunc(checks, func(ch doctor.Check) bool { return ch.Name == "model" && ch.Status != doctor.Fail })
			if !slices.ContainsFunc(checks, func(ch doctor.Check) bool { return ch.Name == "model" }) {
				checks = append(checks, doctor.Check{Name: "model", Status: doctor.Fail, Detail: "no model is configured: pixir run and pixir acp refuse to start without one",
					Fix: "set --model, PIXIR_MODEL or model in config.toml"})
			}
		}
		r.Add(checks...)
		if cl, ok := provider.(interface{ CloseIdleConnections() }); ok {
			cl.CloseIdleConnections()
		}
		return r
	}
	script := "the embedded default script"
	if c.Settings.Scripted.Script != "" {
		script = c.Settings.Scripted.Script
	}
	r.Add(doctor.Check{Name: "script", Status: doctor.OK, Detail: script + " (loaded and valid)"},
		doctor.Check{Name: "network", Status: doctor.OK, Detail: "offline: the scripted provider needs no server and no API key"})
	return r
}

// sandboxCheck says what the kernel gives the sandbox of the tools'
// commands. A missing part is a warning, not a failure: commands still
// run, read-only agents without their shell, and Pixir says so in each
// session too.
func sandboxCheck(ctx context.Context, cfg sandbox.Config) doctor.Check {
	sup := sandbox.New(cfg).Check(ctx)
	c := doctor.Check{Name: "sandbox", Status: doctor.OK, Detail: sup.Describe()}
	switch {
	case !sup.Landlock && cfg.Landlock != nil && !*cfg.Landlock:
		c.Status = doctor.Warn
		c.Fix = "remove landlock = false from [sandbox] in config.toml"
	case !sup.Landlock:
		c.Status = doctor.Warn
		c.Fix = "run Pixir on Linux 5.13 or later with Landlock enabled (landlock in the lsm= boot parameter)"
	case !sup.LandlockNetwork:
		c.Status = doctor.Warn
		c.Fix = "Linux 6.7 or later (Landlock ABI 4) is needed to deny agents the network"
	case sup.Contain != "pid-namespace":
		c.Status = doctor.Warn
		c.Fix = "allow PID namespaces (run as root, or enable unprivileged user namespaces) so that every process a command starts ends with it"
	}
	return c
}
