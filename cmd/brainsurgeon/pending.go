package main

import (
	"context"
	"fmt"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// applyPending applies queued restore write-backs (DESIGN decision 7). It
// prints nothing unless something was applied.
func (m *Main) applyPending(ctx context.Context, st *session.Store, cfg config.Config) error {
	n, err := m.newRestorer(st, cfg).ApplyPending(ctx)
	if n > 0 {
		fmt.Fprintf(m.Stderr, "applied %d pending restore write-backs\n", n)
	}
	return err
}
