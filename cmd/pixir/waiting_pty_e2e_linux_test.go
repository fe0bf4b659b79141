//go:build linux

package main

import (
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the test reads what pixir writes to
// the terminal from master; pixir's stdout and stderr are tty.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	return m, s
}

// runOnPTY runs cmd with its stdout and stderr on a pseudo-terminal, to
// its end, and is what it wrote there (out has it as it comes). An exit
// code other than 0 is the caller's to check (cmd.ProcessState).
func runOnPTY(t *testing.T, cmd *exec.Cmd, out *syncBuffer) string {
	t.Helper()
	return runOnPTYSized(t, cmd, out, 0)
}

// runOnPTYSized is runOnPTY on a terminal of rows rows of 100 columns
// (0: the kernel's default size).
func runOnPTYSized(t *testing.T, cmd *exec.Cmd, out *syncBuffer, rows uint16) string {
	t.Helper()
	master, tty := openPTY(t)
	defer master.Close()
	if rows > 0 {
		require.NoError(t, unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: 100}))
	}
	cmd.Stdout, cmd.Stderr = tty, tty
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(out, master) // ends with EIO once pixir exits and tty is closed
	}()
	require.NoError(t, cmd.Start())
	tty.Close()
	err := cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	<-done
	return out.String()
}

// TestRunShowsTheModelIsWaitedFor: on a terminal, pixir run says the
// model is being waited for while it is silent, and clears that line
// before the answer; with --json, or without a terminal, it never does.
// The fake model answers only when the test releases it.
func TestRunShowsTheModelIsWaitedFor(t *testing.T) {
	for _, c := range []struct {
		name     string
		json     bool
		terminal bool
	}{{"terminal", false, true}, {"terminal with --json", true, true}, {"pipes", false, false}} {
		t.Run(c.name, func(t *testing.T) {
			asked, release := make(chan struct{}), make(chan struct{})
			answer := oaAnswer("Hello from the model.", 10, 5)
			model := newFakeModel(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
				close(asked)
				<-release
				answer(w, r, body)
			})
			dir := t.TempDir()
			args := []string{"run", "--provider", "openai", "--model", "m1", "hello"}
			if c.json {
				args = append(args, "--json")
			}
			cmd := exec.Command(pixirBin, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PIXIR_HOME="+filepath.Join(dir, "home"), "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=",
				"PIXIR_PROFILE=", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL="+model.URL+"/v1", "TERM=xterm")
			var out syncBuffer
			var done chan struct{}
			if c.terminal {
				master, tty := openPTY(t)
				defer master.Close()
				cmd.Stdout, cmd.Stderr = tty, tty
				done = make(chan struct{})
				go func() {
					defer close(done)
					_, _ = io.Copy(&out, master) // ends with EIO once pixir exits and tty is closed
				}()
				require.NoError(t, cmd.Start())
				tty.Close()
			} else {
				cmd.Stdout, cmd.Stderr = &out, &out
				require.NoError(t, cmd.Start())
			}
			<-asked
			if !c.json && c.terminal {
				// Redrawn as the seconds pass. Any count past 0 will do: a
				// redraw late on a loaded machine goes from 0 s to 2 s.
				out.waitForMatch(regexp.MustCompile(`waiting for the model · [1-9][0-9]* s`))
			}
			close(release)
			err := cmd.Wait()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				require.NoError(t, err)
			}
			if done != nil {
				<-done
			}
			got := out.String()
			require.Contains(t, got, "Hello from the model.")
			if c.json || !c.terminal {
				require.NotContains(t, got, "waiting for the model", "no waiting line for scripts")
				require.NotContains(t, got, "\033[K")
				return
			}
			last := strings.LastIndex(got, "waiting for the model")
			cleared := strings.Index(got[last:], "\r\033[K")
			require.GreaterOrEqual(t, cleared, 0, "the waiting line is never cleared: %q", got)
			require.Less(t, last+cleared, strings.Index(got, "Hello from the model."), "the waiting line is cleared before the answer: %q", got)
		})
	}
}
