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
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
)

// Open opens the installation of agentsDir with every backend
// (backend.Open), with the pi sessions dir piSessionsDir served beside it
// ("" none; the binary finds it with config.PiSessionsDir), the quiet
// period idle (idle_seconds; zero means none) and the logger log (nil
// discards). Its Set is both the installation and the API's Backend. It
// fails with an error wrapping brainsurgeon.ErrNotFound when the agents
// dir or a pi sessions dir named does not exist.
func Open(ctx context.Context, agentsDir, piSessionsDir string, idle time.Duration, log bs.Logger) (*backend.Set, error) {
	return backend.Open(ctx, agentsDir, backend.Options{Idle: idle, Logger: log, PiSessionsDir: piSessionsDir})
}

// OpenConfig is Open with the runtime config c: its quiet period and its
// side store (side_store).
func OpenConfig(ctx context.Context, agentsDir, piSessionsDir string, c config.Config, log bs.Logger) (*backend.Set, error) {
	opts := backend.FromConfig(c, log)
	opts.PiSessionsDir = piSessionsDir
	return backend.Open(ctx, agentsDir, opts)
}

// OpenFor opens the installation a daemon works on, with the quiet period
// of its runtime config and its logger, as the daemon opens it for a run:
// the set an API over d is given, with the pi sessions dir its Opener
// serves.
func OpenFor(ctx context.Context, d *daemon.Daemon, piSessionsDir string) (*backend.Set, error) {
	return OpenConfig(ctx, d.AgentsDir(), piSessionsDir, d.Config().Get(), d.Logger())
}

// Opener returns the daemon's OpenFunc over agentsDir and piSessionsDir
// ("" none): OpenConfig with the config and the logger of each run.
func Opener(agentsDir, piSessionsDir string) daemon.OpenFunc {
	return func(ctx context.Context, c config.Config, log bs.Logger) (bs.Installation, error) {
		set, err := OpenConfig(ctx, agentsDir, piSessionsDir, c, log)
		if err != nil {
			return bs.Installation{}, err
		}
		return set.Installation, nil
	}
}
