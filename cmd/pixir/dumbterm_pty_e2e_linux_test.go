//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDumbTerminalGetsPlainLines: a terminal that says it cannot move the
// cursor (TERM=dumb: Emacs' shell and compilation buffers, some CI logs
// on a pseudo-terminal) gets the lines pipes get, timestamped, and no
// escape sequence: the live view and the waiting line redraw in place
// with ESC [ K and ESC [ nF, which such a terminal prints as text.
// TERM=xterm on the same pseudo-terminal is the control.
func TestDumbTerminalGetsPlainLines(t *testing.T) {
	for _, c := range []struct {
		term string
		args []string
	}{
		{"dumb", []string{"run", "create a file"}},
		{"dumb", []string{"run", "--workflow", "survey-and-summarize.yaml"}},
		{"xterm", []string{"run", "--workflow", "survey-and-summarize.yaml"}},
	} {
		t.Run(c.term+" "+strings.Join(c.args, " "), func(t *testing.T) {
			e := newRunEnv(t)
			e.copyExample("survey-and-summarize.yaml")
			cmd := exec.Command(pixirBin, c.args...)
			cmd.Dir = e.ws
			cmd.Env = append(os.Environ(), "PIXIR_HOME="+filepath.Join(e.home), "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=",
				"PIXIR_PROFILE=", "TERM="+c.term)
			var out syncBuffer
			got := runOnPTY(t, cmd, &out)
			require.Equal(t, 0, cmd.ProcessState.ExitCode(), got)
			require.Contains(t, got, "pixir: session ")
			if c.term == "xterm" {
				require.Contains(t, got, "\x1b[K", "the control: a terminal that can gets the live view")
				return
			}
			require.NotContains(t, got, "\x1b", "TERM=dumb: no escape sequence")
			require.Regexp(t, `(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z `, got, "the timestamped lines pipes get")
		})
	}
}
