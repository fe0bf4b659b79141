//go:build unix

package main

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// signalScript holds a turn in a shell command until the test signals
// the run: "⚙ Run" on stderr says the command is running.
const signalScript = `
[[rule]]
match = 'hold'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "bash"
  arguments = { command = "exec sleep 600" }
  [[rule.reply]]
  text = "after the command"
[[rule]]
  [[rule.reply]]
  text = "ok"
`

// A script, a CI job or a closed terminal ends a run with SIGINT, SIGTERM
// or SIGHUP: each cancels the turn as Ctrl-C does, so the Log records the
// command's end and the turn's stop, stderr says it ended cancelled, and
// the exit code is 2 (partial). SIGHUP (the terminal or the ssh session
// went away, a CI runner hanging up) killed the process outright: exit
// 129, the call unfinished in the Log, the turn incomplete.
func TestASignalCancelsTheTurnAndTheLogRecordsIt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newRunEnv(t)
			script := e.file("s.toml", signalScript)
			cmd := e.command("run", "--script", script, "hold")
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			require.NoError(t, cmd.Start())
			stderr.waitFor("⚙ Run")
			require.NoError(t, cmd.Process.Signal(sig))
			err := cmd.Wait()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "%v\n%s", err, stderr.String())
			require.Equal(t, exitPartial, exit.ExitCode(), stderr.String())
			require.Contains(t, stderr.String(), "the turn ended cancelled")

			events := readLog(t, e.ws, e.sessionIDs()[0])
			types := eventTypes(events)
			require.Contains(t, types, "tool_result", "the command's end is in the Log")
			last := events[len(events)-1]
			require.Equal(t, "assistant_message", last.Type)
			require.Contains(t, string(last.Data), `"stop_reason":"cancelled"`)
		})
	}
}
