package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPointersAndCanonicalValues(t *testing.T) {
	v, err := decodeValue([]byte(`{"a/b":{"~x":[10,{"k":"v"}]},"n":1.0}`))
	require.NoError(t, err)
	for _, c := range []struct {
		ptr  string
		want string // canonical, "" for absent
	}{
		{"/a~1b/~0x/0", "10"},
		{"/a~1b/~0x/1/k", `"v"`},
		{"/a~1b/~0x/2", ""},
		{"/a~1b/~0x/01", ""}, // no leading zeros
		{"/n", "1"},
		{"/n/x", ""},
		{"/missing", ""},
	} {
		tokens, err := parsePointer(c.ptr)
		require.NoError(t, err, c.ptr)
		got, ok := lookup(v, tokens)
		if c.want == "" {
			require.False(t, ok, c.ptr)
			continue
		}
		require.True(t, ok, c.ptr)
		require.Equal(t, c.want, canonical(got, false), c.ptr)
	}
	for _, bad := range []string{"verdict", "/a~2", "/a~"} {
		_, err := parsePointer(bad)
		require.Error(t, err, bad)
	}
	// Key order and number forms never matter; array order matters only
	// when ordered.
	x, _ := decodeValue([]byte(`{"b":[2,1],"a":1e0}`))
	y, _ := decodeValue([]byte(`{"a":1,"b":[1,2]}`))
	require.NotEqual(t, canonical(x, false), canonical(y, false))
	require.Equal(t, canonical(x, true), canonical(y, true))
	require.Equal(t, `{"a":1,"b":[2,1]}`, canonical(x, false))
}
