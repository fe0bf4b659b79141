package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pixir-go/pixir/acp/client"
)

// runDemo starts this same binary as `pixir acp` in a scratch workspace and
// drives a short session through a real ACP connection over pipes, printing
// what an editor would show. It needs no network and no API key.
func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pixir demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, "Usage: pixir demo [--keep]\n\nRuns a short scripted session through a real ACP client, offline, in a scratch workspace.\n")
	keep := fs.Bool("keep", false, "keep the scratch workspace and print where it is")
	rest, code, done := parseFlags(fs, args, false, stdout, stderr)
	if done {
		return code
	}
	if code, done := noArguments("pixir demo", "pixir demo [--keep]", rest, stderr); done {
		return code
	}
	if err := demo(stdout, stderr, *keep); err != nil {
		fmt.Fprintln(stderr, "pixir demo:", err)
		return exitError
	}
	return exitOK
}

func demo(stdout, stderr io.Writer, keep bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// A signal (Ctrl-C, a CI job's time limit) ends the demo as its end
	// does: the scratch folder removed, pixir acp stopped.
	interrupted, stop := interruptible()
	defer stop()
	scratch, err := os.MkdirTemp("", "pixir-demo-")
	if err != nil {
		return err
	}
	if keep {
		defer fmt.Fprintf(stdout, "\nworkspace kept at %s\n", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	workspace := filepath.Join(scratch, "workspace")
	home := filepath.Join(scratch, "home")
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(workspace, "README.md"), []byte("# A tiny project\n\nPixir's demo works here.\n"), 0o644); err != nil {
		return err
	}

	// Without --keep the scratch folder is gone when the demo ends, so
	// paths inside it print relative to the workspace: nothing printed
	// points at a file that no longer exists.
	out := stdout
	if !keep {
		out = &relativePaths{w: stdout, r: strings.NewReplacer(workspace+string(filepath.Separator), "", workspace, ".")}
	}
	r := client.NewRenderer(out)
	agentCommand := func() *exec.Cmd {
		cmd := exec.Command(self, "acp")
		cmd.Env = append(os.Environ(), "PIXIR_HOME="+home, "PIXIR_PROVIDER=scripted", "PIXIR_SCRIPT=")
		cmd.Stderr = stderr
		return cmd
	}
	start := func() (*client.Client, error) {
		return client.Start(agentCommand(), client.Handlers{
			Update: r.Update,
			Permission: func(_ context.Context, params json.RawMessage) (any, error) {
				r.Println("  ? permission asked — the demo answers: allow once")
				return client.AllowOnce(params)
			},
		})
	}
	ctx, cancel := context.WithTimeout(interrupted, time.Minute)
	defer cancel()

	c, err := start()
	if err != nil {
		return err
	}
	defer func() { _ = c.Kill() }()
	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
		AgentInfo       struct{ Name, Version string }
	}
	if err := c.Call(ctx, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}, &init); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	where := "a scratch workspace (deleted at the end; pixir demo --keep keeps it)"
	if keep {
		where = "the workspace " + workspace
	}
	r.Println(fmt.Sprintf("── connected to %s %s over ACP (protocol %d) in %s", init.AgentInfo.Name, init.AgentInfo.Version, init.ProtocolVersion, where))
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.Call(ctx, "session/new", map[string]any{"cwd": workspace, "mcpServers": []any{}}, &sess); err != nil {
		return fmt.Errorf("session/new: %w", err)
	}
	r.Println("── session " + sess.SessionID)

	prompt := func(text string) (string, error) {
		r.Println("\nyou> " + text)
		var res struct {
			StopReason string `json:"stopReason"`
		}
		err := c.Call(ctx, "session/prompt", map[string]any{"sessionId": sess.SessionID,
			"prompt": []any{map[string]any{"type": "text", "text": text}}}, &res)
		if err != nil {
			return "", err
		}
		r.Println("── stop: " + res.StopReason)
		return res.StopReason, nil
	}
	for _, text := range []string{"hello", "look around and list the files", "create a file for me", "delegate the looking around to a subagent", "plan a workflow", "run a workflow"} {
		if _, err := prompt(text); err != nil {
			return err
		}
	}

	r.Println("\n── switching to ask mode: changes now need permission")
	if err := c.Call(ctx, "session/set_mode", map[string]any{"sessionId": sess.SessionID, "modeId": "ask"}, nil); err != nil {
		return err
	}
	if _, err := prompt("edit the file"); err != nil {
		return err
	}

	r.Println("\n── a slow answer, cancelled after 1.5 s")
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_ = c.Notify(ctx, "session/cancel", map[string]any{"sessionId": sess.SessionID})
	}()
	if _, err := prompt("think hard about it, slowly"); err != nil {
		return err
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("agent exit: %w", err)
	}

	r.Println("\n── a new pixir process loads the session from its Log and replays it to the editor")
	// The replay is the whole session again; the demo counts it rather
	// than print it twice.
	var replayed replayCount
	c2, err := client.Start(agentCommand(), client.Handlers{Update: replayed.update})
	if err != nil {
		return err
	}
	defer func() { _ = c2.Kill() }()
	if err := c2.Call(ctx, "initialize", map[string]any{"protocolVersion": 1}, nil); err != nil {
		return err
	}
	if err := c2.Call(ctx, "session/load", map[string]any{"sessionId": sess.SessionID, "cwd": workspace, "mcpServers": []any{}}, nil); err != nil {
		return fmt.Errorf("session/load: %w", err)
	}
	r.Println("── replayed: " + replayed.String())
	logPath := filepath.Join(".pixir", "sessions", sess.SessionID+".ndjson")
	if keep {
		r.Println("── the session's Log: " + filepath.Join(workspace, logPath))
	} else {
		r.Println("── the session's Log was " + logPath + " in the scratch workspace, now deleted; pixir demo --keep keeps both")
	}
	return c2.Close()
}

// relativePaths rewrites the scratch workspace's paths in what the demo
// prints.
type relativePaths struct {
	w io.Writer
	r *strings.Replacer
}

func (p *relativePaths) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.r.Replace(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}

// replayCount sums up a session/load's replay.
type replayCount struct {
	mu             sync.Mutex
	prompts, calls int
	last           string
}

func (c *replayCount) update(params json.RawMessage) {
	var n struct {
		Update struct {
			SessionUpdate string `json:"sessionUpdate"`
		} `json:"update"`
	}
	if json.Unmarshal(params, &n) != nil {
		return
	}
	k := n.Update.SessionUpdate
	c.mu.Lock()
	defer c.mu.Unlock()
	if k == "user_message_chunk" && k != c.last {
		c.prompts++
	}
	if k == "tool_call" {
		c.calls++
	}
	c.last = k
}

func (c *replayCount) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%d prompts with their answers and %d tool calls, from the Log alone", c.prompts, c.calls)
}
