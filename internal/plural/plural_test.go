package plural

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOf(t *testing.T) {
	require.Equal(t, "0 files", Of(0, "file", "files"))
	require.Equal(t, "1 file", Of(1, "file", "files"))
	require.Equal(t, "2 entries", Of(2, "entry", "entries"))
	require.Equal(t, "-1 files", Of(-1, "file", "files"))
	require.Equal(t, "entry", Word(1, "entry", "entries"))
}
