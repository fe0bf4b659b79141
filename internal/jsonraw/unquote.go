package jsonraw

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// StringWriter is what UnquoteTo writes to; *strings.Builder is one.
type StringWriter interface {
	Write(p []byte) (int, error)
	WriteByte(c byte) error
	WriteRune(r rune) (int, error)
}

// UnquoteTo writes the string that the JSON string quoted (quotes
// included) holds to w, decoded as encoding/json decodes it: escapes
// resolved, each invalid UTF-8 byte and each unpaired surrogate as U+FFFD.
// Runs of plain bytes are written as they are, so a long text is copied
// once, into w. It reports false, having written part of it, when quoted is
// not a valid JSON string.
func UnquoteTo(w StringWriter, quoted []byte) bool {
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return false
	}
	s := quoted[1 : len(quoted)-1]
	start := 0
	for r := 0; r < len(s); {
		for r < len(s) && plain[s[r]] {
			r++
		}
		if r >= len(s) {
			break
		}
		c := s[r]
		if c >= utf8.RuneSelf {
			if rr, size := utf8.DecodeRune(s[r:]); rr != utf8.RuneError || size != 1 {
				r += size
				continue
			}
			_, _ = w.Write(s[start:r])
			_, _ = w.WriteRune(utf8.RuneError)
			r++
			start = r
			continue
		}
		if c != '\\' {
			return false // a quote or a control character
		}
		_, _ = w.Write(s[start:r])
		if r+1 >= len(s) {
			return false
		}
		switch e := s[r+1]; e {
		case '"', '\\', '/':
			_ = w.WriteByte(e)
			r += 2
		case 'b':
			_ = w.WriteByte('\b')
			r += 2
		case 'f':
			_ = w.WriteByte('\f')
			r += 2
		case 'n':
			_ = w.WriteByte('\n')
			r += 2
		case 'r':
			_ = w.WriteByte('\r')
			r += 2
		case 't':
			_ = w.WriteByte('\t')
			r += 2
		case 'u':
			rr := hex4(s[r:])
			if rr < 0 {
				return false
			}
			r += 6
			if utf16.IsSurrogate(rr) {
				if dec := utf16.DecodeRune(rr, hex4(s[r:])); dec != unicode.ReplacementChar {
					rr = dec
					r += 6
				} else {
					rr = unicode.ReplacementChar
				}
			}
			_, _ = w.WriteRune(rr)
		default:
			return false
		}
		start = r
	}
	_, _ = w.Write(s[start:])
	return true
}

// hex4 decodes the \uXXXX escape at the start of s, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
