// Package client is a small ACP client that starts an agent process and
// speaks to it over its stdin/stdout. Pixir's demo and end-to-end tests use
// it to drive the built pixir binary the way an editor does.
package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"

	"github.com/pixir-go/pixir/acp/rpc"
)

// Handlers answer what the agent sends. Nil fields get defaults: updates are
// dropped, permission requests are answered with the first allow_once
// option, other agent requests get -32601.
type Handlers struct {
	// Update receives each session/update's params, in order.
	Update func(params json.RawMessage)
	// Permission answers session/request_permission; it returns the
	// response's outcome object.
	Permission func(ctx context.Context, params json.RawMessage) (any, error)
}

// Client is a running agent process and its connection.
type Client struct {
	cmd   *exec.Cmd
	conn  *rpc.Conn
	stdin io.WriteCloser
	h     Handlers

	waitOnce sync.Once
	waitErr  error
}

// Start runs cmd (whose Stdin/Stdout must be unset) and connects to it.
func Start(cmd *exec.Cmd, h Handlers) (*Client, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting agent: %w", err)
	}
	c := &Client{cmd: cmd, stdin: stdin, h: h}
	c.conn = rpc.Serve(stdout, stdin, nil, c, rpc.Options{})
	return c, nil
}

// Call sends a request and decodes its result into result (when not nil).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.conn.Call(ctx, method, params, result)
}

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Notify(ctx, method, params)
}

// Close closes the agent's stdin, as an editor does when it is done, and
// waits for the process to exit.
func (c *Client) Close() error {
	_ = c.stdin.Close()
	<-c.conn.Done()
	return c.Wait()
}

// Kill stops the agent process at once.
func (c *Client) Kill() error {
	if err := c.cmd.Process.Kill(); err != nil {
		return err
	}
	_ = c.Wait()
	return nil
}

// Wait waits for the process to exit.
func (c *Client) Wait() error {
	c.waitOnce.Do(func() { c.waitErr = c.cmd.Wait() })
	return c.waitErr
}

// HandleRequest implements rpc.Handler for requests the agent sends.
func (c *Client) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "session/request_permission":
		if c.h.Permission != nil {
			return c.h.Permission(ctx, params)
		}
		return AllowOnce(params)
	}
	return nil, rpc.Errorf(rpc.CodeMethodNotFound, "method not found: %s", method)
}

// HandleNotification implements rpc.Handler.
func (c *Client) HandleNotification(_ context.Context, method string, params json.RawMessage) {
	if method == "session/update" && c.h.Update != nil {
		c.h.Update(params)
	}
}

// AllowOnce answers a permission request with its allow_once option.
func AllowOnce(params json.RawMessage) (any, error) {
	return Select(params, "allow_once")
}

// Select answers a permission request with the first option of kind.
func Select(params json.RawMessage, kind string) (any, error) {
	var p struct {
		Options []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	for _, o := range p.Options {
		if o.Kind == kind {
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": o.OptionID}}, nil
		}
	}
	return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
}
