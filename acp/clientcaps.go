package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/pixir-go/pixir/acp/rpc"
	"github.com/pixir-go/pixir/tools"
)

// clientFiles reads and writes through the editor (fs/read_text_file,
// fs/write_text_file), so tools see unsaved buffers and the editor reviews
// edits. Either direction falls back to the local files when the client did
// not advertise it.
type clientFiles struct {
	s         *Server
	sessionID string
	read      bool
	write     bool
	local     tools.Files
}

func (c clientFiles) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	if !c.read {
		return c.local.Open(ctx, path)
	}
	return c.readText(ctx, map[string]any{"sessionId": c.sessionID, "path": path}, path)
}

// OpenLines implements tools.LineRanges: the editor is asked for the lines
// read needs, not for a whole file that may be more than one message can
// carry.
func (c clientFiles) OpenLines(ctx context.Context, path string, line, limit int) (io.ReadCloser, error) {
	if !c.read {
		return c.local.Open(ctx, path) // read counts the lines itself
	}
	return c.readText(ctx, map[string]any{"sessionId": c.sessionID, "path": path, "line": line, "limit": limit}, path)
}

func (c clientFiles) readText(ctx context.Context, params map[string]any, path string) (io.ReadCloser, error) {
	var resp struct {
		Content string `json:"content"`
	}
	if err := c.s.conn.Call(ctx, "fs/read_text_file", params, &resp); err != nil {
		return nil, clientError("fs/read_text_file", path, err)
	}
	return io.NopCloser(strings.NewReader(resp.Content)), nil
}

// WritesThroughEditor says whether writes go to the client: a merge
// writes itself when they would fall back to the workspace's files.
func (c clientFiles) WritesThroughEditor() bool { return c.write }

func (c clientFiles) WriteFile(ctx context.Context, path string, data []byte) error {
	if !c.write {
		return c.local.WriteFile(ctx, path, data)
	}
	err := c.s.conn.Call(ctx, "fs/write_text_file", map[string]any{"sessionId": c.sessionID, "path": path, "content": string(data)}, nil)
	if err != nil {
		return clientError("fs/write_text_file", path, err)
	}
	return nil
}

// ReplaceFile implements tools.Replacer for the local files it falls back
// to; a write through the editor cannot be compared and swapped
// (errors.ErrUnsupported: the tool reads the text again before it).
func (c clientFiles) ReplaceFile(ctx context.Context, path string, data []byte, was fs.FileInfo) error {
	r, ok := c.local.(tools.Replacer)
	if c.write || !ok {
		return errors.ErrUnsupported
	}
	return r.ReplaceFile(ctx, path, data, was)
}

// clientError makes an editor's refusal readable, and "not found" match
// fs.ErrNotExist so tools treat it like a missing local file. Editors say
// "not found" in different places: the code (-32002), the message, or the
// data (acp-factory answers a missing file with -32603 and "ENOENT" in
// data). An editor's refusal to write is the user's or the editor's
// decision, reported as a permission refusal, never as Pixir's fault.
func clientError(method, path string, err error) error {
	if errors.Is(err, rpc.ErrAnswerTooLarge) {
		return &tools.Failure{Kind: tools.ErrInvalidArgs, Message: fmt.Sprintf(
			"the editor's answer to %s for %s was larger than one message may be (%v); read a range of lines with offset and limit", method, path, err)}
	}
	var wire *rpc.Error
	if !errors.As(err, &wire) {
		return fmt.Errorf("%s for %s: %w", method, path, err)
	}
	if method == "fs/write_text_file" {
		return &tools.Failure{Kind: tools.ErrPermissionDenied, Message: fmt.Sprintf(
			"the editor did not write %s: %s (code %d); do not retry unchanged, ask the user what to do", path, wire.Message, wire.Code)}
	}
	if missingFile(wire) {
		return fmt.Errorf("the editor has no file %s: %s: %w", path, wire.Message, fs.ErrNotExist)
	}
	if method == "fs/read_text_file" {
		// The tool says it is the editor's refusal, and why: as an
		// error of Pixir's (internal), the model took it for a bug.
		return fmt.Errorf("the editor refused %s for %s: %s (code %d): %w", method, path, wire.Message, wire.Code, tools.ErrEditorRefused)
	}
	return fmt.Errorf("the editor refused %s for %s: %s (code %d)", method, path, wire.Message, wire.Code)
}

// missingFile reports whether an editor's error says the file does not
// exist.
func missingFile(e *rpc.Error) bool {
	if e.Code == rpc.CodeResourceNotFound {
		return true
	}
	for _, text := range []string{e.Message, string(e.Data)} {
		t := strings.ToLower(text)
		if strings.Contains(t, "not found") || strings.Contains(t, "no such file") || strings.Contains(t, "enoent") {
			return true
		}
	}
	return false
}

// clientTerminals runs commands in terminals the editor creates
// (terminal/*), shown live inside the tool call.
type clientTerminals struct {
	s         *Server
	sessionID string
}

func (c clientTerminals) Run(ctx context.Context, req tools.TerminalRequest) (tools.TerminalResult, error) {
	var res tools.TerminalResult
	var created struct {
		TerminalID string `json:"terminalId"`
	}
	params := map[string]any{
		"sessionId": c.sessionID, "command": "bash", "args": []string{"-c", req.Command},
		"cwd": req.Cwd, "outputByteLimit": req.OutputLimit,
	}
	if err := c.s.conn.Call(ctx, "terminal/create", params, &created); err != nil {
		return res, clientError("terminal/create", req.Cwd, err)
	}
	res.TerminalID = created.TerminalID
	ids := map[string]any{"sessionId": c.sessionID, "terminalId": created.TerminalID}
	// The terminal is the editor's until released, whatever happens here.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = c.s.conn.Call(rctx, "terminal/release", ids, nil)
	}()
	c.s.notify(ctx, c.sessionID, ToolCall{
		SessionUpdate: "tool_call_update", ToolCallID: req.ToolCallID,
		Content: []ToolCallContent{{Type: "terminal", TerminalID: created.TerminalID}},
	})

	waitCtx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	var exit struct {
		ExitCode *int   `json:"exitCode"`
		Signal   string `json:"signal"`
	}
	waitErr := c.s.conn.Call(waitCtx, "terminal/wait_for_exit", ids, &exit)
	if waitErr != nil {
		// Timed out or cancelled: stop the command, but still collect what it
		// printed.
		kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = c.s.conn.Call(kctx, "terminal/kill", ids, nil)
		kcancel()
		res.TimedOut = ctx.Err() == nil && errors.Is(waitErr, context.DeadlineExceeded)
	}
	var out struct {
		Output     string `json:"output"`
		Truncated  bool   `json:"truncated"`
		ExitStatus *struct {
			ExitCode *int   `json:"exitCode"`
			Signal   string `json:"signal"`
		} `json:"exitStatus"`
	}
	octx, ocancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer ocancel()
	if err := c.s.conn.Call(octx, "terminal/output", ids, &out); err != nil {
		return res, clientError("terminal/output", req.Cwd, err)
	}
	res.Output, res.Truncated = out.Output, out.Truncated
	res.ExitCode, res.Signal = exit.ExitCode, exit.Signal
	if out.ExitStatus != nil && res.ExitCode == nil {
		res.ExitCode, res.Signal = out.ExitStatus.ExitCode, out.ExitStatus.Signal
	}
	if waitErr != nil && !res.TimedOut {
		return res, waitErr
	}
	return res, nil
}
