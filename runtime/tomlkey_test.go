package runtime

import (
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/require"
)

// TOMLKey writes a key TOML reads back as the same key, whatever it holds
// (Go's quoting wrote \x7f, \a and \v, which are not TOML), and
// splitTOMLKey reads it back too.
func TestTOMLKeyIsTOML(t *testing.T) {
	for _, name := range []string{"plain", "a.b", "a\x7fb", "bell\a", "tab\there", "v\vt", `q"\`, "é-ü", "nul\x00", ""} {
		key := TOMLKey("mcp_servers", name)
		var m map[string]map[string]int
		require.NoError(t, toml.Unmarshal([]byte(key+" = 1\n"), &m), "%q as %s", name, key)
		_, ok := m["mcp_servers"][name]
		require.True(t, ok, "%q as %s reads back as %q", name, key, m)
		require.Equal(t, []string{"mcp_servers", name}, splitTOMLKey(key))
	}
}
