package tools

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name  string
		s     string
		limit int
		want  string
	}{
		{"shorter", "hello", 10, "hello"},
		{"exact", "hello", 5, "hello"},
		{"cut", "hello world", 5, "hello\n[… truncated 6 bytes of 11; narrow the request (line range, grep) to see more]"},
		{"inside a rune", "hé!", 2, "h\n[… truncated 3 bytes of 4; narrow the request (line range, grep) to see more]"},
		{"after a rune", "hé!", 3, "hé\n[… truncated 1 bytes of 4; narrow the request (line range, grep) to see more]"},
		{"inside a 4-byte rune", "a😀b", 4, "a\n[… truncated 5 bytes of 6; narrow the request (line range, grep) to see more]"},
		{"zero", "abc", 0, "\n[… truncated 3 bytes of 3; narrow the request (line range, grep) to see more]"},
		{"negative", "abc", -1, "\n[… truncated 3 bytes of 3; narrow the request (line range, grep) to see more]"},
		{"invalid utf-8 kept as bytes", "a\xffb", 2, "a\xff\n[… truncated 1 bytes of 3; narrow the request (line range, grep) to see more]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Truncate(tt.s, tt.limit))
		})
	}
}

func TestTruncateKeepsValidUTF8(t *testing.T) {
	s := strings.Repeat("ü€😀", 100)
	for limit := range len(s) {
		got := Truncate(s, limit)
		require.True(t, utf8.ValidString(got), "limit %d", limit)
		head, _, _ := strings.Cut(got, "\n[…")
		require.LessOrEqual(t, len(head), limit)
		require.GreaterOrEqual(t, len(head), limit-3)
	}
}
