package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/tools"
	"github.com/pixir-go/pixir/tools/mcp"
)

// mcpServer is a real MCP server (the official SDK's) over streamable
// http, with a read-only tool and a mutation.
func mcpServer(t *testing.T, name string) mcp.ServerConfig {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	srv.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes.", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " says " + args.Text}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "note", Description: "Writes a note.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "noted"}}}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(func() {
		hs.CloseClientConnections() // a session still open holds its event stream
		hs.Close()
	})
	return mcp.ServerConfig{Name: name, URL: hs.URL}
}

func newMCPRuntime(t *testing.T, p provider.Provider, servers ...mcp.ServerConfig) *Runtime {
	t.Helper()
	rt := New(Config{Home: t.TempDir(), Provider: p, Model: "m", Tools: tools.Builtins(), MCP: MCPConfig{Servers: servers}})
	t.Cleanup(rt.Close)
	return rt
}

func specNames(specs []provider.ToolSpec) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

func mcpCall(id, name, args string) provider.ToolCall {
	return provider.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func TestSessionWithoutMCPServersSharesTheRuntimeTools(t *testing.T) {
	rt := newMCPRuntime(t, &fakeProvider{})
	s, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	require.Nil(t, s.mcpAccess(), "no Set for a session without servers")
	reg, specs := s.toolbox()
	require.Same(t, rt.tools, reg)
	require.Same(t, &rt.toolSpecs()[0], &specs[0], "the runtime's cached specs, not a copy")
	require.Nil(t, s.MCPServers())
}

func TestMCPToolsReachTheModelAndRun(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		calls(mcpCall("c1", "mcp__alpha__echo", `{"text":"hi"}`), mcpCall("c2", "mcp__alpha__echo", `{}`)),
		text("done"),
	}}
	alpha, beta := mcpServer(t, "alpha"), mcpServer(t, "beta") // before the runtime: it closes first
	rt := newMCPRuntime(t, p, alpha)
	// The editor's servers join config.toml's.
	s, err := rt.NewSession(t.TempDir(), WithMCPServers([]mcp.ServerConfig{beta}))
	require.NoError(t, err)
	require.Equal(t, []string{"alpha", "beta"}, s.MCPServers())

	var rec recorder
	stop, err := s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{Observe: rec.observe})
	require.NoError(t, err)
	require.Equal(t, StopEndTurn, stop)

	names := specNames(p.reqs[0].Tools)
	require.Equal(t, specNames(rt.toolSpecs()), names[:len(rt.toolSpecs())], "built-ins first, in their order")
	require.Equal(t, []string{"mcp__alpha__echo", "mcp__alpha__note", "mcp__beta__echo", "mcp__beta__note"}, names[len(rt.toolSpecs()):])

	second := p.reqs[1].Messages
	require.JSONEq(t, `{"ok":true,"output":{"content":"alpha says hi"}}`, second[2].Text)
	require.JSONEq(t, `{"ok":false,"error":{"kind":"invalid_args","message":"/: missing property 'text'","details":{"problems":["/: missing property 'text'"]}}}`, second[3].Text)

	// The user's blocks are in the Log, for a replay.
	events, _, err := s.Events()
	require.NoError(t, err)
	var results []ToolResultData
	for _, ev := range events {
		if ev.Type == EventToolResult {
			var d ToolResultData
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			results = append(results, d)
		}
	}
	require.Equal(t, []tools.Block{{Type: "text", Text: "alpha says hi"}}, results[0].Blocks)
}

func TestMCPPostureFollowsTheModes(t *testing.T) {
	p := &fakeProvider{calls: []func(context.Context, provider.ModelRequest, func(provider.Delta)) (*provider.ModelResponse, error){
		calls(mcpCall("c1", "mcp__alpha__note", `{}`), mcpCall("c2", "mcp__alpha__echo", `{"text":"x"}`)),
		text("done"),
		calls(mcpCall("c3", "mcp__alpha__note", `{}`)),
		text("done"),
	}}
	rt := newMCPRuntime(t, p, mcpServer(t, "alpha"))
	s, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)

	require.NoError(t, s.SetMode(ModeReadOnly))
	_, err = s.Prompt(context.Background(), Prompt{Text: "go"}, TurnOptions{})
	require.NoError(t, err)
	msgs := p.reqs[1].Messages
	require.Contains(t, msgs[2].Text, `"kind":"permission_denied"`)
	require.Contains(t, msgs[2].Text, "mcp__alpha__note changes the workspace and the session is in read_only mode")
	require.Contains(t, msgs[3].Text, `"ok":true`, "annotated read-only: runs in read_only")

	require.NoError(t, s.SetMode(ModeAsk))
	ask := &noteAsker{}
	_, err = s.Prompt(context.Background(), Prompt{Text: "again"}, TurnOptions{Ask: ask})
	require.NoError(t, err)
	require.Len(t, ask.reqs, 1)
	require.Equal(t, "alpha: note", ask.reqs[0].Title)
	require.Contains(t, ask.reqs[0].Note, `runs in the MCP server "alpha", outside Pixir: the workspace confinement does not bind it`)
}

type noteAsker struct{ reqs []PermissionRequest }

func (a *noteAsker) AskPermission(_ context.Context, req PermissionRequest) (PermissionOutcome, error) {
	a.reqs = append(a.reqs, req)
	return AllowOnce, nil
}

func TestMCPChildrenShareAndNarrowTheServers(t *testing.T) {
	rt := newMCPRuntime(t, &fakeProvider{}, mcpServer(t, "alpha"), mcpServer(t, "beta"))
	parent, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	parent.waitMCP(context.Background())

	mcpTools := func(s *Session) []string {
		_, specs := s.toolbox()
		return slices.DeleteFunc(specNames(specs), func(n string) bool { return !strings.HasPrefix(n, mcp.ToolPrefix) })
	}
	child := func(allow []string) *Session {
		c, err := rt.newChildSession("", t.TempDir(), t.TempDir(), parent, 1, ModeAuto, "m", AgentSpec{Name: "default"}, parent.accounts)
		require.NoError(t, err)
		t.Cleanup(c.release)
		c.inheritMCP(parent, allow, nil)
		return c
	}
	all := child(nil)
	require.Equal(t, []string{"mcp__alpha__echo", "mcp__alpha__note", "mcp__beta__echo", "mcp__beta__note"}, mcpTools(all))
	require.Same(t, parent.mcpAccess().set, all.mcpAccess().set, "shared, not restarted")
	require.False(t, all.mcpAccess().owned)

	beta := child([]string{"beta"})
	require.Equal(t, []string{"mcp__beta__echo", "mcp__beta__note"}, mcpTools(beta))
	require.Equal(t, []string{"beta"}, beta.MCPServers())
	// A grandchild cannot widen what its parent was given.
	grand, err := rt.newChildSession("", t.TempDir(), t.TempDir(), beta, 2, ModeAuto, "m", AgentSpec{Name: "default"}, beta.accounts)
	require.NoError(t, err)
	t.Cleanup(grand.release)
	grand.inheritMCP(beta, []string{"alpha", "beta"}, nil)
	require.Equal(t, []string{"beta"}, grand.MCPServers())
	require.Empty(t, mcpTools(child([]string{})), "[] allows none")

	// An agent's list and a step's narrow together.
	require.Equal(t, []string{}, narrowed([]string{"alpha"}, []string{"beta"}))
	require.Nil(t, narrowed(nil, nil))

	// A step naming a server the session lacks is refused before it runs.
	b := binding{m: rt.subagents, parent: parent}
	_, err = b.Preview(tools.SpawnRequest{Task: "x", MCPServers: []string{"beta", "gamma"}})
	require.ErrorContains(t, err, `this session has no MCP server "gamma" (it has alpha, beta)`)
	_, err = b.Preview(tools.SpawnRequest{Task: "x", MCPServers: []string{"beta"}})
	require.NoError(t, err)

	// Children never stop the servers: closing one leaves the parent's running.
	all.closeMCP()
	require.Equal(t, mcp.StateRunning, parent.MCPStatus(context.Background())[0].State)
}

func TestMCPServerFailureIsANotice(t *testing.T) {
	rt := newMCPRuntime(t, &fakeProvider{}, mcp.ServerConfig{Name: "broken", Command: filepath.Join(t.TempDir(), "no-such-server")})
	s, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	// Ready once the server has failed, and the notice is recorded by then.
	s.waitMCP(context.Background())
	events, _, err := s.Events()
	require.NoError(t, err)
	i := slices.IndexFunc(events, func(ev Event) bool { return ev.Type == EventNotice })
	require.GreaterOrEqual(t, i, 0, "the notice is in the Log")
	var d NoticeData
	require.NoError(t, json.Unmarshal(events[i].Data, &d))
	require.Equal(t, NoticeData{Source: "mcp", Server: "broken", Severity: mcp.SeverityError,
		Title: `MCP server "broken" did not start; its tools are not available`, Detail: d.Detail}, d)
	require.Contains(t, d.Detail, "no such file or directory")
}

func TestMCPServersStopWithTheSessionAndRestartOnlyWhenChanged(t *testing.T) {
	alpha, beta := mcpServer(t, "alpha"), mcpServer(t, "beta")
	rt := newMCPRuntime(t, &fakeProvider{})
	dir := t.TempDir()
	s, err := rt.NewSession(dir, WithMCPServers([]mcp.ServerConfig{alpha}))
	require.NoError(t, err)
	s.waitMCP(context.Background())
	set := s.mcpAccess().set

	// session/load of the live session with the same servers keeps them.
	again, _, err := rt.OpenSession(s.ID(), dir, nil, WithMCPServers([]mcp.ServerConfig{alpha}))
	require.NoError(t, err)
	require.Same(t, s, again)
	require.Same(t, set, s.mcpAccess().set)
	// session/resume without mcpServers keeps them too.
	_, _, err = rt.OpenSession(s.ID(), dir, nil)
	require.NoError(t, err)
	require.Same(t, set, s.mcpAccess().set)

	// Other servers replace them, and the old ones stop.
	_, _, err = rt.OpenSession(s.ID(), dir, nil, WithMCPServers([]mcp.ServerConfig{beta}))
	require.NoError(t, err)
	require.NotSame(t, set, s.mcpAccess().set)
	require.Equal(t, mcp.StateStopped, set.Status()[0].State)

	newSet := s.mcpAccess().set
	s.waitMCP(context.Background())
	require.NoError(t, rt.CloseSession(s.ID()))
	require.Nil(t, s.mcpAccess())
	require.Equal(t, mcp.StateStopped, newSet.Status()[0].State)
}

func TestMCPSettings(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(`
[mcp]
tool_timeout = "5m"

[mcp_servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]
env = { B = "2", A = "1" }
startup_timeout = "1m"

[mcp_servers.docs]
url = "https://docs.example/mcp"
http_headers = { "X-Team" = "core" }
env_http_headers = { "X-Key" = "DOCS_KEY" }
bearer_token_env_var = "DOCS_TOKEN"

[mcp_servers.tracker]
url = "https://tracker.example/mcp"
bearer_token_env_var = "TRACKER_TOKEN"

[mcp_servers.off]
command = "x"
enabled = false
`), 0o644))
	st, err := LoadSettings(home)
	require.NoError(t, err)
	env := map[string]string{"DOCS_KEY": "k", "DOCS_TOKEN": "t"}
	cfg, err := st.MCPConfig(func(k string) string { return env[k] })
	require.EqualError(t, err, "[mcp_servers.tracker] is left out: TRACKER_TOKEN not set in the environment")
	require.Equal(t, MCPConfig{ToolTimeout: 5 * 60e9, Servers: []mcp.ServerConfig{
		{Name: "docs", URL: "https://docs.example/mcp", Headers: []mcp.Header{{Name: "X-Team", Value: "core"}, {Name: "X-Key", Value: "k"}, {Name: "Authorization", Value: "Bearer t"}}},
		{Name: "files", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv"},
			Env: []mcp.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}, StartupTimeout: 60e9},
	}}, cfg)

	for _, bad := range []struct{ toml, want string }{
		{"[mcp_servers.x]\nargs = [\"a\"]\n", `[mcp_servers.x]: MCP server "x" has neither a command nor a url`},
		{"[mcp_servers.x]\ncommand = \"a\"\nurl = \"http://h\"\n", "has both a command and a url"},
		{"[mcp_servers.x]\nurl = \"ftp://h\"\n", `url "ftp://h" is not an http(s) URL`},
		{"[mcp_servers.x]\ncommand = \"a\"\nbearer_token_env_var = \"T\"\n", "headers go with a url"},
		{"[mcp_servers.x]\ncommand = \"a\"\nstartup_timeout_sec = 5\n", `unknown key "mcp_servers.x.startup_timeout_sec"`},
	} {
		require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(bad.toml), 0o644))
		_, err := LoadSettings(home)
		require.ErrorContains(t, err, bad.want)
	}
}

// A child is offered the MCP tools its agent's profile lists and its
// posture allows, like any other.
func TestMCPToolsFollowTheProfile(t *testing.T) {
	rt := newMCPRuntime(t, &fakeProvider{}, mcpServer(t, "alpha"), mcpServer(t, "beta"))
	parent, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	parent.waitMCP(context.Background())
	offered := func(spec AgentSpec, mode Mode) []string {
		sa := &subagent{depth: 1, spec: spec}
		c, err := rt.newChildSession("", t.TempDir(), t.TempDir(), parent, 1, mode, "m", spec, parent.accounts)
		require.NoError(t, err)
		t.Cleanup(c.release)
		keep := rt.subagents.offered(sa, mode)
		c.offerTools(keep, nil)
		c.inheritMCP(parent, nil, keep)
		_, specs := c.toolbox()
		return specNames(specs)
	}
	require.Equal(t, []string{"read", "mcp__alpha__echo", "mcp__alpha__note"},
		offered(AgentSpec{Profile: AgentProfile{Tools: []string{"read", "mcp__alpha__*"}}}, ModeAuto))
	require.Equal(t, []string{"mcp__beta__echo"},
		offered(AgentSpec{Profile: AgentProfile{Tools: []string{"mcp__beta__echo"}}}, ModeAuto))
	ro := offered(AgentSpec{Profile: AgentProfile{Tools: []string{"mcp__alpha__*"}}}, ModeReadOnly)
	require.Equal(t, []string{"mcp__alpha__echo"}, ro, "read_only: the read-only tool, not the mutation")
}

// A child is offered the runtime's tools its keep lets through, in their
// order, then its extra tools; an extra named like a runtime tool (even
// one its keep drops) or like an earlier extra is dropped.
func TestOfferToolsKeepsOrderAndDropsNamesakes(t *testing.T) {
	var runs, dryRuns atomic.Int32
	named := func(name string) tools.Tool {
		return tools.Define(tools.Spec[changeArgs]{Name: name, Description: name + " tool", Posture: tools.PostureRead,
			Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			Run:    func(context.Context, tools.Env, changeArgs, bool) tools.Result { runs.Add(1); return tools.OK("") }})
	}
	rt := New(Config{Home: t.TempDir(), Provider: &fakeProvider{}, Model: "m", Tools: append(tools.Builtins(), changeTool(&runs, &dryRuns))})
	t.Cleanup(rt.Close)
	parent, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	c, err := rt.newChildSession("", t.TempDir(), t.TempDir(), parent, 1, ModeAuto, "m", AgentSpec{Name: "default"}, parent.accounts)
	require.NoError(t, err)
	t.Cleanup(c.release)
	keep := func(t tools.Tool) bool { return t.Name() == "grep" || t.Name() == "read" }
	c.offerTools(keep, []tools.Tool{named("report_checkpoint"), named("change"), named("extra"), named("report_checkpoint")})
	reg, specs := c.toolbox()
	require.Equal(t, []string{"read", "grep", "report_checkpoint", "extra"}, specNames(specs))
	var names []string
	for _, tool := range reg.All() {
		names = append(names, tool.Name())
	}
	require.Equal(t, specNames(specs), names)
	require.Equal(t, "extra tool", specs[3].Description)
	require.JSONEq(t, `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, string(specs[3].Parameters))
	require.Equal(t, rt.toolSpecs()[slices.IndexFunc(rt.toolSpecs(), func(s provider.ToolSpec) bool { return s.Name == "grep" })], specs[1])

	all, err := rt.newChildSession("", t.TempDir(), t.TempDir(), parent, 1, ModeAuto, "m", AgentSpec{Name: "default"}, parent.accounts)
	require.NoError(t, err)
	t.Cleanup(all.release)
	all.offerTools(nil, []tools.Tool{named("extra")})
	_, specs = all.toolbox()
	require.Equal(t, append(specNames(rt.toolSpecs()), "extra"), specNames(specs))
}

// Children offered the same tools share one list of specs (every step of
// a workflow made its own before), each still with a registry of its own
// that holds its own extra tool; a child offered other tools, or an extra
// described otherwise, gets a list of its own.
func TestChildrenOfferedTheSameToolsShareTheirSpecs(t *testing.T) {
	rt := New(Config{Home: t.TempDir(), Provider: &fakeProvider{}, Model: "m", Tools: tools.Builtins()})
	t.Cleanup(rt.Close)
	parent, err := rt.NewSession(t.TempDir())
	require.NoError(t, err)
	report := func(description string) tools.Tool { // a step's report_checkpoint: one per step
		return tools.Define(tools.Spec[changeArgs]{Name: "report_checkpoint", Description: description, Posture: tools.PostureRead,
			Schema: json.RawMessage(`{"type":"object"}`),
			Run:    func(context.Context, tools.Env, changeArgs, bool) tools.Result { return tools.OK("") }})
	}
	child := func(keep func(tools.Tool) bool, extra tools.Tool) (*tools.Registry, []provider.ToolSpec) {
		c, err := rt.newChildSession("", t.TempDir(), t.TempDir(), parent, 1, ModeReadOnly, "m", AgentSpec{Name: "default"}, parent.accounts)
		require.NoError(t, err)
		t.Cleanup(c.release)
		c.offerTools(keep, []tools.Tool{extra})
		return c.toolbox()
	}
	reads := func(t tools.Tool) bool { return t.Posture() == tools.PostureRead }
	first, second := report("Report."), report("Report.")
	reg1, specs1 := child(reads, first)
	reg2, specs2 := child(reads, second)
	require.Same(t, &specs1[0], &specs2[0], "one list for both")
	got1, _ := reg1.Get("report_checkpoint")
	got2, _ := reg2.Get("report_checkpoint")
	require.Same(t, first, got1)
	require.Same(t, second, got2, "each child runs its own step's tool")

	_, other := child(func(t tools.Tool) bool { return t.Name() == "read" }, report("Report."))
	require.Equal(t, []string{"read", "report_checkpoint"}, specNames(other))
	_, described := child(reads, report("Report otherwise."))
	require.NotSame(t, &specs1[0], &described[0])
	require.Equal(t, "Report otherwise.", described[len(described)-1].Description)
	require.Equal(t, specNames(specs1), specNames(described))
}
