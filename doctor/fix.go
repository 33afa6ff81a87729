package doctor

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// The texts of the hosts' synthetic tool results (see the package doc).
const (
	// openClawMissingText is OpenClaw's DEFAULT_MISSING_TOOL_RESULT_TEXT.
	openClawMissingText = "[openclaw] missing tool result in session history; inserted synthetic error result for transcript repair."
	// piMissingText is the text pi-ai's transformMessages gives the
	// results it synthesizes.
	piMissingText = "No result provided"
)

// Fix repairs the unpaired tool blocks of the session's active path on
// disk: a synthetic result, in the host's own shape and text, for every
// call without one, and every orphan result taken off the active path by
// re-parenting the entry after it. It never deletes an entry. The repair
// is one rewrite through the store's write protocol (idle gate, host lock,
// version check), journaled so that a pristine restore takes it back, and
// audited. A store that cannot insert entries (the SQLite store) is
// refused with the reason in FixResult.Refused and no error. A session the
// host is using gives an error wrapping ErrBusy, and nothing is written; a
// ctx made by bs.ExplicitWrite skips the store's quiet period (a run in
// flight or a held lock still count as busy).
func (d *Doctor) Fix(ctx context.Context, ref bs.SessionRef) (*FixResult, error) {
	if d == nil || d.Store == nil {
		return nil, fmt.Errorf("doctor fix %s: no store: %w", ref, bs.ErrInvalid)
	}
	if refusal(ref) == "" {
		if err := d.Store.CheckIdle(ctx, ref); err != nil {
			return nil, busyError(ref, err)
		}
	}
	dg, err := d.diagnose(ctx, ref)
	if err != nil {
		return nil, err
	}
	res := &FixResult{Before: dg.rep}
	if dg.rep.FixRefused != "" {
		res.Refused = dg.rep.FixRefused
		return res, nil
	}
	if !dg.rep.Fixable {
		return res, nil
	}
	if d.Restorer == nil {
		return nil, fmt.Errorf("doctor fix %s: no restorer to journal the repair (expected one, so that a pristine restore can take it back): %w", ref, bs.ErrInvalid)
	}
	clock := d.Clock
	if clock == nil {
		clock = bs.SystemClock{}
	}
	ref = dg.tr.Ref()
	rep, inserted, detached, moved, err := plan(dg, ref, clock.Now())
	if err != nil {
		return nil, fmt.Errorf("doctor fix %s: %w", ref, err)
	}
	if err := d.Restorer.ApplyRepair(ctx, ref, rep); err != nil {
		return nil, busyError(ref, err)
	}
	res.Applied, res.Inserted, res.Detached, res.Moved = true, inserted, detached, moved
	bs.LoggerOrDiscard(d.Logger).Info("doctor fix", "session", ref.String(), "inserted_results", inserted, "detached_results", detached, "moved_results", moved)
	after, err := d.Diagnose(ctx, ref)
	if err != nil {
		return res, fmt.Errorf("doctor fix %s: the repair was written, but the diagnosis after it failed: %w", ref, err)
	}
	res.After = after
	return res, nil
}

// busyError words a failed write for people; the cause stays wrapped.
func busyError(ref bs.SessionRef, err error) error {
	switch {
	case errors.Is(err, bs.ErrBusy):
		return fmt.Errorf("doctor fix %s: the host is using the session, nothing was written; run the fix again when it is idle: %w", ref, err)
	case errors.Is(err, bs.ErrChanged):
		return fmt.Errorf("doctor fix %s: the transcript changed while the repair was planned, nothing was written; run the fix again: %w", ref, err)
	}
	return fmt.Errorf("doctor fix %s: %w", ref, err)
}

// plan builds the repair of a diagnosis: the new active path is the old
// one without the detached orphans, with the displaced results moved right
// after their anchors and the synthetic results chained after them; every
// kept entry whose predecessor on that path changed is re-parented to it,
// and an entry whose predecessor did not change is left as it is.
func plan(dg *diagnosis, ref bs.SessionRef, now time.Time) (rep restore.Repair, inserted, detached, moved int, err error) {
	nodes := dg.tr.Nodes()
	rep = restore.Repair{Base: dg.tr.Version(), Op: OpFix}
	groups := map[int][]toolCall{}
	for _, g := range dg.an.missing {
		if g.fixable {
			groups[g.anchor] = append(groups[g.anchor], g.calls...)
		}
	}
	type item struct {
		node int // -1 for an inserted entry
		id   string
	}
	var seq []item
	path := dg.tr.ActivePath()
	before := make(map[int]int, len(path)) // node → its predecessor on the old path (-1: none)
	for k, p := range path {
		before[p] = -1
		if k > 0 {
			before[p] = path[k-1]
		}
	}
	for _, p := range path {
		if dg.an.detach[p] {
			detached++
			continue
		}
		if dg.an.moved[p] {
			continue // it is placed after its anchor, earlier on the path
		}
		seq = append(seq, item{p, nodes[p].ID})
		for _, m := range dg.an.move[p] {
			seq = append(seq, item{m, nodes[m].ID})
			moved++
		}
		calls := groups[p]
		if len(calls) == 0 {
			continue
		}
		ins := restore.Insert{AfterLine: nodes[p].Line, AfterID: nodes[p].ID}
		parent := seq[len(seq)-1].id
		for _, c := range calls {
			id, err := newID(dg.ids)
			if err != nil {
				return rep, 0, 0, 0, err
			}
			line, err := syntheticEntry(ref, id, parent, c, now)
			if err != nil {
				return rep, 0, 0, 0, err
			}
			ins.Entries = append(ins.Entries, line)
			ins.IDs = append(ins.IDs, id)
			seq = append(seq, item{-1, id})
			parent = id
			inserted++
		}
		rep.Inserts = append(rep.Inserts, ins)
	}
	for k, it := range seq {
		if it.node < 0 {
			continue
		}
		prev := -1
		if k > 0 {
			prev = seq[k-1].node
			if prev < 0 {
				prev = -2 // an inserted entry: never the old predecessor
			}
		}
		if prev == before[it.node] {
			continue // same predecessor as before: leave the entry alone (even a dangling parentId)
		}
		want := ""
		if k > 0 {
			want = seq[k-1].id
		}
		if n := &nodes[it.node]; n.ParentID != want {
			rep.Reparents = append(rep.Reparents, restore.Reparent{Line: n.Line, EntryID: n.ID, Parent: want})
		}
	}
	return rep, inserted, detached, moved, nil
}

// newID returns 8 random hex digits not yet in ids, and adds them.
func newID(ids map[string]bool) (string, error) {
	var b [4]byte
	for range 100 {
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("new entry id: %w", err)
		}
		id := hex.EncodeToString(b[:])
		if !ids[id] {
			ids[id] = true
			return id, nil
		}
	}
	return "", fmt.Errorf("new entry id: no unused id found in 100 tries")
}

// syntheticEntry returns the line of a synthetic tool result entry, in
// pi's member order, holding the host's synthetic message for call c.
func syntheticEntry(ref bs.SessionRef, id, parent string, c toolCall, now time.Time) ([]byte, error) {
	msg := syntheticMessage(ref, c, now)
	var b bytes.Buffer
	b.WriteString(`{"type":"message","id":`)
	b.Write(jstr(id))
	b.WriteString(`,"parentId":`)
	b.Write(jstr(parent))
	b.WriteString(`,"timestamp":`)
	b.Write(jstr(now.UTC().Format("2006-01-02T15:04:05.000Z")))
	b.WriteString(`,"message":`)
	b.Write(msg)
	b.WriteByte('}')
	if !json.Valid(b.Bytes()) {
		return nil, fmt.Errorf("synthetic result for call %s: built invalid JSON", c.id)
	}
	return b.Bytes(), nil
}

// syntheticMessage returns the host's synthetic tool result message for
// call c as JSON.stringify writes it: OpenClaw's makeMissingToolResult for
// an OpenClaw session, pi-ai's transformMessages result for a pi session.
func syntheticMessage(ref bs.SessionRef, c toolCall, now time.Time) []byte {
	var b bytes.Buffer
	b.WriteString(`{"role":"toolResult","toolCallId":`)
	b.Write(jstr(c.id))
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	if openClaw(ref) {
		name := c.name
		if !c.hasName {
			name = "unknown" // toolName ?? "unknown"
		}
		b.WriteString(`,"toolName":`)
		b.Write(jstr(name))
		b.WriteString(`,"content":[{"type":"text","text":`)
		b.Write(jstr(openClawMissingText))
		b.WriteString(`}],"details":{"openclawSyntheticMissingToolResult":true,"reason":"missing_tool_result"},"isError":true,"timestamp":`)
		b.WriteString(ts)
		b.WriteByte('}')
		return b.Bytes()
	}
	if c.hasName { // JSON.stringify leaves out an undefined toolName
		b.WriteString(`,"toolName":`)
		b.Write(jstr(c.name))
	}
	b.WriteString(`,"content":[{"type":"text","text":`)
	b.Write(jstr(piMissingText))
	b.WriteString(`}],"isError":true,"timestamp":`)
	b.WriteString(ts)
	b.WriteByte('}')
	return b.Bytes()
}

// jstr encodes s as a JSON string the way JSON.stringify does (no HTML
// escaping).
func jstr(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
