package tools

import (
	"context"
	_ "embed"
)

//go:embed close_agent.md
var closeAgentDescription string

// CloseAgentArgs are the arguments of close_agent.
type CloseAgentArgs struct {
	ID string `json:"id" jsonschema:"minLength=1" jsonschema_description:"The child to close."`
}

// CloseAgentTool stops a child and frees what it holds.
func CloseAgentTool() Tool {
	return Define(Spec[CloseAgentArgs]{
		Name:        "close_agent",
		Description: closeAgentDescription,
		Posture:     PostureMutation,
		Kind:        KindThink,
		Describe:    func(a CloseAgentArgs) Presentation { return Presentation{Title: "Close " + a.ID} },
		Run: func(ctx context.Context, env Env, a CloseAgentArgs, dryRun bool) Result {
			sa, f := subagents(env)
			if f != nil {
				return Failed(f)
			}
			if dryRun {
				return Preview("would close %s (cancelling it if it is queued or running)", a.ID)
			}
			return subagentResult(sa.Close(ctx, a.ID))
		},
	})
}
