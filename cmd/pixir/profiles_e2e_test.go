package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/sandbox"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/workflows"
)

// These tests drive write-set checks and agent profiles (issue 15) through
// the built binary: on the scripted provider and testdata/profiles.toml,
// and against a fake OpenAI server that shows what each child is offered.

func profilesEnv(t *testing.T, files map[string]string) *env {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "profiles.toml"))
	require.NoError(t, err)
	e := newEnv(t, string(b))
	for name, content := range files {
		p := filepath.Join(e.ws, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return e
}

// workflowPrompt runs one prompt in a new session and returns the workflow's
// outcome.
func workflowPrompt(t *testing.T, e *env, text string) workflows.Outcome {
	t.Helper()
	a := e.start()
	a.initialize()
	s := &wfSession{t: t, e: e, a: a, sid: a.newSession(), id: 2}
	s.prompt(text)
	return outcomeOf(t, onlyResult(t, s.log()))
}

// A writer with write_set docs/** that writes src/x through bash, where
// the kernel cannot stop it (Landlock turned off: an older kernel), fails
// with write_set_violation, and src/x is not merged into the workspace;
// its dependent does not start.
func TestAWriterThatEscapesItsWriteSetFails(t *testing.T) {
	e := profilesEnv(t, map[string]string{"docs/README.md": "docs\n"})
	e.writeConfig("[sandbox]\nlandlock = false\n")
	out := workflowPrompt(t, e, "prof escape isolated")

	require.Equal(t, workflows.StatusFailed, out.Status)
	docs := stepOf(t, out, "docs")
	require.Equal(t, workflows.CheckpointFailed, docs.CheckpointStatus)
	require.Equal(t, tools.SubagentFailed, docs.SubagentStatus)
	require.NotNil(t, docs.WriteSetViolation)
	require.Equal(t, tools.WriteSetViolationCode, docs.WriteSetViolation.Code)
	require.Equal(t, []string{"src/x"}, docs.WriteSetViolation.Paths)
	require.Equal(t, [][]string{{"docs/**"}}, docs.WriteSetViolation.WriteSets)
	require.Equal(t, tools.ErrPermissionDenied, docs.Error.Kind)
	require.Contains(t, docs.Error.Message, "write_set_violation: the child changed src/x, outside docs/**; those changes stay in its snapshot and are never merged")
	require.Equal(t, workflows.CheckpointHeld, stepOf(t, out, "after").CheckpointStatus, "its dependent never sees the escape")

	require.NoFileExists(t, filepath.Join(e.ws, "src", "x"), "not merged")
	require.NoFileExists(t, filepath.Join(e.ws, "docs", "guide.md"), "nothing of a failed isolated step reaches the workspace")
	require.FileExists(t, filepath.Join(docs.Workspace, "src", "x"), "the escape stays in the snapshot, as evidence")
}

// The same step in the shared workspace, where the kernel holds its
// commands: src/x is refused by Landlock, nothing escapes, and the step's
// change list comes from stamping its write roots.
func TestASharedWriterIsHeldByTheKernel(t *testing.T) {
	needLandlock(t)
	e := profilesEnv(t, map[string]string{"docs/README.md": "docs\n"})
	out := workflowPrompt(t, e, "prof escape shared")
	docs := stepOf(t, out, "docs")
	require.Equal(t, workflows.CheckpointReady, docs.CheckpointStatus, "%+v", docs.Error)
	require.Nil(t, docs.WriteSetViolation)
	require.Equal(t, &tools.FileChanges{Added: []string{"docs/guide.md"}, Changed: []string{}, Deleted: []string{}}, docs.Changes)
	require.NoFileExists(t, filepath.Join(e.ws, "src", "x"))
	bash := bashOutputOf(t, toolResultsOf(t, childLog(t, e.ws, docs))[0])
	require.Contains(t, bash.Output, "Permission denied")
}

// A pattern Landlock cannot express (**/*_test.go is the whole workspace
// to it): the check after the fact fails the step with the path it should
// not have changed. In the shared workspace the change is reported, not
// reverted.
func TestAPatternTheKernelCannotHoldIsCheckedAfterTheFact(t *testing.T) {
	needLandlock(t)
	e := profilesEnv(t, map[string]string{"src/a.go": "package a\n"})
	out := workflowPrompt(t, e, "prof pattern")
	require.Equal(t, workflows.StatusFailed, out.Status)
	st := stepOf(t, out, "tests")
	require.Equal(t, workflows.CheckpointFailed, st.CheckpointStatus)
	require.Equal(t, []string{"src/a.go"}, st.WriteSetViolation.Paths)
	require.Equal(t, "shared", st.WriteSetViolation.Workspace)
	require.Equal(t, []string{"src/a_test.go"}, st.Changes.Added)
	require.Equal(t, []string{"src/a.go"}, st.Changes.Changed)
	require.Contains(t, st.Error.Message, "not reverted")
	b, err := os.ReadFile(filepath.Join(e.ws, "src", "a.go"))
	require.NoError(t, err)
	require.Equal(t, "package a // changed\n", string(b), "reported, not reverted")
}

const pmAgent = `name = "pm"
description = "Reads and updates TODO/ issue files."
developer_instructions = "You keep the issue files under TODO/."
tools = ["read", "grep", "glob", "write", "edit"]
write_set = ["TODO/**"]
shell = "deny"
`

// A pm-like profile (TODO/** only, no shell) cannot change src/ by any
// tool: write and edit are refused, bash is not there.
func TestAPMProfileCannotChangeSourceByAnyTool(t *testing.T) {
	e := profilesEnv(t, map[string]string{"src/a.go": "package a\n", ".pixir/agents/pm.toml": pmAgent})
	e.writeConfig("[sandbox]\nlandlock = false\n") // no kernel help: the profile alone holds
	before := treeOf(t, filepath.Join(e.ws, "src"))
	out := workflowPrompt(t, e, "prof pm")
	pm := stepOf(t, out, "pm")
	require.Equal(t, workflows.CheckpointReady, pm.CheckpointStatus, "%+v", pm.Error)

	results := toolResultsOf(t, childLog(t, e.ws, pm))
	require.Len(t, results, 4)
	for _, r := range results[:2] {
		require.Equal(t, tools.ErrPermissionDenied, r.Result.Error.Kind, r.Name)
		require.Contains(t, r.Result.Error.Message, "is outside agent pm's write_set (TODO/**)")
	}
	require.Equal(t, tools.ErrUnknownTool, results[2].Result.Error.Kind, "bash is not offered")
	require.True(t, results[3].Result.OK, "%+v", results[3].Result.Error)
	require.Equal(t, before, treeOf(t, filepath.Join(e.ws, "src")), "src/ is unchanged")
	require.FileExists(t, filepath.Join(e.ws, "TODO", "GAL-1.md"))
	require.Equal(t, []string{"TODO/GAL-1.md"}, pm.Changes.Added)
}

// offeredRequest is what a fake model server reads of a request: who is
// asking (its first user message) and the tools it offers.
type offeredRequest struct {
	Messages []struct {
		Role    string  `json:"role"`
		Content *string `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (r offeredRequest) firstUser() string {
	for _, m := range r.Messages {
		if m.Role == "user" && m.Content != nil {
			return *m.Content
		}
	}
	return ""
}

func (r offeredRequest) tools() []string {
	names := []string{}
	for _, t := range r.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

// A child's tool list, as the model server receives it, matches its
// profile and posture: pm gets its five tools, a read-only explorer at the
// maximum depth nothing that writes, spawns or runs a workflow.
func TestAChildsToolListMatchesItsProfile(t *testing.T) {
	var mu sync.Mutex
	offered := map[string][]string{}
	parentCalls := 0
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req offeredRequest
		require.NoError(t, json.Unmarshal(body, &req))
		who := req.firstUser()
		mu.Lock()
		offered[who] = req.tools()
		n := 0
		if who == "get the helpers to work" {
			parentCalls++
			n = parentCalls
		}
		mu.Unlock()
		switch n {
		case 0: // a child
			oaAnswer("Done.", 10, 2)(w, r, body)
		case 1:
			sseReply(0, concat(
				oaToolCall(0, "call_pm", "spawn_agent", `{"agent":"pm","task":"[pm] mark the issue","workspace_mode":"shared"}`),
				oaToolCall(1, "call_ex", "spawn_agent", `{"agent":"explorer","task":"[explorer] look around"}`),
				[]string{oaChunk(`{}`, "tool_calls"), oaDone})...)(w, r, body)
		case 2:
			sseReply(0, concat(oaToolCall(0, "call_wait", "wait_agent", `{"timeout_ms":60000}`),
				[]string{oaChunk(`{}`, "tool_calls"), oaDone})...)(w, r, body)
		default:
			oaAnswer("All done.", 10, 2)(w, r, body)
		}
	})
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	r := newRunEnv(t)
	t.Setenv("HOME", filepath.Join(r.home, "user"))
	require.NoError(t, os.MkdirAll(filepath.Join(r.ws, ".pixir", "agents"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(r.ws, ".pixir", "agents", "pm.toml"), []byte(pmAgent), 0o644))

	stdout, stderr, code := r.pixir("run", "--json", "get the helpers to work", "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "gpt-test")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)

	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, offered["get the helpers to work"], "spawn_agent")
	require.Contains(t, offered["get the helpers to work"], "run_workflow")
	require.Equal(t, []string{"read", "write", "edit", "grep", "glob"}, offered["[pm] mark the issue"])
	explorer := []string{"read", "grep", "glob", "update_plan"}
	if (*sandbox.Sandbox)(nil).Support().Landlock {
		explorer = []string{"read", "bash", "grep", "glob", "update_plan"} // its commands run read-only
	}
	require.Equal(t, explorer, offered["[explorer] look around"])
	for _, name := range []string{"write", "edit", "spawn_agent", "run_workflow"} {
		require.NotContains(t, offered["[explorer] look around"], name)
	}
	require.False(t, strings.Contains(stdout, `"ok":false`), stdout)
}

// A writer step whose write_set meets none of its agent's (src/** for an
// agent held to TODO/**) could change no file: a path must match both. It
// was run, every write refused, and the run could end completed with
// nothing written; it is an invalid workflow now, at the step's line,
// before anything starts. A writer without a write_set of its own, and a
// fan-out's binding, meet the agent's (found by qa32w).
func TestAWriterStepOutsideItsAgentsWriteSetIsRefusedBeforeItStarts(t *testing.T) {
	e := newEnv(t, "")
	files := map[string]string{
		".pixir/agents/tracker.toml": "name = \"tracker\"\ndescription = \"TODO files\"\ndeveloper_instructions = \"x\"\nwrite_set = [\"TODO/**\"]\n",
		"bad.yaml":                   "name: bad\nsteps:\n  - id: ok\n    agent: tracker\n    task: t\n    permission_mode: writer\n  - id: src\n    agent: tracker\n    task: t\n    write_set: [\"src/**\"]\n",
		"good.yaml":                  "name: good\nsteps:\n  - id: ok\n    agent: tracker\n    task: t\n    permission_mode: writer\n  - id: todo\n    agent: tracker\n    task: t\n    write_set: [\"TODO/a.md\"]\n",
	}
	for name, content := range files {
		p := filepath.Join(e.ws, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	stdout, stderr, code := e.cli("run", "--workflow", "bad.yaml")
	require.Equal(t, 64, code, stdout+stderr)
	require.Contains(t, stderr, `bad.yaml:10:5: steps[1] "src": write_set ["src/**"] meets none of agent "tracker"'s write_set ["TODO/**"]`)
	require.NotContains(t, stderr, `"ok"`)
	_, err := os.Stat(filepath.Join(e.ws, ".pixir", "sessions"))
	require.True(t, os.IsNotExist(err), "nothing started")

	stdout, stderr, code = e.cli("run", "--workflow", "good.yaml", "--dry-run")
	require.Equal(t, 0, code, stdout+stderr)

	// A step that names its MCP servers (even none) is held to its agent's
	// write_set too: that check once ended the step's checks before this one.
	p := filepath.Join(e.ws, "bad-mcp.yaml")
	require.NoError(t, os.WriteFile(p, []byte("name: bad-mcp\nsteps:\n  - id: src\n    agent: tracker\n    task: t\n    write_set: [\"src/**\"]\n    allowed_mcp_servers: []\n"), 0o644))
	stdout, stderr, code = e.cli("run", "--workflow", "bad-mcp.yaml", "--dry-run")
	require.Equal(t, 64, code, stdout+stderr)
	require.Contains(t, stderr, `steps[0] "src": write_set ["src/**"] meets none of agent "tracker"'s write_set ["TODO/**"]`)
}
