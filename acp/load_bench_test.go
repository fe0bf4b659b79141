package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider"
	"github.com/pixir-go/pixir/runtime/provider/scripted"
	"github.com/pixir-go/pixir/tools"
)

// longSessionEvents is the length of the long session of the load and
// turn-cost benchmarks: 100,000 events, about 59 MB of Log.
const longSessionEvents = 100_000

// writeLongSession writes a session of n canonical events into ws, as
// turns of a coding session: a prompt, reasoning, a tool call with its
// permission decision and a file read back, an answer, usage. It returns
// the session id and the Log's path.
func writeLongSession(tb testing.TB, ws string, n int) (string, string) {
	tb.Helper()
	id := "01a2b3c4-long-session"
	dir := runtime.SessionsDir(ws)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, id+".ndjson")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	ts := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	file := strings.Repeat("func (s *Session) Prompt(ctx context.Context, p Prompt) error { return nil }\n", 30)
	answer := strings.Repeat("The function returns nil on every path; the caller checks the Log instead. ", 8)
	seq := 0
	add := func(typ runtime.EventType, data any) {
		if seq >= n {
			return
		}
		seq++
		raw, err := json.Marshal(data)
		if err != nil {
			tb.Fatal(err)
		}
		line, err := json.Marshal(runtime.Event{ID: fmt.Sprintf("019a6f0e-%04x-7000-8000-%012x", seq>>16, seq), SessionID: id, Seq: int64(seq),
			TS: ts.Add(time.Duration(seq) * time.Second), Type: typ, Data: raw})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			tb.Fatal(err)
		}
	}
	for turn := 0; seq < n; turn++ {
		call := fmt.Sprintf("call_%d", turn)
		args := json.RawMessage(fmt.Sprintf(`{"path":"runtime/file%d.go"}`, turn%50))
		add(runtime.EventUserMessage, runtime.UserMessageData{Text: fmt.Sprintf("Turn %d: read runtime/file%d.go and tell me what Prompt returns.", turn, turn%50)})
		add(runtime.EventReasoning, runtime.ReasoningData{Text: "I should read the file before answering; the answer is in the code, not in my memory."})
		add(runtime.EventAssistantMessage, runtime.AssistantMessageData{Text: "Reading it.", ToolCalls: []provider.ToolCall{{ID: call, Name: "read", Arguments: args}}})
		add(runtime.EventProviderUsage, runtime.ProviderUsageData{Provider: "scripted", Model: "scripted", Usage: provider.Usage{InputTokens: 1200, OutputTokens: 40, ContextWindow: 128000}})
		add(runtime.EventToolCall, runtime.ToolCallData{ToolCallID: call, Name: "read", Arguments: args, Title: fmt.Sprintf("Read runtime/file%d.go", turn%50),
			Kind: tools.KindRead, Posture: tools.PostureRead, Locations: []tools.Location{{Path: fmt.Sprintf("runtime/file%d.go", turn%50)}}})
		add(runtime.EventPermissionDecision, runtime.PermissionDecisionData{ToolCallID: call, Tool: "read", Mode: runtime.ModeAuto, Decision: "allowed", Source: "mode"})
		add(runtime.EventToolResult, runtime.ToolResultData{ToolCallID: call, Name: "read", Result: tools.OK(map[string]any{"content": file, "lines": 30}), ElapsedMS: 1})
		add(runtime.EventAssistantMessage, runtime.AssistantMessageData{Text: answer})
		add(runtime.EventProviderUsage, runtime.ProviderUsageData{Provider: "scripted", Model: "scripted", Usage: provider.Usage{InputTokens: 1800, OutputTokens: 120, ContextWindow: 128000}})
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return id, path
}

// decodeEveryLine is the yardstick of the load: a Go program that reads
// the Log and decodes every line, its data included, into Go values.
func decodeEveryLine(tb testing.TB, path string) (time.Duration, int) {
	tb.Helper()
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	lines := 0
	for sc.Scan() {
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatal(err)
		}
		lines++
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return time.Since(start), lines
}

// loadPixir is a Pixir ACP server over pipes in a fresh runtime, as a new
// editor window starts one, with the scripted provider.
func loadPixir(tb testing.TB, home string) *benchPixir {
	tb.Helper()
	rt := runtime.New(runtime.Config{Home: home, Provider: scripted.NewDefault(), Model: "scripted", Tools: tools.Builtins()})
	reqR, reqW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	conn := NewServer(rt, Options{}).Serve(reqR, outW, reqR.Close)
	go func() { <-conn.Done(); outW.Close() }()
	return &benchPixir{in: reqW, out: bufio.NewReaderSize(outR, 1<<20), outR: outR, conn: conn, rt: rt}
}

// load sends session/load and reads the replay to its response: how long
// the first session/update took, how long the whole load, and how many
// updates came.
func (p *benchPixir) load(tb testing.TB, id, ws string) (first, total time.Duration, updates int) {
	tb.Helper()
	p.nextID++
	start := time.Now()
	if _, err := fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"sessionId":%q,"cwd":%q,"mcpServers":[]}}`+"\n",
		p.nextID, MethodSessionLoad, id, ws); err != nil {
		tb.Fatal(err)
	}
	want := fmt.Sprintf(`"id":%d,`, p.nextID)
	for {
		line, err := p.out.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			tb.Fatal("a line longer than 1 MiB")
		}
		if err != nil {
			tb.Fatalf("reading the replay: %v", err)
		}
		if bytes.Contains(line, []byte(`"method":"session/update"`)) {
			if updates == 0 {
				first = time.Since(start)
			}
			updates++
			continue
		}
		if bytes.Contains(line, []byte(want)) {
			if bytes.Contains(line, []byte(`"error"`)) {
				tb.Fatalf("session/load answered %s", line)
			}
			return first, time.Since(start), updates
		}
	}
}

// BenchmarkLoadLongSession measures session/load of a 100,000-event Log
// (59 MB) through the ACP server, each in a fresh runtime as a new editor
// window does, until the response: the time to the first session/update
// and the whole load. Its yardstick runs in the same benchmark, taking
// turns with it: a Go program that reads the Log and decodes every line.
// Targets: the first update under 100 ms, the whole load within 1.5× the
// yardstick.
func BenchmarkLoadLongSession(b *testing.B) {
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	id, path := writeLongSession(b, ws, longSessionEvents)
	var floor, load, first time.Duration
	b.ResetTimer()
	for range b.N {
		d, lines := decodeEveryLine(b, path)
		if lines != longSessionEvents {
			b.Fatalf("the Log has %d lines, want %d", lines, longSessionEvents)
		}
		floor += d

		px := loadPixir(b, filepath.Join(dir, "home"))
		px.call(b, MethodInitialize, `{"protocolVersion":1}`)
		f, t, updates := px.load(b, id, ws)
		if updates < longSessionEvents/2 {
			b.Fatalf("the replay sent %d updates", updates)
		}
		px.close()
		first += f
		load += t
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(first.Milliseconds())/n, "first-update-ms")
	b.ReportMetric(float64(load.Milliseconds())/n, "load-ms")
	b.ReportMetric(float64(floor.Milliseconds())/n, "decode-ms")
	b.ReportMetric(float64(load)/float64(floor), "ratio")
	if fi, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(fi.Size())/(1<<20), "log-MiB")
	}
}

// BenchmarkTurnInLongSession measures one more turn (a prompt, the
// scripted answer, the response) in a session of 100,000 events against
// the same turn in a fresh session, taking turns in the same benchmark. A
// turn's cost must not grow with the session's length: ratio ≈ 1.
func BenchmarkTurnInLongSession(b *testing.B) {
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	id, _ := writeLongSession(b, ws, longSessionEvents)
	px := loadPixir(b, filepath.Join(dir, "home"))
	defer px.close()
	px.call(b, MethodInitialize, `{"protocolVersion":1}`)
	px.load(b, id, ws)
	res, _ := px.call(b, MethodSessionNew, fmt.Sprintf(`{"cwd":%q,"mcpServers":[]}`, ws))
	var fresh struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &fresh); err != nil {
		b.Fatal(err)
	}
	turn := func(sid string) time.Duration {
		start := time.Now()
		px.call(b, MethodSessionPrompt, fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"hello"}]}`, sid))
		return time.Since(start)
	}
	var long, short time.Duration
	b.ResetTimer()
	for range b.N {
		long += turn(id)
		short += turn(fresh.SessionID)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(long.Microseconds())/n/1000, "long-ms/turn")
	b.ReportMetric(float64(short.Microseconds())/n/1000, "fresh-ms/turn")
	b.ReportMetric(float64(long)/float64(short), "ratio")
}
