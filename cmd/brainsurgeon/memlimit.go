package main

import (
	"context"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/memlimit"
)

// limitMemory sets the Go runtime's soft memory limit for a pass over refs
// (every session when refs is empty), unless GOMEMLIMIT is set: half the
// size of the largest transcript, and at least 48 MB (see
// internal/memlimit), so that a pass over a 100 MB transcript stays under
// 64 MB of memory. A store that cannot tell sizes (not a Stater) leaves
// the default.
func limitMemory(ctx context.Context, store bs.Store, refs []bs.SessionRef) {
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
	memlimit.Set(largest)
}
