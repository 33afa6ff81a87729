package daemon

import (
	"context"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/engine"
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
		t := trash.For(set)
		t.Logger, t.Clock = log, clock
		return retention.Run(ctx, retention.Options{Store: set.Store, Side: set.Side, StateDir: set.StateDir,
			Config: c, Trash: t, Logger: log, Clock: clock, Restores: restoreLog(set, c, true)})
	}
}

// Logger returns the daemon's logger (Options.Logger, or one that
// discards); an API over the daemon logs through it too.
func (d *Daemon) Logger() bs.Logger { return d.log }

// ReadOnly reports whether the daemon is in read-only mode
// (Options.ReadOnly): it writes nothing, and an API over it refuses every
// write.
func (d *Daemon) ReadOnly() bool { return d.opts.ReadOnly }

// EngineMeter returns the meter that counts the context engine's assemble
// calls an API over the daemon answers, and how long they took; Status
// reports its counts ("engine"). It is the same meter for the daemon's
// lifetime, and safe for concurrent use.
func (d *Daemon) EngineMeter() *engine.Meter { return &d.meter }

// Restorer returns the Restorer that follows the runtime config, for the
// restores, set_extractable and get_context of an API over the daemon:
// idle_seconds is its idle gate (a restore into a session used less than
// idle_seconds ago is queued, and the next prune run applies it), and the
// extraction policy and keep_purge_control_calls are the config's. Every
// restore that returns a value is recorded in the restore log (the context
// engine's state), so that every pass protects it. The same Restorer is
// returned until the config changes, so that its per-session locks
// serialise write-backs within the process. It returns nil (the API then
// uses its own) when the agents dir cannot be opened.
func (d *Daemon) Restorer() *restore.Restorer {
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
