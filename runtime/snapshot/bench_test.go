//go:build unix

package snapshot

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Benchmark tree: 200 folders (20 × 10) of 50 files, 10,000 files and
// 200 MB in all, sizes varied (a few large files among many small ones),
// content deterministic and incompressible.
const (
	benchTop, benchSub, benchFiles = 20, 10, 50
	benchBytes                     = 200 << 20
)

func genTree(b *testing.B, root string) {
	b.Helper()
	rng := rand.New(rand.NewPCG(11, 0))
	n := benchTop * benchSub * benchFiles
	raw := make([]int64, n)
	var sum int64
	for i := range raw {
		raw[i] = 1 + rng.Int64N(64)
		if i%500 == 0 {
			raw[i] *= 100 // one large file in 500
		}
		sum += raw[i]
	}
	src := rand.NewChaCha8([32]byte{1, 2, 3})
	buf := make([]byte, 0, 8<<20)
	var total int64
	i := 0
	for top := range benchTop {
		for sub := range benchSub {
			dir := filepath.Join(root, fmt.Sprintf("pkg%02d", top), fmt.Sprintf("mod%02d", sub))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := range benchFiles {
				size := raw[i] * benchBytes / sum
				if i == n-1 {
					size = benchBytes - total
				}
				total += size
				i++
				if int64(cap(buf)) < size {
					buf = make([]byte, 0, size)
				}
				data := buf[:size]
				_, _ = src.Read(data)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%02d.dat", f)), data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// BenchmarkSnapshotVsCpA measures Take as a child gets it (its base kept,
// its manifest saved; the tree is no git work tree, so no repository) and
// `cp -a` of the same generated tree in the same run and reports the medians (take-ms, cp-a-ms, and ns/op
// set to the median Take) and their ratio. Each round copies the tree with
// both, alternating which goes first; both read the source from a warm page
// cache (it was just written) and each round starts after a sync, so neither
// pays for the other's writeback.
//
// At most SNAPSHOT_BENCH_ROUNDS rounds (default 5) are measured whatever
// -benchtime asks (later iterations do nothing), and the copies are kept
// until the end: each round writes 400 MB, and deleting between rounds would
// slow the next round's file creation on ext4 without a journal, which skips
// inodes freed in the last minute (both tools pay it; it is not what this
// compares, but a run soon after another one's cleanup is slower for both).
//
// SNAPSHOT_BENCH_WORKERS sets Take's number of copy workers, and
// SNAPSHOT_BENCH_DROP_CACHES=1 (root) drops the kernel's caches before each
// round and reads the source back in, for steadier figures on a busy machine.
func BenchmarkSnapshotVsCpA(b *testing.B) {
	if testing.Short() {
		b.Skip("generates a 200 MB tree")
	}
	cp, err := exec.LookPath("cp")
	if err != nil {
		b.Skip("no cp")
	}
	maxRounds := 5
	if n, err := strconv.Atoi(os.Getenv("SNAPSHOT_BENCH_ROUNDS")); err == nil && n > 0 {
		maxRounds = n
	}
	if n, err := strconv.Atoi(os.Getenv("SNAPSHOT_BENCH_WORKERS")); err == nil && n > 0 {
		testWorkers = n
		defer func() { testWorkers = 0 }()
	}
	dropCaches := os.Getenv("SNAPSHOT_BENCH_DROP_CACHES") == "1"
	root := b.TempDir()
	src := filepath.Join(root, "src")
	genTree(b, src)
	settle := func() {
		syscall.Sync()
		if !dropCaches {
			return
		}
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0); err != nil {
			b.Fatalf("SNAPSHOT_BENCH_DROP_CACHES=1 needs root: %v", err)
		}
		warm(b, src)
	}
	settle()

	var takes, cps []float64
	var cloned int
	ms := func(f func()) float64 {
		start := time.Now()
		f()
		return float64(time.Since(start).Microseconds()) / 1000
	}
	round := 0
	for b.Loop() {
		if round >= maxRounds {
			continue
		}
		dstTake := filepath.Join(root, fmt.Sprintf("take%d", round))
		dstCp := filepath.Join(root, fmt.Sprintf("cp%d", round))
		var tk, cpa float64
		runTake := func() {
			tk = ms(func() {
				m, err := TakeWith(context.Background(), src, dstTake, Options{BaseDir: dstTake + ".base", Git: true})
				if err != nil {
					b.Fatal(err)
				}
				if len(m.Entries) != benchTop*benchSub*benchFiles || m.Bytes != benchBytes {
					b.Fatalf("copied %d files, %d bytes", len(m.Entries), m.Bytes)
				}
				cloned = m.Cloned
			})
		}
		runCp := func() {
			cpa = ms(func() {
				if out, err := exec.Command(cp, "-a", src, dstCp).CombinedOutput(); err != nil {
					b.Fatalf("cp -a: %v: %s", err, out)
				}
			})
		}
		if round%2 == 0 {
			runCp()
			runTake()
		} else {
			runTake()
			runCp()
		}
		round++
		takes, cps = append(takes, tk), append(cps, cpa)
		b.StopTimer()
		settle()
		b.StartTimer()
	}
	t, c := median(takes), median(cps)
	b.ReportMetric(t*1e6, "ns/op")
	b.ReportMetric(t, "take-ms")
	b.ReportMetric(c, "cp-a-ms")
	b.ReportMetric(t/c, "take/cp-a")
	b.ReportMetric(float64(cloned), "cloned-files")
	b.Logf("rounds %d (cp -a first in rounds 1, 3, …); take ms %v; cp -a ms %v", len(takes), takes, cps)
}

// warm reads every file of the tree into the page cache.
func warm(b *testing.B, root string) {
	b.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(io.Discard, f)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// genRepo makes a git work tree with real history: gitFiles text files
// of about 3 KB in 80 folders and gitCommits commits (the first adds them
// all, each later one rewrites two), written with git fast-import (one
// pack, as a clone has); then, as in a workspace in use, five files
// changed and five untracked ones. It returns the work tree.
func genRepo(b *testing.B, root string) string {
	b.Helper()
	const gitFiles, gitCommits = 2000, 3000
	ws := filepath.Join(root, "repo")
	gitIn(b, root, "init", "-q", "-b", "main", ws)
	rng := rand.New(rand.NewPCG(7, 0))
	line := func() string {
		words := []string{"func", "return", "err", "if", "nil", "for", "range", "value", "index", "config", "buffer", "state"}
		var sb strings.Builder
		for range 6 + rng.IntN(6) {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return sb.String() + "\n"
	}
	content := func(i, v int) string {
		var sb strings.Builder
		fmt.Fprintf(&sb, "// file %d, version %d\n", i, v)
		for sb.Len() < 3000 {
			sb.WriteString(line())
		}
		return sb.String()
	}
	path := func(i int) string { return fmt.Sprintf("pkg%02d/file%04d.go", i%80, i) }
	var stream strings.Builder
	inline := func(p, data string) {
		fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", p, len(data), data)
	}
	for c := 1; c <= gitCommits; c++ {
		msg := fmt.Sprintf("commit %d", c)
		fmt.Fprintf(&stream, "commit refs/heads/main\nmark :%d\ncommitter t <t@t> %d +0000\ndata %d\n%s\n", c, 1_700_000_000+c*60, len(msg), msg)
		if c > 1 {
			fmt.Fprintf(&stream, "from :%d\n", c-1)
			for range 2 {
				i := rng.IntN(gitFiles)
				inline(path(i), content(i, c))
			}
		} else {
			for i := range gitFiles {
				inline(path(i), content(i, 0))
			}
		}
		stream.WriteString("\n")
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Stdin = ws, strings.NewReader(stream.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v: %s", err, out)
	}
	gitIn(b, ws, "reset", "-q", "--hard", "main")
	for i := range 5 {
		writeFileB(b, ws, path(i*7), content(i*7, -1))
		writeFileB(b, ws, fmt.Sprintf("notes/untracked%d.md", i), content(i, -2))
	}
	return ws
}

func writeFileB(b *testing.B, root, rel, data string) {
	b.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSnapshotWithGitVsCpA measures a child's whole snapshot (the
// copy, its base kept, the manifest saved, its own git repository with a
// base commit) of a work tree with a real .git of 3,000 commits against
// `cp -a` of the same tree, .git included, in the same run, alternating
// which goes first; medians over SNAPSHOT_BENCH_ROUNDS rounds (default 7).
func BenchmarkSnapshotWithGitVsCpA(b *testing.B) {
	if testing.Short() {
		b.Skip("generates a repository of 3,000 commits")
	}
	needGit(b)
	cp, err := exec.LookPath("cp")
	if err != nil {
		b.Skip("no cp")
	}
	maxRounds := 7
	if n, err := strconv.Atoi(os.Getenv("SNAPSHOT_BENCH_ROUNDS")); err == nil && n > 0 {
		maxRounds = n
	}
	root := b.TempDir()
	src := genRepo(b, root)
	syscall.Sync()
	var takes, cps []float64
	ms := func(f func()) float64 {
		start := time.Now()
		f()
		return float64(time.Since(start).Microseconds()) / 1000
	}
	round := 0
	for b.Loop() {
		if round >= maxRounds {
			continue
		}
		dstTake := filepath.Join(root, fmt.Sprintf("take%d", round), "workspace")
		baseDir := filepath.Join(root, fmt.Sprintf("take%d", round), "base")
		dstCp := filepath.Join(root, fmt.Sprintf("cp%d", round))
		var tk, cpa float64
		runTake := func() {
			tk = ms(func() {
				m, err := TakeWith(context.Background(), src, dstTake, Options{BaseDir: baseDir, Git: true})
				if err != nil {
					b.Fatal(err)
				}
				if m.Git == nil || m.Git.Base == m.Git.Parent {
					b.Fatal("no git view with a base commit")
				}
			})
		}
		runCp := func() {
			cpa = ms(func() {
				if out, err := exec.Command(cp, "-a", src, dstCp).CombinedOutput(); err != nil {
					b.Fatalf("cp -a: %v: %s", err, out)
				}
			})
		}
		if round%2 == 0 {
			runCp()
			runTake()
		} else {
			runTake()
			runCp()
		}
		round++
		takes, cps = append(takes, tk), append(cps, cpa)
		b.StopTimer()
		syscall.Sync()
		b.StartTimer()
	}
	t, c := median(takes), median(cps)
	b.ReportMetric(t*1e6, "ns/op")
	b.ReportMetric(t, "take-ms")
	b.ReportMetric(c, "cp-a-ms")
	b.ReportMetric(t/c, "take/cp-a")
	b.Logf("rounds %d; take ms %v; cp -a ms %v", len(takes), takes, cps)
}

// BenchmarkGitView measures what a child's repository adds to a snapshot:
// Take of the tree of BenchmarkSnapshotWithGitVsCpA with its repository
// (Options.Git) and without, base kept either way, alternating which goes
// first; git-cpu-ms is the difference of their median CPU times (this
// process's and its git processes': steadier than wall time on a busy
// machine), git-wall-ms that of their median wall times.
func BenchmarkGitView(b *testing.B) {
	if testing.Short() {
		b.Skip("generates a repository of 3,000 commits")
	}
	needGit(b)
	root := b.TempDir()
	src := genRepo(b, root)
	syscall.Sync()
	cpu := func() time.Duration {
		var self, children syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
		_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
		total := time.Duration(0)
		for _, ru := range []syscall.Rusage{self, children} {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		return total
	}
	var withCPU, withoutCPU, withWall, withoutWall []float64
	i := 0
	take := func(git bool) {
		dst := filepath.Join(root, fmt.Sprintf("take%d-%v", i, git))
		c0, w0 := cpu(), time.Now()
		m, err := TakeWith(context.Background(), src, filepath.Join(dst, "workspace"), Options{BaseDir: filepath.Join(dst, "base"), Git: git})
		c, w := float64((cpu()-c0).Microseconds())/1000, float64(time.Since(w0).Microseconds())/1000
		if err != nil {
			b.Fatal(err)
		}
		if git != (m.Git != nil) {
			b.Fatalf("git view %v, asked %v", m.Git, git)
		}
		if git {
			withCPU, withWall = append(withCPU, c), append(withWall, w)
		} else {
			withoutCPU, withoutWall = append(withoutCPU, c), append(withoutWall, w)
		}
	}
	for b.Loop() {
		if i%2 == 0 {
			take(true)
			take(false)
		} else {
			take(false)
			take(true)
		}
		i++
	}
	b.ReportMetric(median(withCPU)-median(withoutCPU), "git-cpu-ms")
	b.ReportMetric(median(withWall)-median(withoutWall), "git-wall-ms")
	b.ReportMetric(median(withCPU), "take-cpu-ms")
	b.Logf("cpu ms with git %v, without %v; wall ms with %v, without %v", withCPU, withoutCPU, withWall, withoutWall)
}
