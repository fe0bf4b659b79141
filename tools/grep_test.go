package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestGrep(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{
		"a.go":          "package a\n\nfunc Handler() {}\nfunc other() {}\n",
		"a/b.go":        "package b\n// TODO: fix\nfunc Handler() {}\n",
		"a/b.txt":       "handler in text\n",
		"crlf.txt":      "one\r\nHandler two\r\n",
		"no-newline.md": "last Handler",
		"bin.dat":       "Handler\x00\x01",
		".gitignore":    "ignored/\n",
		"ignored/x.go":  "func Handler() {}\n",
	})
	m := func(path string, line int, text string) GrepMatch {
		return GrepMatch{Path: path, Line: line, Text: text}
	}
	tests := []struct {
		name string
		args string
		want GrepOutput
	}{
		{"whole workspace, in path order", `{"pattern":"Handler"}`, GrepOutput{
			Matches: []GrepMatch{
				m("a.go", 3, "func Handler() {}"), m("a/b.go", 3, "func Handler() {}"),
				m("crlf.txt", 2, "Handler two"), m("no-newline.md", 1, "last Handler"),
			},
			TotalMatches: 4, FilesMatched: 4, FilesSearched: 6,
		}},
		{"case insensitive", `{"pattern":"handler","case_insensitive":true,"path":"a"}`, GrepOutput{
			Matches:      []GrepMatch{m("a/b.go", 3, "func Handler() {}"), m("a/b.txt", 1, "handler in text")},
			TotalMatches: 2, FilesMatched: 2, FilesSearched: 2,
		}},
		{"glob without a slash matches at any depth", `{"pattern":"^func","glob":"*.go"}`, GrepOutput{
			Matches:      []GrepMatch{m("a.go", 3, "func Handler() {}"), m("a.go", 4, "func other() {}"), m("a/b.go", 3, "func Handler() {}")},
			TotalMatches: 3, FilesMatched: 2, FilesSearched: 2,
		}},
		{"anchored glob", `{"pattern":"^func","glob":"/*.go"}`, GrepOutput{
			Matches:      []GrepMatch{m("a.go", 3, "func Handler() {}"), m("a.go", 4, "func other() {}")},
			TotalMatches: 2, FilesMatched: 1, FilesSearched: 1,
		}},
		{"glob relative to path", `{"pattern":"Handler","path":"a","glob":"b.*"}`, GrepOutput{
			Matches: []GrepMatch{m("a/b.go", 3, "func Handler() {}")}, TotalMatches: 1, FilesMatched: 1, FilesSearched: 2,
		}},
		{"one file", `{"pattern":"TODO","path":"a/b.go"}`, GrepOutput{
			Matches: []GrepMatch{m("a/b.go", 2, "// TODO: fix")}, TotalMatches: 1, FilesMatched: 1, FilesSearched: 1,
		}},
		{"an ignored directory given by name", `{"pattern":"Handler","path":"ignored"}`, GrepOutput{
			Matches: []GrepMatch{m("ignored/x.go", 1, "func Handler() {}")}, TotalMatches: 1, FilesMatched: 1, FilesSearched: 1,
		}},
		{"no match", `{"pattern":"nothing here"}`, GrepOutput{Matches: []GrepMatch{}, FilesSearched: 6}},
		{"empty lines match ^$", `{"pattern":"^$","path":"a.go"}`, GrepOutput{
			Matches: []GrepMatch{m("a.go", 2, "")}, TotalMatches: 1, FilesMatched: 1, FilesSearched: 1,
		}},
		{"max_results", `{"pattern":"Handler","max_results":1}`, GrepOutput{
			Matches: []GrepMatch{m("a.go", 3, "func Handler() {}")}, TotalMatches: 4, FilesMatched: 4, FilesSearched: 6, Omitted: 3,
			Truncated: "[… 3 of 4 matching lines not shown; narrow path, glob or pattern, or raise max_results (at most 1000)]",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, GrepTool(), env, tt.args)
			require.Equal(t, tt.want, requireOK[GrepOutput](t, res))
			require.Len(t, res.Locations, len(tt.want.Matches))
			for i, loc := range res.Locations {
				require.Equal(t, Location{Path: filepath.Join(root, tt.want.Matches[i].Path), Line: tt.want.Matches[i].Line}, loc)
			}
		})
	}
}

func TestGrepContext(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"f.txt": "1\n2 x\n3\n4\n5 x\n6 x\n7\n", "g.txt": "x\n"})
	res := run(t, GrepTool(), env, `{"pattern":"x","context_lines":2}`)
	require.Equal(t, []GrepMatch{
		{Path: "f.txt", Line: 2, Text: "2 x", Before: []string{"1"}, After: []string{"3", "4"}},
		{Path: "f.txt", Line: 5, Text: "5 x", Before: []string{"3", "4"}, After: []string{"6 x", "7"}},
		{Path: "f.txt", Line: 6, Text: "6 x", Before: []string{"4", "5 x"}, After: []string{"7"}},
		{Path: "g.txt", Line: 1, Text: "x"},
	}, requireOK[GrepOutput](t, res).Matches)

	// Context is still collected for the last match shown.
	res = run(t, GrepTool(), env, `{"pattern":"x","context_lines":1,"max_results":1}`)
	out := requireOK[GrepOutput](t, res)
	require.Equal(t, []GrepMatch{{Path: "f.txt", Line: 2, Text: "2 x", Before: []string{"1"}, After: []string{"3"}}}, out.Matches)
	require.Equal(t, 3, out.Omitted)
}

func TestGrepBounds(t *testing.T) {
	env, root := newEnv(t)
	long := strings.Repeat("é", 400) + " needle " + strings.Repeat("z", 2000)
	huge := strings.Repeat("y", grepLineScan+10) + " needle\nneedle\n"
	var many strings.Builder
	for range 300 {
		many.WriteString("needle " + strings.Repeat("w", 400) + "\n")
	}
	writeFiles(t, root, map[string]string{"long.txt": long + "\n", "huge.txt": huge, "many.txt": many.String()})

	t.Run("long line", func(t *testing.T) {
		out := requireOK[GrepOutput](t, run(t, GrepTool(), env, `{"pattern":"needle","path":"long.txt"}`))
		text := out.Matches[0].Text
		require.True(t, strings.HasPrefix(text, strings.Repeat("é", 250)+"\n[… truncated "), text)
		require.True(t, strings.HasSuffix(text, fmt.Sprintf(" bytes of %d; narrow the request (line range, grep) to see more]", len(long))), text)
	})
	t.Run("only the first MiB of a line is matched", func(t *testing.T) {
		out := requireOK[GrepOutput](t, run(t, GrepTool(), env, `{"pattern":"needle","path":"huge.txt"}`))
		require.Equal(t, 1, out.TotalMatches)
		require.Equal(t, GrepMatch{Path: "huge.txt", Line: 2, Text: "needle"}, out.Matches[0])
	})
	t.Run("output size", func(t *testing.T) {
		out := requireOK[GrepOutput](t, run(t, GrepTool(), env, `{"pattern":"needle","path":"many.txt","max_results":1000}`))
		shown := len(out.Matches)
		require.Equal(t, grepOutputLimit/len(out.Matches[0].Text), shown)
		require.Equal(t, 300, out.TotalMatches)
		require.Equal(t, 300-shown, out.Omitted)
		require.Equal(t, fmt.Sprintf("[… %d of 300 matching lines not shown: the output is capped at 64 KiB; narrow path, glob or pattern, or use fewer context_lines]", 300-shown), out.Truncated)
	})
}

func TestGrepSymlinks(t *testing.T) {
	env, root := newEvalEnv(t)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "needle outside\n"})
	writeFiles(t, root, map[string]string{"d/in.txt": "needle inside\n", ".pixir/state": "needle state\n"})
	for name, target := range map[string]string{
		"loop": ".", "d/up": "..", "self": "self", "out.txt": filepath.Join(outside, "secret.txt"),
		"out-dir": outside, "state": ".pixir/state", "alias.txt": "d/in.txt",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(root, name)))
	}
	out := requireOK[GrepOutput](t, run(t, GrepTool(), env, `{"pattern":"needle"}`))
	require.Equal(t, []GrepMatch{
		{Path: "alias.txt", Line: 1, Text: "needle inside"},
		{Path: "d/in.txt", Line: 1, Text: "needle inside"},
	}, out.Matches)

	// Named directly, a link outside is refused by the workspace.
	requireFailure(t, run(t, GrepTool(), env, `{"pattern":"needle","path":"out.txt"}`), ErrPermissionDenied, "out.txt leads outside the workspace")
	requireFailure(t, run(t, GrepTool(), env, `{"pattern":"needle","path":"out-dir"}`), ErrPermissionDenied, "out-dir leads outside the workspace")
}

func TestGrepFailures(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"a.go": "x\n"})
	tests := []struct {
		name string
		args string
		kind ErrorKind
		msg  string
	}{
		{"invalid regexp", `{"pattern":"func (a"}`, ErrInvalidArgs,
			"pattern is not a valid Go RE2 regexp: error parsing regexp: missing closing ): `func (a`; escape regexp characters with \\ to match them literally, and note that RE2 has no lookaround or backreferences"},
		{"lookahead", `{"pattern":"a(?=b)","case_insensitive":true}`, ErrInvalidArgs,
			"pattern is not a valid Go RE2 regexp: error parsing regexp: invalid or unsupported Perl syntax: `(?=`; escape regexp characters with \\ to match them literally, and note that RE2 has no lookaround or backreferences"},
		{"invalid glob", `{"pattern":"x","glob":"*.{go"}`, ErrInvalidArgs,
			`glob "*.{go" is not a valid glob (check its [ ] and { } pairs); use * for any name, ** for any number of directories, {a,b} for alternatives, e.g. **/*.go`},
		{"outside the workspace", `{"pattern":"x","path":"../etc"}`, ErrPermissionDenied, "../etc is outside the workspace; use a path inside it"},
		{"absolute outside", `{"pattern":"x","path":"/etc"}`, ErrPermissionDenied, "/etc is outside the workspace; use a path inside it"},
		{"missing path", `{"pattern":"x","path":"nope"}`, ErrNotFound, "there is no file at nope; check the path, or list the directory with glob"},
		{"parent is a file", `{"pattern":"x","path":"a.go/b"}`, ErrNotFound, "a parent of a.go/b is a file, not a directory; check the path, or list the directory with glob"},
		{"empty pattern", `{"pattern":""}`, ErrInvalidArgs, "/pattern: minLength: got 0, want 1"},
		{"missing pattern", `{"path":"a"}`, ErrInvalidArgs, "/: missing property 'pattern'"},
		{"bounds", `{"pattern":"x","context_lines":11,"max_results":0}`, ErrInvalidArgs,
			"/context_lines: maximum: got 11, want 10\n/max_results: minimum: got 0, want 1"},
		{"unknown argument and types", `{"pattern":1,"case_insensitive":"yes","regex":"x"}`, ErrInvalidArgs,
			"/: additional properties 'regex' not allowed\n/case_insensitive: got string, want boolean\n/pattern: got number, want string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireFailure(t, run(t, GrepTool(), env, tt.args), tt.kind, tt.msg)
		})
	}

	t.Run("a FIFO", func(t *testing.T) {
		require.NoError(t, syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644))
		requireFailure(t, run(t, GrepTool(), env, `{"pattern":"x","path":"pipe"}`), ErrInvalidArgs,
			"pipe is not a regular file or a directory (p---------); search a directory or a plain file")
		// In a walk it is passed over.
		require.Equal(t, 1, requireOK[GrepOutput](t, run(t, GrepTool(), env, `{"pattern":"x"}`)).TotalMatches)
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		res := GrepTool().Run(ctx, env, json.RawMessage(`{"pattern":"x"}`))
		requireFailure(t, res, ErrCancelled, "the call was cancelled before it finished")
	})
}

func TestGrepDryRun(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"src/a.go": "x\n"})
	require.Equal(t, DryRunOutput{DryRun: true, Summary: `would search the files under the workspace root for "x"`},
		requireOK[DryRunOutput](t, dryRun(t, GrepTool(), env, `{"pattern":"x"}`)))
	require.Equal(t, DryRunOutput{DryRun: true, Summary: `would search the files under src for "x"`},
		requireOK[DryRunOutput](t, dryRun(t, GrepTool(), env, `{"pattern":"x","path":"src/"}`)))
	requireFailure(t, dryRun(t, GrepTool(), env, `{"pattern":"("}`), ErrInvalidArgs,
		"pattern is not a valid Go RE2 regexp: error parsing regexp: missing closing ): `(`; escape regexp characters with \\ to match them literally, and note that RE2 has no lookaround or backreferences")
}

func TestDescribeGrep(t *testing.T) {
	tests := []struct {
		args string
		want Presentation
	}{
		{`{"pattern":"TODO"}`, Presentation{Title: `Grep "TODO"`, Kind: KindSearch}},
		{`{"pattern":"func \\w+","path":"./src/"}`, Presentation{Title: `Grep "func \\w+" in src`, Kind: KindSearch, Locations: []Location{{Path: "src"}}}},
		{`{"pattern":"x","glob":"*.go"}`, Presentation{Title: `Grep "x" (*.go)`, Kind: KindSearch}},
		{`{"pattern":"` + strings.Repeat("a", 70) + `"}`, Presentation{Title: `Grep "` + strings.Repeat("a", 59) + `…"`, Kind: KindSearch}},
		{`{"pattern":1}`, Presentation{Title: "grep", Kind: KindSearch}},
		{`not json`, Presentation{Title: "grep", Kind: KindSearch}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, GrepTool().Describe(json.RawMessage(tt.args)), tt.args)
	}
}

func TestGrepNeedles(t *testing.T) {
	lit := func(s string) needle { return needle{lit: []byte(s)} }
	fold := func(s string) needle { return needle{lit: []byte(s), fold: true} }
	tests := []struct {
		pattern string
		ci      bool
		want    []needle
	}{
		{"TODO", false, []needle{lit("TODO")}},
		{`func \w+Handler\(`, false, []needle{lit("Handler(")}},
		{"TODO|FIXME", false, []needle{lit("TODO"), lit("FIXME")}},
		{"(ab)+c", false, []needle{lit("ab")}},
		{"x{2,}", false, []needle{lit("x")}},
		{"x*y", false, []needle{lit("y")}},
		{"x*", false, nil},
		{"x?", false, nil},
		{`\d+`, false, nil},
		{"a|\\d", false, nil},
		{"Handler", true, []needle{fold("handler")}},
		{"Class", true, []needle{fold("cla")}},
		{"kiss", true, []needle{fold("i")}},
		{"ks", true, nil},
		{"(?i:Err)or|Warn", false, []needle{fold("err"), lit("Warn")}},
		{"a|b|c|d|e|f|g|h|i", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			p, f := compileGrepPattern(tt.pattern, tt.ci)
			require.Nil(t, f)
			require.Equal(t, tt.want, p.needles)
		})
	}
}

// Lower-casing ASCII finds every case-insensitive match of a folded needle
// only because no ASCII letter but k and s folds to a rune outside ASCII.
func TestFoldSafeLettersFoldWithinASCII(t *testing.T) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		if strings.ContainsRune("kKsS", r) {
			continue
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			require.Less(t, f, rune(utf8.RuneSelf), "%q folds to %q", r, f)
		}
	}
}

func TestGrepCaseFolding(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{
		"kelvin.txt": "5 \u212Aelvin\n", "longs.txt": "\u017Ftring\n", "upper.txt": "HANDLER\n", "crlf.txt": "x\r\nHandler\r\n",
	})
	out := requireOK[GrepOutput](t, run(t, GrepTool(), env, `{"pattern":"kelvin|string|handler$","case_insensitive":true}`))
	require.Equal(t, []GrepMatch{
		{Path: "crlf.txt", Line: 2, Text: "Handler"},
		{Path: "kelvin.txt", Line: 1, Text: "5 \u212Aelvin"},
		{Path: "longs.txt", Line: 1, Text: "\u017Ftring"},
		{Path: "upper.txt", Line: 1, Text: "HANDLER"},
	}, out.Matches)
}

// A file larger than grepWholeFile is streamed line by line, with the same
// results.
func TestGrepStreamsLargeFiles(t *testing.T) {
	env, root := newEnv(t)
	var b strings.Builder
	line := strings.Repeat("filler ", 15) + "\n"
	for b.Len() <= grepWholeFile {
		b.WriteString(line)
	}
	lines := strings.Count(b.String(), "\n")
	b.WriteString("the Needle\r\nneedle at the end")
	writeFiles(t, root, map[string]string{"big.txt": b.String(), "big.bin": "\x00" + b.String()})
	out := requireOK[GrepOutput](t, run(t, GrepTool(), env, `{"pattern":"needle$","case_insensitive":true,"context_lines":1}`))
	require.Equal(t, GrepOutput{
		Matches: []GrepMatch{
			{Path: "big.txt", Line: lines + 1, Text: "the Needle", Before: []string{strings.TrimSuffix(line, "\n")}, After: []string{"needle at the end"}},
		},
		TotalMatches: 1, FilesMatched: 1, FilesSearched: 1,
	}, out)
}

// grep matches each line on its own, so a pattern every match of which
// holds a line end finds nothing: it is refused with what to do, where it
// answered "no matches" and the model took the text for absent. A pattern
// that may match a line end but need not (\s, [^x]) still runs.
func TestGrepRefusesAPatternThatSpansLines(t *testing.T) {
	env, root := newEnv(t)
	writeFiles(t, root, map[string]string{"a.go": "func a() {\n\treturn\n}\n"})
	const msg = `pattern can only match across a line end (it holds \n), but grep matches each line on its own, so it would find nothing; ` +
		"search for one line of the text, then read the lines around the match"
	for _, p := range []string{`{\n\treturn`, `\{\n\treturn`, `a\(\) \{\n`, `(?s)func.*\n.*return`, `(a|b)\n`, `\r\n`} {
		requireFailure(t, run(t, GrepTool(), env, fmt.Sprintf(`{"pattern":%q}`, p)), ErrInvalidArgs, msg)
	}
	for _, p := range []string{`\{\s*$`, `[^x]return`, `func|\n`, `\treturn`} {
		require.Equal(t, 1, requireOK[GrepOutput](t, run(t, GrepTool(), env, fmt.Sprintf(`{"pattern":%q}`, p))).TotalMatches, p)
	}
}

// A binary file named as path is said to be binary, as read says it: the
// search answered no matches and files_searched 0, and the model took the
// text for absent. In a walk binary files are still passed over quietly.
func TestGrepSaysABinaryFileItWasGivenIsBinary(t *testing.T) {
	env, root := newEnv(t)
	big := "\x00" + strings.Repeat("needle\n", grepWholeFile/7+1)
	writeFiles(t, root, map[string]string{"lib/a.so": "ELF\x00needle\n", "lib/big.db": big, "lib/b.txt": "needle\n"})
	for _, p := range []string{"lib/a.so", "lib/big.db"} {
		requireFailure(t, run(t, GrepTool(), env, fmt.Sprintf(`{"pattern":"needle","path":%q}`, p)), ErrInvalidArgs,
			p+" looks binary (it contains NUL bytes), so grep does not search it; search it with bash (grep -a, or strings | grep)")
	}
	out := requireOK[GrepOutput](t, run(t, GrepTool(), env, `{"pattern":"needle","path":"lib"}`))
	require.Equal(t, 1, out.TotalMatches)
	require.Equal(t, 1, out.FilesSearched)
}
