package merge

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMergeApart(t *testing.T) {
	needGit(t)
	lines := func(n ...string) string { return strings.Join(n, "\n") + "\n" }
	base := lines("one", "two", "three", "four", "five", "six")
	cases := []struct {
		name         string
		base         string // the one above unless set
		ours, theirs string
		claimed      bool
		merged       string // when claimed
	}{
		{"far apart", "", lines("one", "TWO", "three", "four", "five", "six"), lines("one", "two", "three", "four", "FIVE", "six"), true,
			lines("one", "TWO", "three", "four", "FIVE", "six")},
		{"theirs first", "", lines("one", "two", "three", "four", "five", "SIX", "seven"), lines("zero", "one", "three", "four", "five", "six"), true,
			lines("zero", "one", "three", "four", "five", "SIX", "seven")},
		{"one line between", "", lines("one", "TWO", "three", "four", "five", "six"), lines("one", "two", "three", "FOUR", "five", "six"), true,
			lines("one", "TWO", "three", "FOUR", "five", "six")},
		{"no final newline", "", lines("ONE", "two", "three", "four", "five", "six"), lines("one", "two", "three", "four", "five") + "six", true,
			lines("ONE", "two", "three", "four", "five") + "six"},
		{"adjacent lines (git: a conflict)", "", lines("one", "TWO", "three", "four", "five", "six"), lines("one", "two", "THREE", "four", "five", "six"), false, ""},
		{"the same line", "", lines("one", "TWO", "three", "four", "five", "six"), lines("one", "2", "three", "four", "five", "six"), false, ""},
		{"several runs on one side", "", lines("ONE", "two", "three", "four", "five", "SIX"), lines("one", "two", "THREE", "four", "five", "six"), false, ""},
		// theirs adds a "two" after the "two", which git's diff may slide
		// up over it until it touches ours' change: not claimed, though
		// git (which leaves it where it is) merges it cleanly.
		{"a hunk that may slide", lines("one", "two", "three"), lines("ONE", "two", "three"), lines("one", "two", "two", "three"), false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := base
			if c.base != "" {
				b = c.base
			}
			got, ok := mergeApart([]byte(c.ours), []byte(b), []byte(c.theirs))
			require.Equal(t, c.claimed, ok)
			if ok {
				require.Equal(t, c.merged, string(got))
			}
			requireAsGit(t, []byte(c.ours), []byte(b), []byte(c.theirs))
		})
	}
}

// TestMergeApartAgreesWithGit runs FuzzMergeApart's check on random
// inputs of its shape, and fails if the in-process path claimed too few of
// them (or all of them) for the comparison to mean anything.
func TestMergeApartAgreesWithGit(t *testing.T) {
	needGit(t)
	r := rand.New(rand.NewPCG(14, 3))
	bytesOf := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return b
	}
	claimed := 0
	const n = 150
	for range n {
		base := fuzzText(bytesOf(3 + r.IntN(14)))
		ours, theirs := fuzzEdit(base, bytesOf(2*(1+r.IntN(2)))), fuzzEdit(base, bytesOf(2*(1+r.IntN(2))))
		if requireAsGit(t, ours, base, theirs) {
			claimed++
		}
	}
	t.Logf("merged in process: %d of %d", claimed, n)
	require.Greater(t, claimed, n/10)
	require.Less(t, claimed, n)
}

// FuzzMergeApart holds the in-process merge to `git merge-file`: whenever
// mergeApart claims a result, git must write the same bytes, with no
// conflict. Texts are made of a few lines (so that lines repeat, and git's
// diff has choices), edited at fuzzed places; see fuzzText and fuzzEdit.
//
//	go test -run '^$' -fuzz FuzzMergeApart -fuzztime 60s ./runtime/merge/
func FuzzMergeApart(f *testing.F) {
	if _, err := exec.LookPath("git"); err != nil {
		f.Skip("no git")
	}
	// base lines, then (position, edit) pairs for each side.
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, []byte{1, 5}, []byte{6, 8})         // one line each, far apart
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, []byte{1, 5}, []byte{3, 8})         // one line between
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, []byte{1, 5}, []byte{2, 8})         // adjacent
	f.Add([]byte{0, 0, 0, 0, 1, 1, 1, 2}, []byte{2, 1}, []byte{6, 2})         // runs of equal lines
	f.Add([]byte{0, 1, 0, 1, 0, 1, 2, 3}, []byte{1, 3, 7, 0}, []byte{5, 4})   // a repeated pair
	f.Add([]byte{5, 5, 0, 5, 5, 1, 5, 5}, []byte{0, 4}, []byte{7, 255})       // blank lines; no final newline
	f.Add([]byte{6, 0, 6, 0, 7, 0, 6, 128}, []byte{2, 0}, []byte{6, 7})       // "\r\n", no final newline in base
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 0, 1, 2}, []byte{0, 1}, []byte{10, 10}) // insertions at both ends
	f.Fuzz(func(t *testing.T, baseSeed, ourEdits, theirEdits []byte) {
		base := fuzzText(baseSeed)
		requireAsGit(t, fuzzEdit(base, ourEdits), base, fuzzEdit(base, theirEdits))
	})
}

// requireAsGit fails the test if mergeApart claims a result that is not
// git's, and says whether it claimed one.
func requireAsGit(t *testing.T, ours, base, theirs []byte) bool {
	t.Helper()
	got, ok := mergeApart(ours, base, theirs)
	if !ok {
		return false
	}
	want, err := mergeText(context.Background(), t.TempDir(), ours, base, theirs, "child")
	require.NoError(t, err)
	require.Empty(t, want.conflicts, "merged in process, but git finds conflicts:\nbase %q\nours %q\ntheirs %q", base, ours, theirs)
	require.Equal(t, string(want.merged), string(got), "not git's result:\nbase %q\nours %q\ntheirs %q", base, ours, theirs)
	return true
}

// fuzzLines are what fuzzed texts are made of: few, so that lines repeat,
// with a blank one, one ending "\r\n" and two that differ in indentation.
var fuzzLines = []string{"a\n", "b\n", "c\n", "{\n", "}\n", "\n", "a\r\n", "  a\n"}

// fuzzText makes a text of one line per byte; a last byte of 128 or more
// drops the final newline.
func fuzzText(seed []byte) []byte {
	var b strings.Builder
	for _, c := range seed {
		b.WriteString(fuzzLines[int(c)%len(fuzzLines)])
	}
	s := b.String()
	if n := len(seed); n > 0 && seed[n-1] >= 128 {
		s = strings.TrimSuffix(s, "\n")
	}
	return []byte(s)
}

// fuzzEdit edits text by (position, edit) pairs: at line position modulo
// the line count plus one, edit modulo 3 deletes the line, inserts a line
// before it, or replaces it (with the line edit/3 picks); an edit of 255
// drops the final newline instead.
func fuzzEdit(text, edits []byte) []byte {
	ls := strings.SplitAfter(string(text), "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	for i := 0; i+1 < len(edits); i += 2 {
		pos, e := int(edits[i])%(len(ls)+1), int(edits[i+1])
		line := fuzzLines[(e/3)%len(fuzzLines)]
		switch {
		case e == 255:
			if n := len(ls); n > 0 {
				ls[n-1] = strings.TrimSuffix(ls[n-1], "\n")
			}
		case e%3 == 0 && pos < len(ls):
			ls = append(ls[:pos], ls[pos+1:]...)
		case e%3 == 1 || pos == len(ls):
			ls = append(ls[:pos], append([]string{line}, ls[pos:]...)...)
		default:
			ls[pos] = line
		}
	}
	return []byte(strings.Join(ls, ""))
}
