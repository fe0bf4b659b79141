package tools

import (
	"context"
	_ "embed"
	"time"
)

//go:embed spawn_agent.md
var spawnAgentDescription string

// SpawnAgentArgs are the arguments of spawn_agent.
type SpawnAgentArgs struct {
	Task          string `json:"task" jsonschema:"minLength=1" jsonschema_description:"The child's whole assignment: what to do, what to report back. It sees nothing else of this conversation, unless fork_context is true."`
	Agent         string `json:"agent,omitempty" jsonschema_description:"Which agent to run: default, worker, explorer, or a custom agent's name. Default: default."`
	WorkspaceMode string `json:"workspace_mode,omitempty" jsonschema:"enum=isolated,enum=shared" jsonschema_description:"isolated (the default for a child that may write): the child works on a snapshot of the workspace and reports the files it changed; shared (the default for a read-only child): it works in this workspace itself."`
	TimeoutMS     int    `json:"timeout_ms,omitempty" jsonschema:"minimum=1000,maximum=3600000" jsonschema_description:"The child's time limit in milliseconds. Default from the configuration (120000)."`
	ForkContext   bool   `json:"fork_context,omitempty" jsonschema_description:"true: the child starts from a fork of this conversation (what you have seen so far, before this call), then the task; it needs less explaining and starts warm. Default false: it sees only the task."`
}

// SpawnAgentTool starts a child worker.
func SpawnAgentTool() Tool {
	return Define(Spec[SpawnAgentArgs]{
		Name:        "spawn_agent",
		Description: spawnAgentDescription,
		Posture:     PostureMutation,
		Kind:        KindThink,
		Describe: func(a SpawnAgentArgs) Presentation {
			return Presentation{Title: "Spawn " + agentName(a.Agent) + ": " + shorten(firstLine(a.Task), titleRunes)}
		},
		Run: func(ctx context.Context, env Env, a SpawnAgentArgs, dryRun bool) Result {
			sa, f := subagents(env)
			if f != nil {
				return Failed(f)
			}
			req := SpawnRequest{Agent: a.Agent, Task: a.Task, WorkspaceMode: a.WorkspaceMode, Timeout: time.Duration(a.TimeoutMS) * time.Millisecond,
				ForkContext: a.ForkContext}
			if dryRun {
				v, err := sa.Preview(req)
				if err != nil {
					return Failed(AsFailure(err))
				}
				return Preview("would spawn %s (%s workspace, depth %d) for: %s", v.Agent, v.WorkspaceMode, v.Depth, shorten(firstLine(a.Task), titleRunes))
			}
			return subagentResult(sa.Spawn(ctx, req))
		},
	})
}

func agentName(name string) string {
	if name == "" {
		return "default"
	}
	return name
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i] + " …"
		}
	}
	return s
}
