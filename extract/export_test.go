package extract

import "time"

// SetTempMaxAge sets the age above which a pack's temp file left by a
// crash is removed, for tests, and returns the previous one.
func SetTempMaxAge(d time.Duration) time.Duration {
	old := tempMaxAge
	tempMaxAge = d
	return old
}
