package workflows

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/stretchr/testify/require"
)

func TestOverlap(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
		why  string
	}{
		// Literals.
		{"a.go", "a.go", true, "same file"},
		{"a.go", "b.go", false, "different files"},
		{"src/a.go", "src/b.go", false, "different files, same dir"},
		{"src/a.go", "lib/a.go", false, "same name, different dirs"},
		// Conservative: a pattern ending in a literal covers everything beneath it.
		{"src", "src/a.go", true, "conservative: a directory covers its contents"},
		{"src/a", "src/a/b/c.go", true, "conservative: nested contents"},
		{"src/a.go", "src/a.go.bak", false, "a longer name is a different file"},
		{"lib", "library/x", false, "prefix of a name is not a parent"},
		// One star.
		{"*", "a.go", true, "star matches a name"},
		{"*", "src/a.go", false, "a pattern ending in a wildcard names files, not directories"},
		{"*.go", "a.go", true, ""},
		{"*.go", "a.md", false, ""},
		{"*.go", "*.md", false, "disjoint extensions in the same dir"},
		{"src/*.go", "src/*.md", false, "disjoint extensions under a dir"},
		{"src/*.go", "src/a/*.go", false, "one level vs two levels, *.go is not a directory of a"},
		{"src/*.go", "src/a.go", true, ""},
		{"a*", "*b", true, "ab matches both"},
		{"a*c", "ab*", true, "abc"},
		{"a*", "b*", false, "different first letters"},
		{"*a*", "*b*", true, "ab"},
		{"x*y", "x", false, "x*y needs at least xy"},
		{"src/a*", "src/*", true, ""},
		// Double star anywhere.
		{"**", "anything/at/all", true, ""},
		{"**/*", "a.go", true, ""},
		{"**/*", "src/deep/a.go", true, ""},
		{"**/*.go", "*.md", false, "extensions at every depth still disjoint"},
		{"**/*.go", "docs/*.md", false, ""},
		{"**/*.go", "docs/**", true, "docs/x.go"},
		{"src/**", "src/a/*.go", true, "prefix with globstar"},
		{"src/**", "lib/**", false, "disjoint prefixes"},
		{"src/**/test", "src/a/b/test", true, "globstar in the middle"},
		{"src/**/test", "src/test", true, "globstar matches zero segments"},
		{"src/**/x.go", "src/**/y.go", true, "conservative: x.go could be a directory holding y.go"},
		{"src/**/*.go", "src/**/*.md", false, "wildcard names at any depth stay disjoint"},
		{"a/**/b", "**/c", true, "conservative: a/b/c, since a/**/b covers b's contents"},
		{"**/a/**", "**/b/**", true, "a/b"},
		{"src/**", "src", true, "src/** matches src itself"},
		{"a**b", "ab", true, "** inside a segment is a plain star"},
		{"a**b", "a/b", false, "** inside a segment does not cross /"},
		// Question mark.
		{"?.go", "a.go", true, ""},
		{"?.go", "ab.go", false, "? is exactly one character"},
		{"??", "*", true, ""},
		{"?", "a/b", false, "? names a one-character file, not a directory"},
		{"src/[ab]", "src/a/x", false, "a class names files by shape"},
		{"src/{a,b}", "src/a/x", true, "conservative: literal alternatives name directories"},
		// Character classes.
		{"[ab].go", "a.go", true, ""},
		{"[ab].go", "c.go", false, ""},
		{"[a-c].go", "[c-e].go", true, "c"},
		{"[a-c].go", "[d-f].go", false, "disjoint ranges"},
		{"[0-9]", "[a-z]", false, ""},
		{"[0- ]", "0", true, "doublestar matches an inverted range's first character (found by FuzzOverlapSound in CI)"},
		{"[z-a]", "z", true, ""},
		{"[z-a]", "a", false, "an inverted range matches nothing but its first character"},
		{"[!a].go", "b.go", true, ""},
		{"[^a].go", "a.go", true, "conservative: folded, [^a] may match A, the same file as a on a case-insensitive fs"},
		{"[!a]", "[!b]", true, ""},
		{`[\]]`, "]", true, "escaped ] in a class"},
		// What doublestar lets match a separator inside what reads as one segment.
		{`a\/[0]`, "{a{/}}0", true, `an escaped slash separates segments: both match a/0 (found by FuzzOverlapSound)`},
		{`a\/b`, "a/b", true, `a\/b matches a/b`},
		{`a\/b`, "a/c", false, ""},
		{"a[/]b", "a/b", true, "a class holding / matches the separator"},
		{"a[+-0]b", "a/b", true, "a range over / matches the separator"},
		{"a[!x]b", "a/b", true, "a negated class that does not exclude / matches the separator"},
		{"a[!/]b", "a/b", false, "a class that excludes / never matches it"},
		{"a[/]b", "a[/]c", false, "forked, the two still differ in their last letter"},
		// Case folding (conservative).
		{"README.md", "readme.md", true, "conservative: one file on a case-insensitive fs"},
		{"[A-Z].go", "a.go", true, "conservative: folded range"},
		{"Ä.txt", "ä.txt", true, "conservative: Unicode simple folding of literals"},
		// Braces.
		{"{a,b}.go", "b.go", true, ""},
		{"{a,b}.go", "c.go", false, ""},
		{"src/{a,b}/*.go", "src/c/x.go", false, ""},
		{"{src,lib}/**", "lib/x", true, ""},
		{"{src/a,lib}/x", "src/a/x", true, "alternatives may hold a /"},
		{"{a,{b,c}}.go", "c.go", true, "nested braces"},
		{"*.{go,mod}", "*.md", false, ""},
		{`\{a,b\}`, "a", false, "escaped braces are literal"},
		{`\*`, "a", false, "escaped star is literal"},
		{`\*`, "*", true, ""},
		// Conservative on bad input.
		{"[a", "b", true, "conservative: an invalid pattern overlaps everything"},
		{"{a,b", "c", true, "conservative: an unclosed brace overlaps everything"},
		{"{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}", "zzz", true, "conservative: 512 expansions exceed the bound"},
	}
	for _, c := range cases {
		t.Run(c.a+"~"+c.b, func(t *testing.T) {
			require.Equal(t, c.want, Overlap(c.a, c.b), c.why)
			require.Equal(t, c.want, Overlap(c.b, c.a), "Overlap must be symmetric: %s", c.why)
		})
	}
}

// TestOverlapAgreesWithDoublestar checks the soundness direction against
// doublestar itself: whenever one concrete path matches both patterns,
// Overlap must say yes.
func TestOverlapAgreesWithDoublestar(t *testing.T) {
	patterns := []string{"*", "**", "**/*", "*.go", "*.md", "src/**", "src/*.go", "src/a/*.go", "src/{a,b}/**",
		"?.go", "[a-c]*", "[!a]*", "a*b", "**/test/*", "docs", "docs/*.md", "{x,y}.go"}
	paths := []string{"a.go", "b.md", "src/a.go", "src/a/b.go", "src/b/c.md", "docs/readme.md", "x.go", "ab",
		"test/a", "src/test/x", "docs", "c", "y.go"}
	for _, a := range patterns {
		for _, b := range patterns {
			for _, p := range paths {
				if doublestar.MatchUnvalidated(a, p) && doublestar.MatchUnvalidated(b, p) {
					require.True(t, Overlap(a, b), "%q and %q both match %q", a, b, p)
				}
			}
		}
	}
}

func TestPatternProblem(t *testing.T) {
	cases := map[string]string{
		"src/**":     "",
		"":           "it is empty",
		"/etc/*":     "it is absolute; write it relative to the workspace root",
		"../x":       "it climbs out of the workspace with ..; paths stay inside the workspace",
		"a/{b,..}/c": "it climbs out of the workspace with ..; paths stay inside the workspace",
		"a//b":       "it has an empty path segment (// or a leading / inside braces)",
		"a/./b":      "it has a . segment; write the path without it",
		"~/x":        "it begins with ~, a home folder to a shell; write it relative to the workspace root",
		"~user/x":    "it begins with ~, a home folder to a shell; write it relative to the workspace root",
		"{a,~}/x":    "it begins with ~, a home folder to a shell; write it relative to the workspace root",
		"x/~/y":      "",
		// Escapes read as doublestar matches them (..\/x matches ../x).
		`..\/x`:     "it climbs out of the workspace with ..; paths stay inside the workspace",
		`a/.\./b`:   "it climbs out of the workspace with ..; paths stay inside the workspace",
		`a/\./b`:    "it has a . segment; write the path without it",
		`\~/x`:      "it begins with ~, a home folder to a shell; write it relative to the workspace root",
		`\/x`:       "it is absolute; write it relative to the workspace root",
		`a\/\/b`:    "it has an empty path segment (// or a leading / inside braces)",
		`a\*b/[\.]`: "",
		"src/[a":    "it is not a valid doublestar pattern (an unclosed [ or {, or a trailing \\)",
	}
	for p, want := range cases {
		require.Equal(t, want, patternProblem(p), p)
	}
}

// FuzzOverlapSound looks for a path both patterns match (by doublestar)
// while Overlap says they are disjoint: the one error Overlap must never
// make.
func FuzzOverlapSound(f *testing.F) {
	seeds := [][3]string{
		{"*.go", "**/*.go", "a/b.go"}, {"src/**", "src/a/*.go", "src/a/x.go"}, {"{a,b}/*", "a/[x-z]", "a/y"},
		{"[!a]?", "b*", "bc"}, {"a**b", "*b", "ab"}, {`\*x`, "*", "*x"}, {"**", "x/y/z", "x/y/z"},
		{"0", "[0- ]", "0"}, {"{a{/}}0", `a\/[0]`, "a/0"}, {"a[!x]b", "a/b", "a/b"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, path string) {
		// Only workspace paths: relative, non-empty segments, valid UTF-8.
		if !doublestar.ValidatePattern(a) || !doublestar.ValidatePattern(b) || !utf8.ValidString(path) ||
			path == "" || strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.Contains(path, "//") {
			return
		}
		if doublestar.MatchUnvalidated(a, path) && doublestar.MatchUnvalidated(b, path) && !Overlap(a, b) {
			t.Fatalf("%q and %q both match %q but Overlap says no", a, b, path)
		}
	})
}
