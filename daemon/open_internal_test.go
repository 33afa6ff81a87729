package daemon

import (
	"context"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
)

// opener is internal/wiring.Opener, which the package's own tests cannot
// import (it imports this package).
func opener(agentsDir string) OpenFunc {
	return func(ctx context.Context, idle time.Duration, log bs.Logger) (bs.Installation, error) {
		set, err := backend.Open(ctx, agentsDir, backend.Options{Idle: idle, Logger: log})
		if err != nil {
			return bs.Installation{}, err
		}
		return set.Installation, nil
	}
}
