// Package wiring connects the backends to the policy packages that take
// root interfaces: it turns backend.Open's Set into the API's Stores and
// gives the daemon its opener. cmd/brainsurgeon and the tests that run the
// daemon or the API over real stores use it; the policy packages never
// import the backends themselves.
package wiring

import (
	"context"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/daemon"
)

// Stores returns the API's view of an opened set: its store, side store,
// agents dir, state dir, backends, and the set itself as the API's
// Backend.
func Stores(set *backend.Set) api.Stores {
	return api.Stores{Store: set.Store, Side: set.Side, AgentsDir: set.AgentsDir, StateDir: set.StateDir,
		Backends: set.Backends, Backend: set}
}

// Opener returns the daemon's OpenFunc over agentsDir: backend.Open with
// the quiet period and the logger of each run.
func Opener(agentsDir string) daemon.OpenFunc {
	return func(ctx context.Context, idle time.Duration, log bs.Logger) (api.Stores, error) {
		set, err := backend.Open(ctx, agentsDir, backend.Options{Idle: idle, Logger: log})
		if err != nil {
			return api.Stores{}, err
		}
		return Stores(set), nil
	}
}
