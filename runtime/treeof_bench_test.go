package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pixir-go/pixir/workflows"
)

// BenchmarkTheTreeBeforeACommit is what gitCommitter.treeOf adds to a
// workflow run's whole-file commit (1a7fef1: the tree the commit is to
// make, built first in an index of its own, so that a git stopped after
// it made the commit is known to have made it): three git processes
// (read-tree of HEAD, add of the committed paths, write-tree). In a
// repository of PIXIR_BENCH_TRACKED tracked files (20,000) with
// PIXIR_BENCH_COMMITTED of them (50) changed before each iteration
// (untimed): treeOf alone, and the whole Commit that runs it.
func BenchmarkTheTreeBeforeACommit(b *testing.B) {
	n, k := 20000, 50
	if v, err := strconv.Atoi(os.Getenv("PIXIR_BENCH_TRACKED")); err == nil {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("PIXIR_BENCH_COMMITTED")); err == nil {
		k = v
	}
	for key, v := range map[string]string{"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"} {
		b.Setenv(key, v)
	}
	ws := b.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("config", "gc.auto", "0") // no packing in the background, into the next iteration and the cleanup
	rel := func(i int) string { return fmt.Sprintf("d%03d/f%05d.go", i%200, i) }
	for i := range n {
		p := filepath.Join(ws, rel(i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package d\n\n// file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "init")
	paths := make([]string, k)
	for i := range paths {
		paths[i] = rel(i * (n / k))
	}
	c := gitCommitter{root: ws, mode: func() Mode { return ModeAuto }}
	it := 0
	change := func(b *testing.B) {
		it++
		for _, p := range paths {
			if err := os.WriteFile(filepath.Join(ws, p), []byte(fmt.Sprintf("package d\n\n// changed %d\n", it)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("treeOf", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			change(b)
			head := git("rev-parse", "HEAD")
			b.StartTimer()
			if _, err := c.treeOf(context.Background(), head, paths); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("commit", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			change(b)
			b.StartTimer()
			rep, err := c.Commit(context.Background(), workflows.CommitRequest{Message: "the run's work", Paths: paths})
			if err != nil || rep.Status != workflows.Committed {
				b.Fatalf("%v %+v", err, rep)
			}
		}
	})
}
