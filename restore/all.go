package restore

import (
	"context"
	"errors"
	"fmt"
	"sort"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// AllResult reports a RestoreAll.
type AllResult struct {
	Session  string `json:"session"`
	Pristine bool   `json:"pristine"`
	// Entries counts the entries changed; Values the extracted values put
	// back and Bytes their size.
	Entries int   `json:"entries"`
	Values  int   `json:"values"`
	Bytes   int64 `json:"bytes"`
	// Redactions counts the redacted values put back, Bookkeeping the
	// bookkeeping members removed or reset (pristine only).
	Redactions  int `json:"redactions_undone"`
	Bookkeeping int `json:"bookkeeping_undone"`
	// Lost lists placeholders that could not be restored
	// ("<entry> <path>: <why>").
	Lost []string `json:"lost,omitempty"`
	// Applied is true when the transcript was rewritten.
	Applied bool `json:"applied"`
}

// maxUndoPasses bounds the passes of a pristine restore over one line: a
// value can hide another (a redaction stub that was itself extracted).
const maxUndoPasses = 8

// RestoreAll restores every extracted value of every entry of the session
// in one rewrite. Without pristine it sets "_restored" on each entry it
// changes, like Restore (without redaction). With pristine it also puts
// back what redactions replaced and undoes every bookkeeping member
// recorded in the side records' journals ("_restored", "_redacted",
// "_extractable" set by SetExtractable), so that the transcript is
// byte-identical to what it was before BrainSurgeon touched it; the
// journals and redactions are then cleared and the session's queued
// write-backs dropped. Side files are kept.
//
// RestoreAll is not queued: a busy session gives an error wrapping
// ErrBusy (or ErrChanged), and nothing is written.
func (r *Restorer) RestoreAll(ctx context.Context, ref bs.SessionRef, pristine bool) (*AllResult, error) {
	if err := r.ready(); err != nil {
		return nil, err
	}
	res := &AllResult{Session: ref.String(), Pristine: pristine}
	if err := r.Store.CheckIdle(ctx, ref); err != nil {
		return nil, fmt.Errorf("restore all of %s: %w", ref, err)
	}
	mu := r.lock(ref)
	mu.Lock()
	defer mu.Unlock()
	snap, err := r.scan(ctx, ref, scanFilter{all: true})
	if err != nil {
		return nil, err
	}
	ref = snap.ref
	p := r.newPlanner(ctx, ref, snap, true)
	infos, err := r.Side.List(ctx, ref)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(infos))
	for _, in := range infos {
		have[in.EntryID] = true
	}
	var touched []string
	for _, e := range snap.lines {
		if e.ID == "" {
			continue
		}
		if !have[e.ID] {
			for _, ptr := range placeholderPointers(e) {
				res.Lost = append(res.Lost, fmt.Sprintf("%s %s: side file missing", e.ID, ptr))
			}
			continue
		}
		b, err := p.recs.get(e.ID)
		if err != nil {
			res.Lost = append(res.Lost, fmt.Sprintf("%s: %v", e.ID, err))
			if errors.Is(err, extract.ErrCorrupt) {
				r.audit(ref, "restore_corrupt", e.ID, "side record "+e.ID, err)
			}
			continue
		}
		le := &lineEdit{line: e.Line, id: e.ID, orig: e.Raw, cur: e.Raw, parsed: e}
		p.lines[e.Line] = le
		if pristine {
			r.undoLine(p, le, b, res)
			touched = append(touched, e.ID)
		} else {
			out := outcome{sizes: map[string]int{}}
			p.restoreValues(le, b.rec, nil, &out)
			res.Values += len(out.restored)
			for _, n := range out.sizes {
				res.Bytes += int64(n)
			}
		}
		for _, ptr := range placeholderPointers(le.entry()) {
			res.Lost = append(res.Lost, fmt.Sprintf("%s %s: no stored value", e.ID, ptr))
		}
		if le.changed() {
			res.Entries++
		}
	}
	for _, w := range p.warnings {
		res.Lost = append(res.Lost, w)
	}
	edits := p.edits()
	if len(edits) > 0 {
		if err := p.recs.flush(); err != nil {
			return nil, fmt.Errorf("restore all of %s: %w", ref, err)
		}
		if err := r.Store.Rewrite(ctx, ref, snap.version, edits); err != nil {
			return nil, fmt.Errorf("restore all of %s: %w", ref, err)
		}
		res.Applied = true
	}
	if pristine {
		// Everything is undone: the journals start afresh and queued
		// write-backs are moot.
		for _, id := range touched {
			st := p.recs.recs[id]
			if st == nil || st.err != nil || (len(st.b.journal) == 0 && len(st.b.redactions) == 0) {
				continue
			}
			st.b.journal, st.b.redactions, st.dirty = nil, nil, true
		}
		if err := p.recs.flush(); err != nil {
			return res, fmt.Errorf("restore all of %s: clear journals: %w", ref, err)
		}
		r.dropPending(ref)
	}
	r.log().Info("restore all", "session", ref.String(), "pristine", pristine, "entries", res.Entries,
		"values", res.Values, "bytes", res.Bytes, "redactions", res.Redactions, "bookkeeping", res.Bookkeeping, "lost", len(res.Lost))
	return res, nil
}

// undoLine undoes on one line everything the record knows: extracted
// values and redactions (repeatedly, since one can hide another), then the
// journal in reverse order.
func (r *Restorer) undoLine(p *planner, le *lineEdit, b *book, res *AllResult) {
	for pass := 0; pass < maxUndoPasses; pass++ {
		changed := false
		for _, set := range [][]extract.StoredValue{b.rec.Values, b.redactions} {
			for _, v := range set {
				cur, ok := le.value(v.Path)
				if !ok || !holdsPlaceholder(v, cur) {
					continue
				}
				orig, err := v.Bytes()
				if err != nil {
					p.warn("entry %s: %v; the placeholder stays", le.id, err)
					r.audit(p.ref, "restore_corrupt", le.id, "side record "+le.id, err)
					continue
				}
				if string(orig) == string(cur) {
					continue
				}
				le.replace(v.Path, orig)
				changed = true
				if v.Trigger == TriggerRedaction {
					res.Redactions++
				} else {
					res.Values++
					res.Bytes += int64(len(orig))
				}
			}
		}
		if !changed {
			break
		}
	}
	for i := len(b.journal) - 1; i >= 0; i-- {
		j := b.journal[i]
		obj, name, err := splitMember(j.Path)
		if err != nil {
			p.warn("entry %s: journal: %v", le.id, err)
			continue
		}
		_, vs, ve, present := jsonedit.Member(le.cur, obj, name)
		if j.Absent {
			if present && le.remove(obj, name) == nil {
				res.Bookkeeping++
			}
			continue
		}
		prev, err := journalRaw(j)
		if err != nil {
			p.warn("entry %s: %v", le.id, err)
			continue
		}
		if present && string(le.cur[vs:ve]) == string(prev) {
			continue
		}
		if le.set(obj, name, prev) == nil {
			res.Bookkeeping++
		}
	}
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
