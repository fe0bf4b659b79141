package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNearestSuggestsTyposOnly(t *testing.T) {
	for _, c := range []struct{ typed, want string }{
		{"rnu", "run"},          // a swap
		{"sesions", "sessions"}, // a letter missing
		{"inspct", "inspect"},
		{"Run", "run"},
		{"doc", "doctor"}, // the only command it starts
		{"xyzzy", ""},     // nothing near
		{"r", ""},         // too short to guess from
		{"s", ""},
	} {
		require.Equal(t, c.want, nearest(c.typed, commands), c.typed)
	}
	require.Equal(t, "json", nearest("jsn", []string{"json", "cwd", "mode"}))
	require.Equal(t, "dry-run", nearest("dryrun", []string{"json", "dry-run"}))
	require.Equal(t, "", nearest("verbose-ish", []string{"json", "dry-run"}))
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"", "abc", 3}, {"run", "run", 0}, {"rnu", "run", 1}, {"kitten", "sitting", 3}, {"ab", "ba", 1}} {
		require.Equal(t, c.want, editDistance(c.a, c.b), "%s/%s", c.a, c.b)
	}
}
