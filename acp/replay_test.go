package acp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/tools"
)

// The replay's fast path for a tool's end says what toolEnd says, and
// leaves to toolEnd every result it does not cover.
func TestReplayedTextResultIsWhatToolEndShows(t *testing.T) {
	long := strings.Repeat("x", displayLimit+1)
	tests := []struct {
		name string
		data runtime.ToolResultData
		fast bool
	}{
		{"a file read", runtime.ToolResultData{ToolCallID: "c1", Name: "read", Result: tools.OK(map[string]any{"content": "line <one>\n\"two\" & é\n", "lines": 2}),
			Locations: []tools.Location{{Path: "a.go", Line: 3}}}, true},
		{"a string output", runtime.ToolResultData{ToolCallID: "c2", Result: tools.OK("done")}, true},
		{"output before text", runtime.ToolResultData{ToolCallID: "c3", Result: tools.OK(map[string]any{"text": "t", "output": "o"})}, true},
		{"content not a string", runtime.ToolResultData{ToolCallID: "c4", Result: tools.OK(map[string]any{"content": 3, "text": "t"})}, true},
		{"no text field", runtime.ToolResultData{ToolCallID: "c5", Result: tools.OK(map[string]any{"files": []string{"a"}})}, false},
		{"an empty text", runtime.ToolResultData{ToolCallID: "c6", Result: tools.OK(map[string]any{"content": ""})}, false},
		{"a text to cut", runtime.ToolResultData{ToolCallID: "c7", Result: tools.OK(long)}, false},
		{"a failure", runtime.ToolResultData{ToolCallID: "c8", Result: tools.Fail(tools.ErrNotFound, "no such file")}, false},
		{"a diff", runtime.ToolResultData{ToolCallID: "c9", Result: tools.OK("ok"), Diffs: []runtime.DiffData{{Path: "a", NewText: "b"}}}, false},
		{"blocks", runtime.ToolResultData{ToolCallID: "c10", Result: tools.OK("ok"), Blocks: []tools.Block{{Type: "text", Text: "hi"}}}, false},
		{"a command in a terminal", runtime.ToolResultData{ToolCallID: "c11", Result: tools.OK(map[string]any{"output": "hi\n"}), TerminalID: "term-1"}, true},
	}
	p := &presenter{root: "/ws", replaying: true, s: &Server{}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.data)
			require.NoError(t, err)
			fast, ok := p.replayedTextResult(runtime.Event{Type: runtime.EventToolResult, Data: raw})
			require.Equal(t, tt.fast, ok)
			if !ok {
				return
			}
			var d runtime.ToolResultData
			require.NoError(t, json.Unmarshal(raw, &d))
			general, err := json.Marshal(p.toolEnd(d))
			require.NoError(t, err)
			require.JSONEq(t, string(general), string(fast))
		})
	}
}
