// Package plural writes counts for people to read: "1 test", "2 tests".
package plural

import "strconv"

// Count returns n and the noun that agrees with it: one when n is 1 (or
// -1), else many, as in Count(1, "test", "tests") == "1 test" and
// Count(0, "entry", "entries") == "0 entries".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Noun(n, one, many)
}

// Noun returns one when n is 1 or -1, else many, for a count written
// apart from its noun ("%d missing tool %s").
func Noun(n int, one, many string) string {
	if n == 1 || n == -1 {
		return one
	}
	return many
}
