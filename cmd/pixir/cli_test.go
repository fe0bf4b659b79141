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

// A command line the flag package stops on still gets the --json envelope
// in every spelling that package would have taken for true, the last one
// winning, and none after "--".
func TestAsksForJSONTakesTheFlagPackagesSpellings(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--json", "--max-threads", "many"}, true},
		{[]string{"-json", "--bogus"}, true},
		{[]string{"--json=1", "--bogus"}, true},
		{[]string{"--json=t", "--bogus"}, true},
		{[]string{"-json=TRUE", "--bogus"}, true},
		{[]string{"--json=false", "--bogus"}, false},
		{[]string{"--json=0", "--json", "--bogus"}, true},
		{[]string{"--json", "--json=false", "--bogus"}, false},
		{[]string{"--bogus", "--", "--json"}, false},
		{[]string{"json", "--bogus"}, false},
		{[]string{"--jsonx", "--bogus"}, false},
	} {
		require.Equal(t, c.want, asksForJSON(c.args), "%q", c.args)
	}
}
