package acp

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func numbered(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := edit[i]; ok {
			b.WriteString(s)
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestLineHunks(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []hunk
	}{
		{"same", numbered(10, nil), numbered(10, nil), nil},
		{"one line changed", numbered(20, nil), numbered(20, map[int]string{10: "ten\n"}), []hunk{{6, 13, 6, 13}}},
		{"first line changed", numbered(20, nil), numbered(20, map[int]string{1: "one\n"}), []hunk{{0, 4, 0, 4}}},
		{"last line changed", numbered(20, nil), numbered(20, map[int]string{20: "twenty\n"}), []hunk{{16, 20, 16, 20}}},
		{"a line inserted", numbered(20, nil), numbered(20, map[int]string{10: "line 10\nnew\n"}), []hunk{{7, 13, 7, 14}}},
		{"a line deleted", numbered(20, nil), numbered(20, map[int]string{10: ""}), []hunk{{6, 13, 6, 12}}},
		{"two changes far apart", numbered(40, nil), numbered(40, map[int]string{5: "five\n", 30: "thirty\n"}),
			[]hunk{{1, 8, 1, 8}, {26, 33, 26, 33}}},
		{"two changes close together are one hunk", numbered(40, nil), numbered(40, map[int]string{10: "ten\n", 16: "sixteen\n"}),
			[]hunk{{6, 19, 6, 19}}},
		{"no final newline", "a\nb\nc", "a\nb\nC", []hunk{{0, 3, 0, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, lineHunks(splitLines(tt.old), splitLines(tt.new), 3))
		})
	}
}

// Whatever the change, the hunks cover every line that differs: applying
// them (new sides in place of old sides) turns old into new.
func TestLineHunksRebuildTheNewText(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		var a []string
		for i := range 5 + r.IntN(60) {
			a = append(a, fmt.Sprintf("l%d\n", i%(3+r.IntN(9))))
		}
		b := append([]string(nil), a...)
		for range 1 + r.IntN(6) {
			i := r.IntN(len(b) + 1)
			switch r.IntN(3) {
			case 0:
				b = append(b[:i], append([]string{fmt.Sprintf("new%d\n", r.IntN(5))}, b[i:]...)...)
			case 1:
				if i < len(b) {
					b = append(b[:i], b[i+1:]...)
				}
			default:
				if i < len(b) {
					b[i] = "changed\n"
				}
			}
		}
		var got []string
		at := 0
		for _, h := range lineHunks(a, b, 3) {
			require.GreaterOrEqual(t, h.a0, at, "round %d: hunks in order", round)
			got = append(got, a[at:h.a0]...)
			got = append(got, b[h.b0:h.b1]...)
			at = h.a1
		}
		got = append(got, a[at:]...)
		require.Equal(t, strings.Join(b, ""), strings.Join(got, ""), "round %d", round)
	}
}

// A file of megabytes with one edit is shown as one small hunk, not as megabytes of
// old and new text.
func TestLargeDiffIsShownAsHunks(t *testing.T) {
	old := numbered(100000, nil)
	edited := numbered(100000, map[int]string{50000: "the one changed line\n"})
	content := diffContents("/ws", []diffInput{{Path: "big.txt", OldText: &old, NewText: edited}})
	require.Len(t, content, 1)
	require.Equal(t, "diff", content[0].Type)
	require.Equal(t, "/ws/big.txt", content[0].Path)
	require.Equal(t, numbered(50003, nil)[len(numbered(49996, nil)):], *content[0].OldText)
	require.Contains(t, *content[0].NewText, "the one changed line\n")
	require.Less(t, len(*content[0].OldText)+len(*content[0].NewText), 200)

	// A small file goes whole.
	small, smaller := "a\nb\n", "a\n"
	content = diffContents("/ws", []diffInput{{Path: "s.txt", OldText: &small, NewText: smaller}})
	require.Equal(t, []ToolCallContent{{Type: "diff", Path: "/ws/s.txt", OldText: &small, NewText: &smaller}}, content)

	// A change everywhere is cut at the budget, and says so.
	rewritten := strings.ReplaceAll(old, "line", "LINE")
	content = diffContents("/ws", []diffInput{{Path: "big.txt", OldText: &old, NewText: rewritten}})
	size := 0
	for _, c := range content {
		if c.Type == "diff" {
			size += len(*c.OldText) + len(*c.NewText)
		}
	}
	require.LessOrEqual(t, size, diffBudget)
	last := content[len(content)-1]
	require.Equal(t, "content", last.Type)
	require.Contains(t, last.Content.Text, "too large to show here")

	// A large new file: its first lines, and a note.
	content = diffContents("/ws", []diffInput{{Path: "new.txt", NewText: old}})
	require.Len(t, content, 2)
	require.Nil(t, content[0].OldText)
	require.True(t, strings.HasPrefix(old, *content[0].NewText))
	require.Contains(t, content[1].Content.Text, "new file of 100000 lines")
}
