package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixir-go/pixir/runtime/snapshot"
)

// benchWorkspace makes a workspace of n text files of about 4 KB in 20
// folders and a child's snapshot of it in which every file changed; the
// workspace changed both percent of them too, in another place (each of
// those merges is three-way).
func benchWorkspace(b *testing.B, root string, n, both int) (string, *snapshot.Manifest) {
	b.Helper()
	ws := filepath.Join(root, "ws")
	body := strings.Repeat("a line of text in a source file, long enough to be typical\n", 70)
	for i := range n {
		p := filepath.Join(ws, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("first line\n"+body+"last line\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	home := filepath.Join(ws, ".pixir", "subagents", "sa-bench")
	m, err := snapshot.TakeWith(context.Background(), ws, filepath.Join(home, "workspace"), snapshot.Options{BaseDir: filepath.Join(home, "base")})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		rel := filepath.Join(fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d.txt", i))
		if err := os.WriteFile(filepath.Join(m.Root, rel), []byte("first line (child)\n"+body+"last line\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		if i%100 < both {
			if err := os.WriteFile(filepath.Join(ws, rel), []byte("first line\n"+body+"last line (workspace)\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return ws, m
}

// copyFiles copies every regular file under src (but .pixir) to dst: the
// yardstick, in process, file by file. Into a tree that has the files,
// each is overwritten (truncated and written), as copying a child's files
// into the workspace would do.
func copyFiles(b *testing.B, src, dst string) {
	b.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".pixir" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMergeVsCopy merges a child's 1,000 changed files and, in the
// same round, copies those 1,000 files with Go; medians of each and the
// ratios (target ≤ 2). In the first, the workspace did not change any of
// them: 0 % of the files were changed on both sides, so every file is a
// fast-forward through the whole journaled apply (plan, stage, journal,
// renames, the child's base moved on); in the second, 10 % were (each a
// three-way merge of two changes far apart). The yardstick the target is
// against copies the files over a tree that has them (what copying the
// child's files into the workspace does: each old file's blocks are
// freed, as the merge's rename frees them); copy-new-ms copies them into
// an empty folder.
func BenchmarkMergeVsCopy(b *testing.B) {
	b.Run("both=0%", func(b *testing.B) { benchMerge(b, 1000, 0) })
	b.Run("both=10%", func(b *testing.B) { benchMerge(b, 1000, 10) })
}

// BenchmarkMergeThreeWay is the same with 200 files, every one changed on
// both sides, for the cost per three-way file: merged in process, and by
// one git merge-file each (as every such file was before).
func BenchmarkMergeThreeWay(b *testing.B) {
	b.Run("in-process", func(b *testing.B) { benchMerge(b, 200, 100) })
	b.Run("git-merge-file", func(b *testing.B) {
		mergeInProcess = false
		defer func() { mergeInProcess = true }()
		benchMerge(b, 200, 100)
	})
}

// BenchmarkMergeManyFolders merges a child's 2,000 changed files of a
// line, each in a folder of its own (gen/dNN/eNNNN/x.txt): far more folders
// than the apply keeps open (maxHeld), so most are opened again, one name
// at a time, when their operation runs. Per merge, the freeing outside.
func BenchmarkMergeManyFolders(b *testing.B) {
	const n = 2000
	file := func(root string, i int) string {
		return filepath.Join(root, "gen", fmt.Sprintf("d%02d", i%50), fmt.Sprintf("e%04d", i), "x.txt")
	}
	for b.Loop() {
		b.StopTimer()
		ws := filepath.Join(b.TempDir(), "ws")
		for i := range n {
			if err := os.MkdirAll(filepath.Dir(file(ws, i)), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(file(ws, i), []byte("x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		home := filepath.Join(ws, ".pixir", "subagents", "sa-bench")
		m, err := snapshot.TakeWith(context.Background(), ws, filepath.Join(home, "workspace"), snapshot.Options{BaseDir: filepath.Join(home, "base")})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if err := os.WriteFile(file(m.Root, i), []byte("y\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if _, err := Merge(context.Background(), Request{Workspace: ws, Snapshot: m, Label: "bench"}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		Wait()
		b.StartTimer()
	}
}

func benchMerge(b *testing.B, n, both int) {
	if _, err := os.Stat("/usr/bin/git"); both > 0 && err != nil {
		b.Skip("no git")
	}
	var merges, reaps, overs, copies []float64
	round := 0
	for b.Loop() {
		if round >= 5 {
			continue
		}
		b.StopTimer()
		root := b.TempDir()
		ws, m := benchWorkspace(b, root, n, both)
		over := filepath.Join(root, "over")
		copyFiles(b, ws, over) // the tree the yardstick overwrites
		syscall.Sync()
		b.StartTimer()
		mergeRun := func() {
			start := time.Now()
			rep, err := Merge(context.Background(), Request{Workspace: ws, Snapshot: m, Label: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			if rep.Applied.Count() != n || len(rep.Conflicts) > 0 {
				b.Fatalf("merged %d files, %d conflicts", rep.Applied.Count(), len(rep.Conflicts))
			}
			merges = append(merges, float64(time.Since(start).Microseconds())/1000)
			// The versions it replaced are freed in the background:
			// not while the next run is timed.
			start = time.Now()
			Wait()
			reaps = append(reaps, float64(time.Since(start).Microseconds())/1000)
		}
		overRun := func() {
			start := time.Now()
			copyFiles(b, m.Root, over)
			overs = append(overs, float64(time.Since(start).Microseconds())/1000)
		}
		copyRun := func() {
			start := time.Now()
			copyFiles(b, m.Root, filepath.Join(root, "copy"))
			copies = append(copies, float64(time.Since(start).Microseconds())/1000)
		}
		// Each round in another order, so that neither side always
		// runs first (or last) on a busy machine.
		runs := []func(){mergeRun, overRun, copyRun}
		for k := range runs {
			runs[(k+round)%len(runs)]()
		}
		round++
	}
	mm, oo, cc := median(merges), median(overs), median(copies)
	// The copy over frees each old file inline; the merge frees them
	// after it returns. Like for like is the merge with its freeing.
	whole := make([]float64, len(merges))
	for i := range merges {
		whole[i] = merges[i] + reaps[i]
	}
	b.ReportMetric(median(reaps), "then-freed-ms")
	b.ReportMetric(median(whole)/oo, "merge+freed/copy")
	b.ReportMetric(mm*1e6, "ns/op")
	b.ReportMetric(mm, "merge-ms")
	b.ReportMetric(oo, "copy-ms")
	b.ReportMetric(cc, "copy-new-ms")
	b.ReportMetric(mm/oo, "merge/copy")
	b.ReportMetric(mm/cc, "merge/copy-new")
	b.ReportMetric(mm/float64(n), "ms/file")
	b.Logf("merge ms %v (then freed in the background in %v); copy (over) ms %v; copy (new) ms %v", merges, reaps, overs, copies)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
