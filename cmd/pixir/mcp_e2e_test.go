package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// MCP servers configured in config.toml, end to end through the built
// binary: this test binary, run again with PIXIR_TEST_MCP_SERVER=stdio,
// is the server (the official SDK's, over stdio).

// serveTestMCP is this test binary as an MCP server with one tool, ping.
// It writes its pid to $PIXIR_TEST_MCP_PIDFILE when that is set, and
// exits at a ping, with a line on stderr, when $PIXIR_TEST_MCP_DIE is set.
func serveTestMCP() {
	if f := os.Getenv("PIXIR_TEST_MCP_PIDFILE"); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "gadgets", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "ping", Description: "Answers pong.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			if os.Getenv("PIXIR_TEST_MCP_DIE") != "" {
				fmt.Fprintln(os.Stderr, "gadgets: out of cheese, giving up")
				os.Exit(3)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong " + args.Text}}}, nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "gadgets:", err)
		os.Exit(1)
	}
}

// mcpConfig writes a config.toml with the gadgets server (and any extra
// TOML) into home.
func mcpConfig(t *testing.T, home, pidFile, extra string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(home, 0o755))
	toml := fmt.Sprintf(`
[mcp_servers.gadgets]
command = %q
args = ["-test.run=^$"]
env = { PIXIR_TEST_MCP_SERVER = "stdio", PIXIR_TEST_MCP_PIDFILE = %q }
`, exe, pidFile) + extra
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(toml), 0o644))
}

func TestToolsListsTheConfiguredMCPServers(t *testing.T) {
	e := newRunEnv(t)
	mcpConfig(t, e.home, "", "")
	stdout, stderr, code := e.pixir("tools", "--mcp", "--json")
	require.Equal(t, exitOK, code, stderr)
	var catalogue []catalogueEntry
	require.NoError(t, json.Unmarshal([]byte(stdout), &catalogue))
	last := catalogue[len(catalogue)-1]
	require.Equal(t, "mcp__gadgets__ping", last.Name)
	require.Equal(t, "gadgets", last.Server)
	require.Equal(t, "read", string(last.Posture))
	require.Contains(t, last.Description, "Answers pong.")
	require.JSONEq(t, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, string(last.Parameters))

	// A server that does not start is said, and the list is incomplete.
	mcpConfig(t, e.home, "", "[mcp_servers.broken]\ncommand = \"/nonexistent/server\"\n")
	stdout, stderr, code = e.pixir("tools", "--mcp")
	require.Equal(t, exitError, code)
	require.Contains(t, stdout, "mcp__gadgets__ping")
	require.Contains(t, stderr, `pixir: MCP server "broken" did not start: `)
	require.Equal(t, 1, strings.Count(stderr, "did not start"), "said once: %s", stderr)

	// Without --mcp the catalogue needs no configuration at all.
	stdout, _, code = e.pixir("tools")
	require.Equal(t, exitOK, code)
	require.NotContains(t, stdout, "mcp__")
}

func TestRunUsesTheConfiguredMCPServers(t *testing.T) {
	e := newRunEnv(t)
	mcpConfig(t, e.home, "", "")
	script := e.file("script.toml", `
[[rule]]
match = "ping"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__gadgets__ping"
  arguments = { text = "headless" }
  [[rule.reply]]
  text = "The server said: {{output .ToolResult}}"
`)
	stdout, stderr, code := e.pixir("run", "--script", script, "ping")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "The server said: pong headless")
}

// TestRunSaysWhyAnMCPServerStopped: pixir run's warning for a server that
// stopped during the session ends with the server's last stderr lines, as
// the ACP notice does.
func TestRunSaysWhyAnMCPServerStopped(t *testing.T) {
	e := newRunEnv(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte(fmt.Sprintf(`
[mcp_servers.gadgets]
command = %q
args = ["-test.run=^$"]
env = { PIXIR_TEST_MCP_SERVER = "stdio", PIXIR_TEST_MCP_DIE = "1" }
`, exe)), 0o644))
	script := e.file("script.toml", `
[[rule]]
match = "ping"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__gadgets__ping"
  arguments = { text = "headless" }
  [[rule.reply]]
  text = "done"
`)
	_, stderr, _ := e.pixir("run", "--script", script, "ping")
	require.Contains(t, stderr, `MCP server stopped`, stderr)
	require.Contains(t, stderr, "gadgets: out of cheese, giving up", stderr)
}

// awaitExit blocks until process pid has ended, whoever its parent is
// (a pidfd becomes readable when its process exits).
func awaitExit(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ESRCH {
		return // already gone and reaped
	}
	require.NoError(t, err)
	defer unix.Close(fd)
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
		if err != unix.EINTR {
			require.NoError(t, err)
			return
		}
	}
}

func TestMCPServersEndWithPixir(t *testing.T) {
	for _, how := range []string{"stdin closes", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t, `
[[rule]]
match = "ping"
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "mcp__gadgets__ping"
  arguments = { text = "x" }
  [[rule.reply]]
  text = "{{output .ToolResult}}"
`)
			pidFile := filepath.Join(t.TempDir(), "server.pid")
			mcpConfig(t, e.home, pidFile, "")
			a := e.start()
			a.initialize()
			id := a.newSession()
			m, before := a.call(2, "session/prompt", promptParams(id, "ping"))
			require.Equal(t, "end_turn", stopReason(t, m))
			require.Equal(t, "pong x", agentText(updates(t, before)))

			b, err := os.ReadFile(pidFile)
			require.NoError(t, err)
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(t, err)
			if how == "SIGKILL" {
				// No chance to stop it: the kernel's parent-death signal does.
				require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
			} else {
				require.NoError(t, a.stdin.Close())
			}
			_ = a.cmd.Wait()
			awaitExit(t, pid)
		})
	}
}

// A server that ignores the end of its stdin still ends with a killed
// Pixir: the kernel kills it (Pdeathsig).
func TestMCPServerThatIgnoresStdinEndsWithAKilledPixir(t *testing.T) {
	e := newEnv(t, "")
	fifo := filepath.Join(t.TempDir(), "pid")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte(fmt.Sprintf(`
[mcp_servers.stubborn]
command = "/bin/sh"
args = ["-c", "echo $$ > '%s'; exec sleep 1000"]
startup_timeout = "10m"
`, fifo)), 0o644))
	a := e.start()
	a.initialize()
	a.newSession()
	b, err := os.ReadFile(fifo) // blocks until the server has started
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	_ = a.cmd.Wait()
	awaitExit(t, pid)
}
