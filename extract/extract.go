package extract

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// Extractor runs extraction passes over sessions. A pass reads a session
// once to decide, writes the side files of the values it moves out and
// makes them durable, then changes the transcript in one safe rewrite.
type Extractor struct {
	// Policy decides what is extracted.
	Policy Policy
	// Editor writes the transcript (a *session.Writer or a Store).
	Editor bs.Editor
	// Logger receives a debug record per decision and per extraction; nil
	// discards.
	Logger bs.Logger
	// Clock tells the time; nil is the system clock.
	Clock bs.Clock
	// CompressAbove is passed to the SideWriter (default 4096 bytes).
	CompressAbove int
	// DryRun decides and reports without writing anything.
	DryRun bool
}

// EntryResult describes the extraction of one entry.
type EntryResult struct {
	ID    string   `json:"entry_id"`
	Line  int      `json:"line"`
	Type  string   `json:"type"`
	Keys  []string `json:"keys"`
	Sizes []int    `json:"sizes_bytes"`
	// BytesSaved is what the entry's line shrank by.
	BytesSaved int64 `json:"bytes_saved"`
}

// Result reports one pass over one session.
type Result struct {
	Session string `json:"session"`
	// Entries and Values count what was (or, in a dry run or a pass that
	// saved too little, would have been) extracted.
	Entries int `json:"entries"`
	Values  int `json:"values"`
	// BytesBefore and BytesAfter measure the transcript; BytesSaved is
	// their difference (before any write, the planned difference).
	BytesBefore int64 `json:"bytes_before"`
	BytesAfter  int64 `json:"bytes_after"`
	BytesSaved  int64 `json:"bytes_saved"`
	// SideBytes is what the side files written take on disk.
	SideBytes int64 `json:"side_bytes"`
	// Written is true when the transcript was rewritten.
	Written bool `json:"written"`
	// Skipped says why nothing was written, when so.
	Skipped string        `json:"skipped,omitempty"`
	Details []EntryResult `json:"details,omitempty"`
	Counts  map[Code]int  `json:"decisions"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

type planned struct {
	line    int
	offset  int64
	length  int
	id      string
	trigger bs.TriggerType
	cands   []bs.Candidate
	repl    [][]byte
}

// Run makes one extraction pass over a session. It returns the result
// and, when the transcript could not be written, an error (wrapping
// brainsurgeon.ErrBusy or ErrChanged when the session was in use; side
// files written before such an error are harmless orphans that the next
// pass reuses).
func (x *Extractor) Run(ctx context.Context, ref bs.SessionRef) (*Result, error) {
	start := time.Now()
	log := bs.LoggerOrDiscard(x.Logger)
	now := bs.Now(x.Clock)
	tr, err := session.Open(ctx, ref.Path, ref)
	if err != nil {
		return nil, err
	}
	ref = tr.Ref()
	res := &Result{Session: ref.String(), BytesBefore: tr.Version().Size, Counts: map[Code]int{}}
	positions := tr.MessagePositions()
	var plan []planned
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
		d := Decide(e, pos, x.Policy, now)
		res.Counts[d.Code]++
		if !d.Extract {
			if d.Code != CodeNothing && d.Code != CodeNotEntry {
				log.Debug(d.Reason, "session", res.Session)
			}
			continue
		}
		log.Debug(d.Reason, "session", res.Session)
		p := planned{line: e.Line, offset: e.Offset, length: len(e.Raw), id: e.ID, trigger: d.Type, cands: d.Candidates}
		for _, c := range d.Candidates {
			r := replacement(e.Raw, c, e.ID, x.Policy.PreviewChars)
			p.repl = append(p.repl, r)
			res.BytesSaved += int64(c.Len() - len(r))
		}
		res.Values += len(d.Candidates)
		plan = append(plan, p)
	}
	res.Entries = len(plan)
	res.BytesAfter = res.BytesBefore - res.BytesSaved
	finish := func(r *Result) *Result { r.Elapsed = time.Since(start); return r }
	if len(plan) == 0 {
		res.Skipped = "nothing to extract"
		return finish(res), nil
	}
	if tokens := res.BytesSaved / 4; tokens < int64(x.Policy.MinSavingTokens) {
		res.Skipped = fmt.Sprintf("saving %d tokens is below min_saving_tokens %d", tokens, x.Policy.MinSavingTokens)
		log.Debug("pass skipped", "session", res.Session, "reason", res.Skipped)
		return finish(res), nil
	}
	if x.DryRun {
		res.Skipped = "dry run"
		res.Details = details(plan)
		return finish(res), nil
	}

	// Side files first, made durable before the transcript changes.
	sideDir := SideDir(ref.Path, ref.ID)
	sw := &SideWriter{CompressAbove: x.CompressAbove}
	defer sw.Close()
	f, err := os.Open(ref.Path)
	if err != nil {
		return nil, fmt.Errorf("extract %s: %w", res.Session, err)
	}
	defer f.Close()
	var buf []byte
	edits := make([]bs.Edit, 0, len(plan))
	for _, p := range plan {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if cap(buf) < p.length {
			buf = make([]byte, p.length)
		}
		raw := buf[:p.length]
		if _, err := f.ReadAt(raw, p.offset); err != nil && err != io.EOF {
			return nil, fmt.Errorf("extract %s: read line %d: %w", res.Session, p.line, err)
		}
		rec := &Record{Session: res.Session, EntryID: p.id}
		if old, _, err := ReadRecord(sideDir, p.id); err == nil && !old.Legacy {
			rec = old
		}
		rec.TriggerType, rec.ExtractedAt = string(p.trigger), now.UTC()
		edit := bs.Edit{Line: p.line, ID: p.id}
		keys := make([]string, 0, len(p.cands))
		sizes := make([]int, 0, len(p.cands))
		for i, c := range p.cands {
			rec.Put(NewStoredValue(c.Pointer, c.Trigger, c.Block, raw[c.Start:c.End], p.repl[i], now))
			edit.Splices = append(edit.Splices, bs.Splice{Start: c.Start, End: c.End, With: p.repl[i]})
			keys = append(keys, c.Pointer)
			sizes = append(sizes, c.Len())
		}
		_, n, err := sw.Write(sideDir, rec)
		if err != nil {
			return nil, fmt.Errorf("extract %s: entry %s: %w", res.Session, p.id, err)
		}
		res.SideBytes += n
		edits = append(edits, edit)
		log.Debug("extracted", "entry_id", p.id, "keys", keys, "sizes_bytes", sizes, "session", res.Session)
	}
	if err := sw.Sync(); err != nil {
		return nil, fmt.Errorf("extract %s: %w", res.Session, err)
	}
	if err := x.Editor.Rewrite(ctx, ref, tr.Version(), edits); err != nil {
		res.Skipped = err.Error()
		return finish(res), fmt.Errorf("extract %s: %w", res.Session, err)
	}
	res.Written = true
	res.Details = details(plan)
	if st, err := os.Stat(ref.Path); err == nil {
		res.BytesAfter = st.Size()
	}
	log.Info("extraction pass", "session", res.Session, "entries", res.Entries, "values", res.Values, "bytes_saved", res.BytesSaved)
	return finish(res), nil
}

func details(plan []planned) []EntryResult {
	out := make([]EntryResult, 0, len(plan))
	for _, p := range plan {
		er := EntryResult{ID: p.id, Line: p.line, Type: string(p.trigger)}
		for i, c := range p.cands {
			er.Keys = append(er.Keys, c.Pointer)
			er.Sizes = append(er.Sizes, c.Len())
			er.BytesSaved += int64(c.Len() - len(p.repl[i]))
		}
		out = append(out, er)
	}
	return out
}
