//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestATerminalTooShortForTheLiveViewGetsPlainLines: the live view of a
// workflow run needs five rows (its head, the counts, a row, what is left
// out, and the cursor's line); on a shorter terminal its frame scrolled
// off the top, and the cursor moves that redraw it in place wrote over
// what was above. Such a terminal gets the timestamped lines pipes get;
// one of five rows is the control.
func TestATerminalTooShortForTheLiveViewGetsPlainLines(t *testing.T) {
	for _, rows := range []uint16{1, 4, 5} {
		t.Run(fmt.Sprint(rows, " rows"), func(t *testing.T) {
			e := newRunEnv(t)
			e.copyExample("survey-and-summarize.yaml")
			cmd := exec.Command(pixirBin, "run", "--workflow", "survey-and-summarize.yaml")
			cmd.Dir = e.ws
			cmd.Env = append(os.Environ(), "PIXIR_HOME="+filepath.Join(e.home), "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=",
				"PIXIR_PROFILE=", "TERM=xterm")
			var out syncBuffer
			got := runOnPTYSized(t, cmd, &out, rows)
			require.Equal(t, 0, cmd.ProcessState.ExitCode(), got)
			require.Contains(t, got, "pixir: session ")
			if rows >= 5 {
				require.Contains(t, got, "\x1b[K", "the control: a terminal of five rows gets the live view")
				return
			}
			require.NotContains(t, got, "\x1b[", "%d rows: no cursor moves", rows)
			require.Regexp(t, `(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z step layout queued`, got, "the timestamped lines pipes get")
		})
	}
}
