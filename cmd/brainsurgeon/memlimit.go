package main

import (
	"context"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/memlimit"
)

// limitMemory sets the Go runtime's soft memory limit for a pass over refs
// (every session when refs is empty) by memlimit.SetFor, as the daemon
// does. Sessions whose size the store cannot tell count as empty.
func limitMemory(ctx context.Context, store bs.Store, refs []bs.SessionRef) {
	if len(refs) == 0 {
		var err error
		if refs, _, err = store.Sessions(ctx); err != nil {
			return
		}
	}
	memlimit.SetFor(bs.StatMany(ctx, store, refs))
}
