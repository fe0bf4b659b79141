package sandbox

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkCommandSetup measures what the sandbox adds to starting a
// command: each iteration runs /bin/true plainly (its own process group,
// as bash did before) and then under the sandbox, interleaved so that the
// machine's noise falls on both alike. added-ms/op is the target's figure
// (< 2 ms): for a writer confined to a workspace with a protected .git and
// .pixir, network denied, in a PID namespace, with the filtered
// environment and its private temporary directory.
func BenchmarkCommandSetup(b *testing.B) {
	ws := b.TempDir()
	for _, d := range []string{".git", ".pixir", "src", "docs", "cmd"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	policies := map[string]Policy{
		"contained": {},
		"confined": {Confine: true, Writable: []string{ws}, DenyNetwork: true,
			Protected: []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".pixir")}},
	}
	for name, p := range policies {
		b.Run(name, func(b *testing.B) {
			if p.Confine {
				needLandlock(b)
			}
			var plain, boxed time.Duration
			for b.Loop() {
				t0 := time.Now()
				cmd := exec.Command("/bin/true")
				cmd.Dir = ws
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := (*Sandbox)(nil).Run(b.Context(), Command{Path: "/bin/true", Args: []string{"true"}, Dir: ws, Output: io.Discard, Policy: p}); err != nil {
					b.Fatal(err)
				}
				plain += t1.Sub(t0)
				boxed += time.Since(t1)
			}
			n := float64(b.N)
			b.ReportMetric(float64(plain.Microseconds())/1000/n, "plain-ms/op")
			b.ReportMetric(float64(boxed.Microseconds())/1000/n, "sandboxed-ms/op")
			b.ReportMetric(float64((boxed-plain).Microseconds())/1000/n, "added-ms/op")
		})
	}
}

// BenchmarkRuleset measures the Landlock part alone, without a process:
// building the ruleset of a confined writer (a workspace whose .git and
// .pixir are opened up entry by entry) and entering it on a fresh locked
// thread, as each command does.
func BenchmarkRuleset(b *testing.B) {
	needLandlock(b)
	ws := b.TempDir()
	for _, d := range []string{".git", ".pixir", "src", "docs", "cmd", "internal", "testdata"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	p := Policy{Confine: true, Writable: []string{ws, b.TempDir()}, DenyNetwork: true,
		Protected: []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".pixir")}}
	abi := probeKernel().landlockABI
	for b.Loop() {
		fd, err := buildRuleset(abi, p, false)
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends here
			done <- restrictThread(fd)
		}()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		_ = unix.Close(fd)
	}
}
