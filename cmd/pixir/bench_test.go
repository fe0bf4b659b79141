package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkSpawnToSessionNew measures what an editor waits for before it can
// prompt: start `pixir acp`, answer initialize, answer session/new. It
// reports the median and p90 of the wall time per spawn (the target:
// median under 10 ms).
func BenchmarkSpawnToSessionNew(b *testing.B) {
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	input := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + ws + `","mcpServers":[]}}` + "\n"
	env := append(os.Environ(), "PIXIR_HOME="+filepath.Join(dir, "home"), "PIXIR_PROVIDER=", "PIXIR_SCRIPT=")
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cmd := exec.Command(pixirBin, "acp")
		cmd.Env = env
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := io.WriteString(stdin, input); err != nil {
			b.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		for answered := 0; answered < 2; {
			line, err := r.ReadString('\n')
			if err != nil {
				b.Fatalf("reading replies: %v", err)
			}
			if strings.Contains(line, `"result"`) {
				answered++
			}
		}
		samples = append(samples, time.Since(start))
		b.StopTimer()
		stdin.Close()
		_ = cmd.Wait()
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(samples[len(samples)*9/10].Microseconds())/1000, "p90-ms")
}
