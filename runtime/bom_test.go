package runtime

import (
	"os"
	"path/filepath"
	"strings"
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

// TestAValueOfTheWrongTypeIsItsOnlyProblem: a value of the wrong type is
// left out to decode the rest, and the checks of what decoded said the
// user had not written it: "neither a command nor a url" for a command
// of 42, "no model has a price" for prices written as strings.
func TestAValueOfTheWrongTypeIsItsOnlyProblem(t *testing.T) {
	for name, tc := range map[string]struct{ config, want string }{
		"mcp command": {"[mcp_servers.foo]\ncommand = 42\n", "2:11: mcp_servers.foo.command: got a TOML integer, want a string"},
		"prices": {"[budget]\nsession_cost = 5.0\n[model_info.\"gpt-x\"]\ninput_price = \"1.0\"\noutput_price = \"2.0\"\n",
			"4:15: model_info.gpt-x.input_price: got a TOML string, want a number\n{path}:5:16: model_info.gpt-x.output_price: got a TOML string, want a number"},
		// Not a price: the price is still missing, said now.
		"another model_info key": {"[budget]\nsession_cost = 5.0\n[model_info.\"gpt-x\"]\ncontext_window = \"big\"\n",
			"1:2: [budget] limits cost, but no model has a price: add input_price and output_price (per million tokens) under [model_info.\"MODEL\"], or limit tokens instead\n{path}:4:18: model_info.gpt-x.context_window: got a TOML string, want an integer"},
	} {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			path := filepath.Join(home, "config.toml")
			require.NoError(t, os.WriteFile(path, []byte(tc.config), 0o644))
			_, err := LoadSettings(home)
			require.EqualError(t, err, path+":"+strings.ReplaceAll(tc.want, "{path}", path))
		})
	}
}
