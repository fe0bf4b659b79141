package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/pixir-go/pixir/runtime/provider/doctor"
	"github.com/pixir-go/pixir/runtime/provider/scripted"
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
	var pf providerFlags
	pf.register(fs)
	asJSON := fs.Bool("json", false, "print a machine-readable report")
	if err := fs.Parse(args); err != nil {
		return exitUsage
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
		r.Add(ch.Check(ctx, c.Model)...)
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
