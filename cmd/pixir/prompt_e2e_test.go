package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The system prompt, as the model server receives it.

func TestTheSystemPromptReachesTheModel(t *testing.T) {
	srv, sent := agentsServer(t, "reviewer", "gpt-review")
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	r := newRunEnv(t)
	t.Setenv("HOME", filepath.Join(r.home, "user"))
	repo := r.ws
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".git", "HEAD"), []byte("ref: refs/heads/release-2\n"), 0o644))
	r.file("AGENTS.md", "Run `go test ./...` before calling a change done.\n")
	require.NoError(t, os.MkdirAll(r.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(r.home, "AGENTS.md"), []byte("The user prefers short answers.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(r.home, "config.toml"), []byte(
		"provider = \"openai\"\nbase_url = \""+srv.URL+"/v1\"\nmodel = \"gpt-main\"\nmodels = [\"gpt-main\", \"gpt-review\"]\n"), 0o644))
	writeAgentFile(t, r.ws, "reviewer", "model = \"gpt-review\"\n") // a writer: it works on a snapshot

	stdout, stderr, code := r.pixir("run", "--json", "have the reviewer look")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)

	var parent, child string
	for _, req := range sent() {
		if req.Model == "gpt-review" {
			child = req.system()
		} else if parent == "" {
			parent = req.system()
		}
	}
	// The session: guidance, the environment, the user's and the project's
	// instructions, most general first.
	require.True(t, strings.HasPrefix(parent, "You are Pixir, a coding agent."), parent)
	for _, want := range []string{
		"# Delegating", "`run_workflow`", "`report_checkpoint`",
		"- Workspace: " + r.ws + " ", "- Git: a repository at " + r.ws + ", on branch release-2\n", "- Today: ",
		"## " + filepath.Join(r.home, "AGENTS.md") + "\n\nThe user prefers short answers.",
		"## " + filepath.Join(r.ws, "AGENTS.md") + "\n\nRun `go test ./...` before calling a change done.",
	} {
		require.Contains(t, parent, want)
	}
	require.Less(t, strings.Index(parent, "The user prefers"), strings.Index(parent, "Run `go test"))
	require.NotContains(t, parent, "# You are a Subagent")

	// The child: the same, told what it is, then its agent's instructions;
	// the project's AGENTS.md once, though its snapshot holds a copy.
	require.Contains(t, child, "# You are a Subagent")
	require.Contains(t, child, `You run as the "reviewer" agent.`)
	require.Contains(t, child, "cannot spawn Subagents")
	require.True(t, strings.HasSuffix(child, "# Your agent's instructions\n\nYou are the reviewer agent.\n"), child)
	require.Equal(t, 1, strings.Count(child, "Run `go test ./...`"))
	require.Contains(t, child, "- This workspace is a snapshot of "+r.ws)
	require.Contains(t, child, "your snapshot has no .git of its own")

	// pixir prompt shows exactly what the session was sent.
	shown, stderr, code := r.pixir("prompt")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, parent, shown)
	require.Contains(t, stderr, "user instructions: "+filepath.Join(r.home, "AGENTS.md"))
	require.Contains(t, stderr, "project instructions: "+filepath.Join(r.ws, "AGENTS.md"))
	shown, stderr, code = r.pixir("prompt", "--agent", "reviewer", "--json")
	require.Equal(t, exitOK, code, stderr)
	var report struct {
		Agent string `json:"agent"`
		Text  string `json:"text"`
		Repo  struct {
			Root, Branch string
		} `json:"repo"`
		Sources []struct{ Kind, Path string } `json:"sources"`
	}
	require.NoError(t, json.Unmarshal([]byte(shown), &report))
	require.Equal(t, "reviewer", report.Agent)
	require.Equal(t, "release-2", report.Repo.Branch)
	require.Contains(t, report.Text, "# Your agent's instructions\n\nYou are the reviewer agent.")
	require.Len(t, report.Sources, 2)
}

func TestTheGuidanceIsReplacedFromConfig(t *testing.T) {
	srv := newFakeModel(t, oaAnswer("ok", 10, 1))
	providerEnv(t, "OPENAI_API_KEY", "sk-e2e")
	r := newRunEnv(t)
	require.NoError(t, os.MkdirAll(r.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(r.home, "guide.md"), []byte("You are a terse assistant for this team.\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(r.home, "config.toml"), []byte(
		"provider = \"openai\"\nbase_url = \""+srv.URL+"/v1\"\nmodel = \"m\"\n[prompt]\nfile = \"guide.md\"\nmax_instructions = \"1KiB\"\n"), 0o644))
	r.file("AGENTS.md", strings.Repeat("A long house rule.\n", 200))
	stdout, stderr, code := r.pixir("run", "--json", "hi")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	var req sentRequest
	require.NoError(t, json.Unmarshal(srv.received()[0].Body, &req))
	system := req.system()
	require.True(t, strings.HasPrefix(system, "You are a terse assistant for this team.\n\n# Environment\n"), system)
	require.NotContains(t, system, "You are Pixir")
	require.Contains(t, system, "limited to 1024 bytes (max_instructions in config.toml)]")
	// Bounded: the guidance and the instructions as configured, beside the
	// catalogue of agents and templates (bounded on its own).
	before, rest, _ := strings.Cut(system, "\n# Agents and workflow templates\n")
	_, after, _ := strings.Cut(rest, "\n# ")
	require.Less(t, len(before)+len(after), 2<<10)

	// A file that is not there stops pixir with a message naming the key.
	require.NoError(t, os.WriteFile(filepath.Join(r.home, "config.toml"), []byte(
		"provider = \"openai\"\nbase_url = \""+srv.URL+"/v1\"\nmodel = \"m\"\n[prompt]\nfile = \"nowhere.md\"\n"), 0o644))
	_, stderr, code = r.pixir("prompt")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "[prompt] file: open "+filepath.Join(r.home, "nowhere.md"))
}
