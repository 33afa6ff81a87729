package daemon

import (
	"context"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/compactwire"
)

// Engine returns the context engine that the plugin's assemble and
// compact requests, the engine paths of its tools and the session detail
// of an API over the daemon use, and that automatic compaction asks
// whether it serves a session. It follows the runtime config: its
// extraction policy, compaction thresholds and summarizer are the
// config's, and a config change (other than the run times) makes a new
// one on the next call while the old one finishes its background
// summaries. Its state is kept under the state dir of the opened stores.
// The daemon owns it and closes it at Close. It returns nil (the API's
// engine endpoints then answer 501) when the agents dir cannot be opened
// or the daemon is closed.
func (d *Daemon) Engine() *engine.Engine {
	d.engineMu.Lock()
	defer d.engineMu.Unlock()
	if d.engine != nil {
		return d.engine
	}
	if d.engineClosed {
		return nil
	}
	cfg := d.cfg.Get()
	set, err := d.open(context.Background(), cfg)
	if err != nil {
		d.log.Warn("api: no context engine for the current config", "error", err)
		return nil
	}
	// The side store is read for restored values whose write-back waits
	// (the view shows them in full); the engine never writes it.
	e := &engine.Engine{Store: set.Store, StateDir: set.StateDir, Side: set.Side, Policy: extract.FromConfig(cfg), Logger: d.log}
	if tools, err := compactwire.New(cfg.Compaction, d.log); err == nil {
		e.Settings, e.Summarizer = tools.Settings, tools.Summarizer()
	} else {
		// A compaction config whose tokenizer is unknown: the thresholds
		// still come from it, the summaries are the deterministic ones.
		d.log.Warn("context engine: the compaction config is not usable as it is, summaries are deterministic", "error", err)
		e.Settings, e.Summarizer = compact.FromConfig(cfg.Compaction), compactwire.Deterministic()
	}
	// Read-only mode saves no decision.
	e.ReadOnly = d.opts.ReadOnly
	d.engine = e
	return e
}

// dropEngine retires the context engine made for an older config: it is
// closed in the background (its summaries being written are cancelled; the
// next views start them again) and the next request makes a new one.
func (d *Daemon) dropEngine() {
	d.engineMu.Lock()
	old := d.engine
	d.engine = nil
	d.engineMu.Unlock()
	if old == nil {
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := old.Close(); err != nil {
			d.log.Warn("context engine: close after a config change", "error", err)
		}
	}()
}

// closeEngine closes the context engine for good (Close).
func (d *Daemon) closeEngine() {
	d.engineMu.Lock()
	e := d.engine
	d.engine, d.engineClosed = nil, true
	d.engineMu.Unlock()
	if e == nil {
		return
	}
	if err := e.Close(); err != nil {
		d.log.Warn("context engine: close", "error", err)
	}
}

// restoreLog returns the restore log of the installation set under the
// runtime config c: the context engine's state (State.Restored under the
// state dir), which records every restore (the engine's own, the side
// store's through the Restorer) and which the prune pass, compaction's
// prune layer and retention read, so that a value the agent restored by
// any path is protected for keep_after_restore_seconds everywhere. It
// shares the per-session lock of the API's engine (one per state file in
// the process); in read-only mode it records nothing.
func restoreLog(set bs.Installation, c config.Config, readOnly bool) *engine.Engine {
	return &engine.Engine{Store: set.Store, StateDir: set.StateDir, Policy: extract.FromConfig(c), ReadOnly: readOnly}
}
