package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/pixir-go/pixir/tools"
)

// descriptionLimit bounds the description the model reads of one tool.
const descriptionLimit = 8 << 10

// rootCombinators are left out of the schema providers see (they refuse
// them at the root of a tool's parameters); arguments are still checked
// against them.
var rootCombinators = []string{"$schema", "anyOf", "oneOf", "allOf", "not", "if", "then", "else"}

// tool is one tool of an MCP server, as a Pixir tool.
type tool struct {
	srv      *server
	name     string
	remote   *remoteTool
	readOnly bool

	schemaOnce sync.Once
	schema     json.RawMessage // what providers see
	input      *tools.Schema   // what arguments are checked against
}

func newTool(srv *server, name string, remote *remoteTool) *tool {
	return &tool{srv: srv, name: name, remote: remote, readOnly: remote.Annotations != nil && remote.Annotations.ReadOnlyHint}
}

func (t *tool) Name() string { return t.name }

// Server names the tool's server; Remote is the tool's own name there.
func (t *tool) Server() string { return t.srv.cfg.Name }
func (t *tool) Remote() string { return t.remote.Name }

// Description is the server's, with where the tool comes from.
func (t *tool) Description() string {
	desc := strings.TrimSpace(t.remote.Description)
	if desc == "" {
		desc = t.title()
	}
	if len(desc) > descriptionLimit {
		desc = strings.ToValidUTF8(desc[:descriptionLimit], "") + "…"
	}
	return fmt.Sprintf("%s\n\n(Tool %q of the MCP server %q.)", desc, t.remote.Name, t.srv.cfg.Name)
}

func (t *tool) title() string {
	switch {
	case t.remote.Title != "":
		return t.remote.Title
	case t.remote.Annotations != nil && t.remote.Annotations.Title != "":
		return t.remote.Annotations.Title
	}
	return t.remote.Name
}

// Posture is read only for a tool its server annotates readOnlyHint: Pixir
// cannot see what the others do, so they are mutations, which read_only
// refuses and ask asks about.
func (t *tool) Posture() tools.Posture {
	if t.readOnly {
		return tools.PostureRead
	}
	return tools.PostureMutation
}

// Schema is the tool's input schema as providers accept it: an object
// schema without $schema or root combinators.
func (t *tool) Schema() json.RawMessage {
	t.compile()
	return slices.Clone(t.schema)
}

// compile prepares both schemas on first use: listing a server's tools
// costs nothing until the model is told of them.
func (t *tool) compile() {
	t.schemaOnce.Do(func() {
		raw := []byte(t.remote.InputSchema)
		if len(raw) == 0 || string(raw) == "null" {
			raw = []byte(`{"type":"object"}`)
		}
		// Lenient: a server's schema may use any keyword of any draft, and
		// the server checks its arguments itself, so this check must never
		// refuse what the schema accepts (tools/validate.go).
		var err error
		t.input, _, err = tools.CompileLenientSchema(raw)
		if err != nil {
			t.input, _, _ = tools.CompileLenientSchema([]byte(`true`))
		}
		var doc map[string]any
		if json.Unmarshal(raw, &doc) != nil || doc == nil {
			doc = map[string]any{}
		}
		shown := maps.Clone(doc)
		for _, kw := range rootCombinators {
			delete(shown, kw)
		}
		shown["type"] = "object"
		if _, ok := shown["properties"]; !ok {
			shown["properties"] = map[string]any{}
		}
		t.schema, _ = json.Marshal(shown)
	})
}

// note tells a person asked to allow the call where it runs.
func (t *tool) note() string {
	return fmt.Sprintf("This tool runs in the MCP server %q, outside Pixir: the workspace confinement does not bind it; "+
		"what it may read, write or reach is up to the server and its own configuration.", t.srv.cfg.Name)
}

func (t *tool) Describe(json.RawMessage) tools.Presentation {
	kind := tools.KindOther
	if t.readOnly {
		kind = tools.KindFetch
	}
	return tools.Presentation{Title: t.srv.cfg.Name + ": " + t.title(), Kind: kind, Note: t.note()}
}

// DryRun checks the arguments. MCP has no dry run, so nothing reaches the
// server.
func (t *tool) DryRun(_ context.Context, _ tools.Env, args json.RawMessage) tools.Result {
	if _, f := t.check(args); f != nil {
		return tools.Failed(f)
	}
	return tools.Preview("would call tool %q of the MCP server %q with these arguments; MCP tools have no dry run, so nothing was sent to the server", t.remote.Name, t.srv.cfg.Name)
}

// check validates the arguments against the tool's input schema, with a
// pointer line for each problem, as for built-in tools.
func (t *tool) check(args json.RawMessage) (json.RawMessage, *tools.Failure) {
	obj, f := tools.ParseArguments(t.name, args)
	if f != nil {
		return nil, f
	}
	t.compile()
	if lines := t.input.ValidateValue(obj); len(lines) > 0 {
		return nil, &tools.Failure{Kind: tools.ErrInvalidArgs, Message: strings.Join(lines, "\n"),
			Details: map[string]any{"problems": lines}}
	}
	return json.RawMessage(strings.TrimSpace(string(args))), nil
}

// errToolTimeout is the cause of a call's context when its time is up.
var errToolTimeout = errors.New("MCP tool timeout")

// Run checks the arguments and calls the tool, within its time limit. A
// cancelled call is cancelled on the server too (notifications/cancelled).
func (t *tool) Run(ctx context.Context, env tools.Env, args json.RawMessage) tools.Result {
	raw, f := t.check(args)
	if f != nil {
		return tools.Failed(f)
	}
	if state, err := t.srv.stateOf(); state != StateRunning {
		return tools.Fail(tools.ErrUnknownTool, "the MCP server %q is not running (%v), so its tool %q is gone; use another tool or tell the user",
			t.srv.cfg.Name, err, t.remote.Name)
	}
	timeout := t.srv.cfg.toolTimeout()
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, errToolTimeout)
	defer cancel()
	res, err := t.call(cctx, env, raw)
	switch {
	case err == nil:
		return convert(res)
	case ctx.Err() != nil:
		return tools.Fail(tools.ErrCancelled, "the call was cancelled; the MCP server %q was told to stop it", t.srv.cfg.Name)
	case errors.Is(context.Cause(cctx), errToolTimeout):
		return tools.Fail(tools.ErrTimeout, "the MCP tool %q did not answer within %s and was cancelled on its server; "+
			"try smaller work, or raise tool_timeout for the server %q in config.toml", t.remote.Name, timeout, t.srv.cfg.Name)
	case t.srv.stoppedBy(err):
		// Its end is recorded and said (the notice, the warning with
		// its stderr) before the call's result: a headless run that
		// ends at this result would otherwise end before it. The
		// call's own time bounds the wait.
		select {
		case <-t.srv.done:
		case <-cctx.Done():
		}
		return tools.Fail(tools.ErrInternal, "the MCP server %q stopped during the call; its tools are withdrawn, so do not retry", t.srv.cfg.Name)
	}
	var werr *jsonrpc2.Error
	if errors.As(err, &werr) {
		switch werr.Code {
		case jsonrpc2.CodeInvalidParams:
			return tools.Fail(tools.ErrInvalidArgs, "the MCP server %q refused the arguments: %s", t.srv.cfg.Name, werr.Message)
		case jsonrpc2.CodeMethodNotFound:
			return tools.Fail(tools.ErrUnknownTool, "the MCP server %q does not know the tool %q: %s", t.srv.cfg.Name, t.remote.Name, werr.Message)
		}
		return tools.Fail(tools.ErrInternal, "the MCP server %q answered with an error (code %d): %s", t.srv.cfg.Name, werr.Code, werr.Message)
	}
	return tools.Fail(tools.ErrInternal, "calling the MCP server %q failed: %v", t.srv.cfg.Name, err)
}

// stoppedBy reports whether a call failed with err because its server
// stopped: the connection ended, or a stdio server's process did (an EOF
// from its pipes). An HTTP request that failed alone (the server dropped
// the connection of one POST: "Post …: EOF") leaves the session running,
// so it is a failed request, not a stop.
func (srv *server) stoppedBy(err error) bool {
	if errors.Is(err, jsonrpc2.ErrClosed) || srv.gone() {
		return true
	}
	select {
	case <-srv.session.Done():
		return true
	default:
	}
	return srv.proc != nil && errors.Is(err, io.EOF)
}

// call makes the call and, while it runs, passes the server's progress to
// env.Progress on this goroutine.
func (t *tool) call(ctx context.Context, env tools.Env, raw json.RawMessage) (*callResult, error) {
	if env.Progress == nil {
		return t.srv.session.callTool(ctx, t.remote.Name, raw, "")
	}
	progress := make(chan string, 8)
	token := t.srv.track(progress)
	defer t.srv.untrack(token)
	type answer struct {
		res *callResult
		err error
	}
	done := make(chan answer, 1)
	go func() { // ends when the call does: ctx bounds it
		res, err := t.srv.session.callTool(ctx, t.remote.Name, raw, token)
		done <- answer{res, err}
	}()
	for {
		select {
		case msg := <-progress:
			env.Progress(msg)
		case a := <-done:
			return a.res, a.err
		}
	}
}
