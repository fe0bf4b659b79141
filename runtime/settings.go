package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Settings is $PIXIR_HOME/config.toml. Flags and environment variables
// override it; it overrides the built-in defaults.
type Settings struct {
	// Provider names the model provider: "scripted" (the offline default).
	Provider string `toml:"provider"`
	Model    string `toml:"model"`
	// Models a client may switch between; Model is added when missing.
	Models          []string         `toml:"models"`
	MaxTurnRequests int              `toml:"max_turn_requests"`
	Scripted        ScriptedSettings `toml:"scripted"`
}

// ScriptedSettings configure the offline scripted provider.
type ScriptedSettings struct {
	// Script is a TOML script file; empty means the embedded default.
	Script string `toml:"script"`
}

// HomeDir is $PIXIR_HOME, or ~/.pixir.
func HomeDir() (string, error) {
	if h := os.Getenv("PIXIR_HOME"); h != "" {
		return filepath.Abs(h)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a home directory (set PIXIR_HOME): %w", err)
	}
	return filepath.Join(home, ".pixir"), nil
}

// LoadSettings reads <home>/config.toml. A missing file is not an error; an
// unreadable or invalid one is, with the line and column of the problem.
func LoadSettings(home string) (Settings, error) {
	path := filepath.Join(home, "config.toml")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Settings{}, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("reading %s: %w", path, err)
	}
	var s Settings
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		// Checked first: a strict-mode error also unwraps to a DecodeError.
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) && len(sm.Errors) > 0 {
			line, col := sm.Errors[0].Position()
			return Settings{}, fmt.Errorf("%s:%d:%d: unknown key %q", path, line, col, strings.Join(sm.Errors[0].Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return Settings{}, fmt.Errorf("%s:%d:%d: %s", path, line, col, de.Error())
		}
		return Settings{}, fmt.Errorf("%s: %w", path, err)
	}
	if s.MaxTurnRequests < 0 {
		return Settings{}, fmt.Errorf("%s: max_turn_requests must be positive, got %d", path, s.MaxTurnRequests)
	}
	return s, nil
}
