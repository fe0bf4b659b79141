package main

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/agents"
	"github.com/pixir-go/pixir/runtime/merge"
)

// subagentConfig wires the Subagents Manager to the agent registry and to
// workspace snapshots, with the limits of the configuration.
func subagentConfig(limits runtime.SubagentLimits, logger *slog.Logger) runtime.SubagentConfig {
	var (
		mu       sync.Mutex
		reported string // the agent files' problems last said
	)
	return runtime.SubagentConfig{
		MaxThreads: limits.MaxThreads,
		MaxDepth:   limits.MaxDepth,
		Timeout:    limits.Timeout(),
		// Codex's names where it has them; these two are Pixir's.
		MaxSubagents: limits.MaxSubagents,
		WaitTimeout:  time.Duration(limits.WaitTimeoutMS) * time.Millisecond,
		Agents: func(workspace string) (runtime.AgentCatalog, error) {
			home, _ := os.UserHomeDir()
			reg, err := agents.Load(workspace, home)
			if err != nil {
				// The agents that load are usable; a broken file is reported
				// here and by `pixir agents`, not by refusing every spawn.
				// The folders are read at each spawn: the same problems are
				// said once, not before every step of a workflow.
				mu.Lock()
				again := err.Error() == reported
				reported = err.Error()
				mu.Unlock()
				if !again {
					logger.Warn("some agent files do not load and are left out until they are fixed (pixir agents lists them)", "err", err)
				}
			}
			return catalog{reg}, nil
		},
		Snapshot: func(ctx context.Context, src, dst string) (runtime.Snapshot, error) {
			return merge.TakeChild(ctx, src, dst)
		},
		RemoveSnapshot: merge.RemoveChild,
		LoadSnapshot:   func(dst string) (runtime.Snapshot, error) { return merge.LoadChild(dst) },
	}
}

// catalog adapts the agent registry to the Manager.
type catalog struct{ reg *agents.Registry }

func (c catalog) Agent(name string) (runtime.AgentSpec, bool) {
	a, ok := c.reg.Get(name)
	if !ok {
		return runtime.AgentSpec{}, false
	}
	return runtime.AgentSpec{Name: a.Name, Description: a.Description, DeveloperInstructions: a.DeveloperInstructions, Model: a.Model,
		ReasoningEffort: a.ModelReasoningEffort, ReadOnly: a.ReadOnly(), DenyNetwork: a.DenyNetwork(), Source: a.Source,
		MCPServers: a.AllowedMCPServers,
		Profile:    runtime.AgentProfile{Tools: a.Profile.Tools, WriteSet: a.Profile.WriteSet, Shell: a.Profile.Shell, Commands: a.Profile.Commands}}, true
}

func (c catalog) Names() []string { return c.reg.Names() }

// Broken says why an agent whose file does not load is refused.
func (c catalog) Broken(name string) error { return c.reg.Broken(name) }

// BrokenNames are the agents whose file does not load.
func (c catalog) BrokenNames() []string { return c.reg.BrokenNames() }

// Warnings are what `pixir agents` warns about the agent files, for the
// notices of a session opened in the editor.
func (c catalog) Warnings() []string {
	var out []string
	for _, w := range c.reg.Warnings() {
		out = append(out, w.String())
	}
	return out
}
