// Package suggest finds what a mistyped name was probably meant to be: a
// command, a flag, a configuration key.
package suggest

import (
	"slices"
	"strings"
)

// Nearest is the candidate closest to s by edit distance, when it is close
// enough to be a typo (at most a third of its length, and at most 2), or
// the only candidate s is the start of.
func Nearest(s string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		d := EditDistance(strings.ToLower(s), c)
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	if best != "" && bestDist <= min(2, max(1, len(s)/3)) {
		return best
	}
	var starts []string
	for _, c := range candidates {
		if len(s) >= 2 && strings.HasPrefix(c, s) {
			starts = append(starts, c)
		}
	}
	if len(starts) == 1 {
		return starts[0]
	}
	return ""
}

// EditDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of neighbours each cost 1.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = slices.Min([]int{prev[j] + 1, cur[j-1] + 1, prev[j-1] + cost})
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
