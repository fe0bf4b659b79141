package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// Pixir's own MCP client: the part of MCP a client that only lists and
// calls tools needs (initialize, tools/list, tools/call, progress,
// cancellation, tools/list_changed, ping), on the project's JSON-RPC engine.
// It replaced the official Go SDK's client, whose packages (encoding/gob,
// a JSON Schema library, OAuth, a JSON encoder with CPU detection) ran
// their package initialisation at every start of pixir, MCP servers or not
// (docs/BENCHMARKS.md, Start-up).

// protocolVersion is the MCP revision Pixir asks for; a server answers with
// the one it speaks.
const protocolVersion = "2025-11-25"

// cancelGrace bounds sending notifications/cancelled for a call the caller
// gave up on.
const cancelGrace = 5 * time.Second

// stream is a JSON-RPC object stream that also hears when a call ends
// (an http stream stops reading its answer) and may hold the transport's
// own error for a call it could not deliver.
type stream interface {
	jsonrpc2.ObjectStream
	callEnded(id uint64)
	callFailed(id uint64) error
	negotiated(version string)
	// ended says why the transport ended the connection by itself (nil:
	// it did not, or has no more to say than that it closed).
	ended() error
}

// client is one connection to an MCP server.
//
// Its calls are its own, not the engine's: sourcegraph/jsonrpc2 (v0.2.3,
// the newest) keeps the waiter of a call until an answer comes, even once
// the caller gave up, and a server told notifications/cancelled should
// not answer; each cancelled tools/call stayed in its pending map for the
// connection's life. The client writes its requests itself (serialised
// with the engine's writes), takes every answer off the stream before the
// engine reads it, and forgets a call the moment its caller stops waiting.
// The engine still reads the stream and serves what the server sends.
type client struct {
	conn   *jsonrpc2.Conn
	stream stream
	out    *routedStream
	nextID atomic.Uint64
	wg     sync.WaitGroup // replies to the server's requests
	log    *slog.Logger

	mu      sync.Mutex
	pending map[uint64]chan answer // calls whose callers wait

	onProgress func(progressParams)
	onChanged  func()
}

// answer is a server's answer to a call: a result or an error.
type answer struct {
	ID     *json.RawMessage `json:"id"`
	Method string           `json:"method"`
	Result json.RawMessage  `json:"result"`
	Error  *jsonrpc2.Error  `json:"error"`
}

// routedStream is the transport's stream as the engine sees it: answers
// go to the client's calls, everything else to the engine; every write,
// the engine's and the client's, goes out whole, one at a time.
type routedStream struct {
	stream
	c       *client
	writeMu sync.Mutex
}

func (r *routedStream) WriteObject(obj any) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	return r.stream.WriteObject(obj)
}

func (r *routedStream) ReadObject(v any) error {
	for {
		var msg json.RawMessage
		if err := r.stream.ReadObject(&msg); err != nil {
			return err
		}
		var a answer
		if json.Unmarshal(msg, &a) == nil && a.ID != nil && a.Method == "" {
			r.c.deliver(a)
			continue
		}
		return json.Unmarshal(msg, v)
	}
}

// deliver hands an answer to the call waiting for it; one nobody waits
// for (a call given up on) is dropped.
func (c *client) deliver(a answer) {
	id, err := strconv.ParseUint(string(bytes.TrimSpace(*a.ID)), 10, 64)
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if err != nil || !ok {
		c.log.Debug("MCP connection: dropped an answer no call waits for", "id", string(*a.ID))
		return
	}
	ch <- a // buffered: never blocks
}

// pendingCalls counts the calls whose callers still wait.
func (c *client) pendingCalls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// implementation names a client or a server.
type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type initializeParams struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	ClientInfo      implementation `json:"clientInfo"`
}

type initializeResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	ServerInfo      implementation `json:"serverInfo"`
}

// remoteTool is a tool as a server lists it.
type remoteTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Annotations *struct {
		Title        string `json:"title,omitempty"`
		ReadOnlyHint bool   `json:"readOnlyHint,omitempty"`
	} `json:"annotations,omitempty"`
}

type listToolsResult struct {
	Tools      []*remoteTool `json:"tools"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

type callToolParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      map[string]any  `json:"_meta,omitempty"`
}

// callResult is a tools/call result.
type callResult struct {
	Content           []content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
}

// content is one block of a result: text, image, audio, resource_link or
// resource (embedded).
type content struct {
	Type        string            `json:"type"`
	Text        string            `json:"text,omitempty"`
	Data        []byte            `json:"data,omitempty"` // base64 on the wire
	MIMEType    string            `json:"mimeType,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Name        string            `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Size        *int64            `json:"size,omitempty"`
	Resource    *resourceContents `json:"resource,omitempty"`
}

type resourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"` // base64 on the wire
}

type progressParams struct {
	ProgressToken any     `json:"progressToken"`
	Progress      float64 `json:"progress"`
	Total         float64 `json:"total,omitempty"`
	Message       string  `json:"message,omitempty"`
}

// connect opens the connection and runs MCP's initialization on it.
func connect(ctx context.Context, s stream, version string, log *slog.Logger, onProgress func(progressParams), onChanged func()) (*client, error) {
	c := &client{stream: s, log: log, pending: map[uint64]chan answer{}, onProgress: onProgress, onChanged: onChanged}
	c.out = &routedStream{stream: s, c: c}
	c.conn = jsonrpc2.NewConn(context.Background(), c.out, handler{c},
		jsonrpc2.SetLogger(slogPrinter{log}))
	var res initializeResult
	// The MCP specification forbids cancelling initialize: when ctx ends
	// first, the connection is closed instead (below), not told to stop.
	err := c.do(ctx, "initialize", false, initializeParams{
		ProtocolVersion: protocolVersion,
		// No roots: a server works where its own configuration says, not
		// where Pixir's workspace is (server-filesystem, given roots,
		// would drop the directories its command line names).
		Capabilities: map[string]any{},
		ClientInfo:   implementation{Name: "pixir", Version: version},
	}, &res)
	if err == nil && res.ProtocolVersion == "" {
		err = errors.New("its initialize result names no protocolVersion")
	}
	if err == nil {
		s.negotiated(res.ProtocolVersion)
		err = c.conn.Notify(ctx, "notifications/initialized", map[string]any{})
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// call makes one request and waits for its answer. When ctx ends first,
// the server is told to stop (notifications/cancelled).
func (c *client) call(ctx context.Context, method string, params, result any) error {
	return c.do(ctx, method, true, params, result)
}

// do makes one request and waits for its answer, until ctx ends (then the
// server is told to stop when cancellable) or the connection does. The
// call is forgotten when do returns: an answer that comes later is
// dropped.
func (c *client) do(ctx context.Context, method string, cancellable bool, params, result any) error {
	id := c.nextID.Add(1)
	req := &jsonrpc2.Request{Method: method, ID: jsonrpc2.ID{Num: id}}
	if err := req.SetParams(params); err != nil {
		return err
	}
	ch := make(chan answer, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		c.stream.callEnded(id)
	}()
	if err := c.out.WriteObject(req); err != nil {
		return err
	}
	var a answer
	select {
	case a = <-ch:
	case <-c.conn.DisconnectNotify():
		select {
		case a = <-ch: // it came just before the end
		default:
			return jsonrpc2.ErrClosed
		}
	case <-ctx.Done():
		if cancellable {
			nctx, cancel := context.WithTimeout(context.Background(), cancelGrace)
			_ = c.conn.Notify(nctx, "notifications/cancelled", map[string]any{"requestId": id, "reason": context.Cause(ctx).Error()})
			cancel()
		}
		return ctx.Err()
	}
	if a.Error != nil {
		if a.Error.Code == codeTransport {
			if terr := c.stream.callFailed(id); terr != nil {
				return terr
			}
		}
		return a.Error
	}
	if result == nil {
		return nil
	}
	if a.Result == nil {
		a.Result = json.RawMessage("null")
	}
	return json.Unmarshal(a.Result, result)
}

// listTools fetches every page of the server's tools.
func (c *client) listTools(ctx context.Context) ([]*remoteTool, error) {
	var all []*remoteTool
	cursor := ""
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page listToolsResult
		if err := c.call(ctx, "tools/list", params, &page); err != nil {
			return nil, err
		}
		for _, t := range page.Tools {
			if t != nil {
				all = append(all, t)
			}
		}
		if page.NextCursor == "" || page.NextCursor == cursor {
			return all, nil
		}
		cursor = page.NextCursor
	}
}

// callTool calls a tool; a progress token asks the server for progress.
func (c *client) callTool(ctx context.Context, name string, args json.RawMessage, progressToken string) (*callResult, error) {
	params := callToolParams{Name: name, Arguments: args}
	if progressToken != "" {
		params.Meta = map[string]any{"progressToken": progressToken}
	}
	var res callResult
	if err := c.call(ctx, "tools/call", params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// handle answers what the server sends: progress, list changes and ping;
// other requests are refused, other notifications ignored. It runs in the
// connection's read loop, so notifications keep their order; a reply goes
// out from a goroutine of its own.
func (c *client) handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	switch req.Method {
	case "notifications/progress":
		var p progressParams
		if req.Params != nil && json.Unmarshal(*req.Params, &p) == nil && c.onProgress != nil {
			c.onProgress(p)
		}
		return
	case "notifications/tools/list_changed":
		if c.onChanged != nil {
			c.onChanged()
		}
		return
	}
	if req.Notif {
		return
	}
	var result any = map[string]any{}
	var rerr *jsonrpc2.Error
	if req.Method != "ping" {
		result, rerr = nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + req.Method}
	}
	c.wg.Add(1)
	go func() { // ends once the reply is written (the stream bounds it)
		defer c.wg.Done()
		if rerr != nil {
			_ = conn.ReplyWithError(ctx, req.ID, rerr)
			return
		}
		_ = conn.Reply(ctx, req.ID, result)
	}()
}

// handler is the client as the engine's Handler.
type handler struct{ c *client }

func (h handler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	h.c.handle(ctx, conn, req)
}

// Wait returns once the connection has ended.
func (c *client) Wait() { <-c.conn.DisconnectNotify() }

// Done is closed when the connection ends.
func (c *client) Done() <-chan struct{} { return c.conn.DisconnectNotify() }

// Close ends the connection (and a stdio server with it), and returns once
// the stream is closed: the engine closes it after failing the calls in
// flight, and whoever reports a failure wants to know how the server ended.
func (c *client) Close() {
	_ = c.conn.Close()
	_ = c.stream.Close()
	c.wg.Wait()
}

// codeTransport marks the answer an http stream makes up for a call it
// could not deliver; callFailed has the real error.
const codeTransport = -32099

// slogPrinter sends the JSON-RPC engine's own complaints to the debug log.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Printf(format string, v ...any) {
	p.log.Debug("MCP connection", "detail", fmt.Sprintf(format, v...))
}
