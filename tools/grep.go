package tools

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

//go:embed grep.md
var grepDescription string

const (
	grepDefaultResults = 100
	grepMaxResults     = 1000
	// grepLineLimit bounds the text shown of one line.
	grepLineLimit = 500
	// grepOutputLimit bounds the text shown in all (matches and context);
	// past it, further matches are counted, not shown.
	grepOutputLimit = 64 << 10
	// grepLineScan bounds how much of one line is matched, so a huge
	// minified line cannot fill memory.
	grepLineScan = 1 << 20
	// grepWholeFile bounds the files read whole, so that a file without
	// the pattern's literals can be passed over at once; larger files are
	// only streamed line by line.
	grepWholeFile = 8 << 20
	// grepLocations bounds the matches an editor is pointed at.
	grepLocations = 20
	patternRunes  = 60
)

// GrepArgs are the arguments of grep.
type GrepArgs struct {
	Pattern         string `json:"pattern" jsonschema:"minLength=1" jsonschema_description:"Go RE2 regular expression searched for in each line, e.g. func \\w+Handler or TODO|FIXME. Escape regexp characters to match them literally: \\(, \\., \\[."`
	Path            string `json:"path,omitempty" jsonschema_description:"Directory or file to search, relative to the workspace root. Default: the whole workspace."`
	Glob            string `json:"glob,omitempty" jsonschema_description:"Only search files whose path (relative to path) matches this glob: *.go (any depth), src/**/*.ts, *.{yml,yaml}, /*.md (only directly in path)."`
	CaseInsensitive bool   `json:"case_insensitive,omitempty" jsonschema_description:"Match letters in either case. Default false."`
	ContextLines    int    `json:"context_lines,omitempty" jsonschema:"minimum=0,maximum=10" jsonschema_description:"Lines of context to show before and after each match. Default 0."`
	MaxResults      int    `json:"max_results,omitempty" jsonschema:"minimum=1,maximum=1000" jsonschema_description:"Most matching lines to show. Default 100. Every match is still counted."`
}

// GrepMatch is one matching line.
type GrepMatch struct {
	// Path is relative to the workspace root.
	Path string `json:"path"`
	// Line is 1-based.
	Line int    `json:"line"`
	Text string `json:"text"`
	// Before and After are the context lines asked for with context_lines.
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// GrepOutput is what grep returns. Matches are in byte order of their
// paths, then by line.
type GrepOutput struct {
	Matches []GrepMatch `json:"matches"`
	// TotalMatches counts every matching line, shown or not.
	TotalMatches int `json:"total_matches"`
	// FilesMatched counts the files with at least one match.
	FilesMatched int `json:"files_matched"`
	// FilesSearched counts the text files searched; binary files are
	// skipped.
	FilesSearched int `json:"files_searched"`
	// Omitted is the number of matching lines not shown.
	Omitted int `json:"omitted"`
	// Truncated, set when matches were left out, says how many and how to
	// see them.
	Truncated string `json:"truncated,omitempty"`
	// Unreadable, set when folders or files could not be read for want of
	// permission, names them: what they hold was not searched.
	Unreadable string `json:"unreadable,omitempty"`
}

// GrepTool searches file contents with a regular expression.
func GrepTool() Tool {
	return Define(Spec[GrepArgs]{
		Name:        "grep",
		Description: grepDescription,
		Posture:     PostureRead,
		Kind:        KindSearch,
		Describe:    describeGrep,
		Run:         runGrep,
	})
}

func describeGrep(a GrepArgs) Presentation {
	if a.Pattern == "" {
		return Presentation{}
	}
	p := Presentation{Title: "Grep " + strconv.Quote(shorten(a.Pattern, patternRunes))}
	if where := shown(a.Path); where != "" {
		p.Title += " in " + where
		p.Locations = []Location{{Path: where}}
	}
	if a.Glob != "" {
		p.Title += " (" + a.Glob + ")"
	}
	return p
}

// grepPattern is the compiled pattern argument.
type grepPattern struct {
	// line matches one line, without its line ending.
	line *regexp.Regexp
	// needles, when set, are literals of which every match holds one:
	// files and lines that hold none are passed over without running the
	// regexp, which is where a search spends its time.
	needles []needle
	// fold is set when some needle is to be found in lower-cased text.
	fold bool
}

// needle is a literal a match holds. A folded one (from a case-insensitive
// part of the pattern) is lower-case ASCII and is looked for in text whose
// ASCII letters were lower-cased.
type needle struct {
	lit  []byte
	fold bool
}

// compileGrepPattern compiles the pattern argument, reporting the regexp
// error to the model.
func compileGrepPattern(pattern string, caseInsensitive bool) (grepPattern, *Failure) {
	if _, err := regexp.Compile(pattern); err != nil {
		return grepPattern{}, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"pattern is not a valid Go RE2 regexp: %v; escape regexp characters with \\ to match them literally, and note that RE2 has no lookaround or backreferences", err)}
	}
	if caseInsensitive {
		pattern = "(?i)" + pattern
	}
	p := grepPattern{line: regexp.MustCompile(pattern)}
	if tree, err := syntax.Parse(pattern, syntax.Perl); err == nil {
		p.needles = needles(tree.Simplify())
	}
	for _, n := range p.needles {
		p.fold = p.fold || n.fold
	}
	if tree, err := syntax.Parse(pattern, syntax.Perl); err == nil && spansLines(tree.Simplify()) {
		return grepPattern{}, &Failure{Kind: ErrInvalidArgs, Message: "pattern can only match across a line end (it holds \\n), but grep matches each line on its own, so it would find nothing; " +
			"search for one line of the text, then read the lines around the match"}
	}
	return p, nil
}

// spansLines reports whether every match of re holds a line end. Such a
// pattern matches no line.
func spansLines(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		return slices.Contains(re.Rune, '\n')
	case syntax.OpCharClass:
		// Pairs of bounds: a class of \n alone.
		return len(re.Rune) == 2 && re.Rune[0] == '\n' && re.Rune[1] == '\n'
	case syntax.OpCapture, syntax.OpPlus:
		return spansLines(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min >= 1 && spansLines(re.Sub[0])
	case syntax.OpConcat:
		return slices.ContainsFunc(re.Sub, spansLines)
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if !spansLines(sub) {
				return false
			}
		}
		return len(re.Sub) > 0
	}
	return false
}

// candidate reports whether text may hold a match: it holds a needle, or
// there are none. lower is text lower-cased, needed when p.fold is set.
func (p grepPattern) candidate(text, lower []byte) bool {
	if p.needles == nil {
		return true
	}
	for _, n := range p.needles {
		in := text
		if n.fold {
			in = lower
		}
		if bytes.Contains(in, n.lit) {
			return true
		}
	}
	return false
}

// maxNeedles bounds the literals looked for.
const maxNeedles = 8

// needles finds literals of which every match of re holds one, or nil.
func needles(re *syntax.Regexp) []needle {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return []needle{{lit: []byte(string(re.Rune))}}
		}
		if lit := foldSafe(re.Rune); lit != "" {
			return []needle{{lit: []byte(lit), fold: true}}
		}
	case syntax.OpCapture, syntax.OpPlus:
		return needles(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return needles(re.Sub[0])
		}
	case syntax.OpConcat:
		// Any part will do; the one whose shortest literal is longest
		// passes over the most text.
		var best []needle
		for _, sub := range re.Sub {
			if n := needles(sub); n != nil && (best == nil || shortest(n) > shortest(best)) {
				best = n
			}
		}
		return best
	case syntax.OpAlternate:
		var all []needle
		for _, sub := range re.Sub {
			n := needles(sub)
			if n == nil {
				return nil
			}
			all = append(all, n...)
		}
		if len(all) <= maxNeedles {
			return all
		}
	}
	return nil
}

func shortest(ns []needle) int {
	n := len(ns[0].lit)
	for _, x := range ns[1:] {
		n = min(n, len(x.lit))
	}
	return n
}

// foldSafe is the longest run of a case-insensitive literal that lower-
// casing ASCII finds: ASCII runes other than k and s, whose case folds
// include the Kelvin sign and the long s.
func foldSafe(lit []rune) string {
	best, start := "", 0
	for i := 0; i <= len(lit); i++ {
		if i < len(lit) && lit[i] < utf8.RuneSelf && !strings.ContainsRune("kKsS", lit[i]) {
			continue
		}
		if i-start > len(best) {
			best = strings.ToLower(string(lit[start:i]))
		}
		start = i + 1
	}
	return best
}

// lowerASCII appends src to dst with its ASCII letters lower-cased; the
// result has the length of src, so offsets stay valid.
func lowerASCII(dst, src []byte) []byte {
	for _, c := range src {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func runGrep(ctx context.Context, env Env, a GrepArgs, dryRun bool) Result {
	re, f := compileGrepPattern(a.Pattern, a.CaseInsensitive)
	if f != nil {
		return Failed(f)
	}
	w, t, f := openWalk(env, a.Path)
	if f != nil {
		return Failed(f)
	}
	defer w.Close()
	var filter pathFilter
	if a.Glob != "" {
		glob, f := absolutePattern(a.Glob, "glob", t.abs, env.Workspace.Root())
		if f != nil {
			return Failed(f)
		}
		if filter, f = newPathFilter(glob, "glob"); f != nil {
			return Failed(f)
		}
	}
	if dryRun {
		return Preview("would search the files under %s for %q", searchedPlace(t.rel), a.Pattern)
	}

	s := grepSearch{
		re: re, context: a.ContextLines, limit: grepDefaultResults,
		out: GrepOutput{Matches: []GrepMatch{}},
	}
	if a.MaxResults > 0 {
		s.limit = a.MaxResults
	}
	err := w.run(ctx, func(file walkedFile) error {
		if w.startIsDir && !filter.match(w.sub(file.rel)) {
			return nil
		}
		return s.file(ctx, w, file)
	})
	if err != nil {
		return Failed(AsFailure(err))
	}
	if !w.startIsDir && s.binary > 0 {
		return Fail(ErrInvalidArgs, "%s looks binary (it contains NUL bytes), so grep does not search it; search it with bash (grep -a, or strings | grep)", t.rel)
	}
	out := s.out
	out.Unreadable = w.unreadableNote()
	out.Omitted = out.TotalMatches - len(out.Matches)
	switch {
	case out.Omitted == 0:
	case len(out.Matches) < s.limit:
		out.Truncated = fmt.Sprintf("[… %d of %d matching lines not shown: the output is capped at %d KiB; narrow path, glob or pattern, or use fewer context_lines]",
			out.Omitted, out.TotalMatches, grepOutputLimit>>10)
	default:
		out.Truncated = fmt.Sprintf("[… %d of %d matching lines not shown; narrow path, glob or pattern, or raise max_results (at most %d)]",
			out.Omitted, out.TotalMatches, grepMaxResults)
	}
	res := OK(out)
	for _, m := range out.Matches[:min(len(out.Matches), grepLocations)] {
		res.Locations = append(res.Locations, Location{Path: filepath.Join(env.Workspace.Root(), filepath.FromSlash(m.Path)), Line: m.Line})
	}
	return res
}

// searchedPlace names a searched path in a sentence.
func searchedPlace(rel string) string {
	if rel == "." || rel == "" {
		return "the workspace root"
	}
	return rel
}

// grepSearch accumulates the output of one grep call.
type grepSearch struct {
	re      grepPattern
	context int
	limit   int
	// shown is the text shown so far, in bytes.
	shown int
	// full is set once a match was left out: later ones are only counted.
	full bool
	out  GrepOutput
	// content and lower are buffers reused from file to file.
	content, lower []byte
	// binary counts the binary files passed over.
	binary int
}

// file searches one file. Files that cannot be opened (removed meanwhile,
// unreadable, or a link swapped to lead outside) and binary files are
// skipped.
func (s *grepSearch) file(ctx context.Context, w *fileWalk, f walkedFile) error {
	file, size, err := w.openFile(f)
	if err != nil {
		w.noteUnreadable(f.rel, err)
		return nil
	}
	defer file.Close()
	if size > grepWholeFile {
		return s.stream(ctx, file, f.rel)
	}
	s.content, err = readAllInto(s.content[:0], io.LimitReader(file, grepWholeFile))
	if err != nil {
		return nil
	}
	if looksBinary(s.content) {
		s.binary++
		return nil
	}
	s.out.FilesSearched++
	content, lower := s.content, []byte(nil)
	if s.re.fold {
		s.lower = lowerASCII(s.lower[:0], content)
		lower = s.lower
	}
	if !s.re.candidate(content, lower) {
		return nil
	}
	sc := fileScan{s: s, path: f.rel}
	for n, start := 1, 0; start < len(content); n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		end := len(content)
		if i := bytes.IndexByte(content[start:], '\n'); i >= 0 {
			end = start + i
		}
		next := end + 1
		if end > start && content[end-1] == '\r' {
			end--
		}
		line := content[start:end]
		var low []byte
		if lower != nil {
			low = lower[start:end]
		}
		sc.line(n, line[:min(len(line), grepLineScan)], len(line), s.re.candidate(line, low))
		start = next
	}
	sc.done()
	return nil
}

// stream searches a file too large to read whole, line by line.
func (s *grepSearch) stream(ctx context.Context, file io.Reader, rel string) error {
	r := bufio.NewReaderSize(file, 64<<10)
	if head, _ := r.Peek(8000); looksBinary(head) {
		s.binary++
		return nil
	}
	s.out.FilesSearched++
	sc := fileScan{s: s, path: rel}
	var buf, low []byte
	for n, more := 1, true; more; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, size, err := readLine(r, buf[:0])
		buf = line
		// io.EOF, or a read error that ends this file only.
		more = err == nil
		if len(line) == 0 && !more {
			break
		}
		if s.re.fold {
			low = lowerASCII(low[:0], line)
		}
		sc.line(n, line, size, s.re.candidate(line, low))
	}
	sc.done()
	return nil
}

// readAllInto appends all of r to buf.
func readAllInto(buf []byte, r io.Reader) ([]byte, error) {
	b := bytes.NewBuffer(buf)
	_, err := b.ReadFrom(r)
	return b.Bytes(), err
}

// fileScan is the search of one file, line by line.
type fileScan struct {
	s       *grepSearch
	path    string
	before  []string // the last s.context lines, while matches are shown
	open    []int    // shown matches still collecting After lines
	matched bool
}

// line takes line n, of which line holds at most grepLineScan of its size
// bytes; candidate says whether it may match at all.
func (sc *fileScan) line(n int, line []byte, size int, candidate bool) {
	s := sc.s
	text, hasText := "", false
	textOf := func() string {
		if !hasText {
			text, hasText = lineText(line, size), true
		}
		return text
	}
	// This line is context after the matches before it.
	kept := sc.open[:0]
	for _, i := range sc.open {
		m := &s.out.Matches[i]
		m.After = append(m.After, textOf())
		s.shown += len(text)
		if len(m.After) < s.context {
			kept = append(kept, i)
		}
	}
	sc.open = kept

	if candidate && s.re.line.Match(line) {
		s.out.TotalMatches++
		sc.matched = true
		if !s.full && s.show(textOf()) {
			m := GrepMatch{Path: sc.path, Line: n, Text: text}
			for _, b := range sc.before {
				m.Before = append(m.Before, b)
				s.shown += len(b)
			}
			s.out.Matches = append(s.out.Matches, m)
			if s.context > 0 {
				sc.open = append(sc.open, len(s.out.Matches)-1)
			}
		}
	}
	if s.context > 0 && !s.full {
		if len(sc.before) == s.context {
			sc.before = append(sc.before[:0], sc.before[1:]...)
		}
		sc.before = append(sc.before, textOf())
	}
}

func (sc *fileScan) done() {
	if sc.matched {
		sc.s.out.FilesMatched++
	}
}

// show says whether a match of text can still be shown, and counts it.
func (s *grepSearch) show(text string) bool {
	if s.full || len(s.out.Matches) >= s.limit || s.shown+len(text) > grepOutputLimit {
		s.full = true
		return false
	}
	s.shown += len(text)
	return true
}

// lineText is a line as shown: at most grepLineLimit bytes of it, with the
// truncation marker when it is longer. size is the length of the whole
// line, of which line may hold only the beginning.
func lineText(line []byte, size int) string {
	if size <= grepLineLimit {
		return string(line)
	}
	return truncated(string(line[:min(len(line), grepLineLimit)]), size)
}

// readLine reads one line into buf without its line ending, keeping at most
// grepLineScan bytes of it and skipping the rest; size is the length of
// the whole line. It returns io.EOF with the last line when the file does
// not end with a newline, and with an empty line at the end.
func readLine(r *bufio.Reader, buf []byte) (line []byte, size int, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		size += len(chunk)
		if room := grepLineScan - len(buf); room > 0 {
			buf = append(buf, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			size--
			if n := len(buf); n > 0 && buf[n-1] == '\n' {
				buf = buf[:n-1]
				if n := len(buf); n > 0 && buf[n-1] == '\r' {
					buf = buf[:n-1]
					size--
				}
			}
		}
		return buf, size, err
	}
}
