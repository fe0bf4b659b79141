//go:build linux

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A warning of the runtime's log (here a retry of the model request after
// a 429) written while a live view is drawn on the terminal stays on the
// screen, on a line of its own: in a turn it was glued to the waiting
// line ("… waiting for the model · 0 spixir: warning: …"); in a workflow
// it was written below the frame, and the next frame, moving up over as
// many lines as it had drawn, erased it and left the old frame's head
// above. The model answers 429 only once the view is on the screen.
func TestWarningsStayOnTheTerminalAboveTheLiveView(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		drawn *regexp.Regexp // the view is on the screen
	}{
		{"turn", []string{"hello"}, regexp.MustCompile(`waiting for the model`)},
		{"workflow", []string{"--workflow", "wf.json"}, regexp.MustCompile(`Workflow.*\x1b\[K\r?\n`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out syncBuffer
			model := newFakeModel(t,
				func(w http.ResponseWriter, r *http.Request, body []byte) {
					out.waitForMatch(c.drawn)
					jsonReply(429, `{"error":{"message":"Rate limit reached for m1 on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "Retry-After", "0")(w, r, body)
				},
				oaAnswer("Done as asked.", 10, 5))
			e := newRunEnv(t)
			e.file("wf.json", `{"steps":[{"id":"look","task":"Look around."}]}`)
			cmd := e.command(append([]string{"run", "--provider", "openai", "--model", "m1"}, c.args...)...)
			cmd.Env = append(cmd.Env, "PIXIR_PROFILE=", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+model.URL+"/v1", "TERM=xterm")
			got := runOnPTY(t, cmd, &out)
			require.Len(t, model.received(), 2, got)
			const warning = "pixir: warning: the model request failed; trying again"
			require.Contains(t, got, warning)
			for i := strings.Index(got, "pixir: warning:"); i >= 0; i = nextIndex(got, "pixir: warning:", i) {
				before := got[:i]
				require.True(t, strings.HasSuffix(before, "\n") || strings.HasSuffix(before, "\r\x1b[K") || strings.HasSuffix(before, "\x1b[J"),
					"a warning starts a line: %q", got[max(0, i-60):i+20])
			}
			require.True(t, slicesAny(screenOf(got), func(row string) bool { return strings.HasPrefix(row, warning) }),
				"the warning is still on the screen at the end:\n%s\n(the stream: %q)", strings.Join(screenOf(got), "\n"), got)
		})
	}
}

// A terminal workflow run shows a budget's soft limit (warn_at) above its
// frame: the frame had no place for it, and the notice was written only
// to the lines pipes get.
func TestATerminalWorkflowRunSaysWhenABudgetPassesItsSoftLimit(t *testing.T) {
	e := newRunEnv(t)
	script := e.file("script.toml", `
[[rule]]
match = '.'
  [[rule.reply]]
  text = 'Done as asked.'
`)
	// The step's one model call passes 80% of 5 tokens, the default warn_at.
	require.NoError(t, os.MkdirAll(e.home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.home, "config.toml"), []byte("[budget]\nsession_tokens = 5\n"), 0o644))
	e.file("wf.json", `{"steps":[{"id":"look","task":"Look around."}]}`)
	cmd := e.command("run", "--script", script, "--workflow", "wf.json")
	cmd.Env = append(cmd.Env, "TERM=xterm")
	var out syncBuffer
	got := runOnPTY(t, cmd, &out)
	notice := regexp.MustCompile(`^  ! The session has spent [0-9]+% of its budget: [0-9,]+ tokens .* of 5 tokens\. At the limit the next model call or spawn is refused`)
	require.True(t, slicesAny(screenOf(got), notice.MatchString),
		"the budget's notice is on the screen:\n%s\n(the stream: %q)", strings.Join(screenOf(got), "\n"), got)
}

func nextIndex(s, sub string, after int) int {
	i := strings.Index(s[after+1:], sub)
	if i < 0 {
		return -1
	}
	return after + 1 + i
}

func slicesAny(rows []string, f func(string) bool) bool {
	for _, r := range rows {
		if f(r) {
			return true
		}
	}
	return false
}

// screenOf is what a terminal shows once it has been written stream: the
// lines, as the sequences the live views use move the cursor and erase
// (CR, LF, ESC [ K, ESC [ n F, ESC [ J); other sequences are left out.
// Lines do not wrap and the screen does not scroll: every line is kept.
func screenOf(stream string) []string {
	rows := [][]rune{nil}
	row, col := 0, 0
	rs := []rune(stream)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '\r':
			col = 0
		case '\n':
			row++
			col = 0
			for len(rows) <= row {
				rows = append(rows, nil)
			}
		case 0x1b:
			if i+1 >= len(rs) || rs[i+1] != '[' {
				i++ // a two-character sequence
				continue
			}
			j := i + 2
			for j < len(rs) && (rs[j] < 0x40 || rs[j] > 0x7e) {
				j++
			}
			if j >= len(rs) {
				i = j
				continue
			}
			param := string(rs[i+2 : j])
			switch rs[j] {
			case 'K':
				rows[row] = rows[row][:min(col, len(rows[row]))]
			case 'F':
				n, err := strconv.Atoi(param)
				if err != nil {
					n = 1
				}
				row, col = max(row-n, 0), 0
			case 'J':
				rows[row] = rows[row][:min(col, len(rows[row]))]
				rows = rows[:row+1]
			}
			i = j
		default:
			for len(rows[row]) < col {
				rows[row] = append(rows[row], ' ')
			}
			if col < len(rows[row]) {
				rows[row][col] = r
			} else {
				rows[row] = append(rows[row], r)
			}
			col++
		}
	}
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = string(r)
	}
	return lines
}
