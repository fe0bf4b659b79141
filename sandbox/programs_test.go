package sandbox

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// interpreterByDebugELF is what interpreterOf read with debug/elf before
// it read the program headers itself: the oracle for elfInterpreter.
func interpreterByDebugELF(t *testing.T, p string) string {
	t.Helper()
	ef, err := elf.Open(p)
	if err != nil {
		return ""
	}
	defer ef.Close()
	for _, prog := range ef.Progs {
		if prog.Type == elf.PT_INTERP {
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return ""
			}
			return string(bytes.TrimRight(b, "\x00"))
		}
	}
	return ""
}

// The ELF files of this machine (dynamic and static executables, shared
// libraries, this test binary) name the same loader either way.
func TestELFInterpreterMatchesDebugELF(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	files := []string{exe}
	for _, dir := range []string{"/bin", "/usr/bin", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Type().IsRegular() && len(files) < 600 {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	withLoader := 0
	for _, p := range files {
		want := interpreterByDebugELF(t, p)
		if want != "" {
			withLoader++
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		head := make([]byte, 4)
		n, _ := f.Read(head)
		got := ""
		if n == 4 && string(head) == "\x7fELF" {
			got = elfInterpreter(f)
		}
		f.Close()
		require.Equal(t, want, got, p)
	}
	if withLoader == 0 {
		t.Skip("no dynamically linked ELF file on this machine")
	}
	t.Logf("%d files, %d with a loader", len(files), withLoader)
}

// A truncated or foreign header names no loader and does not fail.
func TestELFInterpreterOfBrokenHeaders(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"short":     "\x7fELF\x02\x01",
		"bad-class": "\x7fELF\x09\x01" + string(make([]byte, 60)),
		"no-phdrs":  "\x7fELF\x02\x01" + string(make([]byte, 60)),
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
		require.Empty(t, interpreterOf(p), name)
	}
}
