package restore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// KindRestoreSource is the kind of a queued write-back of a tool result
// stored at the source: its EntryID is the toolResult entry holding the
// placeholder and its one key the source key ("tc-<toolCallId>").
const KindRestoreSource = "restore_source"

// SourceWriteBack reports WriteBackSources for one session.
type SourceWriteBack struct {
	// Session names the session.
	Session string `json:"session"`
	// Written are the source keys whose values were written back into
	// the transcript now; Queued those whose write-back waits for the
	// session to be idle (the daemon and the next prune apply the queue,
	// as for any restore); Busy says why the session was not written now.
	Written []string `json:"written_back"`
	Queued  []string `json:"queued"`
	Busy    string   `json:"busy,omitempty"`
	// Refused are the placeholders left in place, and why.
	Refused []SourceRefusal `json:"refused"`
	// Bytes is the size of the content written back now.
	Bytes int64 `json:"bytes"`
}

// SourceRefusal is a source placeholder WriteBackSources left in place.
type SourceRefusal struct {
	Key     string `json:"key"`
	EntryID string `json:"entry_id"`
	Reason  string `json:"reason"`
}

// Done reports whether nothing is left to do: no value queued or
// refused.
func (w *SourceWriteBack) Done() bool { return len(w.Queued) == 0 && len(w.Refused) == 0 }

// SourcePlaceholders returns the source keys ("tc-<toolCallId>") whose
// placeholders the session's transcript holds, in transcript order, and
// the entry holding each. It only reads.
func (r *Restorer) SourcePlaceholders(ctx context.Context, ref bs.SessionRef) (keys, entryIDs []string, err error) {
	if err := r.ready(); err != nil {
		return nil, nil, err
	}
	snap, err := r.scan(ctx, ref, scanFilter{all: true})
	if err != nil {
		return nil, nil, err
	}
	for _, e := range snap.lines {
		if k := heldSourceKey(e); k != "" {
			keys, entryIDs = append(keys, k), append(entryIDs, e.ID)
		}
	}
	return keys, entryIDs, nil
}

// WriteBackSources writes the tool results stored at the source back into
// the transcript in place of their placeholders: the stored content
// blocks (and details, where the store accepts them) byte for byte, so
// that the transcript reads as if the plugin had never offloaded them.
// keys select the source keys ("tc-<toolCallId>"); none selects every
// source placeholder of the session. Like a restore, the write-back is
// applied now, in one rewrite, when the session is idle, else queued
// (KindRestoreSource) and applied by ApplyPending once it is. Nothing is
// added to the entries ("_restored" is not set), since the host wrote
// the placeholders itself.
//
// A placeholder is refused (and reported) when its side record is
// missing or damaged, or when the store does not accept the change
// (OpenClaw's SQLite store takes only string changes inside a tool
// result: content of another shape stays out). Keys the session holds no
// placeholder of are refused too. Errors: an unknown session wraps
// ErrNotFound, a bad key ErrInvalid.
func (r *Restorer) WriteBackSources(ctx context.Context, ref bs.SessionRef, keys []string) (*SourceWriteBack, error) {
	if err := r.ready(); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, k := range keys {
		if !extract.IsSourceKey(k) {
			return nil, fmt.Errorf("key %.60q: expected a source key %s<toolCallId>: %w", k, extract.SourceKeyPrefix, bs.ErrInvalid)
		}
		if err := bs.CheckSideKey(k); err != nil {
			return nil, err
		}
		want[k] = true
	}
	snap, err := r.scan(ctx, ref, scanFilter{all: true})
	if err != nil {
		return nil, err
	}
	ref = snap.ref
	res := &SourceWriteBack{Session: ref.String(), Written: []string{}, Queued: []string{}, Refused: []SourceRefusal{}}
	var reqs []*PendingRequest
	seen := map[string]bool{}
	for _, e := range snap.lines {
		k := heldSourceKey(e)
		if k == "" || (len(want) > 0 && !want[k]) || seen[k] {
			continue
		}
		seen[k] = true
		if e.ID == "" {
			res.Refused = append(res.Refused, SourceRefusal{Key: k, Reason: fmt.Sprintf("the tool result at line %d has no entry id, so its write-back cannot be addressed", e.Line)})
			continue
		}
		req := r.newRequest(KindRestoreSource, ref, e.ID)
		req.Keys = []string{k}
		reqs = append(reqs, req)
	}
	for _, k := range keys {
		if !seen[k] {
			res.Refused = append(res.Refused, SourceRefusal{Key: k, Reason: fmt.Sprintf("no placeholder [[extracted-%s]] in session %s (written back already, or another session's)", k, r.refName(ref))})
		}
	}
	if len(reqs) == 0 {
		return res, nil
	}
	queue := func(why error) error {
		res.Busy = why.Error()
		for _, q := range reqs {
			if err := r.enqueue(ref, q); err != nil {
				return err
			}
			res.Queued = append(res.Queued, q.Keys[0])
		}
		return nil
	}
	if err := r.Store.CheckIdle(ctx, ref); err != nil {
		if !busy(err) {
			return nil, fmt.Errorf("write back the tool results of %s: %w", ref, err)
		}
		return res, queue(err)
	}
	outs, err := r.writeBack(ctx, ref, reqs, snap, false)
	if err != nil {
		if !busy(err) {
			return nil, fmt.Errorf("write back the tool results of %s: %w", ref, err)
		}
		return res, queue(err)
	}
	for i, o := range outs {
		k := reqs[i].Keys[0]
		switch {
		case len(o.restored) > 0:
			res.Written = append(res.Written, k)
			for _, n := range o.sizes {
				res.Bytes += int64(n)
			}
		default:
			res.Refused = append(res.Refused, SourceRefusal{Key: k, EntryID: reqs[i].EntryID, Reason: orDefault(o.refused, "the placeholder changed since it was read")})
		}
	}
	sort.SliceStable(res.Refused, func(i, j int) bool { return res.Refused[i].Key < res.Refused[j].Key })
	return res, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// restoreSource puts the value of the source record key back in le in
// place of its placeholder: the content first, then the details; a value
// the store does not accept is left alone (content refused: nothing is
// written, and out.refused says why).
func (p *planner) restoreSource(le *lineEdit, key string, out *outcome) {
	rec, err := extract.LoadRecord(p.recs.ctx, p.r.Side, p.ref, key)
	if err != nil {
		if errors.Is(err, bs.ErrNotFound) {
			out.refused = fmt.Sprintf("no side record %s: the value is gone (retention may have removed it)", key)
		} else {
			out.refused = fmt.Sprintf("side record %s: %v", key, err)
		}
		p.warn("entry %s: %s; the placeholder stays", le.id, out.refused)
		return
	}
	for _, path := range []string{extract.SourceContentPath, extract.SourceDetailsPath} {
		v, ok := rec.Value(path)
		if !ok {
			continue
		}
		cur, ok := le.value(path)
		if !ok {
			continue
		}
		holds := bytes.Equal(cur, []byte(v.Placeholder)) ||
			(path == extract.SourceContentPath && extract.IsPlaceholderValue(cur, key))
		if !holds {
			if path == extract.SourceContentPath {
				out.refused = fmt.Sprintf("%s no longer holds the placeholder the plugin wrote", path)
				return
			}
			continue
		}
		orig, err := v.Bytes()
		if err != nil {
			if path == extract.SourceContentPath {
				out.refused = fmt.Sprintf("side record %s: %v", key, err)
				p.warn("entry %s: %s; the placeholder stays", le.id, out.refused)
				return
			}
			continue
		}
		if !p.acceptsValue(le, path, orig) || p.accepts(le, path, orig) != nil {
			if path == extract.SourceContentPath {
				out.refused = fmt.Sprintf("the %s store does not accept the stored content in place of the placeholder (OpenClaw's SQLite store takes only changed strings inside a tool result, not other content blocks); purge_control restore %s or brainsurgeon restore %s %s returns it", p.r.Store.Name(), key, p.ref, key)
				return
			}
			continue // the details keep the plugin's small stand-in
		}
		le.replace(path, orig)
		out.restored = append(out.restored, path)
		out.sizes[path] = len(orig)
	}
}

// acceptsValue asks the store whether it takes with in place of the value
// at path of le, as a value of its own (Store.EditableValues); accepts
// then asks about the whole line.
func (p *planner) acceptsValue(le *lineEdit, path string, with []byte) bool {
	s, en, ok := jsonedit.Find(le.cur, path)
	if !ok {
		return false
	}
	c := bs.Candidate{Value: bs.Value{Pointer: path, Start: s, End: en}, Trigger: bs.TriggerToolResult}
	got := p.r.Store.EditableValues(p.ref, le.entry(), []bs.Candidate{c}, [][]byte{with})
	return len(got) == 1 && got[0]
}
