// Package retention deletes old extracted values: side data older than the
// config's "retention" ("24h" by default) goes, on "retention_cron" and once
// at start-up; the placeholders stay, and a restore of a value that is gone
// answers restore.MissingText.
//
// # What is deleted
//
// Side data is deleted in units (brainsurgeon.SideUnit): a pack, whose age
// is its pass time, goes as a whole, and so does a per-entry file
// ("<entryId>.json", "<entryId>.json.zst", or the first BrainSurgeon's
// "__meta" file). A unit is expired when it was written more than
// "retention" before now.
//
// Some records of an expired unit are kept whatever the scope:
//
//   - the records of entries that a queued restore write-back or
//     set_extractable still names (restore's pending queue): the agent was
//     promised that value;
//   - the records of entries the agent restored within
//     "keep_after_restore_seconds", by any path, as the restore log
//     (Options.Restores) says: every pass protects a restored value that
//     long;
//   - records carrying another package's bookkeeping (restore's journal and
//     redactions, Record.Extra): without them `restore --all --pristine`
//     could not give back the host's bytes.
//
// A tool result stored at the source by the OpenClaw plugin (key
// "tc-<toolCallId>") is kept in every scope while its placeholder
// "[[extracted-tc-<toolCallId>]]" is in the current transcript, and while
// it is younger than the config's idle delay (the host writes the entry
// holding the placeholder after the record is stored); after that it is
// treated as any record.
//
// With "retention_scope": "orphans", the records of entries whose
// placeholder "[[extracted-<id>]]" is still in the current transcript are
// kept as well; with "all" (the default) they expire with their unit.
// An expired unit that holds only records to keep stays as it is; one that
// holds both kinds is repacked atomically into a new pack of the records
// to keep (the side store's [SideCollector]; the new pack keeps the old
// pass time); the others are deleted. Transcripts are read through
// the root Store, side data through the SideStore, so retention works the
// same on every backend and never touches a file path.
//
// # Deleted sessions
//
// The values of deleted sessions go first. Expired trash (package trash)
// is cleaned first when Options.Trash is set. Then come the sessions whose
// transcript is gone although their side data remains: deleted, or
// archived by the host (OpenClaw renames a transcript on /new, /reset and
// sessions.delete), when the Store names them ([GoneLister]; the
// installation's store does, and names a session only when no transcript
// or other file of its directory still names it). Their expired units go in every
// scope, the undo journal with them (it undoes edits of a transcript that
// is gone); only what a queued write-back names is kept. Their side
// location is removed once empty ([SideCollector]). A gone
// session's values are never deleted before they expire: telling a
// session gone by mistake costs at most what scope "all" would delete.
//
// # Use
//
// One call runs retention over every session (the daemon on
// "retention_cron", `POST /api/retention/run`, the CLI):
//
//	stats, err := retention.Run(ctx, retention.Options{Store: set.Store, Side: set.Side,
//		StateDir: set.StateDir, Config: cfg, Trash: bin, Logger: log})
//
// It logs "[RETENTION] Deleted 15 extracted files (1.2 MB)" at info level
// and returns Stats, {"cleaned":15,"bytes":1258291,"errors":0}. A deletion
// that fails is logged and counted in Errors, and the run goes on; the
// error returned joins them. The caller records last_retention_run_at.
package retention

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// Stats is what a run did.
type Stats struct {
	// Cleaned counts the files deleted: side files (packs, per-entry
	// files) and the files of expired trash items.
	Cleaned int `json:"cleaned"`
	// Bytes counts the bytes freed.
	Bytes int64 `json:"bytes"`
	// Errors counts the deletions (and sessions) that failed.
	Errors int `json:"errors"`
	// Sessions counts the sessions whose side data was examined.
	Sessions int `json:"sessions"`
	// Gone counts those of them whose transcript is gone (deleted or
	// archived by the host, GoneLister): their expired side
	// data went first, in every scope.
	Gone int `json:"gone"`
	// Repacked counts the new packs written to keep records of expired
	// packs; Kept the records they hold.
	Repacked int `json:"repacked"`
	Kept     int `json:"kept"`
	// TrashCleaned counts the files of expired trash items removed (also
	// counted in Cleaned).
	TrashCleaned int `json:"trash_cleaned"`
}

// TrashCleaner removes expired trash. *trash.Trash implements it.
type TrashCleaner interface {
	// CleanExpired removes the trash items whose expiry has passed and
	// returns how many files they held and their bytes. It goes on after a failure and
	// returns the failures joined.
	CleanExpired(ctx context.Context) (items int, bytes int64, err error)
}

// SideCollector is the part of a side store that retention removes side
// data with: it lists a session's side data as units and removes them,
// keeping chosen records, and removes a session's side location once it
// is empty. Retention decides what to remove from the units' age and
// entries, never from file paths. The side store of the JSONL era's side
// directories implements it.
type SideCollector interface {
	// SideUnits lists the session's side units, oldest first. A session
	// without side data has none.
	SideUnits(ctx context.Context, ref bs.SessionRef) ([]bs.SideUnit, error)
	// DropUnits removes the named units of a session. The live records
	// of the entries in keep that the units hold are first copied into
	// one new pack (with the newest pass time of the units, so its age
	// does not restart), and deletions that still hide older records
	// elsewhere are carried over too; the new pack is made durable before
	// any unit is removed, so a crash leaves the old units or the new
	// pack, never neither. With nothing to keep, the units are simply
	// removed. An unknown unit name is an error wrapping ErrNotFound and
	// nothing is removed; the units are named as SideUnits names them.
	DropUnits(ctx context.Context, ref bs.SessionRef, units []string, keep []string) (bs.SideDropResult, error)
	// RemoveSideIfEmpty removes the session's side location when it
	// holds nothing and reports whether it did; a location that still
	// holds anything, or none at all, is no error. Retention calls it for
	// gone sessions after their last unit went.
	RemoveSideIfEmpty(ctx context.Context, ref bs.SessionRef) (bool, error)
}

// GoneLister names the sessions whose transcript is gone (deleted, or
// archived by the host: OpenClaw renames a transcript
// "<file>.jsonl.deleted.<ts>" or "<file>.jsonl.reset.<ts>") while their
// side data remains, so that their values go first. It names a session
// only when it is sure the transcript is gone; one it cannot tell about
// (a directory it cannot read) is left out. The refs serve to reach the
// side data; they cannot be opened. The installation's store implements
// it.
type GoneLister interface {
	// GoneSessions returns the gone sessions. It fails rather than answer
	// from a partial view of the live sessions.
	GoneSessions(ctx context.Context) ([]bs.SessionRef, error)
}

// Options configure Run. Store, Side and Config are required.
type Options struct {
	// Store lists the sessions and reads their transcripts. When it is a
	// GoneLister, the side data of gone sessions goes first.
	Store bs.Store
	// Side holds the extracted values; it must be a SideCollector for
	// anything to be deleted.
	Side bs.SideStore
	// StateDir is BrainSurgeon's state dir; its restore queue names the
	// values queued write-backs still need. Empty: no queue.
	StateDir string
	// Config gives "retention" and "retention_scope".
	Config config.Config
	// MaxAge, when positive, replaces Config.Retention (for tests and
	// tools).
	MaxAge time.Duration
	// Trash, when not nil, has its expired items removed first.
	Trash TrashCleaner
	// Logger receives the run's records; nil discards.
	Logger bs.Logger
	// Clock tells the time; nil is the system clock.
	Clock bs.Clock
	// Restores is the log of the values the agent restored by any path
	// (see bs.RestoreLog); nil means none. The records of entries it says
	// were restored within the config's keep_after_restore_seconds are
	// kept in every scope: the context engine's view shows them from the
	// side store while a write-back is queued, and a second restore
	// answers from them.
	Restores bs.RestoreLog
}

// Run deletes the expired side data of every session (see the package
// documentation). It returns an error wrapping brainsurgeon.ErrInvalid for
// bad options (nothing is deleted then) and, after a complete run, the
// failures joined; Stats counts what was done in any case.
func Run(ctx context.Context, o Options) (Stats, error) {
	var st Stats
	if o.Store == nil || o.Side == nil {
		return st, fmt.Errorf("retention: the Options need a Store and a Side store (backend.Open gives both): %w", bs.ErrInvalid)
	}
	maxAge := o.MaxAge
	if maxAge <= 0 {
		d, err := o.Config.RetentionDuration()
		if err != nil {
			return st, fmt.Errorf("retention: %w", err)
		}
		maxAge = d
	}
	scope := o.Config.RetentionScope
	switch scope {
	case "":
		scope = config.ScopeAll
	case config.ScopeAll, config.ScopeOrphans:
	default:
		return st, fmt.Errorf("retention: retention_scope: must be %q or %q, got %q: %w", config.ScopeAll, config.ScopeOrphans, scope, bs.ErrInvalid)
	}
	collector, ok := o.Side.(SideCollector)
	if !ok {
		return st, fmt.Errorf("retention: the side store %T cannot delete side data in units: %w", o.Side, bs.ErrUnsupported)
	}
	log := bs.LoggerOrDiscard(o.Logger)
	now := bs.Now(o.Clock)
	cutoff := now.Add(-maxAge)
	var errs []error

	if o.Trash != nil {
		n, b, err := o.Trash.CleanExpired(ctx)
		st.Cleaned += n
		st.TrashCleaned += n
		st.Bytes += b
		if err != nil {
			st.Errors++
			errs = append(errs, err)
			log.Error("[RETENTION] expired trash not fully removed", "error", err)
		}
	}

	pending, err := (&restore.Restorer{StateDir: o.StateDir}).Pending()
	if err != nil {
		// Without the queue we cannot tell what a write-back needs: keep
		// everything rather than guess.
		return st, fmt.Errorf("retention: read the restore queue: %w", err)
	}
	r := &run{o: o, side: collector, log: log, cutoff: cutoff, scope: scope, pending: pending}
	// The values of deleted sessions go first.
	if gl, ok := o.Store.(GoneLister); ok {
		gone, err := gl.GoneSessions(ctx)
		if err != nil {
			st.Errors++
			errs = append(errs, fmt.Errorf("retention: tell which sessions are gone: %w", err))
			log.Error("[RETENTION] cannot tell which sessions are gone: their side data is kept", "error", err)
		}
		for _, ref := range gone {
			if err := ctx.Err(); err != nil {
				errs = append(errs, err)
				break
			}
			if err := r.session(ctx, ref, &st, true); err != nil {
				errs = append(errs, err)
			}
		}
	}
	refs, err := bs.ListSessions(ctx, o.Store, log)
	if err != nil {
		errs = append(errs, fmt.Errorf("retention: list sessions: %w", err))
		return st, errors.Join(errs...)
	}
	for _, ref := range refs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := r.session(ctx, ref, &st, false); err != nil {
			errs = append(errs, err)
		}
	}
	log.Info(fmt.Sprintf("[RETENTION] Deleted %s (%s)", plural.Count(st.Cleaned, "extracted file", "extracted files"), HumanBytes(st.Bytes)),
		"cleaned", st.Cleaned, "bytes", st.Bytes, "errors", st.Errors, "repacked", st.Repacked, "kept", st.Kept,
		"sessions", st.Sessions, "gone", st.Gone, "scope", scope, "retention", maxAge.String())
	return st, errors.Join(errs...)
}

// run is one retention run.
type run struct {
	o       Options
	side    SideCollector
	log     bs.Logger
	cutoff  time.Time
	scope   string
	pending []*restore.PendingRequest
}

// session applies retention to one session's side data. For a gone
// session (gone: its transcript was deleted or archived) no placeholder
// refers to a value any more and no undo can apply, so its expired units
// go in every scope, save the records a queued write-back names, and its
// side location is removed once empty.
func (r *run) session(ctx context.Context, ref bs.SessionRef, st *Stats, gone bool) error {
	if gone {
		defer r.removeIfEmpty(ctx, ref)
	}
	units, err := r.side.SideUnits(ctx, ref)
	if err != nil {
		if errors.Is(err, bs.ErrUnsupported) || errors.Is(err, bs.ErrInvalid) {
			return nil // a session that cannot have side data
		}
		st.Errors++
		r.log.Error("[RETENTION] cannot list side data", "session", ref.String(), "error", err)
		return fmt.Errorf("retention %s: %w", ref, err)
	}
	var expired []bs.SideUnit
	for _, u := range units {
		if u.Time.Before(r.cutoff) {
			expired = append(expired, u)
		}
	}
	if len(units) > 0 {
		st.Sessions++
		if gone {
			st.Gone++
		}
	}
	if len(expired) == 0 {
		return nil
	}

	keep := map[string]bool{}
	for _, q := range r.pending {
		if pendingRef(q).Same(ref) {
			keep[q.EntryID] = true
		}
	}
	// Values the agent restored within the protection window are kept:
	// the same rule every pass applies to a restored value.
	if !gone {
		logged, err := bs.RestoresOf(ctx, r.o.Restores, ref)
		if err != nil {
			st.Errors++
			r.log.Error("[RETENTION] restore log unreadable, the session's side data is kept", "session", ref.String(), "error", err)
			return fmt.Errorf("retention %s: read the restore log: %w", ref, err)
		}
		now, window := bs.Now(r.o.Clock), r.o.Config.KeepAfterRestore()
		for id, at := range logged {
			if now.Sub(at) < window {
				keep[id] = true
			}
		}
	}
	// A tool result stored at the source ("tc-<toolCallId>") is kept in
	// every scope while its placeholder is in the transcript, and while it
	// is younger than the idle delay: the host writes the entry holding
	// the placeholder only after the record is stored.
	sources := false
	idleFrom := bs.Now(r.o.Clock).Add(-r.o.Config.Idle())
	for _, u := range expired {
		for _, id := range u.Live {
			if extract.IsSourceKey(id) {
				sources = true
				if u.Time.After(idleFrom) {
					keep[id] = true
				}
			}
		}
	}
	if (r.scope == config.ScopeOrphans || sources) && !gone {
		refd, err := referenced(ctx, r.o.Store, ref)
		if err != nil {
			st.Errors++
			r.log.Error("[RETENTION] transcript unreadable, its side data is kept", "session", ref.String(), "error", err)
			return fmt.Errorf("retention %s: %w", ref, err)
		}
		for id := range refd {
			if r.scope == config.ScopeOrphans || extract.IsSourceKey(id) {
				keep[id] = true
			}
		}
	}
	// Records holding restore's journal or redactions are kept in every
	// scope: they are the only way back to the host's bytes.
	for _, u := range expired {
		if gone {
			break // the journal undoes edits of a transcript that is gone
		}
		for _, id := range u.Live {
			if keep[id] {
				continue
			}
			rec, err := extract.LoadRecord(ctx, r.o.Side, ref, id)
			if err == nil && (len(rec.Extra["journal"]) > 0 || len(rec.Extra["redactions"]) > 0) {
				keep[id] = true
			}
		}
	}

	var doomed, kept []string
	for _, u := range expired {
		if u.Err != "" && r.scope == config.ScopeOrphans && !gone {
			r.log.Warn("[RETENTION] unreadable pack kept: its entries are unknown", "session", ref.String(), "unit", u.Name, "error", u.Err)
			continue
		}
		var mine []string
		for _, id := range u.Live {
			if keep[id] {
				mine = append(mine, id)
			}
		}
		if len(mine) > 0 && len(mine) == len(u.Live) && u.Stale == 0 && u.Masks == 0 {
			continue // everything in it is still needed: leave it as it is
		}
		doomed = append(doomed, u.Name)
		kept = append(kept, mine...)
	}
	if len(doomed) == 0 {
		return nil
	}
	sort.Strings(kept)
	res, err := r.side.DropUnits(ctx, ref, doomed, kept)
	st.Cleaned += res.Removed
	st.Bytes += res.Freed
	st.Kept += res.Kept
	if res.Pack != "" {
		st.Repacked++
	}
	if err != nil {
		failed := len(doomed) - res.Removed
		st.Errors += max(failed, 1)
		r.log.Error("[RETENTION] deletion failed", "session", ref.String(), "units", len(doomed), "removed", res.Removed, "error", err)
		return fmt.Errorf("retention %s: %w", ref, err)
	}
	r.log.Debug("[RETENTION] session cleaned", "session", ref.String(), "removed", res.Removed, "bytes", res.Freed,
		"kept", res.Kept, "dropped", res.Dropped, "repack", res.Pack)
	return nil
}

// removeIfEmpty removes the side location of a gone session once nothing
// is left in it.
func (r *run) removeIfEmpty(ctx context.Context, ref bs.SessionRef) {
	if done, err := r.side.RemoveSideIfEmpty(ctx, ref); err != nil {
		r.log.Warn("[RETENTION] empty side location of a gone session not removed", "session", ref.String(), "error", err)
	} else if done {
		r.log.Debug("[RETENTION] empty side location of a gone session removed", "session", ref.String())
	}
}

// pendingRef returns the session a queued request names.
func pendingRef(q *restore.PendingRequest) bs.SessionRef {
	b := q.Backend
	if b == "" {
		b = bs.BackendJSONL
	}
	return bs.SessionRef{Backend: b, Agent: q.Agent, ID: q.SessionID}
}

// referenced returns the entry ids of every placeholder in the current
// transcript. Any "[[extracted-<id>]]" counts, even one quoted in another
// entry's text (keeping a value too many is harmless, one too few is
// not), and so does the first BrainSurgeon's bare "[[extracted]]", which
// names the entry that holds it.
func referenced(ctx context.Context, store bs.Store, ref bs.SessionRef) (map[string]bool, error) {
	ids := map[string]bool{}
	mark := []byte(extract.PlaceholderPrefix)
	bare := []byte("[[extracted]]")
	v := &bs.Visitor{Want: func([]byte) bool { return false }, Visit: func(e *bs.Entry) error {
		raw := e.Raw
		if e.ID != "" && bytes.Contains(raw, bare) {
			ids[e.ID] = true // the first BrainSurgeon's bare placeholder names its own entry
		}
		for {
			i := bytes.Index(raw, mark)
			if i < 0 {
				return nil
			}
			raw = raw[i+len(mark):]
			j := bytes.Index(raw, []byte("]]"))
			if j < 0 {
				return nil
			}
			if id := string(raw[:j]); bs.CheckSideKey(id) == nil {
				ids[id] = true
			}
			raw = raw[j:]
		}
	}}
	if _, err := store.Open(ctx, ref, v); err != nil {
		return nil, err
	}
	return ids, nil
}

// HumanBytes formats a size as the retention log line does: "1.2 MB", "512
// B" (units of 1024 bytes: 1258291 bytes is "1.2 MB").
func HumanBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, unit := range []string{"KB", "MB", "GB", "TB"} {
		f /= 1024
		if f < 1024 || unit == "TB" {
			return fmt.Sprintf("%.1f %s", f, unit)
		}
	}
	return fmt.Sprintf("%d B", n)
}
