// Package wiring connects the backends to the daemon, which takes root
// values and the API's Backend: it gives the daemon its opener over
// backend.Open. cmd/brainsurgeon and the tests that run the daemon over
// real stores use it; the policy packages never import the backends
// themselves. (The API takes an opened set as it is:
// api.Options{Installation: set.Installation, Backend: set}.)
package wiring

import (
	"context"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/daemon"
)

// Opener returns the daemon's OpenFunc over agentsDir: backend.Open with
// the quiet period and the logger of each run, whose Set is both the
// installation and the API's Backend.
func Opener(agentsDir string) daemon.OpenFunc {
	return func(ctx context.Context, idle time.Duration, log bs.Logger) (bs.Installation, api.Backend, error) {
		set, err := backend.Open(ctx, agentsDir, backend.Options{Idle: idle, Logger: log})
		if err != nil {
			return bs.Installation{}, nil, err
		}
		return set.Installation, set, nil
	}
}
