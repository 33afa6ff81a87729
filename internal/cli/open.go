package cli

import (
	"context"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
)

// Open opens the installation under agentsDir with opts, and serves the
// pi sessions dir that config.PiSessionsDir finds beside it (pi's own,
// when it exists, or BRAINSURGEON_PI_SESSIONS_DIR), unless opts names
// one already. Every command that lists or opens sessions opens them
// here, so that each sees the same sessions as the daemon.
func Open(ctx context.Context, agentsDir string, opts backend.Options) (*backend.Set, error) {
	if opts.PiSessionsDir == "" {
		dir, _, err := config.PiSessionsDir()
		if err != nil {
			return nil, err
		}
		opts.PiSessionsDir = dir
	}
	return backend.Open(ctx, agentsDir, opts)
}
