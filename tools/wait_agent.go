package tools

import (
	"context"
	_ "embed"
	"strings"
	"time"
)

//go:embed wait_agent.md
var waitAgentDescription string

// WaitAgentArgs are the arguments of wait_agent.
type WaitAgentArgs struct {
	IDs        []string `json:"ids,omitempty" jsonschema_description:"Children to wait for. Default: every child of this session."`
	TimeoutMS  *int     `json:"timeout_ms,omitempty" jsonschema:"minimum=0,maximum=3600000" jsonschema_description:"How long to wait, in milliseconds; 0 only looks. Default: 30 seconds (as configured), and never longer than the children's own time limits."`
	ReturnWhen string   `json:"return_when,omitempty" jsonschema:"enum=all,enum=any" jsonschema_description:"all (default): when every child waited for has ended; any: when the first has."`
}

// WaitAgentTool waits for children to end and returns their results.
func WaitAgentTool() Tool {
	return Define(Spec[WaitAgentArgs]{
		Name:        "wait_agent",
		Description: waitAgentDescription,
		Posture:     PostureRead,
		Kind:        KindThink,
		Describe: func(a WaitAgentArgs) Presentation {
			who := "all subagents"
			if len(a.IDs) > 0 {
				who = strings.Join(a.IDs, ", ")
			}
			return Presentation{Title: "Wait for " + shorten(who, titleRunes)}
		},
		Run: func(ctx context.Context, env Env, a WaitAgentArgs, dryRun bool) Result {
			sa, f := subagents(env)
			if f != nil {
				return Failed(f)
			}
			req := WaitRequest{IDs: a.IDs, Any: a.ReturnWhen == "any", Default: a.TimeoutMS == nil}
			horizon := "the default time"
			if a.TimeoutMS != nil {
				req.Timeout = time.Duration(*a.TimeoutMS) * time.Millisecond
				horizon = req.Timeout.String()
			}
			if dryRun {
				return Preview("would wait up to %s for %d subagent(s) (return when %s)", horizon, len(a.IDs), map[bool]string{true: "any", false: "all"}[req.Any])
			}
			return subagentResult(sa.Wait(ctx, req))
		},
	})
}
