// Package wiring connects the backends to the daemon and the API, which
// take root values and never import a backend themselves: Opener gives the
// daemon its OpenFunc over backend.Open, and Open opens the set that an
// API over a daemon is given (api.Options{Daemon: d, Installation:
// set.Installation, Backend: set}). cmd/brainsurgeon and the tests that run
// the daemon over real stores use it.
package wiring

import (
	"context"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/daemon"
)

// Open opens the installation of agentsDir with every backend
// (backend.Open), with the quiet period idle (idle_seconds; zero means
// none) and the logger log (nil discards). Its Set is both the
// installation and the API's Backend. It fails with an error wrapping
// brainsurgeon.ErrNotFound when the agents dir does not exist.
func Open(ctx context.Context, agentsDir string, idle time.Duration, log bs.Logger) (*backend.Set, error) {
	return backend.Open(ctx, agentsDir, backend.Options{Idle: idle, Logger: log})
}

// OpenFor opens the installation a daemon works on, with the quiet period
// of its runtime config and its logger, as the daemon opens it for a run:
// the set an API over d is given.
func OpenFor(ctx context.Context, d *daemon.Daemon) (*backend.Set, error) {
	return Open(ctx, d.AgentsDir(), d.Config().Get().Idle(), d.Logger())
}

// Opener returns the daemon's OpenFunc over agentsDir: Open with the quiet
// period and the logger of each run.
func Opener(agentsDir string) daemon.OpenFunc {
	return func(ctx context.Context, idle time.Duration, log bs.Logger) (bs.Installation, error) {
		set, err := Open(ctx, agentsDir, idle, log)
		if err != nil {
			return bs.Installation{}, err
		}
		return set.Installation, nil
	}
}
