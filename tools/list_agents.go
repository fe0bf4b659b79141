package tools

import (
	"context"
	_ "embed"
)

//go:embed list_agents.md
var listAgentsDescription string

// ListAgentsArgs are the arguments of list_agents (none).
type ListAgentsArgs struct{}

// ListAgentsOutput is what list_agents returns.
type ListAgentsOutput struct {
	Agents []SubagentView `json:"agents"`
}

// ListAgentsTool lists the children of this session.
func ListAgentsTool() Tool {
	return Define(Spec[ListAgentsArgs]{
		Name:        "list_agents",
		Description: listAgentsDescription,
		Posture:     PostureRead,
		Kind:        KindThink,
		Describe:    func(ListAgentsArgs) Presentation { return Presentation{Title: "List subagents"} },
		Run: func(ctx context.Context, env Env, _ ListAgentsArgs, dryRun bool) Result {
			sa, f := subagents(env)
			if f != nil {
				return Failed(f)
			}
			if dryRun {
				return Preview("would list the subagents of this session")
			}
			views, err := sa.List(ctx)
			if views == nil {
				views = []SubagentView{}
			}
			return subagentResult(ListAgentsOutput{Agents: views}, err)
		},
	})
}
