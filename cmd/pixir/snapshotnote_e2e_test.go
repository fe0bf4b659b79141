package main

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// pixir run with a parent that spawns an isolated worker, waits for it and
// answers without merging it: the child's file is in its snapshot and
// nowhere else, and its end's line on stderr says so, with where (it said
// "finished, 53 tokens", and the workspace had no trace of the file the
// model said was written).
func TestRunSaysWhereAnUnmergedChildsChangesAre(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = '\Achild:'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "write"
  arguments = { path = "new.txt", content = "from the child\n" }
  [[rule.reply]]
  text = "wrote new.txt"
[[rule]]
match = 'go'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "spawn_agent"
  arguments = { task = "child: write new.txt", agent = "worker" }
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "wait_agent"
  arguments_json = '{"ids":[]}'
  [[rule.reply]]
  text = "The child wrote new.txt."
`)
	stdout, stderr, code := e.pixir("run", "--script", script, "go")
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.NoFileExists(t, filepath.Join(e.ws, "new.txt"), "not merged")
	m := regexp.MustCompile(`↳ subagent (sa-[0-9a-f]+) \(worker\): finished, [0-9,]+ tokens; 1 file changed in its snapshot (\S+), not in the workspace until merge_agent merges it\n`).FindStringSubmatch(stderr)
	require.NotNil(t, m, stderr)
	require.Equal(t, filepath.Join(e.ws, ".pixir", "subagents", m[1], "workspace"), m[2])
	require.FileExists(t, filepath.Join(m[2], "new.txt"))
}
