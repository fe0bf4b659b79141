package tools

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

//go:embed edit.md
var editDescription string

// EditArgs are the arguments of edit.
type EditArgs struct {
	Path       string `json:"path" jsonschema_description:"File to edit, relative to the workspace root."`
	OldText    string `json:"old_text" jsonschema_description:"Exact text to replace, copied from the file with its whitespace."`
	NewText    string `json:"new_text" jsonschema_description:"Text to put in its place."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema_description:"Replace every match instead of requiring exactly one."`
}

// EditOutput is what edit returns.
type EditOutput struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
}

// maxListedLines bounds the line numbers an ambiguous match reports.
const maxListedLines = 20

// EditTool replaces exact text in a file.
func EditTool() Tool {
	return Define(Spec[EditArgs]{
		Name:        "edit",
		Description: editDescription,
		Posture:     PostureMutation,
		Kind:        KindEdit,
		Describe:    describeEdit,
		Run:         runEdit,
	})
}

func describeEdit(a EditArgs) Presentation { return fileCall("Edit", a.Path) }

func runEdit(ctx context.Context, env Env, a EditArgs, dryRun bool) Result {
	if a.OldText == "" {
		return Fail(ErrInvalidArgs, "old_text is empty; copy the exact text to replace from the file (to create a file or replace all of it, use write)")
	}
	if a.OldText == a.NewText {
		return Fail(ErrInvalidArgs, "old_text and new_text are the same, so the edit would change nothing; put the changed text in new_text")
	}
	t, f := resolveFile(env, a.Path)
	if f != nil {
		return Failed(f)
	}
	old, info, f := currentText(ctx, env, t)
	if f != nil {
		return Failed(f)
	}
	if old == nil {
		return Fail(ErrNotFound, "there is no file at %s; check the path, or create the file with write", t.rel)
	}
	if crlfOnly(*old) {
		// Read shows the file's \r\n, but a model writes its lines with
		// \n: taken as they came, a multi-line old_text would never match
		// and a multi-line new_text would mix \n into the file's \r\n.
		a.OldText, a.NewText = toCRLF(a.OldText), toCRLF(a.NewText)
		if a.OldText == a.NewText {
			return Fail(ErrInvalidArgs, "old_text and new_text differ only in line ends, and %s ends its lines with \\r\\n, as the edit would too: it would change nothing; put the changed text in new_text", t.rel)
		}
	}

	lines := matchLines(*old, a.OldText)
	switch {
	case len(lines) == 0 && strings.ContainsRune(a.OldText, utf8.RuneError) && invalidUTF8(*old) > 0:
		return Fail(ErrNotFound, "old_text was not found in %s: it holds \ufffd, which read shows for the bytes of %s that are not UTF-8, and they are not \ufffd in the file; "+
			"choose old_text without them, or change those lines with bash (sed, or iconv to convert the file)", t.rel, t.rel)
	case len(lines) == 0:
		if from, to, ok := matchIgnoringSpace(*old, a.OldText); ok {
			return Failed(&Failure{
				Kind: ErrNotFound,
				Message: fmt.Sprintf("old_text was not found in %s, but %s match it if white space is ignored (the file's tabs, spaces or line ends differ); "+
					"copy old_text again exactly from those lines: they are in details.text", t.rel, lineSpan(from, to)),
				Details: map[string]any{"start_line": from, "end_line": to, "text": fileLines(*old, from, to)},
			})
		}
		return Fail(ErrNotFound, "old_text was not found in %s; read the file and copy the exact text, including whitespace", t.rel)
	case len(lines) > 1 && !a.ReplaceAll:
		return Failed(&Failure{
			Kind: ErrConflict,
			Message: fmt.Sprintf("old_text matches %d places in %s (lines %s); add surrounding lines to old_text so it matches once, or set replace_all to replace every match",
				len(lines), t.rel, listLines(lines)),
			Details: map[string]any{"matches": len(lines), "lines": lines[:min(len(lines), maxListedLines)]},
		})
	}

	n := 1
	if a.ReplaceAll {
		n = -1
	}
	text := strings.Replace(*old, a.OldText, a.NewText, n)
	var res Result
	if dryRun {
		res = Preview("would replace %d match(es) of old_text in %s, the first at line %d", len(lines), t.rel, lines[0])
	} else {
		if f := replaceText(ctx, env, t, text, *old, info); f != nil {
			return Failed(f)
		}
		res = OK(EditOutput{Path: t.rel, Replacements: len(lines)})
		res.Seen = seenText(t.abs, text)
	}
	res.Diffs = []Diff{{Path: t.abs, OldText: old, NewText: text}}
	res.Locations = []Location{{Path: t.abs, Line: lines[0]}}
	return res
}

// crlfOnly says whether every line of s ends with \r\n (and one does).
func crlfOnly(s string) bool {
	n := strings.Count(s, "\n")
	return n > 0 && strings.Count(s, "\r\n") == n
}

// toCRLF makes every \n of s that has no \r before it \r\n.
func toCRLF(s string) string {
	if strings.Count(s, "\n") == strings.Count(s, "\r\n") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + strings.Count(s, "\n"))
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// matchIgnoringSpace finds the one run of lines of s that holds sub if
// white space is ignored: runs of it count as one space, and none at the
// ends of lines. sub may start inside its first line and end inside its
// last. It gives the lines' numbers (1-based), or ok false when no run or
// more than one holds it.
func matchIgnoringSpace(s, sub string) (from, to int, ok bool) {
	want := strings.Split(strings.TrimRight(sub, " \t\r\n"), "\n")
	for i := range want {
		want[i] = strings.Join(strings.Fields(want[i]), " ")
	}
	for len(want) > 1 && want[0] == "" {
		want = want[1:]
	}
	if len(want) == 0 || want[0] == "" {
		return 0, 0, false
	}
	have := strings.Split(s, "\n")
	if len(have) > 1<<20 {
		return 0, 0, false // too long to look through; the plain message says what to do
	}
	for i := range have {
		have[i] = strings.Join(strings.Fields(have[i]), " ")
	}
	found := 0
	for i := 0; i+len(want) <= len(have); i++ {
		if holds(have[i:i+len(want)], want) {
			if found++; found > 1 {
				return 0, 0, false
			}
			from, to = i+1, i+len(want)
		}
	}
	return from, to, found == 1
}

// holds reports whether the lines have hold want: the first ends with
// want's first, the last starts with want's last, and the others are
// equal (one line: it is within).
func holds(have, want []string) bool {
	if len(want) == 1 {
		return strings.Contains(have[0], want[0])
	}
	last := len(want) - 1
	if !strings.HasSuffix(have[0], want[0]) || !strings.HasPrefix(have[last], want[last]) {
		return false
	}
	for i := 1; i < last; i++ {
		if have[i] != want[i] {
			return false
		}
	}
	return true
}

// fileLines is lines from to to (1-based) of s, as they are in it, cut
// after 4 KiB.
func fileLines(s string, from, to int) string {
	lines := strings.SplitAfter(s, "\n")
	text := strings.Join(lines[from-1:to], "")
	if len(text) > 4<<10 {
		return truncated(text[:4<<10], len(text))
	}
	return text
}

// lineSpan names lines from to to in a sentence.
func lineSpan(from, to int) string {
	if from == to {
		return fmt.Sprintf("line %d", from)
	}
	return fmt.Sprintf("lines %d-%d", from, to)
}

// matchLines gives the 1-based line on which each non-overlapping match of
// sub in s starts, the same matches strings.Replace replaces.
func matchLines(s, sub string) []int {
	var lines []int
	line, from := 1, 0
	for {
		i := strings.Index(s[from:], sub)
		if i < 0 {
			return lines
		}
		line += strings.Count(s[from:from+i], "\n")
		lines = append(lines, line)
		line += strings.Count(sub, "\n")
		from += i + len(sub)
	}
}

// listLines renders match lines for a message, eliding past maxListedLines.
func listLines(lines []int) string {
	var b strings.Builder
	for i, l := range lines[:min(len(lines), maxListedLines)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(l))
	}
	if len(lines) > maxListedLines {
		b.WriteString(", …")
	}
	return b.String()
}
