package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// The tests talk to real MCP servers made with the official SDK: over
// stdio, this test binary run again as a server (PIXIR_MCP_TEST_SERVER),
// and over http, an httptest server in this process.

func TestMain(m *testing.M) {
	if os.Getenv("PIXIR_MCP_TEST_SERVER") == "stdio" {
		serveStdio()
		return
	}
	goleak.VerifyTestMain(m)
}

// serveStdio is the test binary as a stdio MCP server. What the tests must
// see happen inside it goes to stderr, which the client logs.
func serveStdio() {
	ts := newTestServer(func(event string) { fmt.Fprintln(os.Stderr, event) })
	if err := ts.srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// stdioConfig starts this test binary as a stdio server named name.
func stdioConfig(t testing.TB, name string) ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerConfig{Name: name, Command: exe, Args: []string{"-test.run=^$"},
		Env: []EnvVar{{"PIXIR_MCP_TEST_SERVER", "stdio"}}}
}

// testServer is an MCP server with one tool per case the client must
// handle. events hears what happens inside it: "call NAME" when a tool
// runs, "cancelled NAME" when a call is cancelled on the server.
type testServer struct {
	srv    *sdk.Server
	events func(string)
}

// rawSchema makes an input schema the SDK passes through unchanged (and
// does not check: the client's check is what is under test).
func rawSchema(s string) json.RawMessage { return json.RawMessage(s) }

// tinyPNG is a 1x1 PNG.
var tinyPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

func newTestServer(events func(string)) *testServer {
	ts := &testServer{srv: sdk.NewServer(&sdk.Implementation{Name: "pixir-test-server", Version: "1"}, nil), events: events}
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true}
	add := func(t *sdk.Tool, h func(ctx context.Context, args map[string]any) *sdk.CallToolResult) {
		ts.srv.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			ts.events("call " + t.Name)
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return h(ctx, args), nil
		})
	}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	add(&sdk.Tool{Name: "echo", Title: "Echo", Description: "Echoes its text.", Annotations: readOnly,
		InputSchema: rawSchema(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
			"properties":{"text":{"type":"string","minLength":1},"times":{"type":"integer","minimum":1}},"required":["text"]}`)},
		func(_ context.Context, args map[string]any) *sdk.CallToolResult {
			return text(fmt.Sprint(args["text"]))
		})
	add(&sdk.Tool{Name: "note", Description: "Writes a note somewhere.",
		InputSchema: rawSchema(`{"type":"object","properties":{"note":{"type":"string"}}}`)},
		func(context.Context, map[string]any) *sdk.CallToolResult { return text("noted") })
	add(&sdk.Tool{Name: "media", Description: "Returns one of each kind of content.", Annotations: readOnly,
		InputSchema: rawSchema(`{"type":"object"}`)},
		func(context.Context, map[string]any) *sdk.CallToolResult {
			size := int64(42)
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "here it is"},
				&sdk.ImageContent{Data: tinyPNG, MIMEType: "image/png"},
				&sdk.ResourceLink{URI: "file:///tmp/report.txt", Name: "report", MIMEType: "text/plain", Size: &size},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://a", MIMEType: "text/plain", Text: "inline text"}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://b", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
			}}
		})
	add(&sdk.Tool{Name: "weather", Description: "Structured weather.", Annotations: readOnly,
		InputSchema: rawSchema(`{"type":"object"}`)},
		func(context.Context, map[string]any) *sdk.CallToolResult {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: `{ "temp": 21, "sky": "clear" }`}},
				StructuredContent: map[string]any{"sky": "clear", "temp": 21}}
		})
	add(&sdk.Tool{Name: "fail", Description: "Fails in its own words.", Annotations: readOnly,
		InputSchema: rawSchema(`{"type":"object"}`)},
		func(context.Context, map[string]any) *sdk.CallToolResult {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no such ticket: PX-1"}}}
		})
	add(&sdk.Tool{Name: "big", Description: "Too much text.", Annotations: readOnly, InputSchema: rawSchema(`{"type":"object"}`)},
		func(context.Context, map[string]any) *sdk.CallToolResult {
			return text(strings.Repeat("0123456789abcdef", 6<<10))
		})
	add(&sdk.Tool{Name: "slow", Description: "Runs until cancelled.", Annotations: readOnly, InputSchema: rawSchema(`{"type":"object"}`)},
		func(ctx context.Context, _ map[string]any) *sdk.CallToolResult {
			<-ctx.Done()
			ts.events("cancelled slow")
			return text("stopped")
		})
	ts.srv.AddTool(&sdk.Tool{Name: "steps", Description: "Reports progress, then runs until cancelled.", Annotations: readOnly,
		InputSchema: rawSchema(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			ts.events("call steps")
			for i := 1; i <= 2; i++ {
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d", i)})
			}
			<-ctx.Done()
			ts.events("cancelled steps")
			return text("stopped"), nil
		})
	add(&sdk.Tool{Name: "crash", Description: "Exits the server.", InputSchema: rawSchema(`{"type":"object"}`)},
		func(context.Context, map[string]any) *sdk.CallToolResult {
			fmt.Fprintln(os.Stderr, "crashing on purpose")
			os.Exit(3)
			return nil
		})
	add(&sdk.Tool{Name: "grow", Description: "Adds the tool late.", InputSchema: rawSchema(`{"type":"object"}`)},
		func(context.Context, map[string]any) *sdk.CallToolResult {
			ts.srv.AddTool(&sdk.Tool{Name: "late", Description: "Added late.", InputSchema: rawSchema(`{"type":"object"}`)},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("late"), nil })
			return text("grown")
		})
	add(&sdk.Tool{Name: "shrink", Description: "Removes the late tool.", InputSchema: rawSchema(`{"type":"object"}`)},
		func(context.Context, map[string]any) *sdk.CallToolResult {
			ts.srv.RemoveTools("late")
			return text("shrunk")
		})
	add(&sdk.Tool{Name: "wide.schema", Description: "A schema beyond Pixir's subset.", Annotations: readOnly,
		InputSchema: rawSchema(`{"type":"object","required":["id"],"properties":{
			"id":{"anyOf":[{"type":"string"},{"type":"integer"}]},
			"ref":{"$ref":"#/$defs/thing"},"tags":{"type":"array","items":{"type":"string"}}},
			"oneOf":[{"required":["id"]}],"$defs":{"thing":{"type":"object"}}}`)},
		func(context.Context, map[string]any) *sdk.CallToolResult { return text("ok") })
	return ts
}

// httpServer serves a test server over streamable http; it records the
// headers of the first request and sends events to the returned channel.
type httpServer struct {
	*httptest.Server
	events chan string

	mu     sync.Mutex
	header http.Header
}

func newHTTPServer(t *testing.T) *httpServer { return newHTTPServerWith(t, nil) }

// interceptor is a hook in front of the SDK's handler. It sees every
// request, with the JSON-RPC method (and tool name, for a tools/call) of
// a POST; when it returns true it has answered (itself, or through next,
// the SDK's handler, with a request of its choice).
type interceptor func(w http.ResponseWriter, r *http.Request, method, tool string, next http.Handler) bool

// newHTTPServerWith is newHTTPServer with an interceptor.
func newHTTPServerWith(t *testing.T, intercept interceptor) *httpServer {
	return newHTTPServerOpts(t, intercept, nil)
}

// newHTTPServerOpts is newHTTPServerWith with the SDK handler's options.
func newHTTPServerOpts(t *testing.T, intercept interceptor, opts *sdk.StreamableHTTPOptions) *httpServer {
	hs := &httpServer{events: make(chan string, 64)}
	ts := newTestServer(func(e string) { hs.events <- e })
	handler := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		hs.mu.Lock()
		if hs.header == nil {
			hs.header = r.Header.Clone()
		}
		hs.mu.Unlock()
		return ts.srv
	}, opts)
	front := http.Handler(handler)
	if intercept != nil {
		front = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(r.Body)
				_ = json.Unmarshal(body, &msg)
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
			if intercept(w, r, msg.Method, msg.Params.Name, handler) {
				return
			}
			handler.ServeHTTP(w, r)
		})
	}
	hs.Server = httptest.NewServer(front)
	t.Cleanup(hs.Close)
	return hs
}

// next waits for the next event inside the server.
func (hs *httpServer) next(t *testing.T) string {
	t.Helper()
	return <-hs.events
}
