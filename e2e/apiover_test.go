//go:build e2e

package e2e

import (
	"context"
	"net/http"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// apiOver returns the REST API over d as `brainsurgeon serve` builds it:
// the installation of the daemon's agents dir opened by internal/wiring,
// the daemon for the config, the jobs, the Restorer and the engine, and
// opts for the rest.
func apiOver(ctx context.Context, d *daemon.Daemon, opts api.Options) (http.Handler, error) {
	set, err := wiring.OpenFor(ctx, d, "")
	if err != nil {
		return nil, err
	}
	opts.Installation, opts.Backend, opts.Daemon = set.Installation, set, d
	return api.New(opts)
}
