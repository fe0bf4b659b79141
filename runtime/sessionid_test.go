package runtime

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestNewSessionIDIsARandomVersion4UUID(t *testing.T) {
	seen := map[string]bool{}
	firstChars := map[byte]bool{}
	for range 1000 {
		id := newSessionID()
		u, err := uuid.Parse(id)
		require.NoError(t, err)
		require.Equal(t, uuid.Version(4), u.Version(), id)
		require.Equal(t, uuid.RFC4122, u.Variant(), id)
		require.True(t, ValidSessionID(id))
		require.False(t, seen[id], "repeated: %s", id)
		seen[id] = true
		firstChars[id[0]] = true
	}
	// A short start of an id tells sessions apart: the first character
	// takes all sixteen values.
	require.Len(t, firstChars, 16)
}
