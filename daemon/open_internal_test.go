package daemon

import (
	"context"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
)

// opener is internal/wiring.Opener, which the package's own tests cannot
// import (it imports this package).
func opener(agentsDir string) OpenFunc {
	return func(ctx context.Context, idle time.Duration, log bs.Logger) (api.Stores, error) {
		set, err := backend.Open(ctx, agentsDir, backend.Options{Idle: idle, Logger: log})
		if err != nil {
			return api.Stores{}, err
		}
		return api.Stores{Store: set.Store, Side: set.Side, AgentsDir: set.AgentsDir, StateDir: set.StateDir,
			Backends: set.Backends, Backend: set}, nil
	}
}
