package tools

import (
	"context"
	_ "embed"
)

//go:embed merge_agent.md
var mergeAgentDescription string

// MergeAgentArgs are the arguments of merge_agent.
type MergeAgentArgs struct {
	ID     string `json:"id" jsonschema:"minLength=1" jsonschema_description:"The child whose work to merge (an isolated one that ended)."`
	DryRun bool   `json:"dry_run,omitempty" jsonschema_description:"Show the plan (files, diffs, conflicts) and write nothing."`
}

// MergeAgentTool merges a child's snapshot into the workspace.
func MergeAgentTool() Tool {
	return mergeAgent{Define(Spec[MergeAgentArgs]{
		Name:        "merge_agent",
		Description: mergeAgentDescription,
		Posture:     PostureMutation,
		Kind:        KindEdit,
		Describe: func(a MergeAgentArgs) Presentation {
			return Presentation{Title: "Merge " + a.ID + " into the workspace"}
		},
		Run: func(ctx context.Context, env Env, a MergeAgentArgs, dryRun bool) Result {
			sa, f := subagents(env)
			if f != nil {
				return Failed(f)
			}
			rep, err := sa.Merge(ctx, a.ID, dryRun || a.DryRun)
			if err != nil {
				return Failed(AsFailure(err))
			}
			res := Result{OK: rep.Status == MergeMerged, Output: rep, Diffs: rep.Diffs}
			for _, d := range rep.Diffs {
				res.Locations = append(res.Locations, Location{Path: d.Path})
			}
			return res
		},
	})}
}

// mergeAgent is merge_agent: its dry run's diffs are shown in an ask-mode
// question.
type mergeAgent struct{ Tool }

func (mergeAgent) PreviewsDiffs() {}

// Arguments is the argument type the schema generator reflects (the
// embedded Tool's method is not promoted through the interface).
func (mergeAgent) Arguments() any { return new(MergeAgentArgs) }
