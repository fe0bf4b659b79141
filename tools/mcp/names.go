package mcp

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// maxToolName is the longest tool name every provider accepts: OpenAI and
// Anthropic both take ^[a-zA-Z0-9_-]{1,64}$.
const maxToolName = 64

// ToolPrefix starts the name of every MCP tool the model sees.
const ToolPrefix = "mcp__"

// ToolName is the name the model calls tool of server by:
// mcp__<server>__<tool>, with every character a provider refuses replaced
// by '_', and cut to 64 characters with a hash of the whole name when it
// is longer, so that two long names stay apart.
func ToolName(server, tool string) string {
	name := ToolPrefix + sanitize(server) + "__" + sanitize(tool)
	if len(name) <= maxToolName {
		return name
	}
	return name[:maxToolName-9] + "_" + shortHash(server+"\x00"+tool)
}

// sanitize keeps ASCII letters, digits, '_' and '-'; anything else becomes
// '_'. An empty name becomes "_".
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

func shortHash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

// uniqueNames names the tools of one server, in order: a name that two of
// them would share after sanitising ("a.b" and "a_b") gets a hash of the
// original tool name, so each call reaches the tool it names.
func uniqueNames(server string, tools []string, taken func(string) bool) []string {
	names := make([]string, len(tools))
	seen := map[string]bool{}
	for i, t := range tools {
		name := ToolName(server, t)
		if seen[name] || taken(name) {
			base := name
			if len(base) > maxToolName-9 {
				base = base[:maxToolName-9]
			}
			name = base + "_" + shortHash(server+"\x00"+t)
		}
		seen[name] = true
		names[i] = name
	}
	return names
}
