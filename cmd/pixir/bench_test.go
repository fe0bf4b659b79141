package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pixir-go/pixir/workflows/workflowstest"
)

// The benchmarks here time the built pixir binary against a yardstick run
// in the same benchmark, turn about: testdata/minimalagent, the least an
// ACP agent in Go can do (decode each line once with encoding/json, append
// a prompt's line once to a log file, reply). The machines are shared and
// noisy, so the figure to read is the median ratio of the pairs.

var (
	minimalOnce sync.Once
	minimalBin  string
	minimalErr  error
)

// minimalAgent builds the yardstick once per test binary.
func minimalAgent(b *testing.B) string {
	b.Helper()
	minimalOnce.Do(func() {
		minimalBin = filepath.Join(filepath.Dir(pixirBin), "minimalagent")
		build := exec.Command("go", "build", "-o", minimalBin, "./testdata/minimalagent")
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // built as pixir is
		out, err := build.CombinedOutput()
		if err != nil {
			minimalErr = fmt.Errorf("building the minimal agent: %w\n%s", err, out)
		}
	})
	if minimalErr != nil {
		b.Fatal(minimalErr)
	}
	return minimalBin
}

// benchAgent is one agent process spoken to over real pipes.
type benchAgent struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startBenchAgent(b *testing.B, env []string, bin string, args ...string) *benchAgent {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return &benchAgent{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
}

// results writes input and reads until n results (or errors) came back;
// notifications on the way are skipped. It returns the replies.
func (a *benchAgent) results(b *testing.B, input string, n int) string {
	b.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := io.WriteString(a.stdin, input)
		errc <- err
	}()
	var last string
	for answered := 0; answered < n; {
		line, err := a.out.ReadString('\n')
		if err != nil {
			b.Fatalf("reading replies: %v", err)
		}
		if strings.Contains(line, `"error"`) && !strings.Contains(line, `"method"`) {
			b.Fatalf("the agent answered an error: %.300s", line)
		}
		if strings.Contains(line, `"result"`) && !strings.Contains(line, `"method"`) {
			answered++
			last += line
		}
	}
	if err := <-errc; err != nil {
		b.Fatalf("writing: %v", err)
	}
	return last
}

// stop closes stdin, waits for the process and returns the CPU time it
// used (user and system, all threads).
func (a *benchAgent) stop(b *testing.B) time.Duration {
	b.Helper()
	_ = a.stdin.Close()
	if err := a.cmd.Wait(); err != nil {
		b.Fatalf("agent exited: %v", err)
	}
	return a.cmd.ProcessState.UserTime() + a.cmd.ProcessState.SystemTime()
}

// pageFaults is how many page faults the ended agent took (minor ones:
// its pages were in memory or fresh), or 0 where the system does not say.
// A start's page faults are the largest part of what it costs beyond the
// code it runs, and unlike its time they hardly move with the machine's
// load: a change that touches fewer pages shows here when its gain in time
// is within the noise.
func (a *benchAgent) pageFaults() int64 {
	if ru, ok := a.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Minflt
	}
	return 0
}

// peakRSS is the agent's peak resident memory so far in bytes (VmHWM in
// /proc/PID/status), or 0 where there is no /proc. Not ru_maxrss when it
// ends: os/exec starts a child with vfork, and a child's ru_maxrss counts
// the address space it shared with its parent until its exec, so it
// would report the benchmark's own memory, which holds the prompt twice.
func (a *benchAgent) peakRSS(b *testing.B) int64 {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(status)) {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("reading VmHWM %q: %v", line, err)
			}
			return n << 10
		}
	}
	return 0
}

func handshake(ws string) string {
	return `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + ws + `","mcpServers":[]}}` + "\n"
}

// pairs collects the samples of pixir and the yardstick, turn about.
type pairs struct{ pixir, minimal []time.Duration }

func (p *pairs) report(b *testing.B) {
	b.ReportMetric(median(p.pixir), "pixir-ms")
	b.ReportMetric(median(p.minimal), "minimal-ms")
	b.ReportMetric(medianRatio(*p), "ratio")
	b.ReportMetric(0, "ns/op")
}

// medianRatio is the median of the pairs' ratios pixir/minimal.
func medianRatio(p pairs) float64 {
	ratios := make([]float64, len(p.pixir))
	for i := range p.pixir {
		ratios[i] = float64(p.pixir[i]) / float64(p.minimal[i])
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2]
}

func median(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// BenchmarkSpawnToSessionNew measures what an editor waits for before it can
// prompt: start the agent, answer initialize, answer session/new; pixir and
// the minimal agent turn about. Target: ratio ≤ 1.5.
//
// PIXIR_BENCH_BASELINE names another pixir binary (main's, built aside with
// make build) spawned in the same iterations against the same yardstick:
// its ratios (baseline-ratio, baseline-cpu-ratio) are before, this one's
// after, measured in the same minutes.
func BenchmarkSpawnToSessionNew(b *testing.B) {
	minimal := minimalAgent(b)
	baseline := os.Getenv("PIXIR_BENCH_BASELINE")
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "PIXIR_HOME="+filepath.Join(dir, "home"), "PIXIR_PROVIDER=", "PIXIR_SCRIPT=")
	input := handshake(ws)
	var p, cpu, base, baseCPU pairs
	var faults, minimalFaults, baseFaults []int64
	spawn := func(bin string, args ...string) (time.Duration, time.Duration, int64) {
		start := time.Now()
		a := startBenchAgent(b, env, bin, args...)
		a.results(b, input, 2)
		d := time.Since(start)
		b.StopTimer()
		used := a.stop(b)
		b.StartTimer()
		return d, used, a.pageFaults()
	}
	var yardstick, yardstickCPU time.Duration
	turns := []func(){
		func() {
			d, used, pf := spawn(pixirBin, "acp")
			p.pixir, cpu.pixir, faults = append(p.pixir, d), append(cpu.pixir, used), append(faults, pf)
		},
		func() {
			var pf int64
			yardstick, yardstickCPU, pf = spawn(minimal)
			minimalFaults = append(minimalFaults, pf)
		},
	}
	if baseline != "" {
		turns = append(turns, func() {
			d, used, pf := spawn(baseline, "acp")
			base.pixir, baseCPU.pixir, baseFaults = append(base.pixir, d), append(baseCPU.pixir, used), append(baseFaults, pf)
		})
	}
	b.ResetTimer()
	for i := range b.N {
		// Rotate which goes first, so none always meets a warmer cache.
		for k := range turns {
			turns[(i+k)%len(turns)]()
		}
		p.minimal, cpu.minimal = append(p.minimal, yardstick), append(cpu.minimal, yardstickCPU)
		if baseline != "" {
			base.minimal, baseCPU.minimal = append(base.minimal, yardstick), append(baseCPU.minimal, yardstickCPU)
		}
	}
	b.StopTimer()
	p.report(b)
	b.ReportMetric(medianRatio(cpu), "cpu-ratio")
	b.ReportMetric(medianCount(faults), "pixir-faults")
	b.ReportMetric(medianCount(minimalFaults), "minimal-faults")
	if baseline != "" {
		b.ReportMetric(medianRatio(base), "baseline-ratio")
		b.ReportMetric(medianRatio(baseCPU), "baseline-cpu-ratio")
		b.ReportMetric(median(base.pixir), "baseline-ms")
		b.ReportMetric(medianCount(baseFaults), "baseline-faults")
	}
}

func medianCount(n []int64) float64 {
	s := slices.Clone(n)
	slices.Sort(s)
	return float64(s[len(s)/2])
}

// pastedLog is n bytes of text that looks like a pasted log file: lines with
// quotes, tabs and some non-ASCII, so JSON escaping has work to do.
func pastedLog(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"INFO", "WARN", "request", "path=\"/api/v1/items\"", "user=élodie", "took", "ms", "\tstatus=200", "→", "retry", "ok"}
	var sb strings.Builder
	sb.Grow(n + 64)
	for sb.Len() < n {
		fmt.Fprintf(&sb, "2026-11-22T10:%02d:%02dZ", r.IntN(60), r.IntN(60))
		for range 8 {
			sb.WriteByte(' ')
			sb.WriteString(words[r.IntN(len(words))])
		}
		sb.WriteByte('\n')
	}
	return sb.String()[:n]
}

const largePromptScript = `
[[rule]]
match = "read this"
  [[rule.reply]]
  text = "Read it."
`

// BenchmarkLargePrompt measures an editor pasting a large file into a
// prompt: from the first byte of the session/prompt line written to its
// reply read, pixir (a whole turn on the scripted provider: the prompt
// decoded, recorded in the Log, answered) against the minimal agent, turn
// about. It reports pixir's peak resident memory over the line's size.
// Targets: ratio ≤ 2; peak/line ≤ 3 at 48 MiB (see docs/BENCHMARKS.md
// for where the peak comes from).
func BenchmarkLargePrompt(b *testing.B) {
	minimal := minimalAgent(b)
	for _, size := range []int{8 << 20, 48 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			dir := b.TempDir()
			ws := filepath.Join(dir, "ws")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				b.Fatal(err)
			}
			script := filepath.Join(dir, "script.toml")
			if err := os.WriteFile(script, []byte(largePromptScript), 0o644); err != nil {
				b.Fatal(err)
			}
			env := append(os.Environ(), "PIXIR_HOME="+filepath.Join(dir, "home"), "PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=")
			text := jsonString(pastedLog(size))
			prompt := func(sessionID string) string {
				return `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sessionID +
					`","prompt":[{"type":"text","text":"read this"},{"type":"resource","resource":{"uri":"file:///pasted.log","mimeType":"text/plain","text":` +
					text + `}}]}}` + "\n"
			}
			var p, cpu pairs
			var peaks, minimalPeaks []int64
			var lineBytes int
			run := func(bin string, args ...string) (time.Duration, int64, time.Duration) {
				b.StopTimer()
				a := startBenchAgent(b, env, bin, args...)
				reply := a.results(b, handshake(ws), 2)
				line := prompt(sessionIDOf(b, reply))
				lineBytes = len(line)
				b.StartTimer()
				start := time.Now()
				a.results(b, line, 1)
				d := time.Since(start)
				b.StopTimer()
				peak := a.peakRSS(b)
				used := a.stop(b)
				b.StartTimer()
				return d, peak, used
			}
			// At most maxPairs pairs whatever -benchtime asks (make bench
			// asks 50): each moves the line through both agents.
			const maxPairs = 6
			b.ResetTimer()
			for i := range min(b.N, maxPairs) {
				pixir := func() {
					d, peak, used := run(pixirBin, "acp", "--script", script)
					p.pixir, peaks, cpu.pixir = append(p.pixir, d), append(peaks, peak), append(cpu.pixir, used)
				}
				yardstick := func() {
					d, peak, used := run(minimal)
					p.minimal, minimalPeaks, cpu.minimal = append(p.minimal, d), append(minimalPeaks, peak), append(cpu.minimal, used)
				}
				if i%2 == 0 {
					pixir()
					yardstick()
				} else {
					yardstick()
					pixir()
				}
			}
			b.StopTimer()
			p.report(b)
			b.ReportMetric(medianRatio(cpu), "cpu-ratio")
			if peak, minimalPeak := slices.Max(peaks), slices.Max(minimalPeaks); peak > 0 {
				b.ReportMetric(float64(peak)/(1<<20), "pixir-peak-MiB")
				b.ReportMetric(float64(peak)/float64(lineBytes), "peak/line")
				b.ReportMetric(float64(minimalPeak)/float64(lineBytes), "minimal-peak/line")
			}
		})
	}
}

func sessionIDOf(b *testing.B, reply string) string {
	b.Helper()
	const key = `"sessionId":"`
	i := strings.Index(reply, key)
	if i < 0 {
		b.Fatalf("no sessionId in %s", reply)
	}
	rest := reply[i+len(key):]
	return rest[:strings.IndexByte(rest, '"')]
}

// BenchmarkRunWorkflowVsLogs is `pixir run --workflow` of 1,000 step runs
// (PIXIR_BENCH_STEPS for more) headless on a scripted provider that
// answers at once, against the yardstick: a program that only writes the
// same Logs (the parent's and every child's, the same lines, one write
// each, every file created in its directory), run after it in the same
// iteration. The ratios of wall time and of CPU time (pixir's process
// against the yardstick's writing) are what Pixir costs beyond its
// evidence (target ≤ 2). Two shapes: a random DAG of read-only steps, and
// the same number of runs made by control flow (a fan-out over half of
// them, loops iterating ten times for the other half).
//
// Both sides' folders are on tmpfs (/dev/shm) when it is writable and the
// caller did not set TMPDIR: on ext4 the yardstick's own CPU drifts about
// 9× over consecutive runs (journal and page-cache work), which measures
// the disk, not Pixir. The on-tmpfs metric says where they were.
// PIXIR_BENCH_BASELINE names another pixir binary (main's, built aside) to
// run in the same iterations, turn about with this one, against the same
// yardstick: before and after in the same minutes.
func BenchmarkRunWorkflowVsLogs(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("PIXIR_BENCH_STEPS")); err == nil && v > 0 {
		n = v
	}
	b.Run("dag", func(b *testing.B) { benchRunVsLogs(b, workflowstest.RandomDAG(n), instantScript, n) })
	flow, script, runs := benchControlFlow(n)
	b.Run("controlflow", func(b *testing.B) { benchRunVsLogs(b, flow, script, runs) })
}

// instantScript answers every model call at once.
const instantScript = "[[rule]]\nname = \"any\"\nmatch = '.'\n  [[rule.reply]]\n  text = 'Done.'\n"

// benchRunVsLogs runs the workflow spec of runs step runs on script, and
// the yardstick after it, in each iteration.
func benchRunVsLogs(b *testing.B, workflow []byte, script string, runs int) {
	dir, onTmpfs := benchDir(b)
	b.Logf("folders in %s (tmpfs: %v)", dir, onTmpfs)
	spec, scriptFile := filepath.Join(dir, "wf.json"), filepath.Join(dir, "instant.toml")
	if err := os.WriteFile(spec, workflow, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(scriptFile, []byte(script), 0o644); err != nil {
		b.Fatal(err)
	}
	baseline := os.Getenv("PIXIR_BENCH_BASELINE")
	var wall, cpu, baseCPU pairs
	var runMS []time.Duration
	for i := range b.N {
		// run is one pixir run --workflow of bin in a fresh workspace: its
		// wall and CPU time (user + system) and the workspace.
		run := func(bin, name string) (took, used time.Duration, ws string) {
			ws = filepath.Join(dir, fmt.Sprintf("%s%d", name, i))
			if err := os.MkdirAll(ws, 0o755); err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command(bin, "run", "--script", scriptFile, "--workflow", spec)
			cmd.Dir = ws
			cmd.Env = append(os.Environ(), "PIXIR_HOME="+filepath.Join(dir, "home"), "PIXIR_PROVIDER=", "PIXIR_SCRIPT=")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			start := time.Now()
			out, err := cmd.Output()
			took = time.Since(start)
			if err != nil || !strings.Contains(string(out), "COMPLETED") {
				b.Fatalf("%s run: %v\n%.500s\n%.2000s", bin, err, out, stderr.String())
			}
			return took, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), ws
		}
		var baseUsed time.Duration
		var baseWS string
		if baseline != "" && i%2 == 1 { // turn about: the baseline first every other iteration
			_, baseUsed, baseWS = run(baseline, "base")
		}
		d, used, ws := run(pixirBin, "ws")
		if baseline != "" && i%2 == 0 {
			_, baseUsed, baseWS = run(baseline, "base")
		}
		wall.pixir, cpu.pixir = append(wall.pixir, d), append(cpu.pixir, used)
		runMS = append(runMS, d)

		b.StopTimer()
		logs := readBenchLogs(b, filepath.Join(ws, ".pixir"))
		if len(logs) != runs+1 {
			b.Fatalf("%d Logs, want %d", len(logs), runs+1)
		}
		into := filepath.Join(dir, fmt.Sprintf("yard%d", i))
		runtime.GC()
		b.StartTimer()
		start, before := time.Now(), processCPU()
		writeBenchLogs(b, into, logs)
		wall.minimal, cpu.minimal = append(wall.minimal, time.Since(start)), append(cpu.minimal, processCPU()-before)
		if baseline != "" {
			baseCPU.pixir, baseCPU.minimal = append(baseCPU.pixir, baseUsed), append(baseCPU.minimal, cpu.minimal[i])
		}
		// On tmpfs the folders are memory: a benchmark killed before its
		// cleanup leaves only the last iteration's behind.
		b.StopTimer()
		for _, d := range []string{ws, baseWS, into} {
			if d != "" {
				if err := os.RemoveAll(d); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(medianRatio(wall), "wall-ratio")
	b.ReportMetric(medianRatio(cpu), "cpu-ratio")
	b.ReportMetric(median(runMS), "run-ms")
	b.ReportMetric(median(cpu.pixir), "run-cpu-ms")
	b.ReportMetric(median(wall.minimal), "logs-ms")
	b.ReportMetric(median(cpu.minimal), "logs-cpu-ms")
	if baseline != "" {
		b.ReportMetric(medianRatio(baseCPU), "baseline-cpu-ratio")
		b.ReportMetric(median(baseCPU.pixir), "baseline-cpu-ms")
	}
	onTmpfsMetric := 0.0
	if onTmpfs {
		onTmpfsMetric = 1
	}
	b.ReportMetric(onTmpfsMetric, "on-tmpfs")
	b.ReportMetric(0, "ns/op")
}

// benchDir is the benchmark's folder: beneath /dev/shm when the caller did
// not choose one (TMPDIR unset) and it is writable, else b.TempDir(); and
// whether it is on tmpfs.
func benchDir(b *testing.B) (string, bool) {
	dir := ""
	if os.Getenv("TMPDIR") == "" {
		if d, err := os.MkdirTemp("/dev/shm", "pixir-bench-"); err == nil {
			dir = d
			b.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	if dir == "" {
		dir = b.TempDir()
	}
	var st syscall.Statfs_t
	const tmpfsMagic = 0x01021994
	return dir, syscall.Statfs(dir, &st) == nil && st.Type == tmpfsMagic
}

// benchControlFlow is the JSON spec of about n read-only step runs made
// by control flow, its script and its number of runs: a step lists n/2
// items (at most 1,000, the cap of a fan-out) and a step fans out over
// them; loops of ten independent steps iterate ten times, never satisfied
// (their first step's verdict is never ACCEPTABLE), for the rest.
func benchControlFlow(n int) (spec []byte, script string, runs int) {
	items := min(n/2, 1000)
	const perLoop, iterations = 10, 10
	loops := max((n-items)/(perLoop*iterations), 1)
	steps := []map[string]any{
		{"id": "split", "task": "[split] List the parts.", "output_schema": map[string]any{"type": "object", "required": []string{"tasks"},
			"properties": map[string]any{"tasks": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}},
		{"id": "part", "depends_on": []string{"split"}, "for_each": map[string]any{"step": "split", "path": "/tasks", "max_items": items},
			"task": "Do part ${index}: ${item}."},
	}
	var loopSpecs []map[string]any
	for l := range loops {
		var ids []string
		for s := range perLoop {
			st := map[string]any{"id": fmt.Sprintf("l%ds%d", l, s), "task": fmt.Sprintf("[loop] Review part %d of area %d.", s, l)}
			if s == 0 {
				st["output_schema"] = map[string]any{"type": "object", "required": []string{"verdict"},
					"properties": map[string]any{"verdict": map[string]any{"type": "string"}}}
			}
			steps, ids = append(steps, st), append(ids, st["id"].(string))
		}
		loopSpecs = append(loopSpecs, map[string]any{"id": fmt.Sprintf("loop%d", l), "steps": ids, "max_iterations": iterations,
			"until": map[string]any{"step": ids[0], "path": "/verdict", "equals": "ACCEPTABLE"}, "on_exhausted": "proceed"})
	}
	spec, _ = json.Marshal(map[string]any{"name": "bench-flow", "max_concurrency": 8, "steps": steps, "loops": loopSpecs})
	tasks := make([]string, items)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("t%d", i+1)
	}
	listed, _ := json.Marshal(map[string]any{"status": "checkpoint_ready", "summary": "listed", "payload": map[string]any{"tasks": tasks}})
	reviewed, _ := json.Marshal(map[string]any{"status": "checkpoint_ready", "summary": "needs work", "payload": map[string]any{"verdict": "NEEDS WORK"}})
	script = `
[[rule]]
name = "the split"
match = '\A\[split\]'
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '` + string(listed) + `'
  [[rule.reply]]
  text = "listed"

[[rule]]
name = "the reviewer"
match = '\A\[loop\] Review part 0 '
  [[rule.reply]]
  [[rule.reply.tool_calls]]
  name = "report_checkpoint"
  arguments_json = '` + string(reviewed) + `'
  [[rule.reply]]
  text = "reviewed"
` + instantScript
	return spec, script, 1 + items + loops*perLoop*iterations
}

// benchLog is a Log as the yardstick writes it again.
type benchLog struct {
	rel   string
	lines [][]byte
}

// readBenchLogs reads every Log (.ndjson) beneath dir.
func readBenchLogs(b *testing.B, dir string) []benchLog {
	var out []benchLog
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".ndjson") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		l := benchLog{rel: rel}
		for line := range strings.SplitAfterSeq(string(data), "\n") {
			if line != "" {
				l.lines = append(l.lines, []byte(line))
			}
		}
		out = append(out, l)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// writeBenchLogs is the yardstick: the least a program does to leave the
// same Logs.
func writeBenchLogs(b *testing.B, dir string, logs []benchLog) {
	for _, l := range logs {
		p := filepath.Join(dir, l.rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range l.lines {
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// processCPU is the CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
