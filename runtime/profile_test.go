package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// profileCatalog offers agents with profiles.
type profileCatalog map[string]AgentSpec

func (c profileCatalog) Agent(name string) (AgentSpec, bool) {
	s, ok := c[name]
	s.Name = name
	return s, ok
}

func (c profileCatalog) Names() []string {
	var names []string
	for n := range c {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

var profiles = profileCatalog{
	"default":  {},
	"explorer": {ReadOnly: true},
	"pm":       {Profile: AgentProfile{Tools: []string{"read", "grep", "glob", "write", "edit"}, WriteSet: []string{"TODO/**"}, Shell: ShellDeny}},
	"reviewer": {Profile: AgentProfile{Shell: ShellReadOnly}},
	"lister":   {Profile: AgentProfile{Commands: []string{"ls", "cat"}}},
	"quiet":    {Profile: AgentProfile{Tools: []string{}}},
	"notes":    {Profile: AgentProfile{WriteSet: []string{"notes/**"}}},
}

func profileAgents(string) (AgentCatalog, error) { return profiles, nil }

// offeredTo spawns agent on a task that does nothing and returns the
// names of the tools its model was offered.
func offeredTo(t *testing.T, f *managerFixture, p *offeredTools, agent, task string) []string {
	t.Helper()
	v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Agent: agent, Task: task})
	require.NoError(t, err)
	out := f.wait(t, v.ID)
	require.Equal(t, tools.SubagentCompleted, out.Agents[0].Status, "%+v", out.Agents[0].Error)
	return p.of(task)
}

func TestAChildIsOfferedOnlyWhatItsProfileAndPostureAllow(t *testing.T) {
	needLandlock(t)
	all := []string{"read", "write", "edit", "bash", "grep", "glob", "update_plan", "spawn_agent", "wait_agent", "send_input", "close_agent", "list_agents", "merge_agent", "run_workflow"}
	tests := []struct {
		agent    string
		maxDepth int
		want     []string
	}{
		{"default", 2, all},
		{"default", 1, []string{"read", "write", "edit", "bash", "grep", "glob", "update_plan"}},
		// A read-only child at the maximum depth: nothing that writes,
		// spawns or runs a workflow; bash runs in a read-only sandbox.
		{"explorer", 1, []string{"read", "bash", "grep", "glob", "update_plan"}},
		{"explorer", 2, []string{"read", "bash", "grep", "glob", "update_plan"}},
		{"pm", 2, []string{"read", "write", "edit", "grep", "glob"}},
		{"reviewer", 1, []string{"read", "write", "edit", "bash", "grep", "glob", "update_plan"}},
		{"quiet", 2, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s, max_depth %d", tt.agent, tt.maxDepth), func(t *testing.T) {
			p := &offeredTools{seen: map[string][]string{}}
			f := newManagerFixtureSandboxed(t, SubagentConfig{Agents: profileAgents, MaxDepth: tt.maxDepth}, p, nil)
			f.rt.tools = toolsWithWorkflows(f.rt.tools)
			require.Equal(t, tt.want, offeredTo(t, f, p, tt.agent, "look around"))
		})
	}
}

// toolsWithWorkflows adds run_workflow to a registry, as pixir wires it.
func toolsWithWorkflows(r *tools.Registry) *tools.Registry {
	return tools.NewRegistry(append(r.All(), workflows.RunWorkflowTool(workflows.Ports{}))...)
}

func TestWithoutLandlockConfinedCommandsAreNotOffered(t *testing.T) {
	p := &offeredTools{seen: map[string][]string{}}
	f := newManagerFixtureSandboxed(t, SubagentConfig{Agents: profileAgents}, p, landlockOff())
	require.NotContains(t, offeredTo(t, f, p, "explorer", "look"), "bash", "a read-only child's commands cannot be held read-only")
	require.NotContains(t, offeredTo(t, f, p, "reviewer", "review"), "bash", "nor a read-only shell's")
	require.NotContains(t, offeredTo(t, f, p, "lister", "list"), "bash", "nor a list of programs")
	require.Contains(t, offeredTo(t, f, p, "default", "work"), "bash", "a writer's commands run, checked after the fact")
}

// A pm-like agent (TODO/** only, no shell) cannot change src/ by any tool:
// write is refused, bash is not there to call.
func TestAProfileWriteSetHoldsASpawnedChild(t *testing.T) {
	f := newManagerFixtureSandboxed(t, SubagentConfig{Agents: profileAgents}, childProvider{}, landlockOff())
	root := f.parent.workspace.Root()
	for _, task := range []string{"write src/x.go", "bash echo x > src/x.go"} {
		v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Agent: "pm", Task: task, WorkspaceMode: WorkspaceShared})
		require.NoError(t, err)
		got := f.wait(t, v.ID).Agents[0]
		require.Equal(t, tools.SubagentCompleted, got.Status, "%+v", got.Error)
		results := childEvents[ToolResultData](t, f.childLog(v.ID), EventToolResult)
		require.Len(t, results, 1)
		require.False(t, results[0].Result.OK)
		if task[0] == 'w' {
			require.Equal(t, tools.ErrPermissionDenied, results[0].Result.Error.Kind)
			require.Contains(t, results[0].Result.Error.Message, "src/x.go is outside agent pm's write_set (TODO/**)")
		} else {
			require.Equal(t, tools.ErrUnknownTool, results[0].Result.Error.Kind)
		}
		require.NoFileExists(t, filepath.Join(root, "src", "x.go"))
	}
	v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Agent: "pm", Task: "write TODO/GAL-1.md", WorkspaceMode: WorkspaceShared})
	require.NoError(t, err)
	got := f.wait(t, v.ID).Agents[0]
	require.Equal(t, tools.SubagentCompleted, got.Status)
	require.Equal(t, []string{"TODO/GAL-1.md"}, got.Changes.Added, "a shared child with a write set has a change list")
	require.FileExists(t, filepath.Join(root, "TODO", "GAL-1.md"))
}

// A step combines its write set with its agent's: the narrower wins.
func TestAStepAndItsAgentBothHoldTheWrites(t *testing.T) {
	f := newManagerFixtureSandboxed(t, SubagentConfig{Agents: profileAgents}, childProvider{}, landlockOff())
	st := newSteps(f)
	v := st.start(t, workflows.StepRequest{Name: "notes", Agent: "pm", Task: "write TODO/a.md", WorkspaceMode: WorkspaceShared,
		WriteSet: []string{"docs/**"}, MayWrite: globMatcher("docs/**")})
	require.Equal(t, tools.SubagentCompleted, st.await(t, v.ID).Status)
	results := childEvents[ToolResultData](t, f.childLog(v.ID), EventToolResult)
	require.Contains(t, results[0].Result.Error.Message, "TODO/a.md is outside what this workflow step may write (the step's write_set docs/** and agent pm's write_set TODO/**)")
	require.NoFileExists(t, filepath.Join(f.parent.workspace.Root(), "TODO", "a.md"))
}

// A read-only shell: the commands of a child that may write with its
// file tools see a read-only workspace.
func TestAReadOnlyShellWritesNothing(t *testing.T) {
	needLandlock(t)
	f := newManagerFixtureSandboxed(t, SubagentConfig{Agents: profileAgents}, childProvider{}, nil)
	v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Agent: "reviewer", Task: "bash echo x > made.txt", WorkspaceMode: WorkspaceShared})
	require.NoError(t, err)
	require.Equal(t, tools.SubagentCompleted, f.wait(t, v.ID).Agents[0].Status)
	results := childEvents[ToolResultData](t, f.childLog(v.ID), EventToolResult)
	out := results[0].Result.Output.(map[string]any)
	require.Equal(t, "read-only", out["sandbox"])
	require.NotEqual(t, float64(0), out["exit_code"])
	require.NoFileExists(t, filepath.Join(f.parent.workspace.Root(), "made.txt"))
}

// A list of programs: only those run.
func TestACommandAllowlistRunsOnlyItsPrograms(t *testing.T) {
	needLandlock(t)
	f := newManagerFixtureSandboxed(t, SubagentConfig{Agents: profileAgents}, childProvider{}, nil)
	require.NoError(t, os.WriteFile(filepath.Join(f.parent.workspace.Root(), "a.txt"), []byte("alpha\n"), 0o644))
	for _, tt := range []struct {
		command string
		ok      bool
	}{{"ls && cat a.txt", true}, {"id", false}} {
		v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Agent: "lister", Task: "bash " + tt.command, WorkspaceMode: WorkspaceShared})
		require.NoError(t, err)
		require.Equal(t, tools.SubagentCompleted, f.wait(t, v.ID).Agents[0].Status)
		out := childEvents[ToolResultData](t, f.childLog(v.ID), EventToolResult)[0].Result.Output.(map[string]any)
		require.Equal(t, tt.ok, out["exit_code"] == float64(0), "%s: %v", tt.command, out)
		if !tt.ok {
			require.Contains(t, out["output"], "Permission denied")
			require.Contains(t, out["output"], "only the programs its agent lists in shell")
		}
	}
}

// A child's own children are held to what it may do: a profile cannot be
// escaped by spawning (where max_depth lets a child spawn at all).
func TestGrandchildrenInheritTheProfile(t *testing.T) {
	needLandlock(t)
	p := &offeredTools{seen: map[string][]string{}}
	f := newManagerFixtureSandboxed(t, SubagentConfig{Agents: profileAgents, MaxDepth: 2}, p, nil)
	root := f.parent.workspace.Root()
	narrow := profileCatalog{"keeper": {DenyNetwork: true, Profile: AgentProfile{
		Tools: []string{"read", "write", "bash", "spawn_agent", "wait_agent"}, WriteSet: []string{"notes/**"}, Shell: ShellReadOnly}}}
	for k, v := range profiles {
		narrow[k] = v
	}
	f.rt.subagents.cfg.Agents = func(string) (AgentCatalog, error) { return narrow, nil }

	v, err := f.b.Spawn(context.Background(), tools.SpawnRequest{Agent: "keeper", Task: "look", WorkspaceMode: WorkspaceShared})
	require.NoError(t, err)
	require.Equal(t, tools.SubagentCompleted, f.wait(t, v.ID).Agents[0].Status)
	keeper := f.session(t, v.ID)

	// keeper's child runs as "default", which narrows nothing itself.
	kb := binding{m: f.rt.subagents, parent: keeper}
	g, err := kb.Spawn(context.Background(), tools.SpawnRequest{Task: "write src/x.go", WorkspaceMode: WorkspaceShared})
	require.NoError(t, err)
	out, err := kb.Wait(context.Background(), tools.WaitRequest{IDs: []string{g.ID}, Timeout: noHorizon})
	require.NoError(t, err)
	require.Equal(t, tools.SubagentCompleted, out.Agents[0].Status)
	require.NoFileExists(t, filepath.Join(root, "src", "x.go"))
	f.rt.subagents.mu.Lock()
	grandLog := f.rt.subagents.byID[g.ID].childLog
	f.rt.subagents.mu.Unlock()
	results := childEvents[ToolResultData](t, grandLog, EventToolResult)
	require.Contains(t, results[0].Result.Error.Message, "src/x.go is outside what this child may write (what its parent may write (agent keeper's write_set notes/**))")

	require.Equal(t, []string{"read", "write", "bash"}, p.of("write src/x.go"), "only tools its parent was offered too; none to spawn at the last depth")
	grand := f.session(t, g.ID)
	pol := grand.commandPolicy()
	require.True(t, pol.DenyNetwork, "no network its parent did not have")
	require.Empty(t, pol.Writable, "a read-only shell, as its parent's")
}
