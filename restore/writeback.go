package restore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// planner computes the edits of one write-back against a snapshot of the
// transcript, and the side record changes that go with them.
type planner struct {
	r        *Restorer
	ref      bs.SessionRef
	snap     *snapshot
	recs     *recordSet
	now      time.Time
	lines    map[int]*lineEdit
	claimed  map[string]bool
	audit    bool
	warnings []string
	// refused lists the values the store does not accept back
	// (EditChecker), in the order met; refusedAt keys them by line and
	// pointer.
	refused   []Refusal
	refusedAt map[string]bool
}

func (r *Restorer) newPlanner(ctx context.Context, ref bs.SessionRef, snap *snapshot, audit bool) *planner {
	return &planner{r: r, ref: ref, snap: snap, recs: newRecordSet(ctx, r.Side, ref), now: bs.Now(r.Clock),
		lines: map[int]*lineEdit{}, claimed: map[string]bool{}, audit: audit}
}

func (p *planner) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.warnings = append(p.warnings, msg)
	p.r.log().Warn(msg, "session", p.ref.String())
}

// line returns the working copy of an entry's line.
func (p *planner) line(e *bs.Entry) *lineEdit {
	if le, ok := p.lines[e.Line]; ok {
		return le
	}
	le := &lineEdit{line: e.Line, id: e.ID, orig: e.Raw, cur: e.Raw, parsed: e}
	p.lines[e.Line] = le
	return le
}

// edits returns one edit per changed line.
func (p *planner) edits() []bs.Edit {
	var out []bs.Edit
	for _, le := range p.lines {
		if le.changed() {
			out = append(out, le.edit())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// outcome is what one request did in a write-back.
type outcome struct {
	restored []string
	sizes    map[string]int
	redacted bool
	changed  bool
	missing  bool   // the entry is not in the transcript
	refused  string // why a source write-back left its placeholder
}

// restoreValues puts back the values of rec selected by keys that still
// hold their placeholders in le, and sets "_restored" when any was.
func (p *planner) restoreValues(le *lineEdit, rec *extract.Record, keys []string, out *outcome) {
	sel, _ := selectValues(rec.Values, keys)
	for _, v := range sel {
		cur, ok := le.value(v.Path)
		if !ok || !holdsPlaceholder(v, cur) {
			continue
		}
		orig, err := v.Bytes()
		if err != nil {
			p.warn("entry %s: %v; the placeholder stays", le.id, err)
			if p.audit {
				p.r.audit(p.ref, "restore_corrupt", le.id, "side record "+le.id, err)
			}
			continue
		}
		if err := p.accepts(le, v.Path, orig); err != nil {
			p.refuse(le, v, err)
			continue
		}
		le.replace(v.Path, orig)
		out.restored = append(out.restored, v.Path)
		out.sizes[v.Path] = len(orig)
	}
	if len(out.restored) == 0 {
		return
	}
	if err := p.recs.journal(le.id, le.cur, "", "_restored", "restore", p.now); err != nil {
		p.warn("entry %s: cannot record _restored in its side record: %v", le.id, err)
		return
	}
	if err := le.set("", "_restored", []byte(`"`+bs.FormatTimestamp(p.now)+`"`)); err != nil {
		p.warn("entry %s: set _restored: %v", le.id, err)
	}
}

// apply plans one request.
func (p *planner) apply(req *PendingRequest) outcome {
	out := outcome{sizes: map[string]int{}}
	e, ok := p.snap.entry(req.EntryID)
	if !ok {
		out.missing = true
		return out
	}
	le := p.line(e)
	switch req.Kind {
	case KindRestoreSource:
		if len(req.Keys) == 1 {
			p.restoreSource(le, req.Keys[0], &out)
		}
		out.changed = len(out.restored) > 0
	case KindSetExtractable:
		cur, ok := le.value("/_extractable")
		if ok && string(cur) == req.Value {
			return out
		}
		if err := p.recs.journal(le.id, le.cur, "", "_extractable", "set_extractable", p.now); err != nil {
			p.warn("entry %s: cannot record _extractable in its side record: %v", le.id, err)
			return out
		}
		if err := le.set("", "_extractable", []byte(req.Value)); err != nil {
			p.warn("entry %s: set _extractable: %v", le.id, err)
			return out
		}
		out.changed = true
	default:
		b, err := p.recs.get(le.id)
		if err != nil {
			p.warn("entry %s: %v; nothing restored", le.id, err)
			if p.audit && errors.Is(err, bs.ErrCorrupt) {
				p.r.audit(p.ref, "restore_corrupt", le.id, "side record "+le.id, err)
			}
			return out
		}
		p.restoreValues(le, b.rec, req.Keys, &out)
		if !p.r.KeepPurgeControlCalls {
			out.redacted = p.redact(req.EntryID, req.ToolCallID)
		}
		out.changed = len(out.restored) > 0 || out.redacted
	}
	return out
}

// writeBack applies requests of one session in one rewrite. snap, when
// not nil, is a fresh scan to start from. It returns each request's
// outcome, or an error (wrapping ErrBusy or ErrChanged when the session
// was in use; nothing was written then).
func (r *Restorer) writeBack(ctx context.Context, ref bs.SessionRef, reqs []*PendingRequest, snap *snapshot, audit bool) ([]outcome, error) {
	mu := r.lock(ref)
	mu.Lock()
	defer mu.Unlock()
	for attempt := 0; ; attempt++ {
		if snap == nil {
			var err error
			if snap, err = r.scan(ctx, ref, filterFor(reqs)); err != nil {
				return nil, err
			}
		}
		p := r.newPlanner(ctx, ref, snap, audit)
		outs := make([]outcome, len(reqs))
		for i, req := range reqs {
			outs[i] = p.apply(req)
		}
		for _, f := range p.refused {
			r.log().Warn("the store does not accept a restored value back; it stays in the side store",
				"session", ref.String(), "entry_id", f.EntryID, "key", f.Key, "reason", f.Reason)
		}
		edits := p.edits()
		if len(edits) == 0 {
			return outs, nil
		}
		if err := p.recs.flush(); err != nil {
			return nil, fmt.Errorf("session %s: %w", r.refName(ref), err)
		}
		err := r.Store.Rewrite(ctx, ref, snap.version, edits, nil)
		if err == nil {
			return outs, nil
		}
		if errors.Is(err, bs.ErrChanged) && attempt == 0 {
			snap = nil // the host wrote in between: read again, once
			continue
		}
		return nil, err
	}
}

func filterFor(reqs []*PendingRequest) scanFilter {
	f := scanFilter{ids: map[string]bool{}, callIDs: map[string]bool{}}
	for _, q := range reqs {
		f.ids[q.EntryID] = true
		if q.ToolCallID != "" {
			f.callIDs[q.ToolCallID] = true
		}
	}
	return f
}

// busy reports whether err means "try later".
func busy(err error) bool { return errors.Is(err, bs.ErrBusy) || errors.Is(err, bs.ErrChanged) }
