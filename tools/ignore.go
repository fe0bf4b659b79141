package tools

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path"
	"strings"
	"syscall"

	// doublestar: a small, maintained matcher with no dependencies whose
	// `*`, `?`, `[…]` and `**` follow git's wildmatch. The gitignore rules
	// are built on it here because the gitignore packages on offer either
	// bring go-git's module graph along (some 35 modules, raising x/text,
	// x/sys and x/net for the whole project) or are unmaintained regexp
	// translations; ignore_test.go checks the result against git itself.
	"github.com/bmatcuk/doublestar/v4"

	"github.com/pixir-go/pixir/sandbox"
)

// ignoreFileLimit bounds how much of one .gitignore file is read.
const ignoreFileLimit = 1 << 20

// ignoreRule is one pattern line of a .gitignore file (or of
// .git/info/exclude), ready to match paths relative to the workspace root.
type ignoreRule struct {
	// base is the slash-separated directory of the file that holds the
	// rule, relative to the workspace root; "" for the root.
	base string
	// glob is the doublestar pattern, matched against a path relative to
	// base. Patterns without a slash are prefixed with **/ so that they
	// match at any depth.
	glob    string
	negate  bool
	dirOnly bool
}

// ignorer decides what git would ignore under a workspace. Rules are kept
// outermost first: the exclude file, then the .gitignore of each directory
// from the root down. The last rule that matches a path decides, so a
// deeper file overrides a shallower one, and a later line an earlier one.
type ignorer struct {
	rules []ignoreRule
}

// ignored reports whether rel, slash-separated and relative to the
// workspace root, is ignored. Only the path itself is matched: a walk does
// not enter ignored directories, which is how git makes everything under
// one ignored too (a file under an ignored directory cannot be re-included).
func (m *ignorer) ignored(rel string, isDir bool) bool {
	for i := len(m.rules) - 1; i >= 0; i-- {
		r := &m.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		sub := rel
		if r.base != "" {
			var ok bool
			if sub, ok = strings.CutPrefix(rel, r.base+"/"); !ok {
				continue
			}
		}
		if doublestar.MatchUnvalidated(r.glob, sub) {
			return !r.negate
		}
	}
	return false
}

// mark is the number of rules in force; release(mark) drops the rules of
// the directories a walk has left.
func (m *ignorer) mark() int        { return len(m.rules) }
func (m *ignorer) release(mark int) { m.rules = m.rules[:mark] }

// load adds the rules of the file at name (opened beneath root, through no
// symbolic link), which belong to the directory base. A missing or
// unreadable file adds nothing, as with git.
func (m *ignorer) load(root *sandbox.Dir, name, base string) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return
	}
	m.parse(io.LimitReader(f, ignoreFileLimit), base)
}

// parse adds the rules in r, which belong to the directory base.
func (m *ignorer) parse(r io.Reader, base string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, ignoreFileLimit)
	for sc.Scan() {
		if rule, ok := parseIgnoreLine(sc.Text(), base); ok {
			m.rules = append(m.rules, rule)
		}
	}
}

// parseIgnoreLine turns one line of a .gitignore file into a rule, following
// gitignore(5): blank lines and # comments are skipped, trailing spaces are
// dropped unless escaped, ! negates, a trailing / matches directories only,
// a slash at the start or in the middle anchors the pattern to the file's
// directory, and a trailing /** matches everything inside but not the
// directory itself. A pattern git could not match is skipped.
func parseIgnoreLine(line, base string) (ignoreRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	if line == "" || line[0] == '#' {
		return ignoreRule{}, false
	}
	line = trimUnescapedSpaces(line)
	r := ignoreRule{base: base}
	if strings.HasPrefix(line, "!") {
		r.negate = true
		line = line[1:]
	}
	for strings.HasSuffix(line, "/") && !strings.HasSuffix(line, `\/`) {
		r.dirOnly = true
		line = line[:len(line)-1]
	}
	if line == "" {
		return ignoreRule{}, false
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	if strings.HasSuffix(line, "/**") {
		// doublestar lets a/** match a itself; gitignore does not.
		line = strings.TrimSuffix(line, "**") + "*/**"
	}
	g := escapeBraces(line)
	if !anchored {
		g = "**/" + g
	}
	if !doublestar.ValidatePattern(g) {
		return ignoreRule{}, false
	}
	r.glob = g
	return r, true
}

// trimUnescapedSpaces drops trailing spaces that are not escaped with a
// backslash.
func trimUnescapedSpaces(s string) string {
	for strings.HasSuffix(s, " ") {
		trimmed := s[:len(s)-1]
		// The space is escaped when an odd number of backslashes precede it.
		n := len(trimmed) - len(strings.TrimRight(trimmed, `\`))
		if n%2 == 1 {
			return s
		}
		s = trimmed
	}
	return s
}

// escapeBraces escapes { and }, which gitignore takes literally and
// doublestar would read as alternatives.
func escapeBraces(s string) string {
	if !strings.ContainsAny(s, "{}") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			b.WriteByte(c)
			i++
			b.WriteByte(s[i])
			continue
		case c == '{' || c == '}':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// loadIgnoresAbove adds the rules that apply inside the directory dir
// (slash-separated, relative to the workspace root, "" for the root):
// .git/info/exclude and the .gitignore of the root and of every directory
// down to dir itself.
func (m *ignorer) loadIgnoresAbove(root *sandbox.Dir, dir string) {
	m.load(root, ".git/info/exclude", "")
	m.load(root, ".gitignore", "")
	if dir == "" {
		return
	}
	cur := ""
	for part := range strings.SplitSeq(dir, "/") {
		cur = path.Join(cur, part)
		m.load(root, cur+"/.gitignore", cur)
	}
}

// looksBinary is git's and grep's test: a NUL byte in the first 8000 bytes.
func looksBinary(head []byte) bool {
	return bytes.IndexByte(head[:min(len(head), 8000)], 0) >= 0
}
