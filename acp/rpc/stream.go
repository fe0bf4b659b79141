package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// MaxLineBytes is the largest message accepted on one line. Editors send
// base64 images and whole files as embedded resources; the TypeScript SDK caps
// at 32 MiB, so twice that leaves room without letting one line eat memory.
const MaxLineBytes = 64 << 20

// rawIDPrefix marks a request id that the stream rewrote. sourcegraph/jsonrpc2
// models ids as uint64 or string, so a negative or fractional id would be
// mangled on the way back. The stream hands the engine a string id that
// carries the exact JSON text and restores it when the response is written.
// A NUL byte cannot appear in an id a client typed by hand by accident.
const rawIDPrefix = "\x00raw:"

// lineStream is the jsonrpc2.ObjectStream under a Conn. It frames messages by
// newline, answers what the engine would otherwise die on (parse errors,
// batches, invalid requests, oversized lines) and keeps serving, and on end of
// input waits for in-flight handlers so their replies are written.
type lineStream struct {
	in *bufio.Reader
	// maxLine is the largest line accepted: MaxLineBytes unless a test
	// asks for less.
	maxLine int

	writeMu sync.Mutex
	out     io.Writer
	closer  func() error

	// beforeEOF runs once, when input has ended, before the engine is told.
	beforeEOF func()

	// beforeResponse runs before a response is handed to the engine.
	beforeResponse func()

	// onInvalid is told about every line answered by the stream itself.
	onInvalid func(reason string)
}

func newLineStream(r io.Reader, w io.Writer, closer func() error, maxLine int) *lineStream {
	if maxLine <= 0 {
		maxLine = MaxLineBytes
	}
	return &lineStream{in: bufio.NewReaderSize(r, 64<<10), out: w, closer: closer, maxLine: maxLine}
}

// ReadObject implements jsonrpc2.ObjectStream. It returns only well-formed
// single requests and responses; everything else is answered here.
func (s *lineStream) ReadObject(v any) error {
	for {
		line, err := s.readLine()
		if errors.Is(err, errLineTooLong) {
			s.replyError(nil, jsonrpc2.CodeInvalidRequest, fmt.Sprintf("message exceeds %d bytes", s.maxLine))
			continue
		}
		if err != nil && len(line) == 0 {
			if s.beforeEOF != nil {
				s.beforeEOF()
			}
			return err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		msg, ok := s.check(line)
		if !ok {
			continue
		}
		if err := json.Unmarshal(msg, v); err != nil {
			// check has vetted the shape; this is a fault of ours or the engine's.
			s.replyError(nil, jsonrpc2.CodeInvalidRequest, "invalid request: "+err.Error())
			continue
		}
		return nil
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads up to and excluding the next newline. A line over
// maxLine is drained and reported as errLineTooLong.
func (s *lineStream) readLine() ([]byte, error) {
	var buf []byte
	tooLong := false
	for {
		chunk, err := s.in.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > s.maxLine+1 {
				tooLong = true
				buf = nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			if tooLong {
				return nil, errLineTooLong
			}
			return buf, err
		}
		if tooLong {
			return nil, errLineTooLong
		}
		return buf, nil
	}
}

// envelope is what the stream needs to know of a message to vet it.
type envelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// check vets one line and returns the message to hand to the engine, or
// answers the line itself and reports false.
func (s *lineStream) check(line []byte) ([]byte, bool) {
	if line[0] == '[' {
		if !json.Valid(line) {
			s.replyError(nil, jsonrpc2.CodeParseError, "parse error: invalid JSON")
			return nil, false
		}
		s.replyError(nil, jsonrpc2.CodeInvalidRequest, "batch requests are not supported: send one message per line")
		return nil, false
	}
	if !json.Valid(line) {
		s.replyError(nil, jsonrpc2.CodeParseError, "parse error: invalid JSON")
		return nil, false
	}
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		s.replyError(nil, jsonrpc2.CodeInvalidRequest, "invalid request: a message must be a JSON object")
		return nil, false
	}
	id := env.ID
	validID := len(id) == 0 || isValidID(id)
	var replyID json.RawMessage
	if len(id) > 0 && validID && !bytes.Equal(id, []byte("null")) {
		replyID = id
	}
	invalid := func(why string) ([]byte, bool) {
		s.replyError(replyID, jsonrpc2.CodeInvalidRequest, "invalid request: "+why)
		return nil, false
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		return invalid(`"jsonrpc" must be "2.0"`)
	}
	if !validID {
		return invalid(`"id" must be a string, a number or null`)
	}
	isResponse := len(env.Result) > 0 || len(env.Error) > 0
	if len(env.Method) == 0 {
		if isResponse && len(id) > 0 {
			if s.beforeResponse != nil {
				s.beforeResponse()
			}
			return line, true // a reply to a call of ours
		}
		return invalid(`"method" is missing`)
	}
	var method string
	if err := json.Unmarshal(env.Method, &method); err != nil {
		return invalid(`"method" must be a string`)
	}
	if isResponse {
		return invalid(`a message cannot have both "method" and "result" or "error"`)
	}
	if len(id) == 0 {
		return line, true // a notification
	}
	return rewriteID(line, rawIDPrefix+string(compactJSON(id)))
}

func isValidID(id json.RawMessage) bool {
	switch id[0] {
	case '"', 'n':
		return true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// rewriteID replaces the message's id by a string id.
func rewriteID(line []byte, id string) ([]byte, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, false
	}
	b, _ := json.Marshal(id)
	m["id"] = b
	out, err := json.Marshal(m)
	if err != nil {
		return nil, false
	}
	return out, true
}

func compactJSON(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}

// WriteObject implements jsonrpc2.ObjectStream: one compact object per line,
// with any rewritten id restored to the client's exact text.
func (s *lineStream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	b = restoreID(b)
	return s.writeLine(b)
}

// restoreID puts back the id rewritten by check. Only responses to the
// client's requests carry such ids.
func restoreID(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u0000raw:`)) {
		return b
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return b
	}
	var id string
	if err := json.Unmarshal(m["id"], &id); err != nil || !strings.HasPrefix(id, rawIDPrefix) {
		return b
	}
	m["id"] = json.RawMessage(strings.TrimPrefix(id, rawIDPrefix))
	out, err := json.Marshal(m)
	if err != nil {
		return b
	}
	return out
}

func (s *lineStream) writeLine(b []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	b = append(b, '\n')
	_, err := s.out.Write(b)
	return err
}

// replyError writes an error response the engine never saw. A nil id is
// written as null, as JSON-RPC requires when the id could not be read.
func (s *lineStream) replyError(id json.RawMessage, code int64, message string) {
	if s.onInvalid != nil {
		s.onInvalid(message)
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc2.Error  `json:"error"`
	}{"2.0", id, jsonrpc2.Error{Code: code, Message: message}})
	if err != nil {
		return
	}
	_ = s.writeLine(b)
}

// Close implements jsonrpc2.ObjectStream.
func (s *lineStream) Close() error {
	if s.closer != nil {
		return s.closer()
	}
	return nil
}
