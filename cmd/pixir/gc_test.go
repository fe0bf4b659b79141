package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lineWatcher is stdout that calls seen with each whole line written.
type lineWatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	part string
	seen func(line string)
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.part += string(p)
	for {
		i := strings.IndexByte(w.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := w.part[:i]
		w.part = w.part[i+1:]
		w.seen(line)
	}
}

// pixir gc says each thing it removed as it goes: removing a workflow's
// snapshots (a million files) takes minutes, and it printed every line at
// the end, after a silent wait. When the line of the first Subagent folder
// is written, the second is still there.
func TestGCSaysEachRemovalAsItGoes(t *testing.T) {
	ws := t.TempDir()
	old := time.Now().Add(-10 * 24 * time.Hour)
	for _, id := range []string{"sa-a", "sa-b"} {
		p := filepath.Join(ws, ".pixir", "subagents", id, "workspace", "a.go")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("package a\n"), 0o644))
		for _, q := range []string{p, filepath.Dir(p), filepath.Dir(filepath.Dir(p))} {
			require.NoError(t, os.Chtimes(q, old, old))
		}
	}
	var lines []string
	stdout := &lineWatcher{seen: func(line string) {
		lines = append(lines, line)
		if strings.HasPrefix(line, "remove .pixir/subagents/sa-a ") {
			require.DirExists(t, filepath.Join(ws, ".pixir", "subagents", "sa-b"), "sa-a's line is written before sa-b is removed")
		}
	}}
	var stderr bytes.Buffer
	require.Equal(t, exitOK, runGC([]string{"--cwd", ws}, stdout, &stderr), stderr.String())
	require.Len(t, lines, 3, stdout.buf.String())
	require.True(t, strings.HasPrefix(lines[0], "remove .pixir/subagents/sa-a "), lines[0])
	require.True(t, strings.HasPrefix(lines[1], "remove .pixir/subagents/sa-b "), lines[1])
	require.True(t, strings.HasPrefix(lines[2], "Removed 2 items, "), lines[2])
	require.NoDirExists(t, filepath.Join(ws, ".pixir", "subagents", "sa-b"))
}
