package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeBlock is one ```sh block of the README and how it is run.
type readmeBlock struct {
	line   int    // of its opening fence, 1-based
	marker string // "", "repo" or "skip: why"
	script string
}

// readmeShellBlocks returns every ```sh block of the markdown file, with the
// <!-- readme-test: … --> marker on the line before it, if any.
func readmeShellBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var blocks []readmeBlock
	var cur *readmeBlock
	prev := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.script += line + "\n"
		case strings.TrimSpace(line) == "```sh":
			cur = &readmeBlock{line: n}
			if m, ok := strings.CutPrefix(strings.TrimSpace(prev), "<!-- readme-test:"); ok {
				cur.marker = strings.TrimSpace(strings.TrimSuffix(m, "-->"))
			}
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	require.Nil(t, cur, "%s: a ```sh block is not closed", path)
	return blocks
}

// TestReadmeShellBlocks runs every ```sh block of the README verbatim, so
// that what a new user copies works: in a scratch folder holding a copy of
// examples/, with the built pixir first on PATH and the offline provider;
// a block marked <!-- readme-test: repo --> runs in the repository (make
// demo, make install into a scratch PREFIX). Each block must exit 0.
func TestReadmeShellBlocks(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	blocks := readmeShellBlocks(t, filepath.Join(repo, "README.md"))
	require.NotEmpty(t, blocks)
	ran := 0
	for _, b := range blocks {
		t.Run(fmt.Sprintf("line%04d", b.line), func(t *testing.T) {
			switch {
			case strings.HasPrefix(b.marker, "skip:"):
				t.Skipf("README.md:%d is marked %q", b.line, b.marker)
			case b.marker != "" && b.marker != "repo":
				t.Fatalf("README.md:%d: unknown marker %q: use <!-- readme-test: repo --> or <!-- readme-test: skip: why -->", b.line, b.marker)
			}
			ran++
			scratch := t.TempDir()
			dir := filepath.Join(scratch, "ws")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			prefix := filepath.Join(scratch, "prefix")
			path := filepath.Dir(pixirBin) + string(os.PathListSeparator) + os.Getenv("PATH")
			if b.marker == "repo" {
				dir = repo
				// What it installs comes first, so the block runs that.
				path = filepath.Join(prefix, "bin") + string(os.PathListSeparator) + filepath.Join(scratch, "gobin") + string(os.PathListSeparator) + os.Getenv("PATH")
			} else {
				require.NoError(t, os.CopyFS(filepath.Join(dir, "examples"), os.DirFS(filepath.Join(repo, "examples"))))
			}
			cmd := exec.Command("sh", "-e", "-c", b.script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+path, "PIXIR_HOME="+filepath.Join(scratch, "home"),
				"PREFIX="+prefix, "GOBIN="+filepath.Join(scratch, "gobin"),
				"PIXIR_PROVIDER=", "PIXIR_SCRIPT=", "PIXIR_MODEL=", "PIXIR_PROFILE=")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "README.md:%d: the block failed:\n%s\n--- output\n%s", b.line, b.script, out)
			if b.marker == "repo" && strings.Contains(b.script, "make install") {
				require.FileExists(t, filepath.Join(prefix, "bin", "pixir"), "make install put pixir under PREFIX/bin")
			}
		})
	}
	require.NotZero(t, ran, "no README block ran")
}
