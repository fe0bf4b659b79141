package tools

import (
	"fmt"
	"strings"
)

// Registry is the set of tools a Session offers, in a fixed order so the
// tool list a provider sees (and its prompt cache) is stable.
type Registry struct {
	order  []Tool
	byName map[string]Tool
}

// NewRegistry keeps ts in the order given. Two tools with one name would
// make calls ambiguous, so that panics: it is a wiring bug.
func NewRegistry(ts ...Tool) *Registry {
	r := &Registry{byName: make(map[string]Tool, len(ts)), order: make([]Tool, 0, len(ts))}
	for _, t := range ts {
		if _, dup := r.byName[t.Name()]; dup {
			panic(fmt.Sprintf("tools.NewRegistry: two tools are named %q", t.Name()))
		}
		r.byName[t.Name()] = t
		r.order = append(r.order, t)
	}
	return r
}

// Get finds a tool by name.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// All returns the tools in declaration order; the slice is the caller's.
func (r *Registry) All() []Tool {
	return append([]Tool(nil), r.order...)
}

// Tools is the tools in registration order, not copied: the caller must
// not change the slice.
func (r *Registry) Tools() []Tool { return r.order }

// Unknown is the result of a call to a tool the registry does not have. It
// lists the tools that do exist, since the model has usually misspelled one
// or remembered one from another agent.
func (r *Registry) Unknown(name string) Result {
	names := make([]string, len(r.order))
	for i, t := range r.order {
		names[i] = t.Name()
	}
	return Fail(ErrUnknownTool, "there is no tool named %q; use one of: %s", name, strings.Join(names, ", "))
}

// Builtins returns fresh instances of the built-in file, shell, search and
// plan tools.
func Builtins() []Tool {
	return []Tool{
		ReadTool(), WriteTool(), EditTool(), BashTool(), GrepTool(), GlobTool(), UpdatePlanTool(),
		SpawnAgentTool(), WaitAgentTool(), SendInputTool(), CloseAgentTool(), ListAgentsTool(), MergeAgentTool(),
	}
}
