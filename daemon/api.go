package daemon

import (
	"context"
	"net/http"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/retention"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

// Retention returns the RetentionFunc that runs package retention over a
// set, with the trash's expired items removed first and the values the
// agent restored within keep_after_restore_seconds kept (the context
// engine's restore log under the set's state dir). clock tells the time
// (nil: the system clock).
func Retention(log bs.Logger, clock bs.Clock) RetentionFunc {
	return func(ctx context.Context, set bs.Installation, c config.Config) (any, error) {
		t := trash.New(set.Store, set.AgentsDir, set.StateDir)
		t.Logger, t.Clock = log, clock
		return retention.Run(ctx, retention.Options{Store: set.Store, Side: set.Side, StateDir: set.StateDir,
			Config: c, Trash: t, Logger: log, Clock: clock, Restores: restoreLog(set, c, true)})
	}
}

// Handler returns the REST API over the daemon: api.New with the daemon as
// its Control (config, run now, status) and a trash over the daemon's
// agents dir. opts.Installation (with opts.Backend when that is nil: both
// from the daemon's OpenFunc), Control, Trash and EngineMeter (the
// daemon's own, which Status reports) are filled when empty; the rest (keys, CORS,
// read-only, refresh period, and the web UI in opts.UI, which the binary
// passes since the daemon imports no presentation) comes from the caller,
// which reads the environment. A nil opts.UI serves no path outside /api/.
func (d *Daemon) Handler(ctx context.Context, opts api.Options) (http.Handler, error) {
	if opts.Installation.Store == nil {
		set, b, err := d.opts.Open(ctx, d.cfg.Get().Idle(), d.log)
		if err != nil {
			return nil, err
		}
		opts.Installation = set
		if opts.Backend == nil {
			opts.Backend = b
		}
	}
	if opts.Control == nil {
		opts.Control = control{d}
	}
	if opts.Trash == nil {
		t := trash.New(opts.Installation.Store, opts.Installation.AgentsDir, opts.Installation.StateDir)
		t.Logger = d.log
		opts.Trash = t
	}
	if opts.EngineMeter == nil {
		opts.EngineMeter = &d.meter
	}
	if opts.Logger == nil {
		opts.Logger = d.log
	}
	opts.ReadOnly = opts.ReadOnly || d.opts.ReadOnly
	return api.New(opts)
}

// control is the daemon as the API's Control.
type control struct{ d *Daemon }

func (c control) Config(context.Context) (config.Config, error) { return c.d.cfg.Get(), nil }

func (c control) UpdateConfig(ctx context.Context, patch []byte) (config.Config, error) {
	return c.d.cfg.Set(ctx, patch)
}

func (c control) RunPrune(ctx context.Context) (any, error) {
	r, err := c.d.RunPruneNow(ctx)
	if r == nil {
		return nil, err
	}
	return r, err
}

func (c control) RunRetention(ctx context.Context) (any, error) { return c.d.RunRetentionNow(ctx) }

func (c control) Status(context.Context) (any, error) { return c.d.Status(), nil }

// Restorer is control's api.Control.Restorer: the API's restores,
// set_extractable and get_context follow the runtime config, not the one
// the handler was made with: idle_seconds is their idle gate (a restore
// into a session used less than idle_seconds ago is queued), and the
// extraction policy and keep_purge_control_calls are the config's. Every
// restore that returns a value is recorded in the restore log (the context
// engine's state), so that every pass protects it. The
// same Restorer is returned until the config changes. Nil (the API then
// uses its own) when the agents dir cannot be opened.
func (c control) Restorer() *restore.Restorer {
	d := c.d
	d.restorerMu.Lock()
	defer d.restorerMu.Unlock()
	if d.restorer != nil {
		return d.restorer
	}
	cfg := d.cfg.Get()
	set, err := d.open(context.Background(), cfg)
	if err != nil {
		d.log.Warn("api: no restorer for the current config, the API's own is used", "error", err)
		return nil
	}
	pass := prune.New(set.Store, set.Side, set.StateDir, cfg, d.log)
	pass.Restores = restoreLog(set, cfg, d.opts.ReadOnly)
	d.restorer = pass.Restorer()
	return d.restorer
}
