package runtime

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/tools/mcp"
)

// MCP servers of a session (tools/mcp). A top-level session that has any
// (from config.toml, or from the editor in session/new) starts them when it
// opens and stops them when it closes; its Subagents and workflow steps use
// the same running servers, narrowed to the ones their agent or step
// allows. A session without servers has no Set at all: its turns use the
// runtime's shared tool list, as before.

// MCPConfig is the MCP part of the configuration.
type MCPConfig struct {
	// Servers are started for every top-level session (config.toml's
	// [mcp_servers]); a session may add its own (WithMCPServers).
	Servers []mcp.ServerConfig
	// ToolTimeout and StartupTimeout apply to every server that sets
	// none ([mcp] in config.toml); zero leaves tools/mcp's defaults.
	ToolTimeout, StartupTimeout time.Duration
}

// SessionOption configures a session being opened.
type SessionOption func(*sessionOptions)

type sessionOptions struct {
	mcpServers []mcp.ServerConfig
	storeAfter func(store func())
}

func sessionOptionsOf(opts []SessionOption) sessionOptions {
	var o sessionOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithMCPServers gives a session MCP servers besides those of the runtime's
// configuration; one named like a configured server replaces it.
func WithMCPServers(servers []mcp.ServerConfig) SessionOption {
	return func(o *sessionOptions) { o.mcpServers = servers }
}

// mcpServersFor is the configuration's servers with the session's own laid
// over them by name.
func (r *Runtime) mcpServersFor(opts []SessionOption) []mcp.ServerConfig {
	o := sessionOptionsOf(opts)
	servers := slices.Clone(r.cfg.MCP.Servers)
	for _, own := range o.mcpServers {
		if i := slices.IndexFunc(servers, func(c mcp.ServerConfig) bool { return c.Name == own.Name }); i >= 0 {
			servers[i] = own
			continue
		}
		servers = append(servers, own)
	}
	return MCPConfig{Servers: servers, ToolTimeout: r.cfg.MCP.ToolTimeout, StartupTimeout: r.cfg.MCP.StartupTimeout}.WithDefaults()
}

// WithDefaults is the servers, each with the configured timeouts where it
// sets none.
func (c MCPConfig) WithDefaults() []mcp.ServerConfig {
	servers := slices.Clone(c.Servers)
	for i := range servers {
		if servers[i].ToolTimeout == 0 {
			servers[i].ToolTimeout = c.ToolTimeout
		}
		if servers[i].StartupTimeout == 0 {
			servers[i].StartupTimeout = c.StartupTimeout
		}
	}
	return servers
}

// mcpAccess is the MCP servers a session may use: a Set, narrowed to some
// of its servers, and the session's tool list built over it, kept while
// the Set's tools do not change.
type mcpAccess struct {
	set   *mcp.Set
	allow []string // nil: every server of the set
	owned bool     // the session started the set and stops it
	// keep, when set, is which of the servers' tools a Subagent is offered
	// (its agent's profile and its posture).
	keep func(tools.Tool) bool

	mu    sync.Mutex
	built bool
	gen   uint64
	reg   *tools.Registry
	specs []provider.ToolSpec
}

// toolbox is base (the session's other tools) followed by the tools of the
// servers the session may use.
func (a *mcpAccess) toolbox(base *tools.Registry, baseSpecs []provider.ToolSpec) (*tools.Registry, []provider.ToolSpec) {
	extra, gen := a.set.Tools(a.allow)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.built && a.gen == gen {
		return a.reg, a.specs
	}
	all := base.All()
	specs := slices.Clone(baseSpecs)
	for _, t := range extra {
		if _, clash := base.Get(t.Name()); clash {
			continue // mcp__ names cannot clash with built-ins; a step's extra tool could
		}
		if a.keep != nil && !a.keep(t) {
			continue
		}
		all = append(all, t)
		specs = append(specs, provider.ToolSpec{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()})
	}
	a.reg, a.specs, a.gen, a.built = tools.NewRegistry(all...), specs, gen, true
	return a.reg, a.specs
}

// toolbox is the tools a turn's next model call offers, and can run.
func (s *Session) toolbox() (*tools.Registry, []provider.ToolSpec) {
	if a := s.mcpAccess(); a != nil {
		return a.toolbox(s.registry(), s.toolSpecs())
	}
	return s.registry(), s.toolSpecs()
}

func (s *Session) mcpAccess() *mcpAccess {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mcp
}

// startMCP starts servers for this top-level session, replacing any it
// had, unless they are the ones it already runs.
func (s *Session) startMCP(servers []mcp.ServerConfig) {
	s.mu.Lock()
	old := s.mcp
	if old != nil && reflect.DeepEqual(old.configs(), servers) {
		s.mu.Unlock()
		return
	}
	s.mcp = nil
	if len(servers) > 0 {
		set := mcp.Start(servers, mcp.Options{
			Dir: s.workspace.Root(), Logger: s.rt.log.With("session", s.ID()), Version: s.rt.cfg.Version,
			Notify: s.mcpNotice,
		})
		s.mcp = &mcpAccess{set: set, owned: true}
	}
	s.mu.Unlock()
	if old != nil && old.owned {
		old.set.Close()
	}
}

func (a *mcpAccess) configs() []mcp.ServerConfig {
	return a.set.Configs()
}

// mcpNotice records what a server did that the user should know (it did
// not start, it stopped) and shows it.
func (s *Session) mcpNotice(n mcp.Notice) {
	if err := s.emitBackground(EventNotice, NoticeData{Source: "mcp", Server: n.Server, Severity: n.Severity, Title: n.Title, Detail: n.Detail}); err != nil {
		s.rt.log.Warn("recording an MCP notice", "session", s.ID(), "err", err)
	}
}

// closeMCP stops the servers this session started.
func (s *Session) closeMCP() {
	s.mu.Lock()
	a := s.mcp
	s.mcp = nil
	s.mu.Unlock()
	if a != nil && a.owned {
		a.set.Close()
	}
}

// waitMCP waits until the session's servers have started (or failed to),
// so the first model call of a session sees their tools.
func (s *Session) waitMCP(ctx context.Context) {
	if a := s.mcpAccess(); a != nil {
		_ = a.set.Ready(ctx) // a cancelled turn notices on its own
	}
}

// MCPServers names the MCP servers this session may use, in order.
func (s *Session) MCPServers() []string {
	a := s.mcpAccess()
	if a == nil {
		return nil
	}
	names := a.set.Names()
	if a.allow != nil {
		names = slices.DeleteFunc(names, func(n string) bool { return !slices.Contains(a.allow, n) })
	}
	return names
}

// MCPStatus describes the MCP servers this session may use, once they
// have started or failed to (or ctx ends).
func (s *Session) MCPStatus(ctx context.Context) []mcp.ServerStatus {
	a := s.mcpAccess()
	if a == nil {
		return nil
	}
	_ = a.set.Ready(ctx)
	st := a.set.Status()
	if a.allow != nil {
		st = slices.DeleteFunc(st, func(x mcp.ServerStatus) bool { return !slices.Contains(a.allow, x.Name) })
	}
	return st
}

// inheritMCP gives a child its parent's servers, narrowed to allow (nil:
// all the parent may use), of whose tools it is offered those keep allows
// (nil: all). The child shares the parent's running servers and never
// stops them.
func (s *Session) inheritMCP(parent *Session, allow []string, keep func(tools.Tool) bool) {
	pa := parent.mcpAccess()
	if pa == nil {
		return
	}
	s.mu.Lock()
	s.mcp = &mcpAccess{set: pa.set, allow: narrowed(allow, pa.allow), keep: keep}
	s.mu.Unlock()
}

// narrowed is what two allow lists both allow; nil allows everything.
func narrowed(a, b []string) []string {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return slices.DeleteFunc(slices.Clone(a), func(n string) bool { return !slices.Contains(b, n) })
}

// checkMCPNames refuses server names a session does not have, naming the
// ones it has.
func (s *Session) checkMCPNames(names []string) error {
	return checkMCPNames(s.MCPServers(), names)
}

func checkMCPNames(have, names []string) error {
	var unknown []string
	for _, n := range names {
		if !slices.Contains(have, n) {
			unknown = append(unknown, fmt.Sprintf("%q", n))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	avail := "it has none"
	if len(have) > 0 {
		avail = "it has " + strings.Join(have, ", ")
	}
	return failure(tools.ErrInvalidArgs, "this session has no MCP server %s (%s)", strings.Join(unknown, ", "), avail)
}
