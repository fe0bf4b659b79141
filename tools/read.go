package tools

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/pixir-go/pixir/internal/plural"
)

//go:embed read.md
var readDescription string

// readLimit bounds what one read returns, so one call cannot fill the
// model's context window.
const readLimit = 256 << 10

// ReadArgs are the arguments of read.
type ReadArgs struct {
	Path   string `json:"path" jsonschema_description:"File to read, relative to the workspace root."`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=1" jsonschema_description:"First line to read, 1-based. Default 1."`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"Number of lines to read. Default: to the end of the file."`
}

// ReadOutput is what read returns. StartLine and EndLine are the lines in
// Content; all three line fields are 0 for an empty file.
type ReadOutput struct {
	Path       string `json:"path"`
	StartLine  int    `json:"start_line"`
	EndLine    int    `json:"end_line"`
	TotalLines int    `json:"total_lines"`
	Content    string `json:"content"`
	// More is set when lines follow EndLine and TotalLines is not known
	// (0): the editor served only the lines asked for.
	More bool `json:"more,omitempty"`
	// Note, set when Content has bytes that are not UTF-8 (a Latin-1 or
	// Windows-1252 file), says they are shown as U+FFFD and what that
	// means for an edit or a write.
	Note string `json:"note,omitempty"`
}

// rangeLines is how many lines a read without a limit asks the editor
// for: far more than fit in readLimit unless the lines are very short,
// and never a whole file too large for one message.
const rangeLines = 10000

// ReadTool reads a text file, or a range of its lines.
func ReadTool() Tool {
	return Define(Spec[ReadArgs]{
		Name:        "read",
		Description: readDescription,
		Posture:     PostureRead,
		Kind:        KindRead,
		Describe:    describeRead,
		Run:         runRead,
	})
}

func describeRead(a ReadArgs) Presentation {
	p := shown(a.Path)
	if p == "" {
		return Presentation{}
	}
	return Presentation{
		Title:     "Read " + p + lineRange(a.Offset, a.Limit),
		Locations: []Location{{Path: p, Line: max(a.Offset, 0)}},
	}
}

// lineRange is the ":10-40" suffix of a read title, empty for a whole file.
func lineRange(offset, limit int) string {
	start := max(offset, 1)
	switch {
	case limit > 0:
		return fmt.Sprintf(":%d-%d", start, start+limit-1)
	case offset > 0:
		return fmt.Sprintf(":%d-", start)
	}
	return ""
}

func runRead(ctx context.Context, env Env, a ReadArgs, dryRun bool) Result {
	t, f := resolveFile(env, a.Path)
	if f != nil {
		return Failed(f)
	}
	fsys, f := files(env)
	if f != nil {
		return Failed(f)
	}
	ranges, byRange := fsys.(LineRanges)
	var file io.ReadCloser
	var err error
	if byRange {
		limit := a.Limit
		if limit <= 0 {
			limit = rangeLines
		}
		// One line more than asked for says whether more follow.
		file, err = ranges.OpenLines(ctx, t.abs, max(a.Offset, 1), limit+1)
	} else {
		file, err = fsys.Open(ctx, t.abs)
	}
	if err != nil {
		return Failed(openFailure(err, t.rel, "check the path, or find the file with glob"))
	}
	defer file.Close()
	if dryRun {
		return Preview("would read %s%s", t.rel, lineRange(a.Offset, a.Limit))
	}
	// What the model sees of the file is hashed as it is read: a write
	// over the file later checks that it has not changed since.
	h := newSeenHash()
	src := io.TeeReader(file, h)
	var out ReadOutput
	if byRange {
		out, f = readRange(ctx, src, t, a.Offset, a.Limit, func() (int, bool) { return countLines(ctx, fsys, t) })
	} else {
		out, f = readLines(ctx, src, t, a.Offset, a.Limit, 1)
	}
	if f != nil {
		res := Failed(f)
		if !byRange && ctx.Err() == nil {
			// The model has seen the file (binary, or shorter than
			// the offset): what it did not read is hashed too, up
			// to editLimit (past it, the record has no hash).
			switch n, err := io.Copy(io.Discard, io.LimitReader(src, editLimit+1)); {
			case err == nil && n <= editLimit:
				res.Seen = h.seen(t.abs)
			case err == nil:
				res.Seen = &Seen{Path: t.abs}
			}
		}
		return res
	}
	res := OK(out)
	res.Locations = []Location{{Path: t.abs, Line: out.StartLine}}
	switch {
	case !byRange:
		res.Seen = h.seen(t.abs) // read to its end, whatever the range
	case max(a.Offset, 1) == 1 && !out.More:
		res.Seen = h.seen(t.abs) // the editor served it whole
	default:
		// The editor served some of its lines (a whole file may be more
		// than one message can carry): the file was read, but what it
		// holds is not known, so a write over it is not checked.
		res.Seen = &Seen{Path: t.abs}
	}
	return res
}

// readLines streams the file, keeping at most readLimit bytes of the
// selected lines and counting the rest, so memory stays bounded however
// large the file or its lines are.
//
// first is the number in the file of the stream's first line: 1, or where
// the editor's range starts; only the marker of a cut line uses it.
func readLines(ctx context.Context, file io.Reader, t target, offset, limit, first int) (ReadOutput, *Failure) {
	r := bufio.NewReaderSize(file, 64<<10)
	if head, _ := r.Peek(8000); bytes.IndexByte(head, 0) >= 0 {
		return ReadOutput{}, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"%s looks binary (it contains NUL bytes), so it cannot be read as text; inspect it with bash (file, xxd | head)", t.rel)}
	}

	start, end := max(offset, 1), math.MaxInt
	if limit > 0 {
		end = start + limit - 1
	}
	out := ReadOutput{Path: t.rel}
	var kept []byte
	selected, line, atLineStart := 0, 0, true
	// whole is how much of kept ends on a whole line, and wholeLine that
	// line's number: a cut ends there when a line fits.
	whole, wholeLine := 0, 0
	// firstLen is the length of line start, without its line end.
	firstLen := 0
	for {
		if err := ctx.Err(); err != nil {
			return ReadOutput{}, AsFailure(err)
		}
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			if atLineStart {
				line++
			}
			atLineStart = chunk[len(chunk)-1] == '\n'
			if line == start {
				firstLen += len(chunk)
				if atLineStart {
					firstLen-- // its line end
				}
			}
			if line >= start && line <= end {
				if len(kept) < readLimit {
					out.EndLine = line
				}
				fits := len(chunk) <= readLimit-len(kept)
				kept = append(kept, chunk[:min(len(chunk), readLimit-len(kept))]...)
				selected += len(chunk)
				if fits && atLineStart {
					whole, wholeLine = len(kept), line
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return ReadOutput{}, fileFailure(err, t.rel, "check the path, or list the directory with bash (ls)")
		}
	}

	out.TotalLines = line
	if start > line && (line > 0 || offset > 1) {
		return ReadOutput{}, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"offset %d is past the end of %s, which has %s; read from an offset between 1 and %d", offset, t.rel, plural.Of(line, "line", "lines"), max(line, 1))}
	}
	if out.EndLine > 0 {
		out.StartLine = start
	}
	if selected > len(kept) && whole > 0 {
		// The cut ends on the last whole line, and end_line names it:
		// the next range, from end_line+1, misses nothing. Only a first
		// line longer than the cap is shown in part.
		kept, out.EndLine = kept[:whole], wholeLine
	}
	out.Content = string(kept)
	switch {
	case selected > len(kept) && whole == 0:
		// The cap fell in the first line: no line range shows the rest of
		// it, so the marker says what does.
		head := dropPartialRune(out.Content)
		out.Content = fmt.Sprintf("%s\n[… line %d is cut: it alone is longer than one read shows (%d KiB), and %d of its %d bytes are not shown; "+
			"see the rest of it with bash (sed -n %dp FILE | cut -b %d-), or go on from offset %d]",
			head, start+first-1, readLimit>>10, firstLen-len(head), firstLen, start+first-1, len(head)+1, start+first)
	case selected > len(kept):
		out.Content = truncated(out.Content, selected)
	}
	if n := invalidUTF8(out.Content); n > 0 {
		out.Note = fmt.Sprintf("%s is not UTF-8 text: %s of these lines (Latin-1 or another encoding) are shown as \ufffd. "+
			"edit keeps them where old_text does not cover them, but old_text holding \ufffd matches nothing, and write would put \ufffd in their place; "+
			"change those lines with bash (sed, or iconv to convert the file)", t.rel, plural.Of(n, "byte", "bytes"))
	}
	return out, nil
}

// invalidUTF8 counts the bytes of s that are not part of UTF-8 text.
func invalidUTF8(s string) int {
	if utf8.ValidString(s) {
		return 0
	}
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n++
		}
		i += size
	}
	return n
}

// readRange reads lines the editor served from offset: at most limit (or
// rangeLines) of them, and one more when more follow. Their numbers start
// at offset; the file's length is known only when it ended before.
//
// lines, asked only when offset is past the end, counts the file's lines
// (false when it cannot), so the failure says how many there are.
func readRange(ctx context.Context, file io.Reader, t target, offset, limit int, lines func() (int, bool)) (ReadOutput, *Failure) {
	start := max(offset, 1)
	want := limit
	if want <= 0 {
		want = rangeLines
	}
	out, f := readLines(ctx, file, t, 1, want, start)
	if f != nil {
		return out, f
	}
	served := out.TotalLines
	if served == 0 && start > 1 {
		if n, ok := lines(); ok && n < start {
			return ReadOutput{}, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
				"offset %d is past the end of %s, which has %s; read from an offset between 1 and %d", offset, t.rel, plural.Of(n, "line", "lines"), max(n, 1))}
		}
		return ReadOutput{}, &Failure{Kind: ErrInvalidArgs, Message: fmt.Sprintf(
			"offset %d is past the end of %s; read from an earlier offset", offset, t.rel)}
	}
	if out.EndLine > 0 {
		out.StartLine, out.EndLine = start, out.EndLine+start-1
	}
	if served > want {
		out.TotalLines, out.More = 0, true
	} else {
		out.TotalLines = start - 1 + served
	}
	return out, nil
}

// countLines counts the lines of the file at t as read numbers them (a
// last line without a line end counts), reading it whole through fsys:
// false when it cannot.
func countLines(ctx context.Context, fsys Files, t target) (int, bool) {
	r, err := fsys.Open(ctx, t.abs)
	if err != nil {
		return 0, false
	}
	defer r.Close()
	buf := make([]byte, 64<<10)
	n, last := 0, byte('\n')
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || ctx.Err() != nil {
			return 0, false
		}
	}
	if last != '\n' {
		n++
	}
	return n, true
}
