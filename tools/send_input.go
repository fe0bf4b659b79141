package tools

import (
	"context"
	_ "embed"
)

//go:embed send_input.md
var sendInputDescription string

// SendInputArgs are the arguments of send_input.
type SendInputArgs struct {
	ID      string `json:"id" jsonschema:"minLength=1" jsonschema_description:"The child to send the message to."`
	Message string `json:"message" jsonschema:"minLength=1" jsonschema_description:"What to tell it: a follow-up task or an answer."`
}

// SendInputTool gives an idle child a follow-up.
func SendInputTool() Tool {
	return Define(Spec[SendInputArgs]{
		Name:        "send_input",
		Description: sendInputDescription,
		Posture:     PostureMutation,
		Kind:        KindThink,
		Describe: func(a SendInputArgs) Presentation {
			return Presentation{Title: "Message " + a.ID + ": " + shorten(firstLine(a.Message), titleRunes)}
		},
		Run: func(ctx context.Context, env Env, a SendInputArgs, dryRun bool) Result {
			sa, f := subagents(env)
			if f != nil {
				return Failed(f)
			}
			if dryRun {
				return Preview("would send %d characters to %s, which then runs a new turn", len(a.Message), a.ID)
			}
			return subagentResult(sa.SendInput(ctx, a.ID, a.Message))
		},
	})
}
