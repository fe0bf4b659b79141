package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// With stdout not a terminal (a file, a pipe), the answer on it is the
// model's text byte for byte: a progress note on stderr in the middle of
// the answer (a tool call after "Looking") ended stdout's line, so the
// file held a newline the answer (output.text of --json: its two messages
// apart by a blank line) does not have (review31b #8). On a terminal
// shared with stderr the line is still ended, so that the note does not
// start after the answer's text.
func TestTheAnswerOnStdoutIsExactWhenItIsNotATerminal(t *testing.T) {
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
	e.env = append(e.env, "PIXIR_PROFILE=", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+model.URL+"/v1")
	stdout, stderr, code := e.pixir("run", "--provider", "openai", "--model", "m1", "look")
	require.Equal(t, exitOK, code, "stdout: %q\nstderr: %s", stdout, stderr)
	require.Contains(t, stderr, "Read a.txt", "the note of the tool call")
	require.Equal(t, "Looking\n\n done.\n", stdout)
}

// A warning of the runtime's log (writeAbove) in the middle of the
// answer leaves stdout as the answer when stdout is not a terminal: it
// ended stdout's line (review31b #8).
func TestAWarningMidAnswerLeavesStdoutExact(t *testing.T) {
	var stdout, stderr bytes.Buffer
	v := newTurnView(newRunOutput(&stdout, &stderr, false))
	v.write("Look")
	v.writeAbove(func() { stderr.WriteString("pixir: warning\n") })
	v.write("ing")
	require.Equal(t, "Looking", stdout.String())
	require.Equal(t, "pixir: warning\n", stderr.String())
}
