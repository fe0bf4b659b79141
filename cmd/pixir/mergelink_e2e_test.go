package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/workflows"
)

// Two writers held to a/**, through the binary: the first makes a/dir a
// link to the folder b of the workspace (a relative link that stays
// inside is merged as a link), the second replaces that link by a folder
// in its own snapshot and writes a/dir/authorized_keys there. Merging that
// file back would write it through the workspace's link, outside the write
// set (and, were the link to lead there, outside the workspace; such a
// link is not merged at all, see TestAMergeRefusesALinkThatLeadsOutside):
// it is a conflict, nothing is written through the link, and the step
// needs the orchestrator instead of passing for merged.
func TestAMergeNeverWritesThroughALinkInTheWorkspace(t *testing.T) {
	e := newRunEnv(t)
	outside := filepath.Join(e.ws, "b")
	require.NoError(t, os.MkdirAll(filepath.Join(e.ws, "a"), 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	e.file("a/a.txt", "a\n")
	script := e.file("script.toml", `
[[rule]]
match = '\A\[link\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "ln -s ../b a/dir" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"linked"}'
  [[rule.reply]]
  text = "linked"
[[rule]]
match = '\A\[write\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "rm a/dir && mkdir a/dir && echo pwned > a/dir/authorized_keys && echo ok > a/ok.txt" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"written"}'
  [[rule.reply]]
  text = "written"
`)
	wf := e.file("wf.json", `{"steps":[
		{"id":"link","task":"[link] link it","write_set":["a/**"]},
		{"id":"write","task":"[write] write it","write_set":["a/**"],"depends_on":["link"]}]}`)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
	require.Equal(t, exitPartial, code, "stdout: %s\nstderr: %s", stdout, stderr)

	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing is written through the link, outside the write set")
	out := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)
	require.Equal(t, "partial", out["status"])
	write := out["steps"].([]any)[1].(map[string]any)
	require.Equal(t, "needs_orchestrator", write["checkpoint_status"])
	merge := write["merge"].(map[string]any)
	require.Equal(t, "conflicted", merge["status"])
	require.Equal(t, map[string]any{"added": []any{"a/ok.txt"}}, merge["applied"], "what does not go through the link is merged")
	var kinds = map[string]string{}
	for _, c := range merge["conflicts"].([]any) {
		c := c.(map[string]any)
		kinds[c["path"].(string)] = c["kind"].(string)
	}
	require.Equal(t, "type", kinds["a/dir/authorized_keys"], "%v", merge["conflicts"])
	target, err := os.Readlink(filepath.Join(e.ws, "a", "dir"))
	require.NoError(t, err)
	require.Equal(t, "../b", target, "the workspace's link is as the first step left it")
	require.Equal(t, "ok\n", e.read("a/ok.txt"))
}

// A writer's link that leads outside the workspace is not merged, through
// the binary: the merge report names it with the reason, the rest of the
// step's work (a file, a relative link that stays inside) is merged, and
// the step needs the orchestrator, the run (with a reader beside it that
// is ready) partial. Before, the link was
// merged as a link (review30b): the work reached, through it, a file
// beyond the workspace.
func TestAMergeRefusesALinkThatLeadsOutside(t *testing.T) {
	e := newRunEnv(t)
	outside := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(e.ws, "a"), 0o755))
	e.file("a.txt", "a\n")
	script := e.file("script.toml", `
[[rule]]
match = '\A\[w\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "ln -s `+outside+` a/out && ln -s ../a.txt a/up && echo ok > a/ok.txt" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"linked"}'
  [[rule.reply]]
  text = "linked"
[[rule]]
match = '\A\[r\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"read"}'
  [[rule.reply]]
  text = "read"
`)
	wf := e.file("wf.json", `{"steps":[{"id":"w","task":"[w] link","write_set":["a/**"]},{"id":"r","task":"[r] read","agent":"explorer"}]}`)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
	require.Equal(t, exitPartial, code, "stdout: %s\nstderr: %s", stdout, stderr)

	out := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)
	require.Equal(t, "partial", out["status"])
	w := out["steps"].([]any)[0].(map[string]any)
	require.Equal(t, "needs_orchestrator", w["checkpoint_status"])
	merge := w["merge"].(map[string]any)
	require.Equal(t, "conflicted", merge["status"])
	require.Equal(t, map[string]any{"added": []any{"a/ok.txt", "a/up"}}, merge["applied"])
	conflicts := merge["conflicts"].([]any)
	require.Len(t, conflicts, 1, "%v", conflicts)
	c := conflicts[0].(map[string]any)
	require.Equal(t, "a/out", c["path"])
	require.Equal(t, "link_leads_outside", c["kind"])
	require.Contains(t, c["message"], "which leads outside the workspace")
	_, err := os.Lstat(filepath.Join(e.ws, "a", "out"))
	require.ErrorIs(t, err, os.ErrNotExist, "the link is not in the workspace")
	target, err := os.Readlink(filepath.Join(e.ws, "a", "up"))
	require.NoError(t, err)
	require.Equal(t, "../a.txt", target, "a link that stays inside is merged")
	require.Equal(t, "ok\n", e.read("a/ok.txt"))
}

// An isolated writer held to shared/**, where the workspace's shared is a
// link to a folder outside it (the snapshot keeps it a link): its commands
// wrote through the link into the real folder, overwriting a file outside
// the workspace, and the run said completed, merged (0 files). The folder
// reached through the link is not opened to its commands.
func TestAnIsolatedWritersCommandsNeverWriteThroughALink(t *testing.T) {
	needLandlock(t)
	e := newRunEnv(t)
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "data.txt"), []byte("precious\n"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(e.ws, "shared")))
	script := e.file("script.toml", `
[[rule]]
match = '\A\[w\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "echo overwritten > shared/data.txt; echo new > shared/new.txt; mkdir shared/sub" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '{"status":"checkpoint_ready","summary":"written"}'
  [[rule.reply]]
  text = "written"
`)
	wf := e.file("wf.json", `{"steps":[{"id":"w","task":"[w] write","write_set":["shared/**"]}]}`)
	stdout, stderr, code := e.pixir("run", "--script", script, "--workflow", wf, "--json")
	require.NotEqual(t, exitError, code, "stdout: %s\nstderr: %s", stdout, stderr)

	b, err := os.ReadFile(filepath.Join(outside, "data.txt"))
	require.NoError(t, err)
	require.Equal(t, "precious\n", string(b), "the file outside the workspace is as it was")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was added outside the workspace")
	out := validEnvelope(t, stdout, "run_workflow_output.json")["output"].(map[string]any)
	w := out["steps"].([]any)[0].(map[string]any)
	step := workflows.StepOutcome{StepID: "w", AgentID: w["agent_id"].(string), ChildSessionID: w["child_session_id"].(string)}
	bash := bashOutputOf(t, toolResultsOf(t, childLog(t, e.ws, step))[0])
	require.Contains(t, bash.Output, "Permission denied", "its commands may write nothing through the link")
}

// A writer's commands never write through a link made after its write
// roots were found: a folder a command replaces by a link to a folder
// outside the workspace (its own root, or one the whole workspace's
// pattern covers), and a link already in the workspace that a pattern
// over the whole workspace reaches. The sandbox opened every root again by
// its path before each command, following the link (found by review30b).
func TestAWritersCommandsNeverWriteThroughALinkMadeLater(t *testing.T) {
	needLandlock(t)
	for _, tc := range []struct {
		name, mode, writeSet string
		link                 string // a link to the outside folder made before the run, or ""
		commands             []string
	}{
		{name: "isolated, its root made a link", mode: "isolated", writeSet: `["**/*.go","docs/**"]`,
			commands: []string{"rm -r docs && ln -s OUTSIDE docs", "echo overwritten > docs/data.txt; echo new > docs/new.txt"}},
		{name: "shared, a nested root made a link", mode: "shared", writeSet: `["src/**","src/shared/**"]`,
			commands: []string{"rm -r src/shared && ln -s OUTSIDE src/shared", "echo overwritten > src/shared/data.txt; echo new > src/shared/new.txt"}},
		{name: "shared, a link in the workspace", mode: "shared", writeSet: `["**/*.txt"]`, link: "shared",
			commands: []string{"echo overwritten > shared/data.txt; echo new > shared/new.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t)
			outside := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(outside, "data.txt"), []byte("precious\n"), 0o644))
			require.NoError(t, os.MkdirAll(filepath.Join(e.ws, "src", "shared"), 0o755))
			if tc.link != "" {
				require.NoError(t, os.Symlink(outside, filepath.Join(e.ws, tc.link)))
			}
			var script strings.Builder
			script.WriteString("[[rule]]\nmatch = '\\A\\[w\\]'\n")
			for _, c := range tc.commands {
				fmt.Fprintf(&script, "  [[rule.reply]]\n  [[rule.reply.tool_calls]]\n  name = \"bash\"\n  arguments = { command = %q }\n",
					strings.ReplaceAll(c, "OUTSIDE", outside))
			}
			script.WriteString("  [[rule.reply]]\n  [[rule.reply.tool_calls]]\n  name = \"report_checkpoint\"\n" +
				"  arguments_json = '{\"status\":\"checkpoint_ready\",\"summary\":\"written\"}'\n  [[rule.reply]]\n  text = \"written\"\n")
			wf := e.file("wf.json", `{"steps":[{"id":"w","task":"[w] write","workspace_mode":"`+tc.mode+`","write_set":`+tc.writeSet+`}]}`)
			stdout, stderr, code := e.pixir("run", "--script", e.file("script.toml", script.String()), "--workflow", wf, "--json")
			if code == exitError {
				// A run that failed, not an error: the isolated writer's
				// link to the outside folder is not merged
				// (link_leads_outside), and its one step needs the
				// orchestrator.
				validEnvelope(t, stdout, "run_workflow_output.json")
				require.Contains(t, stdout, "link_leads_outside", "stderr: %s", stderr)
			}

			b, err := os.ReadFile(filepath.Join(outside, "data.txt"))
			require.NoError(t, err)
			require.Equal(t, "precious\n", string(b), "the file outside the workspace is as it was")
			entries, err := os.ReadDir(outside)
			require.NoError(t, err)
			require.Len(t, entries, 1, "nothing was added outside the workspace")
		})
	}
}
