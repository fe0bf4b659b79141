package jsonraw

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// ErrInvalid is returned for text that is not one well-formed JSON value.
var ErrInvalid = errors.New("invalid JSON")

// maxDepth is encoding/json's nesting limit, so that both agree on what is
// valid.
const maxDepth = 10000

// Member is one member of an object: its key, decoded, and its value as raw
// JSON text (a slice of the scanned text, not a copy).
type Member struct {
	Key   string
	Value []byte
}

// Scan checks that data is exactly one JSON value, white space around it
// allowed, and returns that value without the white space. When the value is
// an object it also returns the object's members in order (a repeated key
// appears twice; encoding/json keeps the last). It accepts what json.Valid
// accepts, and is several times faster on long strings.
func Scan(data []byte) (value []byte, members []Member, err error) {
	s := scanner{data: data}
	s.space()
	start := s.i
	if s.i < len(data) && data[s.i] == '{' {
		members = []Member{}
		err = s.object(1, &members)
	} else {
		err = s.value(0)
	}
	if err != nil {
		return nil, nil, err
	}
	end := s.i
	s.space()
	if s.i != len(data) {
		return nil, nil, ErrInvalid
	}
	return data[start:end], members, nil
}

// Elements checks that data is one JSON array, white space around it
// allowed, and returns its elements as raw JSON text (slices of data).
func Elements(data []byte) ([][]byte, error) {
	s := scanner{data: data}
	s.space()
	if s.i >= len(data) || data[s.i] != '[' {
		return nil, ErrInvalid
	}
	elements := [][]byte{}
	if err := s.array(1, &elements); err != nil {
		return nil, err
	}
	s.space()
	if s.i != len(data) {
		return nil, ErrInvalid
	}
	return elements, nil
}

// Valid reports whether data is one JSON value, as json.Valid does.
func Valid(data []byte) bool {
	s := scanner{data: data}
	s.space()
	if s.value(0) != nil {
		return false
	}
	s.space()
	return s.i == len(data)
}

// Lookup returns the raw value of the last member named key of the object
// obj, which must be valid JSON text.
func Lookup(obj []byte, key string) ([]byte, bool) {
	_, members, err := Scan(obj)
	if err != nil {
		return nil, false
	}
	for i := len(members) - 1; i >= 0; i-- {
		if members[i].Key == key {
			return members[i].Value, true
		}
	}
	return nil, false
}

type scanner struct {
	data []byte
	i    int
}

// inString marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var inString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value starting at s.i (no white space before it).
func (s *scanner) value(depth int) error {
	if s.i >= len(s.data) {
		return ErrInvalid
	}
	switch c := s.data[s.i]; c {
	case '{':
		return s.object(depth+1, nil)
	case '[':
		return s.array(depth+1, nil)
	case '"':
		return s.str()
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		if c == '-' || isDigit(c) {
			return s.number()
		}
		return ErrInvalid
	}
}

func (s *scanner) object(depth int, members *[]Member) error {
	if depth > maxDepth {
		return ErrInvalid
	}
	s.i++ // {
	s.space()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			return ErrInvalid
		}
		keyStart := s.i
		if err := s.str(); err != nil {
			return err
		}
		key := s.data[keyStart:s.i]
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return ErrInvalid
		}
		s.i++
		s.space()
		valueStart := s.i
		if err := s.value(depth); err != nil {
			return err
		}
		if members != nil {
			*members = append(*members, Member{Key: decodeKey(key), Value: s.data[valueStart:s.i]})
		}
		s.space()
		if s.i >= len(s.data) {
			return ErrInvalid
		}
		switch s.data[s.i] {
		case ',':
			s.i++
			s.space()
		case '}':
			s.i++
			return nil
		default:
			return ErrInvalid
		}
	}
}

func (s *scanner) array(depth int, elements *[][]byte) error {
	if depth > maxDepth {
		return ErrInvalid
	}
	s.i++ // [
	s.space()
	if s.i < len(s.data) && s.data[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		start := s.i
		if err := s.value(depth); err != nil {
			return err
		}
		if elements != nil {
			*elements = append(*elements, s.data[start:s.i])
		}
		s.space()
		if s.i >= len(s.data) {
			return ErrInvalid
		}
		switch s.data[s.i] {
		case ',':
			s.i++
			s.space()
		case ']':
			s.i++
			return nil
		default:
			return ErrInvalid
		}
	}
}

// str scans a string; this is where a long message spends its time, so the
// common bytes are skipped in a tight loop.
func (s *scanner) str() error {
	data, i := s.data, s.i+1
	for {
		for i < len(data) && inString[data[i]] {
			i++
		}
		if i >= len(data) {
			return ErrInvalid
		}
		switch data[i] {
		case '"':
			s.i = i + 1
			return nil
		case '\\':
			if i+1 >= len(data) {
				return ErrInvalid
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) {
					return ErrInvalid
				}
				for _, h := range data[i+2 : i+6] {
					if !isHex(h) {
						return ErrInvalid
					}
				}
				i += 6
			default:
				return ErrInvalid
			}
		default: // a control character
			return ErrInvalid
		}
	}
}

func (s *scanner) number() error {
	data, i := s.data, s.i
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && isDigit(data[i]):
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	default:
		return ErrInvalid
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return ErrInvalid
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return ErrInvalid
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	s.i = i
	return nil
}

func (s *scanner) literal(word string) error {
	if len(s.data)-s.i < len(word) || string(s.data[s.i:s.i+len(word)]) != word {
		return ErrInvalid
	}
	s.i += len(word)
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// decodeKey decodes a member's key (quotes included) the way encoding/json
// does; keys are short, and almost always plain ASCII.
func decodeKey(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	plainASCII := true
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			plainASCII = false
			break
		}
	}
	if plainASCII {
		return string(inner)
	}
	var k string
	_ = json.Unmarshal(raw, &k) // raw was scanned: it decodes
	return k
}
