package daemon

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/audit"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/compactwire"
	"github.com/brainsurgeon/brainsurgeon/internal/logging"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

// CompactResult is the outcome of the automatic compaction that follows a
// scheduled prune run when the config's compaction.auto_enabled is true.
type CompactResult struct {
	// Sessions counts the sessions listed; Unchanged those skipped
	// because they did not change since they were last checked; Quiet
	// those changed less than compaction.auto_quiet_seconds ago (checked
	// on a later tick); Checked those whose status was computed.
	Sessions  int `json:"sessions"`
	Unchanged int `json:"unchanged"`
	Quiet     int `json:"quiet"`
	Checked   int `json:"checked"`
	// Compacted counts the sessions compacted; Refused those refused (in
	// use, within the quiet period, changed meanwhile, or a store that
	// cannot append: tried again later); Failed those in error.
	Compacted int `json:"compacted"`
	Refused   int `json:"refused"`
	Failed    int `json:"failed"`
	// TokensSaved sums tokens_before − tokens_after of the compactions.
	TokensSaved int `json:"tokens_saved"`
	// Errors holds the first error messages, at most 20.
	Errors []string `json:"errors,omitempty"`
}

// compactMarks remembers, per session, the version in which automatic
// compaction last left it (nothing to do, or compacted), so that a tick
// reads only the sessions that changed since. A refused session has no
// mark: it is read again on the next tick.
type compactMarks struct {
	mu   sync.Mutex
	seen map[string]bs.Version
}

func (m *compactMarks) unchanged(id string, v bs.Version) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.seen[id]
	return ok && !v.IsZero() && old.Equal(v)
}

func (m *compactMarks) set(id string, v bs.Version) {
	if v.IsZero() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]bs.Version{}
	}
	m.seen[id] = v
}

func (m *compactMarks) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seen, id)
}

// keep drops the marks of sessions that are gone.
func (m *compactMarks) keep(live map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.seen {
		if !live[id] {
			delete(m.seen, id)
		}
	}
}

// autoCompact runs automatic compaction over every session that changed
// since it was last checked and has been left alone for the quiet period:
// compact.Status, and when a threshold is crossed, compact.Compact with
// Trigger auto. It returns nil when compaction.auto_enabled is false. It
// stops between sessions when ctx is cancelled; a compaction in progress
// finishes.
func (d *Daemon) autoCompact(ctx context.Context) *CompactResult {
	cfg := d.cfg.Get()
	if !cfg.Compaction.AutoEnabled || d.opts.ReadOnly {
		return nil
	}
	res := &CompactResult{}
	tools, err := compactwire.New(cfg.Compaction, d.log)
	if err != nil {
		d.log.Error("auto-compaction: bad compaction config", "error", err)
		res.Errors = append(res.Errors, err.Error())
		return res
	}
	set, err := d.open(ctx, cfg)
	if err == nil {
		// The thresholds are shares of the window of each session's model.
		tools.Tokens.Window = compactwire.HostWindow(set.AgentsDir, d.log)
	}
	if err != nil {
		d.log.Error("auto-compaction: open the agents dir", "error", err)
		res.Errors = append(res.Errors, err.Error())
		return res
	}
	refs, err := bs.ListSessions(ctx, set.Store, d.log)
	if err != nil {
		d.log.Error("auto-compaction: list sessions", "error", err)
		res.Errors = append(res.Errors, err.Error())
		return res
	}
	res.Sessions = len(refs)
	stats := statAll(ctx, set.Store, refs)
	live := make(map[string]bool, len(refs))
	work := context.WithoutCancel(ctx)
	for i, ref := range refs {
		id := ref.Identity()
		live[id] = true
		if ctx.Err() != nil {
			return res
		}
		st, err := stats[i].Stat, stats[i].Err
		if errors.Is(err, bs.ErrNotFound) {
			continue
		}
		if d.compactMarks.unchanged(id, st.Version) {
			res.Unchanged++
			continue
		}
		if !st.ModTime.IsZero() {
			if q := time.Since(st.ModTime); q < tools.Settings.AutoQuiet {
				res.Quiet++
				d.log.Debug(fmt.Sprintf("[COMPACT] %s changed %s ago, within the %s quiet period: checked on a later tick", ref, q.Round(time.Second), tools.Settings.AutoQuiet),
					"session", ref.String())
				continue
			}
		}
		d.compactOne(work, set, ref, st, tools, cfg, res)
	}
	d.compactMarks.keep(live)
	if res.Checked > 0 || res.Compacted > 0 {
		d.log.Info(fmt.Sprintf("Auto-compaction: %s, %d checked, %d compacted (%s %s saved), %d refused, %d failed",
			plural.Count(res.Sessions, "session", "sessions"), res.Checked, res.Compacted, commas(res.TokensSaved), plural.Noun(int(res.TokensSaved), "token", "tokens"), res.Refused, res.Failed), "job", JobPrune)
	}
	return res
}

// EngineServesWithin is how recent the context engine's last view of a
// session must be for automatic compaction to leave the session to it:
// the span in which the engine counts as serving the session everywhere
// (engine.ServingWithin).
const EngineServesWithin = engine.ServingWithin

// compactOne checks one session's thresholds and compacts it when one is
// crossed.
func (d *Daemon) compactOne(ctx context.Context, set bs.Installation, ref bs.SessionRef, st bs.SessionStat, tools compactwire.Tools, cfg config.Config, res *CompactResult) {
	id := ref.Identity()
	if eng := d.Engine(); eng != nil && eng.Serves(ref, EngineServesWithin) {
		// The context engine shows this session's model a layered view; a
		// compaction entry in the transcript would summarize the same
		// history a second time.
		d.log.Debug(fmt.Sprintf("[COMPACT] %s is served by the context engine (a view within %s): left to it", ref, EngineServesWithin),
			"session", ref.String())
		d.compactMarks.set(id, st.Version)
		return
	}
	tr, err := set.Store.Open(ctx, ref, nil)
	if err == nil {
		var s compact.StatusReport
		s, err = compact.Status(ctx, tr, tools.Settings, tools.Tokens)
		if err == nil {
			res.Checked++
			if s.Layer == compact.LayerNone {
				d.log.Debug(fmt.Sprintf("[COMPACT] %s at %s of %s tokens (%.1f%%): below the thresholds", ref, commas(s.Tokens), commas(s.Window), s.Percent), "session", ref.String())
				d.compactMarks.set(id, st.Version)
				return
			}
		}
	}
	var r compact.Result
	if err == nil {
		r, err = compact.Compact(ctx, set.Store, ref, compact.Options{Trigger: compact.TriggerAuto,
			Summarizer: tools.Summarizer(), Settings: tools.Settings, Tokens: tools.Tokens, Side: set.Side, Logger: d.log,
			Policy: extract.Policy{KeepAfterRestore: cfg.KeepAfterRestore()}, Restores: restoreLog(set, cfg, d.opts.ReadOnly)})
	}
	switch {
	case err == nil:
	case errors.Is(err, bs.ErrBusy), errors.Is(err, bs.ErrChanged):
		res.Refused++
		d.log.Debug(fmt.Sprintf("[COMPACT] %s refused, tried again on a later tick: %v", ref, err), "session", ref.String())
		d.compactMarks.forget(id)
		return
	case errors.Is(err, bs.ErrUnsupported):
		// A store that cannot append (OpenClaw's SQLite store): tried
		// again once the session changes.
		res.Refused++
		d.log.Debug(fmt.Sprintf("[COMPACT] %s refused, tried again once it changes: %v", ref, err), "session", ref.String())
		d.compactMarks.set(id, st.Version)
		return
	default:
		res.Failed++
		if len(res.Errors) < maxErrors {
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", ref, err))
		}
		d.log.Error("auto-compaction: session failed", "session", ref.String(), "error", err)
		d.compactMarks.forget(id)
		return
	}
	written := r.EntryID != "" || (r.Layer == compact.LayerPrune && r.Prune != nil && r.Prune.Values > 0)
	if r.Layer == compact.LayerNone || !written {
		d.log.Debug(fmt.Sprintf("[COMPACT] %s: nothing written: %s", ref, r.Warning), "session", ref.String())
		d.compactMarks.set(id, st.Version)
		return
	}
	res.Compacted++
	res.TokensSaved += max(r.TokensBefore-r.TokensAfter, 0)
	args := []any{"session", ref.String(), "layer", string(r.Layer), "trigger", string(compact.TriggerAuto),
		"tokens_before", r.TokensBefore, "tokens_after", r.TokensAfter, "entry", r.EntryID, "degraded", r.Degraded}
	if r.Warning != "" {
		args = append(args, "warning", r.Warning)
	}
	if a := logging.ActorFrom(ctx); a != "" {
		args = append(args, logging.KeyActor, a)
	}
	d.log.Info(fmt.Sprintf("[COMPACT] %s layer %s %s → %s tokens", ref, r.Layer, commas(r.TokensBefore), commas(r.TokensAfter)), args...)
	ev := audit.Event{Time: time.Now().UTC(), Action: "compact", Session: ref.String(), Entry: r.EntryID,
		Agent: ref.Agent, SessionID: ref.ID, Actor: "daemon"}
	if err := audit.Append(audit.Path(set.StateDir), ev); err != nil {
		d.log.Warn("audit event not written", "action", "compact", "session", ref.String(), "error", err.Error())
	}
	// The compaction changed the transcript: remember its new state.
	if st2, err := set.Store.Stat(ctx, ref); err == nil {
		d.compactMarks.set(id, st2.Version)
		return
	}
	d.compactMarks.forget(id)
}

// commas renders n with thousands separators ("187,450").
func commas(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
