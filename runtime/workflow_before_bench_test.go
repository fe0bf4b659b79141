package runtime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkTheRecordAtARunsStart is what a workflow run with a commit
// spends at its start recording the user's uncommitted work
// (gitCommitter.Before) in a repository with many dirty files:
// PIXIR_BENCH_DIRTY files (2,000) of PIXIR_BENCH_DIRTY_KB KiB each (100:
// 200 MB dirty), tracked, each changed since HEAD. Each iteration changes
// every file again first (untimed), so git has no copy of them yet. The
// record copies the files a step may write (its write sets): every one,
// one in ten, or none; the others it names without reading them.
func BenchmarkTheRecordAtARunsStart(b *testing.B) {
	n, kb := 2000, 100
	if v, err := strconv.Atoi(os.Getenv("PIXIR_BENCH_DIRTY")); err == nil {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("PIXIR_BENCH_DIRTY_KB")); err == nil {
		kb = v
	}
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"} {
		b.Setenv(k, v)
	}
	ws := b.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	name := func(i int) string { return filepath.Join(ws, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.txt", i)) }
	for i := range n {
		if err := os.MkdirAll(filepath.Dir(name(i)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(name(i), []byte("v1\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "init")
	line := bytes.Repeat([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"), kb*1024/64)
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	it := 0
	for _, bb := range []struct {
		name string
		copy func(string) bool
	}{
		{"every file in a write set", nil},
		// The steps' write sets name 5 of the 50 folders (d00/** … d04/**).
		{"one in ten in a write set", func(p string) bool { return p < "d05" }},
		{"none in a write set", func(string) bool { return false }},
	} {
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				it++
				for i := range n {
					if err := os.WriteFile(name(i), append([]byte(fmt.Sprintf("%d %d\n", it, i)), line...), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				rec := c.Before(context.Background(), nil, bb.copy)
				if len(rec) != n {
					b.Fatalf("%d entries, want %d", len(rec), n)
				}
			}
		})
	}
}
