package main

import (
	"context"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// applyPending applies queued restore write-backs (DESIGN decision 7).
func (m *Main) applyPending(ctx context.Context, st *session.Store, cfg config.Config) error {
	return nil
}
