// Package memlimit sets the Go runtime's soft memory limit for extraction
// passes, for the binaries (`brainsurgeon prune`, the daemon of
// `brainsurgeon serve`): the library itself never changes process-wide
// runtime settings.
//
// A pass holds an index and a plan of about a third of its largest
// transcript at most. With the default collector the heap may grow to
// twice what is live before it is collected; a soft limit of half the
// transcript makes it collect sooner instead, so that a pass over a 100 MB
// transcript stays under 64 MB of memory at the cost of a few more
// collections.
package memlimit

import (
	"os"
	"runtime/debug"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Min is the smallest limit For returns.
const Min = 48 << 20

// For returns the soft memory limit for a pass whose largest transcript has
// largest bytes: half of it, and at least Min.
func For(largest int64) int64 { return max(Min, largest/2) }

// Set sets the runtime's soft memory limit to For(largest), unless the
// GOMEMLIMIT environment variable is set (the user's choice wins). It
// returns the limit set, or 0 when it left the limit alone.
func Set(largest int64) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := For(largest)
	debug.SetMemoryLimit(limit)
	return limit
}

// SetFor sets the limit for a pass over the sessions whose states are
// stats (Set with the largest transcript among them; a state with an
// error counts for nothing), unless GOMEMLIMIT is set. It returns the
// limit set, or 0 when it left the limit alone.
func SetFor(stats []bs.StatResult) int64 {
	var largest int64
	for _, s := range stats {
		if s.Err == nil {
			largest = max(largest, s.Stat.Version.Size())
		}
	}
	return Set(largest)
}
