package daemon

import (
	"context"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
)

// opener is internal/wiring.Opener, which the package's own tests cannot
// import (it imports this package).
func opener(agentsDir string) OpenFunc {
	return func(ctx context.Context, c config.Config, log bs.Logger) (bs.Installation, error) {
		set, err := backend.Open(ctx, agentsDir, backend.FromConfig(c, log))
		if err != nil {
			return bs.Installation{}, err
		}
		return set.Installation, nil
	}
}
