// Package mcp makes the tools of MCP (Model Context Protocol) servers
// Pixir tools, with a client of its own (client.go): it starts stdio servers
// and connects to http (streamable) ones, lists their tools, checks
// arguments against their input schemas before each call, and turns their
// results into tool results. A Set is the servers of one session; it is
// made only for a session that has servers, so nothing here runs
// otherwise.
//
// Workspace confinement is not Pixir's to enforce here: a server reads and
// writes what its own configuration lets it. That is why every tool not
// annotated readOnlyHint is a mutation, and why a permission request says
// so.
package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Defaults of a ServerConfig's timeouts.
const (
	// DefaultToolTimeout bounds one call of an MCP tool.
	DefaultToolTimeout = 2 * time.Minute
	// DefaultStartupTimeout bounds starting a server and listing its tools.
	DefaultStartupTimeout = 30 * time.Second
)

// ServerConfig is one MCP server: a command Pixir starts and speaks to over
// its stdin and stdout, or the URL of a streamable http server.
type ServerConfig struct {
	// Name names the server to people and in its tools' names.
	Name string
	// Command, Args and Env start a stdio server, in the session's
	// workspace, with Pixir's environment plus Env.
	Command string
	Args    []string
	Env     []EnvVar
	// URL is the endpoint of an http server; Headers go with every
	// request (an Authorization header, say).
	URL     string
	Headers []Header
	// ToolTimeout bounds each call; zero is DefaultToolTimeout.
	ToolTimeout time.Duration
	// StartupTimeout bounds starting and listing tools; zero is
	// DefaultStartupTimeout.
	StartupTimeout time.Duration
}

// EnvVar is an environment variable of a stdio server.
type EnvVar struct{ Name, Value string }

// Header is an HTTP header of an http server.
type Header struct{ Name, Value string }

// Transport is "stdio" or "http".
func (c ServerConfig) Transport() string {
	if c.URL != "" {
		return "http"
	}
	return "stdio"
}

func (c ServerConfig) toolTimeout() time.Duration {
	if c.ToolTimeout > 0 {
		return c.ToolTimeout
	}
	return DefaultToolTimeout
}

func (c ServerConfig) startupTimeout() time.Duration {
	if c.StartupTimeout > 0 {
		return c.StartupTimeout
	}
	return DefaultStartupTimeout
}

// Check reports what is wrong with a list of servers: each needs a name
// (unique in the list) and either a command or an http(s) URL.
func Check(servers []ServerConfig) error {
	var errs []error
	var names []string
	for i, c := range servers {
		at := fmt.Sprintf("MCP server %d", i+1)
		if c.Name != "" {
			at = fmt.Sprintf("MCP server %q", c.Name)
		}
		switch {
		case strings.TrimSpace(c.Name) == "":
			errs = append(errs, fmt.Errorf("%s has no name; give each server a name", at))
		case slices.Contains(names, c.Name):
			errs = append(errs, fmt.Errorf("%s is named twice; give each server its own name", at))
		}
		names = append(names, c.Name)
		switch {
		case c.Command == "" && c.URL == "":
			errs = append(errs, fmt.Errorf("%s has neither a command nor a url", at))
		case c.Command != "" && c.URL != "":
			errs = append(errs, fmt.Errorf("%s has both a command and a url; give one", at))
		case c.URL != "":
			if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("%s: url %q is not an http(s) URL", at, c.URL))
			}
		}
	}
	return errors.Join(errs...)
}
