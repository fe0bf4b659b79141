// Package jsonraw works on JSON text without reflection, for the paths where
// a message can be tens of megabytes (a pasted file in a prompt, a model's
// long answer): it validates a message and splits an object into its raw
// members in one pass, and quotes strings. encoding/json stays the decoder
// of values; this package is what lets each line be decoded by it once.
package jsonraw

import (
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// plain marks the ASCII bytes a JSON string can hold unescaped.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainHTML is plain less <, > and &, which encoding/json escapes (its
// HTML escaping, on by default in json.Marshal).
var plainHTML = func() (t [256]bool) {
	t = plain
	t['<'], t['>'], t['&'] = false, false, false
	return t
}()

// AppendStringHTML appends s quoted as json.Marshal quotes it, byte for
// byte: as AppendString does, and <, > and & as \u003c, \u003e, \u0026.
// For encoders that must write what json.Marshal writes.
func AppendStringHTML[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s, &plainHTML)
	return append(dst, '"')
}

// AppendString appends s quoted as a JSON string. It escapes what JSON
// requires, and U+2028 and U+2029 as encoding/json does, replaces invalid
// UTF-8 with U+FFFD as encoding/json does, and leaves <, > and & as they
// are (no HTML escaping: the text goes to a pipe or a file, not a page).
func AppendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	dst = AppendEscaped(dst, s)
	return append(dst, '"')
}

// AppendEscaped appends s escaped as AppendString escapes it, without the
// quotes: a part of a JSON string written in pieces.
func AppendEscaped[S ~string | ~[]byte](dst []byte, s S) []byte {
	return appendEscaped(dst, s, &plain)
}

// appendEscaped escapes the bytes that are not plain as \u00XX, but for
// those JSON has a short escape for.
func appendEscaped[S ~string | ~[]byte](dst []byte, s S, plain *[256]bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		for i < len(s) && plain[s[i]] {
			i++
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		// At most 4 bytes: converted on the stack when s is a []byte.
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

// QuotedLen is an upper bound of len(AppendString(nil, s)) that is exact
// for text with nothing to escape: use it to size a buffer once.
func QuotedLen(n int) int { return n + n/16 + 2 }
