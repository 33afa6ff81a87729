package main

import (
	"context"
	"os"
	"runtime/debug"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// minMemoryLimit is the smallest soft memory limit limitMemory sets.
const minMemoryLimit = 48 << 20

// limitMemory sets the Go runtime's soft memory limit for a pass, unless
// GOMEMLIMIT is set: half the size of the largest transcript of the pass
// (its index and plan take a third of that at most), and at least
// minMemoryLimit. With the default collector the heap may grow to twice
// what is live before it is collected; the limit makes it collect sooner
// instead, so a pass over a 100 MB transcript stays under 64 MB of memory
// at the cost of a few more collections. A store that cannot tell sizes
// (not a Stater) leaves the default.
func limitMemory(ctx context.Context, store bs.Store, refs []bs.SessionRef) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	st, ok := store.(bs.Stater)
	if !ok {
		return
	}
	if len(refs) == 0 {
		var err error
		if refs, err = store.Sessions(ctx); err != nil {
			return
		}
	}
	var largest int64
	for _, ref := range refs {
		if s, err := st.Stat(ctx, ref); err == nil && s.Version.Size() > largest {
			largest = s.Version.Size()
		}
	}
	debug.SetMemoryLimit(max(minMemoryLimit, largest/2))
}
