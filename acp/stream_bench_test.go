package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider/openai"
)

// BenchmarkStreamRelay measures what Pixir adds to each streamed delta of a
// long answer, on the whole path an editor sees: an OpenAI-compatible SSE
// stream read by the openai provider, the turn, its events and the
// presenter, written as session/update lines to a pipe. Its yardstick runs
// in the same benchmark, interleaved: a minimal Go relay that reads the
// same stream from the same server, decodes each chunk and writes the same
// notification line to a pipe. The ratio of the two per-delta costs must
// stay flat as the answer grows (≤ 2 at 50,000 deltas).
func BenchmarkStreamRelay(b *testing.B) {
	for _, n := range []int{2000, 50000} {
		b.Run(fmt.Sprintf("deltas=%d", n), func(b *testing.B) {
			body := sseAnswer(n)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, body)
			}))
			defer srv.Close()
			px := newBenchPixir(b, srv.URL+"/v1")
			defer px.close()

			// The two sides take turns, one answer per iteration (both
			// when there is only one), so that noise from the rest of the
			// machine falls on both alike.
			var pixirTime, relayTime time.Duration
			var pixirRuns, relayRuns int
			b.ResetTimer()
			for i := range b.N {
				if i%2 == 0 || b.N == 1 {
					relayTime += relayOnce(b, srv.URL+"/v1", n)
					relayRuns++
				}
				if i%2 == 1 || b.N == 1 {
					pixirTime += px.prompt(b, n)
					pixirRuns++
				}
			}
			b.StopTimer()
			pixirPer := float64(pixirTime.Nanoseconds()) / float64(pixirRuns*n)
			relayPer := float64(relayTime.Nanoseconds()) / float64(relayRuns*n)
			b.ReportMetric(pixirPer, "pixir-ns/delta")
			b.ReportMetric(relayPer, "relay-ns/delta")
			b.ReportMetric(pixirPer/relayPer, "ratio")
		})
	}
}

// sseAnswer is a streamed answer of n deltas as an OpenAI-compatible
// reasoning model sends it: the first half reasoning (reasoning_content),
// the second half text.
func sseAnswer(n int) string {
	words := []string{" the", " runtime", " streams", " each", " token", " of", " a", " long", " answer"}
	var b strings.Builder
	b.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1759312345,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for i := range n {
		field := "content"
		if i < n/2 {
			field = "reasoning_content"
		}
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1759312345,"model":"m","choices":[{"index":0,"delta":{%q:%q},"finish_reason":null}]}`+"\n\n", field, words[i%len(words)])
	}
	b.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1759312345,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":` + fmt.Sprint(n) + `,"total_tokens":` + fmt.Sprint(n+10) + `}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// relayOnce is the yardstick: read the stream, decode each chunk, write
// each delta as an agent_thought_chunk or agent_message_chunk line into a
// pipe whose other end is read, as an editor would.
func relayOnce(b *testing.B, base string, n int) time.Duration {
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan int)
	go func() {
		lines := 0
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			lines++
		}
		pr.Close()
		done <- lines
	}()
	start := time.Now()
	resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	type update struct {
		SessionUpdate string       `json:"sessionUpdate"`
		Content       ContentBlock `json:"content"`
	}
	type params struct {
		SessionID string `json:"sessionId"`
		Update    update `json:"update"`
	}
	type note struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  params `json:"params"`
	}
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			break
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			b.Fatal(err)
		}
		if len(c.Choices) == 0 {
			continue
		}
		kind, text := "agent_message_chunk", c.Choices[0].Delta.Content
		if r := c.Choices[0].Delta.ReasoningContent; r != "" {
			kind, text = "agent_thought_chunk", r
		}
		if text == "" {
			continue
		}
		line, _ := json.Marshal(note{JSONRPC: "2.0", Method: MethodSessionUpdate,
			Params: params{SessionID: "s", Update: update{SessionUpdate: kind, Content: textBlock(text)}}})
		if _, err := pw.Write(append(line, '\n')); err != nil {
			b.Fatal(err)
		}
	}
	resp.Body.Close()
	pw.Close()
	lines := <-done
	elapsed := time.Since(start)
	if lines != n {
		b.Fatalf("the relay wrote %d lines, want %d", lines, n)
	}
	return elapsed
}

// benchPixir is a Pixir ACP server over pipes with the openai provider.
type benchPixir struct {
	in     *os.File // the client's end: requests
	out    *bufio.Reader
	outR   *os.File
	conn   interface{ Done() <-chan struct{} }
	rt     *runtime.Runtime
	ws     string
	nextID int
}

func newBenchPixir(b *testing.B, base string) *benchPixir {
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	prov := openai.New(openai.Config{BaseURL: base})
	rt := runtime.New(runtime.Config{Home: filepath.Join(dir, "home"), Provider: prov, Model: "m"})
	reqR, reqW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	s := NewServer(rt, Options{})
	conn := s.Serve(reqR, outW, reqR.Close)
	px := &benchPixir{in: reqW, out: bufio.NewReaderSize(outR, 1<<20), outR: outR, conn: conn, rt: rt, ws: ws}
	go func() { <-conn.Done(); outW.Close() }()
	px.call(b, MethodInitialize, `{"protocolVersion":1}`)
	return px
}

func (p *benchPixir) close() {
	p.in.Close()
	<-p.conn.Done()
	p.rt.Close()
	p.outR.Close()
}

// call sends a request and reads lines up to its response, counting the
// agent_message_chunk and agent_thought_chunk updates before it.
func (p *benchPixir) call(b *testing.B, method, params string) (json.RawMessage, int) {
	p.nextID++
	id := p.nextID
	if _, err := fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
		b.Fatal(err)
	}
	chunks := 0
	want := fmt.Sprintf(`"id":%d,`, id)
	for {
		line, err := p.out.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			b.Fatal("a line longer than 1 MiB")
		}
		if err != nil {
			b.Fatalf("reading replies: %v", err)
		}
		if bytes.Contains(line, []byte(`"agent_message_chunk"`)) || bytes.Contains(line, []byte(`"agent_thought_chunk"`)) {
			chunks++
			continue
		}
		if bytes.Contains(line, []byte(want)) && !bytes.Contains(line, []byte(`"method"`)) {
			var m struct {
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(line, &m); err != nil || m.Error != nil {
				b.Fatalf("%s answered %s", method, line)
			}
			return m.Result, chunks
		}
	}
}

// prompt runs one turn in a new session (so no history builds up) and
// returns how long the turn took, from the request to its response.
func (p *benchPixir) prompt(b *testing.B, n int) time.Duration {
	res, _ := p.call(b, MethodSessionNew, fmt.Sprintf(`{"cwd":%q,"mcpServers":[]}`, p.ws))
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &s); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	_, chunks := p.call(b, MethodSessionPrompt, fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"go"}]}`, s.SessionID))
	elapsed := time.Since(start)
	if chunks != n {
		b.Fatalf("pixir sent %d chunks, want %d", chunks, n)
	}
	p.call(b, MethodSessionClose, fmt.Sprintf(`{"sessionId":%q}`, s.SessionID))
	return elapsed
}
