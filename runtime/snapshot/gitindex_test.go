//go:build unix

package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The trees written from an index are git write-tree's, in both object
// formats and index versions 2 and 3; an index it does not read (version
// 4, an entry only intended to be added) says so, and git is asked.
func TestWriteIndexTreesIsGitWriteTree(t *testing.T) {
	needGit(t)
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			ws := t.TempDir()
			gitIn(t, ws, "init", "-q", "--object-format="+format)
			// Names whose order differs between a path and a folder
			// (a.txt, a-b, a/, a0), deep folders, an executable, a link,
			// an empty file, a submodule's commit.
			for name, content := range map[string]string{
				"a.txt": "a\n", "a-b": "ab\n", "a/x": "x\n", "a/y/z/deep.go": "package z\n", "a0": "0\n",
				"b/run.sh": "#!/bin/sh\n", "empty": "", "z/last": "last\n",
			} {
				writeFile(t, ws, name, content)
			}
			require.NoError(t, os.Chmod(filepath.Join(ws, "b/run.sh"), 0o755))
			require.NoError(t, os.Symlink("a/x", filepath.Join(ws, "link")))
			gitIn(t, ws, "add", "-A")
			gitIn(t, ws, "commit", "-q", "-m", "first")
			gitIn(t, ws, "update-index", "--add", "--cacheinfo", "160000,"+gitIn(t, ws, "rev-parse", "HEAD")+",sub")
			gitDir := filepath.Join(ws, ".git")

			check := func(version string) {
				t.Helper()
				gitIn(t, ws, "update-index", "--index-version", version)
				got, err := writeIndexTrees(gitDir, format)
				require.NoError(t, err, "index version %s", version)
				require.Equal(t, gitIn(t, ws, "write-tree"), got, "index version %s", version)
				gitIn(t, ws, "ls-tree", "-r", got)
				// Every tree written, none taken from the cache.
				b, err := os.ReadFile(filepath.Join(gitDir, "index"))
				require.NoError(t, err)
				entries, cached, err := readIndex(b, map[string]int{"sha1": 20, "sha256": 32}[format])
				require.NoError(t, err)
				require.Contains(t, cached, "a/y/", "the cache of trees is read")
				all, rest, err := treeWriter{gitDir: gitDir, format: format}.tree(entries, "")
				require.NoError(t, err)
				require.Empty(t, rest)
				require.Equal(t, got, all)
			}
			check("2")
			gitIn(t, ws, "update-index", "--skip-worktree", "a/x") // extended flags: version 3
			check("3")

			// Objects in packs are found (and not written again).
			gitIn(t, ws, "repack", "-adq")
			gitIn(t, ws, "prune-packed")
			hashLen := map[string]int{"sha1": 20, "sha256": 32}[format]
			have, err := openStores(gitDir, hashLen)
			require.NoError(t, err)
			require.NotEmpty(t, have.packs)
			for _, id := range strings.Fields(gitIn(t, ws, "rev-list", "--objects", "--no-object-names", "HEAD")) {
				require.True(t, have.has(id), "%s is in the pack", id)
			}
			require.False(t, have.has(strings.Repeat("0", 2*hashLen)))
			require.False(t, have.has(strings.Repeat("f", 2*hashLen)))
			have.close()

			gitIn(t, ws, "update-index", "--index-version", "4")
			_, err = writeIndexTrees(gitDir, format)
			require.ErrorIs(t, err, errIndexNotRead)
			gitIn(t, ws, "update-index", "--index-version", "3")
			writeFile(t, ws, "later.txt", "later\n")
			gitIn(t, ws, "add", "-N", "later.txt")
			_, err = writeIndexTrees(gitDir, format)
			require.ErrorIs(t, err, errIndexNotRead)

			// An extension named in lower case changes what the entries
			// mean; one this reader does not know stops it (git's rule).
			gitIn(t, ws, "rm", "-q", "--cached", "later.txt")
			index, err := os.ReadFile(filepath.Join(gitDir, "index"))
			require.NoError(t, err)
			_, _, err = readIndex(index, hashLen)
			require.NoError(t, err)
			at := len(index) - hashLen
			unknown := append(append(append([]byte{}, index[:at]...), 'z', 'z', 'z', 'z', 0, 0, 0, 0), index[at:]...)
			_, _, err = readIndex(unknown, hashLen)
			require.ErrorIs(t, err, errIndexNotRead)
			optional := append(append(append([]byte{}, index[:at]...), 'Z', 'Z', 'Z', 'Z', 0, 0, 0, 0), index[at:]...)
			_, _, err = readIndex(optional, hashLen)
			require.NoError(t, err, "an extension in upper case is optional")
		})
	}
}
