package tools

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRegistry(t *testing.T) {
	r := NewRegistry(Builtins()...)
	var names []string
	for _, tool := range r.All() {
		names = append(names, tool.Name())
	}
	require.Equal(t, []string{
		"read", "write", "edit", "bash", "grep", "glob", "update_plan",
		"spawn_agent", "wait_agent", "send_input", "close_agent", "list_agents", "merge_agent",
	}, names)

	tool, ok := r.Get("edit")
	require.True(t, ok)
	require.Equal(t, "edit", tool.Name())
	_, ok = r.Get("Edit")
	require.False(t, ok)

	all := r.All()
	all[0] = nil
	require.NotNil(t, r.All()[0], "All must return a copy")

	requireFailure(t, r.Unknown("reed"), ErrUnknownTool, `there is no tool named "reed"; use one of: read, write, edit, bash, grep, glob, update_plan, spawn_agent, wait_agent, send_input, close_agent, list_agents, merge_agent`)
}

func TestRegistryRejectsDuplicates(t *testing.T) {
	require.PanicsWithValue(t, `tools.NewRegistry: two tools are named "read"`, func() {
		NewRegistry(ReadTool(), WriteTool(), ReadTool())
	})
}

func TestBuiltinsPostureAndDescription(t *testing.T) {
	want := map[string]Posture{
		"read": PostureRead, "write": PostureMutation, "edit": PostureMutation, "bash": PostureMutation,
		"grep": PostureRead, "glob": PostureRead, "update_plan": PostureRead,
		"spawn_agent": PostureMutation, "wait_agent": PostureRead, "send_input": PostureMutation,
		"close_agent": PostureMutation, "list_agents": PostureRead, "merge_agent": PostureMutation,
	}
	for _, tool := range Builtins() {
		require.Equal(t, want[tool.Name()], tool.Posture(), tool.Name())
		require.NotEmpty(t, tool.Description(), tool.Name())
	}
}

// With adds tools after a registry's own and leaves that registry as it
// was: two children sharing one set of tools each add their own.
func TestRegistryWith(t *testing.T) {
	base := NewRegistry(ReadTool(), GrepTool())
	a, b := base.With(WriteTool()), base.With(EditTool(), GlobTool())
	names := func(r *Registry) []string {
		var out []string
		for _, tool := range r.Tools() {
			out = append(out, tool.Name())
		}
		return out
	}
	require.Equal(t, []string{"read", "grep"}, names(base))
	require.Equal(t, []string{"read", "grep", "write"}, names(a))
	require.Equal(t, []string{"read", "grep", "edit", "glob"}, names(b))
	for _, c := range []struct {
		r    *Registry
		name string
		has  bool
	}{{a, "read", true}, {a, "write", true}, {a, "edit", false}, {b, "glob", true}, {b, "write", false}, {base, "write", false}} {
		tool, ok := c.r.Get(c.name)
		require.Equal(t, c.has, ok, c.name)
		if ok {
			require.Equal(t, c.name, tool.Name())
		}
	}
	require.Same(t, base, base.With(), "nothing to add: the registry itself")
	require.Equal(t, []string{"read", "grep", "write", "glob"}, names(a.With(GlobTool())), "a With of a With")
	require.PanicsWithValue(t, `tools.Registry.With: two tools are named "read"`, func() { base.With(ReadTool()) })
	require.PanicsWithValue(t, `tools.Registry.With: two tools are named "bash"`, func() { base.With(BashTool(), BashTool()) })
}
