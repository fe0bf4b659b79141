package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools/mcp"
)

// McpServer is an entry of mcpServers in session/new, load and resume: a
// stdio server (no type) or an http one. Pixir advertises http, not sse.
type McpServer struct {
	Type    string        `json:"type,omitempty"`
	Name    string        `json:"name"`
	Command string        `json:"command,omitempty"`
	Args    []string      `json:"args,omitempty"`
	Env     []EnvVariable `json:"env,omitempty"`
	URL     string        `json:"url,omitempty"`
	Headers []HTTPHeader  `json:"headers,omitempty"`
}

type EnvVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// mcpServers decodes a session request's mcpServers. A malformed entry is
// -32602 naming it: the editor's configuration is wrong, and starting the
// others silently would hide that.
func mcpServers(raw []json.RawMessage) ([]mcp.ServerConfig, error) {
	var out []mcp.ServerConfig
	for i, r := range raw {
		at := fmt.Sprintf("mcpServers[%d]", i)
		var s McpServer
		dec := json.NewDecoder(bytes.NewReader(r))
		if err := dec.Decode(&s); err != nil {
			return nil, invalid(at, "is not an MCP server: %s", describeJSONError(err))
		}
		if s.Name == "" {
			return nil, missing(at + ".name")
		}
		c := mcp.ServerConfig{Name: s.Name}
		switch s.Type {
		case "", "stdio":
			if s.Command == "" {
				return nil, missing(at + ".command")
			}
			c.Command, c.Args = s.Command, s.Args
			for _, e := range s.Env {
				c.Env = append(c.Env, mcp.EnvVar{Name: e.Name, Value: e.Value})
			}
		case "http":
			if s.URL == "" {
				return nil, missing(at + ".url")
			}
			c.URL = s.URL
			for _, h := range s.Headers {
				c.Headers = append(c.Headers, mcp.Header{Name: h.Name, Value: h.Value})
			}
		case "sse":
			return nil, invalid(at+".type", "sse is not supported (mcpCapabilities.sse is false); connect the server over http")
		default:
			return nil, invalid(at+".type", "%q is not an MCP transport: want http, or none for stdio", s.Type)
		}
		out = append(out, c)
	}
	if err := mcp.Check(out); err != nil {
		return nil, invalid("mcpServers", "%v", err)
	}
	return out, nil
}

// notice shows a runtime notice. A client that advertised session.notices
// gets a notice at once; another one gets it as agent text, inside a turn
// only (updates after a prompt's answer are not allowed): now, when a turn
// is running, or at the start of the next.
func (s *Server) notice(sessionID string, d runtime.NoticeData) {
	s.mu.Lock()
	notices := advertised(s.client.Session.Notices)
	if !notices {
		text := fmt.Sprintf("\n\n**%s**\n\n%s\n\n", d.Title, strings.TrimSpace(d.Detail))
		if !s.turns[sessionID] {
			if s.pendingNotices == nil {
				s.pendingNotices = map[string][]string{}
			}
			if !slices.Contains(s.pendingNotices[sessionID], text) {
				// Said once: a session loaded again before its next turn
				// (its setup notices made anew) shows each one time.
				s.pendingNotices[sessionID] = append(s.pendingNotices[sessionID], text)
			}
			s.mu.Unlock()
			return
		}
		if slices.Contains(s.shownInTurn[sessionID], text) {
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.notify(context.Background(), sessionID, ContentChunk{SessionUpdate: "agent_message_chunk", Content: textBlock(text)})
		return
	}
	s.mu.Unlock()
	s.notify(context.Background(), sessionID, Notice{SessionUpdate: "notice", Severity: d.Severity, Title: d.Title, Description: d.Detail})
}

// turnStarted marks a turn of sessionID as running and shows the notices
// that waited for one; the returned func marks its end.
func (s *Server) turnStarted(pr *presenter) func() {
	id := pr.sess.ID()
	s.mu.Lock()
	if s.turns == nil {
		s.turns = map[string]bool{}
	}
	s.turns[id] = true
	pending := s.pendingNotices[id]
	delete(s.pendingNotices, id)
	if len(pending) > 0 {
		if s.shownInTurn == nil {
			s.shownInTurn = map[string][]string{}
		}
		s.shownInTurn[id] = pending
	}
	s.mu.Unlock()
	for _, text := range pending {
		pr.send(ContentChunk{SessionUpdate: "agent_message_chunk", Content: textBlock(text)})
	}
	return func() {
		s.mu.Lock()
		delete(s.turns, id)
		delete(s.shownInTurn, id)
		s.mu.Unlock()
	}
}
