package daemon

import (
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// changes remembers, per session, the state in which the last run left it
// (the version the store's Stat tells), so that a tick reads only the sessions that
// changed since. A session is also read again once a time-based
// protection that kept values in it may have expired (age_threshold_hours,
// keep_after_restore_seconds), though its transcript did not change.
type changes struct {
	mu   sync.Mutex
	seen map[string]mark
	// sweep is true after a config change that alters what is extracted:
	// until the next complete run, the last_run_at rule does not apply.
	sweep bool
}

type mark struct {
	v         bs.Version
	checkedAt time.Time
	recheckAt time.Time // zero: only a change of the transcript matters
}

// recheckCap is the longest an unchanged session with values kept only by
// a time-based protection waits before it is read again.
const recheckCap = time.Hour

func newChanges() *changes { return &changes{seen: map[string]mark{}} }

// unchanged reports whether the session whose Identity is id may be skipped, and since when it is
// unchanged. Without a mark (the daemon just started), a transcript last
// changed before the previous complete run started, by more than every
// time-based protection, counts as unchanged: that run saw it idle with
// nothing left protected by time.
func (c *changes) unchanged(id string, st bs.SessionStat, now time.Time, cfg config.Config) (bool, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.seen[id]; ok {
		if m.v.Equal(st.Version) && (m.recheckAt.IsZero() || now.Before(m.recheckAt)) {
			return true, m.checkedAt
		}
		return false, time.Time{}
	}
	if c.sweep || cfg.LastRunAt == nil || st.ModTime.IsZero() || st.Version.IsZero() {
		return false, time.Time{}
	}
	margin := max(cfg.Idle(), cfg.AgeThreshold(), cfg.KeepAfterRestore())
	if st.ModTime.Add(margin).Before(*cfg.LastRunAt) {
		c.seen[id] = mark{v: st.Version, checkedAt: *cfg.LastRunAt}
		return true, *cfg.LastRunAt
	}
	return false, time.Time{}
}

// done records that ref was processed at now and left in state st, with
// the extraction's result (nil when only write-backs ran).
func (c *changes) done(ref bs.SessionRef, st bs.SessionStat, now time.Time, res *extract.Result, cfg config.Config) {
	if st.Version.IsZero() {
		return
	}
	m := mark{v: st.Version, checkedAt: now}
	if res != nil {
		// The result does not say when the youngest kept value comes of
		// age; it is at most the protection's length away. Read again
		// then, or within recheckCap, whichever is sooner.
		if res.Counts[extract.CodeTooYoung] > 0 && cfg.AgeThreshold() > 0 {
			m.recheckAt = now.Add(min(cfg.AgeThreshold(), recheckCap))
		}
		if res.Counts[extract.CodeRestoreProtected] > 0 && cfg.KeepAfterRestore() > 0 {
			if t := now.Add(min(cfg.KeepAfterRestore(), recheckCap)); m.recheckAt.IsZero() || t.Before(m.recheckAt) {
				m.recheckAt = t
			}
		}
	}
	c.mu.Lock()
	c.seen[ref.Identity()] = m
	c.mu.Unlock()
}

// forget drops the mark of ref (it failed or was busy: read it next time).
func (c *changes) forget(ref bs.SessionRef) {
	c.mu.Lock()
	delete(c.seen, ref.Identity())
	c.mu.Unlock()
}

// reset forgets every session and disables the last_run_at rule until
// the next complete run.
func (c *changes) reset() {
	c.mu.Lock()
	c.seen = map[string]mark{}
	c.sweep = true
	c.mu.Unlock()
}

// complete ends a sweep and drops the marks of sessions that are gone.
func (c *changes) complete(live map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep = false
	for id := range c.seen {
		if !live[id] {
			delete(c.seen, id)
		}
	}
}

// extractionFields are the config fields that change what a pass
// extracts: a change of one of them makes every session worth reading
// again.
var extractionFields = map[string]bool{
	"enabled": true, "keep_recent": true, "min_value_length": true, "trigger_types": true,
	"age_threshold_hours": true, "keep_after_restore_seconds": true, "idle_seconds": true,
	"min_saving_tokens": true, "preview_chars": true,
}
