package tools

import (
	"fmt"
	"slices"
	"strings"
)

// Registry is the set of tools a Session offers, in a fixed order so the
// tool list a provider sees (and its prompt cache) is stable.
type Registry struct {
	order  []Tool
	byName map[string]Tool
	// extra are the tools With added after byName's: a few, found by a
	// scan, so that byName is shared, not copied.
	extra []Tool
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

// With is a registry of r's tools and then extra, in that order; r is
// not changed, and its index is shared, not copied (a workflow's thousands
// of children share their tools and add a step's own). A name r has, or
// two extras with one name, panic as in NewRegistry.
func (r *Registry) With(extra ...Tool) *Registry {
	if len(extra) == 0 {
		return r
	}
	w := &Registry{byName: r.byName, order: make([]Tool, 0, len(r.order)+len(extra)), extra: slices.Clip(r.extra)}
	w.order = append(w.order, r.order...)
	for _, t := range extra {
		if _, dup := w.Get(t.Name()); dup {
			panic(fmt.Sprintf("tools.Registry.With: two tools are named %q", t.Name()))
		}
		w.extra = append(w.extra, t)
		w.order = append(w.order, t)
	}
	return w
}

// Get finds a tool by name.
func (r *Registry) Get(name string) (Tool, bool) {
	if t, ok := r.byName[name]; ok {
		return t, true
	}
	for _, t := range r.extra {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
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
