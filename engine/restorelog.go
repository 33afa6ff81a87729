package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// The engine is the installation's restore log: the restores it records
// are the ones its view shows in full (State.Restored), whichever path the
// agent took.
var _ bs.RestoreLog = (*Engine)(nil)

// RecordRestore records that the agent restored entry entryID of ref (an
// entry id, or the source key "tc-<toolCallId>" of a tool result stored at
// the source) at the time at: the entry enters State.Restored (the newest
// time is kept) and leaves State.Collapsed, so that the next view shows
// it in full, with its values put back when the host's row still holds
// their placeholders (Engine.Side), and keeps it so for
// Policy.KeepAfterRestore; every pass that reads the log (extraction,
// retention, compaction's prune layer) protects it as long. Restores older
// than that window are dropped from the state. It needs only StateDir: an
// Engine{StateDir: dir, Policy: p} is the log of an installation without
// a running engine (its calls share the per-session lock of every Engine
// of the process over the same state file). With ReadOnly set nothing is
// recorded and the error is nil. A session without an agent (pi) has no
// engine state: the error wraps bs.ErrInvalid (bs.NoRestoreLog), as for an
// id that is not acceptable.
func (e *Engine) RecordRestore(ctx context.Context, ref bs.SessionRef, entryID string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := bs.CheckSideKey(entryID); err != nil {
		return fmt.Errorf("engine record restore %s: %w", ref, err)
	}
	if _, err := e.statePath(ref); err != nil {
		return fmt.Errorf("engine record restore %s: %w", ref, err)
	}
	ss := e.session(ref)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st, err := e.loadState(ref)
	if err != nil {
		return fmt.Errorf("engine record restore %s: %w", ref, err)
	}
	st.noteRestore(entryID, at)
	keep := e.policy().KeepAfterRestore
	now := e.now()
	for id, t := range st.Restored {
		if id != entryID && now.Sub(t) >= keep {
			st.delRestored(id) // its protection is over
		}
	}
	if err := e.saveState(ref, st); err != nil {
		return fmt.Errorf("engine record restore %s: %w", ref, err)
	}
	return nil
}

// Restores returns the restores State.Restored holds for ref: each
// entry's (or source key's) newest restore time, those whose protection
// is over possibly among them (the next view drops them). A session the
// engine has no state of has none: the map is empty, never nil. It reads
// the state file only (written atomically: no lock is taken). The error
// wraps bs.ErrInvalid for a session without an agent (bs.NoRestoreLog).
func (e *Engine) Restores(ctx context.Context, ref bs.SessionRef) (map[string]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := e.statePath(ref); err != nil {
		return nil, fmt.Errorf("engine restores %s: %w", ref, err)
	}
	st, err := e.loadState(ref)
	if err != nil {
		return nil, fmt.Errorf("engine restores %s: %w", ref, err)
	}
	out := maps.Clone(st.Restored)
	if out == nil {
		out = map[string]time.Time{}
	}
	return out, nil
}

// noteRestore records in st a restore of id at the time at: the newest
// restore time is kept, and an entry the view collapsed leaves
// State.Collapsed and joins State.Expanded (the next view shows it in
// full, which changes its prefix). It reports whether the view had
// collapsed it.
func (st *State) noteRestore(id string, at time.Time) bool {
	st.ensureMaps()
	if prev, ok := st.Restored[id]; !ok || at.After(prev) {
		st.setRestored(id, at)
	}
	_, was := st.Collapsed[id]
	if was {
		st.delCollapsed(id)
		st.Expanded = appendOnce(st.Expanded, id)
	}
	return was
}

// adoptSourceRestores moves each restore recorded under the source key of
// a tool result of sm ("tc-<toolCallId>", RecordRestore) to that result's
// entry id, so that every rule of the engine (the collapse, the summaries'
// protection) reads entry ids only.
func adoptSourceRestores(sm []stored, st *State) {
	sources := false
	for k := range st.Restored {
		sources = sources || extract.IsSourceKey(k)
	}
	if !sources {
		return
	}
	for k := range sm {
		s := &sm[k]
		if s.role != collapseRole || s.callID == "" || s.id == "" {
			continue
		}
		key, err := extract.SourceKey(s.callID)
		if err != nil {
			continue
		}
		at, ok := st.Restored[key]
		if !ok {
			continue
		}
		st.delRestored(key)
		st.noteRestore(s.id, at)
	}
}

// restoredContents returns, by position in sm, the content the view shows
// of each tool result that the agent restored within the protection window
// (State.Restored, at now) while the host's row still holds its own
// placeholders (a write-back queued while the session is busy, a tool
// result stored at the source, which is never written back): the row's
// content with the values of the entry's side records put back, byte for
// byte (restore.PutBack). Messages the host did not send, entries forced
// out by `_extractable: true`, and values the side store cannot give back
// are left as they are. When the side store cannot be reached
// (brainsurgeon.ErrUnavailable) no further record is asked for in this
// view: the messages left keep their placeholders for this turn, one
// warning says how many, and the view is still served. Nil without a side
// store (Engine.Side).
func (e *Engine) restoredContents(ctx context.Context, ref bs.SessionRef, c *viewCache, index []int, st *State, now time.Time, keep time.Duration) map[int][]byte {
	if e.Side == nil || len(st.Restored) == 0 {
		return nil
	}
	sm := c.sm
	var out map[int][]byte
	// The messages restored: by their ids when ids are unique on the
	// path, else every message looked up.
	var ks []int
	if c.dups == 0 {
		for id := range st.Restored {
			if k, ok := c.byID[id]; ok {
				ks = append(ks, k)
			}
		}
	} else {
		for k := range sm {
			ks = append(ks, k)
		}
	}
	var down error // the side store's, once it could not be reached
	kept := 0
	for _, k := range ks {
		s := &sm[k]
		if index[k] < 0 || s.typ != "message" || s.role != collapseRole || !s.hasContent || s.id == "" {
			continue
		}
		at, ok := st.Restored[s.id]
		if !ok || now.Sub(at) >= keep || s.force || !s.ownPlaceholder || s.e == nil {
			continue
		}
		if down != nil {
			kept++
			continue
		}
		c, ok, err := e.putBack(ctx, ref, s)
		if err != nil {
			down = err
			kept++
			continue
		}
		if ok {
			if out == nil {
				out = map[int][]byte{}
			}
			out[k] = c
		}
	}
	if down != nil {
		e.log().Warn("engine: restored values are shown as their placeholders this turn: the side store cannot be reached", "session", ref.String(),
			"messages", kept, "err", down)
	}
	return out
}

// putBack returns the content of the stored message s with the values of
// its own side records (extract.OwnKeys) put back, and whether any was.
// The error is the side store's when it cannot be reached (one wrapping
// brainsurgeon.ErrUnavailable): nothing is put back then.
func (e *Engine) putBack(ctx context.Context, ref bs.SessionRef, s *stored) ([]byte, bool, error) {
	line := s.e.Raw
	content := line[s.cStart:s.cEnd]
	for _, key := range extract.OwnKeys(s.e) {
		if !extract.IsPlaceholderValue(content, key) {
			continue
		}
		rec, err := extract.LoadRecord(ctx, e.Side, ref, key)
		if errors.Is(err, bs.ErrUnavailable) {
			return nil, false, err
		}
		if err != nil {
			e.log().Debug("engine: a restored value is shown as its placeholder: its side record is not readable", "session", ref.String(),
				"entry", s.id, "key", key, "err", err)
			continue
		}
		next, _, err := restore.PutBack(line, rec)
		if err != nil {
			e.log().Warn("engine: a restored value is shown as its placeholder", "session", ref.String(), "entry", s.id, "key", key, "err", err)
		}
		line = next
	}
	a, b, ok := jsonedit.Find(line, "/message/content")
	if !ok || b <= a || bytes.Equal(line[a:b], content) {
		return nil, false, nil
	}
	return bytes.Clone(line[a:b]), true, nil
}
