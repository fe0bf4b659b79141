package tools

import (
	"fmt"
	"unicode/utf8"
)

// Truncate bounds s to at most limit bytes of its beginning, cut on a UTF-8
// boundary, followed by a marker saying how much was cut. A model that sees
// the marker knows the output is partial and how to ask for the rest; a
// silent cut would let it reason from text that is not there.
func Truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return truncated(s[:max(limit, 0)], len(s))
}

// truncated ends head, the first bytes of a text of total bytes, on a rune
// boundary and appends the marker. Callers that stream keep only the head
// and count the rest, so memory stays bounded.
func truncated(head string, total int) string {
	head = dropPartialRune(head)
	return fmt.Sprintf("%s\n[… truncated %d bytes of %d; narrow the request (line range, grep) to see more]",
		head, total-len(head), total)
}

// dropPartialRune removes an incomplete UTF-8 sequence from the end of s.
func dropPartialRune(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			return s
		}
	}
	return s
}
