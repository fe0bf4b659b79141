package acp

import (
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/pixir-go/pixir/internal/plural"
)

// How much of a change a tool call's diff content carries. A whole file
// goes as it is while old and new together stay under diffWhole; a larger
// one goes as its changed regions (hunks) with diffContext lines around
// each, up to diffBudget bytes for one call. Editors render each hunk as a
// diff of its own; the Log and rawOutput keep the whole change. One update
// of a 6 MiB edit as two whole texts is a 12 MiB line, more than some
// clients read (issue 16).
const (
	diffWhole   = 64 << 10
	diffBudget  = 256 << 10
	diffContext = 3
	// diffMaxEdits bounds the line edits searched for between the first
	// and the last change; past it the region is one hunk.
	diffMaxEdits = 1000
)

// diffContents is the content showing the changes of one tool call, within
// diffBudget.
func diffContents(root string, diffs []diffInput) []ToolCallContent {
	var out []ToolCallContent
	budget := diffBudget
	for _, d := range diffs {
		path := absPath(root, d.Path)
		size := len(d.NewText)
		if d.OldText != nil {
			size += len(*d.OldText)
		}
		if size <= diffWhole && size <= budget {
			newText := d.NewText
			out = append(out, ToolCallContent{Type: "diff", Path: path, OldText: d.OldText, NewText: &newText})
			budget -= size
			continue
		}
		var shown []ToolCallContent
		shown, budget = hunkContents(path, d.OldText, d.NewText, budget)
		out = append(out, shown...)
	}
	return out
}

// diffInput is one file's change as the runtime reports it.
type diffInput struct {
	Path    string
	OldText *string
	NewText string
}

// hunkContents shows a large change as its hunks, as many as budget holds,
// and says what it leaves out.
func hunkContents(path string, oldText *string, newText string, budget int) ([]ToolCallContent, int) {
	var out []ToolCallContent
	note := func(format string, args ...any) {
		block := textBlock(fmt.Sprintf(format, args...))
		out = append(out, ToolCallContent{Type: "content", Content: &block})
	}
	b := splitLines(newText)
	if oldText == nil {
		// A new file: its first lines, as much as the budget holds.
		n, size := 0, 0
		for n < len(b) && size+len(b[n]) <= budget {
			size += len(b[n])
			n++
		}
		if n > 0 {
			head := strings.Join(b[:n], "")
			out = append(out, ToolCallContent{Type: "diff", Path: path, NewText: &head})
		}
		if n < len(b) {
			note("%s is a new file of %s (%s); the first %s shown.", path, plural.Of(len(b), "line", "lines"), plural.Of(len(newText), "byte", "bytes"), plural.Of(n, "line is", "lines are"))
		}
		return out, budget - size
	}
	a := splitLines(*oldText)
	hunks := lineHunks(a, b, diffContext)
	shown := 0
	for _, h := range hunks {
		oldPart := strings.Join(a[h.a0:h.a1], "")
		newPart := strings.Join(b[h.b0:h.b1], "")
		if len(oldPart)+len(newPart) > budget {
			break
		}
		budget -= len(oldPart) + len(newPart)
		out = append(out, ToolCallContent{Type: "diff", Path: path, OldText: &oldPart, NewText: &newPart})
		shown++
	}
	if shown < len(hunks) {
		note("%d of the %s of %s %s too large to show here (%s were %d); the file is written in full.",
			len(hunks)-shown, plural.Of(len(hunks), "changed region", "changed regions"), path, plural.Word(len(hunks)-shown, "is", "are"), plural.Of(len(b), "line", "lines"), len(a))
	}
	return out, budget
}

// splitLines splits s after each newline; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// hunk is a region of the old lines [a0,a1) and of the new ones [b0,b1)
// that differ, context included.
type hunk struct{ a0, a1, b0, b1 int }

// lineHunks finds the regions where a and b differ, each with up to ctx
// unchanged lines around it; regions closer than 2*ctx lines are one.
// Common lines at both ends are set aside first (an edit of a huge file
// costs a pass over it); between them, Myers' algorithm finds the edits,
// up to diffMaxEdits of them, beyond which the whole region is one hunk.
func lineHunks(a, b []string, ctx int) []hunk {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	if pre == len(a) && pre == len(b) {
		return nil
	}
	changes := myers(hashLines(a[pre:len(a)-suf]), hashLines(b[pre:len(b)-suf]), diffMaxEdits)
	if changes == nil {
		changes = []hunk{{0, len(a) - pre - suf, 0, len(b) - pre - suf}}
	}
	var out []hunk
	for _, c := range changes {
		c = hunk{c.a0 + pre, c.a1 + pre, c.b0 + pre, c.b1 + pre}
		start := hunk{max(c.a0-ctx, 0), 0, 0, 0}
		start.b0 = c.b0 - (c.a0 - start.a0)
		if n := len(out); n > 0 && c.a0-out[n-1].a1 <= 2*ctx {
			out[n-1].a1, out[n-1].b1 = c.a1, c.b1
		} else {
			out = append(out, hunk{start.a0, c.a1, start.b0, c.b1})
		}
	}
	for i := range out { // the context after each (hunks are over 2*ctx apart)
		extra := min(ctx, len(a)-out[i].a1, len(b)-out[i].b1)
		out[i].a1 += extra
		out[i].b1 += extra
	}
	return out
}

// hashLines maps lines to numbers, equal for equal lines (a collision only
// makes a hunk smaller than the change it shows: the sides are still
// shown from the texts themselves).
func hashLines(lines []string) []uint64 {
	seed := lineSeed
	out := make([]uint64, len(lines))
	for i, l := range lines {
		out[i] = maphash.String(seed, l)
	}
	return out
}

var lineSeed = maphash.MakeSeed()

// myers returns the changed regions between a and b (without context), or
// nil when they need more than maxEdits line insertions and deletions.
func myers(a, b []uint64, maxEdits int) []hunk {
	n, m := len(a), len(b)
	limit := min(maxEdits, n+m)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int
	for d := 0; d <= limit; d++ {
		snap := make([]int, len(v))
		copy(snap, v)
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, off, n, m, d)
			}
		}
	}
	return nil
}

// backtrack walks the trace of myers back from (n, m) and gathers the
// runs of deletions and insertions into regions.
func backtrack(trace [][]int, off, n, m, d int) []hunk {
	x, y := n, m
	var regions []hunk
	add := func(a0, a1, b0, b1 int) {
		if k := len(regions); k > 0 && regions[k-1].a0 == a1 && regions[k-1].b0 == b1 {
			regions[k-1].a0, regions[k-1].b0 = a0, b0
			return
		}
		regions = append(regions, hunk{a0, a1, b0, b1})
	}
	for ; d > 0; d-- {
		v := trace[d]
		k := x - y
		var prevK int
		if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := v[off+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY { // the diagonal: equal lines
			x--
			y--
		}
		if x == prevX { // an insertion of b[prevY]
			add(x, x, prevY, y)
		} else { // a deletion of a[prevX]
			add(prevX, x, y, y)
		}
		x, y = prevX, prevY
	}
	// reverse: regions were gathered from the end
	for i, j := 0, len(regions)-1; i < j; i, j = i+1, j-1 {
		regions[i], regions[j] = regions[j], regions[i]
	}
	return regions
}
