package daemon

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	rdebug "runtime/debug"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/logging"
	"github.com/brainsurgeon/brainsurgeon/internal/memlimit"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/prune"
)

// maxErrors caps PruneResult.Errors.
const maxErrors = 20

// PruneResult is the outcome of one extraction run of the daemon.
type PruneResult struct {
	// StartedAt is when the run started; Elapsed how long it took.
	StartedAt time.Time     `json:"started_at"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	// Manual is true for RunPruneNow.
	Manual bool `json:"manual"`
	// Disabled is true when pruning is disabled: the run only applied the
	// queued restore write-backs.
	Disabled bool `json:"disabled"`
	// Stopped is true when shutdown stopped the run between sessions.
	Stopped bool `json:"stopped"`
	// Sessions counts the sessions listed; Unchanged those skipped
	// because they did not change since they were last processed;
	// Processed those read.
	Sessions  int `json:"sessions"`
	Unchanged int `json:"unchanged"`
	Processed int `json:"processed"`
	// Extracted counts the sessions rewritten, Busy those in use (tried
	// again next time), Failed those in error.
	Extracted int `json:"extracted"`
	Busy      int `json:"busy"`
	Failed    int `json:"failed"`
	// NotAttempted counts the sessions the run did not read because the
	// side store could not be reached (brainsurgeon.ErrUnavailable): the
	// run stopped at the session it failed for, and the next run reads
	// them. Unavailable is that error's message, else empty.
	NotAttempted int    `json:"not_attempted"`
	Unavailable  string `json:"unavailable,omitempty"`
	// Values counts the values extracted, BytesSaved what the transcripts
	// shrank by.
	Values     int   `json:"values"`
	BytesSaved int64 `json:"bytes_saved"`
	// WriteBacks counts the queued restore write-backs applied.
	WriteBacks int `json:"write_backs"`
	// Errors holds the first error messages (sessions in error, a failed
	// write-back, an agent's store that could not be listed), at most 20.
	Errors []string `json:"errors,omitempty"`
	// Reason says why the run wrote no transcript (pruning disabled, every
	// session busy or unchanged, nothing to extract); empty when it wrote
	// one. IdleAt is the earliest time a session that was busy only for
	// its quiet period (idle_seconds) will be idle, or nil.
	Reason string     `json:"reason,omitempty"`
	IdleAt *time.Time `json:"idle_at,omitempty"`
	// Compaction is the automatic compaction that followed a scheduled
	// run (compaction.auto_enabled), or nil.
	Compaction *CompactResult `json:"compaction,omitempty"`
}

func (r *PruneResult) addError(msg string) {
	if len(r.Errors) < maxErrors {
		r.Errors = append(r.Errors, msg)
	}
}

// runPrune is one extraction run: the queued write-backs of idle
// sessions, then, when pruning is enabled (or the run is manual), every
// session that changed since it was last processed, one at a time. The
// run stops between sessions when ctx is cancelled; the session being
// written is finished under a context that is not cancelled. It also
// stops when a session fails because the side store cannot be reached:
// the sessions it would have read next are counted as not attempted and
// stay marked as changed (as after a stopped run, last_run_at is not
// saved), so the next run reads them, and runPrune returns its result
// with an error wrapping brainsurgeon.ErrUnavailable.
func (d *Daemon) runPrune(ctx context.Context, manual bool) (*PruneResult, error) {
	d.trace(ctx, "runPrune: start", "manual", manual)
	start := time.Now()
	cfg := d.cfg.Get()
	res := &PruneResult{StartedAt: start.UTC(), Manual: manual, Errors: nil}
	defer func() { res.Elapsed = time.Since(start) }()
	set, err := d.open(ctx, cfg)
	if err != nil {
		return res, err
	}
	pass := prune.New(set.Store, set.Side, set.StateDir, cfg, d.log)
	pass.Force, pass.SkipPending = true, true
	// A value the agent restored by any path (the engine's view, a
	// write-back still queued) is not extracted again within
	// keep_after_restore_seconds.
	pass.Restores = restoreLog(set, cfg, d.opts.ReadOnly)
	work := context.WithoutCancel(ctx)

	n, written, err := pass.Restorer().ApplyPending(work)
	res.WriteBacks = n
	if err != nil {
		d.log.Warn("applying queued restore write-backs failed", "error", err)
		res.addError(err.Error())
	}
	for _, ref := range written { // one ref per write-back: forgetting twice is harmless
		d.changes.forget(ref)
	}
	if !cfg.Enabled && !manual {
		res.Disabled = true
		res.Reason = "smart pruning is disabled: only queued restore write-backs were applied"
		d.log.Debug("prune: smart pruning is disabled, only queued write-backs were applied", "write_backs", n)
		return res, nil
	}

	refs, skipped, err := set.Store.Sessions(ctx)
	if err != nil {
		return res, fmt.Errorf("prune: list sessions: %w", err)
	}
	for _, e := range skipped { // an agent's store locked or corrupt: tried again next run
		d.log.Warn("sessions not listed", "error", e)
		res.addError(e.Error())
	}
	res.Sessions = len(refs)
	stats := statAll(ctx, set.Store, refs)
	debug := bs.DebugEnabled(d.log)
	live := make(map[string]bool, len(refs))
	ids := make([]string, len(refs))
	for i, ref := range refs {
		ids[i] = ref.Identity()
		live[ids[i]] = true
	}
	if d.opts.LimitMemory {
		memlimit.SetFor(stats)
		defer func() {
			if res.Processed > 0 {
				rdebug.FreeOSMemory()
			}
		}()
	}
	var down error // the side store's error that stopped the run
	for i, ref := range refs {
		if ctx.Err() != nil {
			res.Stopped = true
			break
		}
		st, err := stats[i].Stat, stats[i].Err
		if errors.Is(err, bs.ErrNotFound) {
			continue // gone since the listing
		}
		now := time.Now()
		if !manual {
			if ok, since := d.changes.unchanged(ids[i], st, now, cfg); ok {
				res.Unchanged++
				if debug {
					d.log.Debug(fmt.Sprintf("Session %s unchanged since %s, skipping", ref, since.UTC().Format(time.RFC3339)))
				}
				continue
			}
		}
		if down != nil {
			res.NotAttempted++
			d.changes.forget(ref)
			continue
		}
		res.Processed++
		if err := d.processOne(work, pass, ref, st, now, cfg, res); err != nil {
			down = err
			res.Unavailable = bs.ErrorMessage(err)
		}
	}
	if !res.Stopped && down == nil {
		d.changes.complete(live)
		d.saveRunTime(ctx, func(c *config.Config) { t := start.UTC(); c.LastRunAt = &t })
	}
	res.Reason = res.reason()
	msg := fmt.Sprintf("Prune run: %s, %d processed, %d unchanged, %d extracted (%s, %s saved), %d busy, %d failed, %s",
		plural.Count(res.Sessions, "session", "sessions"), res.Processed, res.Unchanged, res.Extracted, plural.Count(res.Values, "value", "values"),
		plural.Count(int(res.BytesSaved), "byte", "bytes"), res.Busy, res.Failed, plural.Count(res.WriteBacks, "write-back", "write-backs"))
	args := []any{"job", JobPrune}
	if a := logging.ActorFrom(ctx); a != "" {
		args = append(args, logging.KeyActor, a)
	}
	if down != nil {
		// The scheduler (or the API) reports the error returned.
		msg += fmt.Sprintf(", %d not attempted: the side store cannot be reached, the run stopped", res.NotAttempted)
	}
	if res.Processed > 0 || res.WriteBacks > 0 || manual {
		d.log.Info(msg, args...)
	} else {
		d.log.Debug(msg, args...)
	}
	if down != nil {
		return res, fmt.Errorf("prune: the run stopped, %s not attempted (read on the next run): %w",
			plural.Count(res.NotAttempted, "session", "sessions"), down)
	}
	return res, nil
}

// statAll asks the store for the state of every session, on a few
// goroutines (a stat is a system call; 10,000 of them are most of a
// tick), in contiguous runs so that each sessions directory is opened
// once per run (brainsurgeon.StatMany).
func statAll(ctx context.Context, store bs.Store, refs []bs.SessionRef) []bs.StatResult {
	out := make([]bs.StatResult, len(refs))
	workers := min(max(runtime.GOMAXPROCS(0), 2), 8, max(len(refs)/256, 1))
	var wg sync.WaitGroup
	per := (len(refs) + workers - 1) / workers
	for start := 0; start < len(refs); start += per {
		end := min(start+per, len(refs))
		wg.Go(func() {
			copy(out[start:end], bs.StatMany(ctx, store, refs[start:end]))
		})
	}
	wg.Wait()
	return out
}

// processOne runs the pass over one session and records the outcome. It
// returns the pass's error when the side store could not be reached (one
// wrapping brainsurgeon.ErrUnavailable), and nil otherwise.
func (d *Daemon) processOne(ctx context.Context, pass *prune.Pass, ref bs.SessionRef, st bs.SessionStat, now time.Time, cfg config.Config, res *PruneResult) error {
	rep, err := pass.Run(ctx, []bs.SessionRef{ref})
	if errors.Is(err, bs.ErrUnavailable) {
		// The pass logged the session's failure; the run says where it
		// stopped.
		var se *prune.StoppedError
		if errors.As(err, &se) {
			err = se.Err
		}
		res.Failed++
		res.addError(fmt.Sprintf("%s: %v", ref, err))
		d.changes.forget(ref)
		return err
	}
	if err == nil && len(rep.Sessions) != 1 {
		err = fmt.Errorf("the pass reported %d sessions for one", len(rep.Sessions))
	}
	if err != nil {
		res.Failed++
		res.addError(fmt.Sprintf("%s: %v", ref, err))
		d.log.Error("prune: session failed", "session", ref.String(), "error", err)
		d.changes.forget(ref)
		return nil
	}
	sr := rep.Sessions[0]
	checked := 0
	if sr.Result != nil {
		for _, n := range sr.Result.Counts {
			checked += n
		}
	}
	switch sr.Status {
	case prune.StatusExtracted:
		res.Extracted++
		res.Values += sr.Result.Values
		res.BytesSaved += sr.Result.BytesSaved
		args := []any{"session", ref.String(), "job", JobPrune}
		if a := logging.ActorFrom(ctx); a != "" {
			args = append(args, logging.KeyActor, a)
		}
		d.log.Info(fmt.Sprintf("Processing session %s, %s to check: %s of %s extracted, %s saved",
			ref, plural.Count(checked, "entry", "entries"), plural.Count(sr.Result.Values, "value", "values"), plural.Count(sr.Result.Entries, "entry", "entries"),
			plural.Count(int(sr.Result.BytesSaved), "byte", "bytes")), args...)
		// The rewrite changed the transcript: remember its new state.
		if st2, err := pass.Store.Stat(ctx, ref); err == nil {
			d.changes.done(ref, st2, now, sr.Result, cfg)
			return nil
		}
		d.changes.forget(ref)
	case prune.StatusUnchanged, prune.StatusWrittenBack:
		d.log.Debug(fmt.Sprintf("Processing session %s, %s to check: %s", ref, plural.Count(checked, "entry", "entries"), orDefault(sr.Note, "nothing to extract")))
		if sr.WriteBacks > 0 {
			d.changes.forget(ref)
			return nil
		}
		d.changes.done(ref, st, now, sr.Result, cfg)
	case prune.StatusBusy:
		res.Busy++
		if sr.IdleAt != nil && (res.IdleAt == nil || sr.IdleAt.Before(*res.IdleAt)) {
			at := *sr.IdleAt
			res.IdleAt = &at
		}
		d.log.Debug(fmt.Sprintf("Session %s busy, tried again next time: %s", ref, sr.Note))
		d.changes.forget(ref)
	default:
		res.Failed++
		res.addError(ref.String() + ": " + sr.Note)
		d.changes.forget(ref)
	}
	return nil
}

// reason says why the run wrote no transcript, or "" when it wrote one.
func (r *PruneResult) reason() string {
	switch {
	case r.Extracted > 0 || r.WriteBacks > 0:
		return ""
	case r.Sessions == 0:
		return "nothing was written: there are no sessions"
	case r.Stopped:
		return "nothing was written: the run was stopped"
	case r.Unavailable != "":
		return fmt.Sprintf("nothing was written: the side store cannot be reached (see unavailable): the run stopped, %d failed, %d not attempted", r.Failed, r.NotAttempted)
	case r.Processed == 0 && r.Unchanged == r.Sessions:
		return fmt.Sprintf("nothing was written: every session (%d) is unchanged since it was last processed", r.Unchanged)
	case r.Processed == 0:
		return fmt.Sprintf("nothing was written: %d of %s %s unchanged since %s last processed, the others were gone when their turn came",
			r.Unchanged, plural.Count(r.Sessions, "session", "sessions"), plural.Noun(r.Unchanged, "is", "are"), plural.Noun(r.Unchanged, "it was", "they were"))
	case r.Busy == r.Processed:
		return fmt.Sprintf("nothing was written: every session processed (%d) is busy; busy sessions are tried again on the next run", r.Busy)
	case r.Busy+r.Failed > 0:
		return fmt.Sprintf("nothing was written: %s busy, %d failed, %d with nothing to extract", plural.Count(r.Busy, "session", "sessions"), r.Failed, r.Processed-r.Busy-r.Failed)
	}
	return "nothing was written: no session has anything to extract"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
