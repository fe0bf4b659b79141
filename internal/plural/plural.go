// Package plural writes counts for people: "1 file", "2 files".
package plural

import "strconv"

// Of is n and the noun that agrees with it: Of(1, "file", "files") is
// "1 file", Of(0, "file", "files") "0 files".
func Of(n int, one, many string) string { return strconv.Itoa(n) + " " + Word(n, one, many) }

// Word is the noun that agrees with n: one when n is 1, else many.
func Word(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
