package cli

import (
	"context"
	"errors"
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
)

// Open opens the installation under agentsDir with opts, and serves the
// pi sessions dir that config.PiSessionsDir finds beside it (pi's own,
// when it exists, or BRAINSURGEON_PI_SESSIONS_DIR), unless opts names
// one already. The side store is the config file's side_store unless
// opts names one: the values of an installation are in one store, for
// every command. Every command that lists or opens sessions opens them
// here, so that each sees the same sessions and values as the daemon.
func Open(ctx context.Context, agentsDir string, opts backend.Options) (*backend.Set, error) {
	if opts.SideStore == "" {
		if err := backend.CheckAgentsDir(agentsDir); err != nil {
			return nil, err
		}
		// A config that fails validation elsewhere still names the store
		// (the commands that need its other fields report them).
		c, _, err := config.LoadFile(ctx, agentsDir, nil)
		var ve *config.ValidationError
		if err != nil && !errors.As(err, &ve) {
			return nil, err
		}
		if ve != nil {
			if msg, bad := ve.Field("side_store"); bad {
				return nil, fmt.Errorf("%s: side_store: %s: %w", config.Path(agentsDir), msg, bs.ErrInvalid)
			}
		}
		opts.SideStore = c.SideStore
	}
	if opts.PiSessionsDir == "" {
		dir, _, err := config.PiSessionsDir()
		if err != nil {
			return nil, err
		}
		opts.PiSessionsDir = dir
	}
	return backend.Open(ctx, agentsDir, opts)
}
