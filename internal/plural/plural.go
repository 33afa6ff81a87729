// Package plural writes counts for people to read: "1 test", "2 tests".
package plural

import "strconv"

// Integer is any integer type a count may have.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Count returns n and the noun that agrees with it: one when n is 1 (or
// -1), else many, as in Count(1, "test", "tests") == "1 test" and
// Count(0, "entry", "entries") == "0 entries".
func Count[T Integer](n T, one, many string) string {
	var s string
	if n < 0 {
		s = strconv.FormatInt(int64(n), 10)
	} else {
		s = strconv.FormatUint(uint64(n), 10)
	}
	return s + " " + Noun(n, one, many)
}

// Noun returns one when n is 1 or -1, else many, for a count written
// apart from its noun ("%d missing tool %s").
func Noun[T Integer](n T, one, many string) string {
	if n == 1 || (n < 0 && -n == 1) {
		return one
	}
	return many
}
