package workflows

import "strings"

// Conflict profiles. The conflict rules (Conflicts) look at four things of
// a step: what it may write, what its agent may write (a writer changes
// only a file both allow), what it may read, and, for a writer, its
// workspace. Steps that agree on these conflict with exactly the same
// steps: they share a profile. Workflows repeat a few sets over many steps
// (a hundred reviewers of one tree, a fan-out over one directory), so the
// planner and the scheduler decide conflicts once per pair of profiles, and
// treat the runnable steps of one profile as one queue: when the first of
// them is blocked, all of them are.

// profileID names a conflict profile of one conflictIndex.
type profileID int32

// conflictIndex interns the profiles of the steps it is shown and decides
// the conflict rules between profiles, once per pair. Steps can be added at
// any time (a loop's next iteration, a fan-out's instances). It is not safe
// for concurrent use.
type conflictIndex struct {
	patterns *overlapCache
	ids      map[string]profileID
	profs    []profile
	known    pairBits // pairs decided
	answers  pairBits // and their answers
	key      strings.Builder
}

// profile is what the conflict rules read of a step, its patterns named by
// the overlapCache.
type profile struct {
	write []patternID // nil for a step that writes nothing
	// agent is a writer's agent's write set; nil: no narrowing.
	agent  []patternID
	read   []patternID
	shared bool // a writer in the shared workspace
}

func newConflictIndex(patterns *overlapCache) *conflictIndex {
	return &conflictIndex{patterns: patterns, ids: map[string]profileID{}}
}

// profile is s's profile, interned on first sight.
func (x *conflictIndex) profile(s *Step) profileID {
	write, read := effectiveWrite(s), effectiveRead(s)
	x.key.Reset()
	if len(write) > 0 {
		x.key.WriteString("w\x00")
		x.key.WriteString(string(s.WorkspaceMode))
		for _, p := range write {
			x.key.WriteByte(0)
			x.key.WriteString(p)
		}
		x.key.WriteByte(2)
		for _, p := range s.agentWrite {
			x.key.WriteByte(0)
			x.key.WriteString(p)
		}
	} else {
		// A step that writes nothing conflicts only through what it reads:
		// its workspace does not matter.
		x.key.WriteString("r")
	}
	x.key.WriteByte(1)
	for _, p := range read {
		x.key.WriteByte(0)
		x.key.WriteString(p)
	}
	id, ok := x.ids[x.key.String()]
	if !ok {
		id = profileID(len(x.profs))
		x.ids[x.key.String()] = id
		pr := profile{shared: len(write) > 0 && s.WorkspaceMode == Shared}
		for _, p := range write {
			pr.write = append(pr.write, x.patterns.id(p))
		}
		if len(write) > 0 {
			for _, p := range s.agentWrite {
				pr.agent = append(pr.agent, x.patterns.id(p))
			}
		}
		for _, p := range read {
			pr.read = append(pr.read, x.patterns.id(p))
		}
		x.profs = append(x.profs, pr)
	}
	return id
}

// conflict reports whether a step of profile p and a step of profile q may
// not run at the same time (Conflicts). A profile may conflict with itself
// (two writers of one set).
func (x *conflictIndex) conflict(p, q profileID) bool {
	if x.known.get(p, q) {
		return x.answers.get(p, q)
	}
	a, b := &x.profs[p], &x.profs[q]
	v := x.mayMeet(a, b.write, b.agent) ||
		(a.shared && x.mayMeet(a, b.read, nil)) ||
		(b.shared && x.mayMeet(b, a.read, nil))
	x.known.set(p, q, true)
	x.answers.set(p, q, v)
	return v
}

// mayMeet says whether what writer a may change (its write set, narrowed
// by its agent's) may meet the paths of set narrowed by narrow (nil: not
// narrowed). Two narrowed sets share a path only if each side's patterns
// overlap each of the other's: every pair is asked, and any pair that
// cannot overlap rules a meeting out (a conflict found where there is
// none costs parallelism; one missed would let two children write one
// file).
func (x *conflictIndex) mayMeet(a *profile, set, narrow []patternID) bool {
	if !x.anyOverlap(a.write, set) {
		return false
	}
	if a.agent != nil && !x.anyOverlap(a.agent, set) {
		return false
	}
	if narrow != nil {
		if !x.anyOverlap(a.write, narrow) || (a.agent != nil && !x.anyOverlap(a.agent, narrow)) {
			return false
		}
	}
	return true
}

func (x *conflictIndex) anyOverlap(as, bs []patternID) bool {
	for _, a := range as {
		for _, b := range bs {
			if x.patterns.overlapIDs(a, b) {
				return true
			}
		}
	}
	return false
}

// profiles is the number of profiles interned so far.
func (x *conflictIndex) profiles() int { return len(x.profs) }

// pairBits is a symmetric matrix of bits over profiles, grown as profiles
// come: a bit per pair is cheap where a map entry per pair is not (a few
// thousand profiles are millions of pairs). Beyond maxDenseProfiles it
// keeps nothing, and get says false.
type pairBits struct {
	n    int // side
	bits []uint64
}

// maxDenseProfiles bounds a pairBits at 8 MiB.
const maxDenseProfiles = 1 << 13

func (m *pairBits) get(p, q profileID) bool {
	if int(p) >= m.n || int(q) >= m.n {
		return false
	}
	k := int(p)*m.n + int(q)
	return m.bits[k/64]&(1<<(k%64)) != 0
}

func (m *pairBits) set(p, q profileID, v bool) {
	need := int(max(p, q)) + 1
	if need > m.n {
		if need > maxDenseProfiles {
			return
		}
		m.grow(need)
	}
	m.put(int(p)*m.n+int(q), v)
	m.put(int(q)*m.n+int(p), v)
}

func (m *pairBits) put(k int, v bool) {
	if v {
		m.bits[k/64] |= 1 << (k % 64)
	} else {
		m.bits[k/64] &^= 1 << (k % 64)
	}
}

func (m *pairBits) grow(need int) {
	n := max(64, m.n)
	for n < need {
		n *= 2
	}
	n = min(n, maxDenseProfiles)
	bits := make([]uint64, n*n/64)
	// Sides are powers of two from 64 up: every row starts on a word.
	for p := range m.n {
		copy(bits[p*n/64:], m.bits[p*m.n/64:(p+1)*m.n/64])
	}
	m.n, m.bits = n, bits
}
