package runtime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigWithAByteOrderMark: a config.toml saved with a UTF-8 byte
// order mark (Notepad, some Windows editors) loads; go-toml refused it at
// 1:1 with "invalid character at start of key: U+00EF 'ï'".
func TestConfigWithAByteOrderMark(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte("\ufeffmodel = \"m1\"\r\n[agents]\r\nmax_threads = 3\r\n"), 0o644))
	s, err := LoadSettings(home)
	require.NoError(t, err)
	require.Equal(t, "m1", s.Model)
	require.Equal(t, 3, s.Agents.MaxThreads)
}

// TestAConfigThatCannotBeReadIsNamedOnce: "reading X: read X: is a
// directory" named the file twice and said nothing to do.
func TestAConfigThatCannotBeReadIsNamedOnce(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "config.toml")
	require.NoError(t, os.Mkdir(path, 0o755))
	_, err := LoadSettings(home)
	require.EqualError(t, err, path+": cannot read it: is a directory; fix it, or move it away to use the defaults")
}
