package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
)

// oversizedEnds are the first and last bytes of a line over the limit: the
// line itself is drained, never held, but whoever sent it is owed an
// answer, and one of our calls may be waiting for it.
type oversizedEnds struct {
	head, tail []byte
	size       int
}

// keepTail keeps the last oversizedKeep bytes of the line read so far.
func (e *oversizedEnds) keepTail(chunk []byte) {
	if len(chunk) >= oversizedKeep {
		e.tail = append(e.tail[:0], chunk[len(chunk)-oversizedKeep:]...)
		return
	}
	e.tail = append(e.tail, chunk...)
	if len(e.tail) > oversizedKeep {
		e.tail = append(e.tail[:0], e.tail[len(e.tail)-oversizedKeep:]...)
	}
}

// oversized answers the line over the limit that was just drained. When it
// was the answer to one of our calls, that call fails (instead of waiting
// for ever): the returned stand-in is an error response for its id, which
// the engine routes to it. When it was a request, the error names its id.
func (s *lineStream) oversized() ([]byte, bool) {
	e := s.oversize
	s.oversize = oversizedEnds{}
	id, isRequest := e.identify()
	msg := fmt.Sprintf("message exceeds %d bytes", s.maxLine)
	if id == nil || isRequest {
		s.replyError(id, CodeInvalidRequest, msg)
		return nil, false
	}
	if s.answeredBefore(id) {
		return nil, false
	}
	key := string(id)
	s.mu.Lock()
	ours := s.awaited[key]
	if ours {
		s.answered[key], s.tooLarge[key] = true, true
	}
	s.mu.Unlock()
	if !ours {
		if s.onInvalid != nil {
			s.onInvalid(fmt.Sprintf("an answer of %d bytes to an unknown call %s was dropped", e.size, id))
		}
		return nil, false
	}
	if s.onInvalid != nil {
		s.onInvalid(fmt.Sprintf("the answer to call %s was %d bytes, over the limit of %d; the call fails", id, e.size, s.maxLine))
	}
	if s.beforeResponse != nil {
		s.beforeResponse()
	}
	errObj, _ := json.Marshal(map[string]any{"code": CodeInvalidRequest,
		"message": fmt.Sprintf("the answer was %d bytes, more than the %d one message may have", e.size, s.maxLine)})
	return s.responseStandIn(id, nil, errObj), true
}

// identify finds the message's top-level id, and whether it has a method,
// in the ends of the line: encoders put the envelope's members before the
// payload, or after it.
func (e oversizedEnds) identify() (id json.RawMessage, isRequest bool) {
	id, isRequest = scanHead(e.head)
	if id == nil {
		if m := tailID().FindSubmatch(e.tail); m != nil {
			id = m[1]
		}
	}
	if !isRequest && tailMethod().Match(e.tail) {
		isRequest = true
	}
	if id != nil && (!isValidID(id) || string(id) == "null") {
		id = nil
	}
	if id != nil {
		id = echoID(id)
	}
	return id, isRequest
}

// A top-level member at the very end of a line: no JSON string can hold an
// unescaped quote, so `,"id":` never matches inside one, and the single
// closing brace after it means the object it ends is the message itself.
// Compiled on first use: only an oversized line needs them.
var (
	tailID = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`[{,]\s*"id"\s*:\s*(-?[0-9][0-9.eE+-]*|"[^"\\]*")\s*}\s*$`)
	})
	tailMethod = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`[{,]\s*"method"\s*:\s*"[^"\\]*"\s*(,\s*"[a-z]+"\s*:\s*(-?[0-9][0-9.eE+-]*|"[^"\\]*"|null)\s*)*}\s*$`)
	})
)

// scanHead reads the members of the object that head starts, as far as
// head goes: the id, when its value is complete in head, and whether a
// method member came before the head ended.
func scanHead(head []byte) (id json.RawMessage, isRequest bool) {
	i := skipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipSpace(head, i)
		if i >= len(head) || head[i] != '"' {
			return id, isRequest
		}
		end := stringEnd(head, i)
		if end < 0 {
			return id, isRequest
		}
		key := head[i+1 : end-1]
		i = skipSpace(head, end)
		if i >= len(head) || head[i] != ':' {
			return id, isRequest
		}
		i = skipSpace(head, i+1)
		vEnd := valueEnd(head, i)
		if vEnd < 0 {
			return id, isRequest || bytes.Equal(key, []byte("method"))
		}
		switch string(key) {
		case "id":
			id = bytes.Clone(head[i:vEnd])
		case "method":
			isRequest = true
		}
		i = skipSpace(head, vEnd)
		if i >= len(head) || head[i] != ',' {
			return id, isRequest
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd is the index after the string starting at b[i], or -1 when b
// ends first.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd is the index after the JSON value starting at b[i], or -1 when
// b ends first.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j = stringEnd(b, j); j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && bytes.IndexByte([]byte(",}] \t\r\n"), b[j]) < 0 {
		j++
	}
	if j == len(b) {
		return -1
	}
	return j
}
