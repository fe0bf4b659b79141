//go:build unix

package runtime

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A file and a folder the file tools make take the user's umask, as an
// editor's or a shell's do: umask 077 keeps them private (they were 0644,
// readable by every user of the machine), a team's 002 shares them with
// the group. A file that is replaced keeps its mode either way.
func TestFilesMadeByTheToolsTakeTheUmask(t *testing.T) {
	for _, tt := range []struct {
		umask         int
		file, folder  os.FileMode
		replacedStays os.FileMode
	}{
		{umask: 0o077, file: 0o600, folder: 0o700, replacedStays: 0o644},
		{umask: 0o002, file: 0o664, folder: 0o775, replacedStays: 0o640},
		{umask: 0o022, file: 0o644, folder: 0o755, replacedStays: 0o664},
	} {
		s := newConfinedWorkspace(t)
		kept := filepath.Join(s.root, "src", "kept.txt")
		require.NoError(t, os.WriteFile(kept, []byte("old\n"), 0o600))
		require.NoError(t, os.Chmod(kept, tt.replacedStays))
		old := syscall.Umask(tt.umask)
		newFile := filepath.Join(s.root, "new", "deeper", "a.txt")
		errNew := s.ws.Files().WriteFile(t.Context(), newFile, []byte("a\n"))
		errKept := s.ws.Files().WriteFile(t.Context(), kept, []byte("new\n"))
		syscall.Umask(old)
		require.NoError(t, errNew)
		require.NoError(t, errKept)
		for p, want := range map[string]os.FileMode{
			newFile:                      tt.file,
			filepath.Dir(newFile):        tt.folder,
			filepath.Join(s.root, "new"): tt.folder,
			kept:                         tt.replacedStays,
		} {
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.Equal(t, want, fi.Mode().Perm(), "umask %04o: %s", tt.umask, p)
		}
	}
}
