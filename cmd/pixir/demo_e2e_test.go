package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDemoReadsInOrder runs pixir demo as make demo does and reads its
// output as a newcomer would: each prompt ends with its stop line, the
// ask-mode permission line sits on a line of its own between the tool call
// it is about and that call's completion, the workflow's two parallel
// surveys are both running before either completes, and no path printed
// names a file that is gone when the demo ends. Its stdout is read a few
// bytes at a time, so a slow terminal is part of the test.
func TestDemoReadsInOrder(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(pixirBin, "demo")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var lines []string
	sc := bufio.NewScanner(bufio.NewReaderSize(&trickle{r: stdout}, 16))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	require.NoError(t, sc.Err())
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	out := strings.Join(lines, "\n")

	index := func(from int, prefix string) int {
		for i := from; i < len(lines); i++ {
			if strings.HasPrefix(lines[i], prefix) {
				return i
			}
		}
		t.Fatalf("no line starting %q after line %d in:\n%s", prefix, from, out)
		return -1
	}

	// Every prompt ends with its stop line before the next prompt.
	var stops []string
	waiting := ""
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "you> "):
			require.Empty(t, waiting, "prompt %q has no stop line before the next prompt:\n%s", waiting, out)
			waiting = l
		case strings.HasPrefix(l, "── stop: "):
			require.NotEmpty(t, waiting, "a stop line without its prompt:\n%s", out)
			stops, waiting = append(stops, strings.TrimPrefix(l, "── stop: ")), ""
		}
	}
	require.Empty(t, waiting, "the last prompt has no stop line")
	require.Equal(t, []string{"end_turn", "end_turn", "end_turn", "end_turn", "end_turn", "end_turn", "end_turn", "cancelled"}, stops)

	// The permission line: after the edit's pending tool call, before it
	// runs, on a line of its own.
	edit := index(index(0, "you> edit the file"), "  ⚙ Edit hello.txt  [edit, pending]")
	permission := index(0, "  ? permission asked")
	require.Equal(t, "  ? permission asked — the demo answers: allow once", lines[permission])
	require.Less(t, edit, permission)
	require.Less(t, permission, index(edit, "  … Edit hello.txt  [in_progress]"))
	require.Less(t, permission, index(edit, "  ✓ Edit hello.txt  [completed]"))
	require.Equal(t, 1, strings.Count(out, "permission asked"), "one permission request, in ask mode only")

	// The parallel surveys overlap: both in progress before either completes.
	run := index(0, "you> run a workflow")
	surveyRuns, notesRuns := index(run, "  … survey (explorer)"), index(run, "  … notes (explorer)")
	firstDone := min(index(run, "  ✓ survey (explorer)"), index(run, "  ✓ notes (explorer)"))
	require.Less(t, max(surveyRuns, notesRuns), firstDone, "the parallel steps ran one after the other:\n%s", strings.Join(lines[run:firstDone+1], "\n"))
	require.Less(t, firstDone, index(run, "  … summary (default)"), "the summary waits for both")

	// What the dry run plans is what runs: the same steps, and the index,
	// which writes where the summary does, after it.
	plan := index(0, "you> plan a workflow")
	require.Contains(t, lines[index(plan, "  ✓ Plan: Workflow ")], "Workflow survey and summarize (4 steps)")
	require.Contains(t, lines[index(run, "  ✓ Workflow ")], "Workflow survey and summarize (4 steps)")
	require.Less(t, index(run, "  ✓ summary (default)"), index(run, "  … index (default)"), "the index runs after the summary, as planned")

	// Nothing printed points at a file that is gone: the scratch folder is
	// deleted, so no path into it may be printed.
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries, "the demo's scratch folder is left behind")
	for _, p := range regexp.MustCompile(`(?:^|[\s(])(/[\w.@+-]+(?:/[\w.@+-]+)*)`).FindAllStringSubmatch(out, -1) {
		_, err := os.Stat(p[1])
		require.NoError(t, err, "the demo prints %s, which does not exist when it ends", p[1])
	}
	// The whole path: its last part alone ("001") may be part of an id.
	require.NotContains(t, out, tmp)
	require.Contains(t, out, "pixir demo --keep")
}

// trickle reads a few bytes at a time: a slow reader of the demo's output.
type trickle struct{ r io.Reader }

func (t *trickle) Read(p []byte) (int, error) {
	if len(p) > 7 {
		p = p[:7]
	}
	return t.r.Read(p)
}
