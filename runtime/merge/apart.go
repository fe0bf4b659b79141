package merge

import "bytes"

// mergeInProcess lets a benchmark turn mergeApart off, to compare with
// git merge-file alone.
var mergeInProcess = true

// mergeApart merges in process, without starting git, the common case of
// a file both sides changed: each side changed one run of lines, and the
// two runs are far enough apart that `git merge-file` cannot see them as
// one conflict. Its result is then byte for byte what git writes (see
// FuzzMergeApart, which compares the two); every other case (the runs
// overlap, touch, or could touch once git's diff slides them) returns
// ok false and goes to git as before.
//
// Why it is exact although it runs no diff: git's merge (xdiff) first
// trims the lines two files share at their start and at their end, so
// each hunk of its diff of base to ours lies in ours' trimmed run, save
// that xdiff then slides a hunk up or down over lines equal to lines the
// hunk holds — which is bounded here by counting the lines next to the
// run whose text the run holds. When every hunk of ours ends before every
// hunk of theirs starts, with a base line between them, git takes both
// sides' hunks as they are, and however its diff aligned them the result
// is ours up to a base line between the runs, then theirs from there:
// ours after its last hunk, and theirs before its first, are that base's
// lines one for one. A general diff library was not used for this: a
// diff whose alignment differs from xdiff's (Myers variants, patience,
// the choice among equal lines) would give another result on repeated
// lines, so a merge of several hunks per side could not promise git's
// bytes; the one-run case needs no alignment at all.
func mergeApart(ours, base, theirs []byte) (merged []byte, ok bool) {
	b, o, t := lines(base), lines(ours), lines(theirs)
	oStart, oEnd, oSideEnd := changedRun(b, o)
	tStart, tEnd, tSideEnd := changedRun(b, t)
	if oStart == oEnd && oStart == oSideEnd || tStart == tEnd && tStart == tSideEnd {
		return nil, false // a side did not change: not what this is for
	}
	oUp, oDown := slide(b, o, oStart, oEnd, oSideEnd)
	tUp, tDown := slide(b, t, tStart, tEnd, tSideEnd)
	switch {
	case oEnd+oDown < tStart-tUp:
		// ours' lines up to the end of its run, the base between the
		// runs, theirs' from the start of its run.
		return join(o[:oSideEnd], b[oEnd:tStart], t[tStart:]), true
	case tEnd+tDown < oStart-oUp:
		return join(t[:tSideEnd], b[tEnd:oStart], o[oStart:]), true
	}
	return nil, false
}

// lines splits text into its lines, each with its "\n" (the last one may
// have none), as xdiff's records are.
func lines(text []byte) [][]byte {
	ls := bytes.SplitAfter(text, []byte("\n"))
	if len(ls[len(ls)-1]) == 0 {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// changedRun is the run of lines side changed in base, as xdiff trims it: the
// lines shared at the start are taken first, then those shared at the end
// among the rest. base[start:end] became side[start:sideEnd].
func changedRun(base, side [][]byte) (start, end, sideEnd int) {
	n := min(len(base), len(side))
	for start < n && bytes.Equal(base[start], side[start]) {
		start++
	}
	shared := 0
	for shared < n-start && bytes.Equal(base[len(base)-1-shared], side[len(side)-1-shared]) {
		shared++
	}
	return start, len(base) - shared, len(side) - shared
}

// slide bounds how far xdiff may slide the hunks of the run
// base[start:end] → side[start:sideEnd]: a hunk moves over a line only
// when that line equals one the hunk holds, and a hunk only ever holds
// lines equal to the run's (deleted or added), so it cannot pass the
// first base line next to the run whose text the run does not hold.
func slide(base, side [][]byte, start, end, sideEnd int) (up, down int) {
	held := make(map[string]struct{}, end-start+sideEnd-start)
	for _, l := range base[start:end] {
		held[string(l)] = struct{}{}
	}
	for _, l := range side[start:sideEnd] {
		held[string(l)] = struct{}{}
	}
	has := func(l []byte) bool { _, ok := held[string(l)]; return ok }
	for start-up > 0 && has(base[start-up-1]) {
		up++
	}
	for end+down < len(base) && has(base[end+down]) {
		down++
	}
	return up, down
}

// join concatenates runs of lines.
func join(parts ...[][]byte) []byte {
	size := 0
	for _, p := range parts {
		for _, l := range p {
			size += len(l)
		}
	}
	out := make([]byte, 0, size)
	for _, p := range parts {
		for _, l := range p {
			out = append(out, l...)
		}
	}
	return out
}
