package recall

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// ExpandOptions tunes Expand.
type ExpandOptions struct {
	// Resolve replaces the placeholders ([[extracted-<id>]]) in the
	// returned lines by the original values from Side, so the lines read
	// as they were before extraction. The transcript is not changed.
	Resolve bool
	// Side is the side store Resolve reads; required with Resolve.
	Side bs.SideStore
	// MaxEntries bounds the entries returned (0: all); Expansion.Truncated
	// tells when some were left out.
	MaxEntries int
	// Logger receives a warning for each placeholder that could not be
	// resolved (it is left in place); nil discards.
	Logger bs.Logger
}

// Expansion is what a compaction summary stands for.
type Expansion struct {
	// Compaction describes the summary (see Describe).
	Compaction *Description `json:"compaction"`
	// Entries are the original entries the summary stands for, in path
	// order, as raw lines: all of them, or the first MaxEntries.
	Entries []RawEntry `json:"entries"`
	// Total counts the entries the summary stands for, whether or not
	// MaxEntries left some of them out of Entries.
	Total int `json:"total"`
	// Truncated is true when MaxEntries left entries out.
	Truncated bool `json:"truncated"`
	// Covers are the earlier summaries this one condenses (each
	// compaction summarizes the previous summary with its own span), to
	// be expanded in turn, level by level.
	Covers []Covered `json:"covers,omitempty"`
}

// RawEntry is one original line.
type RawEntry struct {
	// Line, ID and Type identify the entry; Where is where it is now.
	Line  int    `json:"line"`
	ID    string `json:"id"`
	Type  string `json:"type"`
	Where Where  `json:"where"`
	// Resolved counts the placeholders replaced by their original values.
	Resolved int `json:"resolved"`
	// Raw is the line as stored (with Resolve, with placeholders replaced).
	// It is the caller's to keep.
	Raw json.RawMessage `json:"raw"`
}

// Covered is one summary a condensed summary stands for.
type Covered struct {
	// ID is the covered summary's entry id; Found is false when the
	// transcript no longer holds it.
	ID    string `json:"id"`
	Found bool   `json:"found"`
	// Line, Level, SummaryChars and FirstKeptEntryID describe it when
	// found.
	Line             int    `json:"line,omitempty"`
	Level            int    `json:"level"`
	SummaryChars     int    `json:"summary_chars"`
	FirstKeptEntryID string `json:"first_kept_entry_id,omitempty"`
}

// Expand returns the original raw entries the compaction summary id stands
// for: along the compaction's own path, from the previous compaction's
// first kept entry (or the start) up to its own first kept entry. A
// summary that condenses earlier ones (details.brainsurgeon.covers) also
// lists them in Covers, each of which Expand takes in turn, so a caller
// drills down level by level. An id that is not
// a compaction is an error wrapping brainsurgeon.ErrInvalid; an unknown id
// one wrapping ErrNotFound that lists nearby ids.
func Expand(ctx context.Context, tr bs.Transcript, id string, o ExpandOptions) (*Expansion, error) {
	d, err := Describe(ctx, tr, id)
	if err != nil {
		return nil, fmt.Errorf("expand: %w", err)
	}
	if d.Compaction == nil {
		return nil, fmt.Errorf("expand %s: entry is a %s, expected a compaction entry (expand takes a summary's id; describe shows any entry): %w",
			id, describeKind(d), bs.ErrInvalid)
	}
	if o.Resolve && o.Side == nil {
		return nil, fmt.Errorf("expand %s: Resolve needs a side store: %w", id, bs.ErrInvalid)
	}
	x := &Expansion{Compaction: d, Entries: []RawEntry{}}
	for _, cid := range d.Compaction.Covers {
		x.Covers = append(x.Covers, covered(ctx, tr, cid))
	}
	sp := span(tr, d.Line-1)
	idx := sp.entries
	x.Total = len(idx)
	if o.MaxEntries > 0 && len(idx) > o.MaxEntries {
		idx, x.Truncated = idx[:o.MaxEntries], true
	}
	if len(idx) == 0 {
		return x, nil
	}
	lines := make([]int, len(idx))
	for k, i := range idx {
		lines[k] = i + 1
	}
	sort.Ints(lines) // a path runs forward in the file; Lines needs ascending lines
	raws := make(map[int][]byte, len(lines))
	for e, err := range tr.Lines(ctx, lines) {
		if err != nil {
			return nil, fmt.Errorf("expand %s: %w", id, err)
		}
		raws[e.Line] = e.Raw
	}
	p := locate(tr)
	nodes := tr.Nodes()
	log := bs.LoggerOrDiscard(o.Logger)
	for _, i := range idx {
		n := &nodes[i]
		re := RawEntry{Line: n.Line, ID: n.ID, Type: n.Type, Where: p.where[i], Raw: raws[n.Line]}
		if o.Resolve {
			re.Raw, re.Resolved = ResolveLine(ctx, tr.Ref(), o.Side, re.Raw, log)
		}
		x.Entries = append(x.Entries, re)
	}
	return x, nil
}

func describeKind(d *Description) string {
	if d.Role != "" {
		return d.Type + " (" + d.Role + ")"
	}
	return d.Type
}

// covered describes one summary a condensed summary covers.
func covered(ctx context.Context, tr bs.Transcript, id string) Covered {
	c := Covered{ID: id}
	n, ok := tr.Node(id)
	if !ok || n.Type != "compaction" {
		return c
	}
	e, err := tr.Entry(ctx, n.Line)
	if err != nil {
		return c
	}
	cc, err := describeCompaction(tr, n.Line-1, e.Raw)
	if err != nil {
		return c
	}
	c.Found, c.Line, c.Level, c.SummaryChars, c.FirstKeptEntryID = true, n.Line, cc.Level, len([]rune(cc.Summary)), cc.FirstKeptEntryID
	return c
}

// ResolveLine returns the transcript line raw with its placeholders
// ([[extracted-<id>]] of the line's own entry) replaced by the original
// values read from side, and how many it replaced. The line is not
// changed in the transcript; a value that cannot be read stays a
// placeholder and is logged as a warning on log (nil discards).
func ResolveLine(ctx context.Context, ref bs.SessionRef, side bs.SideStore, raw []byte, log bs.Logger) ([]byte, int) {
	log = bs.LoggerOrDiscard(log)
	e := entry.ParseLite(raw, 0, 0)
	if key := extract.SourceKeyOf(e); key != "" && extract.IsPlaceholderValue(raw, key) {
		// A tool result stored at the source: its content (and details)
		// come back whole.
		raw2, n := resolveSource(ctx, ref, side, raw, key, log)
		if n > 0 {
			raw = raw2
			e = entry.ParseLite(raw, 0, 0)
		}
		out, m := resolveOwn(ctx, ref, side, raw, e, log)
		return out, n + m
	}
	return resolveOwn(ctx, ref, side, raw, e, log)
}

// resolveOwn is ResolveLine for the placeholders of the entry's id.
func resolveOwn(ctx context.Context, ref bs.SessionRef, side bs.SideStore, raw []byte, e *bs.Entry, log bs.Logger) ([]byte, int) {
	if e.ID == "" || !extract.IsPlaceholderValue(raw, e.ID) {
		return raw, 0
	}
	rec, err := extract.LoadRecord(ctx, side, ref, e.ID)
	if err != nil {
		log.Warn("placeholder not resolved", "session", ref.String(), "entry", e.ID, "err", err)
		return raw, 0
	}
	var splices []bs.Splice
	for _, v := range rec.Values {
		s, end, ok := jsonedit.Find(raw, v.Path)
		if !ok || !extract.IsPlaceholderValue(raw[s:end], e.ID) {
			continue
		}
		orig, err := v.Bytes()
		if err != nil {
			log.Warn("placeholder not resolved", "session", ref.String(), "entry", e.ID, "path", v.Path, "err", err)
			continue
		}
		splices = append(splices, bs.Splice{Start: s, End: end, With: orig})
	}
	sort.Slice(splices, func(a, b int) bool { return splices[a].Start < splices[b].Start })
	kept := splices[:0]
	at := 0
	for _, s := range splices {
		if s.Start >= at {
			kept = append(kept, s)
			at = s.End
		}
	}
	if len(kept) == 0 {
		return raw, 0
	}
	return jsonedit.Apply(raw, kept...), len(kept)
}

// resolveSource replaces the content (and the details) of a toolResult
// line that holds the placeholder of source key key with the values
// stored under it.
func resolveSource(ctx context.Context, ref bs.SessionRef, side bs.SideStore, raw []byte, key string, log bs.Logger) ([]byte, int) {
	rec, err := extract.LoadRecord(ctx, side, ref, key)
	if err != nil {
		log.Warn("placeholder not resolved", "session", ref.String(), "key", key, "err", err)
		return raw, 0
	}
	s, end, ok := jsonedit.Find(raw, extract.SourceContentPath)
	if !ok || !extract.IsPlaceholderValue(raw[s:end], key) {
		return raw, 0
	}
	var splices []bs.Splice
	for _, v := range rec.Values {
		s, end, ok := jsonedit.Find(raw, v.Path)
		if !ok {
			continue
		}
		orig, err := v.Bytes()
		if err != nil {
			log.Warn("placeholder not resolved", "session", ref.String(), "key", key, "path", v.Path, "err", err)
			if v.Path == extract.SourceContentPath {
				return raw, 0
			}
			continue
		}
		splices = append(splices, bs.Splice{Start: s, End: end, With: orig})
	}
	sort.Slice(splices, func(a, b int) bool { return splices[a].Start < splices[b].Start })
	return jsonedit.Apply(raw, splices...), 1
}
