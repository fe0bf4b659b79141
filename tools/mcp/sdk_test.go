package mcp

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallTool lets a benchmark call a server straight through the connection,
// with the SDK's parameters, as it did when the connection was the SDK's.
func (c *client) CallTool(ctx context.Context, p *sdk.CallToolParams) (*callResult, error) {
	args, err := json.Marshal(p.Arguments)
	if err != nil {
		return nil, err
	}
	return c.callTool(ctx, p.Name, args, "")
}
