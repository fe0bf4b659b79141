//go:build linux

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// On a terminal that stdout and stderr share, a progress note in the
// middle of the answer ends the answer's line first, so the note does not
// start after the answer's text (TestTheAnswerOnStdoutIsExactWhenItIsNotATerminal
// is the other side).
func TestANoteMidAnswerEndsTheLineOnASharedTerminal(t *testing.T) {
	model := newFakeModel(t,
		sseReply(0, concat(
			[]string{oaChunk(`{"role":"assistant","content":"","refusal":null}`, "")},
			oaText("Look", "ing"),
			oaToolCall(0, "call_1", "read", `{"path":"a.txt"}`),
			[]string{oaChunk(`{}`, "tool_calls"), oaUsage(10, 5), oaDone},
		)...),
		oaAnswer(" done.", 20, 5))
	e := newRunEnv(t)
	require.NoError(t, os.WriteFile(filepath.Join(e.ws, "a.txt"), []byte("a\n"), 0o644))
	e.env = append(e.env, "PIXIR_PROFILE=", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+model.URL+"/v1", "TERM=xterm")
	cmd := e.command("run", "--provider", "openai", "--model", "m1", "look")
	var out syncBuffer
	got := runOnPTY(t, cmd, &out)
	require.Equal(t, 0, cmd.ProcessState.ExitCode(), got)
	require.Regexp(t, regexp.MustCompile(`Looking\r\n(\r\x1b\[K)*  ⚙ Read a\.txt`), got)
}
