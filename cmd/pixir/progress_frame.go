// The live view's frame in a terminal: every row while they fit, else a
// window the terminal's height (the counts of rows by status, the loops,
// the rows that ended last and those running), so a frame of a workflow
// of 10,000 step runs costs what one of twenty does.

package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/width"

	"github.com/pixir-go/pixir/internal/plural"
	"github.com/pixir-go/pixir/internal/termtext"
)

// endedRow is a row as it ended; it stands for the row while the row has
// not ended again since (endedAs).
type endedRow struct {
	row *stepRow
	as  int
}

// keepEnded is how many ended rows the view remembers for its window:
// more than a terminal has lines.
const keepEnded = 512

// setState moves r to state s, keeping the counts, the running rows and
// the ended ones up to date.
func (v *workflowView) setState(r *stepRow, s rowState) {
	v.counts[r.state]--
	if v.counts[r.state] == 0 {
		delete(v.counts, r.state)
	}
	v.counts[s]++
	if r.superseded {
		v.superseded[r.state]--
		v.superseded[s]++
	}
	r.state = s
	switch s {
	case rowQueued, rowRunning:
		v.active[r] = struct{}{}
		return
	case rowPending:
		delete(v.active, r)
		return
	}
	delete(v.active, r)
	v.ends++
	r.endedAs = v.ends
	v.recent = append(v.recent, endedRow{r, v.ends})
	if len(v.recent) >= 4*keepEnded { // drop the oldest now and then, not on every end
		v.recent = append(v.recent[:0], v.recent[len(v.recent)-keepEnded:]...)
	}
}

// draw replaces the last frame with the current one. Lines are cut to
// the terminal's width, so none wraps, and a frame is shorter than the
// terminal, so the cursor arithmetic holds.
func (v *workflowView) draw() {
	if v.paused > 0 || !v.tty {
		return
	}
	v.frame++
	cols, height := v.size()
	if cols <= 0 { // unknown
		cols = 100
	}
	if height <= 0 {
		height = 24
	}
	if height < minLiveViewRows {
		// Resized too short for a frame: the lines pipes get from here
		// on, below what was drawn.
		v.tty, v.drawn = false, 0
		v.line("the terminal has %d rows, too few for the live view (%d): plain lines from here on", height, minLiveViewRows)
		return
	}
	var b strings.Builder
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dF\x1b[J", v.drawn) // up to the frame's first line, clear below
	}
	lines := v.frameLines(max(height-1, 4))
	for _, l := range lines {
		l = termtext.Inert(l) // step ids, agent names and activities are not Pixir's own text
		l = cutToColumns(l, cols-1)
		b.WriteString(l)
		b.WriteString("\x1b[K\n")
	}
	v.drawn = len(lines)
	fmt.Fprint(v.w, b.String())
}

// frameLines are the lines of a frame of at most room lines.
func (v *workflowView) frameLines(room int) []string {
	title := "Workflow"
	if v.name != "" {
		title += " " + v.name
	}
	counted := v.brief()
	if v.final != nil {
		// The run's outcome: counted as its verdict line counts.
		counted = v.final.Brief()
	}
	head := fmt.Sprintf("%s — %s · %s", title, counted, seconds(v.now().Sub(v.begin).Milliseconds()))
	if v.status != "" {
		head += " · " + strings.ToUpper(string(v.status))
	}
	lines := []string{head}
	if 1+len(v.loops)+v.made <= room {
		for _, l := range v.loops {
			lines = append(lines, v.loopLine(l))
		}
		v.eachRow(func(r *stepRow) { lines = append(lines, v.rowLine(r)) })
		return lines
	}

	// A window: the counts, the loops still running (a third of the room
	// at most), the rows still running and the rows that ended last.
	lines = append(lines, "  "+v.countsLine())
	var running []*loopRow
	for _, l := range v.loops {
		if !l.done {
			running = append(running, l)
		}
	}
	shown := running[:min(len(running), max(room/3-1, 0))]
	for _, l := range shown {
		lines = append(lines, v.loopLine(l))
	}
	if hidden := len(v.loops) - len(shown); hidden > 0 {
		lines = append(lines, fmt.Sprintf("  … %s (%d finished)", plural.Of(hidden, "more loop", "more loops"), len(v.loops)-len(running)))
	}
	rows := room - len(lines) - 1 // the last line says what is left out
	active := slices.SortedFunc(maps.Keys(v.active), func(a, b *stepRow) int { return cmp.Compare(a.made, b.made) })
	if len(active) > rows {
		active = active[:max(rows, 0)]
	}
	var ended []*stepRow
	for i := len(v.recent) - 1; i >= 0 && len(ended) < rows-len(active); i-- {
		if e := v.recent[i]; e.row.endedAs == e.as {
			ended = append(ended, e.row)
		}
	}
	slices.Reverse(ended) // the newest last, just above the running rows
	for _, r := range ended {
		lines = append(lines, v.rowLine(r))
	}
	for _, r := range active {
		lines = append(lines, v.rowLine(r))
	}
	if hidden := v.made - len(ended) - len(active); hidden > 0 {
		more := "  … " + plural.Of(hidden, "more row", "more rows")
		if n := len(v.active) - len(active); n > 0 {
			more += fmt.Sprintf(" (%d of them running or queued)", n)
		}
		lines = append(lines, more)
	}
	return lines
}

// statusOrder is the order of the counts: what moves first, then what
// ended well, then the rest by name.
var statusOrder = []rowState{rowRunning, rowQueued, rowPending, rowReady}

// countsLine is the number of rows in each state: "8 running · 3 queued ·
// 39 pending · 950 checkpoint_ready · 2 failed".
func (v *workflowView) countsLine() string {
	var parts []string
	for _, s := range statusOrder {
		if n := v.counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	for _, s := range slices.Sorted(maps.Keys(v.counts)) {
		if n := v.counts[s]; n > 0 && !slices.Contains(statusOrder, s) {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return strings.Join(parts, " · ")
}

func (v *workflowView) loopLine(l *loopRow) string {
	mark := "↻"
	if l.done {
		mark = "∎"
	}
	return fmt.Sprintf("  %s loop %s: %s", mark, l.run, l.text)
}

func (v *workflowView) rowLine(r *stepRow) string {
	mark := "·"
	switch r.state {
	case rowRunning, rowQueued:
		mark = spinner[v.frame%len(spinner)]
	case rowReady:
		mark = "✓"
	case rowHeld:
		mark = "⏸"
	case rowSkipped:
		mark = "↷"
	case rowPending:
	default:
		mark = "✗"
	}
	elapsed := "–"
	switch {
	case !r.ended.IsZero():
		elapsed = seconds(r.ended.Sub(r.started).Milliseconds())
	case !r.started.IsZero():
		elapsed = seconds(v.now().Sub(r.started).Milliseconds())
	}
	return fmt.Sprintf("  %s %-14s %-10s %7s  %-18s %s", mark, r.id, r.agent, elapsed, r.state, r.activity)
}

// cutToColumns is s cut to the columns a terminal gives it: a wide
// character (CJK, fullwidth forms, most emoji) takes two, a combining
// mark none. Counting runes, a line of Chinese summary took twice the
// room counted, wrapped, and the next frame's move up (one line a line)
// left the wrapped rows on the screen, frame after frame.
func cutToColumns(s string, cols int) string {
	used := 0
	for i, r := range s {
		w := runeColumns(r)
		if used+w > cols {
			return s[:i]
		}
		used += w
	}
	return s
}

// runeColumns is how many columns a terminal gives r.
func runeColumns(r rune) int {
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	case r >= 0x1F300 && r <= 0x1FAFF: // emoji pictographs: wide on today's terminals
		return 2
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}
