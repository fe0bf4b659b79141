package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools/mcp"

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
	// The MCP servers start now and answer while the provider is checked.
	mcpChecks := startMCPChecks(settings)
	// Last, whatever the provider checks say: commands and MCP servers
	// run either way. The sandbox is checked before the wait for a slow
	// server can spend the time left.
	defer func() {
		sb := sandboxCheck(ctx, settings.Sandbox)
		r.Add(mcpChecks(ctx)...)
		r.Add(sb)
	}()
	if err != nil {
		r.Provider = firstOf(pf.provider, os.Getenv("PIXIR_PROVIDER"))
		r.Add(doctor.Check{Name: "config", Status: doctor.Fail, Detail: err.Error(), Fix: "correct the configuration"})
		return r
	}
	r.Provider, r.Profile, r.Model = c.Name, c.Profile, c.Model
	if c.Name != scripted.ProviderName {
		r.BaseURL = c.Settings.BaseURL
	}
	if home == "" {
		r.Add(doctor.Check{Name: "config", Status: doctor.Warn, Detail: noHome(), Fix: "set HOME, or PIXIR_HOME to the folder of config.toml"})
	} else if settings.Path != "" {
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
	case sup.TempProblem != "":
		c.Status = doctor.Warn
		c.Fix = "set TMPDIR to a folder you can write (or unset it for /tmp): confined commands make their private temporary directory there"
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

// startMCPChecks starts the enabled [mcp_servers] of config.toml here, as
// a session would, and returns what waits for them (at most until ctx
// ends) and says, per server, whether it started and what it offers. A
// server a session would leave out (a variable its headers name is not
// set) or whose command is not found is not started. The servers are
// stopped before the checks are returned.
func startMCPChecks(settings runtime.Settings) func(context.Context) []doctor.Check {
	if len(settings.MCPServers) == 0 {
		return func(context.Context) []doctor.Check { return nil }
	}
	where := func(name string) string {
		if settings.Path == "" {
			return "[" + runtime.TOMLKey("mcp_servers", name) + "]"
		}
		return "[" + runtime.TOMLKey("mcp_servers", name) + "] of " + settings.Path
	}
	var checks []doctor.Check // one per server, in name order
	var configs []mcp.ServerConfig
	var at []int // configs[i] is checks[at[i]]'s
	cfg := runtime.MCPConfig{ToolTimeout: settings.MCP.ToolTimeout.Duration, StartupTimeout: settings.MCP.StartupTimeout.Duration}
	dir, dirErr := os.Getwd()
	for _, name := range slices.Sorted(maps.Keys(settings.MCPServers)) {
		table := where(name)
		c, enabled, err := settings.MCPServer(name, os.Getenv)
		var missing *runtime.MissingEnvError
		switch {
		case !enabled:
			checks = append(checks, doctor.Check{Name: "mcp", Status: doctor.OK, Detail: fmt.Sprintf("%q is disabled (enabled = false): not started", name)})
			continue
		case errors.As(err, &missing):
			checks = append(checks, doctor.Check{Name: "mcp", Status: doctor.Fail,
				Detail: fmt.Sprintf("%q is left out of every session: %s not set in the environment", name, strings.Join(missing.Variables, ", ")),
				Fix:    fmt.Sprintf("set %s where pixir runs, or enabled = false in %s", strings.Join(missing.Variables, ", "), table)})
			continue
		case err != nil:
			checks = append(checks, doctor.Check{Name: "mcp", Status: doctor.Fail, Detail: fmt.Sprintf("%q: %v", name, err), Fix: "correct " + table})
			continue
		case dirErr != nil:
			checks = append(checks, doctor.Check{Name: "mcp", Status: doctor.Fail, Detail: fmt.Sprintf("%q not started: %v", name, dirErr), Fix: "run pixir doctor in your workspace"})
			continue
		}
		if c.Transport() == "stdio" {
			if _, err := exec.LookPath(c.Command); err != nil {
				checks = append(checks, doctor.Check{Name: "mcp", Status: doctor.Fail,
					Detail: fmt.Sprintf("%q (stdio): its command is not found: %v", name, err),
					Fix:    fmt.Sprintf("install %s, or correct command in %s", c.Command, table)})
				continue
			}
		}
		at = append(at, len(checks))
		checks = append(checks, doctor.Check{Name: "mcp"})
		configs = append(configs, c)
	}
	cfg.Servers = configs
	servers := cfg.WithDefaults()
	var set *mcp.Set
	if len(servers) > 0 {
		set = mcp.Start(servers, mcp.Options{Dir: dir, Version: version})
	}
	return func(ctx context.Context) []doctor.Check {
		if set == nil {
			return checks
		}
		_ = set.Ready(ctx) // a server still starting is said below
		for i, st := range set.Status() {
			c := &checks[at[i]]
			c.Name = "mcp"
			table := where(st.Name)
			switch st.State {
			case mcp.StateRunning:
				c.Status = doctor.OK
				c.Detail = fmt.Sprintf("%q (%s): started, %s", st.Name, st.Transport, plural.Of(len(st.Tools), "tool", "tools"))
				if len(st.Tools) > 0 {
					names := make([]string, len(st.Tools))
					for j, t := range st.Tools {
						names[j] = t.Name()
					}
					c.Detail += ": " + someNames(names, 5)
				}
			case mcp.StateStarting:
				wait := servers[i].StartupTimeout
				if wait == 0 {
					wait = mcp.DefaultStartupTimeout
				}
				c.Status = doctor.Warn
				c.Detail = fmt.Sprintf("%q (%s): still starting when doctor gave up (it waits %s in all; the server's startup_timeout is %s)",
					st.Name, st.Transport, doctorTimeout, wait)
				c.Fix = "run pixir tools --mcp to wait for it"
			default:
				c.Status = doctor.Fail
				c.Detail = fmt.Sprintf("%q (%s) did not start: %s", st.Name, st.Transport, st.Error)
				if st.Transport == "http" {
					c.Fix = "check the url and headers of " + table + ", and that the server answers"
				} else {
					c.Fix = "run its command by hand to see why, or correct " + table
				}
			}
		}
		set.Close()
		return checks
	}
}

// someNames is up to n names, and how many more there are.
func someNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
