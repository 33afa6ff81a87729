package restore

import (
	"context"
	"errors"
	"fmt"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// Context describes a session for the agent's get_context: its size, its
// model context, and what has been extracted from it.
type Context struct {
	Session   string `json:"session"`
	Agent     string `json:"agent,omitempty"`
	SessionID string `json:"session_id"`
	Path      string `json:"path"`
	// Entries is the number of entry lines; ContextMessages the number of
	// messages the host sends to the model; Bytes the transcript's size.
	Entries         int   `json:"entries"`
	ContextMessages int   `json:"context_messages"`
	Bytes           int64 `json:"bytes"`
	// Extracted lists the entries that have extracted values, in file
	// order.
	Extracted []ExtractedEntry `json:"extracted"`
	// EntriesWithPlaceholders counts entries holding at least one
	// placeholder now; ExtractableNow the entries the Policy would extract
	// now; ExtractedBytes the size of the values out of the transcript
	// now; LostValues the placeholders whose value is missing or corrupt.
	EntriesWithPlaceholders int   `json:"entries_with_placeholders"`
	ExtractableNow          int   `json:"extractable_now"`
	ExtractedBytes          int64 `json:"extracted_bytes"`
	LostValues              int   `json:"lost_values"`
	// Lost lists those placeholders (LostValues of them): the same list,
	// with the same kinds, as Verify's Problems. Never nil.
	Lost []Problem `json:"lost"`
	// Pending counts the session's queued write-backs.
	Pending int `json:"pending"`
}

// ExtractedEntry describes one entry that has (or had) extracted values.
type ExtractedEntry struct {
	EntryID string `json:"entry_id"`
	Line    int    `json:"line"`
	// Type is the entry's trigger type at extraction.
	Type string `json:"type"`
	// Keys are the JSON Pointers of the stored values and SizesBytes
	// their sizes.
	Keys       []string       `json:"keys"`
	SizesBytes map[string]int `json:"sizes_bytes"`
	// Placeholders counts the values that hold their placeholder now (0:
	// everything is restored).
	Placeholders int       `json:"placeholders"`
	ExtractedAt  time.Time `json:"extracted_at"`
	// RestoredAt is the "_restored" value; ProtectedUntil the end of the
	// re-extraction protection (Policy.KeepAfterRestore) of the newest
	// restore, "_restored" or one the restore log holds, when still ahead.
	RestoredAt     string     `json:"restored_at,omitempty"`
	ProtectedUntil *time.Time `json:"protected_until,omitempty"`
	// Extractable is the raw "_extractable" value, if any.
	Extractable string `json:"extractable,omitempty"`
	// Lost lists placeholders whose value cannot be restored, with why
	// ("<path>: <kind>: <detail>"; Context.Lost has them structured).
	Lost []string `json:"lost,omitempty"`
}

// GetContext describes the session: counts, the model context, and every
// extracted entry with its keys, sizes, extraction time, restored state
// and lost values. It only reads.
func (r *Restorer) GetContext(ctx context.Context, ref bs.SessionRef) (*Context, error) {
	if err := r.ready(); err != nil {
		return nil, err
	}
	tr, err := r.Store.Open(ctx, ref, nil)
	if err != nil {
		if errors.Is(err, bs.ErrNotFound) {
			return nil, r.missingSession(ctx, ref, err)
		}
		return nil, err
	}
	ref = tr.Ref()
	c := &Context{Session: ref.String(), Agent: ref.Agent, SessionID: ref.ID, Path: r.Store.Location(ref),
		Entries: entryCount(tr.Nodes()), ContextMessages: tr.Context().Count(), Bytes: tr.Version().Size(),
		Extracted: []ExtractedEntry{}, Lost: []Problem{}}
	infos, err := r.Side.List(ctx, ref)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(infos))
	for _, in := range infos {
		have[in.EntryID] = true
	}
	// A restore the log holds (the engine's view, a queued write-back)
	// protects as "_restored" does; a log that cannot be read is left
	// out of this report.
	logged, lerr := bs.RestoresOf(ctx, r.Restores, ref)
	if lerr != nil {
		r.log().Warn("get_context: the restore log is not readable; restores it holds are not shown", "session", ref.String(), "err", lerr)
	}
	now := bs.Now(r.Clock)
	positions := tr.MessagePositions()
	for e, err := range tr.Entries(ctx) {
		if err != nil {
			return nil, err
		}
		if e.Kind != bs.KindEntry {
			continue
		}
		pos, ok := positions[e.Line]
		if !ok {
			pos = -1
		}
		e = extract.WithRestores(e, logged)
		if extract.Decide(e, pos, r.Policy, now).Extract {
			c.ExtractableNow++
		}
		holders := placeholderPointers(e)
		if key := heldSourceKey(e); key != "" {
			c.sourceEntry(ctx, r.Side, ref, e, key, have[key], len(holders) > 0)
		}
		if e.ID == "" || (!have[e.ID] && len(holders) == 0) {
			continue
		}
		x := ExtractedEntry{EntryID: e.ID, Line: e.Line, Keys: []string{}, SizesBytes: map[string]int{},
			Extractable: string(e.Extractable), RestoredAt: restoredAt(e)}
		if !e.Restored.IsZero() {
			if until := e.Restored.Add(r.Policy.KeepAfterRestore); until.After(now) {
				x.ProtectedUntil = &until
			}
		}
		sr := sideRecord{err: fmt.Errorf("entry %s: %w", e.ID, bs.ErrNotFound)}
		if have[e.ID] {
			sr = sideRecord{file: "side record " + e.ID}
			sr.rec, sr.err = extract.LoadRecord(ctx, r.Side, ref, e.ID)
			if sr.err == nil {
				_, sr.err = readBook(sr.rec) // restore's members must decode too
			}
		}
		if sr.err == nil {
			if len(sr.rec.Values) == 0 && len(holders) == 0 {
				continue // a record of bookkeeping only
			}
			x.Type, x.ExtractedAt = sr.rec.TriggerType, sr.rec.ExtractedAt
			for _, v := range sr.rec.Values {
				x.Keys = append(x.Keys, v.Path)
				x.SizesBytes[v.Path] = v.Size
			}
		}
		for _, pc := range checkPlaceholders(c.Session, e, sr) {
			if pc.problem != nil {
				c.Lost = append(c.Lost, *pc.problem)
				x.Lost = append(x.Lost, pc.problem.Path+": "+pc.problem.Kind+": "+pc.problem.Detail)
				continue
			}
			x.Placeholders++
			c.ExtractedBytes += int64(pc.value.Size)
		}
		if len(holders) > 0 {
			c.EntriesWithPlaceholders++
		}
		c.LostValues += len(x.Lost)
		c.Extracted = append(c.Extracted, x)
	}
	if reqs, _, err := r.readQueue(r.queueDir()); err == nil {
		for _, q := range reqs {
			if q.matches(ref) {
				c.Pending++
			}
		}
	}
	return c, nil
}

// sourceEntry adds the tool result stored at the source under key, whose
// placeholder entry e holds, as an extracted entry named by its key (the
// key purge_control restore takes). counted says whether e is counted
// among the entries holding placeholders already.
func (c *Context) sourceEntry(ctx context.Context, side bs.SideStore, ref bs.SessionRef, e *bs.Entry, key string, stored, counted bool) {
	x := ExtractedEntry{EntryID: key, Line: e.Line, Keys: []string{}, SizesBytes: map[string]int{}}
	sr := sideRecord{err: fmt.Errorf("side record %s: %w", key, bs.ErrNotFound)}
	if stored {
		sr = sideRecord{file: "side record " + key}
		sr.rec, sr.err = extract.LoadRecord(ctx, side, ref, key)
	}
	if sr.err == nil {
		x.Type, x.ExtractedAt = sr.rec.TriggerType, sr.rec.ExtractedAt
		for _, v := range sr.rec.Values {
			x.Keys = append(x.Keys, v.Path)
			x.SizesBytes[v.Path] = v.Size
		}
	}
	if pc := checkSource(c.Session, e, key, sr); pc.problem != nil {
		c.Lost = append(c.Lost, *pc.problem)
		x.Lost = append(x.Lost, pc.problem.Path+": "+pc.problem.Kind+": "+pc.problem.Detail)
		c.LostValues++
	} else {
		x.Placeholders++
		c.ExtractedBytes += int64(pc.value.Size)
	}
	if !counted {
		c.EntriesWithPlaceholders++
	}
	c.Extracted = append(c.Extracted, x)
}

// entryCount returns the number of entry lines (not the header, blank or
// malformed lines).
func entryCount(nodes []bs.Node) int {
	n := 0
	for i := range nodes {
		if nodes[i].Kind == bs.KindEntry {
			n++
		}
	}
	return n
}
