package workflows

import (
	"context"
	"math/bits"
	"slices"
	"sort"
	"strings"
)

// Merge risks of a whole workflow (MergeRiskOf is one pair), found without
// comparing every pair of writers: 10,000 writers are 50 million pairs.
//
//   - Writers with the same write set are one group, and a pair of groups
//     at risk counts |g|·|h| pairs of steps (less the pairs of two shared
//     writers, which carry no merge risk) without naming them.
//   - Patterns are compared, each distinct pair once, only when one's
//     leading literal segments ("src/api/") are a prefix of the other's:
//     "src/**" and "docs/**" cannot overlap, and a trie of those prefixes
//     finds the pairs worth a comparison. The pairs that overlap make a
//     graph of patterns; a group's partners are the groups that write a
//     pattern next to one of its own, gathered in a bitset.
//   - Comparisons are bounded (maxOverlapChecks): patterns built to defeat
//     the trie ("**/a1", "**/a2", … all overlap under the conservative
//     rules) make the count a lower bound, said so (RiskCount.AtLeast),
//     instead of an unbounded wait.
//
// Only the first pairs (in declaration order) are named: a list the size of
// the count would be the problem this file exists to avoid.

// RiskCount is how many pairs of writers are at merge risk; the list
// beside it names the first of them.
type RiskCount struct {
	Pairs int `json:"pairs"`
	// AtLeast says the count stopped early: the write sets were too many
	// and too alike to compare them all, and there are at least Pairs.
	AtLeast bool `json:"at_least,omitempty"`
}

// maxOverlapChecks bounds the pattern comparisons of one merge-risk count
// (a comparison of two plain patterns costs about a microsecond).
var maxOverlapChecks = 1 << 20 // a variable for the tests

// writeGroup is the writers that share one write set.
type writeGroup struct {
	patterns []int // in riskGraph.patterns
	steps    []int // declaration order
	isolated []int // the isolated ones among steps
}

// riskGraph is the writers of a workflow in groups, and which of their
// patterns overlap.
type riskGraph struct {
	groups   []writeGroup
	groupOf  []int // by step; -1 for a step that writes nothing
	patterns []string
	writers  [][]int // by pattern: the groups that write it
	next     [][]int // by pattern: the patterns it overlaps, itself included if it does
	scratch  []uint64
}

// mergeRisks counts the pairs of writers at merge risk in steps and names
// the first limit of them, ordered by their first step, then their second.
// It stops with ctx's error when ctx ends.
func mergeRisks(ctx context.Context, steps []Step, cache *overlapCache, limit int) ([]MergeRisk, RiskCount, error) {
	g := newRiskGraph(steps)
	var count RiskCount
	if len(g.groups) == 0 {
		return []MergeRisk{}, count, nil
	}
	complete, err := g.link(ctx, cache)
	if err != nil {
		return nil, count, err
	}
	count.AtLeast = !complete
	for a := range g.groups {
		if a%256 == 0 && ctx.Err() != nil {
			return nil, count, ctx.Err()
		}
		ga := &g.groups[a]
		sharedA := len(ga.steps) - len(ga.isolated)
		g.partners(a, func(b int) {
			gb := &g.groups[b]
			switch {
			case b > a:
				count.Pairs += len(ga.steps)*len(gb.steps) - sharedA*(len(gb.steps)-len(gb.isolated))
			case b == a:
				count.Pairs += pairsOf(len(ga.steps)) - pairsOf(sharedA)
			}
		})
	}
	return g.firstRisks(steps, cache, limit), count, nil
}

func pairsOf(n int) int { return n * (n - 1) / 2 }

// newRiskGraph groups the writers of steps by write set.
func newRiskGraph(steps []Step) *riskGraph {
	g := &riskGraph{groupOf: make([]int, len(steps))}
	byKey := map[string]int{}
	patID := map[string]int{}
	for i := range steps {
		g.groupOf[i] = -1
		w := effectiveWrite(&steps[i])
		if len(w) == 0 {
			continue
		}
		k := strings.Join(w, "\x00")
		x, ok := byKey[k]
		if !ok {
			x = len(g.groups)
			byKey[k] = x
			group := writeGroup{}
			for _, p := range w {
				id, seen := patID[p]
				if !seen {
					id = len(g.patterns)
					patID[p] = id
					g.patterns = append(g.patterns, p)
					g.writers = append(g.writers, nil)
				}
				if n := len(g.writers[id]); n == 0 || g.writers[id][n-1] != x {
					g.writers[id] = append(g.writers[id], x)
					group.patterns = append(group.patterns, id)
				}
			}
			g.groups = append(g.groups, group)
		}
		g.groupOf[i] = x
		g.groups[x].steps = append(g.groups[x].steps, i)
		if steps[i].WorkspaceMode == Isolated {
			g.groups[x].isolated = append(g.groups[x].isolated, i)
		}
	}
	g.next = make([][]int, len(g.patterns))
	g.scratch = make([]uint64, (len(g.groups)+63)/64)
	return g
}

// prefixNode is a node of the trie of literal prefixes.
type prefixNode struct {
	children map[string]*prefixNode
	here     []int // patterns with an alternative whose literal prefix ends here
	// first and end delimit, in the trie's depth-first order of patterns,
	// those here and beneath.
	first, end int
}

func (n *prefixNode) sortedChildren() []*prefixNode {
	keys := make([]string, 0, len(n.children))
	for k := range n.children {
		keys = append(keys, k)
	}
	slices.Sort(keys) // a deterministic order, so that a stopped count is too
	out := make([]*prefixNode, len(keys))
	for i, k := range keys {
		out[i] = n.children[k]
	}
	return out
}

// link compares the patterns worth comparing and fills next. It reports
// false when it stopped at maxOverlapChecks, with the overlaps found so
// far.
func (g *riskGraph) link(ctx context.Context, cache *overlapCache) (bool, error) {
	// Each alternative of each pattern sits at the node of its leading
	// literal segments, compared case-insensitively as Overlap does; an
	// invalid pattern overlaps everything, and sits at the root.
	root := &prefixNode{}
	multi := false // some pattern sits at more than one node
	for id, p := range g.patterns {
		cp := cache.pattern(p)
		if !cp.ok {
			root.here = append(root.here, id)
			continue
		}
		multi = multi || len(cp.alts) > 1
		for _, alt := range cp.alts {
			n := root
			for _, seg := range alt {
				if !seg.literal() {
					break
				}
				k := foldedKey(seg)
				child := n.children[k]
				if child == nil {
					if n.children == nil {
						n.children = map[string]*prefixNode{}
					}
					child = &prefixNode{}
					n.children[k] = child
				}
				n = child
			}
			if m := len(n.here); m == 0 || n.here[m-1] != id {
				n.here = append(n.here, id)
			}
		}
	}
	var order []int // patterns in depth-first order
	var walk func(n *prefixNode)
	walk = func(n *prefixNode) {
		n.first = len(order)
		order = append(order, n.here...)
		for _, c := range n.sortedChildren() {
			walk(c)
		}
		n.end = len(order)
	}
	walk(root)

	// A pattern sitting at one node meets each other pattern at most once
	// below; only patterns with alternatives at several nodes need the
	// pairs already compared remembered.
	var compared map[uint64]bool
	if multi {
		compared = map[uint64]bool{}
	}
	checks := 0
	var visit func(n *prefixNode) (bool, error)
	visit = func(n *prefixNode) (bool, error) {
		// A pattern here can overlap those here and beneath, nothing else
		// that is not above (and those compared it already).
		for k, x := range order[n.first : n.first+len(n.here)] {
			for _, y := range order[n.first+k : n.end] {
				a, b := min(x, y), max(x, y)
				if compared != nil {
					key := uint64(a)<<32 | uint64(b)
					if compared[key] {
						continue
					}
					compared[key] = true
				}
				if checks++; checks > maxOverlapChecks {
					return false, nil
				}
				if checks%4096 == 0 && ctx.Err() != nil {
					return false, ctx.Err()
				}
				if !cache.overlap(g.patterns[a], g.patterns[b]) {
					continue
				}
				g.next[a] = append(g.next[a], b)
				if b != a {
					g.next[b] = append(g.next[b], a)
				}
			}
		}
		for _, c := range n.sortedChildren() {
			if ok, err := visit(c); !ok || err != nil {
				return ok, err
			}
		}
		return true, nil
	}
	return visit(root)
}

// partners calls visit with each group whose write set overlaps group a's
// (a itself when it overlaps itself), in increasing order.
func (g *riskGraph) partners(a int, visit func(b int)) {
	clear(g.scratch)
	for _, x := range g.groups[a].patterns {
		for _, y := range g.next[x] {
			for _, b := range g.writers[y] {
				g.scratch[b/64] |= 1 << (b % 64)
			}
		}
	}
	for w, word := range g.scratch {
		for word != 0 {
			visit(w*64 + bits.TrailingZeros64(word))
			word &= word - 1
		}
	}
}

// firstRisks names the first limit pairs at risk: by first step, then
// second, in declaration order. Each step looks only at the groups its own
// overlaps, and it stops as soon as the list is full.
func (g *riskGraph) firstRisks(steps []Step, cache *overlapCache, limit int) []MergeRisk {
	out := []MergeRisk{}
	var later []int
	partners := make([][]int, len(g.groups)) // by group, once looked at
	for i := range steps {
		if len(out) >= limit {
			break
		}
		a := g.groupOf[i]
		if a < 0 {
			continue
		}
		if partners[a] == nil {
			partners[a] = []int{}
			g.partners(a, func(b int) { partners[a] = append(partners[a], b) })
		}
		want := limit - len(out)
		later = later[:0]
		for _, b := range partners[a] {
			// A shared writer is at risk only beside an isolated one.
			pool := g.groups[b].steps
			if steps[i].WorkspaceMode != Isolated {
				pool = g.groups[b].isolated
			}
			at := sort.SearchInts(pool, i+1)
			later = append(later, pool[at:min(len(pool), at+want)]...)
		}
		slices.Sort(later)
		for _, j := range later[:min(len(later), want)] {
			if r, ok := mergeRisk(cache.overlap, &steps[i], &steps[j]); ok {
				out = append(out, r)
			}
		}
	}
	return out
}
