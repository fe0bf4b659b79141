package prompt

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var day = time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC)

// tree writes files (path → content) under a new folder and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		path := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return root
}

// golden compares got with testdata/name, the folder root written $ROOT and
// the platform $PLATFORM so that the file holds on any machine.
func golden(t *testing.T, name, root, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, root, "$ROOT")
	got = strings.ReplaceAll(got, runtime.GOOS+"/"+runtime.GOARCH, "$PLATFORM")
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to write it")
	require.Equal(t, string(want), got)
}

func TestAUserSessionsPrompt(t *testing.T) {
	root := tree(t, map[string]string{
		"home/AGENTS.md":           "Answer in British English.\n",
		"repo/.git/HEAD":           "ref: refs/heads/feature/login\n",
		"repo/AGENTS.md":           "Run `make check` before you say a change is done.\n",
		"repo/CLAUDE.md":           "See AGENTS.md.\n",
		"repo/services/CLAUDE.md":  "Services talk JSON over HTTP only.\n",
		"repo/services/api/x.go":   "package api\n",
		"repo/services/api/AGENTS": "not an instruction file\n",
	})
	ws := filepath.Join(root, "repo", "services", "api")
	p := Build(Input{Workspace: ws, Home: filepath.Join(root, "home"), Now: day})
	golden(t, "session.txt", root, p.Text)
	require.Equal(t, &Repo{Root: filepath.Join(root, "repo"), Branch: "feature/login"}, p.Repo)
	require.Equal(t, []Source{
		{Kind: "user instructions", Path: filepath.Join(root, "home", "AGENTS.md"), Bytes: 26},
		{Kind: "project instructions", Path: filepath.Join(root, "repo", "AGENTS.md"), Bytes: 49},
		{Kind: "project instructions", Path: filepath.Join(root, "repo", "services", "CLAUDE.md"), Bytes: 34},
	}, p.Sources, "AGENTS.md over CLAUDE.md; CLAUDE.md where it is alone; most general first")
}

func TestAChildsPrompt(t *testing.T) {
	root := tree(t, map[string]string{
		"repo/.git":                              "gitdir: ../gitdirs/wt\n", // a worktree
		"gitdirs/wt/HEAD":                        "4f2a9c81d0e5b7a3c6f1e2d4b5a6c7d8e9f0a1b2\n",
		"repo/AGENTS.md":                         "Tests live beside the code.\n",
		"repo/.pixir/subagents/sa-1/w/AGENTS.md": "Tests live beside the code.\n", // the snapshot's copy: not read twice
	})
	project := filepath.Join(root, "repo")
	p := Build(Input{Workspace: filepath.Join(project, ".pixir", "subagents", "sa-1", "w"), Project: project, Now: day,
		Child: &Child{Agent: "reviewer", DeveloperInstructions: "Review the diff; report problems as path:line.", Depth: 1, MaxDepth: 1, ReadOnly: true}})
	golden(t, "child.txt", root, p.Text)
	require.Equal(t, "detached at 4f2a9c8", p.Repo.Branch)
	require.Len(t, p.Sources, 1)
}

func TestOutsideARepositoryOnlyTheWorkspacesFileIsRead(t *testing.T) {
	root := tree(t, map[string]string{
		"AGENTS.md":    "a parent folder's file\n",
		"ws/AGENTS.md": "the workspace's file\n",
	})
	p := Build(Input{Workspace: filepath.Join(root, "ws"), Now: day})
	require.Nil(t, p.Repo)
	require.Contains(t, p.Text, "- Git: not a git repository\n")
	require.Contains(t, p.Text, "the workspace's file")
	require.NotContains(t, p.Text, "a parent folder's file")
}

func TestInstructionFilesAreBounded(t *testing.T) {
	root := tree(t, map[string]string{
		"repo/.git/HEAD":   "ref: refs/heads/main\n",
		"repo/AGENTS.md":   strings.Repeat("Rule one is long.\n", 100), // 1800 bytes
		"repo/a/AGENTS.md": "Never seen: the limit was reached.\n",
	})
	p := Build(Input{Workspace: filepath.Join(root, "repo", "a"), Now: day, Options: Options{MaxInstructions: 1000}})
	require.Contains(t, p.Text, "[cut: 810 more bytes in "+filepath.Join(root, "repo", "AGENTS.md")+"; the instruction files are limited to 1000 bytes (max_instructions in config.toml)]")
	require.Contains(t, p.Text, "[left out: the instruction files reached their limit of 1000 bytes (max_instructions in config.toml)]")
	require.NotContains(t, p.Text, "Never seen")
	require.Equal(t, 989, p.Sources[0].Bytes, "cut at a line end")
	require.True(t, p.Sources[0].Truncated)
	require.True(t, p.Sources[1].Truncated)
	require.Zero(t, p.Sources[1].Bytes)
}

func TestTheGuidanceCanBeReplaced(t *testing.T) {
	ws := t.TempDir()
	p := Build(Input{Workspace: ws, Now: day, Options: Options{Base: "You are a careful assistant.\n", BaseSource: "/etc/pixir/prompt.md"}})
	require.True(t, strings.HasPrefix(p.Text, "You are a careful assistant.\n\n# Environment\n"), p.Text)
	require.NotContains(t, p.Text, "You are Pixir")
	require.Equal(t, []Source{{Kind: "guidance", Path: "/etc/pixir/prompt.md", Bytes: 28}}, p.Sources)

	p = Build(Input{Workspace: ws, Now: day, Options: Options{Base: strings.Repeat("é", MaxBase)}})
	require.Less(t, len(p.Text), MaxBase+1000, "a replacement is bounded too")
	require.True(t, p.Sources[0].Truncated)
}

func TestTheCatalogueHasItsPlaceAndBound(t *testing.T) {
	ws := t.TempDir()
	p := Build(Input{Workspace: ws, Now: day, Catalogue: "- agent reviewer: reviews a diff\n" + strings.Repeat("- template x: y\n", 2000)})
	env := strings.Index(p.Text, "# Environment")
	cat := strings.Index(p.Text, "# Agents and workflow templates")
	require.Greater(t, cat, env, "after the environment")
	require.Less(t, len(p.Text)-cat, MaxCatalogue+100)
	require.NotContains(t, Build(Input{Workspace: ws, Now: day}).Text, "# Agents and workflow templates", "no heading while nothing fills it")
}

func TestAChildThatMaySpawnIsNotToldOtherwise(t *testing.T) {
	p := Build(Input{Workspace: t.TempDir(), Now: day, Child: &Child{Agent: "default", Depth: 1, MaxDepth: 2}})
	require.Contains(t, p.Text, "# You are a Subagent")
	require.NotContains(t, p.Text, "cannot spawn")
	require.NotContains(t, p.Text, "read_only")
	require.NotContains(t, p.Text, "# Your agent's instructions")
}

func TestTheBuiltInPromptIsSmall(t *testing.T) {
	p := Build(Input{Workspace: t.TempDir(), Now: day, Child: &Child{Depth: 1, MaxDepth: 1}})
	require.Less(t, len(p.Text), 6<<10, "every model call carries it")
}
