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
// 64 MB of memory. Sessions whose size the store cannot tell count as
// empty.
func limitMemory(ctx context.Context, store bs.Store, refs []bs.SessionRef) {
	if len(refs) == 0 {
		var err error
		if refs, _, err = store.Sessions(ctx); err != nil {
			return
		}
	}
	var largest int64
	for _, r := range bs.StatMany(ctx, store, refs) {
		if r.Err == nil && r.Stat.Version.Size() > largest {
			largest = r.Stat.Version.Size()
		}
	}
	memlimit.Set(largest)
}
