package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/pixir-go/pixir/runtime"
	"github.com/pixir-go/pixir/runtime/provider/scripted"
	"github.com/pixir-go/pixir/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite the server section of the golden transcripts in testdata/transcripts")

// TestTranscripts drives a real Server, over in-memory pipes, with the
// scripted provider, through each testdata/transcripts/*.txtar file, and
// compares every line the server writes with the file's "server" section
// (go test -run TestTranscripts -update rewrites it).
//
// A transcript's "client" section is a script, one step a line (blank lines
// and lines starting with # are skipped):
//
//	<line>          written as is. When it is a request, the step waits for
//	                its reply; a notification or an answer to a request of
//	                the agent waits for nothing; anything else (broken JSON,
//	                a batch…) waits for the next reply the agent writes.
//	async <line>    written without waiting.
//	await <text>    waits until the agent has written a line containing text.
//	bytes <quoted>  a Go-quoted string written as it is (invalid UTF-8),
//	                then waits for the next reply.
//	long <n>        a request of n bytes, then waits for the next reply.
//	restart         ends the connection and the runtime and starts both
//	                anew on the same home and workspace, as an editor does
//	                when it restarts its agent.
//
// In client lines $CWD is the workspace, $SESSION the last session id the
// agent returned, $REQUEST the id of the agent's last request. In the
// server section session ids, paths and times are replaced by such names,
// so that the transcripts are the same on every run.
//
// An optional "script.toml" section replaces the scripted provider's rules
// (testdata/transcripts/script.toml).
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txtar")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	defaultScript, err := os.ReadFile("testdata/transcripts/script.toml")
	require.NoError(t, err)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			ar := parseTxtar(data)
			script := defaultScript
			if s, ok := ar.file("script.toml"); ok {
				script = s
			}
			client, ok := ar.file("client")
			require.True(t, ok, "%s has no client section", file)

			got := runTranscript(t, script, string(client))
			if *update {
				ar.set("server", got)
				require.NoError(t, os.WriteFile(file, ar.format(), 0o644))
				return
			}
			want, _ := ar.file("server")
			require.Equal(t, string(want), string(got), "%s: the server wrote something else (go test ./acp -run TestTranscripts -update rewrites it)", file)
		})
	}
}

// lineLimit is the largest line the transcripts' server accepts: small, so
// that the oversized line is cheap.
const lineLimit = 64 << 10

// transcript is one run of a client script against a Server.
type transcript struct {
	t         *testing.T
	home, cwd string
	script    *scripted.Script

	rt    *runtime.Runtime
	conn  interface{ Done() <-chan struct{} }
	in    *io.PipeWriter
	lines chan string

	out        bytes.Buffer
	sessionIDs map[string]string // real id → its name in the transcript
	lastSess   string
	lastReq    string
}

func runTranscript(t *testing.T, scriptTOML []byte, client string) []byte {
	dir := t.TempDir()
	script, err := scripted.Parse("script.toml", scriptTOML)
	require.NoError(t, err)
	tr := &transcript{t: t, home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "ws"), script: script, sessionIDs: map[string]string{}}
	require.NoError(t, os.MkdirAll(tr.cwd, 0o755))
	// The workspace path as the runtime reports it (symlinks resolved).
	if real, err := filepath.EvalSymlinks(tr.cwd); err == nil {
		tr.cwd = real
	}
	tr.start()
	for _, step := range strings.Split(client, "\n") {
		step = strings.TrimSpace(step)
		if step == "" || strings.HasPrefix(step, "#") {
			continue
		}
		tr.step(step)
	}
	tr.stop()
	// session/new answers before its metadata file is written (the
	// server runs the write after the reply): by a clean exit, every
	// session's Log has its metadata beside it.
	logs, err := filepath.Glob(filepath.Join(runtime.SessionsDir(tr.cwd), "*.ndjson"))
	require.NoError(t, err)
	for _, log := range logs {
		require.FileExists(t, strings.TrimSuffix(log, ".ndjson")+".json", "the metadata written after session/new's reply")
	}
	return tr.out.Bytes()
}

func (tr *transcript) start() {
	tr.rt = runtime.New(runtime.Config{Home: tr.home, Provider: scripted.New(tr.script), Model: "scripted", Tools: tools.Builtins()})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := NewServer(tr.rt, Options{Version: "test", MaxLineBytes: lineLimit})
	conn := srv.Serve(inR, outW, inR.Close)
	tr.conn, tr.in = conn, inW
	lines := make(chan string, 1024)
	tr.lines = lines
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	go func() {
		<-conn.Done()
		_ = outW.Close()
	}()
}

// stop ends the connection, records what the agent still wrote, and closes
// the runtime.
func (tr *transcript) stop() {
	_ = tr.in.Close()
	for line := range tr.lines {
		tr.record(line)
	}
	<-tr.conn.Done()
	tr.rt.Close()
}

func (tr *transcript) step(step string) {
	t := tr.t
	verb, rest, _ := strings.Cut(step, " ")
	switch verb {
	case "async":
		tr.write(tr.expand(rest))
	case "await":
		tr.until(func(line string) bool { return strings.Contains(line, rest) })
	case "bytes":
		s, err := strconv.Unquote(rest)
		require.NoError(t, err, "bytes takes a Go-quoted string: %s", step)
		tr.write(s)
		tr.until(isReply)
	case "long":
		n, err := strconv.Atoi(rest)
		require.NoError(t, err)
		head := `{"jsonrpc":"2.0","id":"long","method":"session/new","params":{"cwd":"`
		tr.write(head + strings.Repeat("a", max(0, n-len(head)-4)) + `"}}`)
		tr.until(isReply)
	case "restart":
		tr.stop()
		tr.start()
	default:
		line := tr.expand(step)
		tr.write(line)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		switch err := json.Unmarshal([]byte(line), &msg); {
		case err == nil && msg.Method != nil && msg.ID == nil:
			// a notification
		case err == nil && msg.Method == nil && bytes.Contains([]byte(line), []byte(`"result"`)):
			// an answer to the agent's request
		case err == nil && msg.Method != nil && (msg.ID[0] == '"' || msg.ID[0] == '-' || msg.ID[0] == 'n' || '0' <= msg.ID[0] && msg.ID[0] <= '9'):
			id := string(msg.ID)
			tr.until(func(line string) bool { return isReply(line) && replyID(line) == id })
		default:
			tr.until(isReply)
		}
	}
}

func (tr *transcript) expand(line string) string {
	return strings.NewReplacer("$CWD", tr.cwd, "$SESSION", tr.lastSess, "$REQUEST", tr.lastReq).Replace(line)
}

func (tr *transcript) write(line string) {
	_, err := io.WriteString(tr.in, line+"\n")
	require.NoError(tr.t, err)
}

// until records the agent's lines until one satisfies done. It waits as
// long as the agent takes: a line that never comes fails on go test's
// timeout, with every goroutine's stack.
func (tr *transcript) until(done func(string) bool) {
	for line := range tr.lines {
		norm := tr.record(line)
		if done(norm) {
			return
		}
	}
	tr.t.Fatalf("the agent closed its output; transcript so far:\n%s", tr.out.String())
}

var (
	sessionIDField = regexp.MustCompile(`"sessionId":"([^"]+)"`)
	timestamp      = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
)

// record notes what the line tells the client script, and appends it to
// the transcript with its varying parts named.
func (tr *transcript) record(line string) string {
	tr.t.Helper()
	require.True(tr.t, json.Valid([]byte(line)), "the agent wrote a line that is not JSON: %q", line)
	for _, m := range sessionIDField.FindAllStringSubmatch(line, -1) {
		id := m[1]
		if _, ok := tr.sessionIDs[id]; !ok && !strings.HasPrefix(id, "$") {
			name := "$SESSION"
			if n := len(tr.sessionIDs); n > 0 {
				name = fmt.Sprintf("$SESSION%d", n+1)
			}
			tr.sessionIDs[id] = name
		}
		if strings.Contains(line, `"result"`) {
			tr.lastSess = id
		}
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal([]byte(line), &msg) == nil && msg.Method != "" && msg.ID != nil {
		tr.lastReq = string(msg.ID)
	}
	norm := line
	for id, name := range tr.sessionIDs {
		norm = strings.ReplaceAll(norm, id, name)
	}
	norm = strings.ReplaceAll(norm, tr.cwd, "$CWD")
	norm = strings.ReplaceAll(norm, tr.home, "$HOME")
	norm = timestamp.ReplaceAllString(norm, "$$TIME")
	tr.out.WriteString(norm)
	return norm
}

// isReply reports whether a line is a response to a request of the client.
func isReply(line string) bool {
	var msg struct {
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	return json.Unmarshal([]byte(line), &msg) == nil && msg.Method == nil && (msg.Result != nil || msg.Error != nil)
}

func replyID(line string) string {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal([]byte(line), &msg)
	return string(msg.ID)
}

// txtar is the archive format of golang.org/x/tools/txtar: a comment, then
// files, each introduced by a "-- name --" line. It is small enough to
// read and write here.
type txtar struct {
	comment []byte
	names   []string
	files   map[string][]byte
}

func parseTxtar(data []byte) *txtar {
	ar := &txtar{files: map[string][]byte{}}
	current := "" // "" while in the comment
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		header := strings.TrimRight(string(line), "\n")
		if strings.HasPrefix(header, "-- ") && strings.HasSuffix(header, " --") && len(header) > 6 {
			current = strings.TrimSpace(header[3 : len(header)-3])
			ar.names = append(ar.names, current)
			ar.files[current] = []byte{}
			continue
		}
		if current == "" {
			ar.comment = append(ar.comment, line...)
		} else {
			ar.files[current] = append(ar.files[current], line...)
		}
	}
	return ar
}

func (ar *txtar) file(name string) ([]byte, bool) {
	b, ok := ar.files[name]
	return b, ok
}

func (ar *txtar) set(name string, data []byte) {
	if _, ok := ar.files[name]; !ok {
		ar.names = append(ar.names, name)
	}
	ar.files[name] = data
}

func (ar *txtar) format() []byte {
	var b bytes.Buffer
	b.Write(ar.comment)
	for _, name := range ar.names {
		fmt.Fprintf(&b, "-- %s --\n", name)
		data := ar.files[name]
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
