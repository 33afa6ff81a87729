package main

import (
	"context"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/memlimit"
)

// limitMemory sets the Go runtime's soft memory limit for a pass over refs
// (every session when refs is empty) by memlimit.SetFor, as the daemon
// does. A store that cannot tell sizes (not a Stater) leaves the default.
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
	stats := make([]bs.StatResult, len(refs))
	for i, ref := range refs {
		stats[i].Stat, stats[i].Err = st.Stat(ctx, ref)
	}
	memlimit.SetFor(stats)
}
