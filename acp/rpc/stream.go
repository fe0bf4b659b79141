package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/pixir-go/pixir/internal/jsonraw"
)

// MaxLineBytes is the largest message accepted on one line. Editors send
// base64 images and whole files as embedded resources; the TypeScript SDK caps
// at 32 MiB, so twice that leaves room without letting one line eat memory.
const MaxLineBytes = 64 << 20

// lineStream is the jsonrpc2.ObjectStream under a Conn. It frames messages by
// newline and scans each line once (jsonraw.Scan: validity and the spans of
// the members). Lines the engine would die on (parse errors, batches,
// invalid requests, oversized lines) are answered here, and the connection
// goes on.
//
// The engine never sees a message's payload: sourcegraph/jsonrpc2 decodes
// params into interface{} values and encodes them again, several passes over
// a prompt that can be tens of megabytes. It is handed a small stand-in
// instead (method, a key in "meta", and for a response the id), and the
// message itself is parked here until the Conn takes it by that key. Replies
// and notifications are written here directly, encoded once.
type lineStream struct {
	in *bufio.Reader
	// maxLine is the largest line accepted: MaxLineBytes unless a test
	// asks for less.
	maxLine int

	writeMu sync.Mutex
	out     io.Writer
	closer  func() error
	closed  bool

	mu      sync.Mutex
	parked  map[uint64]*inbound // requests and notifications, by stand-in key
	nextKey uint64
	// awaited are the ids of our calls still waiting for an answer, and
	// results the answers that came, by the id's text.
	awaited map[string]bool
	results map[string]json.RawMessage

	// beforeEOF runs once, when input has ended, before the engine is told.
	beforeEOF func()

	// beforeResponse runs before a response is handed to the engine.
	beforeResponse func()

	// afterClose runs once the stream is closed.
	afterClose func()

	// onInvalid is told about every line answered by the stream itself.
	onInvalid func(reason string)

	// onUnawaited is told about an answer no call of ours waits for.
	onUnawaited func(reason string)

	// oversize are the ends of the last line over maxLine (read loop only).
	oversize oversizedEnds
	// answered are our calls the peer answered, by the id's text, kept
	// until the call returns; tooLarge those whose answer was over
	// maxLine.
	answered map[string]bool
	tooLarge map[string]bool
}

// inbound is a request or notification from the peer. Its params are a
// slice of the line it came on.
type inbound struct {
	id     json.RawMessage // as echoed in the reply (see echoID); nil for a notification
	method string
	params json.RawMessage
	// seq is, for a request, its place among the requests read (1, 2,
	// …); for a notification, how many requests were read before it.
	seq uint64
}

func newLineStream(r io.Reader, w io.Writer, closer func() error, maxLine int) *lineStream {
	if maxLine <= 0 {
		maxLine = MaxLineBytes
	}
	return &lineStream{
		in: bufio.NewReaderSize(r, 64<<10), maxLine: maxLine, out: w, closer: closer,
		parked: map[uint64]*inbound{}, awaited: map[string]bool{}, results: map[string]json.RawMessage{},
		answered: map[string]bool{}, tooLarge: map[string]bool{},
	}
}

// ReadObject implements jsonrpc2.ObjectStream. It hands the engine stand-ins
// of well-formed requests, notifications and responses; everything else is
// answered here.
func (s *lineStream) ReadObject(v any) error {
	for {
		line, err := s.readLine()
		if errors.Is(err, errLineTooLong) {
			if standIn, ok := s.oversized(); ok {
				if err := json.Unmarshal(standIn, v); err == nil {
					return nil
				}
			}
			continue
		}
		if err != nil && len(line) == 0 {
			if s.beforeEOF != nil {
				s.beforeEOF()
			}
			return err
		}
		if blank(line) {
			continue
		}
		standIn, ok := s.vet(line)
		if !ok {
			continue
		}
		if err := json.Unmarshal(standIn, v); err != nil {
			// vet has checked the shape; what is left is an error object
			// the engine cannot read.
			s.replyError(nil, CodeInvalidRequest, "invalid request: "+err.Error())
			continue
		}
		return nil
	}
}

var errLineTooLong = errors.New("line too long")

// oversizedKeep is how much of each end of an oversized line is kept: enough
// to find the message's id and method, which encoders write first or last.
const oversizedKeep = 4 << 10

// readLine reads up to and excluding the next newline. A line over maxLine
// is drained and reported as errLineTooLong; its first and last
// oversizedKeep bytes are kept in s.oversize. A long line is gathered in
// pieces and joined once, into a buffer of its exact size.
func (s *lineStream) readLine() ([]byte, error) {
	var pieces [][]byte
	size := 0
	tooLong := false
	var ends oversizedEnds
	for {
		chunk, err := s.in.ReadSlice('\n')
		if err == nil {
			chunk = chunk[:len(chunk)-1] // the newline
		}
		if size == 0 {
			ends.head = bytes.Clone(chunk[:min(len(chunk), oversizedKeep)])
		}
		ends.keepTail(chunk)
		if !tooLong {
			if size+len(chunk) > s.maxLine {
				tooLong, pieces = true, nil
			} else if errors.Is(err, bufio.ErrBufferFull) || len(pieces) > 0 {
				pieces = append(pieces, bytes.Clone(chunk))
			}
		}
		size += len(chunk)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case tooLong:
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			ends.size = size
			s.oversize = ends
			return nil, errLineTooLong
		case len(pieces) == 0: // the whole line was in the buffer
			return bytes.Clone(chunk), err
		}
		line := bytes.Join(pieces, nil)
		if size >= collectAfter {
			// The pieces are as large as the line, and garbage now: they
			// are collected and their memory given back before the line is
			// decoded. Otherwise what decoding allocates (the text the
			// model reads, as large again) comes on top of them whenever
			// it does not fit in their place, and a prompt of tens of
			// megabytes peaks at over three times its size. (Nothing
			// refers to them past the Join.)
			debug.FreeOSMemory()
		}
		return line, err
	}
}

// collectAfter is the length of a line from which its pieces are collected
// at once (see readLine): a collection costs about a millisecond, against
// hundreds for reading and decoding such a line.
const collectAfter = 4 << 20

// blank reports whether a line holds only JSON white space.
func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// envelope holds the raw members of a message that decide what it is.
type envelope struct {
	jsonrpc, id, method, params, result, error json.RawMessage
}

// vet scans one line and returns the stand-in to hand to the engine, or
// answers the line itself and reports false.
func (s *lineStream) vet(line []byte) ([]byte, bool) {
	value, members, err := jsonraw.Scan(line)
	switch {
	case err != nil:
		s.replyError(nil, CodeParseError, "parse error: invalid JSON")
		return nil, false
	case value[0] == '[':
		s.replyError(nil, CodeInvalidRequest, "batch requests are not supported: send one message per line")
		return nil, false
	case value[0] != '{':
		s.replyError(nil, CodeInvalidRequest, "invalid request: a message must be a JSON object")
		return nil, false
	}
	var env envelope
	for _, m := range members { // the last of a repeated member wins, as in encoding/json
		switch m.Key {
		case "jsonrpc":
			env.jsonrpc = m.Value
		case "id":
			env.id = m.Value
		case "method":
			env.method = m.Value
		case "params":
			env.params = m.Value
		case "result":
			env.result = m.Value
		case "error":
			env.error = m.Value
		}
	}
	id := env.id
	validID := id == nil || isValidID(id)
	var replyID json.RawMessage
	if id != nil && validID && string(id) != "null" {
		replyID = echoID(id)
	}
	invalid := func(why string) ([]byte, bool) {
		s.replyError(replyID, CodeInvalidRequest, "invalid request: "+why)
		return nil, false
	}
	if version, ok := jsonString(env.jsonrpc); !ok || version != "2.0" {
		return invalid(`"jsonrpc" must be "2.0"`)
	}
	if !validID {
		return invalid(`"id" must be a string, a number or null`)
	}
	isResponse := env.result != nil || env.error != nil
	if env.method == nil {
		if isResponse && id != nil {
			if s.answeredBefore(id) || s.unawaited(id) {
				return nil, false
			}
			if s.beforeResponse != nil {
				s.beforeResponse()
			}
			return s.responseStandIn(id, env.result, env.error), true
		}
		return invalid(`"method" is missing`)
	}
	method, ok := jsonString(env.method)
	if !ok {
		return invalid(`"method" must be a string`)
	}
	if isResponse {
		return invalid(`a message cannot have both "method" and "result" or "error"`)
	}
	msg := &inbound{method: method, params: env.params}
	if id != nil {
		msg.id = echoID(id)
	}
	return s.park(msg), true
}

// park keeps msg for the Conn and returns its stand-in.
func (s *lineStream) park(msg *inbound) []byte {
	s.mu.Lock()
	s.nextKey++
	key := s.nextKey
	s.parked[key] = msg
	s.mu.Unlock()
	b := []byte(`{"jsonrpc":"2.0","method":"",`)
	if msg.id != nil {
		b = append(b, `"id":0,`...)
	}
	b = append(b, `"meta":`...)
	b = strconv.AppendUint(b, key, 10)
	return append(b, '}')
}

// take returns the message parked under the stand-in's key.
func (s *lineStream) take(req *jsonrpc2.Request) *inbound {
	if req.Meta == nil {
		return nil
	}
	key, err := strconv.ParseUint(string(*req.Meta), 10, 64)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := s.parked[key]
	delete(s.parked, key)
	return msg
}

// responseStandIn parks the result of an answer to one of our calls and
// returns the response the engine routes: its id, and the error object if
// any (small, and the engine turns it into the Call's error).
func (s *lineStream) responseStandIn(id, result, errObj json.RawMessage) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, echoID(id)...)
	key := string(echoID(id))
	s.mu.Lock()
	if s.awaited[key] {
		s.answered[key] = true
		if errObj == nil {
			s.results[key] = result
		}
	}
	s.mu.Unlock()
	if errObj != nil {
		b = append(b, `,"error":`...)
		b = append(b, errObj...)
		return append(b, '}')
	}
	return append(b, `,"result":null}`...)
}

// answeredBefore reports whether id is a call of ours the peer has already
// answered, and says so: a second answer to it is dropped. The first one
// decides: the call may not have taken its result yet (it does once the
// engine wakes it), and a later answer must not replace it (a client that
// rejected a permission request and then sent "allow" for it too had the
// tool run).
func (s *lineStream) answeredBefore(id json.RawMessage) bool {
	key := string(echoID(id))
	s.mu.Lock()
	again := s.awaited[key] && s.answered[key]
	s.mu.Unlock()
	if again && s.onInvalid != nil {
		s.onInvalid(fmt.Sprintf("a second answer to call %s was dropped: the first one decides", key))
	}
	return again
}

// unawaited reports whether id is no call of ours waiting for an answer
// (never made, or ended: a late answer after a cancel), and says so: the
// answer is dropped. The engine would drop it too, said only at debug level.
func (s *lineStream) unawaited(id json.RawMessage) bool {
	key := string(echoID(id))
	s.mu.Lock()
	ours := s.awaited[key]
	s.mu.Unlock()
	if !ours && s.onUnawaited != nil {
		s.onUnawaited(fmt.Sprintf("an answer to call %s was dropped: no call of this connection waits for one (it was never made, or it ended, as a cancelled one does)", key))
	}
	return !ours
}

// wasAnswered reports whether the peer answered our call id, even if the
// caller has not seen the answer yet.
func (s *lineStream) wasAnswered(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answered[id]
}

// answerTooLarge reports whether the answer to our call id was refused for
// its size.
func (s *lineStream) answerTooLarge(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tooLarge[id]
}

// await marks id as a call of ours whose result is to be parked.
func (s *lineStream) await(id string) {
	s.mu.Lock()
	s.awaited[id] = true
	s.mu.Unlock()
}

// result returns and forgets the answer parked for id (nil if none came).
func (s *lineStream) result(id string) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.results[id]
	delete(s.results, id)
	delete(s.awaited, id)
	delete(s.answered, id)
	delete(s.tooLarge, id)
	return r
}

// jsonString decodes raw when it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var str string
	if err := json.Unmarshal(raw, &str); err != nil {
		return "", false
	}
	return str, true
}

func isValidID(id json.RawMessage) bool {
	switch id[0] {
	case '"', 'n': // a string or null (the line was scanned: n is null)
		return true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// echoID is the id as every reply, and $/cancel_request matching, uses it:
// the client's exact text, except that a string with invalid UTF-8 (which no
// JSON text may carry) has each invalid byte replaced by U+FFFD, as
// encoding/json does when it decodes one.
func echoID(id json.RawMessage) json.RawMessage {
	if id[0] != '"' || utf8.Valid(id) {
		return id
	}
	str, _ := jsonString(id)
	return jsonraw.AppendString(nil, str)
}

// WriteObject implements jsonrpc2.ObjectStream for the engine's own
// messages: the calls we make and their $/cancel_request.
func (s *lineStream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return s.writeLine(append(b, '\n'))
}

// writeResult writes a successful reply with its encoded result.
func (s *lineStream) writeResult(id, raw json.RawMessage) error {
	b := make([]byte, 0, len(raw)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, raw...)
	return s.writeLine(append(b, '}', '\n'))
}

// writeError writes an error reply; a nil id is written as null, as
// JSON-RPC requires when the id could not be read.
func (s *lineStream) writeError(id json.RawMessage, e *Error) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	b := make([]byte, 0, len(e.Message)+len(e.Data)+len(id)+64)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, e.Code, 10)
	b = append(b, `,"message":`...)
	b = jsonraw.AppendString(b, e.Message)
	if len(e.Data) > 0 && jsonraw.Valid(e.Data) {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	return s.writeLine(append(b, '}', '}', '\n'))
}

// writeNotification writes a notification, its params encoded once.
func (s *lineStream) writeNotification(method string, params any) error {
	line, err := notificationLine(method, params)
	if err != nil {
		return err
	}
	return s.writeLine(line)
}

// notificationLine is a notification as one line.
func notificationLine(method string, params any) ([]byte, error) {
	raw, err := encode(params)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(raw)+len(method)+40)
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = jsonraw.AppendString(b, method)
	b = append(b, `,"params":`...)
	b = append(b, raw...)
	return append(b, '}', '\n'), nil
}

// JSONAppender is a result or params value that encodes itself, as
// json.Marshal would encode it, appended to b: what a start sends once
// and would otherwise pay encoding/json's reflection over its types for.
type JSONAppender interface {
	AppendJSON(b []byte) []byte
}

// encode is json.Marshal, except that a json.RawMessage is only checked
// (the caller encoded it already, and it may be megabytes) and a
// JSONAppender encodes itself.
func encode(v any) ([]byte, error) {
	switch v := v.(type) {
	case json.RawMessage:
		if !jsonraw.Valid(v) {
			return nil, errors.New("the message to send is not valid JSON")
		}
		return v, nil
	case JSONAppender:
		return v.AppendJSON(make([]byte, 0, 1024)), nil
	}
	return json.Marshal(v)
}

// writeLine writes one whole line; after Close it fails with ErrClosed.
func (s *lineStream) writeLine(b []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.closed {
		return jsonrpc2.ErrClosed
	}
	_, err := s.out.Write(b)
	return err
}

// replyError answers a line the engine never saw.
func (s *lineStream) replyError(id json.RawMessage, code int64, message string) {
	if s.onInvalid != nil {
		s.onInvalid(message)
	}
	_ = s.writeError(id, &Error{Code: code, Message: message})
}

// Close implements jsonrpc2.ObjectStream.
func (s *lineStream) Close() error {
	s.writeMu.Lock()
	s.closed = true
	s.writeMu.Unlock()
	var err error
	if s.closer != nil {
		err = s.closer()
	}
	if s.afterClose != nil {
		s.afterClose()
	}
	return err
}
