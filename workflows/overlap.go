package workflows

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// Overlap reports whether some path could match both doublestar patterns.
// It decides the question exactly for the pattern language (literals, ?, *,
// **, [classes], {alternatives}, \ escapes) by searching the product of the
// two patterns' automata, then widens the answer in the conservative
// direction wherever the filesystem or the caller might disagree with a
// literal reading. The conservative cases, each tested in overlap_test.go:
//
//   - a pattern whose last segment has no wildcard also covers everything
//     beneath it: "src" names the directory src, so it overlaps "src/a.go"
//     (a step that reads "lib" reads the files in lib). A pattern ending in
//     a wildcard ("*.md", "*") names files by shape and covers only what it
//     matches, so "**/*.go" and "**/*.md" stay disjoint even though a
//     directory could be called "x.md";
//   - letters are compared without case (ASCII ranges and simple Unicode
//     folding of literals), because on a case-insensitive filesystem
//     "README.md" and "readme.md" are one file; a negated class such as
//     [^a] is then taken to match any character;
//   - an invalid pattern, or one with an empty segment ("a//b", "a/"),
//     overlaps everything (Validate rejects both first; this only keeps
//     Overlap safe on its own);
//   - a pattern whose {a,b} alternatives expand to more than maxExpansions
//     overlaps everything.
//
// Overlap does not normalise paths: "./a" and "a" differ here, and
// Normalize strips "./" before any comparison.
func Overlap(a, b string) bool {
	pa, okA := compile(a)
	pb, okB := compile(b)
	return compiledOverlap(pa, okA, pb, okB)
}

// compiledOverlap is Overlap of two compiled patterns (ok false: invalid,
// which overlaps everything).
func compiledOverlap(pa [][]segment, okA bool, pb [][]segment, okB bool) bool {
	if !okA || !okB {
		return true
	}
	for _, x := range pa {
		for _, y := range pb {
			if pathsOverlap(x, y) {
				return true
			}
		}
	}
	return false
}

// overlapCache decides Overlap for the many pattern pairs the planner and
// the scheduler ask about: each pattern is compiled once (and named by a
// small number), two patterns whose leading literal segments differ
// ("src/a.go", "src/b.go") are told apart without a search, and every
// other pair is searched once. It is not safe for concurrent use.
type overlapCache struct {
	ids      map[string]patternID
	compiled []compiledPattern
	answers  map[uint64]bool // at most maxOverlapAnswers
	// searches counts the pairs searched (not told apart at once): the
	// costly part, which a dry run's work budget counts.
	searches int
}

// maxOverlapAnswers bounds the pairs an overlapCache remembers (about
// 40 MB); beyond, pairs are searched each time they are asked about.
const maxOverlapAnswers = 1 << 20

// patternID names a pattern of one overlapCache.
type patternID int32

type compiledPattern struct {
	alts [][]segment
	ok   bool
	// prefixes are the alternatives' leading literal segments, folded
	// (foldedKey) and each followed by a slash.
	prefixes []string
	// anywhere: every alternative begins and ends with ** ("**/x.go"
	// covers what is beneath x.go too) and can match something. Two such
	// patterns always overlap: a path that holds what one matches and then
	// what the other matches is matched by both.
	anywhere bool
}

func newOverlapCache() *overlapCache {
	return &overlapCache{ids: map[string]patternID{}, answers: map[uint64]bool{}}
}

// id interns p.
func (c *overlapCache) id(p string) patternID {
	id, ok := c.ids[p]
	if !ok {
		id = patternID(len(c.compiled))
		c.ids[p] = id
		cp := compiledPattern{}
		cp.alts, cp.ok = compile(p)
		for _, alt := range cp.alts {
			var b strings.Builder
			for _, seg := range alt {
				if !seg.literal() {
					break
				}
				b.WriteString(foldedKey(seg))
				b.WriteByte('/')
			}
			cp.prefixes = append(cp.prefixes, b.String())
		}
		cp.anywhere = cp.ok && len(cp.alts) > 0
		for _, alt := range cp.alts {
			cp.anywhere = cp.anywhere && len(alt) > 0 && alt[0].globstar && alt[len(alt)-1].globstar && satisfiable(alt)
		}
		c.compiled = append(c.compiled, cp)
	}
	return id
}

func (c *overlapCache) pattern(p string) compiledPattern { return c.compiled[c.id(p)] }

// overlap is Overlap(a, b).
func (c *overlapCache) overlap(a, b string) bool { return c.overlapIDs(c.id(a), c.id(b)) }

func (c *overlapCache) overlapIDs(a, b patternID) bool {
	if a > b {
		a, b = b, a // Overlap is symmetric
	}
	pa, pb := &c.compiled[a], &c.compiled[b]
	switch {
	case pa.anywhere && pb.anywhere:
		return true
	case pa.ok && pb.ok && prefixesDisjoint(pa.prefixes, pb.prefixes):
		return false
	}
	k := uint64(a)<<32 | uint64(b)
	v, done := c.answers[k]
	if !done {
		c.searches++
		v = compiledOverlap(pa.alts, pa.ok, pb.alts, pb.ok)
		if len(c.answers) < maxOverlapAnswers {
			c.answers[k] = v
		}
	}
	return v
}

// satisfiable reports whether some path matches the segments: every
// character set in them accepts something.
func satisfiable(segs []segment) bool {
	for _, seg := range segs {
		for _, t := range seg.toks {
			if !t.star && !t.set.negated && len(t.set.ranges) == 0 {
				return false
			}
		}
	}
	return true
}

// prefixesDisjoint reports whether no alternative of one pattern can meet
// an alternative of the other because their leading literal segments
// differ: neither prefix is the other's beginning.
func prefixesDisjoint(xs, ys []string) bool {
	for _, x := range xs {
		for _, y := range ys {
			if strings.HasPrefix(x, y) || strings.HasPrefix(y, x) {
				return false
			}
		}
	}
	return true
}

// foldedKey names a literal segment up to case, as Overlap compares
// literals: each character by the smallest of its case variants.
func foldedKey(seg segment) string {
	var b strings.Builder
	for _, t := range seg.toks {
		least := t.set.ranges[0].lo
		for _, r := range t.set.ranges {
			least = min(least, r.lo)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// maxExpansions bounds brace expansion; beyond it Overlap gives up and says
// yes rather than spend unbounded time on a pathological pattern.
const maxExpansions = 256

// segment is one path segment of a pattern: either ** (any number of whole
// segments) or a sequence of single-character matchers and stars.
type segment struct {
	globstar bool
	toks     []token
}

// literal reports whether a segment has no wildcard at all, so a pattern
// ending in it reads as naming a directory (or file) by name.
func (s segment) literal() bool {
	if s.globstar {
		return false
	}
	for _, t := range s.toks {
		if !t.lit {
			return false
		}
	}
	return true
}

// token matches one character (set) or, when star, any run of characters
// within a segment.
type token struct {
	star bool
	lit  bool // a plain or escaped character, not ?, * or a class
	set  charSet
}

// compile expands braces and splits each alternative into segments, adding
// a trailing ** after a literal last segment so a named directory covers
// its contents.
// ok is false when the pattern is invalid or expands too far.
func compile(p string) (alts [][]segment, ok bool) {
	if !doublestar.ValidatePattern(p) {
		return nil, false
	}
	exp, ok := expandBraces(p, maxExpansions)
	if !ok {
		return nil, false
	}
	exp, ok = separatorForms(exp, maxExpansions)
	if !ok {
		return nil, false
	}
	for _, e := range exp {
		segs, ok := splitSegments(e)
		if !ok {
			return nil, false
		}
		if n := len(segs); n > 0 && segs[n-1].literal() {
			segs = append(segs, segment{globstar: true})
		}
		alts = append(alts, segs)
	}
	return alts, true
}

// syntax calls visit with the index of each character of p from index
// from on that is outside escapes and character classes (so it may be
// pattern syntax: braces, commas, slashes), until visit returns false.
func syntax(p string, from int, visit func(i int) bool) {
	inClass := false
	for i := from; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			// A ] right after [ or [^ / [! is a literal member.
			if i+1 < len(p) && (p[i+1] == '^' || p[i+1] == '!') {
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				i++
			}
		default:
			if !visit(i) {
				return
			}
		}
	}
}

// expandBraces rewrites {a,b} alternatives (nested ones too) into separate
// patterns, leaving escapes and character classes untouched.
func expandBraces(p string, limit int) ([]string, bool) {
	open := -1
	syntax(p, 0, func(i int) bool {
		if p[i] == '{' {
			open = i
			return false
		}
		return true
	})
	if open < 0 {
		return []string{p}, true
	}
	// Find the matching } and the top-level commas between.
	depth, cuts, end := 0, []int{open}, -1
	syntax(p, open+1, func(i int) bool {
		switch p[i] {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				end = i
				return false
			}
			depth--
		case ',':
			if depth == 0 {
				cuts = append(cuts, i)
			}
		}
		return true
	})
	if end < 0 {
		return nil, false
	}
	cuts = append(cuts, end)
	prefix, suffix := p[:open], p[end+1:]
	var out []string
	for k := 0; k+1 < len(cuts); k++ {
		alt := prefix + p[cuts[k]+1:cuts[k+1]] + suffix
		sub, ok := expandBraces(alt, limit-len(out))
		if !ok {
			return nil, false
		}
		out = append(out, sub...)
		if len(out) > limit {
			return nil, false
		}
	}
	return out, true
}

// separatorForms rewrites each brace-free pattern where doublestar lets
// something other than a plain "/" match a path's separator: an escaped
// slash ("a\\/b") is a separator, and a class that can match '/' ("[/]",
// "[+-0]", a negated class that does not exclude it) matches either one
// character of a segment or the separator itself. Each such class forks
// its pattern in two: the class kept (within a segment it matches only a
// segment's characters) and a "/" in its place. Beyond limit forms, ok is
// false (Overlap then says yes).
func separatorForms(patterns []string, limit int) (forms []string, ok bool) {
	for _, p := range patterns {
		if !strings.ContainsAny(p, `\[`) {
			forms = append(forms, p)
			continue
		}
		prefixes := []string{""}
		appendAll := func(s string) {
			for k := range prefixes {
				prefixes[k] += s
			}
		}
		for i := 0; i < len(p); {
			switch {
			case p[i] == '\\' && i+1 < len(p):
				if p[i+1] == '/' {
					appendAll("/")
				} else {
					appendAll(p[i : i+2])
				}
				i += 2
			case p[i] == '[':
				n, slash, valid := classSpan(p[i:])
				if !valid {
					return nil, false
				}
				class := p[i : i+n]
				if slash {
					forked := make([]string, 0, 2*len(prefixes))
					for _, pre := range prefixes {
						forked = append(forked, pre+class, pre+"/")
					}
					prefixes = forked
					if len(forms)+len(prefixes) > limit {
						return nil, false
					}
				} else {
					appendAll(class)
				}
				i += n
			default:
				appendAll(p[i : i+1])
				i++
			}
		}
		forms = append(forms, prefixes...)
		if len(forms) > limit {
			return nil, false
		}
	}
	return forms, true
}

// classSpan reads the [class] at the start of s as doublestar reads it:
// its length in bytes and whether it can match '/'.
func classSpan(s string) (n int, slash, ok bool) {
	negated, rs, n, ok := classRanges(s)
	if !ok {
		return 0, false, false
	}
	listed := false
	for _, r := range rs {
		if r.lo <= '/' && '/' <= r.hi {
			listed = true
		}
	}
	return n, listed != negated, true
}

// splitSegments splits a brace-free pattern on unescaped slashes outside
// classes and tokenises each segment. A segment that is exactly ** is a
// globstar; ** inside a segment (a**b) is a plain star, as in doublestar.
func splitSegments(p string) ([]segment, bool) {
	var parts []string
	start := 0
	syntax(p, 0, func(i int) bool {
		if p[i] == '/' {
			parts = append(parts, p[start:i])
			start = i + 1
		}
		return true
	})
	parts = append(parts, p[start:])
	segs := make([]segment, 0, len(parts))
	for _, part := range parts {
		if part == "" {
			// "a//b" or "a/": doublestar's matching of empty segments is
			// not worth modelling; Validate rejects them anyway.
			return nil, false
		}
		if part == "**" {
			// Consecutive globstars are one.
			if n := len(segs); n > 0 && segs[n-1].globstar {
				continue
			}
			segs = append(segs, segment{globstar: true})
			continue
		}
		toks, ok := tokenize(part)
		if !ok {
			return nil, false
		}
		segs = append(segs, segment{toks: toks})
	}
	return segs, true
}

// tokenize turns one segment into tokens, folding case as Overlap promises.
func tokenize(s string) ([]token, bool) {
	var toks []token
	for i := 0; i < len(s); {
		c, w := utf8.DecodeRuneInString(s[i:])
		switch c {
		case '*':
			if n := len(toks); n == 0 || !toks[n-1].star {
				toks = append(toks, token{star: true})
			}
			i += w
		case '?':
			toks = append(toks, token{set: anyChar()})
			i += w
		case '[':
			set, n, ok := parseClass(s[i:])
			if !ok {
				return nil, false
			}
			toks = append(toks, token{set: set})
			i += n
		case '\\':
			i += w
			if i >= len(s) {
				return nil, false
			}
			c, w = utf8.DecodeRuneInString(s[i:])
			toks = append(toks, token{lit: true, set: literal(c)})
			i += w
		default:
			toks = append(toks, token{lit: true, set: literal(c)})
			i += w
		}
	}
	return toks, true
}

// parseClass reads a [class] at the start of s and returns its folded set
// and the bytes it used.
func parseClass(s string) (charSet, int, bool) {
	negated, rs, n, ok := classRanges(s)
	switch {
	case !ok:
		return charSet{}, 0, false
	case negated:
		// Folded, a negated class may match either case of what it
		// excludes; treat it as any character.
		return anyChar(), n, true
	}
	return foldRanges(rs), n, true
}

// classRanges reads a [class] at the start of s as written: whether it is
// negated, its ranges and the bytes it used.
func classRanges(s string) (negated bool, rs []runeRange, n int, ok bool) {
	i := 1
	if i < len(s) && (s[i] == '^' || s[i] == '!') {
		negated = true
		i++
	}
	first := true
	for i < len(s) {
		if s[i] == ']' && !first {
			return negated, rs, i + 1, true
		}
		first = false
		lo, w, ok := classRune(s[i:])
		if !ok {
			return false, nil, 0, false
		}
		i += w
		hi := lo
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			hi, w, ok = classRune(s[i+1:])
			if !ok {
				return false, nil, 0, false
			}
			i += 1 + w
		}
		// doublestar reads a range's first character before it sees the
		// '-', so an inverted range ("[0- ]") still matches that character.
		rs = append(rs, runeRange{lo, max(lo, hi)})
	}
	return false, nil, 0, false
}

func classRune(s string) (rune, int, bool) {
	if s[0] == '\\' {
		if len(s) < 2 {
			return 0, 0, false
		}
		r, w := utf8.DecodeRuneInString(s[1:])
		return r, 1 + w, true
	}
	r, w := utf8.DecodeRuneInString(s)
	return r, w, true
}

// runeRange is an inclusive range of runes.
type runeRange struct{ lo, hi rune }

// charSet is the set of characters one token accepts: the listed ranges, or
// when negated every character but them. No set ever accepts '/', which
// only separates segments.
type charSet struct {
	negated bool
	ranges  []runeRange
}

func anyChar() charSet { return charSet{negated: true} }

// literal is a one-character set widened to the character's case orbit.
func literal(c rune) charSet {
	rs := []runeRange{{c, c}}
	for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
		rs = append(rs, runeRange{f, f})
	}
	return charSet{ranges: rs}
}

// foldRanges adds the other ASCII case of every letter a range covers.
func foldRanges(rs []runeRange) charSet {
	out := append([]runeRange(nil), rs...)
	for _, r := range rs {
		if lo, hi := max(r.lo, 'a'), min(r.hi, 'z'); lo <= hi {
			out = append(out, runeRange{lo - 'a' + 'A', hi - 'a' + 'A'})
		}
		if lo, hi := max(r.lo, 'A'), min(r.hi, 'Z'); lo <= hi {
			out = append(out, runeRange{lo - 'A' + 'a', hi - 'A' + 'a'})
		}
		if r.lo == r.hi && r.lo > unicode.MaxASCII {
			out = append(out, literal(r.lo).ranges...)
		}
	}
	return charSet{ranges: out}
}

func (s charSet) has(c rune) bool {
	if c == '/' {
		return false
	}
	in := false
	for _, r := range s.ranges {
		if r.lo <= c && c <= r.hi {
			in = true
			break
		}
	}
	return in != s.negated
}

// intersects reports whether some character is in both sets.
func (s charSet) intersects(t charSet) bool {
	if s.negated && t.negated {
		// Two finite exclusions leave infinitely many characters.
		return true
	}
	if s.negated {
		s, t = t, s
	}
	// s is positive: look for a member of s that t accepts. Within each range
	// of s the only candidates worth testing are its start and the first
	// characters after an excluded range of t (or after '/').
	for _, r := range s.ranges {
		cands := []rune{r.lo, '/' + 1}
		for _, x := range t.ranges {
			cands = append(cands, x.lo, x.hi+1)
		}
		for _, c := range cands {
			if c >= r.lo && c <= r.hi && t.has(c) {
				return true
			}
		}
	}
	return false
}

// pathsOverlap searches the product of two segment lists: state (i, j)
// means both patterns could have consumed the same leading segments.
func pathsOverlap(a, b []segment) bool {
	// Two patterns that begin with different literal segments cannot
	// meet: the common case of distinct directories, decided at once.
	for k := 0; k < len(a) && k < len(b) && a[k].literal() && b[k].literal(); k++ {
		if !segmentsOverlap(a[k].toks, b[k].toks) {
			return false
		}
	}
	s := pathSearch{a: a, b: b, seen: make([]bool, (len(a)+1)*(len(b)+1))}
	return s.visit(0, 0)
}

type pathSearch struct {
	a, b []segment
	seen []bool // indexed i*(len(b)+1)+j
}

func (s *pathSearch) visit(i, j int) bool {
	a, b := s.a, s.b
	if i == len(a) && j == len(b) {
		return true
	}
	k := i*(len(b)+1) + j
	if s.seen[k] {
		return false
	}
	s.seen[k] = true
	if i < len(a) && a[i].globstar {
		// ** matches nothing, or swallows one segment b produces.
		if s.visit(i+1, j) || (j < len(b) && s.visit(i, j+1)) {
			return true
		}
	}
	if j < len(b) && b[j].globstar {
		if s.visit(i, j+1) || (i < len(a) && s.visit(i+1, j)) {
			return true
		}
	}
	if i < len(a) && j < len(b) && !a[i].globstar && !b[j].globstar &&
		segmentsOverlap(a[i].toks, b[j].toks) {
		return s.visit(i+1, j+1)
	}
	return false
}

// segmentsOverlap reports whether some non-empty segment name matches both
// token lists. The search runs over (position in a, position in b, whether
// a character has been consumed yet).
func segmentsOverlap(a, b []token) bool {
	s := segmentSearch{a: a, b: b, seen: make([]bool, 2*(len(a)+1)*(len(b)+1))}
	return s.visit(0, 0, false)
}

type segmentSearch struct {
	a, b []token
	seen []bool // indexed ((i*(len(b)+1))+j)*2 + nonEmpty
}

func (s *segmentSearch) visit(i, j int, nonEmpty bool) bool {
	a, b := s.a, s.b
	if i == len(a) && j == len(b) {
		return nonEmpty
	}
	k := (i*(len(b)+1) + j) * 2
	if nonEmpty {
		k++
	}
	if s.seen[k] {
		return false
	}
	s.seen[k] = true
	// A star may match the empty string.
	if i < len(a) && a[i].star && s.visit(i+1, j, nonEmpty) {
		return true
	}
	if j < len(b) && b[j].star && s.visit(i, j+1, nonEmpty) {
		return true
	}
	if i == len(a) || j == len(b) {
		return false
	}
	// Consume one character both accept; a star stays where it is.
	sa, sb := a[i].set, b[j].set
	if a[i].star {
		sa = anyChar()
	}
	if b[j].star {
		sb = anyChar()
	}
	if !sa.intersects(sb) {
		return false
	}
	ni, nj := i+1, j+1
	if a[i].star {
		ni = i
	}
	if b[j].star {
		nj = j
	}
	return s.visit(ni, nj, true)
}

// CheckPattern is the one rule of a path pattern, wherever one is written
// (a step's read_set and write_set, a commit's paths and exclude, an
// agent's write_set): p read as meant (spaces at either end and a leading
// "./" go, a trailing "/" is the folder's contents) and why it cannot be
// used, or "". runtime/agents checks an agent's write_set with it (runtime
// sits above workflows), so an agent and a step never read one pattern
// two ways.
func CheckPattern(p string) (norm, problem string) {
	norm = normalizePattern(p)
	return norm, patternProblem(norm)
}

// patternProblem says why a workflow path pattern is unusable, or "" when it
// is fine. Beyond doublestar's syntax a pattern must stay inside the
// workspace, relative to its root, without empty or dot segments, because
// the scheduler compares patterns textually and a path that escapes the
// workspace is a confinement question, not a scheduling one.
func patternProblem(p string) string {
	if p == "" {
		return "it is empty"
	}
	if !doublestar.ValidatePattern(p) {
		return "it is not a valid doublestar pattern (an unclosed [ or {, or a trailing \\)"
	}
	if strings.HasPrefix(p, "/") {
		return "it is absolute; write it relative to the workspace root"
	}
	exp, ok := expandBraces(p, maxExpansions)
	if !ok {
		return "its {a,b} alternatives expand to more than 256 patterns"
	}
	for _, e := range exp {
		// Read as doublestar matches it: "\." is ".", "\/" a separator.
		if u := unescaped(e); u != e {
			if strings.HasPrefix(u, "/") { // "\/x"
				return "it is absolute; write it relative to the workspace root"
			}
			e = u
		}
		if strings.HasPrefix(e, "~") { // a shell's home folder ("~", "~user")
			return "it begins with ~, a home folder to a shell; write it relative to the workspace root"
		}
		for seg := range strings.SplitSeq(e, "/") {
			switch seg {
			case "":
				return "it has an empty path segment (// or a leading / inside braces)"
			case "..":
				return "it climbs out of the workspace with ..; paths stay inside the workspace"
			case ".":
				return "it has a . segment; write the path without it"
			}
		}
	}
	return ""
}

// unescaped is p with every escape outside a class replaced by the
// character it stands for, so a segment reads as doublestar matches it
// ("..\/x" matches ../x). Classes are kept as written: none of them is a
// "." or ".." segment or a leading "~".
func unescaped(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 < len(p) {
				i++
				b.WriteByte(p[i])
			}
		case '[':
			if _, _, n, ok := classRanges(p[i:]); ok {
				b.WriteString(p[i : i+n])
				i += n - 1
				continue
			}
			b.WriteByte(p[i])
		default:
			b.WriteByte(p[i])
		}
	}
	return b.String()
}

// writeSetMatcher says whether a workspace-relative path is in a write
// set. The patterns are validated (Validate), so Match cannot fail on them.
func writeSetMatcher(patterns []string) func(rel string) bool {
	return func(rel string) bool {
		for _, p := range patterns {
			if ok, _ := doublestar.Match(p, rel); ok {
				return true
			}
		}
		return false
	}
}
