package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// How long a stdio server has to exit after its stdin closes, and then
// after SIGTERM, before it is killed.
const (
	exitGrace = 2 * time.Second
	termGrace = 2 * time.Second
)

// stderrTailLimit bounds what is kept of a server's stderr, to say why it
// failed.
const stderrTailLimit = 2 << 10

// maxMessage bounds one message from a server: a line of a stdio server's
// stdout, an http answer or event. What the model and the editor are shown
// of a result is cut far below it (64 KiB a part, media over 512 KiB
// named), while a message is held whole, about five times over, while it
// is decoded: a server that sends without end (a runaway log on stdout, a
// result of gigabytes) would otherwise take Pixir's memory with it. Each
// server's readers hold their own copy (Options.maxMessage for the tests),
// not a variable the tests would change under goroutines of servers that
// are still shutting down.
const maxMessage = 64 << 20

// tooLarge is the error of a message over limit bytes.
func tooLarge(what string, limit int) error {
	size := fmt.Sprintf("%d MiB", limit>>20)
	if limit < 1<<20 {
		size = fmt.Sprintf("%d KiB", limit>>10)
	}
	return fmt.Errorf("%s is over %s, %w", what, size, errTooLarge)
}

// process is a stdio server: its own process group (so that what it starts
// ends with it), our ends of its three pipes, and the tail of its stderr.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // ours to write
	stdout *os.File // ours to read
	stderr *os.File

	exited     chan struct{} // closed once the process is reaped
	waitErr    error         // set before exited closes
	stderrDone chan struct{} // closed when its stderr has been read to the end

	wg       sync.WaitGroup // the reaper and the stderr reader
	stopOnce sync.Once

	mu   sync.Mutex
	tail []byte

	out      *lineLimit   // stdout, as its one reader reads it
	overflow atomic.Value // the error that ended reading stdout, when a line was over maxMessage
}

// startProcess starts cfg's command in dir. Its stdout carries MCP; its
// stderr goes to the debug log, and its last lines are kept.
// A line of its stdout over limit bytes stops it.
func startProcess(cfg ServerConfig, dir string, log *slog.Logger, limit int) (p *process, err error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for _, e := range cfg.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.SysProcAttr = processAttr()

	var files []*os.File
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		return nil, err
	}
	// *os.File ends: exec hands them to the child as they are, with no
	// copying goroutine for Wait to wait for (a grandchild holding the
	// pipe open would otherwise keep Wait from returning).
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cfg.Command, err)
	}
	inR.Close()
	outW.Close()
	errW.Close()

	p = &process{cmd: cmd, stdin: inW, stdout: outR, stderr: errR, exited: make(chan struct{}), stderrDone: make(chan struct{}),
		out: &lineLimit{r: outR, max: limit, what: "a message it sent"}}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go func() {
		defer p.wg.Done()
		defer close(p.stderrDone)
		p.readStderr(cfg.Name, log)
	}()
	return p, nil
}

func (p *process) readStderr(server string, log *slog.Logger) {
	sc := bufio.NewScanner(p.stderr)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		log.Debug("MCP server stderr", "server", server, "line", line)
		p.mu.Lock()
		p.tail = append(p.tail, line...)
		p.tail = append(p.tail, '\n')
		if over := len(p.tail) - stderrTailLimit; over > 0 {
			p.tail = p.tail[over:]
		}
		p.mu.Unlock()
	}
}

// stderrTail is the end of what the server wrote on stderr: once it has
// exited, all of it (a little wait for the reader, unless something it
// started still holds the pipe).
func (p *process) stderrTail() string {
	select {
	case <-p.exited:
		t := time.NewTimer(exitGrace)
		select {
		case <-p.stderrDone:
		case <-t.C:
		}
		t.Stop()
	default:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.TrimSpace(string(p.tail))
}

// exitReason says how the process ended, once it has.
func (p *process) exitReason() string {
	select {
	case <-p.exited:
	default:
		return "it closed its output"
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		return "it exited: " + ee.String()
	}
	if p.waitErr != nil {
		return "it ended: " + p.waitErr.Error()
	}
	return "it exited with status 0"
}

// stop ends the server as the MCP specification asks: close its stdin,
// wait, then SIGTERM its process group, wait, then SIGKILL. It returns once
// the process is reaped and its pipes are closed.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		if !p.waitExit(exitGrace) {
			signalGroup(p.cmd.Process, false)
			if !p.waitExit(termGrace) {
				signalGroup(p.cmd.Process, true)
				<-p.exited
			}
		}
		// The reader first takes what the server wrote before it ended
		// (why it failed is often its last stderr line, and a failed
		// start stops it before telling why). What the server started
		// outside its group could still hold the pipes: after a grace,
		// closing our ends ends the reader regardless.
		signalGroup(p.cmd.Process, true)
		drain := time.NewTimer(exitGrace)
		select {
		case <-p.stderrDone:
		case <-drain.C:
		}
		drain.Stop()
		p.stdout.Close()
		p.stderr.Close()
		p.wg.Wait()
	})
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// stdioStream speaks MCP over the process's pipes: one JSON-RPC message
// a line. Closing it stops the process.
type stdioStream struct {
	jsonrpc2.ObjectStream
	p *process
}

func (p *process) stream() stdioStream {
	return stdioStream{jsonrpc2.NewPlainObjectStream(pipes{p}), p}
}

func (stdioStream) callEnded(uint64)        {}
func (stdioStream) callFailed(uint64) error { return nil }
func (stdioStream) negotiated(string)       {}

// ended says why the connection ended when Pixir ended it: a message over
// maxMessage.
func (s stdioStream) ended() error {
	if err, ok := s.p.overflow.Load().(error); ok {
		return err
	}
	return nil
}

// pipes are the process's stdout and stdin; closing them stops the process.
type pipes struct{ p *process }

// Read reads stdout, and ends it with an error when a line (a message)
// runs over maxMessage.
func (c pipes) Read(b []byte) (int, error) {
	if err, ok := c.p.overflow.Load().(error); ok {
		return 0, err
	}
	n, err := c.p.out.Read(b)
	if errors.Is(err, errTooLarge) {
		c.p.overflow.Store(err)
	}
	return n, err
}

// errTooLarge is the error of a message over maxMessage.
var errTooLarge = errors.New("more than Pixir takes from an MCP server")

// lineLimit reads r, and fails once a line (one message of a stdio
// server, one line of an event stream) runs over max bytes.
type lineLimit struct {
	r    io.Reader
	max  int
	line int // bytes since the last newline
	what string
}

func (l *lineLimit) Read(b []byte) (int, error) {
	n, err := l.r.Read(b)
	for chunk := b[:n]; ; {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			l.line += len(chunk)
			break
		}
		if l.line+i > l.max {
			l.line += i
			break
		}
		l.line, chunk = 0, chunk[i+1:]
	}
	if l.line > l.max {
		return 0, tooLarge(l.what, l.max)
	}
	return n, err
}

func (c pipes) Write(b []byte) (int, error) { return c.p.stdin.Write(b) }
func (c pipes) Close() error {
	c.p.stop()
	return nil
}

var _ io.ReadWriteCloser = pipes{}
